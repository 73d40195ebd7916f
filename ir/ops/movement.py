"""Layers that move or reshape data without arithmetic: Reshape, Squeeze, Unsqueeze, Concat, Split, VariadicSplit,
Transpose, ShapeOf, Broadcast and Pad (the layers that select by index, Slice, StridedSlice and Gather: indexing.py).

Their rules fold small known values (ir.shapes) so that shape arithmetic, such as a Reshape target
computed from ShapeOf, Gather and Concat, still gives static dims.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from poolir.ir.attributes import BOOL, INT, STR, REQUIRED, Attr, OpVersion
from poolir.ir.element_types import INDEX_ELEMENT_TYPES, is_integer
from poolir.ir.errors import InvalidModelError, UnsupportedError
from poolir.ir.model import Dim, Layer, Shape, shape_str, static_shape
from poolir.ir.registry import ShapeRules
from poolir.ir.shapes import (TensorInfo, axes_of, broadcast_shapes, dynamic_shape, folded, info_of_elements,
                              info_of_value, MAX_FOLDED_ELEMENTS, normalize_axis, scalar_int, shape_vector_elements,
                              static_length, static_values)

PAD_MODES = ("constant", "edge", "reflect", "symmetric")

SCHEMA_ROWS: tuple[OpVersion, ...] = (
    OpVersion("Reshape", 1, (Attr("special_zero", BOOL),), inputs=(2, 2)),
    OpVersion("Squeeze", 1, inputs=(1, 2)),
    OpVersion("Squeeze", 15, (Attr("allow_axis_skip", BOOL, False),), inputs=(1, 2)),
    OpVersion("Unsqueeze", 1, inputs=(2, 2)),
    OpVersion("Concat", 1, (Attr("axis", INT),), inputs=(1, None)),
    OpVersion("Split", 1, (Attr("num_splits", INT),), inputs=(2, 2), outputs=(1, None)),
    OpVersion("VariadicSplit", 1, inputs=(3, 3), outputs=(1, None)),
    OpVersion("Transpose", 1, inputs=(2, 2)),
    OpVersion("ShapeOf", 1),
    OpVersion("ShapeOf", 3, (Attr("output_type", STR, "i64", INDEX_ELEMENT_TYPES),)),
    # "none" is explicit's other name (broadcast_mode): what OpenVINO writes for Broadcast-1.
    OpVersion("Broadcast", 1, (Attr("mode", STR, "numpy", ("numpy", "explicit", "none")),), inputs=(2, 3)),
    OpVersion("Broadcast", 3, (Attr("mode", STR, "numpy", ("numpy", "explicit", "none", "bidirectional")),),
              inputs=(2, 3)),
    # Pad-1 and Pad-12 share attributes; 12 allows negative pads (cropping).
    OpVersion("Pad", 1, (Attr("pad_mode", STR, REQUIRED, PAD_MODES),), inputs=(3, 4)),
    OpVersion("Pad", 12, (Attr("pad_mode", STR, REQUIRED, PAD_MODES),), inputs=(3, 4)),
)

SHAPE_RULES = ShapeRules()


def reshape_target_problem(requested: Sequence[int], rank: int, zero_copies: bool) -> str | None:
    """Why a Reshape target is invalid in both worlds, or None. ONNX Reshape and OpenVINO Reshape-1 agree: one
    value may be -1 (inferred), none below -1, and a 0 that copies the input dim (ONNX allowzero=0, IR
    special_zero=true) must name an existing dim. onnxruntime ("Invalid dimension value: -2") and OpenVINO
    ("Output pattern dim[0] has invalid bounds") refuse the others; numpy would read any negative value as -1."""
    for index, value in enumerate(requested):
        if value < -1:
            return f"target shape value {value} is below -1 (only -1, an inferred dim, may be negative)"
        if value == 0 and zero_copies and index >= rank:
            return f"the 0 at index {index} of the target shape copies input dim {index}, the input has rank {rank}"
    if list(requested).count(-1) > 1:
        return f"target shape {list(requested)} has more than one -1"
    return None


def _partly_known_target(target: TensorInfo, data: TensorInfo, special_zero: bool, rank: int) -> Shape:
    """The output dims of a Reshape whose target is partly known (ir.shapes.TensorInfo.elements): a positive element
    is that dim, a special zero copies the input's, and the rest (-1, unknown) are dynamic."""
    elements = target.elements if target.elements is not None and len(target.elements) == rank else (None,) * rank
    dims = []
    for index, element in enumerate(elements):
        if element is not None and element > 0:
            dims.append(Dim.static(element))
        elif element == 0 and special_zero and index < len(data.shape):
            dims.append(data.shape[index])
        else:
            dims.append(Dim.dynamic())
    return tuple(dims)


