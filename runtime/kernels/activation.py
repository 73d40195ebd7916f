"""Activation kernels: ReLU, clamp, sigmoid, tanh, hard sigmoid, hard swish, OpenVINO's hard sigmoid, swish,
leaky ReLU / PReLU, softmax and log-softmax (along one axis, or ONNX < 13's flattened trailing block), GELU, and
the exponential family ELU, SELU, CELU, softplus, softsign and mish.

float16 and bfloat16 compute in float32 and round once at the end. Inputs and parameters arrive validated
by the ONNX or IR adapter that calls the kernel. Where ONNX (onnxruntime) and OpenVINO differ on NaN, the
adapters choose: these kernels propagate NaN as numpy does (ONNX's reading); ir_ops/activation.py applies
OpenVINO's.
"""

from __future__ import annotations

import math

import numpy as np

from poolir.runtime.kernels.erf import erf_float64
from poolir.runtime.kernels.precision import accumulation_dtype, is_float
from poolir.runtime.kernels.work_arrays import SLOT_ACTIVATION, work_array


def _work(x: np.ndarray) -> np.ndarray:
    return x.astype(accumulation_dtype(x.dtype), copy=False)


def _back(result: np.ndarray, like: np.ndarray) -> np.ndarray:
    return np.asarray(result).astype(like.dtype, copy=False)


