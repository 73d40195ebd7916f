"""IR activation layers -> ONNX, with the meaning OpenVINO gives them (see runtime/ir_ops/activation.py).

    ReLU -> Relu    Sigmoid -> Sigmoid    Tanh -> Tanh
    Clamp -> Clip (attributes before opset 11, scalar inputs after; integers: ceil(min), floor(max), from the
             first opset whose Clip takes integers)
    HardSigmoid (constant alpha, beta) -> HardSigmoid;  HSigmoid -> HardSigmoid(alpha=1/6, beta=0.5)
    HSwish -> HardSwish (from its first opset; before it, x * HardSigmoid(1/6, 0.5)(x), its definition)
    Swish -> x * Sigmoid(beta * x)
    PReLU -> LeakyRelu (a one-element constant slope) or PRelu (a per-channel 1-D slope reshaped to [C, 1, ...])
    Gelu -> Gelu-20 from opset 20; before, its formula in float32 (f16/bf16 cast to f32 and back): erf mode
             x * 0.5 * (1 + Erf(x * (1 / sqrt(2)))), tanh mode x * 0.5 * (1 + Tanh(sqrt(2 / pi) * (x + 0.044715 *
             x * x * x))). poolir's IR runtime rounds the exact value once, the formula rounds each step: they
             agree to a few ulps (OpenVINO's CPU plugin approximates GELU more loosely; runtime/ir_ops/activation.py).
    Elu -> Elu (alpha)    Selu (constant alpha, lambda) -> Selu (alpha, gamma)    SoftPlus -> Softplus
    SoftSign -> Softsign    Mish -> Mish from opset 18; before, its definition x * Tanh(Softplus(x))
    SoftMax, LogSoftmax -> Softmax / LogSoftmax along the axis; in an opset whose Softmax coerces to 2-D only
             when the axis is the last one (or every later dim is 1), refused otherwise.

As in the other direction, inputs with NaN (and, for softmax, +inf) are outside what is carried exactly;
HSwish equals HardSwish bit for bit on OpenVINO's CPU; HSigmoid (which multiplies by 0.16666666f) and
HardSigmoid(1/6, 0.5) (x * 0.16666667f + 0.5) differ by a few f32 ulps.
"""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from poolir.converter.element_types import onnx_element_type
from poolir.converter.ir_to_onnx.context import Context
from poolir.converter.ir_to_onnx.opsets import check_writes, has_attribute
from poolir.ir.element_types import dtype_of, is_integer
from poolir.ir.errors import ConversionError
from poolir.ir.model import Layer
from poolir.ir.ops.activation import clamp_integer_bounds, prelu_slope_on_channels
from poolir.runtime.onnx_ops import OP_VERSIONS, first_opset, op_version
from poolir.runtime.onnx_ops.activation import softmax_along_axis


def _unary(op_type: str):
    def convert(context: Context, layer: Layer) -> None:
        check_writes(context, op_type, context.input_info(layer, 0).element_type)
        context.node_into(op_type, [context.input(layer, 0)], [context.name_output(layer, 0)], layer.name)
    return convert


def _scalar(context: Context, layer: Layer, index: int, what: str) -> float:
    value = context.constant(layer, index)
    if value is None or np.size(value) != 1:
        raise ConversionError(f"the {what} must be a constant scalar")
    return float(np.ravel(value)[0])


def _hard_sigmoid_node(context: Context, layer: Layer, source: str, outputs: list[str] | None, alpha: float,
                       beta: float) -> str:
    check_writes(context, "HardSigmoid", context.input_info(layer, 0).element_type)
    if outputs is None:
        return context.node("HardSigmoid", [source], f"{layer.name}/hard_sigmoid", alpha=alpha, beta=beta)[0]
    context.node_into("HardSigmoid", [source], outputs, layer.name, alpha=alpha, beta=beta)
    return outputs[0]


def hard_sigmoid(context: Context, layer: Layer) -> None:
    alpha, beta = _scalar(context, layer, 1, "alpha"), _scalar(context, layer, 2, "beta")
    for what, value in (("alpha", alpha), ("beta", beta)):
        if not math.isfinite(value):
            raise ConversionError(f"HardSigmoid {what} {value!r}: where alpha * x + beta is NaN, OpenVINO gives 1 "
                                  f"and ONNX NaN, so no exact ONNX exists")
        _float32_attribute(layer, what, value)
    _hard_sigmoid_node(context, layer, context.input(layer, 0), [context.name_output(layer, 0)], alpha, beta)


def hsigmoid(context: Context, layer: Layer) -> None:
    _hard_sigmoid_node(context, layer, context.input(layer, 0), [context.name_output(layer, 0)], 1 / 6, 0.5)


