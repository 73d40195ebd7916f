"""IR rearranging layers (ir/ops/rearrange.py): ShuffleChannels, GatherND-5/8, Tile, DepthToSpace, SpaceToDepth,
Roll, OpenVINO's semantics.

Roll follows its spec where OpenVINO 2026.4's CPU plugin departs from it: a scalar shift with several axes rolls
each of them (the plugin refuses the model), an axis out of range is refused (the plugin ignores it), and shifts
are summed and reduced modulo the length exactly (the plugin computes shifts in int32: it rolls a length-4 axis by 3
for a shift of 2^40 + 1, and wraps a sum of shifts past 2^31).
"""

from __future__ import annotations

import math

from poolir.ir.errors import InvalidModelError
from poolir.runtime.ir_ops.registry import LayerFn, LayerInfo, builder, int_list
from poolir.runtime.kernels.movement import tile
from poolir.runtime.kernels.rearrange import (depth_to_space, gather_nd, roll, roll_shifts, shuffle_channels,
                                              space_to_depth)


@builder("ShuffleChannels")
def _shuffle_channels(info: LayerInfo) -> LayerFn:
    axis, group = info.layer.attrs["axis"], info.layer.attrs["group"]

    def run(args):
        (x,) = args
        if not -x.ndim <= axis < x.ndim or x.shape[axis % x.ndim] % group:
            raise InvalidModelError(f"axis {axis} of shape {list(x.shape)} does not split into {group} groups")
        return (shuffle_channels(x, axis % x.ndim, group),)
    return run


@builder("GatherND")
def _gather_nd(info: LayerInfo) -> LayerFn:
    batch_dims = info.layer.attrs["batch_dims"]
    version = 8 if info.layer.opset >= 8 else 5

    def run(args):
        data, indices = args
        result = gather_nd(data, indices, batch_dims)
        if version < 8 and batch_dims > 1:  # GatherND-5 folds the batch dims into one
            result = result.reshape((math.prod(result.shape[:batch_dims]),) + result.shape[batch_dims:])
        return (result,)
    return run


@builder("Tile")
def _tile(info: LayerInfo) -> LayerFn:
    def run(args):
        data, repeats = args
        times = int_list(repeats, "Tile repeats")
        if any(t < 0 for t in times):
            raise InvalidModelError(f"Tile repeats {times} must not be negative")
        return (tile(data, times),)  # the shorter of repeats and the shape is padded with leading 1s
    return run


@builder("DepthToSpace", "SpaceToDepth")
def _depth_space(info: LayerInfo) -> LayerFn:
    block, blocks_first = info.layer.attrs["block_size"], info.layer.attrs["mode"] == "blocks_first"
    to_space = info.layer.type == "DepthToSpace"

    def run(args):
        (x,) = args
        spatial = x.shape[2:]
        if to_space and x.shape[1] % block ** len(spatial):
            raise InvalidModelError(f"{x.shape[1]} channels are not a multiple of block_size^{len(spatial)}")
        if not to_space and any(d % block for d in spatial):
            raise InvalidModelError(f"spatial dims {list(spatial)} are not multiples of block_size {block}")
        return ((depth_to_space if to_space else space_to_depth)(x, block, blocks_first),)
    return run


@builder("Roll")
def _roll(info: LayerInfo) -> LayerFn:
    def run(args):
        x, shift, axes = args
        for name, value in (("shift", shift), ("axes", axes)):
            if value.dtype.kind not in "iu" or value.ndim > 1:
                raise InvalidModelError(f"the Roll {name} must be an integer scalar or 1-D tensor, got {value.dtype} "
                                        f"{list(value.shape)}")
        if shift.ndim and not axes.ndim:
            raise InvalidModelError("a 1-D Roll shift needs 1-D axes")
        return (roll(x, roll_shifts(x.shape, shift, axes)),)
    return run
