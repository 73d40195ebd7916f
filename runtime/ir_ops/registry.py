"""IR layer builders: one registry from layer type to the function that binds a layer to its kernel.

A builder reads a layer's attributes once (already typed and checked against `ir.schema` when the
executor validated the model) and returns the closure that runs it: input arrays in input-port order ->
output arrays in output-port order. Each family module (pooling, elementwise, movement, reduction)
registers its builders with `@builder(...)`; importing the package checks that the builders cover the
IR schema registry exactly (`check_builders_match_schemas`). Parameter, Const and Result are planned by
the executor itself.

The operand readers at the end (`int_list`, `axis_index`) are shared by the builders of several families.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

from poolir.ir.errors import InvalidModelError
from poolir.ir.shapes import checked_axis
from poolir.ir.model import Layer

# A layer's compiled form: input arrays (in input-port order) -> output arrays (in output-port order).
LayerFn = Callable[[Sequence[np.ndarray]], Sequence[np.ndarray]]

# Layer types the executor plans itself (feeds, constants, outputs): they have schemas but no builder.
EXECUTOR_LAYER_TYPES = ("Parameter", "Const", "Result")


@dataclass(frozen=True, slots=True)
class LayerInfo:
    """What a builder may know about a layer beyond its attributes."""

    layer: Layer
    used_outputs: frozenset[int]  # indices of output ports something consumes
    # OpenVINO computes the layer when it compiles the model (constant folding: every input a Const, or
    # ShapeOf of static dims, transitively), with its reference implementation, not the CPU plugin's kernel.
    folded: bool = False
    constant_inputs: frozenset[int] = frozenset()  # input ports whose values OpenVINO knows when compiling
    # an input dim is dynamic (as inferred from the declared dims), or the layer is in an If-8 body: OpenVINO's CPU
    # plugin then runs the layer through its dynamic-shape path (bodies whatever their dims), which computes some
    # layers differently (Convert, i8/u8 Divide, integer Clamp bounds)
    dynamic: bool = False
    # input ports a Parameter of the model (not of an If body) feeds straight: OpenVINO's CPU plugin converts an f64
    # or f16 Parameter's values at the input boundary (ir.float_to_integer.openvino_float_to_integer)
    parameter_inputs: frozenset[int] = frozenset()


Builder = Callable[[LayerInfo], LayerFn]
BUILDERS: dict[str, Builder] = {}


def builder(*layer_types: str):
    """Register the builder of one or more layer types; a duplicate fails at import time."""
    def register(function: Builder) -> Builder:
        for layer_type in layer_types:
            if layer_type in BUILDERS:
                raise RuntimeError(f"duplicate IR builder for {layer_type}")
            BUILDERS[layer_type] = function
        return function

    return register


def supported_layer_types() -> list[str]:
    """Every layer type the executor runs, sorted."""
    return sorted([*BUILDERS, *EXECUTOR_LAYER_TYPES])


def check_builders_match_schemas(builders: Mapping[str, Builder], schema_types: Iterable[str]) -> None:
    """Every layer type with a schema has a builder (the executor's own types excepted), and every builder
    has a schema. Called when the package is imported, so a gap is an import error naming the type."""
    schemas = set(schema_types)
    own = set(EXECUTOR_LAYER_TYPES)
    without_builder = sorted(schemas - own - set(builders))
    if without_builder:
        raise RuntimeError(f"IR layer types with a schema but no builder: {', '.join(without_builder)}")
    without_schema = sorted(set(builders) - schemas)
    if without_schema:
        raise RuntimeError(f"IR builders without a layer schema: {', '.join(without_schema)}")
    planned_twice = sorted(set(builders) & own)
    if planned_twice:
        raise RuntimeError(f"IR builders for layer types the executor plans itself: {', '.join(planned_twice)}")


def int_list(array: np.ndarray, what: str) -> list[int]:
    """An integer operand (a shape, axes, pads, ...) as Python ints; InvalidModelError for another type."""
    if array.dtype.kind not in "iu":
        raise InvalidModelError(f"{what} must be integers, got element type {array.dtype}")
    return [int(v) for v in np.asarray(array).reshape(-1)]


def axis_index(value: int, rank: int, what: str = "axis") -> int:
    """`value` in [-rank, rank) as a non-negative axis; InvalidModelError outside that range."""
    return checked_axis(value, rank, what)


__all__ = ["BUILDERS", "EXECUTOR_LAYER_TYPES", "Builder", "LayerFn", "LayerInfo", "axis_index", "builder",
           "check_builders_match_schemas", "int_list", "supported_layer_types"]
