"""IR activation layers (ReLU, Clamp, Sigmoid, Tanh, HardSigmoid, HSigmoid, HSwish, Swish, PReLU, SoftMax,
LogSoftmax, Gelu, Elu, Selu, SoftPlus, SoftSign, Mish) onto runtime.kernels.activation, with what OpenVINO 2026.4's
CPU plugin computes.

OpenVINO facts (single layers built with openvino.opset*, run on CPU at f32 precision; pinned in
tests/runtime/test_ir_activation_vs_openvino.py):

- ReLU maps NaN to 0 (ONNX Relu, onnxruntime: NaN stays NaN).
- Clamp maps NaN to `min` (onnxruntime's Clip: NaN); on integers it clamps to ceil(min) and floor(max)
  (i32 [-5 .. 5] with min -1.5, max 2.5 -> [-1 .. 2]; the spec says so too), but i8/u8 on static dims it clamps
  in float32 and truncates (u8 0 with min 1.678 -> 1; i8 with max -1.5 -> -1); min > max is refused when the
  model is loaded (ir/ops/activation.py refuses it the same way).
- HardSigmoid maps NaN to 1 (also a NaN of alpha * x + beta from NaN or infinite alpha, beta), HSigmoid NaN
  to 0 (onnxruntime's HardSigmoid: NaN).
- SoftMax/LogSoftmax of a slice holding +inf or NaN: OpenVINO gives 0 (log: -inf) to the finite elements and
  NaN to the others; onnxruntime gives NaN throughout. poolir gives NaN throughout (not pinned: no model
  relies on it). -inf elements agree (0, log: -inf).
- HSwish: its spec writes x * min(max(x + 3, 0), 6) / 6, but the CPU plugin computes x * max(0, min(1,
  x * f32(1/6) + 0.5)), ONNX HardSwish's own formula, bit for bit (20001 f32 points in [-8, 8]; the spec's
  formula is up to 1024 ulps away near x = -3). HSigmoid multiplies by 1/6 rounded down (0.16666666f), so
  HSigmoid(3) = 0.99999994. Both are pinned bit for bit in the tests.
- PReLU: a 1-D slope whose length is dim 1 of the data (rank >= 2) scales the channels; any other slope
  broadcasts numpy-style.

- Gelu (2: erf; 7: approximation_mode erf or tanh): poolir computes the formula in float64 and rounds once
  (kernels.activation.gelu). The CPU plugin approximates it in f32: measured on 120001 points in [-7, 7],
  up to 1.1e-6 (erf mode) and 4.6e-7 (tanh mode) from the exact value, relative 1e-3 where |y| > 1e-3, and
  -0.0 where the exact value is a tiny negative (below -6, under 1e-8). poolir does not copy that error.

- Elu, Selu, SoftPlus, SoftSign, Mish: the formula in float64, rounded once (kernels.activation); the CPU plugin
  stays within 2e-6 absolute of that in f32 and gives NaN for NaN. Elu-1 is x for x > 0 and alpha * (exp(x) - 1)
  otherwise, so Elu(-0) is +0 (measured; ONNX Elu keeps -0). Selu's alpha and lambda are scalar inputs.

Sigmoid, Tanh, HardSigmoid, HSigmoid, HSwish, Swish, SoftMax, LogSoftmax, Gelu and Elu run floating types only:
their integer results in OpenVINO are not pinned (the other layers above refuse integers when the graph is built).
"""

from __future__ import annotations

import numpy as np

from poolir.ir.element_types import element_type_of
from poolir.ir.errors import InvalidModelError, UnsupportedError
from poolir.ir.ops.activation import clamp_integer_bounds, prelu_slope_on_channels
from poolir.runtime.ir_ops.registry import LayerFn, LayerInfo, axis_index, builder
from poolir.runtime.kernels.activation import (elu, gelu, hard_sigmoid, hard_swish, hsigmoid_openvino, leaky_relu,
                                               mish, relu_openvino, selu, sigmoid, softmax, softplus, softsign, swish,
                                               tanh)
from poolir.runtime.kernels.elementwise import openvino_cpu_integer_unary
from poolir.runtime.kernels.precision import is_float


def _float_only(layer_type: str, x: np.ndarray) -> None:
    if not is_float(x.dtype):
        raise UnsupportedError(f"{layer_type} on element type {x.dtype} is not supported (floating types only)")


def _nan_to(result: np.ndarray, x: np.ndarray, value) -> np.ndarray:
    if is_float(x.dtype):
        return np.where(np.isnan(x), np.asarray(value, dtype=result.dtype), result)
    return result


def _scalar(array: np.ndarray, what: str) -> float:
    if array.size != 1:
        raise InvalidModelError(f"{what} must hold one element, got shape {list(array.shape)}")
    return float(array.reshape(-1)[0])


