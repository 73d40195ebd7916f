"""Range-1 and Range-4 (OpenVINO's generation category): schema, shape rule and the element count both worlds use.

Range-1 takes start, stop and step of one numeric type T and yields T; Range-4 takes any numeric types and casts all
three to its output_type first, rounding toward zero for an integer output_type (start 2.7, stop 9.2, step 1.9 as i64
is range(2, 9, 1): seven elements). The element count is max(ceil((stop - start) / step), 0) (range_count); the values
are start, start + step, ... (runtime.kernels.generation, runtime.ir_ops.generation say in which precision).
The inputs are scalars (OpenVINO's shape inference refuses a [1] input); a zero step, NaN or infinity is refused.

ONNX Range (runtime.onnx_ops.generation) uses the same count, in float64 for floats as onnxruntime computes it.
An integer count is computed exactly, and a difference stop - start that the type cannot hold is refused:
onnxruntime and OpenVINO's CPU plugin compute it in that type and overflow (int32 start -2^31, limit 2^31 - 1,
delta 2^30: the spec's count is 4).
"""

from __future__ import annotations

import math

import numpy as np

from poolir.ir.attributes import ELEMENT_TYPE, Attr, OpVersion
from poolir.ir.element_types import dtype_of, is_integer
from poolir.ir.errors import InvalidModelError, UsageError
from poolir.ir.model import Dim, Layer, shape_str
from poolir.ir.registry import ShapeRules
from poolir.ir.shapes import MAX_FOLDED_ELEMENTS, TensorInfo, folded

_NUMERIC = ("f16", "bf16", "f32", "f64", "i8", "u8", "i32", "i64")


def _check_output_type(attrs: dict) -> None:
    if attrs["output_type"] not in _NUMERIC:
        raise UsageError(f"attribute 'output_type' = {attrs['output_type']}: must be a numeric type "
                                f"({', '.join(_NUMERIC)})")


SCHEMA_ROWS: tuple[OpVersion, ...] = (
    OpVersion("Range", 1, inputs=(3, 3)),
    OpVersion("Range", 4, (Attr("output_type", ELEMENT_TYPE),), inputs=(3, 3), value_check=_check_output_type),
)

SHAPE_RULES = ShapeRules()


def range_count(start, stop, step, precision=np.float64) -> int:
    """max(ceil((stop - start) / step), 0) for numpy scalars of one type.

    Integers: exact, and InvalidModelError when stop - start does not fit a 32- or 64-bit type (the engines compute
    it there and overflow). Floats: the difference and the quotient in `precision`, float64 by default
    (onnxruntime's count and OpenVINO's shape inference: float32 0.034, 39.034, 3 gives 14 elements, as the exact
    span 39.0000019 / 3 does), float32 for OpenVINO's CPU plugin (whose float32 span is 39.0: 13 elements).
    A zero step, NaN or infinity (or a span that overflows to infinity) is refused.
    """
    dtype = np.asarray(start).dtype
    if np.issubdtype(dtype, np.integer):
        first, last, delta = int(start), int(stop), int(step)
        if delta == 0:
            raise InvalidModelError("the Range step is 0")
        info = np.iinfo(dtype)
        # C++ computes an 8- or 16-bit difference in int: only 32- and 64-bit spans overflow in the engines
        if dtype.itemsize >= 4 and not info.min <= last - first <= info.max:
            raise InvalidModelError(f"the Range span {last} - {first} overflows {dtype.name}, the type it is "
                                    "computed in")
        return max(-((first - last) // delta), 0)    # ceil((last - first) / delta), exactly
    values = [np.asarray(v).astype(precision) for v in (start, stop, step)]
    if not all(np.isfinite(values)) or float(values[2]) == 0:
        raise InvalidModelError(f"the Range start, stop and step must be finite and the step non-zero, got "
                                f"{[float(v) for v in values]}")
    with np.errstate(over="ignore"):
        quotient = float((values[1] - values[0]) / values[2])
    if not math.isfinite(quotient):
        raise InvalidModelError(f"the Range span {float(values[1])} - {float(values[0])} overflows {dtype.name}")
    return max(math.ceil(quotient), 0)


def cast_bounds(layer: Layer, start, stop, step) -> tuple:
    """start, stop and step as the layer computes with them: Range-1 as they are (one type), Range-4 cast to its
    output_type, toward zero for an integer type; InvalidModelError for a value the type cannot hold."""
    if layer.opset < 4:
        return start, stop, step
    dtype = dtype_of(layer.attrs["output_type"])
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        cast = []
        for value in (start, stop, step):
            value = np.asarray(value)
            if value.dtype.kind == "f" and not np.isfinite(value):
                raise InvalidModelError(f"a Range bound {float(value)} is not finite")
            whole = int(np.trunc(value)) if value.dtype.kind == "f" else int(value)
            if not info.min <= whole <= info.max:
                raise InvalidModelError(f"the Range bound {whole} does not fit the output type {dtype.name}")
            cast.append(dtype.type(whole))
        return tuple(cast)
    return tuple(np.asarray(value).astype(dtype)[()] for value in (start, stop, step))


def folded_count(layer: Layer, start, stop, step) -> int:
    """The element count OpenVINO's shape inference gives (and a folded Range has): integer outputs count the cast
    bounds exactly, float outputs count the bounds as given in float64 (an f16 Range of 0, 1, float32 0.1 has 10
    elements, though its step as f16 is 0.09998, 1 / 0.09998 = 10.002)."""
    bounds = cast_bounds(layer, start, stop, step)
    if np.issubdtype(np.asarray(bounds[0]).dtype, np.integer):
        return range_count(*bounds)
    return range_count(*(np.float64(value) for value in (start, stop, step)))


@SHAPE_RULES.register("Range")
def infer_range(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    for name, info in zip(("start", "stop", "step"), inputs):
        if info.shape:
            raise InvalidModelError(f"the Range {name} must be a scalar, got {shape_str(info.shape)}")
        if info.element_type not in _NUMERIC:
            raise InvalidModelError(f"the Range {name} has element type {info.element_type}, expected a numeric "
                                    "type")
    if layer.opset < 4:
        types = {info.element_type for info in inputs}
        if len(types) != 1:
            raise InvalidModelError(f"Range-1 takes start, stop and step of one type, got {sorted(types)}")
        element_type = inputs[0].element_type
    else:
        element_type = layer.attrs["output_type"]
    if any(info.value is None for info in inputs):
        return [TensorInfo(element_type, (Dim.dynamic(),))]
    # Known bounds: OpenVINO folds the layer. An integer Range is shape arithmetic (OpenVINO's ONNX frontend writes
    # Range(2, rank) as the axes of a global pooling on a dynamic batch): its value is kept, exact in any precision.
    bounds = [info.value[()] for info in inputs]
    count = folded_count(layer, *bounds)
    if not is_integer(element_type) or count > MAX_FOLDED_ELEMENTS:   # a hostile count is never materialized
        return [TensorInfo(element_type, (Dim.static(count),))]
    start, _, step = (int(value) for value in cast_bounds(layer, *bounds))
    return [folded(element_type, (Dim.static(count),), np.arange(count, dtype=np.int64) * step + start)]


__all__ = ["SCHEMA_ROWS", "SHAPE_RULES", "cast_bounds", "folded_count", "range_count"]
