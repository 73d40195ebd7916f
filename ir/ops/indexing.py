"""Layers that select data by index: Slice, StridedSlice and Gather.

Their rules fold small known values (ir.shapes) as the movement family's do: a Gather of a ShapeOf, or a
StridedSlice of one, still gives static dims.
"""

from __future__ import annotations

import numpy as np

from poolir.ir.attributes import INT, INTS, Attr, OpVersion
from poolir.ir.element_types import is_integer
from poolir.ir.errors import InvalidModelError
from poolir.ir.model import Dim, Layer, Shape, shape_str, static_shape
from poolir.ir.registry import ShapeRules
from poolir.ir.shapes import (TensorInfo, dynamic_shape, info_of_elements, info_of_value, normalize_axis, scalar_int,
                              shape_vector_elements, static_length, static_values)

_STRIDED_SLICE_MASKS = ("begin_mask", "end_mask", "new_axis_mask", "shrink_axis_mask", "ellipsis_mask")

SCHEMA_ROWS: tuple[OpVersion, ...] = (
    OpVersion("Slice", 8, inputs=(4, 5)),
    OpVersion("StridedSlice", 1, (Attr("begin_mask", INTS), Attr("end_mask", INTS),
                                  Attr("new_axis_mask", INTS, ()), Attr("shrink_axis_mask", INTS, ()),
                                  Attr("ellipsis_mask", INTS, ())), inputs=(3, 4)),
    OpVersion("Gather", 1, inputs=(3, 3)),
    OpVersion("Gather", 7, (Attr("batch_dims", INT, 0),), inputs=(3, 3)),
    OpVersion("Gather", 8, (Attr("batch_dims", INT, 0),), inputs=(3, 3)),
)

SHAPE_RULES = ShapeRules()


def slice_bounds(start: int, end: int, step: int, length: int) -> slice:
    """The Python slice that selects, on an axis of `length`, what ONNX Slice and OpenVINO Slice-8 select.

    ONNX Slice-13's wording: a negative start or end counts from the end; then for a positive step both are
    clamped to [0, length], for a negative step start to [0, length - 1] and end to [-1, length - 1] (-1: down
    to index 0 included). Python's slicing clamps alike, except a negative step whose start lies before the
    axis (start < -length): Python selects nothing, the spec starts at index 0 (x[-9:-9:-1] of 4 elements is
    [x[0]]). OpenVINO 2026.4 and onnxruntime 1.31 select x[0] too (onnx.reference follows Python).
    """
    if step < 0 and start < -length:
        start = 0
    return slice(start, end, step)


def _indexed_shape(data: TensorInfo, index) -> Shape | None:
    """The shape numpy gives for `index` on a static shape, without allocating (a zero-stride view)."""
    values = static_values(data.shape)
    if values is None:
        return None
    try:
        return static_shape(np.broadcast_to(np.zeros((), np.int8), values)[index].shape)
    except IndexError as error:
        raise InvalidModelError(f"slice out of range of {shape_str(data.shape)}: {error}") from None


def _check_integer_operands(layer: Layer, inputs: list[TensorInfo], names: tuple[str, ...]) -> None:
    """The bounds, steps and axes of a slice are integer tensors (OpenVINO's Slice-8 and StridedSlice-1 specs)."""
    for name, info in zip(names, inputs[1:]):
        if not is_integer(info.element_type):
            raise InvalidModelError(f"the {layer.type} {name} have element type {info.element_type}, expected an "
                                    "integer type")


