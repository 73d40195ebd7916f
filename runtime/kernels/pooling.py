"""The numpy pooling kernels: one N-D function per reduction family (max, average, Lp, global).

Every kernel takes `x` of shape (*leading, *spatial) and one `ir.geometry.AxisWindow` per trailing
spatial axis, already resolved (pads, rounding and auto_pad are the geometry's business, not ours).
Along one axis, output position o reads the taps

    i(o, j) = o * stride - pad_begin + j * dilation,   j = 0 .. kernel-1

and only *real* taps (0 <= i < length on every axis) take part. Padding taps and taps past the padded
extent (a ceil overhang) never contribute a value and are never selected as an argmax; whether they
count in an average's divisor is the caller's choice (`divisor`). The adapters (ONNX, IR) decide what
their operator means and express it with these parameters.

How it is computed (shared/PERFORMANCE.md has the measurements behind each choice): max and sums run as
one 1-D pass per spatial axis without padding the input (runtime.kernels.separable, over the per-axis
plans of runtime.kernels.window_plan); argmax indices are an equality search after the max
(runtime.kernels.argmax); average divisors are per-axis count vectors broadcast together, cached per
geometry (runtime.kernels.average_divisor); global average is a matvec with a ones vector (BLAS).

Dtypes: max runs exactly in the input dtype (floats, bfloat16 and integers). Average and Lp accumulate
in float32 (float64 for float64 input) and return the input dtype; they accept floating types only.
The input array is never modified.
"""

from __future__ import annotations

import math
from typing import Sequence

import ml_dtypes
import numpy as np

from poolir.ir.errors import UnsupportedError, UsageError
from poolir.ir.geometry import AxisWindow
from poolir.runtime.kernels.argmax import IndexLayout, argmax_indices
from poolir.runtime.kernels.average_divisor import DIVISORS, divide_by_counts, divisor_kinds, fill_positions
from poolir.runtime.kernels.precision import is_float
from poolir.runtime.kernels.separable import separable_reduce
from poolir.runtime.kernels.window_plan import axis_plans
from poolir.runtime.kernels.work_arrays import SLOT_WIDENED, release_work_arrays, widened, work_array

__all__ = ["IndexLayout", "max_pool", "avg_pool", "lp_pool", "global_pool", "lowest_value", "DIVISORS",
           "release_work_arrays"]


