"""ScatterND (ONNX) and ScatterNDUpdate (OpenVINO): one vectorised kernel, no per-element loops.

indices [..., k] picks k leading coordinates of data, so every index tuple names a slice data[i0, .., ik-1] of shape
data.shape[k:], and updates holds one such slice per tuple (shape indices.shape[:-1] + data.shape[k:]). Negative
coordinates count from the end (ONNX since 11, OpenVINO both versions); one outside [-dim, dim) is refused with
InvalidModelError (onnxruntime refuses it too; OpenVINO 2026.4's CPU plugin writes out of bounds and returns garbage).

How the three engines treat a tuple that appears more than once (measured with onnxruntime 1.31, OpenVINO 2026.4's
ONNX frontend and its CPU plugin on IR; the specs leave the order undefined):
- none: the last update wins in all three (500 writes to one element leave the 500th), and so here.
- add, sub, mul: applied in index order (float32 0 + 1 + 1e8 - 1e8 is 0, 0 - 1e8 + 1e8 + 1 is 1), as numpy's
  ufunc.at applies them; integers wrap. On bool data add is OR, mul AND and OpenVINO's sub XOR (its spec; the
  CPU plugin computes sub on bool as u8 arithmetic, so F - T - T is 254, true, where XOR gives false).
- max, min: the engines fold acc = f(acc, update) with a strict comparison and differ where it is false. onnxruntime
  keeps acc only when acc strictly wins, else takes the update: a NaN update makes the element NaN, the next
  update replaces a NaN, and of max 0.0 and -0.0 the later wins. OpenVINO takes the update only when it strictly
  wins: NaN updates are skipped, a NaN in data stays, and the earlier of equal values stays. world "onnx" and
  "ir" choose the rule; integers and bool take the plain max and min.
With k = 0 every tuple is empty and each update replaces all of data (ONNX, onnxruntime); OpenVINO's CPU plugin
leaves data unchanged there, so the IR executor and both converters refuse it.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from poolir.ir.budget import check_allocation
from poolir.ir.errors import InvalidModelError

REDUCTIONS = ("none", "add", "sub", "mul", "max", "min")
BF16 = np.dtype(ml_dtypes.bfloat16)
_UFUNCS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def scatter_nd(data: np.ndarray, indices: np.ndarray, updates: np.ndarray, reduction: str = "none",
               world: str = "onnx") -> np.ndarray:
    """A copy of data with updates scattered at indices (module docstring); InvalidModelError for shapes that do not
    fit or an index out of range."""
    if data.ndim < 1 or indices.ndim < 1:
        raise InvalidModelError(f"data {list(data.shape)} and indices {list(indices.shape)} must have rank >= 1")
    depth = indices.shape[-1]
    if depth > data.ndim:
        raise InvalidModelError(f"the indices' last dim {depth} exceeds the data rank {data.ndim}")
    expected = indices.shape[:-1] + data.shape[depth:]
    if updates.shape != expected:
        raise InvalidModelError(f"updates {list(updates.shape)} must have shape {list(expected)} "
                                f"(indices {list(indices.shape)}, data {list(data.shape)})")
    check_allocation(data.shape, data.itemsize, "the scattered output")
    out = data.copy()
    count = math.prod(indices.shape[:-1])
    rows = _rows(indices.reshape(count, depth), data.shape[:depth])
    if count == 0 or out.size == 0:
        return out
    width = math.prod(data.shape[depth:])
    view = out.reshape(math.prod(data.shape[:depth]), width)      # one row per index tuple, sharing out's memory
    slices = updates.reshape(count, width)
    if reduction == "none":
        _, first_from_end = np.unique(rows[::-1], return_index=True)
        last = count - 1 - first_from_end                         # the last update of every distinct row
        view[rows[last]] = slices[last]
    elif reduction == "sub" and out.dtype == np.bool_:
        np.logical_xor.at(view, rows, slices)
    elif reduction in ("max", "min") and (out.dtype.kind == "f" or out.dtype == BF16):
        _fold_extreme(view.reshape(-1), rows, slices, reduction == "max", world == "onnx")
    else:
        _UFUNCS[reduction].at(view, rows, slices)
    return out


def _rows(points: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    """The row (flat index over dims) of every index tuple, negative coordinates counted from the end."""
    points = points.astype(np.int64)
    bounds = np.asarray(dims, np.int64)
    bad = (points < -bounds) | (points >= bounds)
    if bad.any():
        first = points[np.argmax(bad.any(axis=1))].tolist()
        raise InvalidModelError(f"the scatter index {first} is out of range for data dims {list(dims)}")
    if not dims:
        return np.zeros(len(points), np.int64)
    points = np.where(points < 0, points + bounds, points)
    return np.ravel_multi_index(tuple(points.T), dims)


def _fold_extreme(flat: np.ndarray, rows: np.ndarray, slices: np.ndarray, take_max: bool, onnx_rule: bool) -> None:
    """Max or min of float updates into `flat` in place, folded in index order by one engine's rule (module
    docstring), element by element but vectorised: the result is the value that wins and, among equal values
    (0.0 and -0.0), the later (onnxruntime) or earlier (OpenVINO) one."""
    width = slices.shape[1]
    targets = (rows[:, None] * width + np.arange(width)).ravel()
    values = slices.ravel()
    order = np.repeat(np.arange(len(rows)), width)                 # the update each value comes from
    touched = np.unique(targets)
    data_nan = np.isnan(flat[touched].astype(np.float64))
    value_nan = np.isnan(values.astype(np.float64))
    last_nan = np.full(flat.size, -2, np.int64)                    # -2: no NaN; -1: data is NaN
    last_nan[touched[data_nan]] = -1
    if onnx_rule:   # only what follows the last NaN counts; nothing follows it: NaN
        np.maximum.at(last_nan, targets[value_nan], order[value_nan])
        counts = order > last_nan[targets]
    else:           # NaN updates are skipped; a NaN in data stays
        counts = ~value_nan & (last_nan[targets] == -2)
    with_data = last_nan == -2
    best = np.where(with_data, flat, -np.inf if take_max else np.inf).astype(flat.dtype)
    (np.maximum if take_max else np.minimum).at(best, targets[counts], values[counts])
    winners = counts & (values == best[targets])
    chosen = np.full(flat.size, -3 if onnx_rule else len(rows), np.int64)
    chosen[with_data & (flat == best)] = -1                        # data comes first in the fold
    (np.maximum if onnx_rule else np.minimum).at(chosen, targets[winners], order[winners])
    by_update = (chosen[touched] >= 0) & (chosen[touched] < len(rows))
    picked = touched[by_update]
    flat[picked] = slices[chosen[picked], picked % width]
    if onnx_rule:
        ended_nan = touched[(last_nan[touched] >= -1) & (chosen[touched] == -3)]
        flat[ended_nan] = np.nan


__all__ = ["REDUCTIONS", "scatter_nd"]