def hswish(context: Context, layer: Layer) -> None:
    element_type = context.input_info(layer, 0).element_type
    since = first_opset("HardSwish")
    if since is not None and context.opset >= since:
        check_writes(context, "HardSwish", element_type)
        context.node_into("HardSwish", [context.input(layer, 0)], [context.name_output(layer, 0)], layer.name)
        return
    source = context.input(layer, 0)
    gate = _hard_sigmoid_node(context, layer, source, None, 1 / 6, 0.5)
    context.node_into("Mul", [source, gate], [context.name_output(layer, 0)], layer.name)


def swish(context: Context, layer: Layer) -> None:
    element_type = context.input_info(layer, 0).element_type
    check_writes(context, "Sigmoid", element_type)
    source = context.input(layer, 0)
    argument = source
    if len(layer.inputs) > 1:
        beta = np.asarray(_scalar(context, layer, 1, "beta"), dtype=dtype_of(element_type))
        argument = context.node("Mul", [source, context.initializer(beta, f"{layer.name}/beta")],
                                f"{layer.name}/scaled")[0]
    gate = context.node("Sigmoid", [argument], f"{layer.name}/sigmoid")[0]
    context.node_into("Mul", [source, gate], [context.name_output(layer, 0)], layer.name)


def gelu(context: Context, layer: Layer) -> None:
    element_type = context.input_info(layer, 0).element_type
    tanh_mode = layer.attrs.get("approximation_mode") == "tanh"
    source, output = context.input(layer, 0), context.name_output(layer, 0)
    since = first_opset("Gelu")
    if since is not None and context.opset >= since:
        check_writes(context, "Gelu", element_type)
        context.node_into("Gelu", [source], [output], layer.name, approximate="tanh" if tanh_mode else "none")
        return
    check_writes(context, "Tanh" if tanh_mode else "Erf", element_type, f"{layer.type} (its formula)")
    low = element_type in ("f16", "bf16")  # computed in float32, as poolir's runtime and OpenVINO's plugin do
    if low:
        check_writes(context, "Cast", element_type, f"{layer.type} on {element_type} (computed in float32)")
        source = context.node("Cast", [source], f"{layer.name}/to_f32", to=TensorProto.FLOAT)[0]
    dtype = np.float32 if low else dtype_of(element_type)

    def constant(value: float, what: str) -> str:
        return context.initializer(np.asarray(value, dtype), f"{layer.name}/{what}")

    def node(op_type: str, inputs: list[str], what: str) -> str:
        return context.node(op_type, inputs, f"{layer.name}/{what}")[0]

    if tanh_mode:
        cube = node("Mul", [node("Mul", [source, source], "square"), source], "cube")
        inner = node("Add", [source, node("Mul", [cube, constant(0.044715, "coefficient")], "scaled_cube")], "inner")
        gate = node("Tanh", [node("Mul", [inner, constant(math.sqrt(2 / math.pi), "sqrt_2_over_pi")], "argument")],
                    "tanh")
    else:
        gate = node("Erf", [node("Mul", [source, constant(1 / math.sqrt(2), "rsqrt2")], "argument")], "erf")
    gate = node("Add", [gate, constant(1, "one")], "gate")
    half = node("Mul", [source, constant(0.5, "half")], "half")
    if not low:
        context.node_into("Mul", [half, gate], [output], layer.name)
        return
    result = node("Mul", [half, gate], "f32")
    context.node_into("Cast", [result], [output], layer.name, to=onnx_element_type(element_type))


def clamp(context: Context, layer: Layer) -> None:
    info = context.input_info(layer, 0)
    element_type = info.element_type
    check_writes(context, "Clip", element_type)
    dtype = dtype_of(element_type)
    low, high = layer.attrs["min"], layer.attrs["max"]
    if is_integer(element_type):
        # OpenVINO's rounding of the bounds
        low, high = clamp_integer_bounds(low, high, element_type, context.on_dynamic_path(layer))
    bounds = np.asarray(low).astype(dtype), np.asarray(high).astype(dtype)
    source, output = context.input(layer, 0), context.name_output(layer, 0)
    if has_attribute("Clip", context.opset, "min"):
        context.node_into("Clip", [source], [output], layer.name, min=float(bounds[0]), max=float(bounds[1]))
        return
    names = [context.initializer(b, f"{layer.name}/{what}") for b, what in zip(bounds, ("min", "max"))]
    context.node_into("Clip", [source, *names], [output], layer.name)


