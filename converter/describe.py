"""What `poolir inspect` shows: a model's inputs, outputs, layers (or nodes) and warnings.

For IR the inferred dims come from ir.infer (OpenVINO's shape rules); for ONNX from onnx's own
shape inference (strict mode, with data propagation). Either way, a declared shape that disagrees
with the inferred one becomes a warning naming the layer, the port and both shapes.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from poolir import ir
from poolir.ir.errors import InvalidModelError, UsageError, node_label
from poolir.ir.model import Dim, Model, Shape, shape_str


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
        # protobuf hands an ONNX string field that is not valid UTF-8 back as bytes (a garbled graph name
        # b'\xd3' made 'poolir inspect --json' an internal error): show it decoded with replacements.
        return json.dumps(asdict(self), indent=2, default=_json_fallback)

    def render(self) -> str:
        lines = [f"{self.file}: {self.version}, model '{self.name}'"]
        for title, tensors in (("inputs", self.inputs), ("outputs", self.outputs)):
            lines.append(f"{title}:")
            for tensor in tensors:
                lines.append(f"  {tensor.name}: {tensor.element_type or '?'} {_dims_text(tensor.shape)}")
        lines.append("layers:" if self.format == "ir" else "nodes:")
        for layer in self.layers:
            ident = f"{layer.id} " if layer.id is not None else ""
            lines.append(f"  {ident}{layer.name}: {layer.type} {layer.version}")
            if layer.attrs:
                lines.append("      " + " ".join(f"{k}={_attr_text(v)}" for k, v in layer.attrs.items()))
            if layer.value is not None:
                lines.append(f"      value={json.dumps(layer.value)}")
            for port in layer.outputs:
                label = f"out {port.port}" + (f" '{port.name}'" if port.name else "")
                inferred = _dims_text(port.inferred)
                if port.declared is None or _dims_text(port.declared) == inferred:
                    lines.append(f"      {label}: {port.element_type or '?'} {inferred}")
                else:
                    lines.append(f"      {label}: {port.element_type or '?'} declared {_dims_text(port.declared)}, "
                                 f"inferred {inferred}")
        lines.append(f"warnings: {len(self.warnings)}")
        lines.extend(f"  warning: {warning}" for warning in self.warnings)
        return "\n".join(lines)


def describe(path: str | os.PathLike) -> ModelDescription:
    """Describe an IR .xml or an .onnx file; raises PoolirError for unreadable or invalid files."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".xml":
        return describe_ir(ir.read_model(path))
    if suffix == ".onnx":
        return describe_onnx(path)
    raise UsageError(f"cannot tell the model format from the suffix {suffix!r}: expected .xml or .onnx",
                     file=os.fspath(path))


# ---------------------------------------------------------------------------------------------- IR

def _dims(shape: Shape | None) -> list[int | str] | None:
    if shape is None:
        return None
    return [dim.min if dim.is_static else str(dim) for dim in shape]


def _dims_text(dims: list[int | str] | None) -> str:
    return "[?]" if dims is None else "[" + ",".join(str(d) for d in dims) + "]"


def _attr_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return ",".join(_attr_text(v) for v in value)
    if isinstance(value, Dim):
        return str(value)
    return str(value)


def describe_ir(model: Model) -> ModelDescription:
    inference = ir.infer_model(model)
    producers = {(e.to_layer, e.to_port): (e.from_layer, e.from_port) for e in model.edges}
    inputs = []
    for layer in model.parameters:
        port = layer.outputs[0]
        info = inference.output(layer.id, port.id)
        inputs.append(TensorDescription(port.names[0] if port.names else layer.name, info.element_type,
                                        _dims(info.shape)))
    outputs = []
    for layer in model.results:
        from_layer, from_port = producers[(layer.id, layer.inputs[0].id)]
        port = model.layer(from_layer).port(from_port)
        info = inference.output(from_layer, from_port)
        outputs.append(TensorDescription(port.names[0] if port.names else layer.name, info.element_type,
                                         _dims(info.shape)))
    layers = []
    for layer in model.layers:
        attrs = {name: _json_value(value) for name, value in layer.attrs.items()}
        description = LayerDescription(layer.id, layer.name, layer.type, layer.version, attrs)
        if layer.data is not None and layer.data.size <= SHOWN_CONST_ELEMENTS:
            kind = layer.data.dtype.kind  # bfloat16 has kind "V": it is a float too
            description.value = layer.data.astype(bool if kind == "b" else int if kind in "iu" else float).tolist()
        for port in layer.outputs:
            info = inference.output(layer.id, port.id)
            description.outputs.append(PortDescription(port.id, port.names[0] if port.names else None,
                                                       info.element_type, _dims(port.shape), _dims(info.shape)))
        layers.append(description)
    return ModelDescription(model.source or "<memory>", "ir", model.name, f"IR v{model.version}", inputs, outputs,
                            layers, [str(w).removeprefix(f"{model.source}: ") for w in inference.warnings])


