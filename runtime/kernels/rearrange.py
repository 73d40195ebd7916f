"""Rearranging kernels: channel shuffle, depth to space and back, GatherND and Roll, vectorised with numpy (no
per-element loops).

Parameters are validated by the ONNX or IR adapter that calls them; index bounds are checked here, since
they depend on the data.
"""

from __future__ import annotations

import math

import numpy as np

from poolir.ir.budget import check_allocation
from poolir.ir.errors import InvalidModelError
from poolir.ir.shapes import normalize_axis


def shuffle_channels(x: np.ndarray, axis: int, group: int) -> np.ndarray:
    """Split axis `axis` (length C) into [group, C/group], swap the two, merge back (OpenVINO ShuffleChannels):
    with C = 6, group 2 the channels come out in the order 0, 3, 1, 4, 2, 5."""
    shape = x.shape
    split = shape[:axis] + (group, shape[axis] // group) + shape[axis + 1:]
    order = (*range(axis), axis + 1, axis, *range(axis + 2, len(split)))
    return np.ascontiguousarray(x.reshape(split).transpose(order)).reshape(shape)


def depth_space_plan(shape: tuple, block: int, blocks_first: bool, to_space: bool) -> tuple[tuple, tuple, tuple]:
    """DepthToSpace (to_space) or SpaceToDepth as (split shape, transpose order, final shape) for data of `shape`
    [N, C, D1 .. DK]. DepthToSpace: [N, C, D..] -> [N, C / block^K, D * block ..]: the channel index splits into K
    block offsets and a new channel, blocks first (ONNX DCR, OpenVINO blocks_first) or the channel first (ONNX CRD,
    OpenVINO depth_first), and each block offset moves in behind its spatial axis. With block 2, C = 4, blocks
    first, channel 1 (offsets 0, 1) lands at the odd columns of the even rows. SpaceToDepth is its inverse."""
    n, c, *spatial = shape
    k = len(spatial)
    if to_space:
        channels = c // block ** k
        if blocks_first:   # axes: 0, offsets 1..k, channel k+1, spatial k+2..
            split, channel_axis, first_offset = (n, *[block] * k, channels, *spatial), k + 1, 1
        else:              # axes: 0, channel 1, offsets 2..k+1, spatial k+2..
            split, channel_axis, first_offset = (n, channels, *[block] * k, *spatial), 1, 2
        order = (0, channel_axis, *(axis for i in range(k) for axis in (k + 2 + i, first_offset + i)))
        return split, order, (n, channels, *(d * block for d in spatial))
    split = (n, c, *(v for d in spatial for v in (d // block, block)))
    outer, offsets = [2 + 2 * i for i in range(k)], [3 + 2 * i for i in range(k)]
    order = (0, *offsets, 1, *outer) if blocks_first else (0, 1, *offsets, *outer)
    return split, order, (n, c * block ** k, *(d // block for d in spatial))


def depth_to_space(x: np.ndarray, block: int, blocks_first: bool) -> np.ndarray:
    return _rearranged(x, depth_space_plan(x.shape, block, blocks_first, True))


def space_to_depth(x: np.ndarray, block: int, blocks_first: bool) -> np.ndarray:
    return _rearranged(x, depth_space_plan(x.shape, block, blocks_first, False))


def _rearranged(x: np.ndarray, plan: tuple[tuple, tuple, tuple]) -> np.ndarray:
    split, order, final = plan
    return np.ascontiguousarray(x.reshape(split).transpose(order)).reshape(final)


def gather_nd(data: np.ndarray, indices: np.ndarray, batch_dims: int) -> np.ndarray:
    """GatherND with the batch dims kept (ONNX GatherND, OpenVINO GatherND-8): output shape
    indices.shape[:-1] + data.shape[batch_dims + k:], k = indices.shape[-1]. Negative indices count from the
    end; an index out of range raises InvalidModelError."""
    batch = data.shape[:batch_dims]
    if indices.shape[:batch_dims] != batch:
        raise InvalidModelError(f"the batch dims of data {list(data.shape)} and indices {list(indices.shape)} "
                                "differ")
    depth = indices.shape[-1]
    target = data.shape[batch_dims:batch_dims + depth]
    check_allocation(indices.shape[:-1] + data.shape[batch_dims + depth:], data.itemsize, "the gathered output")
    flat_batch = math.prod(batch)
    points = indices.reshape(flat_batch, -1, depth).astype(np.int64)
    bounds = np.asarray(target, np.int64)
    if np.any((points < -bounds) | (points >= bounds)):
        raise InvalidModelError(f"a GatherND index is out of range for dims {list(target)}")
    points = np.where(points < 0, points + bounds, points)
    source = data.reshape((flat_batch,) + target + data.shape[batch_dims + depth:])
    picked = source[(np.arange(flat_batch)[:, None], *np.moveaxis(points, -1, 0))]
    return picked.reshape(indices.shape[:-1] + data.shape[batch_dims + depth:])


def roll_shifts(shape: tuple[int, ...], shifts, axes) -> dict[int, int]:
    """axis -> net shift in [0, length) of every axis a Roll moves: axes normalised (negative from the end), a scalar
    shift broadcast over them, an axis named twice rolled by the sum of its shifts, each sum taken modulo the axis
    length (exact in Python ints: a shift of 2^40 + 1 on 4 elements is 1). InvalidModelError for an axis out of range
    or shift and axes of different lengths."""
    shift_list, axis_list = [int(v) for v in np.ravel(shifts)], [int(v) for v in np.ravel(axes)]
    if np.ndim(shifts) == 0:
        shift_list = shift_list * len(axis_list)
    if len(shift_list) != len(axis_list):
        raise InvalidModelError(f"Roll shift {shift_list[:8]} and axes {axis_list[:8]} differ in length")
    net: dict[int, int] = {}
    for shift, axis in zip(shift_list, axis_list):
        axis = normalize_axis(axis, len(shape), "a Roll axis")
        net[axis] = net.get(axis, 0) + shift
    return {axis: total % shape[axis] for axis, total in net.items() if shape and shape[axis] and total % shape[axis]}


def roll(x: np.ndarray, shifts: dict[int, int]) -> np.ndarray:
    """x with each axis of `shifts` rolled by its shift (roll_shifts): out[i] = x[(i - shift) mod length]."""
    check_allocation(x.shape, x.itemsize, "the rolled output")
    if not shifts:
        return x.copy()
    return np.roll(x, tuple(shifts.values()), tuple(shifts))


__all__ = ["depth_space_plan", "depth_to_space", "gather_nd", "roll", "roll_shifts", "shuffle_channels",
           "space_to_depth"]
