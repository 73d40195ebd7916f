"""What shape inference knows about a tensor (`TensorInfo`), and the dim helpers every family's rules share.

Dims may be dynamic (`Dim`); a helper that needs a static value says what it does without one. Small
integer values (shape arithmetic: ShapeOf, Gather, Concat, ...) are carried as numpy arrays so that a
Reshape whose target is computed still gets static dims; `folded` keeps a value only up to
MAX_FOLDED_ELEMENTS elements.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from poolir.ir.element_types import dtype_of, is_integer
from poolir.ir.errors import InvalidModelError, UnsupportedError
from poolir.ir.model import Dim, Shape, shape_str, static_shape

MAX_FOLDED_ELEMENTS = 4096  # values larger than this are not folded: shape arithmetic is small


@dataclass(frozen=True, slots=True)
class TensorInfo:
    """What inference knows about one output port."""

    element_type: str
    shape: Shape
    value: np.ndarray | None = field(default=None, compare=False)  # a known constant value
    # The elements of a shape vector whose value is not wholly known: each an int, or None for a dynamic dim
    # (ShapeOf of a tensor with a dynamic batch). Gather, Concat and Reshape read them, so a reshape target built
    # from the static dims of such a tensor still gives static dims: `shape_vector_elements`.
    elements: tuple[int | None, ...] | None = field(default=None, compare=False)

    def text(self) -> str:
        """The element type and dims, as messages show a tensor: f32 [1,3,?,?]."""
        return f"{self.element_type} {shape_str(self.shape)}"


def dynamic_shape(rank: int) -> Shape:
    """`rank` fully dynamic dims."""
    return tuple(Dim.dynamic() for _ in range(rank))


def static_length(target: TensorInfo, problem: str) -> int:
    """How many values a 1-D shape input of unknown value holds (0 for a scalar); UnsupportedError if dynamic."""
    length = target.shape[0].value if target.shape else 0
    if length is None:
        raise UnsupportedError(problem)
    return length


def static_values(shape: Shape) -> tuple[int, ...] | None:
    """The dims as ints when every one is static, else None."""
    return tuple(d.min for d in shape) if all(d.is_static for d in shape) else None


def broadcast_shapes(a: Shape, b: Shape) -> Shape:
    """numpy broadcasting of two shapes with dynamic dims; raises InvalidModelError when incompatible."""
    rank = max(len(a), len(b))
    a = (Dim.static(1),) * (rank - len(a)) + tuple(a)
    b = (Dim.static(1),) * (rank - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x.is_static and x.min == 1:
            out.append(y)
        elif y.is_static and y.min == 1:
            out.append(x)
        elif x.is_static and y.is_static:
            if x.min != y.min:
                raise InvalidModelError(f"shapes {shape_str(a)} and {shape_str(b)} do not broadcast")
            out.append(x)
        elif x.is_static or y.is_static:
            out.append(x if x.is_static else y)
        else:
            out.append(Dim.dynamic())
    return tuple(out)


def axis_problem(what: str, value, rank: int, low: int | None = None, high: int | None = None) -> str:
    """The one wording of an axis out of range, for every op of both worlds and the converter:
    `attribute 'axis' = 7 is out of range for rank 2 (valid -2..1)`; `what` names the attribute or input."""
    low, high = (-rank if low is None else low), (rank - 1 if high is None else high)
    return f"{what} = {value} is out of range for rank {rank} (valid {low}..{high})"


def checked_axis(axis: int, rank: int, what: str = "attribute 'axis'") -> int:
    """`axis` in [-rank, rank) as an index in [0, rank); InvalidModelError (axis_problem) outside."""
    if not -rank <= axis < rank:
        raise InvalidModelError(axis_problem(what, axis, rank))
    return axis % rank


def checked_axes(axes, rank: int, what: str = "attribute 'axes'") -> list[int]:
    """Each of `axes` in [-rank, rank) as an index in [0, rank), in the given order; none named twice."""
    given = [int(a) for a in axes]
    shown = given if len(given) <= 8 else f"{given[:8]}..."
    if any(not -rank <= a < rank for a in given):
        raise InvalidModelError(axis_problem(what, shown, rank))
    normalized = [a % rank for a in given]
    if len(set(normalized)) != len(normalized):
        raise InvalidModelError(f"{what} = {shown} names an axis twice")
    return normalized


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    """`axis` in [-rank, rank) as an index in [0, rank); rank 0 (a scalar) accepts axis 0 only."""
    if not -rank <= axis < max(rank, 1):
        raise InvalidModelError(axis_problem(what, axis, rank, -rank if rank else 0, max(rank - 1, 0)))
    return axis % rank if rank else 0


def axes_of(info: TensorInfo, rank: int, what: str = "axes") -> list[int] | None:
    """The sorted distinct axes a constant axes input names, or None when the value is unknown."""
    if info.value is None:
        return None
    return sorted({normalize_axis(int(a), rank, what) for a in np.ravel(info.value)})


def scalar_int(info: TensorInfo, what: str) -> int:
    """The one integer of a constant axis input (a Const of shape [] or [1]); raises InvalidModelError.

    The input must have an integer element type (a float axis is refused, not truncated) and exactly
    one value (an empty Const is refused)."""
    if not is_integer(info.element_type):
        raise InvalidModelError(f"{what} must be an integer, got element type {info.element_type}")
    values = np.ravel(info.value)
    if values.size != 1:
        raise InvalidModelError(f"{what} must be one integer, got {values.size} values")
    return int(values[0])


def folded(element_type: str, shape: Shape, value) -> TensorInfo:
    """A TensorInfo carrying `value` cast to `element_type`, dropped when larger than MAX_FOLDED_ELEMENTS."""
    value = np.asarray(value)
    keep = value.size <= MAX_FOLDED_ELEMENTS
    return TensorInfo(element_type, shape, value.astype(dtype_of(element_type)) if keep else None)


def shape_vector_elements(info: TensorInfo) -> list[int | None] | None:
    """The elements of a 0-D or 1-D integer tensor: its value's, or its partly known `elements`; None otherwise."""
    if info.value is not None and np.ndim(info.value) <= 1 and is_integer(info.element_type):
        return [int(v) for v in np.ravel(info.value)]
    return list(info.elements) if info.elements is not None else None


def info_of_elements(element_type: str, shape: Shape, elements: list[int | None]) -> TensorInfo:
    """A shape vector's TensorInfo from its elements: folded when every element is known."""
    dims = static_values(shape)
    if dims is not None and math.prod(dims) == len(elements) and all(element is not None for element in elements):
        return folded(element_type, shape, np.asarray(elements, np.int64).reshape(dims))
    return TensorInfo(element_type, shape, elements=tuple(elements))


def info_of_value(element_type: str, value: np.ndarray | None, shape: Shape) -> TensorInfo:
    """`shape` when the value is unknown; the value's own (static) shape when it is known."""
    if value is None:
        return TensorInfo(element_type, shape)
    return folded(element_type, static_shape(np.shape(value)), value)
