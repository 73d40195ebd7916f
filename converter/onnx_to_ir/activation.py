"""ONNX activations -> IR layers, as OpenVINO 2026.4's own ONNX frontend writes them where that is right.

    Relu -> ReLU (integers: Maximum(x, 0))    Sigmoid -> Sigmoid        Tanh -> Tanh
    Clip -> Clamp (constant bounds; min > max: both max), Maximum/Minimum (bounds computed in the graph)
    HardSigmoid -> HardSigmoid (alpha, beta as scalar Consts of the input's type)
    HardSwish -> HSwish     LeakyRelu -> PReLU (a one-element slope)    PRelu -> PReLU
    Gelu-20 -> Gelu-7 (approximate none: approximation_mode erf; tanh: tanh)
    Elu -> Elu (alpha)    Selu -> Selu (alpha, gamma as scalar Consts of the input's type: lambda)
    Celu -> Elu (alpha 1) or max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) as layers, as OpenVINO writes it
    Softplus -> SoftPlus    Softsign -> SoftSign    Mish -> Mish
    Softmax, LogSoftmax 13+ -> SoftMax-8 / LogSoftmax-5 along the axis
    Softmax, LogSoftmax 1, 11 -> the same along the axis when it is the last axis (or every later dim is 1);
        otherwise Reshape to 2-D [prod(dims[:axis]), prod(dims[axis:])], SoftMax axis 1, Reshape back to
        ShapeOf(x), as OpenVINO writes it for versions 1 to 10.

Where the meanings differ (pinned in tests/converter/test_activation_converters.py):
- NaN: ONNX keeps NaN through Relu, Clip and HardSigmoid; OpenVINO's ReLU gives 0, Clamp gives min,
  HardSigmoid 1. Conversions are exact for inputs without NaN (and, for Softmax, without +inf). A HardSigmoid
  alpha or beta that is NaN or infinite makes NaN (inf * 0, inf - inf) from finite inputs: refused.
- HardSwish: OpenVINO's CPU HSwish computes ONNX HardSwish's formula bit for bit (its spec's formula,
  x * min(max(x + 3, 0), 6) / 6, would differ by up to 1024 ulps near x = -3; runtime/kernels/activation.py).
- OpenVINO's own frontend is wrong for Softmax-11 (opsets 11 and 12) only: it writes SoftMax along `axis`
  with no coercion to 2-D, so on a (2, 3, 4, 5) input with axis 1 its result differs from onnxruntime's by 0.98 (N(0, 3) input); Softmax-1 (opsets 1 to 10) and LogSoftmax-1/11
  it coerces correctly. poolir coerces for every version before 13.
- PRelu: OpenVINO's PReLU applies a 1-D slope of length dim 1 along the channels; ONNX broadcasts numpy-style
  (a 1-D slope along the LAST axis). A 1-D slope that OpenVINO would read as per-channel, where ONNX does
  not, is given a leading 1 (rank 2), which OpenVINO broadcasts numpy-style.
"""

from __future__ import annotations

import math

import numpy as np

from poolir.converter.onnx_to_ir.node import OnnxNode, Value
from poolir.ir.element_types import dtype_of, is_integer
from poolir.ir.errors import ConversionError, InvalidModelError
from poolir.ir.shapes import checked_axis
from poolir.runtime.onnx_ops.activation import GELU_APPROXIMATIONS, clip_default_bound, softmax_along_axis

_PLAIN = {"Relu": "ReLU", "Sigmoid": "Sigmoid", "Tanh": "Tanh", "HardSwish": "HSwish", "Softplus": "SoftPlus",
          "Softsign": "SoftSign", "Mish": "Mish"}


def _same_shape(node: OnnxNode, x: Value, ref) -> list[Value]:
    return [Value(ref, x.element_type, x.shape)]


def plain(node: OnnxNode) -> list[Value]:
    x, _ = node.checked_single_input()
    if node.version.op_type == "Relu" and is_integer(x.element_type):
        # OpenVINO's CPU ReLU computes integers in float32 (i32 16777217 -> 16777216, INT32_MAX -> INT32_MIN);
        # its integer Maximum is exact
        zero = node.const(0, x.element_type)
        return _same_shape(node, x, node.add("Maximum", [x.ref, zero], {"auto_broadcast": "numpy"}, name=node.name)[0])
    return _same_shape(node, x, node.add(_PLAIN[node.version.op_type], [x.ref], name=node.name)[0])


def hard_sigmoid(node: OnnxNode) -> list[Value]:
    x, attrs = node.checked_single_input()
    for what in ("alpha", "beta"):
        if not math.isfinite(attrs[what]):
            raise ConversionError(f"HardSigmoid {what} {attrs[what]!r}: where alpha * x + beta is NaN, ONNX gives "
                                  f"NaN and OpenVINO 1, so no exact IR exists")
    alpha, beta = node.const(attrs["alpha"], x.element_type), node.const(attrs["beta"], x.element_type)
    return _same_shape(node, x, node.add("HardSigmoid", [x.ref, alpha, beta], name=node.name)[0])


