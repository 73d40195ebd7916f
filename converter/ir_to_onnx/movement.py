"""Data-movement and shape IR layers -> ONNX: Reshape, Concat, Split, Transpose, Squeeze/Unsqueeze, Pad,
ShapeOf, Gather, Slice, StridedSlice, Broadcast. Where ONNX moved an attribute to an input (Pad-11,
Split-13, Squeeze-13, Reduce-18, ...) the form is chosen by asking the runtime's op table."""

from __future__ import annotations

from typing import Callable

import numpy as np
from onnx import TensorProto

from poolir.converter.element_types import onnx_element_type
from poolir.converter.ir_to_onnx.context import Context
from poolir.converter.ir_to_onnx.opsets import check_writes, first_opset_where, has_attribute
from poolir.ir.element_types import dtype_of
from poolir.ir.errors import ConversionError
from poolir.ir.ops.movement import broadcast_mode, unsqueeze_axes
from poolir.ir.shapes import TensorInfo
from poolir.ir.model import Layer
from poolir.runtime.kernels.movement import padding_sources
from poolir.runtime.onnx_ops import first_opset, first_opset_with

_INT64_MAX, _INT64_MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min


def _positive_axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def _as_int64(context: Context, tensor: str, info: TensorInfo, base: str) -> str:
    if info.element_type == "i64":
        return tensor
    return context.node("Cast", [tensor], f"{base}/i64", to=TensorProto.INT64)[0]


def pad_node(context: Context, source: str, pads: list[int], mode: str, value: np.ndarray | None, base: str,
             output: str | None = None) -> str:
    """An ONNX Pad of `source` by `pads` (all begins, then all ends) in the requested opset's form: pads and
    value as attributes (Pad-2) or as inputs (Pad-11 on). Returns the padded tensor's name."""
    output = output or context.fresh(f"{base}/padded")
    if has_attribute("Pad", context.opset, "pads"):
        extra = {"value": float(value)} if value is not None else {}
        context.node_into("Pad", [source], [output], base, mode=mode, pads=pads, **extra)
    else:
        inputs = [source, context.int64s(pads, f"{base}/pads")]
        if value is not None:
            inputs.append(context.initializer(np.asarray(value).reshape(()), f"{base}/value"))
        context.node_into("Pad", inputs, [output], base, mode=mode)
    return output


def reshape(context: Context, layer: Layer) -> None:
    target = context.constant(layer, 1)
    output = context.name_output(layer, 0)
    shape = context.int64s(np.ravel(target), f"{layer.name}/shape") if target is not None else \
        _as_int64(context, context.input(layer, 1), context.input_info(layer, 1), layer.name)
    extra = {}
    if not layer.attrs["special_zero"] and (target is None or 0 in np.ravel(target)):
        # OpenVINO special_zero=false takes a 0 literally; ONNX needs allowzero=1 for that.
        since = first_opset_with("Reshape", "allowzero")
        context.check_opset(since, "Reshape with special_zero=false and a 0 (or unknown) target dim needs "
                                   f"allowzero, from opset {since}")
        extra["allowzero"] = 1
    context.node_into("Reshape", [context.input(layer, 0), shape], [output], layer.name, **extra)


def concat(context: Context, layer: Layer) -> None:
    rank = len(context.output_info(layer, 0).shape)
    inputs = [context.input(layer, i) for i in range(len(layer.inputs))]
    context.node_into("Concat", inputs, [context.name_output(layer, 0)], layer.name,
                      axis=_positive_axis(layer.attrs["axis"], rank))


def _computed_split_lengths(context: Context, layer: Layer, axis: int) -> str:
    """VariadicSplit lengths known only at run time, as the Split input (opset 13+): an entry -1 becomes
    what the others leave of the axis, dim - (sum(lengths) + 1), as OpenVINO resolves it."""
    since = first_opset_where("Split", lambda row: "split" not in row.attributes) or first_opset("Split")
    context.check_opset(max(since, 13), "VariadicSplit with split_lengths computed at run time needs Split with a "
                        f"split input, from opset {max(since, 13)}")
    base = f"{layer.name}/split_lengths"
    lengths = _as_int64(context, context.input(layer, 2), context.input_info(layer, 2), base)
    shape = context.node("Shape", [context.input(layer, 0)], f"{base}/shape")[0]
    dim = context.node("Gather", [shape, context.int64s([axis], f"{base}/axis")], f"{base}/dim")[0]
    total = context.node("ReduceSum", [lengths], f"{base}/sum", keepdims=1)[0]
    rest = context.node("Sub", [dim, context.node("Add", [total, context.int64s([1], f"{base}/one")],
                                                  f"{base}/sum_plus_one")[0]], f"{base}/rest")[0]
    is_rest = context.node("Equal", [lengths, context.int64s([-1], f"{base}/minus_one")], f"{base}/is_rest")[0]
    return context.node("Where", [is_rest, rest, lengths], base)[0]


