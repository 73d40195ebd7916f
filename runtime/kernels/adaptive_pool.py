"""Adaptive pooling (OpenVINO's AdaptiveAvgPool-8 and AdaptiveMaxPool-8, PyTorch's adaptive_*_pool).

Along a spatial axis of length L pooled into `out` bins, bin i covers [floor(i*L/out), ceil((i+1)*L/out)):
L=5, out=3 gives [0, 2), [1, 4), [3, 5). Bins overlap when out does not divide L, and repeat elements when
out > L. A window is the Cartesian product of its axes' bins, so both reductions are separable: one axis at
a time, each as a gather of the widest bin (ceil(L/out) + 1 taps) and a reduction over that tap axis.

- Average: sums in float64 (pairwise, per axis), divided by the bin's tap count, rounded once to the input
  type. OpenVINO sums in the input's float32 order, so the two agree to the ulps summation order explains.
- Max: the first maximum in row-major window order, with OpenVINO's CPU plugin's NaN rule (measured with
  OpenVINO 2026.4): a scan `if v > best` from the window's first element, so a NaN first element is the
  result (index of that element) and a NaN anywhere else is skipped. Indices count positions within each
  (n, c) slab, flattened over the spatial axes (OpenVINO's spec).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from poolir.ir.errors import InvalidModelError
from poolir.runtime.kernels.precision import is_float


def adaptive_bins(length: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) of each of `out` bins over an axis of `length`: floor(i*L/out), ceil((i+1)*L/out)."""
    i = np.arange(out, dtype=np.int64)
    return (i * length) // out, -((-(i + 1) * length) // out)


def _taps(length: int, out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(out, W) tap positions, each bin's padded with its own last element, the real-tap mask, the counts."""
    start, end = adaptive_bins(length, out)
    width = int((end - start).max())
    taps = start[:, None] + np.arange(width)[None, :]
    real = taps < end[:, None]
    return np.minimum(taps, end[:, None] - 1), real, end - start


def _gather(x: np.ndarray, axis: int, taps: np.ndarray) -> np.ndarray:
    """x with `axis` replaced by (out, W): x[..., taps[i, j], ...]."""
    return np.take(x, taps, axis=axis)


def _check(x: np.ndarray, out: Sequence[int]) -> int:
    rank = len(out)
    if x.ndim != rank + 2:
        raise InvalidModelError(f"input of rank {x.ndim} for {rank} output sizes (expected rank {rank + 2})")
    if any(v < 1 for v in out) or any(d < 1 for d in x.shape[2:]):
        raise InvalidModelError(f"output sizes {list(out)} and spatial dims {list(x.shape[2:])} must be >= 1")
    return rank


def adaptive_avg_pool(x: np.ndarray, out: Sequence[int]) -> np.ndarray:
    """Average over each adaptive window (module docstring), computed in float64, rounded once."""
    rank = _check(x, out)
    acc = x.astype(np.float64)
    for k in range(rank):
        axis = 2 + k
        taps, real, counts = _taps(x.shape[axis], out[k])
        weights = real / counts[:, None]  # (out, W): 1/count on real taps, 0 on padding taps
        gathered = _gather(acc, axis, taps)  # (..., out, W, ...)
        shape = [1] * gathered.ndim
        shape[axis], shape[axis + 1] = weights.shape
        acc = np.sum(gathered * weights.reshape(shape), axis=axis + 1)
    return acc.astype(x.dtype)


def adaptive_max_pool(x: np.ndarray, out: Sequence[int], index_dtype) -> tuple[np.ndarray, np.ndarray]:
    """(values, indices) of each adaptive window's first maximum (module docstring for the NaN rule)."""
    rank = _check(x, out)
    spatial = x.shape[2:]
    nan = is_float(x.dtype) and bool(np.isnan(x).any())
    values = np.where(np.isnan(x), -np.inf, x).astype(x.dtype) if nan else x
    index = None
    # Innermost axis first: across rows, the first row holding the maximum wins, and within it the first column,
    # which is the first maximum in row-major order. Padding taps repeat the bin's last element: never first.
    for k in reversed(range(rank)):
        axis = 2 + k
        taps, _, _ = _taps(spatial[k], out[k])
        gathered = _gather(values, axis, taps)
        pick = np.expand_dims(np.argmax(gathered, axis=axis + 1), axis + 1)
        values = np.take_along_axis(gathered, pick, axis=axis + 1).squeeze(axis + 1)
        chosen = np.take_along_axis(_broadcast_taps(taps, gathered.ndim, axis), pick, axis=axis + 1).squeeze(axis + 1)
        chosen = chosen * int(np.prod(spatial[k + 1:], dtype=np.int64))
        if index is not None:
            chosen = chosen + np.take_along_axis(_gather(index, axis, taps), pick, axis=axis + 1).squeeze(axis + 1)
        index = chosen
    if nan:
        starts = [adaptive_bins(spatial[k], out[k])[0][(slice(None),) + (None,) * (rank - 1 - k)] for k in range(rank)]
        corner = np.isnan(x[(Ellipsis, *starts)])
        first = sum(start * int(np.prod(spatial[k + 1:], dtype=np.int64)) for k, start in enumerate(starts))
        values = np.where(corner, np.array(np.nan, x.dtype), values)
        index = np.where(corner, first, index)
    return values.astype(x.dtype, copy=False), index.astype(index_dtype)


def _broadcast_taps(taps: np.ndarray, ndim: int, axis: int) -> np.ndarray:
    """taps (out, W) shaped to broadcast against a gathered array of `ndim` dims with (out, W) at `axis`."""
    shape = [1] * ndim
    shape[axis], shape[axis + 1] = taps.shape
    return taps.reshape(shape)


__all__ = ["adaptive_avg_pool", "adaptive_bins", "adaptive_max_pool"]
