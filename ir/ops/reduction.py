"""Reductions over constant axes: ReduceMean, ReduceMax, ReduceMin, ReduceSum, ReduceProd, ReduceL1, ReduceL2."""

from __future__ import annotations

import math

import numpy as np

from poolir.ir.attributes import BOOL, Attr, OpVersion
from poolir.ir.errors import UnsupportedError
from poolir.ir.model import Dim, Layer
from poolir.ir.registry import ShapeRules
from poolir.ir.element_types import is_integer
from poolir.ir.shapes import TensorInfo, axes_of, dynamic_shape, folded, static_values

# layer type -> the opset that introduced it
REDUCE_TYPES = {"ReduceMean": 1, "ReduceMax": 1, "ReduceMin": 1, "ReduceSum": 1, "ReduceProd": 1,
                "ReduceL1": 4, "ReduceL2": 4}

SCHEMA_ROWS: tuple[OpVersion, ...] = tuple(
    OpVersion(layer_type, since, (Attr("keep_dims", BOOL, False),), inputs=(2, 2))
    for layer_type, since in REDUCE_TYPES.items())

SHAPE_RULES = ShapeRules()


@SHAPE_RULES.register(*REDUCE_TYPES)
def infer_reduce(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    """The reduced axes become 1 (keep_dims) or disappear. Unknown axes keep the rank with keep_dims;
    without it the output rank is the input rank minus the number of axes, which must be known."""
    data, axes_info = inputs
    rank = len(data.shape)
    keep = layer.attrs["keep_dims"]
    axes = axes_of(axes_info, rank) if rank else []
    if axes is None:
        if keep:
            return [TensorInfo(data.element_type, dynamic_shape(rank))]
        count = static_values(axes_info.shape)
        if count is None:
            raise UnsupportedError("Reduce axes of unknown length without keep_dims: dynamic output rank")
        return [TensorInfo(data.element_type, dynamic_shape(rank - math.prod(count)))]
    shape = tuple(Dim.static(1) if i in axes else d for i, d in enumerate(data.shape) if keep or i not in axes)
    fold = _INTEGER_FOLDS.get(layer.type)
    if (fold is not None and data.value is not None and is_integer(data.element_type)
            and (data.value.size or layer.type in ("ReduceProd", "ReduceSum"))):  # max/min of nothing: no value
        # Shape arithmetic (OpenVINO's Flatten: ShapeOf, ReduceProd, Concat, Reshape) folds as binary ops do, with
        # numpy's wrap-around; the static dims of the Reshape after it follow, as OpenVINO infers them.
        with np.errstate(all="ignore"):
            return [folded(data.element_type, shape, fold(data.value, axis=tuple(axes), keepdims=keep))]
    return [TensorInfo(data.element_type, shape)]


_INTEGER_FOLDS = {"ReduceProd": np.prod, "ReduceSum": np.sum, "ReduceMax": np.max, "ReduceMin": np.min}
