"""Argmax indices of max pooling: which input element each window's maximum came from.

Max first (runtime.kernels.pooling.max_pool), then an equality search over the N-D taps, keeping the
first matching tap in row-major scan order with arithmetic (no masked assignment); the tap number is
turned into a flat index at the end, from per-axis vectors.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from poolir.ir.errors import UsageError
from poolir.runtime.kernels.precision import is_float
from poolir.runtime.kernels.window_plan import AxisPlan
from poolir.runtime.kernels.work_arrays import SLOT_BEST, SLOT_EQUAL, SLOT_SCORE, work_array


@dataclass(frozen=True)
class IndexLayout:
    """How max_pool reports the position of each maximum.

    The index is the flat position of the input element over axes `flatten_from..end` of x, row-major
    (ONNX MaxPool Indices: flatten_from=0; OpenVINO MaxPool-8 `axis`, normalised to >= 0). With
    `spatial_column_major` (ONNX storage_order=1) only the spatial part is column-major: for x of shape
    (N, C, H, W) and flatten_from=0 the index of (n, c, h, w) is (n*C + c)*H*W + h + w*H.
    A window without any real input element reports `empty_index`.
    """

    dtype: np.dtype = np.int64
    flatten_from: int = 0
    spatial_column_major: bool = False
    empty_index: int = -1


def argmax_indices(x: np.ndarray, y: np.ndarray, plans: Sequence[AxisPlan], layout: IndexLayout) -> np.ndarray:
    """Flat index of the first real tap (row-major scan of the window) equal to the window's max.

    The N-D taps that read real input somewhere are numbered t = 0 .. T-1 in row-major order. For each,
    and every output where it is real, a match scores T - t; the running maximum of the scores is the
    first matching tap (branchless: masked assignment is 8-20x slower on random masks). Windows that hold
    a NaN match their first NaN instead (y is NaN there, and NaN never compares equal). The winning
    score becomes an index through per-axis vectors and one table lookup.
    """
    rank = len(plans)
    multipliers = _index_multipliers(x.shape, rank, layout)
    if y.size == 0:
        return np.empty(y.shape, dtype=layout.dtype)
    rows = math.prod(x.shape[: x.ndim - rank])
    xs = x.reshape((rows,) + x.shape[x.ndim - rank:])
    ys = y.reshape((rows,) + y.shape[y.ndim - rank:])
    combos = list(itertools.product(*(plan.taps for plan in plans)))
    n_combos = len(combos)
    score_dtype = np.uint8 if n_combos < 2**8 else np.uint16 if n_combos < 2**16 else np.uint32
    best = work_array(SLOT_BEST, ys.shape, score_dtype)
    best.fill(0)
    scratch_eq = work_array(SLOT_EQUAL, ys.shape, bool)
    scratch_score = work_array(SLOT_SCORE, ys.shape, score_dtype)
    has_nan = is_float(x.dtype) and bool(np.isnan(ys).any())
    y_nan = np.isnan(ys) if has_nan else None
    # offsets[score]: the tap's position inside its window, as a flat index difference; score 0 = no match.
    offsets = np.zeros(n_combos + 1, dtype=np.int64)
    spatial_multipliers = multipliers[x.ndim - rank:]
    for number, combo in enumerate(combos):
        score = n_combos - number
        offsets[score] = sum(t.j * plan.window.dilation * m for t, plan, m in zip(combo, plans, spatial_multipliers))
        out_region = (slice(None),) + tuple(slice(t.out_lo, t.out_hi) for t in combo)
        in_region = (slice(None),) + tuple(plan.input_slice(t, t.out_lo, t.out_hi) for plan, t in zip(plans, combo))
        eq = scratch_eq[out_region]
        np.equal(xs[in_region], ys[out_region], out=eq)
        if has_nan:
            eq |= np.isnan(xs[in_region]) & y_nan[out_region]
        matched = scratch_score[out_region]
        np.multiply(eq, score_dtype(score), out=matched)
        np.maximum(best[out_region], matched, out=best[out_region])

    out_shape = y.shape
    index = _window_origins(x.shape, plans, multipliers)   # int64, broadcast to out_shape below
    index = index + offsets[best.reshape(out_shape)]
    # best == 0 only where no tap is real (every other window matches its own max or first NaN).
    for k, plan in enumerate(plans):
        if plan.empty.size:
            region = [slice(None)] * index.ndim
            region[index.ndim - rank + k] = plan.empty
            index[tuple(region)] = layout.empty_index
    return index.astype(layout.dtype, copy=False)


def _index_multipliers(x_shape: tuple[int, ...], rank: int, layout: IndexLayout) -> list[int]:
    """Per axis of x, what one step along it adds to the flat index (0 before `flatten_from`)."""
    ndim = len(x_shape)
    if not 0 <= layout.flatten_from < ndim:
        raise UsageError(f"index flatten_from {layout.flatten_from} is outside the input rank {ndim}")
    order = list(range(ndim))
    if layout.spatial_column_major:
        # Leading axes row-major (outermost first), then the spatial axes innermost-first.
        order = order[: ndim - rank] + order[ndim - rank:][::-1]
    multipliers = [0] * ndim
    step = 1
    for axis in reversed(order):
        if axis >= layout.flatten_from:
            multipliers[axis] = step
            step *= x_shape[axis]
    return multipliers


def _window_origins(x_shape: tuple[int, ...], plans: Sequence[AxisPlan], multipliers: list[int]) -> np.ndarray:
    """Flat index of each window's tap 0 (which may lie in the padding): a broadcast sum of axis vectors."""
    ndim, rank = len(x_shape), len(plans)
    vectors = [np.arange(x_shape[axis], dtype=np.int64) for axis in range(ndim - rank)]
    vectors += [plan.window.starts() for plan in plans]
    total = np.zeros((), dtype=np.int64)
    for axis, (vector, multiplier) in enumerate(zip(vectors, multipliers)):
        shape = [1] * ndim
        shape[axis] = vector.size
        total = total + (vector * multiplier).reshape(shape)
    return np.broadcast_to(total, x_shape[: ndim - rank] + tuple(p.window.output for p in plans))


__all__ = ["IndexLayout", "argmax_indices"]
