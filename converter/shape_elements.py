"""What each element of a small integer vector computed in the graph is, when not all of it is a constant.

PyTorch's exporters compute a Resize's sizes from the shape of its input when the model has a dynamic batch:
TorchScript writes Concat(Slice(Shape(x), 0, 2), Cast([h, w])), torch.export Concat(Shape(x, 0, 2), [h, w]). The
value is not a constant, but each element is known: a number, or "dim k of tensor t". The converter needs exactly
that to tell an axis the node keeps (its size is the input's own dim) from one it resizes.

OpenVINO's ONNX frontend keeps that computation in the IR it writes (ShapeOf, Slice-8, Concat, Convert), and the IR
-> ONNX converter needs the same answer. So `shape_elements` works on an IR graph either way: the one the ONNX -> IR
converter is building (ir.builder.GraphBuilder) or the one the IR -> ONNX converter reads (its Context). It follows
the layers back to Const and ShapeOf layers through those that only move or pick elements (Slice-8, Concat,
Gather-8, Convert between integer types, Squeeze, Unsqueeze, Reshape). Anything else, or a bound it cannot read,
gives None: the caller then refuses as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable, Protocol

import numpy as np

from poolir.ir.model import Layer
from poolir.ir.shapes import TensorInfo


class IRGraph(Protocol):
    """What the walk asks of a graph: an output's inferred type, shape and value, and the layer that computes it
    with the outputs feeding that layer's inputs (refs are whatever the graph uses to name an output)."""

    def info(self, ref: Any) -> TensorInfo: ...

    def producer(self, ref: Any) -> tuple[Layer, list[Any]]: ...

# Deep enough for every chain the exporters write (Shape -> Slice -> Concat -> Cast is four), small enough that a
# hostile graph cannot make the walk expensive.
_MAX_DEPTH = 16
_INTEGER_TYPES = {"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"}


@dataclass(frozen=True, slots=True)
class DimOf:
    """Dim `axis` of the tensor `source`, known only at run time."""

    source: Hashable
    axis: int


def shape_elements(graph: IRGraph, ref: Any, depth: int = 0) -> list[int | DimOf] | None:
    """The elements of the 0-D or 1-D integer tensor `ref`: ints, DimOf for a dynamic dim; None when unknown."""
    info = graph.info(ref)
    if info.element_type not in _INTEGER_TYPES or len(info.shape) > 1:
        return None
    if info.value is not None:
        return [int(v) for v in np.asarray(info.value).reshape(-1)]
    if depth >= _MAX_DEPTH:
        return None
    layer, inputs = graph.producer(ref)
    if layer.type == "Const" and layer.data is not None:
        return [int(v) for v in np.asarray(layer.data).reshape(-1)]
    if layer.type == "ShapeOf":
        dims = graph.info(inputs[0]).shape
        return [DimOf(inputs[0], axis) if dim.value is None else dim.value for axis, dim in enumerate(dims)]
    if layer.type == "Convert" and layer.attrs.get("destination_type") in _INTEGER_TYPES:
        return _elements_of(graph, inputs[0], depth)   # the walk only passes shape values, which fit every type
    if layer.type in ("Squeeze", "Unsqueeze", "Reshape"):
        return _elements_of(graph, inputs[0], depth)
    if layer.type == "Concat" and layer.attrs.get("axis") in (0, -1):
        parts = [_elements_of(graph, source, depth) for source in inputs]
        return None if any(part is None for part in parts) else [e for part in parts for e in part]
    if layer.type == "Slice":
        return _sliced(graph, inputs, depth)
    if layer.type == "Gather":
        return _gathered(graph, layer.attrs.get("batch_dims", 0), inputs, depth)
    return None


def _elements_of(graph: IRGraph, ref: Any, depth: int) -> list[int | DimOf] | None:
    return shape_elements(graph, ref, depth + 1)


def _constant_ints(graph: IRGraph, ref: Any) -> list[int] | None:
    value = graph.info(ref).value
    return None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]


def _sliced(graph: IRGraph, inputs: list, depth: int) -> list[int | DimOf] | None:
    """Slice-8 of a 1-D vector: data, start, stop, step[, axes] with constant bounds on axis 0."""
    data = _elements_of(graph, inputs[0], depth)
    bounds = [_constant_ints(graph, ref) for ref in inputs[1:]]
    if data is None or any(bound is None or len(bound) != 1 for bound in bounds) or len(bounds) < 3:
        return None
    if len(bounds) == 4 and bounds[3][0] not in (0, -1):
        return None
    start, stop, step = (bound[0] for bound in bounds[:3])
    if step == 0:
        return None
    return data[slice(*slice(start, stop, step).indices(len(data)))]


def _gathered(graph: IRGraph, batch_dims: int, inputs: list, depth: int):
    """Gather-8 along axis 0 of a 1-D vector by constant indices (negative ones count from the end)."""
    data = _elements_of(graph, inputs[0], depth)
    indices, axis = (_constant_ints(graph, ref) for ref in inputs[1:3])
    if data is None or indices is None or axis not in ([0], [-1]) or batch_dims != 0:
        return None
    if not all(-len(data) <= i < len(data) for i in indices):
        return None
    return [data[i] for i in indices]


def own_dims_marked(graph: IRGraph, ref: Any, source: Hashable, axes: list[int]) -> np.ndarray | None:
    """The vector `ref` holding one value per axis of `axes` (a Resize's sizes) as numbers, -1 where the element is
    `source`'s own dim on that same axis; None when some element is neither a number nor that."""
    elements = shape_elements(graph, ref)
    if elements is None or len(elements) != len(axes):
        return None
    numbers = []
    for axis, element in zip(axes, elements):
        if isinstance(element, DimOf):
            if element.source != source or element.axis != axis:
                return None
            element = -1
        numbers.append(element)
    return np.array(numbers, np.int64)


def kept_whatever_length(axes: list[int], values, dynamic: set[int], by_scales: bool) -> set[int]:
    """The axes among `dynamic` (dynamic length, unpadded) that a resize keeps whatever their length: scale exactly 1,
    or a size that is the input's own dim (-1 from own_dims_marked, so output / input is 1). Both engines copy such an
    axis (runtime.kernels.resize), so the converted layer leaves it out and its sampling never depends on it."""
    marker = np.float32(1) if by_scales else -1
    return {axis for axis, value in zip(axes, np.ravel(values)) if axis in dynamic and value == marker}


__all__ = ["DimOf", "kept_whatever_length", "own_dims_marked", "shape_elements"]
