"""Graph inputs, constants and outputs: Parameter, Const, Result."""

from __future__ import annotations

from poolir.ir.attributes import ELEMENT_TYPE, INT, PARTIAL_SHAPE, STATIC_SHAPE, Attr, OpVersion
from poolir.ir.element_types import check_computable
from poolir.ir.model import Layer
from poolir.ir.registry import ShapeRules
from poolir.ir.shapes import MAX_FOLDED_ELEMENTS, TensorInfo

SCHEMA_ROWS: tuple[OpVersion, ...] = (
    OpVersion("Parameter", 1, (Attr("shape", PARTIAL_SHAPE), Attr("element_type", ELEMENT_TYPE)), inputs=(0, 0)),
    OpVersion("Const", 1, (Attr("element_type", ELEMENT_TYPE), Attr("shape", STATIC_SHAPE),
                           Attr("offset", INT), Attr("size", INT)), inputs=(0, 0)),
    OpVersion("Result", 1, outputs=(0, 0)),
)

SHAPE_RULES = ShapeRules()


@SHAPE_RULES.register("Parameter")
def infer_parameter(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    check_computable(layer.attrs["element_type"], "element_type")
    return [TensorInfo(layer.attrs["element_type"], tuple(layer.attrs["shape"]))]


@SHAPE_RULES.register("Const")
def infer_const(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    """The declared type and shape; the data as the known value when it is small enough to fold."""
    data = layer.data
    value = data if data is not None and data.size <= MAX_FOLDED_ELEMENTS else None
    return [TensorInfo(layer.attrs["element_type"], tuple(layer.attrs["shape"]), value)]


@SHAPE_RULES.register("Result")
def infer_result(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    return []
