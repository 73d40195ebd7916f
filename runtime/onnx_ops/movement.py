"""ONNX data-movement operators: Pad, Transpose, Reshape, Concat, Split, Slice, Squeeze, Unsqueeze, Gather,
Expand, Shape, Constant, ConstantOfShape, Flatten, GatherND, Tile, DepthToSpace and SpaceToDepth: version rows and
adapters onto numpy and runtime.kernels.movement and .rearrange.

DepthToSpace splits the channel index blocks first (mode DCR, the default and the only one before 11) or channel
first (CRD); SpaceToDepth is DCR's inverse, and from 28 takes the mode too. Both take N x C x H x W only.

Element types are not restricted by these tables (numpy computes any of them). Versions before an op's
first row use legacy semantics (e.g. broadcast/axis attributes before opset 7) and are unsupported.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from poolir.ir.errors import InvalidModelError, UsageError
from poolir.ir.shapes import axis_problem, checked_axes, checked_axis
from poolir.runtime.kernels import movement as kernels
from poolir.runtime.kernels import rearrange as rearrange_kernels
from poolir.runtime.onnx_ops.registry import (FLOAT, FLOATS, INT, INTS, REMOVED, SPARSE, STRING, STRINGS, TENSOR,
                                              Attribute, NodeContext, Step, adapter, define, int_values)

define("Pad", [
    (2, {"mode": Attribute(STRING, "constant"), "pads": Attribute(INTS, required=True),
         "value": Attribute(FLOAT, 0.0)}),
    (11, {"pads": REMOVED, "value": REMOVED}),               # pads, constant_value (and axes from 18) are inputs
])
define("Transpose", [(1, {"perm": Attribute(INTS)})])
define("Reshape", [(5, {}), (14, {"allowzero": Attribute(INT, 0)})])
define("Concat", [(4, {"axis": Attribute(INT, required=True)})])
define("Split", [
    (2, {"axis": Attribute(INT, 0), "split": Attribute(INTS)}, None, 2 ** 31),
    (13, {"split": REMOVED}),                                 # split sizes become an input
    (18, {"num_outputs": Attribute(INT)}),
])
define("Slice", [(1, {"starts": Attribute(INTS, required=True), "ends": Attribute(INTS, required=True),
                      "axes": Attribute(INTS)}),
                 (10, {"starts": REMOVED, "ends": REMOVED, "axes": REMOVED})])
define("Squeeze", [(1, {"axes": Attribute(INTS)}), (13, {"axes": REMOVED})])
define("Unsqueeze", [(1, {"axes": Attribute(INTS, required=True)}), (13, {"axes": REMOVED})])
define("Gather", [(1, {"axis": Attribute(INT, 0)})])
define("Shape", [(1, {}), (15, {"start": Attribute(INT, 0), "end": Attribute(INT)})])
define("Constant", [
    (1, {"value": Attribute(TENSOR, required=True)}),
    (11, {"value": Attribute(TENSOR), "sparse_value": Attribute(SPARSE)}),  # exactly one value attribute
    (12, {"value_float": Attribute(FLOAT), "value_floats": Attribute(FLOATS), "value_int": Attribute(INT),
          "value_ints": Attribute(INTS), "value_string": Attribute(STRING), "value_strings": Attribute(STRINGS)}),
])
define("ConstantOfShape", [(9, {"value": Attribute(TENSOR)})])
define("Expand", [(8, {})])
# Flatten 9, 13 and 21 only widen the element types; 11 allows a negative axis (the adapter asks the row).
define("Flatten", [(1, {"axis": Attribute(INT, 1)}), (11, {})])
define("GatherND", [(11, {}), (12, {"batch_dims": Attribute(INT, 0)})])  # 13 adds bfloat16 only
define("Tile", [(6, {})])  # Tile-1 took (input, tiles, axis): legacy, unsupported
define("DepthToSpace", [(1, {"blocksize": Attribute(INT, required=True)}), (11, {"mode": Attribute(STRING, "DCR")})])
define("SpaceToDepth", [(1, {"blocksize": Attribute(INT, required=True)}), (28, {"mode": Attribute(STRING, "DCR")})])
DEPTH_MODES = ("DCR", "CRD")


@adapter("Pad")
def plan_pad(ctx: NodeContext) -> Step:
    mode = ctx.attrs.get("mode", "constant")
    if mode not in ("constant", "reflect", "edge", "wrap"):
        raise UsageError(f"attribute 'mode' = {mode!r}: must be constant, reflect, edge or wrap")
    attribute_pads = ctx.attrs.get("pads")
    if attribute_pads is None and (len(ctx.node.input) < 2 or not ctx.node.input[1]):
        raise UsageError(f"input 'pads' is missing: {ctx.version.label} requires it")
    value_attribute = ctx.attrs.get("value", 0.0)

    def run(x, pads=None, constant_value=None, axes=None):
        pad_list = list(attribute_pads) if attribute_pads is not None else int_values(pads)
        axis_list = list(range(x.ndim)) if axes is None else [a % x.ndim for a in int_values(axes)]
        if len(pad_list) != 2 * len(axis_list):
            raise UsageError(f"pads has {len(pad_list)} values for {len(axis_list)} axes")
        begins, ends = [0] * x.ndim, [0] * x.ndim
        for i, axis in enumerate(axis_list):
            begins[axis], ends[axis] = pad_list[i], pad_list[i + len(axis_list)]
        value = value_attribute if constant_value is None or constant_value.size == 0 else constant_value.reshape(())
        return (kernels.pad(x, begins, ends, mode, value),)
    return run


@adapter("Transpose")
def plan_transpose(ctx: NodeContext) -> Step:
    perm = ctx.attrs.get("perm")
    return lambda x: (np.transpose(x, perm if perm is not None else None),)


@adapter("Reshape")
def plan_reshape(ctx: NodeContext) -> Step:
    allowzero = bool(ctx.attrs.get("allowzero", 0))
    return lambda x, shape: (kernels.reshape(x, int_values(shape), allowzero),)


@adapter("Concat")
def plan_concat(ctx: NodeContext) -> Step:
    axis = ctx.attrs["axis"]
    return lambda *xs: (kernels.concatenate(xs, checked_axis(axis, xs[0].ndim)),)


@adapter("Split")
def plan_split(ctx: NodeContext) -> Step:
    axis = ctx.attrs.get("axis", 0)
    attribute_split = ctx.attrs.get("split")
    num_outputs = ctx.attrs.get("num_outputs")
    parts = ctx.output_count
    problem = num_outputs_problem(num_outputs, parts)
    if problem:
        raise UsageError(problem)

    def run(x, split=None):
        length = x.shape[checked_axis(axis, x.ndim)]
        if attribute_split is not None or split is not None:
            sizes = list(attribute_split) if attribute_split is not None else int_values(split)
        elif num_outputs is not None:
            sizes = kernels.even_split_sizes(length, num_outputs)
        else:
            if length % parts:
                raise UsageError(f"axis {axis} of length {length} does not split evenly into {parts} outputs")
            sizes = [length // parts] * parts
        if any(size < 0 for size in sizes):
            raise UsageError(f"split sizes {sizes[:8]} include a negative size")
        if sum(sizes) != length:
            raise UsageError(f"split sizes {sizes} do not add up to the axis length {length}")
        return tuple(kernels.split(x, axis, sizes))
    return run


def num_outputs_problem(num_outputs: int | None, parts: int) -> str | None:
    """Split-18's num_outputs must be the node's output count (the one reading of runtime and converter)."""
    if num_outputs is not None and num_outputs != parts:
        return f"attribute 'num_outputs' = {num_outputs}: must equal the node's output count ({parts})"
    return None


@adapter("Slice")
def plan_slice(ctx: NodeContext) -> Step:
    if "starts" in ctx.version.attributes:
        starts, ends, axes = ctx.attrs["starts"], ctx.attrs["ends"], ctx.attrs.get("axes")
        return lambda x: (kernels.slice_axes(x, starts, ends, axes),)

    def run(x, starts, ends, axes=None, steps=None):
        return (kernels.slice_axes(x, int_values(starts), int_values(ends),
                                   None if axes is None else int_values(axes),
                                   None if steps is None else int_values(steps)),)
    return run


@adapter("Squeeze")
def plan_squeeze(ctx: NodeContext) -> Step:
    attribute_axes = ctx.attrs.get("axes")
    what = "attribute 'axes'" if "axes" in ctx.version.attributes else "input 'axes'"

    def run(x, axes=None):
        chosen = attribute_axes if attribute_axes is not None else (None if axes is None else int_values(axes))
        if chosen is None:
            return (np.squeeze(x),)
        return (np.squeeze(x, axis=tuple(checked_axes(chosen, x.ndim, what))),)
    return run


@adapter("Unsqueeze")
def plan_unsqueeze(ctx: NodeContext) -> Step:
    attribute_axes = ctx.attrs.get("axes")
    what = "attribute 'axes'" if "axes" in ctx.version.attributes else "input 'axes'"

    def run(x, axes=None):
        chosen = list(attribute_axes) if attribute_axes is not None else int_values(axes)
        rank = x.ndim + len(chosen)
        return (np.expand_dims(x, tuple(checked_axes(chosen, rank, what))),)
    return run


@adapter("Gather")
def plan_gather(ctx: NodeContext) -> Step:
    axis = ctx.attrs.get("axis", 0)

    return lambda x, indices: (kernels.gather(x, indices, checked_axis(axis, x.ndim)),)


@adapter("Shape")
def plan_shape(ctx: NodeContext) -> Step:
    start, end = ctx.attrs.get("start", 0), ctx.attrs.get("end")
    return lambda x: (np.array(x.shape[start:end], dtype=np.int64),)


@adapter("Constant")
def plan_constant(ctx: NodeContext) -> Step:
    value = constant_value(ctx.attrs)
    return lambda: (value,)


def constant_value(attrs: Mapping[str, Any]) -> np.ndarray:
    """The tensor of a Constant node (exactly one value attribute must be given)."""
    given = [name for name in attrs if name.startswith("value") or name == "sparse_value"]
    if len(given) != 1:
        raise UsageError(f"a Constant needs exactly one value attribute, got {given or 'none'}")
    name = given[0]
    value = attrs[name]
    if name == "sparse_value":
        raise UsageError("sparse_value Constants are not supported")
    if name == "value":
        return value
    dtype = {"value_float": np.float32, "value_floats": np.float32, "value_int": np.int64,
             "value_ints": np.int64, "value_string": object, "value_strings": object}[name]
    return np.array(value, dtype=dtype)


@adapter("ConstantOfShape")
def plan_constant_of_shape(ctx: NodeContext) -> Step:
    value = ctx.attrs.get("value")
    fill = np.zeros(1, np.float32) if value is None else value.reshape(-1)
    return lambda shape: (kernels.full(int_values(shape), fill[:1].reshape(())),)


@adapter("Expand")
def plan_expand(ctx: NodeContext) -> Step:
    def run(x, shape):
        target = np.broadcast_shapes(x.shape, tuple(int_values(shape)))
        return (kernels.broadcast(x, target),)
    return run


@adapter("Flatten")
def plan_flatten(ctx: NodeContext) -> Step:
    """To 2-D: [prod(shape[:axis]), prod(shape[axis:])]; axis in [0, rank], from opset 11 also [-rank, -1]."""
    axis = ctx.attrs.get("axis", 1)
    lowest = -1 if ctx.version.since >= 11 else 0

    def run(x):
        if not (lowest * x.ndim <= axis <= x.ndim):
            raise InvalidModelError(axis_problem("attribute 'axis'", axis, x.ndim, lowest * x.ndim, x.ndim))
        position = axis + x.ndim if axis < 0 else axis
        return (x.reshape(math.prod(x.shape[:position]), math.prod(x.shape[position:])),)
    return run


@adapter("GatherND")
def plan_gather_nd(ctx: NodeContext) -> Step:
    batch_dims = ctx.attrs.get("batch_dims", 0)

    def run(data, indices):
        if indices.dtype != np.int64:
            raise UsageError(f"the indices are {indices.dtype}, GatherND takes int64")
        if not 0 <= batch_dims < min(data.ndim, indices.ndim):
            raise UsageError(f"attribute 'batch_dims' = {batch_dims} must be in 0..{min(data.ndim, indices.ndim) - 1}")
        depth = indices.shape[-1]
        if not 1 <= depth <= data.ndim - batch_dims:
            raise UsageError(f"the indices' last dim {depth} must be in 1..{data.ndim - batch_dims}")
        return (rearrange_kernels.gather_nd(data, indices, batch_dims),)
    return run


@adapter("Tile")
def plan_tile(ctx: NodeContext) -> Step:
    def run(x, repeats):
        times = int_values(repeats)
        if len(times) != x.ndim or any(t < 0 for t in times):
            raise UsageError(f"repeats {times} must hold one non-negative value per input axis ({x.ndim})")
        return (kernels.tile(x, times),)
    return run


@adapter("DepthToSpace", "SpaceToDepth")
def plan_depth_space(ctx: NodeContext) -> Step:
    block, mode, op = ctx.attrs["blocksize"], ctx.attrs.get("mode", "DCR"), ctx.version.op_type
    if mode not in DEPTH_MODES:
        raise UsageError(f"attribute 'mode' = {mode!r}: must be DCR or CRD")
    if block < 1:
        raise UsageError(f"attribute 'blocksize' = {block}: must be >= 1")

    def run(x):
        if x.ndim != 4:
            raise UsageError(f"input of rank {x.ndim}: {ctx.version.label} takes N x C x H x W")
        if op == "DepthToSpace":
            if x.shape[1] % (block * block):
                raise UsageError(f"{x.shape[1]} channels are not a multiple of blocksize^2 = {block * block}")
            return (rearrange_kernels.depth_to_space(x, block, mode == "DCR"),)
        if x.shape[2] % block or x.shape[3] % block:
            raise UsageError(f"H and W ({x.shape[2]}, {x.shape[3]}) must be multiples of blocksize {block}")
        return (rearrange_kernels.space_to_depth(x, block, mode == "DCR"),)
    return run
