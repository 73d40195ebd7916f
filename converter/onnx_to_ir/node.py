"""What an ONNX node converter receives, and how it adds IR layers: the versions come from ir.schema."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import onnx

from poolir.ir.builder import GraphBuilder, OutputRef
from poolir.ir.element_types import dtype_of
from poolir.ir.errors import InvalidModelError, UnsupportedError, UsageError
from poolir.ir.schema import SCHEMAS, first_version_allowing, first_version_with
from poolir.runtime import onnx_ops


@dataclass(frozen=True, slots=True)
class Value:
    """A converted ONNX tensor: the IR output that carries it, its element type, its dims (None: dynamic)."""

    ref: OutputRef
    element_type: str
    shape: tuple[int | None, ...]


def value_of(builder: GraphBuilder, ref: OutputRef) -> Value:
    """The Value of a built output port: its element type and dims as shape inference found them."""
    info = builder.info(ref)
    return Value(ref, info.element_type, tuple(d.value for d in info.shape))


def layer_version(layer_type: str, attrs: Mapping[str, Any], *, newest: bool = False) -> str:
    """The IR opset to write a layer in ("opset14"), asked of ir.schema: the first version of `layer_type`
    that has every attribute in `attrs` and allows each value given to a choice attribute (MaxPool with
    dilations: 8; with rounding_type ceil_torch: 14). newest=True: the newest version instead."""
    versions = SCHEMAS[layer_type]
    if newest:
        return versions[-1].version
    since = versions[0].since
    for name, value in attrs.items():
        allowing = first_version_allowing(layer_type, name, value) if isinstance(value, str) else None
        needed = allowing if allowing is not None else first_version_with(layer_type, name)
        if needed is None:
            raise KeyError(f"{layer_type} has no attribute {name!r} in any version")  # a bug in a converter
        since = max(since, needed)
    return f"opset{since}"


@dataclass(slots=True)
class OnnxNode:
    """One ONNX node being converted: the node, its op version row, every input converted, and the IR
    being built. A converter checks its own arity (single_input) and returns one Value per node output."""

    node: onnx.NodeProto
    version: onnx_ops.OnnxOpVersion
    inputs: list[Value | None]  # None: an optional input left out (an empty name)
    name: str  # the name of the IR layer it becomes (derived layers append "/..." to it)
    builder: GraphBuilder

    def single_input(self) -> Value:
        return self.checked_inputs(1, 1)[0]

    def checked_inputs(self, low: int, high: int | None, optional: Sequence[int] = ()) -> list[Value | None]:
        """The node's inputs, between `low` and `high` of them, padded with None to `high` (unbounded: None
        for `high` means any number); an input left out (an empty name) only where `optional` allows."""
        count = len(self.inputs)
        problem = onnx_ops.arity_problem(self.version.label, low, high, count)
        if problem:
            raise InvalidModelError(problem)
        for index, value in enumerate(self.inputs):
            if value is None and index not in optional:
                raise InvalidModelError(f"input {index} of {self.version.label} is required but left out")
        return list(self.inputs) + [None] * ((high or count) - count)

    def checked_single_input(self) -> tuple[Value, dict[str, Any]]:
        """The node's one input and its normalised attributes, the input's element type checked, in that order."""
        x = self.single_input()
        attrs = self.attributes()
        self.check_element_type(x)
        return x, attrs

    def attributes(self) -> dict[str, Any]:
        """The node's attributes checked against its version row, defaults filled in (runtime.onnx_ops)."""
        try:
            return onnx_ops.normalize_attributes(self.node, self.version)
        except UsageError as error:
            raise InvalidModelError(error.problem) from None

    def check_element_type(self, value: Value) -> None:
        """Refuse an element type the op's version row does not allow for its main input."""
        if self.version.dtypes is not None and dtype_of(value.element_type) not in self.version.dtypes:
            raise UnsupportedError(f"element type {value.element_type} is not allowed for {self.version.label}")

    def check_same_element_type(self, main: Value, main_name: str,
                                others: Sequence[tuple[str, Value | None]]) -> None:
        """Refuse an input whose element type is not `main`'s (the op's one type constraint T; IR layers take
        one element type too); None stands for an absent optional input."""
        for name, value in others:
            if value is not None and value.element_type != main.element_type:
                raise InvalidModelError(f"input {name} has element type {value.element_type}, "
                                        f"{main_name} has {main.element_type}")

    def add(self, layer_type: str, inputs: Sequence[OutputRef], attrs: dict[str, Any] | None = None,
            name: str | None = None, *, newest: bool = False) -> list[OutputRef]:
        """Add an IR layer in the version its attributes need (layer_version)."""
        attrs = attrs or {}
        return self.builder.add(layer_type, layer_version(layer_type, attrs, newest=newest), inputs, attrs,
                                name=name)

    def layer(self, layer_type: str, inputs: Sequence[Value], attrs: dict[str, Any] | None = None,
              name: str | None = None, *, newest: bool = False) -> list[Value]:
        """add() taking and returning Values (types and dims from shape inference)."""
        refs = self.add(layer_type, [v.ref for v in inputs], attrs, name=name, newest=newest)
        return [value_of(self.builder, ref) for ref in refs]

    def const(self, value: Any, element_type: str | None = None) -> OutputRef:
        """A Const layer; with `element_type`, the value converted to that IR element type first."""
        array = np.asarray(value, dtype=dtype_of(element_type)) if element_type else np.asarray(value)
        return self.builder.const(array)