def split(context: Context, layer: Layer) -> None:
    """Split and VariadicSplit: ONNX Split with the lengths OpenVINO's shape inference found."""
    rank = len(context.input_info(layer, 0).shape)
    (axis,) = context.constant_ints(layer, 1, "split axis")
    axis = _positive_axis(axis, rank)
    outputs = [context.name_output(layer, i) for i in range(len(layer.outputs))]
    lengths = [context.output_info(layer, i).shape[axis].value for i in range(len(layer.outputs))]
    inputs = [context.input(layer, 0)]
    attrs: dict = {"axis": axis}
    if layer.type == "VariadicSplit":
        if any(length is None for length in lengths):
            inputs.append(_computed_split_lengths(context, layer, axis))
        elif has_attribute("Split", context.opset, "split"):
            attrs["split"] = lengths
        else:
            inputs.append(context.int64s(lengths, f"{layer.name}/split"))
    elif has_attribute("Split", context.opset, "num_outputs"):
        attrs["num_outputs"] = len(outputs)
    context.node_into("Split", inputs, outputs, layer.name, **attrs)


def transpose(context: Context, layer: Layer) -> None:
    order = context.constant_ints(layer, 1, "transpose order")
    attrs = {"perm": order} if order else {}
    context.node_into("Transpose", [context.input(layer, 0)], [context.name_output(layer, 0)], layer.name, **attrs)


def _squeezed_axes(context: Context, layer: Layer, axes: list[int]) -> list[int]:
    """The axes an IR Squeeze removes: every dim of 1 for an empty list (ir/ops/movement.py), and with
    allow_axis_skip (Squeeze-15) only the listed dims that are 1; ONNX Squeeze refuses to squeeze any other."""
    shape = context.input_info(layer, 0).shape
    if not axes:
        return [i for i, dim in enumerate(shape) if dim.is_static and dim.min == 1]
    if not layer.attrs.get("allow_axis_skip", False):
        return axes
    if any(not shape[a].is_static for a in axes):
        raise ConversionError(f"Squeeze-15 with allow_axis_skip over a dynamic dim (axes {axes}): whether it goes "
                              "depends on the run")
    return [a for a in axes if shape[a].min == 1]


def _squeeze_like(op_type: str) -> Callable[[Context, Layer], None]:
    def convert(context: Context, layer: Layer) -> None:
        inputs = [context.input(layer, 0)]
        attrs = {}
        if len(layer.inputs) > 1:
            axes = context.constant_ints(layer, 1, "axes")
            if op_type == "Unsqueeze":  # ONNX refuses repeated axes; OpenVINO reads them (unsqueeze_axes)
                axes = unsqueeze_axes(axes, len(context.input_info(layer, 0).shape))
            if op_type == "Squeeze":
                axes = _squeezed_axes(context, layer, axes)
                if not axes:  # nothing to squeeze; an empty ONNX axes list would squeeze every dim of 1
                    context.node_into("Identity", inputs, [context.name_output(layer, 0)], layer.name)
                    return
            if has_attribute(op_type, context.opset, "axes"):
                attrs["axes"] = axes
            else:
                inputs.append(context.int64s(axes, f"{layer.name}/axes"))
        context.node_into(op_type, inputs, [context.name_output(layer, 0)], layer.name, **attrs)
    return convert


