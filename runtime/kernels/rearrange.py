"""Rearranging kernels: channel shuffle and GatherND, vectorised with numpy (no per-element loops).

Parameters are validated by the ONNX or IR adapter that calls them; index bounds are checked here, since
they depend on the data.
"""

from __future__ import annotations

import math

import numpy as np

from poolir.ir.budget import check_allocation
from poolir.ir.errors import InvalidModelError


def shuffle_channels(x: np.ndarray, axis: int, group: int) -> np.ndarray:
    """Split axis `axis` (length C) into [group, C/group], swap the two, merge back (OpenVINO ShuffleChannels):
    with C = 6, group 2 the channels come out in the order 0, 3, 1, 4, 2, 5."""
    shape = x.shape
    split = shape[:axis] + (group, shape[axis] // group) + shape[axis + 1:]
    order = (*range(axis), axis + 1, axis, *range(axis + 2, len(split)))
    return np.ascontiguousarray(x.reshape(split).transpose(order)).reshape(shape)


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


__all__ = ["gather_nd", "shuffle_channels"]
