"""Activation layers: ReLU, Clamp, Sigmoid, Tanh, HardSigmoid, HSigmoid, HSwish, Swish, PReLU, SoftMax,
LogSoftmax, Gelu, Elu, Selu, SoftPlus, SoftSign, Mish. Every one keeps its input's element type and shape.

OpenVINO 2026.4's ONNX frontend writes them for: Relu -> ReLU-1; Clip -> Clamp-1 (constant bounds);
Sigmoid -> Sigmoid-1; Tanh -> Tanh-1; HardSigmoid -> HardSigmoid-1 (alpha, beta as scalar Const inputs);
HardSwish -> HSwish-4; LeakyRelu -> PReLU-1 (a one-element Const slope); Softmax/LogSoftmax -> SoftMax-8 /
LogSoftmax-5 (before opset 11 between two Reshapes that coerce the input to 2-D; see
converter/onnx_to_ir/activation.py for what it does for Softmax-11). The layer type OpenVINO writes for
PRelu is spelled "PReLU". Gelu-2 is the erf form; Gelu-7 adds approximation_mode (OpenVINO writes "ERF" or
"TANH"; read case-insensitively), which openvino.convert_model writes for torch's GELU and ONNX Gelu-20.
Elu -> Elu-1 (alpha attribute); Selu -> Selu-1 (alpha, lambda as scalar Const inputs); Softplus -> SoftPlus-4;
Softsign -> SoftSign-9; Mish -> Mish-4; Celu becomes Maximum, Minimum, Exp and arithmetic.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from poolir.ir.attributes import FLOAT, INT, UPPER_STR, Attr, OpVersion
from poolir.ir.element_types import OPENVINO_SATURATED_TYPES, dtype_of
from poolir.ir.errors import InvalidModelError, UsageError
from poolir.ir.model import Layer, opset_number, shape_str
from poolir.ir.registry import ShapeRules
from poolir.ir.shapes import TensorInfo, broadcast_shapes, normalize_axis

# Layers with one input and no attributes: (type, the opset that introduced it).
PLAIN_TYPES = {"ReLU": 1, "Sigmoid": 1, "Tanh": 1, "HSwish": 4, "HSigmoid": 5}
# Layers of floating types only (OpenVINO refuses others when it builds the graph): type -> its opset.
FLOAT_ONLY_TYPES = {"SoftPlus": 4, "SoftSign": 9, "Mish": 4}
GELU_MODES = ("erf", "tanh")
SOFTMAX_TYPES = ("SoftMax", "LogSoftmax")


def _check_clamp(attrs: Mapping[str, Any]) -> None:
    # OpenVINO refuses min > max when it loads the model ("Attribute 'min' must be less or equal than 'max'").
    if not attrs["min"] <= attrs["max"]:
        raise UsageError(f"Clamp min {attrs['min']!r} must be <= max {attrs['max']!r}")


SCHEMA_ROWS: tuple[OpVersion, ...] = (
    *(OpVersion(layer_type, since) for layer_type, since in PLAIN_TYPES.items()),
    OpVersion("Clamp", 1, (Attr("min", FLOAT), Attr("max", FLOAT)), value_check=_check_clamp),
    OpVersion("HardSigmoid", 1, inputs=(3, 3)),  # data, alpha, beta (scalars)
    OpVersion("Swish", 4, inputs=(1, 2)),  # data, optional beta (a scalar, default 1)
    OpVersion("PReLU", 1, inputs=(2, 2)),  # data, slope
    # SoftMax-1's axis is non-negative; SoftMax-8 allows [-rank, rank). Both default to 1.
    OpVersion("SoftMax", 1, (Attr("axis", INT, 1),)),
    OpVersion("SoftMax", 8, (Attr("axis", INT, 1),)),
    OpVersion("LogSoftmax", 5, (Attr("axis", INT, 1),)),
    *(OpVersion(layer_type, since) for layer_type, since in FLOAT_ONLY_TYPES.items()),
    OpVersion("Elu", 1, (Attr("alpha", FLOAT),)),
    OpVersion("Selu", 1, inputs=(3, 3)),  # data, alpha, lambda (scalars)
    OpVersion("Gelu", 2),  # the erf form
    OpVersion("Gelu", 7, (Attr("approximation_mode", UPPER_STR, "erf", GELU_MODES),)),
)

SHAPE_RULES = ShapeRules()


def clamp_integer_bounds(low: float, high: float, element_type: str, dynamic: bool) -> tuple[int, int]:
    """The integer bounds OpenVINO 2026.4's CPU plugin clamps an integer tensor to, within the type: ceil(min) and
    floor(max) (the spec's reading: i32 with min -1.5, max 2.5 clamps to [-1, 2]), but i8 and u8 on static dims
    it clamps in float32 and truncates the result, which is clamping to trunc(min) and trunc(max) (u8 with min
    1.678 -> 1, i8 with max -1.5 -> -1); on a dim declared dynamic (`dynamic`) they get ceil and floor too (2 and
    -2). An infinite bound is the type's limit."""
    limits = np.iinfo(dtype_of(element_type))
    small = element_type in OPENVINO_SATURATED_TYPES and not dynamic
    round_low, round_high = (math.trunc, math.trunc) if small else (math.ceil, math.floor)
    if small:
        low, high = float(np.float32(low)), float(np.float32(high))
    lo = limits.min if low < limits.min else min(round_low(low), limits.max)
    hi = limits.max if high > limits.max else max(round_high(high), limits.min)
    return lo, hi


@SHAPE_RULES.register(*PLAIN_TYPES, "Clamp", "Elu")
def infer_same(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    data = inputs[0]
    return [TensorInfo(data.element_type, data.shape)]


@SHAPE_RULES.register("Gelu", *FLOAT_ONLY_TYPES)
def infer_float_only(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    # OpenVINO refuses an integer Gelu when it builds the graph ("Argument element type must be f16, bf16, f32, f64")
    if inputs[0].element_type not in ("f16", "bf16", "f32", "f64"):
        raise InvalidModelError(f"{layer.type} takes a floating type, got {inputs[0].element_type}")
    return infer_same(layer, inputs)


def _check_scalar_operands(layer: Layer, inputs: list[TensorInfo], names: tuple[str, ...]) -> None:
    data = inputs[0]
    for name, info in zip(names, inputs[1:]):
        if info.element_type != data.element_type:
            raise InvalidModelError(f"{name} has element type {info.element_type}, the data {data.element_type}")
        if any(d.is_static and d.min != 1 for d in info.shape):
            raise InvalidModelError(f"{name} must hold one element, got shape {shape_str(info.shape)}")


@SHAPE_RULES.register("HardSigmoid")
def infer_hard_sigmoid(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    _check_scalar_operands(layer, inputs, ("alpha", "beta"))
    return infer_same(layer, inputs)


@SHAPE_RULES.register("Selu")
def infer_selu(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    _check_scalar_operands(layer, inputs, ("alpha", "lambda"))
    return infer_float_only(layer, inputs)


@SHAPE_RULES.register("Swish")
def infer_swish(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    _check_scalar_operands(layer, inputs, ("beta",))
    return infer_same(layer, inputs)


def prelu_slope_on_channels(data_rank: int, slope_rank: int, channels, slope_size) -> bool:
    """Whether a PReLU slope applies along axis 1 (OpenVINO's PReLU-1: a 1-D slope whose length is the
    channel count C = dim 1 of data of rank >= 2) rather than by numpy broadcasting. Measured: data (2, 3, 2),
    slope [0.1, 0.2, 0.3] -> every [n, c, :] scaled by slope[c]."""
    return data_rank >= 2 and slope_rank == 1 and channels is not None and channels == slope_size != 1


@SHAPE_RULES.register("PReLU")
def infer_prelu(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    data, slope = inputs
    if slope.element_type != data.element_type:
        raise InvalidModelError(f"slope has element type {slope.element_type}, the data {data.element_type}")
    rank = len(data.shape)
    channels = data.shape[1].min if rank >= 2 and data.shape[1].is_static else None
    size = slope.shape[0].min if len(slope.shape) == 1 and slope.shape[0].is_static else None
    if not prelu_slope_on_channels(rank, len(slope.shape), channels, size):
        if len(slope.shape) > rank:
            raise InvalidModelError(f"slope {shape_str(slope.shape)} has a higher rank than the data "
                                    f"{shape_str(data.shape)}")
        broadcast_shapes(data.shape, slope.shape)  # raises when they cannot broadcast
    return [TensorInfo(data.element_type, data.shape)]


@SHAPE_RULES.register(*SOFTMAX_TYPES)
def infer_softmax(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    (data,) = inputs
    rank = len(data.shape)
    axis = layer.attrs["axis"]
    if rank == 0:
        raise InvalidModelError(f"{layer.type} needs an input of rank >= 1, got a scalar")
    if layer.type == "SoftMax" and opset_number(layer.version) < 8 and axis < 0:
        raise InvalidModelError(f"SoftMax-1 axis {axis} must be non-negative (a negative axis needs SoftMax-8)")
    normalize_axis(axis, rank)
    return [TensorInfo(data.element_type, data.shape)]