def lowest_value(dtype: np.dtype) -> np.generic:
    """The lowest finite value of a dtype: -max for floats (bfloat16 included), iinfo.min for integers."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return dtype.type(np.iinfo(dtype).min)
    if dtype.kind == "b":
        return dtype.type(False)
    return dtype.type(-_finfo(dtype).max)


# --------------------------------------------------------------------------------------------------
# Public kernels
# --------------------------------------------------------------------------------------------------

def max_pool(x: np.ndarray, windows: Sequence[AxisWindow], *, indices: IndexLayout | None = None,
             empty_value=None):
    """Max over the real taps of every window; returns y, or (y, idx) when `indices` is given.

    A window without a real tap gives `empty_value` (None: the lowest finite value of the dtype).
    NaN propagates: a window containing a NaN gives NaN, and its index is that of the first NaN in
    row-major scan order of the window (what np.argmax reports). On ties the first real tap in row-major
    scan order of the window wins.
    """
    x = _as_input(x, windows)
    _check_max_dtype(x.dtype)
    fill = lowest_value(x.dtype) if empty_value is None else x.dtype.type(empty_value)
    y = separable_reduce(x, windows, np.maximum, fill)
    if indices is None:
        return y
    return y, argmax_indices(x, y, axis_plans(windows), indices)


def avg_pool(x: np.ndarray, windows: Sequence[AxisWindow], *, divisor: str | Sequence[str],
             empty_value=0.0) -> np.ndarray:
    """Sum over the real taps divided by a per-axis count product.

    `divisor` (one string, or one per spatial axis): "real" counts the real taps on that axis,
    "padded" the taps inside the padded extent [-pad_begin, length + pad_end), "kernel" the full kernel.
    A window whose divisor is 0 gives `empty_value`.
    """
    x = _as_input(x, windows)
    acc = _accumulator_dtype(x.dtype, "avg_pool")
    kinds = divisor_kinds(divisor, len(windows))
    wide = widened(x, acc)
    total = separable_reduce(wide, windows, np.add, 0, fresh_result=acc == x.dtype)
    zero_axes = divide_by_counts(total, tuple(windows), kinds)
    fill_positions(total, zero_axes, empty_value)
    return total.astype(x.dtype, copy=False)


def lp_pool(x: np.ndarray, windows: Sequence[AxisWindow], *, p: float) -> np.ndarray:
    """(sum over real taps of |x|^p) ** (1/p). A window without a real tap gives 0."""
    x = _as_input(x, windows)
    acc = _accumulator_dtype(x.dtype, "lp_pool")
    p = _check_p(p)
    powered = _abs_power(x, p, acc, work_array(SLOT_WIDENED, x.shape, acc))
    total = separable_reduce(powered, windows, np.add, 0, fresh_result=acc == x.dtype)
    return _root(total, p).astype(x.dtype, copy=False)


def global_pool(x: np.ndarray, kind: str, *, spatial_rank: int, p: float = 2.0) -> np.ndarray:
    """Reduce all `spatial_rank` trailing axes, keeping them as size-1 axes (ONNX Global*Pool).

    kind "avg": mean; "max": max (NaN propagates); "lp": (sum |x|^p) ** (1/p).
    """
    x = np.asarray(x)
    if not isinstance(spatial_rank, (int, np.integer)) or not 1 <= spatial_rank <= x.ndim:
        raise UsageError(f"spatial_rank {spatial_rank!r} must be between 1 and the input rank {x.ndim}")
    leading = x.shape[: x.ndim - spatial_rank]
    size = math.prod(x.shape[x.ndim - spatial_rank:])
    if size == 0:
        raise UsageError(f"global pooling needs a non-empty spatial extent, got shape {x.shape}")
    rows = np.ascontiguousarray(x).reshape(math.prod(leading), size)
    if kind == "max":
        _check_max_dtype(x.dtype)
        result = rows.max(axis=1)
    elif kind == "avg":
        acc = _accumulator_dtype(x.dtype, "global_pool(avg)")
        # A matvec with a ones vector is a BLAS sum: measured 13x faster than rows.sum(axis=1).
        result = rows.astype(acc, copy=False) @ np.ones(size, dtype=acc)
        result /= acc.type(size)
    elif kind == "lp":
        acc = _accumulator_dtype(x.dtype, "global_pool(lp)")
        p = _check_p(p)
        if p == 2.0:
            wide = rows.astype(acc, copy=False)
            result = np.sqrt(np.einsum("ij,ij->i", wide, wide))
        else:
            powered = _abs_power(rows, p, acc, np.empty(rows.shape, dtype=acc))
            result = _root(powered @ np.ones(size, dtype=acc), p)
    else:
        raise UsageError(f"global pool kind {kind!r} is not one of avg, max, lp")
    return result.astype(x.dtype, copy=False).reshape(leading + (1,) * spatial_rank)


# --------------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------------

def _as_input(x, windows: Sequence[AxisWindow]) -> np.ndarray:
    x = np.ascontiguousarray(x)
    if not x.dtype.isnative:      # e.g. big-endian '>f8' from a file: compute (and answer) in native order
        x = x.astype(x.dtype.newbyteorder("="))
    rank = len(windows)
    if rank < 1 or rank > x.ndim:
        raise UsageError(f"{rank} pooling windows for an input of rank {x.ndim}")
    for k, window in enumerate(windows):
        length = x.shape[x.ndim - rank + k]
        if window.length != length:
            raise UsageError(f"spatial axis {k}: the window was resolved for length {window.length}, "
                             f"the input has {length}")
    return x


def _finfo(dtype: np.dtype):
    return ml_dtypes.finfo(dtype) if dtype == np.dtype(ml_dtypes.bfloat16) else np.finfo(dtype)


def _check_max_dtype(dtype: np.dtype) -> None:
    if not (is_float(dtype) or dtype.kind in "iu"):
        raise UnsupportedError(f"max pooling of element type {dtype} is not supported "
                               "(floating types and integers are)")


def _accumulator_dtype(dtype: np.dtype, what: str) -> np.dtype:
    if not is_float(dtype):
        raise UnsupportedError(f"{what} of element type {dtype} is not supported "
                               "(float16, bfloat16, float32 and float64 are)")
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


def _check_p(p) -> float:
    try:
        value = float(p)
    except (TypeError, ValueError):
        raise UsageError(f"Lp pooling p {p!r} is not a number") from None
    if not (value > 0 and math.isfinite(value)):
        raise UsageError(f"Lp pooling p {p!r} must be a positive finite number")
    return value


def _abs_power(x: np.ndarray, p: float, acc: np.dtype, out: np.ndarray) -> np.ndarray:
    """|x| ** p in the accumulation dtype, written to `out` (p = 1 and 2 exactly, without pow)."""
    if p == 2.0:
        if x.dtype == acc:
            return np.multiply(x, x, out=out)
        np.copyto(out, x, casting="unsafe")
        return np.multiply(out, out, out=out)
    if x.dtype == acc:
        np.abs(x, out=out)
    else:
        np.copyto(out, x, casting="unsafe")
        np.abs(out, out=out)
    if p != 1.0:
        np.power(out, acc.type(p), out=out)
    return out


def _root(total: np.ndarray, p: float) -> np.ndarray:
    if p == 1.0:
        return total
    if p == 2.0:
        return np.sqrt(total, out=total)
    return np.power(total, total.dtype.type(1.0 / p), out=total)

