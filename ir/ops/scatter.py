"""ScatterNDUpdate-3 and ScatterNDUpdate-15: schema and shape rule.

A copy of data with slices replaced (v3) or combined by `reduction` (v15: none, sum, sub, prod, min, max) at the
k-tuples of indices (i32 or i64, last dim k <= rank of data); updates has shape indices.shape[:-1] + data.shape[k:].
OpenVINO writes the v3 op with version "opset4" (2026.4 refuses to read it as "opset3": its opset3 table lacks
the op; poolir reads both) and the v15 op with "opset15". The output is data's
shape and type. The semantics (negative indices, duplicates, each reduction) are in runtime.kernels.scatter.
"""

from __future__ import annotations

from poolir.ir.attributes import STR, Attr, OpVersion
from poolir.ir.element_types import INDEX_ELEMENT_TYPES
from poolir.ir.errors import InvalidModelError
from poolir.ir.model import Dim, Layer, shape_str
from poolir.ir.registry import ShapeRules
from poolir.ir.shapes import TensorInfo

IR_REDUCTIONS = ("none", "sum", "sub", "prod", "min", "max")

SCHEMA_ROWS: tuple[OpVersion, ...] = (
    OpVersion("ScatterNDUpdate", 3, inputs=(3, 3)),
    OpVersion("ScatterNDUpdate", 15, (Attr("reduction", STR, "none", IR_REDUCTIONS),), inputs=(3, 3)),
)

SHAPE_RULES = ShapeRules()


def updates_shape(data: tuple[Dim, ...], indices: tuple[Dim, ...]) -> tuple[Dim, ...] | None:
    """The shape updates must have, or None when the indices' last dim is unknown. InvalidModelError for ranks that
    do not fit (shared with the ONNX -> IR converter)."""
    if not data or not indices:
        raise InvalidModelError(f"data {shape_str(data)} and indices {shape_str(indices)} must have rank >= 1")
    depth = indices[-1].value
    if depth is None:
        return None
    if depth > len(data):
        raise InvalidModelError(f"the indices' last dim {depth} exceeds the data rank {len(data)}")
    return tuple(indices[:-1]) + tuple(data[depth:])


@SHAPE_RULES.register("ScatterNDUpdate")
def infer_scatter_nd_update(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    data, indices, updates = inputs
    if indices.element_type not in INDEX_ELEMENT_TYPES:
        raise InvalidModelError(f"the indices are {indices.element_type}, expected i32 or i64")
    if updates.element_type != data.element_type:
        raise InvalidModelError(f"updates have element type {updates.element_type}, data {data.element_type}")
    expected = updates_shape(data.shape, indices.shape)
    if expected is not None:
        fits = len(expected) == len(updates.shape) and all(
            a.value is None or b.value is None or a.value == b.value for a, b in zip(expected, updates.shape))
        if not fits:
            raise InvalidModelError(f"updates {shape_str(updates.shape)} must have shape {shape_str(expected)} "
                                    f"(indices {shape_str(indices.shape)}, data {shape_str(data.shape)})")
    return [TensorInfo(data.element_type, data.shape)]


__all__ = ["IR_REDUCTIONS", "SCHEMA_ROWS", "SHAPE_RULES", "updates_shape"]
