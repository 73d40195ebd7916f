"""Data movement: pad, reshape, slice and split with the semantics ONNX and OpenVINO share.

Parameters are plain Python values already validated by the adapter, except a reshape target, a tensor of
either world that reshape checks by the rule both share (ir.ops.movement.reshape_target_problem); nothing here
knows ONNX or IR attribute spellings."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from poolir.ir.budget import check_allocation
from poolir.ir.errors import InvalidModelError
from poolir.ir.ops.indexing import slice_bounds
from poolir.ir.ops.movement import reshape_target_problem
from poolir.ir.shapes import checked_axes


def pad(x: np.ndarray, pads_begin: Sequence[int], pads_end: Sequence[int], mode: str = "constant",
        value=0, *, crop_first: bool = True) -> np.ndarray:
    """Pad every axis by (begin, end); negative amounts crop. mode: constant, reflect, edge, wrap, symmetric.

    The worlds crop at different times, which matters where a reflection reaches the cropped part: ONNX
    (onnxruntime's pad.cc slices first: "Pad reflect requires axis length >= 2 after slicing") crops before
    padding, OpenVINO Pad-12 (crop_first=False) maps every output element into the *uncropped* input, i.e. pads
    by the positive amounts and crops after: x = [1, 2, 3, 4], reflect, begin 3, end -2 gives [2, 1, 2, 1, 2] in
    ONNX and [4, 3, 2, 1, 2] in OpenVINO. In constant mode both engines crop after (n = 1, pads 3 and -2: 2
    elements, n + begin + end; cropping first would leave 3). A crop below zero (n + begin + end < 0) is refused."""
    for axis, (n, b, e) in enumerate(zip(x.shape, pads_begin, pads_end)):
        if n + b + e < 0:
            raise InvalidModelError(f"pads {b}, {e} crop axis {axis} of size {n} below zero")
    crops = [(max(0, -int(b)), max(0, -int(e))) for b, e in zip(pads_begin, pads_end)]
    widths = [(max(0, int(b)), max(0, int(e))) for b, e in zip(pads_begin, pads_end)]
    crop_after = not crop_first or mode == "constant"
    if not crop_after:
        x = x[tuple(slice(b, max(b, n - e)) for n, (b, e) in zip(x.shape, crops))]
    if mode == "reflect":
        # A reflection mirrors once: pads below the length (cropped first in ONNX, whole in OpenVINO), which must be
        # >= 2 where it pads. numpy would reflect again past the far edge; onnxruntime and OpenVINO refuse ("Pad
        # reflect: pre-pad (3) exceeds maximum allowed (2)"), and the spec's one mirror says nothing beyond it.
        for axis, ((b, e), size) in enumerate(zip(widths, x.shape)):
            if (b or e) and (size < 2 or max(b, e) > size - 1):
                raise InvalidModelError(f"reflect pads {b}, {e} do not fit axis {axis} of length {size}: each must be "
                                        "below the length (after an ONNX crop), which must be at least 2")
    check_allocation([n + b + e for n, (b, e) in zip(x.shape, widths)], x.itemsize, "the padded output")
    if mode == "constant":
        padded = np.pad(x, widths, mode="constant", constant_values=np.asarray(value).astype(x.dtype))
    else:
        padded = np.pad(x, widths, mode=mode)
    if crop_after:
        padded = np.ascontiguousarray(padded[tuple(slice(b, max(b, n - e)) for n, (b, e) in zip(padded.shape, crops))])
    return padded


def padding_sources(length: int, begin: int, end: int, mode: str) -> np.ndarray:
    """The input position each position of a 1-D pad of `length` by (begin, end) >= 0 copies, by np.pad's rule
    for `mode` (reflect, edge, wrap, symmetric), as int64: reflect [0, 1, 2] by (2, 1) reads [2, 1, 0, 1, 2, 1]."""
    return np.pad(np.arange(length, dtype=np.int64), (begin, end), mode=mode)


def reshape(x: np.ndarray, shape: Sequence[int], allowzero: bool = False) -> np.ndarray:
    """ONNX/OpenVINO reshape: -1 is inferred; 0 copies the input dim unless allowzero (special_zero=false)."""
    target = [int(s) for s in shape]
    problem = reshape_target_problem(target, x.ndim, not allowzero)
    if problem:
        raise InvalidModelError(problem)
    if not allowzero:
        target = [x.shape[i] if s == 0 else s for i, s in enumerate(target)]
    return np.reshape(x, target)


def slice_axes(x: np.ndarray, starts: Sequence[int], ends: Sequence[int], axes: Sequence[int] | None = None,
               steps: Sequence[int] | None = None) -> np.ndarray:
    """ONNX Slice and OpenVINO Slice-8: per listed axis [start:end:step], clamped as the spec says
    (ir.ops.indexing.slice_bounds: as Python slicing, but for a negative step from a start before the axis)."""
    axes = list(range(len(starts))) if axes is None else checked_axes(axes, x.ndim, "the Slice axes")
    steps = [1] * len(starts) if steps is None else steps
    if len({len(starts), len(ends), len(axes), len(steps)}) != 1:
        raise InvalidModelError(f"Slice starts, ends, axes and steps have different lengths ({len(starts)}, "
                                f"{len(ends)}, {len(axes)}, {len(steps)})")
    if 0 in steps:
        raise InvalidModelError("a Slice step is 0")
    index = [slice(None)] * x.ndim
    for axis, start, end, step in zip(axes, starts, ends, steps):
        # Huge sentinels (INT64_MAX/MIN) mean "to the end"; the clamping handles them.
        index[axis] = slice_bounds(int(start), int(end), int(step), x.shape[axis])
    return x[tuple(index)]


def split(x: np.ndarray, axis: int, sizes: Sequence[int]) -> list[np.ndarray]:
    boundaries = np.cumsum([int(s) for s in sizes])[:-1]
    return np.split(x, boundaries, axis=axis)


def even_split_sizes(length: int, parts: int) -> list[int]:
    """ONNX Split-18 num_outputs: ceil-sized parts, the last one smaller if needed."""
    size = -(-length // parts)
    sizes = [size] * (length // size) + ([length % size] if length % size else [])
    return sizes



def gather(data: np.ndarray, indices: np.ndarray, axis: int, batch_dims: int = 0,
           zero_out_of_range: bool = False) -> np.ndarray:
    """Take `indices` along `axis` of data (ONNX Gather, OpenVINO Gather); a negative index counts back
    from the end of the axis. An index outside [-size, size) is an error in ONNX (numpy's IndexError here);
    OpenVINO's CPU plugin gives zeros for it (`zero_out_of_range`, measured with openvino 2026.4, Gather-8).

    With batch_dims = b > 0 the first b axes of data and indices are batch axes, gathered independently
    (OpenVINO Gather-7/8; b <= axis): out[B, P, I, Q] = data[B, P, indices[B, I], Q], where B are the batch
    axes, P the data axes before `axis`, I the remaining index axes and Q the data axes after `axis`.
    """
    check_allocation(data.shape[:axis] + indices.shape + data.shape[axis + 1:], data.itemsize, "the gathered output")
    positions = indices.astype(np.int64, copy=False)
    positions = np.where(positions < 0, positions + data.shape[axis], positions)
    if zero_out_of_range:
        valid = (positions >= 0) & (positions < data.shape[axis])
        if not valid.all():
            taken = gather(data, np.where(valid, positions, 0), axis, batch_dims)
            mask = valid.reshape(indices.shape[:batch_dims] + (1,) * (axis - batch_dims) + indices.shape[batch_dims:]
                                 + (1,) * (data.ndim - axis - 1))
            return np.where(mask, taken, np.zeros((), data.dtype))
    if batch_dims == 0:
        return np.take(data, positions, axis=axis)
    # One advanced-indexing call: the gathered axis moved next to the batch axes, which are indexed by
    # broadcast aranges; the result comes out as (B, I, P, Q) and is transposed to (B, P, I, Q).
    moved = np.moveaxis(data, axis, batch_dims)
    batch_index = tuple(np.arange(n).reshape((n,) + (1,) * (positions.ndim - 1 - k))
                        for k, n in enumerate(data.shape[:batch_dims]))
    taken = moved[batch_index + (positions,)]
    n_index, n_before = positions.ndim - batch_dims, axis - batch_dims
    order = (list(range(batch_dims)) + list(range(batch_dims + n_index, batch_dims + n_index + n_before))
             + list(range(batch_dims, batch_dims + n_index)) + list(range(batch_dims + n_index + n_before, taken.ndim)))
    return taken.transpose(order)


def tile(x: np.ndarray, repeats: Sequence[int]) -> np.ndarray:
    """x repeated `repeats[i]` times along each axis (ONNX Tile, OpenVINO Tile: the shorter of repeats and the
    shape is padded with leading 1s), refused before allocating when the result exceeds the memory budget."""
    rank = max(x.ndim, len(repeats))
    shape = (1,) * (rank - x.ndim) + x.shape
    times = (1,) * (rank - len(repeats)) + tuple(int(t) for t in repeats)
    check_allocation([n * t for n, t in zip(shape, times)], x.itemsize, "the tiled output")
    return np.tile(x, times)


def concatenate(xs: Sequence[np.ndarray], axis: int) -> np.ndarray:
    """xs joined along `axis` (numpy's checks on ranks and dims), refused first when the result exceeds the budget."""
    first = xs[0]
    if -first.ndim <= axis < first.ndim:
        shape = list(first.shape)
        shape[axis] = sum(x.shape[axis] if x.ndim == first.ndim else 0 for x in xs)
        check_allocation(shape, max(x.itemsize for x in xs), "the concatenated output")
    return np.concatenate(xs, axis=axis)


def broadcast(x: np.ndarray, target: Sequence[int]) -> np.ndarray:
    """A fresh array of x broadcast to `target` (numpy rules; target as given), refused first when it exceeds
    the memory budget (a tiny input broadcast to a computed shape)."""
    target = tuple(int(d) for d in target)
    if all(d >= 0 for d in target):
        check_allocation(target, x.itemsize, "the broadcast output")
    return np.broadcast_to(x, target).copy()


def full(shape: Sequence[int], value: np.ndarray) -> np.ndarray:
    """A tensor of `shape` filled with the scalar `value` in its dtype (ONNX ConstantOfShape), budget first."""
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"negative dimensions are not allowed: {list(shape)[:8]}")
    check_allocation(shape, value.itemsize, "the filled output")
    return np.full(shape, value, dtype=value.dtype)


def check_broadcast(arrays: Sequence[np.ndarray], what: str = "the elementwise output") -> None:
    """Before an elementwise op broadcasts its inputs: the result's shape (numpy rules) against the budget."""
    shape = np.broadcast_shapes(*(a.shape for a in arrays))  # a ValueError when they do not broadcast
    if math.prod(shape) > max(a.size for a in arrays):
        check_allocation(shape, max(a.itemsize for a in arrays), what)


__all__ = ["broadcast", "check_broadcast", "concatenate", "even_split_sizes", "full", "gather", "pad", "reshape",
           "slice_axes", "split", "tile"]