def relu(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """max(x, 0); NaN stays NaN, and -0 stays -0 (as onnxruntime's Relu keeps it). `out`: where to write (x
    itself for an in-place ReLU), else a fresh array.

    Floats go through np.clip with both bounds: numpy 2.4 runs maximum against a scalar without SIMD, 2.6x
    slower (16x112x112 float32: 88 us, clip 34 us), and ReLU follows nearly every convolution."""
    if is_float(x.dtype):
        return _back(np.clip(x, np.zeros((), x.dtype), np.asarray(np.inf, dtype=x.dtype), out=out), x)
    return np.maximum(x, np.zeros((), x.dtype), out=out)


def relu_openvino(x: np.ndarray) -> np.ndarray:
    """OpenVINO's CPU ReLU: max(x, 0) with NaN -> 0 and -0 -> +0 (measured: its output for NaN is 0 and no
    output carries a sign bit)."""
    result = relu(x)
    if is_float(x.dtype) and result.size:
        result += np.zeros((), result.dtype)        # -0 + +0 = +0; every other value is unchanged
        if np.isnan(result.max()):                  # one fast reduction; the mask only when a NaN is there
            result[np.isnan(result)] = 0
    return result


def clip(x: np.ndarray, low, high) -> np.ndarray:
    """min(max(x, low), high): with low > high every element becomes high (ONNX Clip-13's text: "When 'min'
    is greater than 'max', the clip operator sets all the 'input' values to the value of 'max'"; onnxruntime
    agrees). None: no bound. NaN stays NaN."""
    if low is not None and high is not None:     # one np.clip: see relu
        return _back(np.clip(x, np.asarray(low, dtype=x.dtype), np.asarray(high, dtype=x.dtype)), x)
    result = x
    if low is not None:
        result = np.maximum(result, np.asarray(low, dtype=x.dtype))
    if high is not None:
        result = np.minimum(result, np.asarray(high, dtype=x.dtype))
    return _back(result, x)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)); exp overflowing to inf for x < -88 (f32) gives exactly 0, as both engines."""
    w = _work(x)
    with np.errstate(over="ignore"):
        return _back(1 / (1 + np.exp(-w)), x)


def tanh(x: np.ndarray) -> np.ndarray:
    return _back(np.tanh(_work(x)), x)


def hard_sigmoid(x: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """max(0, min(1, alpha * x + beta)), alpha and beta in the compute type (f32 for an f32 tensor: ONNX's
    float attributes are f32; OpenVINO's are f32 Consts). NaN stays NaN."""
    return _back(_hard_sigmoid(_work(x), alpha, beta), x)


def _hard_sigmoid(w: np.ndarray, alpha: float, beta: float, out: np.ndarray | None = None) -> np.ndarray:
    """hard_sigmoid in w's (compute) dtype, in `out` or one fresh array: a temporary per step cost page faults
    (MobileNetV3's HardSwish layers: 5 fresh arrays each). The array is allocated here because a ufunc on a 0-d
    array returns a numpy scalar, which cannot be an `out=`."""
    result = np.multiply(w, np.asarray(alpha, dtype=w.dtype), out=np.empty_like(w) if out is None else out)
    result += np.asarray(beta, dtype=w.dtype)
    return np.clip(result, np.zeros((), w.dtype), np.ones((), w.dtype), out=result)


_SIXTH_F32 = float(np.float32(1 / 6))  # 0.16666667163372: HardSwish's alpha (see hard_swish)


def hard_swish(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """x * max(0, min(1, x * alpha + beta)) with alpha = 1/6 rounded to the compute type, beta = 0.5: ONNX
    HardSwish (its spec's definition through HardSigmoid) and, bit for bit, OpenVINO's CPU HSwish too.
    Measured on 20001 f32 points in [-8, 8]: onnxruntime and OpenVINO both equal this everywhere. OpenVINO's
    HSwish spec writes x * min(max(x + 3, 0), 6) / 6, which near x = -3 (x + 3 cancels differently) is up to
    1024 f32 ulps away from what its CPU plugin computes; x / 6 instead of x * f32(1/6) differs from
    onnxruntime at 14703 of the points. alpha is f32(1/6) in every type, f64 too: the spec defines HardSwish by
    its function body, HardSigmoid<alpha = 0.16666667163372, beta = 0.5>, whose float attributes are f32
    (onnxruntime and onnx.reference: HardSwish(1.0) in f64 is 0.6666666716337204, not 2/3)."""
    w = _work(x)
    if out is None:
        result = _hard_sigmoid(w, _SIXTH_F32, 0.5)
        return _back(np.multiply(w, result, out=result), x)
    factor = _hard_sigmoid(w, _SIXTH_F32, 0.5, work_array(SLOT_ACTIVATION, w.shape, w.dtype))
    return np.multiply(w, factor, out=out, casting="unsafe")     # rounded once to out's dtype, as _back does


# 1/6 rounded DOWN to f32 (0.16666666, not 0.16666667): what OpenVINO's CPU HSigmoid multiplies by.
_SIXTH_BELOW = np.nextafter(np.float32(1 / 6), np.float32(0))


def hsigmoid_openvino(x: np.ndarray) -> np.ndarray:
    """OpenVINO HSigmoid-5: min(max(x + 3, 0), 6) / 6 by its spec; its CPU plugin multiplies by 0.16666666f
    (1/6 rounded down), so hsigmoid(3) = 0.99999994, never 1. This form equals OpenVINO on 20001 f32 points
    in [-8, 8] (dividing by 6 differs by 1 ulp at 12079 of them). f64 uses 1/6 in f64."""
    w = _work(x)
    sixth = _SIXTH_BELOW if w.dtype == np.float32 else np.asarray(1 / 6, dtype=w.dtype)
    result = np.add(w, np.asarray(3, dtype=w.dtype), out=np.empty_like(w))  # a 0-d array, not a scalar (see above)
    np.clip(result, np.zeros((), w.dtype), np.asarray(6, dtype=w.dtype), out=result)
    return _back(np.multiply(result, sixth, out=result), x)


def swish(x: np.ndarray, beta: float = 1.0) -> np.ndarray:
    """x * sigmoid(beta * x)."""
    w = _work(x)
    with np.errstate(over="ignore"):
        return _back(w / (1 + np.exp(-np.asarray(beta, dtype=w.dtype) * w)), x)


def leaky_relu(x: np.ndarray, slope) -> np.ndarray:
    """x where x >= 0, slope * x where x < 0 (slope broadcast against x); NaN stays NaN."""
    if is_float(x.dtype):
        w = _work(x)
        return _back(np.where(w < 0, w * np.asarray(slope, dtype=w.dtype), w), x)
    return _back(np.where(x < 0, x * np.asarray(slope, dtype=x.dtype), x), x)


def softmax(x: np.ndarray, axis: int, log: bool = False) -> np.ndarray:
    """exp(x - max) / sum(exp(x - max)) along `axis` (log: (x - max) - log(sum(exp(x - max)))). Subtracting
    the maximum keeps exp from overflowing; it changes nothing else. A slice holding -inf gives it 0 (log:
    -inf); a slice holding +inf or NaN gives NaN throughout (inf - inf), as onnxruntime."""
    w = _work(x)
    if w.size == 0:
        return x.copy()
    with np.errstate(invalid="ignore"):
        shifted = w - np.max(w, axis=axis, keepdims=True)
        exps = np.exp(shifted)
        total = np.sum(exps, axis=axis, keepdims=True)
        result = shifted - np.log(total) if log else exps / total
    return _back(result, x)


def softmax_coerced(x: np.ndarray, axis: int, log: bool = False) -> np.ndarray:
    """ONNX Softmax / LogSoftmax before opset 13: the input is coerced to 2-D, [prod(dims[:axis]),
    prod(dims[axis:])], normalised over each row, and reshaped back. `axis` is non-negative here."""
    rows = math.prod(x.shape[:axis])
    cols = math.prod(x.shape[axis:])
    if x.size == 0:
        return x.copy()
    return softmax(x.reshape(rows, cols), 1, log).reshape(x.shape)


def gelu(x: np.ndarray, approximation: str = "none") -> np.ndarray:
    """GELU, in float64 and rounded once to x's type: "none" (erf) x * 0.5 * (1 + erf(x / sqrt(2))); "tanh"
    0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))) (ONNX Gelu-20's two formulas, OpenVINO Gelu-7's
    ERF and TANH modes). float64 keeps the result within one rounding of the formula's exact value, which is
    what onnxruntime gives to a few ulps; OpenVINO's CPU plugin approximates (runtime/ir_ops/activation.py)."""
    w = x.astype(np.float64)
    if approximation == "tanh":
        inner = np.sqrt(2 / np.pi) * (w + 0.044715 * w ** 3)
        with np.errstate(over="ignore", invalid="ignore"):
            return _back(0.5 * w * (1 + np.tanh(inner)), x)
    return _back(w * 0.5 * (1 + erf_float64(w / np.sqrt(2))), x)


# The exponential family: each is its formula in float64, rounded once to x's type (float16 and bfloat16 too), so
# within one rounding of the exact value. onnxruntime 1.31 and OpenVINO 2026.4's CPU plugin compute in the input's
# type; on 60001 float32 points in [-30, 30] plus NaN, +-inf, +-0, +-1e-30 and +-3.4e38 both stayed within 2e-6
# absolute of the exact value (ELU 1e-7, SELU one ulp at |y| ~ 100, softplus 1.9e-6, softsign 1.2e-7, mish
# 1.9e-6). NaN gives NaN in all three, and so do softsign(+-inf) (inf / inf) and mish(-inf) (-inf * 0).

def elu(x: np.ndarray, alpha: float) -> np.ndarray:
    """x for x >= 0, alpha * (exp(x) - 1) below (ONNX Elu; OpenVINO Elu-1 takes x > 0, which differs at -0 only)."""
    w = x.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        return _back(np.where(w < 0, alpha * np.expm1(w), w), x)


def selu(x: np.ndarray, alpha: float, gamma: float) -> np.ndarray:
    """gamma * x for x > 0, gamma * (alpha * exp(x) - alpha) for x <= 0 (ONNX Selu; OpenVINO Selu-1 with its
    lambda as gamma). The `+ 0.0` gives x = -0 the formula's +0 (alpha - alpha), as both engines do."""
    w = x.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        return _back(gamma * np.where(w > 0, w, alpha * np.expm1(w)) + 0.0, x)


def celu(x: np.ndarray, alpha: float) -> np.ndarray:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) (ONNX Celu)."""
    w = x.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _back(np.maximum(w, 0) + np.minimum(0, alpha * np.expm1(w / alpha)), x)


def softplus(x: np.ndarray) -> np.ndarray:
    """ln(1 + exp(x)), without overflow (logaddexp)."""
    return _back(np.logaddexp(0, x.astype(np.float64)), x)


def softsign(x: np.ndarray) -> np.ndarray:
    """x / (1 + |x|)."""
    w = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        return _back(w / (1 + np.abs(w)), x)


def mish(x: np.ndarray) -> np.ndarray:
    """x * tanh(softplus(x))."""
    w = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        return _back(w * np.tanh(np.logaddexp(0, w)), x)


__all__ = ["celu", "clip", "elu", "gelu", "hard_sigmoid", "hard_swish", "hsigmoid_openvino", "leaky_relu", "relu",
           "mish", "selu", "sigmoid", "softmax", "softmax_coerced", "softplus", "softsign", "swish", "tanh"]
