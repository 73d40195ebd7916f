"""IR shape and data-movement layers: Reshape, Squeeze, Unsqueeze, Concat, Split, VariadicSplit, Transpose,
Slice, StridedSlice, Gather, ShapeOf, Broadcast, Pad, with OpenVINO's semantics."""

from __future__ import annotations

import numpy as np

from poolir.ir.errors import InvalidModelError, UnsupportedError
from poolir.ir.ops.movement import broadcast_mode, unsqueeze_axes
from poolir.runtime.ir_ops.registry import axis_index, builder, int_list
from poolir.runtime.kernels import movement as kernels


@builder("Reshape")
def _reshape(info):
    special_zero = info.layer.attrs.get("special_zero", False)

    def run(args):
        x, shape = args
        return (kernels.reshape(x, int_list(shape, "the target shape"), allowzero=not special_zero),)

    return run


@builder("Squeeze")
def _squeeze(info):
    allow_skip = info.layer.attrs.get("allow_axis_skip", False)

    def run(args):
        x = args[0]
        axes = sorted({axis_index(a, x.ndim) for a in int_list(args[1], "axes")}) if len(args) > 1 else []
        if not axes:  # no axes or an empty list: every dim of 1 (ir/ops/movement.py)
            return (np.reshape(x, [d for d in x.shape if d != 1]),)
        kept = [a for a in axes if x.shape[a] == 1]
        if len(kept) != len(axes) and not allow_skip:
            bad = [a for a in axes if x.shape[a] != 1]
            raise InvalidModelError(f"cannot squeeze axis {bad[0]} of size {x.shape[bad[0]]}")
        return (np.squeeze(x, axis=tuple(kept)),)

    return run


@builder("Unsqueeze")
def _unsqueeze(info):
    def run(args):
        x = args[0]
        return (np.expand_dims(x, tuple(unsqueeze_axes(int_list(args[1], "axes"), x.ndim))),)

    return run


@builder("Concat")
def _concat(info):
    axis = info.layer.attrs.get("axis", 0)
    return lambda args: (kernels.concatenate(args, axis_index(axis, args[0].ndim)),)


@builder("Split")
def _split(info):
    parts = info.layer.attrs.get("num_splits", 1)

    def run(args):
        x = args[0]
        axis = axis_index(int_list(args[1], "axis")[0], x.ndim)
        if parts < 1 or x.shape[axis] % parts:
            raise InvalidModelError(f"axis {axis} of size {x.shape[axis]} cannot be split into {parts} equal parts")
        return tuple(np.split(x, parts, axis=axis))

    return run


@builder("VariadicSplit")
def _variadic_split(info):
    def run(args):
        x = args[0]
        axis = axis_index(int_list(args[1], "axis")[0], x.ndim)
        lengths = int_list(args[2], "split_lengths")
        if lengths.count(-1) == 1:
            lengths[lengths.index(-1)] = x.shape[axis] - (sum(lengths) + 1)
        if sum(lengths) != x.shape[axis] or min(lengths, default=0) < 0:
            raise InvalidModelError(f"split_lengths {lengths} do not add up to axis {axis} of size {x.shape[axis]}")
        return tuple(kernels.split(x, axis, lengths))

    return run


@builder("Transpose")
def _transpose(info):
    def run(args):
        x = args[0]
        order = int_list(args[1], "the order")
        return (np.transpose(x, order if order else None),)  # an empty order reverses the axes

    return run


@builder("Slice")
def _slice(info):
    def run(args):
        x = args[0]
        starts, stops, steps = (int_list(a, n) for a, n in zip(args[1:4], ("start", "stop", "step")))
        axes = int_list(args[4], "axes") if len(args) > 4 else list(range(len(starts)))
        return (kernels.slice_axes(x, starts, stops, axes, steps),)

    return run


