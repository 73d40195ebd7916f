"""Rearranging layers OpenVINO writes for classic CNNs beyond the basic movement family: ShuffleChannels-1
(ShuffleNet's channel shuffle), GatherND-5 and GatherND-8, Tile-1, DepthToSpace-1 and SpaceToDepth-1 (PixelShuffle),
and Roll-7 (the shifted windows of Swin transformers).

GatherND-5 and GatherND-8 differ only in the output shape when batch_dims > 1: version 5 folds the batch dims
into one dim (their product), version 8 keeps them (as ONNX GatherND does):
    data [2,3,4,5], indices [2,3,1] (k = 1), batch_dims 2 -> GatherND-8 [2,3,5], GatherND-5 [6,5].
Tile repeats an input `repeats` times per axis; repeats shorter than the rank are padded with leading 1s,
longer ones give the data leading dims of 1 (OpenVINO's spec; ONNX Tile needs exactly one per axis).
DepthToSpace and SpaceToDepth take data [N, C, D1 .. DK] of any K >= 1 (ONNX's ops: K = 2 only), block_size and a
mode, blocks_first (ONNX DCR) or depth_first (ONNX CRD).
Roll (data, shift, axes) shifts data along each axis of axes by its shift, wrapping around: shift and axes are
i32 or i64 scalars or 1-D tensors; a scalar shift applies to every axis (the spec; OpenVINO 2026.4's CPU plugin
refuses a scalar shift with several axes), a 1-D shift needs 1-D axes of its length. Negative axes count from the
end, an axis named twice rolls by the sum of its shifts, and a shift is taken modulo the axis length
(runtime.ir_ops.rearrange).
"""

from __future__ import annotations

import math

import numpy as np

from poolir.ir.attributes import INT, STR, Attr, OpVersion
from poolir.ir.element_types import is_integer
from poolir.ir.errors import InvalidModelError, UnsupportedError, UsageError
from poolir.ir.model import Dim, Layer, shape_str
from poolir.ir.registry import ShapeRules
from poolir.ir.shapes import TensorInfo, dynamic_shape, folded, normalize_axis


def _check_shuffle(attrs: dict) -> None:
    if attrs["group"] < 1:
        raise UsageError(f"attribute 'group' = {attrs['group']}: must be >= 1")


DEPTH_SPACE_MODES = ("blocks_first", "depth_first")


def _check_block(attrs: dict) -> None:
    if attrs["block_size"] < 1:
        raise UsageError(f"attribute 'block_size' = {attrs['block_size']}: must be >= 1")


def _check_batch_dims(attrs: dict) -> None:
    if attrs["batch_dims"] < 0:
        raise UsageError(f"attribute 'batch_dims' = {attrs['batch_dims']}: must be >= 0")


SCHEMA_ROWS: tuple[OpVersion, ...] = (
    OpVersion("ShuffleChannels", 1, (Attr("axis", INT, 1), Attr("group", INT, 1)), value_check=_check_shuffle),
    OpVersion("GatherND", 5, (Attr("batch_dims", INT, 0),), inputs=(2, 2), value_check=_check_batch_dims),
    OpVersion("GatherND", 8, (Attr("batch_dims", INT, 0),), inputs=(2, 2), value_check=_check_batch_dims),
    OpVersion("Tile", 1, inputs=(2, 2)),
    OpVersion("Roll", 7, inputs=(3, 3)),
    *(OpVersion(layer_type, 1, (Attr("block_size", INT, 1), Attr("mode", STR, choices=DEPTH_SPACE_MODES)),
                value_check=_check_block) for layer_type in ("DepthToSpace", "SpaceToDepth")),
)

SHAPE_RULES = ShapeRules()