def prelu(context: Context, layer: Layer) -> None:
    info = context.input_info(layer, 0)
    source, output = context.input(layer, 0), context.name_output(layer, 0)
    slope = context.constant(layer, 1)
    if (slope is not None and slope.size == 1 and is_float_type(info.element_type)
            and float(np.float32(np.ravel(slope)[0])) == float(np.ravel(slope)[0])):  # LeakyRelu's alpha is f32
        check_writes(context, "LeakyRelu", info.element_type)
        context.node_into("LeakyRelu", [source], [output], layer.name, alpha=float(np.ravel(slope)[0]))
        return
    check_writes(context, "PRelu", info.element_type)
    slope_info = context.input_info(layer, 1)
    rank = len(info.shape)
    channels = info.shape[1].min if rank >= 2 and info.shape[1].is_static else None
    size = slope_info.shape[0].min if len(slope_info.shape) == 1 and slope_info.shape[0].is_static else None
    slope_name = context.input(layer, 1)
    if prelu_slope_on_channels(rank, len(slope_info.shape), channels, size) and rank > 2:
        # OpenVINO applies it along axis 1; ONNX broadcasts from the last axis: [C] -> [C, 1, ..., 1].
        if slope is None:
            raise ConversionError("a per-channel PReLU slope that is not constant")
        slope_name = context.initializer(slope.reshape((-1,) + (1,) * (rank - 2)), f"{layer.name}/slope")
    elif len(slope_info.shape) == 1 and rank >= 2 and size is None:
        raise ConversionError("a 1-D PReLU slope of unknown length: OpenVINO may apply it per channel")
    elif len(slope_info.shape) == 1 and rank > 2 and channels is None and size != 1:
        # The runtime decides per run (prelu_slope_on_channels with the fed C); one ONNX graph cannot.
        raise ConversionError(f"a 1-D PReLU slope of length {size} over a dynamic channel dim: OpenVINO applies it "
                              f"per channel when the run's channel count is {size}, else along the last axis")
    context.node_into("PRelu", [source, slope_name], [output], layer.name)


def _float32_attribute(layer: Layer, what: str, value: float) -> float:
    if float(np.float32(value)) != value:
        raise ConversionError(f"{layer.type} {what} {value!r} is not a float32 value, and ONNX's attribute is")
    return value


def elu(context: Context, layer: Layer) -> None:
    check_writes(context, "Elu", context.input_info(layer, 0).element_type)
    alpha = _float32_attribute(layer, "alpha", layer.attrs["alpha"])
    context.node_into("Elu", [context.input(layer, 0)], [context.name_output(layer, 0)], layer.name, alpha=alpha)


def selu(context: Context, layer: Layer) -> None:
    check_writes(context, "Selu", context.input_info(layer, 0).element_type)
    alpha = _float32_attribute(layer, "alpha", _scalar(context, layer, 1, "alpha"))
    gamma = _float32_attribute(layer, "lambda", _scalar(context, layer, 2, "lambda"))
    context.node_into("Selu", [context.input(layer, 0)], [context.name_output(layer, 0)], layer.name, alpha=alpha,
                      gamma=gamma)


def mish(context: Context, layer: Layer) -> None:
    element_type = context.input_info(layer, 0).element_type
    source, output = context.input(layer, 0), context.name_output(layer, 0)
    since = first_opset("Mish")
    if since is not None and context.opset >= since:
        check_writes(context, "Mish", element_type)
        context.node_into("Mish", [source], [output], layer.name)
        return
    check_writes(context, "Softplus", element_type)
    softplus = context.node("Softplus", [source], f"{layer.name}/softplus")[0]
    gate = context.node("Tanh", [softplus], f"{layer.name}/tanh")[0]
    context.node_into("Mul", [source, gate], [output], layer.name)


def is_float_type(element_type: str) -> bool:
    return not is_integer(element_type)


def softmax(context: Context, layer: Layer) -> None:
    op_type = "Softmax" if layer.type == "SoftMax" else "LogSoftmax"
    info = context.input_info(layer, 0)
    check_writes(context, op_type, info.element_type)
    rank = len(info.shape)
    axis = layer.attrs["axis"] % rank if rank else 0
    row = op_version(op_type, context.opset)
    trailing = info.shape[axis + 1:]
    if not softmax_along_axis(op_type, row.since) and not all(d.is_static and d.min == 1 for d in trailing):
        raise ConversionError(f"{op_type} in opset {context.opset} normalises over the flattened dims from axis "
                              f"{axis} on, {layer.type} along axis {axis} alone (rank {rank}): exact only from "
                              f"opset {_first_along_axis(op_type)}")
    context.node_into(op_type, [context.input(layer, 0)], [context.name_output(layer, 0)], layer.name, axis=axis)


def _first_along_axis(op_type: str) -> int:
    return next(row.since for row in OP_VERSIONS[op_type] if softmax_along_axis(op_type, row.since))


CONVERTERS = {
    "ReLU": _unary("Relu"), "Sigmoid": _unary("Sigmoid"), "Tanh": _unary("Tanh"), "Clamp": clamp,
    "HardSigmoid": hard_sigmoid, "HSigmoid": hsigmoid, "HSwish": hswish, "Swish": swish, "PReLU": prelu,
    "SoftMax": softmax, "LogSoftmax": softmax, "Gelu": gelu, "Elu": elu, "Selu": selu,
    "SoftPlus": _unary("Softplus"), "SoftSign": _unary("Softsign"), "Mish": mish,
}
