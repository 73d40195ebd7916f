"""numpy implementations of the non-pooling operations both executors need.

Each function takes numpy arrays and plain Python parameters (already validated and normalised by
the ONNX or IR adapter that calls it) and returns numpy arrays. Nothing here knows ONNX or IR attribute
spellings; the adapters translate. Low-precision floats (float16, bfloat16) are accumulated in float32
and rounded back once, so a reduction over many elements does not lose precision step by step.
"""

from __future__ import annotations

from typing import Sequence

import ml_dtypes
import numpy as np

LOW_PRECISION_FLOATS = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


def accumulation_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype sums and means are computed in: float32 for f16/bf16, else the dtype itself."""
    return np.dtype(np.float32) if np.dtype(dtype) in LOW_PRECISION_FLOATS else np.dtype(dtype)


def is_float(dtype: np.dtype) -> bool:
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or dtype == ml_dtypes.bfloat16


# ---------------------------------------------------------------------------------------------------
# Elementwise


def divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a / b; integer division truncates toward zero (C semantics, as ONNX Div and OpenVINO Divide
    with pythondiv=false), unlike numpy's floor division."""
    if is_float(a.dtype):
        return np.divide(a, b).astype(a.dtype, copy=False)
    quotient = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -quotient, quotient).astype(a.dtype, copy=False)


def power(base: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """base ** exponent in the type of base (ONNX Pow: the exponent may have another type)."""
    work = accumulation_dtype(base.dtype) if is_float(base.dtype) else base.dtype
    result = np.power(base.astype(work, copy=False), exponent.astype(work, copy=False))
    return result.astype(base.dtype, copy=False)


def modulo(a: np.ndarray, b: np.ndarray, fmod: bool) -> np.ndarray:
    """fmod=True: sign of the dividend (C fmod); fmod=False: sign of the divisor (Python %)."""
    return (np.fmod(a, b) if fmod else np.mod(a, b)).astype(a.dtype, copy=False)


def unary_float(function, x: np.ndarray) -> np.ndarray:
    """Apply a float ufunc (sqrt, exp, ...) computing low-precision floats in float32."""
    work = accumulation_dtype(x.dtype)
    return function(x.astype(work, copy=False)).astype(x.dtype, copy=False)


# ---------------------------------------------------------------------------------------------------
# Reductions

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
        result = np.mean(source, axis=axis, keepdims=keepdims, dtype=work)
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
        result = np.log(np.sum(np.exp(source), axis=axis, keepdims=keepdims, dtype=work))
    else:
        raise ValueError(f"unknown reduction {kind!r}")
    return np.asarray(result).astype(x.dtype, copy=False)


# ---------------------------------------------------------------------------------------------------
# Data movement


def pad(x: np.ndarray, pads_begin: Sequence[int], pads_end: Sequence[int], mode: str = "constant",
        value=0) -> np.ndarray:
    """Pad every axis by (begin, end); negative amounts crop. mode: constant, reflect, edge, wrap."""
    crop = tuple(slice(max(0, -b), x.shape[i] - max(0, -e)) for i, (b, e) in enumerate(zip(pads_begin, pads_end)))
    x = x[crop]
    widths = [(max(0, int(b)), max(0, int(e))) for b, e in zip(pads_begin, pads_end)]
    if mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=np.asarray(value).astype(x.dtype))
    return np.pad(x, widths, mode=mode)


def reshape(x: np.ndarray, shape: Sequence[int], allowzero: bool = False) -> np.ndarray:
    """ONNX/OpenVINO reshape: -1 is inferred; 0 copies the input dim unless allowzero (special_zero=false)."""
    target = [int(s) for s in shape]
    if not allowzero:
        target = [x.shape[i] if s == 0 else s for i, s in enumerate(target)]
    return np.reshape(x, target)


def slice_axes(x: np.ndarray, starts: Sequence[int], ends: Sequence[int], axes: Sequence[int] | None = None,
               steps: Sequence[int] | None = None) -> np.ndarray:
    """ONNX Slice: per listed axis [start:end:step], with clamping as Python slicing does."""
    axes = list(range(len(starts))) if axes is None else [int(a) % x.ndim for a in axes]
    steps = [1] * len(starts) if steps is None else steps
    index = [slice(None)] * x.ndim
    for axis, start, end, step in zip(axes, starts, ends, steps):
        # Huge sentinels (INT64_MAX/MIN) mean "to the end"; Python slicing clamps them already.
        index[axis] = slice(int(start), int(end), int(step))
    return x[tuple(index)]


def split(x: np.ndarray, axis: int, sizes: Sequence[int]) -> list[np.ndarray]:
    boundaries = np.cumsum([int(s) for s in sizes])[:-1]
    return np.split(x, boundaries, axis=axis)


def even_split_sizes(length: int, parts: int) -> list[int]:
    """ONNX Split-18 num_outputs: ceil-sized parts, the last one smaller if needed."""
    size = -(-length // parts)
    sizes = [size] * (length // size) + ([length % size] if length % size else [])
    return sizes


def cast(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return x.astype(dtype, copy=False)