@SHAPE_RULES.register("ShuffleChannels")
def infer_shuffle_channels(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    """The shape is kept; the axis must exist and its length be a multiple of group."""
    (data,) = inputs
    if not data.shape:
        raise InvalidModelError("ShuffleChannels needs an input of rank >= 1, got a scalar")
    axis = normalize_axis(layer.attrs["axis"], len(data.shape))
    length, group = data.shape[axis].value, layer.attrs["group"]
    if length is not None and length % group:
        raise InvalidModelError(f"axis {axis} of length {length} is not a multiple of group {group}")
    return [TensorInfo(data.element_type, data.shape)]


@SHAPE_RULES.register("DepthToSpace", "SpaceToDepth")
def infer_depth_space(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    (data,) = inputs
    if len(data.shape) < 3:
        raise InvalidModelError(f"data {shape_str(data.shape)} must have rank >= 3 (N, C, spatial dims)")
    block, spatial = layer.attrs["block_size"], data.shape[2:]
    factor = block ** len(spatial)
    channels = data.shape[1].value
    if layer.type == "DepthToSpace":
        if channels is not None and channels % factor:
            raise InvalidModelError(f"{channels} channels are not a multiple of block_size^{len(spatial)} = {factor}")
        dims = [None if channels is None else channels // factor] + [_scaled(d, block, True) for d in spatial]
    else:
        if any(d.value is not None and d.value % block for d in spatial):
            raise InvalidModelError(f"spatial dims {shape_str(spatial)} must be multiples of block_size {block}")
        dims = [None if channels is None else channels * factor] + [_scaled(d, block, False) for d in spatial]
    shape = (data.shape[0], *(Dim.static(d) if d is not None else Dim.dynamic() for d in dims))
    return [TensorInfo(data.element_type, shape)]


def _scaled(dim: Dim, block: int, up: bool) -> int | None:
    return None if dim.value is None else (dim.value * block if up else dim.value // block)


def gather_nd_shape(data: tuple, indices: tuple, batch_dims: int, version: int) -> tuple:
    """Output dims of GatherND (see the module docstring); raises InvalidModelError for impossible ranks."""
    if len(indices) < 1 or len(data) < 1:
        raise InvalidModelError("GatherND needs data and indices of rank >= 1")
    if batch_dims >= min(len(data), len(indices)):
        raise InvalidModelError(f"batch_dims {batch_dims} must be less than the data rank {len(data)} and the "
                                f"indices rank {len(indices)}")
    depth = indices[-1].value
    if depth is None:
        raise UnsupportedError("the last dim of the GatherND indices must be static")
    if depth < 1 or batch_dims + depth > len(data):
        raise InvalidModelError(f"the indices' last dim {depth} must be in 1..{len(data) - batch_dims} "
                                f"(data rank {len(data)}, batch_dims {batch_dims})")
    for axis in range(batch_dims):
        a, b = data[axis], indices[axis]
        if a.is_static and b.is_static and a.min != b.min:
            raise InvalidModelError(f"batch dim {axis} differs: data {shape_str(data)}, indices {shape_str(indices)}")
    batch = tuple(data[a] if data[a].is_static else indices[a] for a in range(batch_dims))
    rest = tuple(indices[batch_dims:-1]) + tuple(data[batch_dims + depth:])
    if version < 8 and batch_dims > 1:
        values = [d.value for d in batch]
        batch = (Dim.static(math.prod(values)) if None not in values else Dim.dynamic(),)
    return batch + rest


@SHAPE_RULES.register("GatherND")
def infer_gather_nd(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    data, indices = inputs
    if not is_integer(indices.element_type):
        raise InvalidModelError(f"the indices are {indices.element_type}, expected i32 or i64")
    version = 8 if layer.opset >= 8 else 5
    return [TensorInfo(data.element_type, gather_nd_shape(data.shape, indices.shape, layer.attrs["batch_dims"],
                                                          version))]


@SHAPE_RULES.register("Tile")
def infer_tile(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    data, repeats = inputs
    if not is_integer(repeats.element_type) or len(repeats.shape) > 1:
        raise InvalidModelError(f"repeats must be a 1-D integer tensor, got {repeats.element_type} "
                                f"{shape_str(repeats.shape)}")
    if repeats.value is None:
        length = repeats.shape[0].value if repeats.shape else 1
        if length is None:
            raise UnsupportedError("Tile with repeats of unknown length")
        return [TensorInfo(data.element_type, dynamic_shape(max(length, len(data.shape))))]
    times = [int(v) for v in np.ravel(repeats.value)]
    if any(t < 0 for t in times):
        raise InvalidModelError(f"repeats {times} must not be negative")
    rank = max(len(times), len(data.shape))
    times = [1] * (rank - len(times)) + times
    dims = (Dim.static(1),) * (rank - len(data.shape)) + tuple(data.shape)
    shape = tuple(Dim.static(d.min * t) if d.is_static else (Dim.static(0) if t == 0 else Dim.dynamic())
                  for d, t in zip(dims, times))
    if data.value is not None:
        return [folded(data.element_type, shape, np.tile(data.value, times))]
    return [TensorInfo(data.element_type, shape)]


@SHAPE_RULES.register("Roll")
def infer_roll(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    data, shift, axes = inputs
    for name, info in (("shift", shift), ("axes", axes)):
        if info.element_type not in ("i32", "i64") or len(info.shape) > 1:
            raise InvalidModelError(f"the Roll {name} must be an i32 or i64 scalar or 1-D tensor, got "
                                    f"{info.element_type} {shape_str(info.shape)}")
    if shift.shape and (not axes.shape or (shift.shape[0].is_static and axes.shape[0].is_static
                                           and shift.shape[0].min != axes.shape[0].min)):
        raise InvalidModelError(f"a 1-D Roll shift {shape_str(shift.shape)} needs 1-D axes of its length, got "
                                f"{shape_str(axes.shape)}")
    if axes.value is not None:
        for axis in np.ravel(axes.value).tolist():
            normalize_axis(int(axis), len(data.shape), "a Roll axis")
    return [TensorInfo(data.element_type, data.shape)]