def gelu(node: OnnxNode) -> list[Value]:
    x, attrs = node.checked_single_input()
    if attrs["approximate"] not in GELU_APPROXIMATIONS:
        raise InvalidModelError(f"approximate {attrs['approximate']!r}: Gelu takes 'none' or 'tanh'")
    mode = "tanh" if attrs["approximate"] == "tanh" else "erf"
    ref = node.add("Gelu", [x.ref], {"approximation_mode": mode}, name=node.name, newest=True)[0]
    return _same_shape(node, x, ref)


def elu(node: OnnxNode) -> list[Value]:
    x, attrs = node.checked_single_input()
    return _same_shape(node, x, node.add("Elu", [x.ref], {"alpha": attrs["alpha"]}, name=node.name)[0])


def selu(node: OnnxNode) -> list[Value]:
    x, attrs = node.checked_single_input()
    alpha, gamma = node.const(attrs["alpha"], x.element_type), node.const(attrs["gamma"], x.element_type)
    return _same_shape(node, x, node.add("Selu", [x.ref, alpha, gamma], name=node.name)[0])


def celu(node: OnnxNode) -> list[Value]:
    """Celu with alpha 1 is Elu with alpha 1 exactly (max(0, x) + min(0, exp(x) - 1) is one branch or the other);
    another alpha is its definition as layers, which rounds in the element type at each step (x / alpha, exp, - 1)
    where the runtimes round the exact value once: within a few ulps of the result's size."""
    x, attrs = node.checked_single_input()
    alpha = attrs["alpha"]
    if alpha == 1.0:
        return _same_shape(node, x, node.add("Elu", [x.ref], {"alpha": 1.0}, name=node.name)[0])
    broadcast = {"auto_broadcast": "numpy"}
    zero, one, alpha_ref = (node.const(v, x.element_type) for v in (0.0, 1.0, alpha))

    def layer(layer_type: str, inputs: list, suffix: str):
        return node.add(layer_type, inputs, {} if layer_type == "Exp" else broadcast, name=f"{node.name}/{suffix}")[0]
    positive = layer("Maximum", [x.ref, zero], "positive")
    exp = layer("Exp", [layer("Divide", [x.ref, alpha_ref], "scaled")], "exp")
    negative = layer("Minimum", [layer("Multiply", [alpha_ref, layer("Subtract", [exp, one], "expm1")], "times_alpha"),
                                 zero], "negative")
    ref = node.add("Add", [positive, negative], broadcast, name=node.name)[0]
    return _same_shape(node, x, ref)


def leaky_relu(node: OnnxNode) -> list[Value]:
    x, attrs = node.checked_single_input()
    slope = node.const([attrs["alpha"]], x.element_type)
    return _same_shape(node, x, node.add("PReLU", [x.ref, slope], name=node.name)[0])


def prelu(node: OnnxNode) -> list[Value]:
    x, slope = node.checked_inputs(2, 2)
    node.attributes()
    node.check_element_type(x)
    node.check_same_element_type(x, "X", [("slope", slope)])
    slope_ref = slope.ref
    if len(x.shape) >= 2 and len(slope.shape) == 1 and slope.shape[0] != 1:
        # OpenVINO would (or, dims unknown, might) apply a 1-D slope per channel; as [1, n] it broadcasts
        # numpy-style, which is ONNX's meaning.
        value = _constant(node, slope)
        slope_ref = (node.const(value.reshape(1, -1)) if value is not None else
                     node.add("Unsqueeze", [slope.ref, node.const([0], "i64")], name=f"{node.name}/slope")[0])
    return _same_shape(node, x, node.add("PReLU", [x.ref, slope_ref], name=node.name)[0])


def _constant(node: OnnxNode, value: Value | None) -> np.ndarray | None:
    if value is None:
        return None
    return node.builder.info(value.ref).value


