"""Element-wise layers: binary arithmetic with numpy broadcasting (Add .. Power, Mod), unary Abs, Sqrt, Floor,
and the element type changes Convert and ConvertLike."""

from __future__ import annotations

from typing import Callable

import numpy as np

from poolir.ir.attributes import BOOL, ELEMENT_TYPE, STR, Attr, OpVersion
from poolir.ir.element_types import check_computable, dtype_of, is_integer
from poolir.ir.float_to_integer import cast
from poolir.ir.errors import InvalidModelError
from poolir.ir.model import Dim, Layer, shape_str
from poolir.ir.registry import ShapeRules
from poolir.ir.shapes import TensorInfo, broadcast_shapes, folded, info_of_elements

AUTO_BROADCAST = ("none", "numpy")  # "pdpd" exists in OpenVINO but no pooling model uses it
BINARY_TYPES = ("Add", "Subtract", "Multiply", "Divide", "FloorMod", "Mod", "Maximum", "Minimum", "Power")
UNARY_TYPES = ("Abs", "Sqrt", "Floor", "Ceiling")


def _binary(layer_type: str) -> OpVersion:
    extra = (Attr("m_pythondiv", BOOL, True),) if layer_type == "Divide" else ()
    return OpVersion(layer_type, 1, (Attr("auto_broadcast", STR, "numpy", AUTO_BROADCAST), *extra), inputs=(2, 2))


SCHEMA_ROWS: tuple[OpVersion, ...] = (
    *(_binary(layer_type) for layer_type in BINARY_TYPES),
    *(OpVersion(layer_type, 1) for layer_type in UNARY_TYPES),
    OpVersion("Convert", 1, (Attr("destination_type", ELEMENT_TYPE),)),
    OpVersion("ConvertLike", 1, inputs=(2, 2)),
)

SHAPE_RULES = ShapeRules()

# Binary ops whose integer values fold exactly with numpy (Divide folds by its own rounding rule).
_FOLDABLE_BINARY: dict[str, Callable] = {
    "Add": np.add, "Subtract": np.subtract, "Multiply": np.multiply, "Maximum": np.maximum,
    "Minimum": np.minimum, "Mod": np.fmod,  # Mod-1: the remainder takes the dividend's sign
    "FloorMod": np.mod,  # FloorMod-1: the divisor's sign (OpenVINO folds constants exactly; its CPU kernel does not)
}


def _merged_shapes(a, b):
    """auto_broadcast none: equal shapes, where a dynamic or ranged dim equals any dim it can hold, as OpenVINO
    merges them ([1..2,2] with [1,2] is [1,2]); the run checks the fed shapes are equal."""
    merged = []
    for x, y in zip(a, b):
        low = max(x.min, y.min)
        high = y.max if x.max is None else (x.max if y.max is None else min(x.max, y.max))
        if high is not None and low > high:
            break
        merged.append(Dim(low, high))
    if len(a) != len(b) or len(merged) != len(a):
        raise InvalidModelError(f"auto_broadcast none needs equal shapes, got {shape_str(a)} and {shape_str(b)}")
    return tuple(merged)


@SHAPE_RULES.register(*BINARY_TYPES)
def infer_binary(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    """Both inputs of one element type; the output shape by numpy broadcasting (equal shapes for
    auto_broadcast none). Integer values fold, Divide by m_pythondiv (floor) or truncation."""
    a, b = inputs
    if a.element_type != b.element_type:
        raise InvalidModelError(f"input element types differ ({a.element_type}, {b.element_type})")
    if layer.attrs["auto_broadcast"] == "none":
        shape = _merged_shapes(a.shape, b.shape)
    else:
        shape = broadcast_shapes(a.shape, b.shape)
    fold = _FOLDABLE_BINARY.get(layer.type)
    integral = is_integer(a.element_type)
    # Integer values fold with numpy's wrap-around, silently (numpy's overflow warning would reach stderr);
    # Mod, FloorMod and Divide by zero are left to the runtime kernels, which give what OpenVINO gives.
    by_zero = b.value is not None and layer.type in ("Divide", "Mod", "FloorMod") and np.any(b.value == 0)
    if a.value is not None and b.value is not None and integral and not by_zero:
        with np.errstate(all="ignore"):
            if fold is not None:
                return [folded(a.element_type, shape, fold(a.value, b.value))]
            if layer.type == "Divide":
                quotient = (np.floor_divide(a.value, b.value) if layer.attrs["m_pythondiv"]
                            else np.trunc(a.value / b.value))
                return [folded(a.element_type, shape, quotient)]
    if a.value is not None and b.value is not None and a.element_type in _FOLDED_FLOATS:
        with np.errstate(all="ignore"):
            result = _FLOAT_BINARY[layer.type](a.value, b.value) if layer.type in _FLOAT_BINARY else None
        if result is not None and np.all(np.isfinite(result)):
            return [folded(a.element_type, shape, result)]
    return [TensorInfo(a.element_type, shape)]


# Float values fold where IEEE arithmetic in the type gives every bit (as OpenVINO folds them, and as the runtime
# computes them): PyTorch's size arithmetic in OpenVINO's IRs (ShapeOf, Convert to f32, Multiply by a scale, Floor,
# Convert back), whose result OpenVINO knows when it compiles, so the dims after it are static. Finite results only.
_FOLDED_FLOATS = ("f32", "f64")
_FLOAT_BINARY: dict[str, Callable] = {"Add": np.add, "Subtract": np.subtract, "Multiply": np.multiply,
                                      "Divide": np.divide, "Maximum": np.maximum, "Minimum": np.minimum}
_ROUNDING: dict[str, Callable] = {"Floor": np.floor, "Ceiling": np.ceil}


@SHAPE_RULES.register(*UNARY_TYPES)
def infer_unary(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    (data,) = inputs
    if layer.type in _ROUNDING and data.value is not None and data.element_type in _FOLDED_FLOATS:
        return [folded(data.element_type, data.shape, _ROUNDING[layer.type](data.value))]
    return [TensorInfo(data.element_type, data.shape)]


@SHAPE_RULES.register("Convert")
def infer_convert(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    (data,) = inputs
    target = layer.attrs["destination_type"]
    check_computable(target, "destination_type")
    if data.value is not None:  # OpenVINO folds it: as x86 converts
        return [folded(target, data.shape, cast(data.value, dtype_of(target)))]
    if data.elements is not None and is_integer(target):  # shape elements fit every integer type
        return [info_of_elements(target, data.shape, list(data.elements))]
    return [TensorInfo(target, data.shape)]


@SHAPE_RULES.register("ConvertLike")
def infer_convert_like(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    data, like = inputs
    check_computable(like.element_type, "the element type of input 1")
    return [TensorInfo(like.element_type, data.shape)]
