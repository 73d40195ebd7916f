"""The description `poolir inspect` prints, as text or JSON; IR and ONNX models are described alike."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from poolir.ir.errors import printable
from poolir.ir.model import Dim


@dataclass(slots=True)
class TensorDescription:
    name: str
    element_type: str | None
    shape: list[int | str] | None  # ints for static dims, "?" / "1..8" for dynamic; None: unknown


@dataclass(slots=True)
class PortDescription:
    port: int | str  # IR port id, or the ONNX output index
    name: str | None
    element_type: str | None
    declared: list[int | str] | None
    inferred: list[int | str] | None


@dataclass(slots=True)
class LayerDescription:
    id: int | None  # None for ONNX nodes
    name: str
    type: str
    version: str
    attrs: dict[str, Any]
    outputs: list[PortDescription] = field(default_factory=list)
    value: Any = None  # a small Const's values (nested lists), to read p of an LpPool and the like
    # False for an IR layer of a type (or version) poolir does not know: attrs are the file's raw strings and
    # the inferred output dims are its declared ones, trusted.
    known: bool = True
    branches: bool = False  # an If-8 with its bodies (ir.branches.is_if): run and convert take them


@dataclass(slots=True)
class ModelDescription:
    file: str
    format: str  # "ir" or "onnx"
    name: str
    version: str  # "IR v11" or "ONNX opset 22"
    inputs: list[TensorDescription]
    outputs: list[TensorDescription]
    layers: list[LayerDescription]
    warnings: list[str]

    def to_json(self) -> str:
        # protobuf hands back an ONNX string field that is not valid UTF-8 as bytes: shown decoded, with
        # replacement characters.
        return json.dumps(asdict(self), indent=2, default=_json_fallback)

    def render(self) -> str:
        lines = [f"{self.file}: {self.version}, model '{self.name}'"]
        for title, tensors in (("inputs", self.inputs), ("outputs", self.outputs)):
            lines.append(f"{title}:")
            for tensor in tensors:
                lines.append(f"  {tensor.name}: {tensor.element_type or '?'} {dims_text(tensor.shape)}")
        lines.append("layers:" if self.format == "ir" else "nodes:")
        for layer in self.layers:
            ident = f"{layer.id} " if layer.id is not None else ""
            lines.append(f"  {ident}{layer.name}: {layer.type} {layer.version}" + (
                "" if layer.known else "  [bodies kept as written, declared output dims trusted for shape inference; "
                                       "run and convert take the body the condition chooses]" if layer.branches
                else "  [unknown layer type: attributes kept as text, declared output dims trusted for shape "
                     "inference; run and convert refuse it]"))
            if layer.attrs:
                lines.append("      " + " ".join(f"{k}={_attr_text(v)}" for k, v in layer.attrs.items()))
            if layer.value is not None:
                lines.append(f"      value={json.dumps(layer.value)}")
            for port in layer.outputs:
                label = f"out {port.port}" + (f" '{port.name}'" if port.name else "")
                inferred = dims_text(port.inferred)
                if port.declared is None or dims_text(port.declared) == inferred:
                    lines.append(f"      {label}: {port.element_type or '?'} {inferred}")
                else:
                    lines.append(f"      {label}: {port.element_type or '?'} declared {dims_text(port.declared)}, "
                                 f"inferred {inferred}")
        lines.append(f"warnings: {len(self.warnings)}")
        lines.extend(f"  warning: {warning}" for warning in self.warnings)
        # Names and values come from the file: a newline or an ANSI escape in one is shown escaped.
        return "\n".join(printable(line, limit=None) for line in lines)


def dims_text(dims: list[int | str] | None) -> str:
    """The one shape notation of messages: [1,3,16,16], ? for a dynamic dim (a symbolic ONNX dim like N too;
    the JSON form keeps the symbol), [?] for an unknown rank."""
    if dims is None:
        return "[?]"
    return "[" + ",".join(str(d) if isinstance(d, int) and d >= 0 or isinstance(d, str) and ".." in d
                          else "?" for d in dims) + "]"


def _attr_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return ",".join(_attr_text(v) for v in value)
    if isinstance(value, Dim):
        return str(value)
    return str(value)


def _json_fallback(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
