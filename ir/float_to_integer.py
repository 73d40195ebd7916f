"""Float -> integer conversion: as x86 converts (what onnxruntime's Cast and OpenVINO's folded Convert compute,
where numpy's astype is undefined and warns), and the rule OpenVINO's CPU plugin follows at run time."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from poolir.ir.element_types import SATURATED_DTYPES, is_float


def float_to_integer_x86(values: np.ndarray, dtype: np.dtype, round_half_even: bool = False) -> np.ndarray:
    """x86's float -> integer conversion (cvttsd2si, or cvtps2dq with `round_half_even`): truncate toward zero
    (or round half to even); NaN, infinities and values outside `dtype` become its minimum, where numpy's
    astype is undefined and warns."""
    limits = np.iinfo(dtype)
    with np.errstate(invalid="ignore"):
        inside = np.isfinite(values) & (values >= limits.min) & (values < float(limits.max) + 1)
    kept = np.where(inside, values, 0)
    return np.where(inside, np.rint(kept) if round_half_even else np.trunc(kept), limits.min).astype(dtype)


def cast(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """x as `dtype`. A float into a signed or 8-bit integer goes as x86 converts it, which numpy leaves undefined
    (and warns about): truncated into int64, or into int32 and then wrapped into i8/u8/i32; NaN, infinities and
    values outside give the minimum before the wrap (f32 [nan, inf, 300.5, 65504] -> i8 [0, 0, 44, -32]), as
    onnxruntime 1.31's Cast and OpenVINO 2026.4's Convert compute it."""
    dtype = np.dtype(dtype)
    if is_float(x.dtype) and (dtype.kind == "i" or dtype == np.uint8):
        wide = np.dtype(np.int64) if dtype == np.int64 else np.dtype(np.int32)
        return float_to_integer_x86(x.astype(np.float64), wide).astype(dtype)
    return x.astype(dtype, copy=False)


@dataclass(frozen=True, slots=True)
class FloatToInteger:
    """How OpenVINO 2026.4's CPU plugin converts a float tensor into an integer type at run time (measured: its spec
    leaves values outside the target undefined): NaN to 0 (`nan_to_zero`), then values outside `bounds` to the
    nearer bound (NaN kept), then x86's truncating conversion (NaN, infinities and values outside giving the
    minimum, wrapped into i8/u8), through int32 when the target is i64 (the plugin holds i64 as i32)."""

    bounds: tuple[float, float] | None = None
    nan_to_zero: bool = False
    through_int32: bool = False


def openvino_float_to_integer(source: np.dtype, target: np.dtype, folded: bool, dynamic: bool,
                              from_parameter: bool) -> FloatToInteger:
    """The rule for a float -> integer Convert. Folded (every input known when compiling), OpenVINO converts with
    its reference implementation, as x86 does. At run time, straight from a Parameter (`from_parameter`), whose
    values the plugin converts at the input boundary: an f64 saturates into the target ([nan, 1e300, -0.99] ->
    i8 [0, 127, 0]; i64 within int32's range), an f16 infinity becomes +-65504 before i32 and i64. Otherwise an
    f64 goes as f32 does (the plugin computes f64 in float32; poolir keeps f64's precision). Float into i8/u8
    saturates on the dynamic-shape path (an input dim dynamic: f32 [300, -159, nan] -> u8 [255, 0, 0], [44, 97, 0]
    on static dims), and i64 goes through int32 (f32 3e9 -> i64 -2147483648)."""
    target = np.dtype(target)
    if folded:
        return FloatToInteger()
    wide = target == np.int64
    limits = np.iinfo(np.int32 if wide else target)
    if from_parameter and source == np.float64:
        return FloatToInteger((float(limits.min), float(limits.max)), target in SATURATED_DTYPES, wide)
    if dynamic and target in SATURATED_DTYPES:
        return FloatToInteger((float(limits.min), float(limits.max)), nan_to_zero=True)
    half_max = float(np.finfo(np.float16).max)
    half_bounded = from_parameter and source == np.float16 and target.itemsize >= 4
    return FloatToInteger((-half_max, half_max) if half_bounded else None, through_int32=wide)