def pad(context: Context, layer: Layer) -> None:
    """IR Pad -> ONNX Pad. OpenVINO's Pad-12 pads the whole input and crops after (negative pads), ONNX crops first;
    they part where a reflection reaches a cropped element, so a crop is a Slice after the Pad of the positive
    amounts. symmetric, which ONNX lacks, is a Gather per padded axis of the positions np.pad copies."""
    mode = layer.attrs["pad_mode"]
    value = None
    if mode == "constant":
        value = context.constant(layer, 3) if len(layer.inputs) > 3 else \
            np.zeros((), dtype_of(context.input_info(layer, 0).element_type))
        if value is None:
            raise ConversionError("the pad value is not constant")
    if context.constant(layer, 1) is None or context.constant(layer, 2) is None:
        _computed_pad(context, layer, mode, value)
        return
    begin = context.constant_ints(layer, 1, "pads_begin")
    end = context.constant_ints(layer, 2, "pads_end")
    output = context.name_output(layer, 0)
    crops = min(begin + end) < 0
    grown = [max(0, p) for p in begin + end]
    padded = context.input(layer, 0)
    if any(grown) or not crops:
        target = None if crops else output
        if mode == "symmetric":
            padded = _symmetric_pad(context, layer, padded, grown, target)
        else:
            padded = pad_node(context, padded, grown, mode, value, layer.name, target)
    if crops:
        axes = [axis for axis, (b, e) in enumerate(zip(begin, end)) if b < 0 or e < 0]
        starts = [max(0, -begin[axis]) for axis in axes]
        stops = [end[axis] if end[axis] < 0 else _INT64_MAX for axis in axes]
        _constant_slice(context, "Pad with negative pads (a crop)", f"{layer.name}/crop", padded, output, starts,
                        stops, axes)


def _computed_pad(context: Context, layer: Layer, mode: str, value: np.ndarray | None) -> None:
    """Pads known only at run time (poolir's ONNX -> IR writes them for an ONNX Pad with computed pads), in
    OpenVINO's order: an ONNX Pad by the positive amounts, Where(pads < 0, 0, pads), then a Slice of every axis
    from Where(begin < 0, -begin, 0) to Where(end < 0, end, INT64_MAX) for the negative ones."""
    if mode == "symmetric":
        raise ConversionError("a symmetric Pad by pads computed at run time has no ONNX form (ONNX Pad has no "
                              "symmetric mode, and its Gather rewrite needs the pads)")
    since = first_opset_where("Pad", lambda row: not {"pads", "paddings"} & set(row.attributes))
    context.check_opset(since, f"Pad by pads computed at run time needs ONNX Pad's pads input, from opset {since}")
    slice_since = _slice_inputs_since()
    context.check_opset(slice_since, "Pad by pads computed at run time (a crop where they are negative) needs ONNX "
                        f"Slice-{slice_since}")
    base, rank = layer.name, len(context.input_info(layer, 0).shape)
    begin, end = (_as_int64(context, context.input(layer, i), context.input_info(layer, i), f"{base}/{what}")
                  for i, what in ((1, "begin"), (2, "end")))
    zero, limit = context.int64s(0, f"{base}/zero"), context.int64s(_INT64_MAX, f"{base}/to_the_end")

    def where_negative(tensor: str, then: str, otherwise: str, what: str) -> str:
        (negative,) = context.node("Less", [tensor, zero], f"{base}/{what}_negative")
        return context.node("Where", [negative, then, otherwise], f"{base}/{what}")[0]

    (pads,) = context.node("Concat", [begin, end], f"{base}/pads", axis=0)
    grown = where_negative(pads, zero, pads, "grown")
    inputs = [context.input(layer, 0), grown]
    if value is not None:
        inputs.append(context.initializer(np.asarray(value).reshape(()), f"{base}/value"))
    (padded,) = context.node("Pad", inputs, f"{base}/padded", mode=mode)
    (cut,) = context.node("Neg", [begin], f"{base}/cut")
    starts = where_negative(begin, cut, zero, "starts")
    ends = where_negative(end, end, limit, "ends")
    context.node_into("Slice", [padded, starts, ends, context.int64s(list(range(rank)), f"{base}/axes")],
                      [context.name_output(layer, 0)], base)


