"""Element-wise layers beyond arithmetic: Sign, Negative, Exp, Log, Erf; the comparisons Equal, NotEqual, Less,
LessEqual, Greater, GreaterEqual; LogicalNot, LogicalAnd, LogicalOr, LogicalXor; Select; and Identity-16.

OpenVINO writes them for ONNX Sign, Exp, Log, Erf, Equal, Less, Greater, LessOrEqual, GreaterOrEqual, Not, And, Or,
Xor and Where (measured with OpenVINO 2026.4's ONNX frontend; ONNX Neg becomes Multiply by -1, but Negative-1
exists in every opset). Comparisons give boolean; the logical ops take and give boolean.
"""

from __future__ import annotations

import numpy as np

from poolir.ir.attributes import STR, Attr, OpVersion
from poolir.ir.errors import InvalidModelError
from poolir.ir.model import Layer, shape_str
from poolir.ir.registry import ShapeRules
from poolir.ir.shapes import TensorInfo, broadcast_shapes, folded, static_values

AUTO_BROADCAST = ("none", "numpy")  # "pdpd" exists in OpenVINO; its frontends for CNNs never write it
UNARY_TYPES = ("Sign", "Negative", "Exp", "Log", "Erf")
COMPARISON_TYPES = ("Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual")
LOGICAL_BINARY_TYPES = ("LogicalAnd", "LogicalOr", "LogicalXor")


def _broadcasting(layer_type: str, inputs: int = 2) -> OpVersion:
    return OpVersion(layer_type, 1, (Attr("auto_broadcast", STR, "numpy", AUTO_BROADCAST),), inputs=(inputs, inputs))


SCHEMA_ROWS: tuple[OpVersion, ...] = (
    *(OpVersion(layer_type, 1) for layer_type in UNARY_TYPES),
    *(_broadcasting(layer_type) for layer_type in (*COMPARISON_TYPES, *LOGICAL_BINARY_TYPES)),
    OpVersion("LogicalNot", 1),
    _broadcasting("Select", 3),
    OpVersion("Identity", 16),  # OpenVINO 2026.4's own graphs may hold it (openvino.opset16.identity)
)

SHAPE_RULES = ShapeRules()


def _broadcast(layer: Layer, shapes: list) -> tuple:
    if layer.attrs["auto_broadcast"] == "none":
        if len({static_values(s) or s for s in shapes}) > 1:
            raise InvalidModelError("auto_broadcast none needs equal shapes, got "
                                    + " and ".join(shape_str(s) for s in shapes))
    shape = shapes[0]
    for other in shapes[1:]:
        shape = broadcast_shapes(shape, other)
    return shape


@SHAPE_RULES.register(*UNARY_TYPES, "Identity")
def infer_unary(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    (data,) = inputs
    return [TensorInfo(data.element_type, data.shape)]


@SHAPE_RULES.register(*COMPARISON_TYPES)
def infer_comparison(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    a, b = inputs
    if a.element_type != b.element_type:
        raise InvalidModelError(f"input element types differ ({a.element_type}, {b.element_type})")
    shape = _broadcast(layer, [a.shape, b.shape])
    if a.value is not None and b.value is not None:  # shape arithmetic (ShuffleNetV2's split lengths) folds
        return [folded("boolean", shape, _COMPARE[layer.type](a.value, b.value))]
    return [TensorInfo("boolean", shape)]


_COMPARE = {"Equal": np.equal, "NotEqual": np.not_equal, "Less": np.less, "LessEqual": np.less_equal,
            "Greater": np.greater, "GreaterEqual": np.greater_equal}


def _check_boolean(inputs: list[TensorInfo], what: str) -> None:
    for index, info in enumerate(inputs):
        if info.element_type != "boolean":
            raise InvalidModelError(f"{what} {index} is {info.element_type}, expected boolean")


@SHAPE_RULES.register(*LOGICAL_BINARY_TYPES)
def infer_logical(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    _check_boolean(inputs, "input")
    return [TensorInfo("boolean", _broadcast(layer, [info.shape for info in inputs]))]


@SHAPE_RULES.register("LogicalNot")
def infer_logical_not(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    _check_boolean(inputs, "input")
    return [TensorInfo("boolean", inputs[0].shape)]


@SHAPE_RULES.register("Select")
def infer_select(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    """Select(cond, then, else): cond boolean, then and else of one type; the three shapes broadcast."""
    condition, then, other = inputs
    _check_boolean([condition], "the condition input")
    if then.element_type != other.element_type:
        raise InvalidModelError(f"the then and else inputs differ in element type ({then.element_type}, "
                                f"{other.element_type})")
    return [TensorInfo(then.element_type, _broadcast(layer, [condition.shape, then.shape, other.shape]))]
