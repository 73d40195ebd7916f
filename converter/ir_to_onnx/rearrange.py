"""Rearranging IR layers -> ONNX: ShuffleChannels, GatherND-5/8, Tile, DepthToSpace, SpaceToDepth.

ShuffleChannels has no ONNX op: it is written as Reshape [d0..d(axis-1), group, C/group, -1] (leading dims
copied with 0), Transpose of the two group axes, and Reshape back to Shape(x); exact, it only moves elements.
GatherND-8 is ONNX GatherND (batch_dims from opset 12); GatherND-5 with batch_dims > 1 adds a Reshape that
folds the batch dims into one. Tile's repeats (constant or computed) are padded to the data rank (or the data
gets leading dims of 1) because ONNX Tile takes exactly one repeat per axis.
DepthToSpace and SpaceToDepth of rank 4 are the ONNX ops where the opset has their mode (DepthToSpace CRD from
11, SpaceToDepth CRD from 28); otherwise (another rank, or that mode missing) they are written as the Reshape,
Transpose, Reshape they are (runtime.kernels.rearrange.depth_space_plan), which needs static C and spatial dims.
Roll has no ONNX op: every rolled axis becomes Concat(Slice(x, split, end), Slice(x, 0, split)) along it, with
split = length - shift mod length. With a constant shift and a static length the split is a constant (an axis rolled
by a multiple of its length is left alone); otherwise it is computed from Shape, Mod and Sub (a computed shift, or a
dynamic length, from opset 10; Max(length, 1) keeps Mod from dividing by an empty axis's 0). The axes must be
constant.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from onnx import TensorProto

from poolir.converter.ir_to_onnx.context import Context
from poolir.converter.ir_to_onnx.opsets import check_writes, has_attribute
from poolir.ir.errors import ConversionError
from poolir.ir.model import Layer
from poolir.ir.shapes import normalize_axis, static_values
from poolir.runtime.kernels.rearrange import depth_space_plan, roll_shifts
from poolir.runtime.onnx_ops import first_opset, first_opset_with


def shuffle_channels(context: Context, layer: Layer) -> None:
    shape = context.input_info(layer, 0).shape
    axis = normalize_axis(layer.attrs["axis"], len(shape))
    group = layer.attrs["group"]
    length = shape[axis].value
    if length is None:
        raise ConversionError(f"ShuffleChannels needs a static length of axis {axis}")
    source = context.input(layer, 0)
    split = context.int64s([0] * axis + [group, length // group, -1], f"{layer.name}/split_shape")
    (grouped,) = context.node("Reshape", [source, split], f"{layer.name}/grouped")
    order = list(range(axis + 3))
    order[axis], order[axis + 1] = axis + 1, axis
    (swapped,) = context.node("Transpose", [grouped], f"{layer.name}/swapped", perm=order)
    (original,) = context.node("Shape", [source], f"{layer.name}/shape")
    context.node_into("Reshape", [swapped, original], [context.name_output(layer, 0)], layer.name)


def gather_nd(context: Context, layer: Layer) -> None:
    batch_dims = layer.attrs["batch_dims"]
    since = first_opset("GatherND") if batch_dims == 0 else first_opset_with("GatherND", "batch_dims")
    context.check_opset(since, f"GatherND with batch_dims={batch_dims} needs ONNX GatherND from opset {since}")
    indices = context.input(layer, 1)
    if context.input_info(layer, 1).element_type != "i64":  # ONNX GatherND takes int64 indices only
        (indices,) = context.node("Cast", [indices], f"{layer.name}/indices_i64", to=TensorProto.INT64)
    inputs = [context.input(layer, 0), indices]
    attrs = {"batch_dims": batch_dims} if batch_dims else {}
    output = context.name_output(layer, 0)
    if layer.opset >= 8 or batch_dims <= 1:
        context.node_into("GatherND", inputs, [output], layer.name, **attrs)
        return
    # GatherND-5 folds the batch dims into one: reshape to the output shape inference found.
    target = static_values(context.output_info(layer, 0).shape)
    if target is None:
        raise ConversionError("GatherND-5 with batch_dims > 1 needs static output dims")
    (gathered,) = context.node("GatherND", inputs, f"{layer.name}/kept_batch", **attrs)
    context.node_into("Reshape", [gathered, context.int64s(target, f"{layer.name}/shape")], [output], layer.name)


def tile(context: Context, layer: Layer) -> None:
    """Tile: repeats constant (padded here) or computed (cast to int64, padded with a Concat of ones)."""
    rank = len(context.input_info(layer, 0).shape)
    data = context.input(layer, 0)
    known = context.constant(layer, 1)
    if known is not None:
        values = [int(v) for v in np.ravel(known)]
        length = len(values)
        repeats = context.int64s([1] * (rank - length) + values, f"{layer.name}/repeats")
    else:
        info = context.input_info(layer, 1)
        length = info.shape[0].value if info.shape else 1
        if length is None:
            raise ConversionError("Tile repeats computed at run time need a static length")
        repeats = context.input(layer, 1)
        if info.element_type != "i64":  # ONNX Tile takes int64 repeats only
            (repeats,) = context.node("Cast", [repeats], f"{layer.name}/repeats_i64", to=TensorProto.INT64)
        if not info.shape:
            (repeats,) = context.node("Reshape", [repeats, context.int64s([1], f"{layer.name}/one")],
                                      f"{layer.name}/repeats_1d")
        if length < rank:
            ones = context.int64s([1] * (rank - length), f"{layer.name}/ones")
            (repeats,) = context.node("Concat", [ones, repeats], f"{layer.name}/repeats", axis=0)
    if length > rank:
        axes = list(range(length - rank))
        if has_attribute("Unsqueeze", context.opset, "axes"):
            (data,) = context.node("Unsqueeze", [data], f"{layer.name}/lifted", axes=axes)
        else:
            (data,) = context.node("Unsqueeze", [data, context.int64s(axes, f"{layer.name}/axes")],
                                   f"{layer.name}/lifted")
    context.node_into("Tile", [data, repeats], [context.name_output(layer, 0)], layer.name)


def depth_space(context: Context, layer: Layer) -> None:
    shape = context.input_info(layer, 0).shape
    block, blocks_first = layer.attrs["block_size"], layer.attrs["mode"] == "blocks_first"
    source, output = context.input(layer, 0), context.name_output(layer, 0)
    has_mode = has_attribute(layer.type, context.opset, "mode")
    if len(shape) == 4 and (blocks_first or has_mode):
        check_writes(context, layer.type, context.input_info(layer, 0).element_type)
        mode = {"mode": "DCR" if blocks_first else "CRD"} if has_mode else {}
        context.node_into(layer.type, [source], [output], layer.name, blocksize=block, **mode)
        return
    dims = static_values(shape[1:])
    if dims is None:
        raise ConversionError(f"{layer.type} of rank {len(shape)} (or mode {layer.attrs['mode']} in opset "
                              f"{context.opset}) is written as Reshape/Transpose/Reshape, which needs static dims "
                              f"after N, got {[str(d) for d in shape]}")
    split, order, final = depth_space_plan((0, *dims), block, blocks_first, layer.type == "DepthToSpace")
    (grouped,) = context.node("Reshape", [source, context.int64s(split, f"{layer.name}/split_shape")],
                              f"{layer.name}/split")
    (moved,) = context.node("Transpose", [grouped], f"{layer.name}/moved", perm=list(order))
    context.node_into("Reshape", [moved, context.int64s(final, f"{layer.name}/shape")], [output], layer.name)


def roll(context: Context, layer: Layer) -> None:
    shape = context.input_info(layer, 0).shape
    axes, shift = context.constant(layer, 2), context.constant(layer, 1)
    if axes is None:
        raise ConversionError("Roll axes computed at run time are not converted (the rolled axes must be known)")
    if context.input_info(layer, 1).shape and not context.input_info(layer, 2).shape:
        raise ConversionError("a 1-D Roll shift needs 1-D axes")
    positions: dict[int, list[int]] = {}
    for position, axis in enumerate(np.ravel(axes).tolist()):
        positions.setdefault(normalize_axis(int(axis), len(shape), "a Roll axis"), []).append(position)
    if not shape:
        positions = {}      # rolling a scalar moves nothing
    splits: dict[int, int | str]
    if shift is not None and all(shape[axis].is_static for axis in positions):
        lengths = tuple(d.value if d.is_static else 1 for d in shape)   # roll_shifts reads the rolled axes only
        splits = {axis: lengths[axis] - k for axis, k in roll_shifts(lengths, shift, axes).items()}
    else:
        context.check_opset(10, "Roll with a computed shift or a dynamic length needs ONNX Slice and Mod with "
                                "computed bounds, from opset 10")
        splits = {axis: _computed_split(context, layer, axis, where, shift) for axis, where in positions.items()}
    x = context.input(layer, 0)
    for index, (axis, split) in enumerate(splits.items()):
        base = f"{layer.name}/axis{axis}"
        begin = context.int64s([split], f"{base}/split") if isinstance(split, int) else split
        zero, end = context.int64s([0], f"{base}/zero"), context.int64s([2**63 - 1], f"{base}/end")
        on_axis = context.int64s([axis], f"{base}/axes")
        (tail,) = context.node("Slice", [x, begin, end, on_axis], f"{base}/tail")
        (head,) = context.node("Slice", [x, zero, begin, on_axis], f"{base}/head")
        if index == len(splits) - 1:
            context.node_into("Concat", [tail, head], [context.name_output(layer, 0)], layer.name, axis=axis)
            return
        (x,) = context.node("Concat", [tail, head], f"{base}/rolled", axis=axis)
    context.node_into("Identity", [x], [context.name_output(layer, 0)], layer.name)


def _computed_split(context: Context, layer: Layer, axis: int, where: list[int], shift) -> str:
    """length - (total shift mod max(length, 1)) of `axis` as a one-element int64 tensor; `where`: the positions in
    axes naming it (their shifts add up)."""
    base = f"{layer.name}/axis{axis}"
    (dims,) = context.node("Shape", [context.input(layer, 0)], f"{base}/shape")
    (length,) = context.node("Gather", [dims, context.int64s([axis], f"{base}/index")], f"{base}/length", axis=0)
    if shift is not None:
        shifts = [int(v) for v in np.ravel(shift)]
        if not np.ndim(shift):      # a scalar shift rolls every named axis
            shifts *= np.size(context.constant(layer, 2))
        total = sum(shifts[p] for p in where)
        if not -2**63 <= total < 2**63:
            raise ConversionError(f"the Roll shifts of axis {axis} add up to {total}, beyond int64")
        total_tensor = context.int64s([total], f"{base}/shift")
    else:
        total_tensor = _computed_shift(context, layer, base, where)
    (positive,) = context.node("Max", [length, context.int64s([1], f"{base}/one")], f"{base}/divisor")
    (net,) = context.node("Mod", [total_tensor, positive], f"{base}/net_shift", fmod=0)
    (split,) = context.node("Sub", [length, net], f"{base}/split")
    return split


def _computed_shift(context: Context, layer: Layer, base: str, where: list[int]) -> str:
    """The sum of the computed shifts at `where` (a scalar shift counted once per position) as int64 [1]."""
    source = context.input(layer, 1)
    info = context.input_info(layer, 1)
    if info.element_type != "i64":
        (source,) = context.node("Cast", [source], f"{base}/shift_i64", to=TensorProto.INT64)
    if not info.shape:
        (one,) = context.node("Reshape", [source, context.int64s([1], f"{base}/one_value")], f"{base}/shift1")
        if len(where) == 1:
            return one
        (total,) = context.node("Mul", [one, context.int64s([len(where)], f"{base}/times")], f"{base}/shift")
        return total
    picked = [context.node("Gather", [source, context.int64s([p], f"{base}/at{p}")], f"{base}/shift{p}", axis=0)[0]
              for p in where]
    total = picked[0]
    for more in picked[1:]:
        (total,) = context.node("Add", [total, more], f"{base}/shift_sum")
    return total


CONVERTERS: dict[str, Callable[[Context, Layer], None]] = {
    "ShuffleChannels": shuffle_channels, "GatherND": gather_nd, "Tile": tile, "DepthToSpace": depth_space,
    "SpaceToDepth": depth_space, "Roll": roll,
}