def clip(node: OnnxNode) -> list[Value]:
    by_attributes = "min" in node.version.attributes  # Clip-1 and -6: bounds are attributes, not inputs
    x, *operands = node.checked_inputs(1, 1 if by_attributes else 3, optional=(1, 2))
    attrs = node.attributes()
    node.check_element_type(x)
    if by_attributes:  # Clip-1: an absent attribute means no bound
        low, high = attrs.get("min"), attrs.get("max")
        bounds = [None if v is None else np.asarray(v, dtype=np.float32) for v in (low, high)]
    else:
        node.check_same_element_type(x, "the input", list(zip(("min", "max"), operands)))
        for what, value in zip(("min", "max"), operands):
            if value is not None and any(d is not None and d != 1 for d in value.shape):
                raise InvalidModelError(f"{what} must be a scalar, got shape {list(value.shape)}")
        # An absent bound is the type's limit (the runtime's clip_default_bound: +-inf -> +-3.4e38 for f32).
        defaults = [clip_default_bound(dtype_of(x.element_type), what) for what in ("min", "max")]
        if not all(operand is None or _constant(node, operand) is not None for operand in operands):
            return _clip_by_layers(node, x, [Value(node.const(default), x.element_type, ())
                                             if operand is None and default is not None else operand
                                             for operand, default in zip(operands, defaults)])
        bounds = [default if operand is None else _constant(node, operand)
                  for operand, default in zip(operands, defaults)]
    dtype = dtype_of(x.element_type)
    with np.errstate(over="ignore"):
        low, high = (None if b is None else np.asarray(b).astype(dtype).reshape(()) for b in bounds)
    # A bound that is infinite in the element type (Clip-6's default +-FLT_MAX on float16) bounds nothing.
    low = None if low is not None and np.isinf(low) and low < 0 else low
    high = None if high is not None and np.isinf(high) and high > 0 else high
    if is_integer(x.element_type) and not _float32_exact(dtype, low, high):
        raise ConversionError(f"integer Clip bounds [{low}, {high}]: OpenVINO's CPU plugin rounds Clamp bounds to "
                              f"float32 (and fuses Maximum and Minimum into a Clamp), so a bound float32 cannot "
                              f"hold changes the result (i32 max 33554433 clamps to 33554432)")
    if low is None or high is None:
        return _clip_by_layers(node, x, [None if b is None else node.const(b.reshape(()), x.element_type)
                                         for b in (low, high)], refs=True)
    if low > high:  # ONNX: every element becomes max; OpenVINO refuses a Clamp with min > max
        low = high
    attrs = {"min": float(low), "max": float(high)}
    return _same_shape(node, x, node.add("Clamp", [x.ref], attrs, name=node.name)[0])


def _float32_exact(dtype: np.dtype, low, high) -> bool:
    """Whether integer Clip bounds survive OpenVINO's CPU plugin, which rounds Clamp bounds to float32 (i32 max
    33554433 clamps to 33554432; its spec's bounds are doubles) and fuses Maximum + Minimum with constant bounds
    into a Clamp. A bound rounded past the type's own limit (INT32_MAX -> 2**31) changes nothing."""
    limits = np.iinfo(dtype)
    return ((low is None or int(low) == limits.min or float(np.float32(low)) == int(low))
            and (high is None or int(high) == limits.max or float(np.float32(high)) == int(high)))


def _clip_by_layers(node: OnnxNode, x: Value, bounds, refs: bool = False) -> list[Value]:
    """min(max(x, low), high) as Maximum and Minimum layers (a bound computed in the graph, or absent)."""
    ref = x.ref
    for layer_type, bound in (("Maximum", bounds[0]), ("Minimum", bounds[1])):
        if bound is None:
            continue
        bound_ref = bound if refs else bound.ref
        ref = node.add(layer_type, [ref, bound_ref], {"auto_broadcast": "numpy"}, name=f"{node.name}/{layer_type}")[0]
    if ref is x.ref:  # no bound at all: a copy
        ref = node.add("Convert", [x.ref], {"destination_type": x.element_type}, name=node.name)[0]
    return _same_shape(node, x, ref)


def softmax(node: OnnxNode) -> list[Value]:
    x, attrs = node.checked_single_input()
    layer_type = "SoftMax" if node.version.op_type == "Softmax" else "LogSoftmax"
    rank = len(x.shape)
    axis = checked_axis(attrs["axis"], rank)
    trailing = x.shape[axis + 1:]
    if softmax_along_axis(node.version.op_type, node.version.since) or all(d == 1 for d in trailing):
        ref = node.add(layer_type, [x.ref], {"axis": axis}, name=node.name, newest=True)[0]
        return _same_shape(node, x, ref)
    # Before opset 13: normalise over the flattened block dims[axis:] of each of prod(dims[:axis]) rows.
    leading, block = x.shape[:axis], x.shape[axis:]
    if all(d is not None for d in leading):
        target = [math.prod(leading), -1]
        special_zero = False
    elif axis == 1:
        target, special_zero = [0, -1], True
    elif all(d is not None for d in block):
        target, special_zero = [-1, math.prod(block)], False
    else:
        raise ConversionError(f"{node.version.label} coerces its input to 2-D at axis {axis}, and dims "
                              f"{list(x.shape)} are dynamic on both sides of it")
    flat = node.add("Reshape", [x.ref, node.const(target, "i64")], {"special_zero": special_zero},
                    name=f"{node.name}/to_2d")[0]
    normalised = node.add(layer_type, [flat], {"axis": 1}, name=f"{node.name}/2d", newest=True)[0]
    shape = node.add("ShapeOf", [x.ref], {"output_type": "i64"}, name=f"{node.name}/shape")[0]
    ref = node.add("Reshape", [normalised, shape], {"special_zero": False}, name=node.name)[0]
    return _same_shape(node, x, ref)


CONVERTERS = {
    **dict.fromkeys(_PLAIN, plain), "HardSigmoid": hard_sigmoid, "LeakyRelu": leaky_relu, "PRelu": prelu,
    "Clip": clip, "Softmax": softmax, "LogSoftmax": softmax, "Gelu": gelu, "Elu": elu, "Selu": selu, "Celu": celu,
}