def _symmetric_pad(context: Context, layer: Layer, source: str, pads: list[int], output: str | None) -> str:
    shape = context.input_info(layer, 0).shape
    rank = len(shape)
    padded = [axis for axis in range(rank) if pads[axis] or pads[axis + rank]]
    if not padded and output:
        context.node_into("Identity", [source], [output], layer.name)
        return output
    for number, axis in enumerate(padded):
        if not shape[axis].is_static:
            raise ConversionError(f"pad_mode symmetric on axis {axis} of dynamic length (ONNX Pad has no symmetric "
                                  "mode; it is converted as a Gather of known positions)")
        indices = padding_sources(shape[axis].min, pads[axis], pads[axis + rank], "symmetric")
        base = f"{layer.name}/axis{axis}"
        target = output if number == len(padded) - 1 and output else context.fresh(base)
        context.node_into("Gather", [source, context.int64s(indices, f"{base}/positions")], [target], base,
                          axis=axis)
        source = target
    return source


def shape_of(context: Context, layer: Layer) -> None:
    output = context.name_output(layer, 0)
    output_type = layer.attrs.get("output_type", "i64")
    shape = output if output_type == "i64" else context.fresh(f"{layer.name}/i64")
    context.node_into("Shape", [context.input(layer, 0)], [shape], layer.name)
    if output_type != "i64":
        context.node_into("Cast", [shape], [output], layer.name, to=onnx_element_type(output_type))


def gather(context: Context, layer: Layer) -> None:
    rank = len(context.input_info(layer, 0).shape)
    (axis,) = context.constant_ints(layer, 2, "gather axis")
    if layer.attrs.get("batch_dims", 0) != 0:
        raise ConversionError(f"batch_dims={layer.attrs['batch_dims']}: ONNX Gather has no batch dims")
    if layer.opset < 8:
        # Gather-1 and Gather-7 leave negative indices undefined; ONNX counts them from the end.
        indices = context.constant(layer, 1)
        if indices is None or np.any(indices < 0):
            raise ConversionError(f"{layer.type}-{layer.opset} indices must be constant and non-negative "
                                  "(negative ones are undefined there)")
    axis = _positive_axis(axis, rank)
    indices, length = context.constant(layer, 1), context.input_info(layer, 0).shape[axis].value
    if indices is not None and length is not None and np.any((indices < -length) | (indices >= length)):
        _gather_zeroing_outside(context, layer, axis, np.asarray(indices), length)
        return
    # Indices known only at run time: one outside the axis makes onnxruntime stop ("out of data bounds") where
    # OpenVINO gives zeros; the ONNX spec calls it an error.
    context.node_into("Gather", [context.input(layer, 0), context.input(layer, 1)], [context.name_output(layer, 0)],
                      layer.name, axis=axis)


def _gather_zeroing_outside(context: Context, layer: Layer, axis: int, indices: np.ndarray, length: int) -> None:
    """OpenVINO's Gather gives zeros for constant indices outside the axis ([1, 7] of 5 rows: row 1, then zeros),
    where ONNX Gather fails: Gather of the indices with those set to 0, then Where(inside, gathered, 0)."""
    element_type = context.input_info(layer, 0).element_type
    check_writes(context, "Where", element_type, "Gather with constant indices outside the axis (zeros there)")
    base, rank = layer.name, len(context.input_info(layer, 0).shape)
    inside = (indices >= -length) & (indices < length)
    safe = context.initializer(np.where(inside, indices, 0).astype(indices.dtype), f"{base}/inside_indices")
    (gathered,) = context.node("Gather", [context.input(layer, 0), safe], f"{base}/gathered", axis=axis)
    mask = inside.reshape((1,) * axis + inside.shape + (1,) * (rank - axis - 1))
    zero = np.zeros((), dtype_of(element_type))
    context.node_into("Where", [context.initializer(mask, f"{base}/inside"), gathered,
                                context.initializer(zero, f"{base}/zero")], [context.name_output(layer, 0)], base)


def _slice_inputs_since() -> int | None:
    """ONNX Slice takes starts, ends, axes and steps as inputs from the version that dropped the attributes."""
    return first_opset_where("Slice", lambda row: "starts" not in row.attributes)


