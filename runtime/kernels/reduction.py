"""Reductions over axes (ReduceMean, ReduceSum, ...): one function for every kind, sums and means
accumulated in at least float32."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from poolir.runtime.kernels.precision import accumulation_dtype, is_float

REDUCTIONS = ("mean", "max", "min", "sum", "prod", "l1", "l2", "sum_square", "log_sum", "log_sum_exp")


def reduce(x: np.ndarray, kind: str, axes: Sequence[int] | None, keepdims: bool) -> np.ndarray:
    """Reduce over `axes` (None or empty: every axis). Sums and means accumulate in >= float32."""
    axis = None if not axes else tuple(int(a) % x.ndim if x.ndim else 0 for a in axes)
    if kind in ("max", "min"):
        function = np.max if kind == "max" else np.min
        return function(x, axis=axis, keepdims=keepdims)
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
    return np.asarray(result).astype(x.dtype, copy=False)


__all__ = ["REDUCTIONS", "reduce"]