@builder("ReLU")
def _relu(info: LayerInfo) -> LayerFn:
    # Integers go through float32 in the CPU plugin like its other unary layers: i32 16777217 -> 16777216,
    # 2147483646 -> -2147483648 (measured, OpenVINO 2026.4).
    constant = 0 in info.constant_inputs

    def run(args):
        (x,) = args
        if x.dtype.kind in "iu":
            return (openvino_cpu_integer_unary(lambda w: np.maximum(w, 0), x, constant),)
        return (relu_openvino(x),)
    return run


@builder("Clamp")
def _clamp(info: LayerInfo) -> LayerFn:
    low, high = info.layer.attrs["min"], info.layer.attrs["max"]

    def run(args):
        x = args[0]
        if is_float(x.dtype):
            # min(max(x, lo), hi) in the element type; NaN -> min.
            lo, hi = np.asarray(low, dtype=x.dtype), np.asarray(high, dtype=x.dtype)
            result = np.minimum(np.maximum(x, lo), hi)
            return (_nan_to(result, x, lo),)
        lo, hi = clamp_integer_bounds(low, high, element_type_of(x.dtype), info.dynamic)
        return (np.minimum(np.maximum(x, x.dtype.type(lo)), x.dtype.type(hi)),)
    return run


def _float_unary(layer_type: str, function, nan_value=None) -> LayerFn:
    def run(args):
        x = args[0]
        _float_only(layer_type, x)
        result = function(x)
        return (result if nan_value is None else _nan_to(result, x, nan_value),)
    return run


builder("Sigmoid")(lambda info: _float_unary("Sigmoid", sigmoid))
builder("Tanh")(lambda info: _float_unary("Tanh", tanh))
builder("HSwish")(lambda info: _float_unary("HSwish", hard_swish))
builder("HSigmoid")(lambda info: _float_unary("HSigmoid", hsigmoid_openvino, nan_value=0))
builder("SoftPlus")(lambda info: _float_unary("SoftPlus", softplus))
builder("SoftSign")(lambda info: _float_unary("SoftSign", softsign))
builder("Mish")(lambda info: _float_unary("Mish", mish))


@builder("Elu")
def _elu(info: LayerInfo) -> LayerFn:
    alpha = info.layer.attrs["alpha"]

    def positive_zero(x: np.ndarray) -> np.ndarray:
        # + 0: Elu(-0) is alpha * (exp(-0) - 1) = +0 here, where the ONNX kernel keeps -0 (module docstring)
        result = elu(x, alpha)
        return np.add(result, np.zeros((), result.dtype), out=result)
    return _float_unary("Elu", positive_zero)


@builder("Selu")
def _selu(info: LayerInfo) -> LayerFn:
    def run(args):
        x, alpha, gamma = args
        _float_only("Selu", x)
        return (selu(x, _scalar(alpha, "alpha"), _scalar(gamma, "lambda")),)
    return run


@builder("Gelu")
def _gelu(info: LayerInfo) -> LayerFn:
    approximation = "tanh" if info.layer.attrs.get("approximation_mode") == "tanh" else "none"
    return _float_unary("Gelu", lambda x: gelu(x, approximation))


@builder("HardSigmoid")
def _hard_sigmoid(info: LayerInfo) -> LayerFn:
    def run(args):
        x, alpha, beta = args
        _float_only("HardSigmoid", x)
        result = hard_sigmoid(x, _scalar(alpha, "alpha"), _scalar(beta, "beta"))
        # OpenVINO clamps with comparisons that a NaN never passes, so any NaN in alpha * x + beta gives 1: a NaN
        # x, a NaN alpha or beta, inf * 0, inf - inf (OpenVINO 2026.4 CPU; ONNX and onnxruntime give NaN).
        return (np.where(np.isnan(result), np.asarray(1, result.dtype), result),)
    return run


@builder("Swish")
def _swish(info: LayerInfo) -> LayerFn:
    def run(args):
        x = args[0]
        _float_only("Swish", x)
        beta = _scalar(args[1], "beta") if len(args) > 1 else 1.0
        return (swish(x, beta),)
    return run


@builder("PReLU")
def _prelu(info: LayerInfo) -> LayerFn:
    def run(args):
        x, slope = args
        if slope.dtype != x.dtype:
            raise InvalidModelError(f"slope has element type {slope.dtype}, the data {x.dtype}")
        channels = x.shape[1] if x.ndim >= 2 else None
        if prelu_slope_on_channels(x.ndim, slope.ndim, channels, slope.size):
            slope = slope.reshape((-1,) + (1,) * (x.ndim - 2))
        elif slope.ndim > x.ndim or np.broadcast_shapes(x.shape, slope.shape) != x.shape:
            raise InvalidModelError(f"slope {list(slope.shape)} does not broadcast to the data {list(x.shape)}")
        return (leaky_relu(x, slope),)
    return run


@builder("SoftMax", "LogSoftmax")
def _softmax(info: LayerInfo) -> LayerFn:
    layer_type = info.layer.type
    axis = info.layer.attrs["axis"]
    log = layer_type == "LogSoftmax"

    def run(args):
        x = args[0]
        _float_only(layer_type, x)
        return (softmax(x, axis_index(axis, x.ndim), log),)
    return run