@SHAPE_RULES.register("Slice")
def infer_slice(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    _check_integer_operands(layer, inputs, ("starts", "stops", "steps", "axes"))
    data = inputs[0]
    rank = len(data.shape)
    start, stop, step = (inputs[i].value for i in (1, 2, 3))
    axes = inputs[4].value if len(inputs) == 5 else np.arange(0 if start is None else np.size(start))
    if any(v is None for v in (start, stop, step, axes)):
        # Bounds computed at run time (ONNX -> IR slices pooled windows to a count read from ShapeOf): the axes
        # not sliced keep their dims.
        sliced = set(range(rank)) if axes is None else {normalize_axis(a, rank) for a in np.ravel(axes).tolist()}
        dims = tuple(Dim.dynamic() if axis in sliced else dim for axis, dim in enumerate(data.shape))
        return [TensorInfo(data.element_type, dims)]
    index = [slice(None)] * rank
    seen = set()
    for begin, end, stride, axis in zip(*(np.ravel(v).tolist() for v in (start, stop, step, axes))):
        if stride == 0:
            raise InvalidModelError("a Slice step is 0")
        axis = normalize_axis(axis, rank)
        if axis in seen:  # OpenVINO: "Slice values in `axes` input must be unique" (ONNX Slice: the same)
            raise InvalidModelError(f"the Slice axes {np.ravel(axes).tolist()} name axis {axis} twice")
        seen.add(axis)
        index[axis] = slice_bounds(begin, end, stride, data.shape[axis].min if data.shape[axis].is_static else 0)
    shape = _indexed_shape(data, tuple(index))
    if shape is None:
        dims = list(data.shape)
        for begin, end, stride, axis in zip(*(np.ravel(v).tolist() for v in (start, stop, step, axes))):
            axis = normalize_axis(axis, rank)
            dim = dims[axis]
            dims[axis] = (Dim.static(len(range(*index[axis].indices(dim.min)))) if dim.is_static
                          else Dim.dynamic())
        shape = tuple(dims)
    value = data.value[tuple(index)] if data.value is not None else None
    return [info_of_value(data.element_type, value, shape)]


def _strided_slice_rank(layer: Layer, data: TensorInfo, begin: TensorInfo) -> int:
    """The output rank of a StridedSlice whose bounds are unknown: each entry keeps, adds (new axis), drops
    (shrink) or spans (ellipsis) axes, whatever the bounds; axes past the entries are kept."""
    entries = static_length(begin, "StridedSlice with computed bounds of unknown length: the output rank is unknown")
    masks = {name: list(layer.attrs[name]) for name in _STRIDED_SLICE_MASKS}
    index = []
    for i in range(entries):
        bit = {name: i < len(masks[name]) and masks[name][i] == 1 for name in masks}
        index.append(Ellipsis if bit["ellipsis_mask"] else None if bit["new_axis_mask"] else
                     0 if bit["shrink_axis_mask"] else slice(None))
    try:
        return np.broadcast_to(np.zeros((), np.int8), (1,) * len(data.shape))[tuple(index)].ndim
    except IndexError as error:
        raise InvalidModelError(f"StridedSlice entries do not fit rank {len(data.shape)}: {error}") from None


@SHAPE_RULES.register("StridedSlice")
def infer_strided_slice(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    _check_integer_operands(layer, inputs, ("begins", "ends", "strides"))
    data = inputs[0]
    begin, end = inputs[1].value, inputs[2].value
    stride = inputs[3].value if len(inputs) == 4 else (None if begin is None else np.ones_like(begin))
    if begin is None or end is None or stride is None:
        # Bounds computed at run time (OpenVINO accepts them): the masks alone give the output rank.
        return [TensorInfo(data.element_type, dynamic_shape(_strided_slice_rank(layer, data, inputs[1])))]
    begin, end, stride = (np.ravel(v).tolist() for v in (begin, end, stride))
    masks = {name: list(layer.attrs[name]) for name in _STRIDED_SLICE_MASKS}

    def bit(name: str, i: int) -> bool:
        return i < len(masks[name]) and masks[name][i] == 1

    index = []
    for i in range(len(begin)):
        if bit("ellipsis_mask", i):
            index.append(Ellipsis)
        elif bit("new_axis_mask", i):
            index.append(None)
        elif bit("shrink_axis_mask", i):
            # a masked begin is the axis' real beginning, 0, whatever the stride (OpenVINO 2026.4 CPU, and its spec:
            # "the corresponding dimension of the begin input is ignored"); TensorFlow would take begin[i]
            index.append(0 if bit("begin_mask", i) else int(begin[i]))
        else:
            if stride[i] == 0:
                raise InvalidModelError("a StridedSlice stride is 0")
            # A mask bit of 1 means: ignore this begin/end and take the whole extent.
            index.append(slice(None if bit("begin_mask", i) else begin[i],
                               None if bit("end_mask", i) else end[i], stride[i]))
    shape = _indexed_shape(data, tuple(index))
    if shape is None:
        # A dynamic input shape: the rank is known, the dims are left to run time.
        return [TensorInfo(data.element_type, dynamic_shape(_strided_slice_rank(layer, data, inputs[1])))]
    value = data.value[tuple(index)] if data.value is not None else None
    return [info_of_value(data.element_type, value, shape)]


def _picked_elements(data: TensorInfo, indices: TensorInfo) -> list[int | None] | None:
    """Gather of a partly known shape vector by constant indices in range: the elements picked."""
    elements = shape_vector_elements(data)
    if elements is None or indices.value is None or np.ndim(indices.value) > 1:
        return None
    picks = [int(i) for i in np.ravel(indices.value)]
    if not all(-len(elements) <= i < len(elements) for i in picks):
        return None  # out of range: the value path below says so when it can, the run otherwise
    return [elements[i] for i in picks]


@SHAPE_RULES.register("Gather")
def infer_gather(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    data, indices, axis_info = inputs
    rank = len(data.shape)
    if axis_info.value is None:
        # An axis computed at run time (OpenVINO accepts it): the rank is known, the dims are not.
        batch = layer.attrs.get("batch_dims", 0)
        batch = batch % len(indices.shape) if batch < 0 and indices.shape else batch
        return [TensorInfo(data.element_type, dynamic_shape(rank - 1 + len(indices.shape) - batch))]
    axis = normalize_axis(scalar_int(axis_info, "the Gather axis"), rank)
    if not is_integer(indices.element_type):
        raise InvalidModelError(f"Gather indices must be integers, got element type {indices.element_type}")
    batch_dims = layer.attrs.get("batch_dims", 0)
    batch_dims = batch_dims % len(indices.shape) if batch_dims < 0 else batch_dims
    if batch_dims > axis:
        raise InvalidModelError(f"batch_dims {batch_dims} is greater than axis {axis}")
    shape = data.shape[:axis] + indices.shape[batch_dims:] + data.shape[axis + 1:]
    value = None
    picked = _picked_elements(data, indices) if data.value is None and batch_dims == 0 and rank == 1 else None
    if picked is not None:
        return [info_of_elements(data.element_type, shape, picked)]
    if data.value is not None and indices.value is not None and batch_dims == 0:
        size = data.value.shape[axis]
        if np.any(indices.value >= size) or np.any(indices.value < -size):
            raise InvalidModelError(f"Gather indices {indices.value.tolist()} are out of range for size {size}")
        value = np.take(data.value, indices.value, axis=axis)
    return [info_of_value(data.element_type, value, shape)]


__all__ = ["SCHEMA_ROWS", "SHAPE_RULES"]