@builder("StridedSlice")
def _strided_slice(info):
    layer = info.layer
    masks = {name: layer.attrs.get(name, ()) for name in
             ("begin_mask", "end_mask", "new_axis_mask", "shrink_axis_mask", "ellipsis_mask")}

    def flag(name: str, i: int) -> bool:
        values = masks[name]
        return i < len(values) and values[i] == 1

    def run(args):
        x = args[0]
        begins = int_list(args[1], "begin")
        ends = int_list(args[2], "end")
        strides = int_list(args[3], "stride") if len(args) > 3 else [1] * len(begins)
        index: list = []
        for i, (begin, end, stride) in enumerate(zip(begins, ends, strides)):
            if flag("ellipsis_mask", i):
                index.append(Ellipsis)
            elif flag("new_axis_mask", i):
                index.append(np.newaxis)
            elif flag("shrink_axis_mask", i):
                index.append(0 if flag("begin_mask", i) else begin)  # as ir/ops/indexing.py
            else:
                if stride == 0:
                    raise InvalidModelError("stride 0 is not allowed")
                # begin_mask / end_mask 1 means "ignore the value: from the start / to the end".
                index.append(slice(None if flag("begin_mask", i) else begin,
                                   None if flag("end_mask", i) else end, stride))
        return (np.asarray(x[tuple(index)]),)

    return run


@builder("Gather")
def _gather(info):
    batch_dims = info.layer.attrs.get("batch_dims", 0)  # Gather-1 has none (ir/schema.py)
    if 2 not in info.constant_inputs and not info.folded:
        # OpenVINO 2026.4 reads it but refuses to compile it (EliminateGather: "Check 'const_op' failed").
        raise UnsupportedError("a Gather axis computed at run time: OpenVINO refuses to compile it, so the IR has no "
                               "OpenVINO meaning to reproduce")

    def run(args):
        data, indices, axis_array = args
        axis = axis_index(int_list(axis_array, "axis")[0], data.ndim)
        batch = batch_dims % indices.ndim if batch_dims < 0 else batch_dims
        if batch > axis:
            raise InvalidModelError(f"batch_dims {batch} is greater than axis {axis} (Gather needs batch_dims <= axis)")
        return (kernels.gather(data, indices, axis, batch, zero_out_of_range=True),)  # OpenVINO: zeros

    return run


@builder("ShapeOf")
def _shape_of(info):
    dtype = np.dtype(np.int32) if info.layer.attrs.get("output_type", "i64") == "i32" else np.dtype(np.int64)
    return lambda args: (np.array(args[0].shape, dtype=dtype),)


@builder("Broadcast")
def _broadcast(info):
    mode = broadcast_mode(info.layer)
    if mode not in ("numpy", "explicit", "bidirectional"):
        raise UnsupportedError(f"Broadcast mode {mode!r} is not supported (numpy, explicit, bidirectional)")

    def run(args):
        x = args[0]
        target = int_list(args[1], "target_shape")
        if mode == "bidirectional":
            target = list(np.broadcast_shapes(x.shape, tuple(target)))
        elif mode == "explicit":
            axes = int_list(args[2], "axes_mapping")
            shape = [1] * len(target)
            for source_axis, target_axis in enumerate(axes):
                shape[target_axis] = x.shape[source_axis]
            x = x.reshape(shape)
        return (kernels.broadcast(x, target),)

    return run


@builder("Pad")
def _pad(info):
    mode = info.layer.attrs.get("pad_mode", "constant")
    numpy_mode = {"constant": "constant", "edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}.get(mode)
    if numpy_mode is None:
        raise InvalidModelError(f"pad_mode {mode!r} is not one of constant, edge, reflect, symmetric")

    def run(args):
        x = args[0]
        begins, ends = int_list(args[1], "pads_begin"), int_list(args[2], "pads_end")
        if len(begins) != x.ndim or len(ends) != x.ndim:
            raise InvalidModelError(f"pads have {len(begins)} and {len(ends)} values for an input of rank {x.ndim}")
        value = args[3].reshape(()) if len(args) > 3 and mode == "constant" else 0
        return (kernels.pad(x, begins, ends, numpy_mode, value, crop_first=False),)

    return run