def _constant_slice(context: Context, what: str, base: str, data: str, output: str, starts: list[int],
                    ends: list[int], axes: list[int], steps: list[int] | None = None) -> None:
    """ONNX Slice of constant bounds; before Slice-10, Slice-1's attributes hold them when every step is 1 (the
    same clamping: past the end is the end, negative counts from it)."""
    steps = steps or [1] * len(starts)
    since = _slice_inputs_since()
    if since is not None and context.opset < since and all(step == 1 for step in steps):
        context.node_into("Slice", [data], [output], base, starts=starts, ends=ends, axes=axes)
        return
    context.check_opset(since, f"{what} with a step other than 1 needs ONNX Slice-{since}")
    context.node_into("Slice", [data, context.int64s(starts, f"{base}/starts"), context.int64s(ends, f"{base}/ends"),
                                context.int64s(axes, f"{base}/axes"), context.int64s(steps, f"{base}/steps")],
                      [output], base)


def slice_(context: Context, layer: Layer) -> None:
    # Slice-8: (data, start, stop, step[, axes]) -> ONNX (data, starts, ends, axes, steps), same clamping.
    since = _slice_inputs_since()
    if context.opset < since:
        values = [context.constant(layer, i) for i in range(1, len(layer.inputs))]
        if any(value is None for value in values):
            context.check_opset(since, f"Slice with bounds known only at run time needs ONNX Slice-{since}")
        start, stop, step = ([int(v) for v in np.ravel(value)] for value in values[:3])
        rank = len(context.input_info(layer, 0).shape)
        axes = [int(v) % rank for v in np.ravel(values[3])] if len(values) > 3 else list(range(len(start)))
        _constant_slice(context, "Slice", layer.name, context.input(layer, 0), context.name_output(layer, 0),
                        start, stop, axes, step)
        return
    inputs = [_as_int64(context, context.input(layer, i), context.input_info(layer, i), f"{layer.name}/{i}")
              for i in range(1, len(layer.inputs))]
    start, stop, step = inputs[:3]
    axes = inputs[3] if len(inputs) > 3 else ""  # both default to the first len(start) axes
    context.node_into("Slice", [context.input(layer, 0), start, stop, axes, step], [context.name_output(layer, 0)],
                      layer.name)


def strided_slice(context: Context, layer: Layer) -> None:
    begin = context.constant_ints(layer, 1, "StridedSlice begin")
    end = context.constant_ints(layer, 2, "StridedSlice end")
    stride = context.constant_ints(layer, 3, "StridedSlice strides") if len(layer.inputs) > 3 else [1] * len(begin)
    attrs = layer.attrs
    for name in ("new_axis_mask", "shrink_axis_mask", "ellipsis_mask"):
        if any(attrs.get(name, ())):
            raise ConversionError(f"StridedSlice {name} is not converted (only plain strided ranges map to Slice)")

    def bit(name: str, i: int) -> bool:
        mask = attrs.get(name, ())
        return i < len(mask) and mask[i] == 1

    # A mask bit of 1 ignores that begin/end: the whole extent in the stride's direction.
    starts = [(0 if s > 0 else _INT64_MAX) if bit("begin_mask", i) else b
              for i, (b, s) in enumerate(zip(begin, stride))]
    ends = [(_INT64_MAX if s > 0 else _INT64_MIN) if bit("end_mask", i) else e
            for i, (e, s) in enumerate(zip(end, stride))]
    _constant_slice(context, "StridedSlice", layer.name, context.input(layer, 0), context.name_output(layer, 0),
                    starts, ends, list(range(len(begin))), stride)


def broadcast(context: Context, layer: Layer) -> None:
    if broadcast_mode(layer) == "explicit":
        raise ConversionError("Broadcast mode explicit (with axes_mapping) is not converted")
    since = first_opset("Expand")
    context.check_opset(since, f"Broadcast needs ONNX Expand, from opset {since}")
    # numpy: the data broadcasts to the target shape; bidirectional: to both. ONNX Expand is the latter,
    # which equals the former whenever the former is valid.
    target = _as_int64(context, context.input(layer, 1), context.input_info(layer, 1), layer.name)
    context.node_into("Expand", [context.input(layer, 0), target], [context.name_output(layer, 0)], layer.name)


CONVERTERS = {
    "Reshape": reshape, "Concat": concat, "Split": split, "VariadicSplit": split, "Transpose": transpose,
    "Squeeze": _squeeze_like("Squeeze"), "Unsqueeze": _squeeze_like("Unsqueeze"), "Pad": pad,
    "ShapeOf": shape_of, "Gather": gather, "Slice": slice_, "StridedSlice": strided_slice, "Broadcast": broadcast,
}
