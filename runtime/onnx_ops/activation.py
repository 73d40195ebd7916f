"""ONNX activations: Relu, Clip, Sigmoid, Tanh, HardSigmoid, HardSwish, LeakyRelu, PRelu, Softmax, LogSoftmax, Gelu,
Elu, Selu, Celu, Softplus, Softsign, Mish: version rows (every version since each op's opset 1) and adapters onto
runtime.kernels.activation.

Readings (these go into the README's semantics section too):

- Version 1 of Relu, Clip, Sigmoid, Tanh, HardSigmoid and LeakyRelu has the `consumed_inputs` attribute: the
  spec calls it a "legacy optimization attribute" (an in-place hint of Caffe2's era) and gives it no meaning
  for the result, so it is accepted and ignored. Version 6 removed it and changed nothing else.
- Clip-1 has optional float attributes min and max: an absent one is no bound. Clip-6 gives them defaults,
  numeric_limits<float>::lowest() and max() (+-3.4028235e38): so Clip-6 without min maps -inf to -3.4e38
  (onnxruntime agrees), in every element type. Clip-11 on: min and max are optional scalar INPUTS of the
  input's type (integers from Clip-12); absent, they are the type's numeric_limits (the spec's text;
  onnxruntime agrees: f16 inf -> 65504), which bound no integer. With min > max every element becomes max
  (Clip-13's text; onnxruntime 1.31: x in [nan, -inf, inf, -3, 0.5, 3], min 2, max -1 -> [nan, -1, ...]).
  NaN stays NaN in every version (onnxruntime).
- HardSwish = x * max(0, min(1, alpha * x + beta)) with alpha = 1/6 and beta = 0.5 (the spec's own
  definition through HardSigmoid): alpha is rounded to the element type before multiplying, which is what
  onnxruntime computes (see kernels.activation.hard_swish); OpenVINO's HSwish is another formula.
- Softmax and LogSoftmax before 13 (versions 1 and 11) coerce the input to 2-D at `axis` (default 1),
  [prod(dims[:axis]), prod(dims[axis:])], and normalise over the whole trailing block; version 13
  normalises along `axis` alone (default -1). The two agree only when axis is the last axis (or every dim
  after it is 1). A negative axis counts from the back in every version (the text of version 1 does not
  say so; version 11 does, and onnxruntime accepts it in version 1 too).
- Gelu-20: approximate "none" is x * 0.5 * (1 + erf(x / sqrt(2))), "tanh" 0.5 * x * (1 + tanh(sqrt(2 / pi) *
  (x + 0.044715 x^3))); both computed in float64 and rounded once (onnxruntime agrees to a few ulps).
- Elu, Selu, Celu, Softplus, Softsign and Mish: their formulas in float64, rounded once (onnxruntime agrees within
  2e-6 absolute in float32; runtime/kernels/activation.py). Selu-1's defaults are alpha 1.6732 and gamma 1.0507,
  version 6's the 10-digit constants; Celu takes float32 only until version 28.
- Softmax subtracts the maximum of each slice before exp (no overflow); f16/bf16 compute in f32. A slice
  holding +inf or NaN gives NaN throughout, one holding -inf gives it 0 (onnxruntime agrees).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from poolir.ir.errors import UsageError
from poolir.ir.shapes import checked_axis
from poolir.runtime.kernels.activation import (celu, clip, elu, gelu, hard_sigmoid, hard_swish, leaky_relu, mish,
                                               relu, selu, sigmoid, softmax, softmax_coerced, softplus, softsign,
                                               tanh)
from poolir.runtime.kernels.precision import is_float
from poolir.runtime.onnx_ops.element_types import FLOAT_TYPES, FLOAT_TYPES_BF16, check_dtype
from poolir.runtime.onnx_ops.registry import (FLOAT, INT, INTS, REMOVED, STRING, Attribute, NodeContext, Step,
                                              adapter, define)

_SIGNED = frozenset(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
_UNSIGNED = frozenset(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
_INT_PRELU = frozenset(np.dtype(t) for t in (np.int32, np.int64, np.uint32, np.uint64))
_CONSUMED = {"consumed_inputs": Attribute(INTS)}  # version 1's legacy in-place hint: accepted, ignored
_DROP_CONSUMED = {"consumed_inputs": REMOVED}
_FLOAT_MAX = float(np.finfo(np.float32).max)


def _f32(value: float) -> float:
    """A float attribute's default as the spec's float (0.01f, not 0.01): what an explicit attribute holds too."""
    return float(np.float32(value))

# Softmax / LogSoftmax normalise along `axis` alone from this version; the rows before it coerce to 2-D.
SOFTMAX_ALONG_AXIS_SINCE = 13

for _op in ("Relu", "Sigmoid", "Tanh"):
    _rows = [(1, _CONSUMED, FLOAT_TYPES), (6, _DROP_CONSUMED), (13, {}, FLOAT_TYPES_BF16)]
    if _op == "Relu":
        _rows.append((14, {}, FLOAT_TYPES_BF16 | _SIGNED))
    define(_op, _rows)
define("Clip", [
    (1, {**_CONSUMED, "min": Attribute(FLOAT), "max": Attribute(FLOAT)}, FLOAT_TYPES),
    (6, {**_DROP_CONSUMED, "min": Attribute(FLOAT, -_FLOAT_MAX), "max": Attribute(FLOAT, _FLOAT_MAX)}),
    (11, {"min": REMOVED, "max": REMOVED}),                      # min and max become optional inputs
    (12, {}, FLOAT_TYPES | _SIGNED | _UNSIGNED),
    (13, {}, FLOAT_TYPES_BF16 | _SIGNED | _UNSIGNED),
])
define("HardSigmoid", [(1, {**_CONSUMED, "alpha": Attribute(FLOAT, _f32(0.2)), "beta": Attribute(FLOAT, 0.5)},
                        FLOAT_TYPES),
                       (6, _DROP_CONSUMED), (22, {}, FLOAT_TYPES_BF16)])
define("HardSwish", [(14, {}, FLOAT_TYPES), (22, {}, FLOAT_TYPES_BF16)])
define("Gelu", [(20, {"approximate": Attribute(STRING, "none")}, FLOAT_TYPES_BF16)])
GELU_APPROXIMATIONS = ("none", "tanh")
define("LeakyRelu", [(1, {**_CONSUMED, "alpha": Attribute(FLOAT, _f32(0.01))}, FLOAT_TYPES), (6, _DROP_CONSUMED),
                     (16, {}, FLOAT_TYPES_BF16)])
define("Elu", [(1, {**_CONSUMED, "alpha": Attribute(FLOAT, 1.0)}, FLOAT_TYPES), (6, _DROP_CONSUMED),
               (22, {}, FLOAT_TYPES_BF16)])
define("Selu", [(1, {**_CONSUMED, "alpha": Attribute(FLOAT, _f32(1.6732)), "gamma": Attribute(FLOAT, _f32(1.0507))},
                 FLOAT_TYPES),
                (6, {**_DROP_CONSUMED, "alpha": Attribute(FLOAT, _f32(1.67326319217681884765625)),
                     "gamma": Attribute(FLOAT, _f32(1.05070102214813232421875))}),
                (22, {}, FLOAT_TYPES_BF16)])
define("Celu", [(12, {"alpha": Attribute(FLOAT, 1.0)}, frozenset({np.dtype(np.float32)})), (28, {}, FLOAT_TYPES_BF16)])
for _op in ("Softplus", "Softsign"):
    define(_op, [(1, {}, FLOAT_TYPES), (22, {}, FLOAT_TYPES_BF16)])
define("Mish", [(18, {}, FLOAT_TYPES), (22, {}, FLOAT_TYPES_BF16)])
for _op in ("Softmax", "LogSoftmax"):
    define(_op, [(1, {"axis": Attribute(INT, 1)}, FLOAT_TYPES),   # coerced to 2-D at axis
                 (11, {}),                                       # the same, negative axes documented
                 (SOFTMAX_ALONG_AXIS_SINCE, {"axis": Attribute(INT, -1)}, FLOAT_TYPES_BF16)])


def _checked(ctx: NodeContext, function) -> Step:
    """A step applying `function` to the first input after checking its element type against the row."""
    if ctx.input_types and ctx.input_types[0] is not None:
        check_dtype(ctx.version, ctx.input_types[0])
    version = ctx.version

    def run(x, *rest):
        check_dtype(version, x.dtype)
        return (function(x, *rest),)
    return run


def _one_input(ctx: NodeContext, function) -> Step:
    """A checked step of exactly one input (the executor reads a step's arity from its signature)."""
    step = _checked(ctx, function)
    return lambda x: step(x)


# The one-input activations whose only parameters are attributes: op -> the kernel for a node's attributes.
_ONE_INPUT = {
    "Relu": lambda attrs: relu,
    "Sigmoid": lambda attrs: sigmoid,
    "Tanh": lambda attrs: tanh,
    "HardSigmoid": lambda attrs: lambda x: hard_sigmoid(x, attrs["alpha"], attrs["beta"]),
    "HardSwish": lambda attrs: hard_swish,
    "LeakyRelu": lambda attrs: lambda x: leaky_relu(x, attrs["alpha"]),
    "Gelu": lambda attrs: lambda x: gelu(x, attrs["approximate"]),
    "Elu": lambda attrs: lambda x: elu(x, attrs["alpha"]),
    "Selu": lambda attrs: lambda x: selu(x, attrs["alpha"], attrs["gamma"]),
    "Celu": lambda attrs: lambda x: celu(x, attrs["alpha"]),
    "Softplus": lambda attrs: softplus,
    "Softsign": lambda attrs: softsign,
    "Mish": lambda attrs: mish,
}


@adapter(*_ONE_INPUT)
def plan_one_input_activation(ctx: NodeContext) -> Step:
    if ctx.attrs.get("approximate", "none") not in GELU_APPROXIMATIONS:
        raise UsageError(f"approximate {ctx.attrs['approximate']!r}: Gelu takes 'none' or 'tanh'")
    return _one_input(ctx, _ONE_INPUT[ctx.version.op_type](ctx.attrs))


def clip_default_bound(dtype: np.dtype, what: str):
    """An absent Clip-11+ min or max: numeric_limits<T>::lowest() or max() (the spec's text), so a float +-inf is
    clipped to the type's largest finite value (onnxruntime 1.31: 3.4028235e38 for f32, 65504 for f16); for an
    integer that bounds nothing (None)."""
    dtype = np.dtype(dtype)
    if not is_float(dtype):
        return None
    largest = float(ml_dtypes.finfo(dtype).max)
    return dtype.type(-largest if what == "min" else largest)


def _bound(value, x: np.ndarray, what: str):
    """A Clip-11+ min or max input: absent (the type's limit) or a one-element tensor of the input's type."""
    if value is None:
        return clip_default_bound(x.dtype, what)
    value = np.asarray(value)
    if value.size != 1:
        raise UsageError(f"Clip {what} must be a scalar, got shape {list(value.shape)}")
    if value.dtype != x.dtype:
        raise UsageError(f"Clip {what} has type {value.dtype}, the input {x.dtype} (they must be equal)")
    return value.reshape(())


@adapter("Clip")
def plan_clip(ctx: NodeContext) -> Step:
    if first_attribute_row(ctx):
        low, high = ctx.attrs.get("min"), ctx.attrs.get("max")
        return _one_input(ctx, lambda x: clip(x, low, high))
    step = _checked(ctx, lambda x, low, high: clip(x, _bound(low, x, "min"), _bound(high, x, "max")))
    return lambda x, low=None, high=None: step(x, low, high)


def first_attribute_row(ctx: NodeContext) -> bool:
    """Whether this Clip version takes min/max as attributes (versions before 11) rather than inputs."""
    return "min" in ctx.version.attributes


@adapter("Softmax", "LogSoftmax")
def plan_softmax(ctx: NodeContext) -> Step:
    log = ctx.version.op_type == "LogSoftmax"
    axis = ctx.attrs["axis"]
    coerced = not softmax_along_axis(ctx.version.op_type, ctx.version.since)

    def run(x):
        chosen = checked_axis(axis, x.ndim)
        return softmax_coerced(x, chosen, log) if coerced else softmax(x, chosen, log)
    return _one_input(ctx, run)


def softmax_along_axis(op_type: str, since: int) -> bool:
    """Whether the Softmax/LogSoftmax row introduced in `since` normalises along `axis` alone rather than over
    the 2-D coercion's trailing block."""
    return since >= SOFTMAX_ALONG_AXIS_SINCE


# PRelu from version 7 (slope broadcast unidirectionally to X, numpy-style); versions 1 and 6 had their own
# legacy slope rules and are not run. Integers from 9.
define("PRelu", [(7, {}, FLOAT_TYPES), (9, {}, FLOAT_TYPES | _INT_PRELU), (16, {}, FLOAT_TYPES_BF16 | _INT_PRELU)])


@adapter("PRelu")
def plan_prelu(ctx: NodeContext) -> Step:
    def run(x, slope):
        if slope.dtype != x.dtype:
            raise UsageError(f"slope has type {slope.dtype}, the input {x.dtype} (they must be equal)")
        if slope.ndim > x.ndim or np.broadcast_shapes(x.shape, slope.shape) != x.shape:
            raise UsageError(f"slope of shape {list(slope.shape)} does not broadcast to the input "
                             f"{list(x.shape)}")
        return leaky_relu(x, slope)
    return _checked(ctx, run)