SHOWN_CONST_ELEMENTS = 16


def _json_value(value: Any) -> Any:
    if isinstance(value, tuple):
        if not value or isinstance(value[0], Dim):
            return shape_str(value)  # Parameter/Const shapes as text: "[?,3,1..8,8]", "[]" for a scalar
        return [_json_value(v) for v in value]
    if isinstance(value, Dim):
        return str(value)
    return value


# -------------------------------------------------------------------------------------------- ONNX

def describe_onnx(path: Path) -> ModelDescription:
    import onnx
    from onnx import helper, shape_inference

    from poolir.runtime.onnx_model import load_onnx

    source = os.fspath(path)
    model = load_onnx(path, check=True)
    # Infer from the inputs alone: drop the declared intermediate and output shapes first, so that a
    # wrong declaration is reported as a disagreement instead of being merged into the inference.
    bare = onnx.ModelProto.FromString(model.SerializeToString())
    del bare.graph.value_info[:]
    for output in bare.graph.output:
        if output.type.HasField("tensor_type"):
            output.type.tensor_type.ClearField("shape")
    try:
        inferred_model = shape_inference.infer_shapes(bare, strict_mode=True, data_prop=True)
    except Exception as error:  # onnx reports inconsistent shapes as InferenceError
        problem = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise InvalidModelError(f"ONNX shape inference failed: {problem}", file=source) from None

    def table(graph) -> dict[str, Any]:
        return {v.name: v for v in (*graph.input, *graph.value_info, *graph.output)}

    declared, inferred = table(model.graph), table(inferred_model.graph)
    initializers = {init.name for init in model.graph.initializer}
    opsets = {entry.domain or "ai.onnx": entry.version for entry in model.opset_import}

    def tensor(name: str, values: dict) -> TensorDescription:
        element_type, dims = _onnx_type(values.get(name))
        return TensorDescription(name, element_type, dims)

    inputs = [tensor(v.name, inferred) for v in model.graph.input if v.name not in initializers]
    outputs = [tensor(v.name, inferred) for v in model.graph.output]
    layers, warnings = [], []
    for index, node in enumerate(model.graph.node):
        name = node.name or f"{node.op_type}_{index}"
        attrs = {a.name: _json_value_onnx(helper.get_attribute_value(a)) for a in node.attribute}
        domain = node.domain or "ai.onnx"
        description = LayerDescription(None, name, node.op_type, f"{domain} opset {opsets.get(domain, '?')}", attrs)
        for position, output in enumerate(node.output):
            if not output:
                continue
            declared_type, declared_dims = _onnx_type(declared.get(output))
            inferred_type, inferred_dims = _onnx_type(inferred.get(output))
            description.outputs.append(PortDescription(position, output, inferred_type or declared_type,
                                                       declared_dims, inferred_dims))
            if _disagree(declared_dims, inferred_dims):
                warnings.append(f"{node_label(name, node.op_type)}: output '{output}': dims declared "
                                f"{_dims_text(declared_dims)}, inferred {_dims_text(inferred_dims)}")
        layers.append(description)
    version = f"ONNX opset {opsets.get('ai.onnx', '?')}"
    return ModelDescription(source, "onnx", model.graph.name, version, inputs, outputs, layers, warnings)


def _onnx_type(value_info) -> tuple[str | None, list[int | str] | None]:
    from onnx import helper

    if value_info is None or not value_info.type.HasField("tensor_type"):
        return None, None
    tensor_type = value_info.type.tensor_type
    element_type = helper.tensor_dtype_to_np_dtype(tensor_type.elem_type).name if tensor_type.elem_type else None
    if not tensor_type.HasField("shape"):
        return element_type, None
    dims: list[int | str] = []
    for dim in tensor_type.shape.dim:
        dims.append(dim.dim_value if dim.HasField("dim_value") else (dim.dim_param or "?"))
    return element_type, dims


def _disagree(declared: list | None, inferred: list | None) -> bool:
    if declared is None or inferred is None:
        return False
    if len(declared) != len(inferred):
        return True
    return any(isinstance(a, int) and isinstance(b, int) and a != b for a, b in zip(declared, inferred))


def _json_fallback(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _json_value_onnx(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (list, tuple)):
        return [_json_value_onnx(v) for v in value]
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    return f"<{type(value).__name__}>"  # tensors and graphs: named, not dumped


__all__ = ["ModelDescription", "describe", "describe_ir", "describe_onnx"]
