"""Normalisation kernels: batch normalisation with given statistics, and local response normalisation.

Both compute in the accumulation dtype (float32 for f16/bf16) and round to the input's dtype once.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from poolir.runtime.kernels.precision import accumulation_dtype
from poolir.runtime.kernels.ufunc_buffer import fitted


def batch_norm(x: np.ndarray, scale: np.ndarray, bias: np.ndarray, mean: np.ndarray, var: np.ndarray,
               epsilon: float) -> np.ndarray:
    """y = (x - mean) / sqrt(var + epsilon) * scale + bias, the statistics broadcast from axis 1.

    Each of scale, bias, mean, var has shape C (one value per channel) or C x D1 .. Dn (one value per
    element of a sample: ONNX BatchNormalization spatial=0); it is aligned with x's axes from axis 1.
    Example: x [[1, 2], [3, 4]] (N=2, C=2), mean [1, 2], var [4, 1], scale 1, bias 0, epsilon 0
    gives [[0, 0], [1, 2]].

    Computed as (x - mean) * (scale / sqrt(var + epsilon)) + bias: the factor once per channel, then three
    whole-tensor operations instead of the formula's four (ResNet-50's 53 BatchNorms: 7.2 -> 5.4 ms). These are
    the operations OpenVINO's BatchNormDecomposition pass rewrites BatchNormInference into (its CPU plugin then
    fuses the last two), and they are more accurate than the formula's order: on 1x64x56x56 float32, largest
    error against float64 5.5e-6 (formula's order 7.8e-6, OpenVINO 4.2e-6), 61% of the outputs bit-equal to
    OpenVINO's (52%). onnxruntime's unfused kernel computes x * s + (bias - mean * s), which cancels when x is
    near a large mean; poolir subtracts first.
    """
    work = accumulation_dtype(x.dtype)
    trailing = x.ndim - 1

    def view(v: np.ndarray) -> np.ndarray:
        v = np.asarray(v).astype(work, copy=False)
        return v.reshape((1, *v.shape, *(1,) * (trailing - v.ndim)))

    factor = view(scale) / np.sqrt(view(var) + work.type(epsilon))
    # In place on one fresh array: ResNet-50's BatchNorms took 48 ms a run with a temporary per operation.
    with fitted(x, factor):
        y = np.subtract(x, view(mean), dtype=work)
        np.multiply(y, factor, out=y)
        np.add(y, view(bias), out=y)
    return y.astype(x.dtype, copy=False)


# Windows of more offsets than this are summed from running sums (lrn).
LONG_WINDOW = 64


def lrn(x: np.ndarray, axes: Sequence[int], alpha: float, beta: float, bias: float, before: int,
        after: int) -> np.ndarray:
    """y = x / (bias + alpha * square_sum) ^ beta, square_sum over the window [i - before, i + after] on
    every axis in `axes` (their product: a box), clipped to the tensor (zeros outside).

    `alpha` is applied as given: the ONNX and OpenVINO scalings (alpha / size, alpha / size^len(axes))
    are their adapters' business. The window is summed offset by offset, one axis after the other; a window of
    more than LONG_WINDOW offsets (clipped to the axis) is the difference of two running sums in float64 instead:
    offset by offset, a 250-byte file (size 200001 over 200000 channels) took hours.
    Example: x = [1, 2, 3] on one axis, before = after = 1, alpha = 1, beta = 1, bias = 0:
    square sums [5, 14, 13], y = [1/5, 2/14, 3/13]."""
    work = accumulation_dtype(x.dtype)
    total = np.square(x.astype(work))
    for axis in sorted(set(axes)):
        length = x.shape[axis]
        low, high = min(before, length - 1), min(after, length - 1)
        if low + high + 1 > LONG_WINDOW:
            total = _window_sums(total, axis, low, high)
            continue
        summed = np.zeros_like(total)
        for offset in range(-low, high + 1):
            # summed[i] += total[i + offset] where 0 <= i + offset < length
            dst = [slice(None)] * x.ndim
            src = [slice(None)] * x.ndim
            dst[axis] = slice(max(0, -offset), length - max(0, offset))
            src[axis] = slice(max(0, offset), length + min(0, offset))
            summed[tuple(dst)] += total[tuple(src)]
        total = summed
    denominator = np.power(work.type(bias) + work.type(alpha) * total, work.type(beta))
    return (x.astype(work) / denominator).astype(x.dtype, copy=False)


def _window_sums(total: np.ndarray, axis: int, before: int, after: int) -> np.ndarray:
    """The sums of total[i - before .. i + after] along `axis`, clipped to it: running sums R (R[0] = 0), and
    R[min(i + after, n - 1) + 1] - R[max(i - before, 0)], in float64, cast back."""
    length = total.shape[axis]
    running = np.zeros(total.shape[:axis] + (length + 1,) + total.shape[axis + 1:], np.float64)
    np.cumsum(total, axis=axis, dtype=np.float64, out=running[(slice(None),) * axis + (slice(1, None),)])
    index = np.arange(length)
    upper = np.take(running, np.minimum(index + after, length - 1) + 1, axis=axis)
    lower = np.take(running, np.maximum(index - before, 0), axis=axis)
    return (upper - lower).astype(total.dtype)


def standardize(x: np.ndarray, axes: tuple[int, ...], epsilon: float, work: np.dtype, inside_sqrt: bool = True,
                normalize_variance: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Mean-variance normalisation over `axes`, computed in `work` and returned in `work` (the caller rounds):
    two passes, as ONNX LayerNormalization's function body and OpenVINO's MVN define it: mean,
    d = x - mean, var = mean(d * d), inverse = 1 / sqrt(var + eps) (outside_sqrt: 1 / (sqrt(var) + eps)),
    normalised = d * inverse. Returns (normalised, mean, inverse), mean and inverse with the reduced axes
    kept as 1; without normalize_variance (d, mean, None).
    Example: x = [1, 2, 3, 4] over axis 0, eps 0: mean 2.5, var 1.25, normalised [-1.342, -0.447, 0.447, 1.342]."""
    w = x.astype(work, copy=False)
    mean = np.mean(w, axis=axes, keepdims=True, dtype=work)
    d = np.subtract(w, mean, dtype=work)
    if not normalize_variance:
        return d, mean, None
    var = np.mean(np.square(d), axis=axes, keepdims=True, dtype=work)
    eps = work.type(epsilon)
    with np.errstate(divide="ignore", invalid="ignore"):
        inverse = np.reciprocal(np.sqrt(var + eps) if inside_sqrt else np.sqrt(var) + eps)
        np.multiply(d, inverse, out=d)
    return d, mean, inverse


def instance_norm(x: np.ndarray, scale: np.ndarray, bias: np.ndarray, epsilon: float, work: np.dtype) -> np.ndarray:
    """Per sample and channel, over the spatial axes [2, rank): (x - mean) / sqrt(var + epsilon) * scale[c] +
    bias[c], computed in `work` and rounded once to x's type (ONNX InstanceNormalization)."""
    normalized, _, _ = standardize(x, tuple(range(2, x.ndim)), epsilon, work)
    return _per_channel(normalized, scale, bias, x.dtype)


def group_norm(x: np.ndarray, scale: np.ndarray, bias: np.ndarray, groups: int, epsilon: float, work: np.dtype,
               round_normalized: bool = False) -> np.ndarray:
    """Statistics per sample and group of C / groups consecutive channels (all their spatial positions), then
    scale and bias per channel (length C). Computed in `work` and rounded once; with round_normalized the
    normalised values are rounded to x's type first and scaled in it (ONNX GroupNormalization-21's stash type)."""
    if x.size == 0:
        return x.copy()
    normalized, _, _ = standardize(x.reshape(x.shape[0], groups, -1), (2,), epsilon, work)
    normalized = normalized.reshape(x.shape)
    if round_normalized:
        return _per_channel(normalized.astype(x.dtype), scale.astype(x.dtype), bias.astype(x.dtype), x.dtype)
    return _per_channel(normalized, scale, bias, x.dtype)


def _per_channel(normalized: np.ndarray, scale: np.ndarray, bias: np.ndarray, dtype: np.dtype) -> np.ndarray:
    channel = (-1,) + (1,) * (normalized.ndim - 2)
    normalized *= scale.astype(normalized.dtype).reshape(channel)
    normalized += bias.astype(normalized.dtype).reshape(channel)
    return normalized.astype(dtype, copy=False)


__all__ = ["batch_norm", "group_norm", "instance_norm", "lrn", "standardize"]
