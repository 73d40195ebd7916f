"""Reductions over axes (ReduceMean, ReduceSum, ...): one function for every kind, sums and means
accumulated in at least float32."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from poolir.runtime.kernels.elementwise import float_to_integer_x86
from poolir.runtime.kernels.precision import accumulation_dtype, is_float

REDUCTIONS = ("mean", "max", "min", "sum", "prod", "l1", "l2", "sum_square", "log_sum", "log_sum_exp")


def type_extremes(dtype: np.dtype) -> tuple:
    """The identities of max and min in `dtype`: (-inf, inf) for floats, (iinfo.min, iinfo.max) for integers."""
    dtype = np.dtype(dtype)
    if is_float(dtype):
        return dtype.type(-np.inf), dtype.type(np.inf)
    if dtype.kind in "iu":
        return dtype.type(np.iinfo(dtype).min), dtype.type(np.iinfo(dtype).max)
    return dtype.type(False), dtype.type(True)


def reduce(x: np.ndarray, kind: str, axes: Sequence[int] | None, keepdims: bool, *,
           empty_extremes: tuple | None = None) -> np.ndarray:
    """Reduce over `axes` (None or empty: every axis). Sums and means accumulate in >= float32.

    A max or min over an empty axis gives `empty_extremes` (lowest, highest), by default the type's own
    extremes (ONNX: "the identity of the reduction", -inf / inf; onnxruntime 1.31 gives iinfo.min / max for
    integers). The IR world passes OpenVINO's, which are finite."""
    axis = None if not axes else tuple(int(a) % x.ndim if x.ndim else 0 for a in axes)
    if kind in ("max", "min"):
        function = np.max if kind == "max" else np.min
        if x.size:
            return function(x, axis=axis, keepdims=keepdims)
        lowest, highest = empty_extremes if empty_extremes is not None else type_extremes(x.dtype)
        return function(x, axis=axis, keepdims=keepdims, initial=lowest if kind == "max" else highest)
    if kind == "log_sum_exp" and not is_float(x.dtype):
        # In float64, then back: -inf (an empty axis) becomes the type's lowest, as onnxruntime 1.31 gives it.
        return float_to_integer_x86(reduce(x.astype(np.float64), kind, axes, keepdims), x.dtype)
    if kind == "mean" and x.dtype.kind in "iu":
        # An integer mean in float64, truncated, saturated into the type: onnxruntime 1.31's numbers (i32 [MAX, MAX]
        # -> MAX, not the wrapped sum's -1; i64 [MAX, 1] -> 2**62; [2**60, 3] -> 2**59, double's rounding).
        mean = reduce(x.astype(np.float64), "mean", axes, keepdims)
        limits, whole = np.iinfo(x.dtype), np.trunc(mean)
        top = float(limits.max)  # 2**63 for int64: not an int64 itself, so the top is chosen by a mask
        inside = np.clip(whole, float(limits.min), np.nextafter(top, 0) if top > limits.max else top)
        return np.where(whole >= top, limits.max, inside.astype(x.dtype)).astype(x.dtype)
    work = accumulation_dtype(x.dtype) if is_float(x.dtype) else x.dtype
    source = x.astype(work, copy=False)
    if kind == "mean":
        # np.mean's own sum and division, except over an empty axis: 0 there, as OpenVINO 2026.4 and onnxruntime
        # compute it (the ONNX spec: "undefined"; np.mean: NaN and a "Mean of empty slice" warning on stderr).
        total = np.sum(source, axis=axis, keepdims=keepdims, dtype=work)
        count = source.size // np.size(total) if np.size(total) else 1  # the elements each output averages
        result = np.asarray(np.true_divide(total, max(count, 1))).astype(work)
    elif kind == "sum":
        result = np.sum(source, axis=axis, keepdims=keepdims, dtype=work)
    elif kind == "prod":
        result = np.prod(source, axis=axis, keepdims=keepdims, dtype=work)
    elif kind == "l1":
        result = np.sum(np.abs(source), axis=axis, keepdims=keepdims, dtype=work)
    elif kind == "l2":
        result = np.sqrt(np.sum(np.square(source), axis=axis, keepdims=keepdims, dtype=work))
    elif kind == "sum_square":
        result = np.sum(np.square(source), axis=axis, keepdims=keepdims, dtype=work)
    elif kind == "log_sum":
        with np.errstate(divide="ignore", invalid="ignore"):  # log 0 = -inf, log of a negative sum NaN: IEEE's
            result = np.log(np.sum(source, axis=axis, keepdims=keepdims, dtype=work))
    elif kind == "log_sum_exp":
        # log(sum(exp(x))) shifted by the largest finite element (0 when none), as onnxruntime, onnx.reference
        # and PyTorch compute it: the plain form overflows at x = 89 in f32 (onnxruntime: 89.0).
        largest = np.max(source, axis=axis, keepdims=True, initial=-np.inf, where=np.isfinite(source))
        shift = np.where(np.isfinite(largest), largest, 0).astype(work)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            total = np.sum(np.exp(source - shift), axis=axis, keepdims=True, dtype=work)
            result = np.log(total) + shift
        if not keepdims:
            result = np.squeeze(result, axis=axis)
    else:
        raise ValueError(f"unknown reduction {kind!r}")
    result = np.asarray(result)
    if x.dtype.kind in "iu" and result.dtype.kind == "f":
        # An integer's log or square root: truncated, and NaN, infinities or values outside the type give its
        # minimum, as onnxruntime 1.31 computes it (ReduceLogSum of i32 [0, 0]: log 0 = -inf -> -2147483648).
        return float_to_integer_x86(result, x.dtype)
    return result.astype(x.dtype, copy=False)


__all__ = ["REDUCTIONS", "reduce", "type_extremes"]