@SHAPE_RULES.register("Reshape")
def infer_reshape(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    data, target = inputs
    if len(target.shape) > 1:
        raise InvalidModelError(f"the target shape input must be 1-D, got {shape_str(target.shape)}")
    if target.value is None:
        rank = static_length(target, "the output rank is unknown (a dynamic-length target shape)")
        return [TensorInfo(data.element_type, _partly_known_target(target, data, layer.attrs["special_zero"], rank))]
    requested = [int(v) for v in np.ravel(target.value)]
    problem = reshape_target_problem(requested, len(data.shape), layer.attrs["special_zero"])
    if problem:
        raise InvalidModelError(problem)
    dims: list[Dim | None] = []
    for index, value in enumerate(requested):
        if value == 0 and layer.attrs["special_zero"]:
            dims.append(data.shape[index])
        elif value == -1:
            dims.append(None)
        else:
            dims.append(Dim.static(value))
    total = static_values(data.shape)
    if None in dims:
        # The -1 dim is (input elements) / (other output elements). Dims copied by special_zero
        # appear on both sides and cancel, so a copied dynamic batch still gives a static -1.
        copied = {i for i, v in enumerate(requested) if v == 0 and layer.attrs["special_zero"]}
        numerator = [d for i, d in enumerate(data.shape) if i not in copied]
        denominator = [d for i, d in enumerate(dims) if d is not None and i not in copied]
        if all(d.is_static for d in (*numerator, *denominator)):
            whole, rest = math.prod(d.min for d in numerator), math.prod(d.min for d in denominator)
            if rest == 0 or whole % rest:
                raise InvalidModelError(f"cannot reshape {shape_str(data.shape)} to {requested}")
            dims[dims.index(None)] = Dim.static(whole // rest)
        else:
            dims[dims.index(None)] = Dim.dynamic()
    shape = tuple(dims)
    out_values = static_values(shape)
    if total is not None and out_values is not None and math.prod(total) != math.prod(out_values):
        raise InvalidModelError(f"cannot reshape {shape_str(data.shape)} ({math.prod(total)} elements) "
                                f"to {shape_str(shape)} ({math.prod(out_values)} elements)")
    value = data.value.reshape(out_values) if data.value is not None and out_values is not None else None
    return [info_of_value(data.element_type, value, shape)]


@SHAPE_RULES.register("Squeeze")
def infer_squeeze(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    data = inputs[0]
    rank = len(data.shape)
    axes = axes_of(inputs[1], rank) if len(inputs) > 1 else []
    if axes is None:
        raise UnsupportedError("Squeeze axes must be constant (the output rank depends on them)")
    if not axes:
        # No axes, or an empty axes input: every dim of 1 goes (OpenVINO 2026.4, Squeeze-1 and -15 alike:
        # [1,5,1,4] with axes [] gives [5,4]), so the output rank depends on the dims.
        if not all(d.is_static for d in data.shape):
            raise UnsupportedError("Squeeze without axes on a dynamic shape has a dynamic rank")
        axes = [i for i, d in enumerate(data.shape) if d.min == 1]
    for axis in axes:
        dim = data.shape[axis]
        if dim.is_static and dim.min != 1 and not layer.attrs.get("allow_axis_skip", False):
            raise InvalidModelError(f"cannot squeeze axis {axis} of size {dim.min}")
    keep = [i for i in range(rank) if i not in axes or (data.shape[i].is_static and data.shape[i].min != 1)]
    shape = tuple(data.shape[i] for i in keep)
    value = data.value.reshape([data.value.shape[i] for i in keep]) if data.value is not None else None
    return [_same_elements(data, value, shape)]


def _same_elements(data: TensorInfo, value, shape: Shape) -> TensorInfo:
    """Squeeze and Unsqueeze keep a partly known shape vector's elements (a scalar dim made a 1-element vector)."""
    if value is None and data.elements is not None and len(shape) <= 1:
        return info_of_elements(data.element_type, shape, list(data.elements))
    return info_of_value(data.element_type, value, shape)


def unsqueeze_axes(raw: list[int], rank: int) -> list[int]:
    """The output positions an Unsqueeze of a rank-`rank` input inserts, sorted, as OpenVINO 2026.4 reads its axes
    (the spec is silent on repeats): repeated values count once, each axis is counted from the end against
    rank + the number of distinct values, and two that land on one position insert one dim ([1,1,2] with axes
    [3, -2] -> [1,1,2,1]; [2,3] with [0, 0] -> [1,2,3]). A position past the resulting rank is refused, as
    OpenVINO refuses [2,3] with [3, 3]."""
    distinct = list(dict.fromkeys(raw))
    axes = sorted({normalize_axis(a, rank + len(distinct)) for a in distinct})
    if axes and axes[-1] >= rank + len(axes):
        raise InvalidModelError(f"Unsqueeze axes {raw} insert {len(axes)} dim(s) into rank {rank}: position "
                                f"{axes[-1]} is past the output rank {rank + len(axes)}")
    return axes


@SHAPE_RULES.register("Unsqueeze")
def infer_unsqueeze(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    data, axes_info = inputs
    if axes_info.value is None:
        raise UnsupportedError("Unsqueeze axes must be constant (the output rank depends on them)")
    axes = unsqueeze_axes([int(a) for a in np.ravel(axes_info.value)], len(data.shape))
    rank = len(data.shape) + len(axes)
    dims = iter(data.shape)
    shape = tuple(Dim.static(1) if i in axes else next(dims) for i in range(rank))
    value = np.expand_dims(data.value, tuple(axes)) if data.value is not None else None
    return [_same_elements(data, value, shape)]


@SHAPE_RULES.register("Concat")
def infer_concat(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    first = inputs[0]
    rank = len(first.shape)
    if rank == 0:  # OpenVINO 2026.4: "Accessing out-of-range dimension" (ONNX Concat needs rank >= 1 too)
        raise InvalidModelError("Concat needs inputs of rank >= 1, got a scalar")
    axis = normalize_axis(layer.attrs["axis"], rank)
    dims = list(first.shape)
    for other in inputs[1:]:
        if len(other.shape) != rank or other.element_type != first.element_type:
            raise InvalidModelError(f"inputs {shape_str(first.shape)} {first.element_type} and "
                                    f"{shape_str(other.shape)} {other.element_type} cannot be concatenated")
        for i, (a, b) in enumerate(zip(dims, other.shape)):
            if i == axis:
                dims[i] = Dim.static(a.min + b.min) if a.is_static and b.is_static else Dim.dynamic()
            elif a.is_static and b.is_static and a.min != b.min:
                raise InvalidModelError(f"inputs {shape_str(first.shape)} and {shape_str(other.shape)} differ "
                                        f"on axis {i}")
            elif not a.is_static:
                dims[i] = b
    value = None
    if all(i.value is not None for i in inputs):
        value = np.concatenate([i.value for i in inputs], axis=axis)
    elif rank == 1 and all(shape_vector_elements(i) is not None for i in inputs):  # a shape vector, partly known
        return [info_of_elements(first.element_type, tuple(dims),
                                 [e for i in inputs for e in shape_vector_elements(i)])]
    return [info_of_value(first.element_type, value, tuple(dims))]


def _split_lengths(layer: Layer, inputs: list[TensorInfo]) -> tuple[int, list[int | None]]:
    data = inputs[0]
    axis_info = inputs[1]
    if axis_info.value is None:
        # An axis computed at run time (OpenVINO accepts it): every output dim is unknown; axis -1 says so.
        count = layer.attrs["num_splits"] if layer.type == "Split" else (
            inputs[2].shape[0].value if len(inputs[2].shape) == 1 else None)
        return -1, [None] * (count if count is not None else len(layer.outputs))
    axis = normalize_axis(scalar_int(axis_info, "the split axis"), len(data.shape))
    dim = data.shape[axis]
    if layer.type == "Split":
        parts = layer.attrs["num_splits"]
        if parts < 1:
            raise InvalidModelError(f"num_splits {parts} must be >= 1")
        if dim.is_static and dim.min % parts:
            raise InvalidModelError(f"axis {axis} of size {dim.min} does not split into {parts} equal parts")
        return axis, [dim.min // parts if dim.is_static else None] * parts
    if inputs[2].value is None:
        # Lengths computed at run time (PyTorch's frontend derives them from ShapeOf arithmetic, OpenVINO
        # accepts that): one output per output port, its extent along the axis unknown until run time.
        count = inputs[2].shape[0].value if len(inputs[2].shape) == 1 else None
        return axis, [None] * (count if count is not None else len(layer.outputs))
    lengths = [int(v) for v in np.ravel(inputs[2].value)]
    if lengths.count(-1) > 1 or any(v < -1 for v in lengths):
        raise InvalidModelError(f"split_lengths {lengths} may hold one -1 and no other negative value")
    if -1 in lengths:
        if dim.is_static:
            rest = dim.min - sum(v for v in lengths if v != -1)
            if rest < 0:
                raise InvalidModelError(f"split_lengths {lengths} exceed axis {axis} of size {dim.min}")
            lengths[lengths.index(-1)] = rest
        else:
            return axis, [None if v == -1 else v for v in lengths]
    if dim.is_static and sum(lengths) != dim.min:
        raise InvalidModelError(f"split_lengths {lengths} do not add up to axis {axis} of size {dim.min}")
    return axis, list(lengths)


@SHAPE_RULES.register("Split", "VariadicSplit")
def infer_split(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    data = inputs[0]
    axis, lengths = _split_lengths(layer, inputs)
    if axis < 0:
        return [TensorInfo(data.element_type, dynamic_shape(len(data.shape))) for _ in lengths]
    outputs = []
    offset = 0
    for length in lengths:
        shape = tuple(Dim.static(length) if i == axis and length is not None else
                      (Dim.dynamic() if i == axis else d) for i, d in enumerate(data.shape))
        value = None
        if data.value is not None and length is not None:
            value = np.take(data.value, range(offset, offset + length), axis=axis)
        offset += length or 0
        outputs.append(info_of_value(data.element_type, value, shape))
    return outputs


@SHAPE_RULES.register("Transpose")
def infer_transpose(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    data, order_info = inputs
    rank = len(data.shape)
    if order_info.value is None:
        return [TensorInfo(data.element_type, dynamic_shape(rank))]
    order = [int(v) for v in np.ravel(order_info.value)]
    if not order:
        order = list(range(rank))[::-1]
    if sorted(order) != list(range(rank)):
        # OpenVINO 2026.4 takes no negative axis here: [0, 2, -1, 1] fails its is_valid_axes_order check.
        raise InvalidModelError(f"order {order} is not a permutation of the {rank} axes 0..{rank - 1}")
    shape = tuple(data.shape[v] for v in order)
    value = np.transpose(data.value, order) if data.value is not None else None
    return [info_of_value(data.element_type, value, shape)]


@SHAPE_RULES.register("ShapeOf")
def infer_shape_of(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    (data,) = inputs
    output_type = layer.attrs.get("output_type", "i64")
    shape = (Dim.static(len(data.shape)),)
    return [info_of_elements(output_type, shape, [dim.value for dim in data.shape])]


def broadcast_mode(layer: Layer) -> str:
    """A Broadcast layer's mode, "none" read as "explicit": OpenVINO's AutoBroadcastType::EXPLICIT is an alias of
    NONE, so its serializer writes Broadcast-1's explicit mode as mode="none" (OpenVINO 2026.4; Broadcast-3 gets
    "explicit"), and its reader takes either name for either version."""
    mode = layer.attrs.get("mode", "numpy")
    return "explicit" if mode == "none" else mode


@SHAPE_RULES.register("Broadcast")
def infer_broadcast(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    """numpy: the output is the target shape and the input must broadcast to it; bidirectional: numpy
    broadcasting of both; explicit: the target shape (axes_mapping places the input's axes)."""
    data, target = inputs[0], inputs[1]
    mode = broadcast_mode(layer)
    if target.value is None:
        rank = static_length(target, "the Broadcast target shape has a dynamic length")
        if mode == "bidirectional":
            rank = max(rank, len(data.shape))
        return [TensorInfo(data.element_type, dynamic_shape(rank))]
    # Not a dynamic dim. OpenVINO 2026.4 infers ? there, then returns an empty axis whatever the input ([2,3] to
    # [-1,3] gives [0,3]), and refuses the layer when it folds a constant input: refused here.
    if np.any(np.ravel(target.value) < 0):
        raise InvalidModelError(f"the Broadcast target shape {np.ravel(target.value).tolist()} holds a negative value")
    requested = static_shape(np.ravel(target.value))
    if mode == "bidirectional":
        return [_broadcast_value(data, broadcast_shapes(data.shape, requested))]
    if mode == "numpy":
        if len(data.shape) > len(requested) or broadcast_shapes(data.shape, requested) != requested:
            raise InvalidModelError(f"{shape_str(data.shape)} does not broadcast to {shape_str(requested)}")
        return [_broadcast_value(data, requested)]
    if len(inputs) != 3:
        raise InvalidModelError("Broadcast mode explicit needs the axes_mapping input")
    return [TensorInfo(data.element_type, requested)]


def _broadcast_value(data: TensorInfo, shape) -> TensorInfo:
    """The broadcast value when the data's is known and the result small (OpenVINO's ONNX frontend writes a Slice
    step as Broadcast([1], ShapeOf(start)): its value keeps the Slice's length known)."""
    dims = static_values(shape)
    if data.value is None or dims is None or math.prod(dims) > MAX_FOLDED_ELEMENTS:
        return TensorInfo(data.element_type, shape)
    return folded(data.element_type, shape, np.broadcast_to(data.value, dims))


def _check_pad_mode_extent(mode: str, shape: tuple, begin: list[int], end: list[int]) -> None:
    """OpenVINO 2026.4's Pad shape inference (pad_shape_inference.hpp) on every static dim D: edge needs D >= 1 and
    reflect D >= 2 where a pad is positive; reflect needs both pads < D, symmetric both <= D (numpy would reflect
    again past the edge)."""
    for axis, (dim, b, e) in enumerate(zip(shape, begin, end)):
        least, most = {"edge": (1, None), "reflect": (2, dim.min - 1), "symmetric": (0, dim.min)}.get(mode, (0, None))
        if dim.is_static and ((b > 0 or e > 0) and dim.min < least or most is not None and max(b, e) > most):
            raise InvalidModelError(f"pad_mode {mode}: pads {b}, {e} do not fit axis {axis} of size {dim.min} "
                                    f"(OpenVINO needs size >= {least} to pad" + (f", pads <= {most})" if most is not
                                                                                  None else ")"))


@SHAPE_RULES.register("Pad")
def infer_pad(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    data, begin_info, end_info = inputs[:3]
    rank = len(data.shape)
    if len(inputs) == 4:
        # OpenVINO's serializer gives Pad a pad_value input in every mode; outside constant it is ignored, but it
        # is still one value of the data's element type (a scalar or any shape of one element, never empty).
        pad_value = inputs[3]
        if pad_value.element_type != data.element_type:
            raise InvalidModelError(f"pad_value has element type {pad_value.element_type}, data {data.element_type}")
        pad_value_dims = static_values(pad_value.shape)
        if pad_value_dims is None or math.prod(pad_value_dims) != 1:
            raise InvalidModelError(f"pad_value must be a scalar, got shape {shape_str(pad_value.shape)}")
    for info, what in ((begin_info, "pads_begin"), (end_info, "pads_end")):
        if not is_integer(info.element_type):
            raise InvalidModelError(f"{what} must be integers, got element type {info.element_type}")
    if begin_info.value is None or end_info.value is None:
        return [TensorInfo(data.element_type, dynamic_shape(rank))]
    begin, end = np.ravel(begin_info.value).tolist(), np.ravel(end_info.value).tolist()
    if len(begin) != rank or len(end) != rank:
        raise InvalidModelError(f"pads_begin {begin} / pads_end {end} must have {rank} values")
    if layer.opset < 12 and min(begin + end) < 0:
        raise InvalidModelError(f"negative pads {begin} / {end} need Pad-12 (version opset12)")
    _check_pad_mode_extent(layer.attrs["pad_mode"], data.shape, begin, end)
    dims = []
    for dim, b, e in zip(data.shape, begin, end):
        if dim.is_static:
            size = dim.min + b + e
            if size < 0:
                raise InvalidModelError(f"pads {b}, {e} crop a dim of size {dim.min} below zero")
            dims.append(Dim.static(size))
        else:
            dims.append(Dim.dynamic())
    return [TensorInfo(data.element_type, tuple(dims))]

