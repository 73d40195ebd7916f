"""Normalisation kernels: batch normalisation with given statistics, and local response normalisation.

Both compute in the accumulation dtype (float32 for f16/bf16) and round to the input's dtype once.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from poolir.runtime.kernels.precision import accumulation_dtype


def batch_norm(x: np.ndarray, scale: np.ndarray, bias: np.ndarray, mean: np.ndarray, var: np.ndarray,
               epsilon: float) -> np.ndarray:
    """y = (x - mean) / sqrt(var + epsilon) * scale + bias, the statistics broadcast from axis 1.

    Each of scale, bias, mean, var has shape C (one value per channel) or C x D1 .. Dn (one value per
    element of a sample: ONNX BatchNormalization spatial=0); it is aligned with x's axes from axis 1.
    Example: x [[1, 2], [3, 4]] (N=2, C=2), mean [1, 2], var [4, 1], scale 1, bias 0, epsilon 0
    gives [[0, 0], [1, 2]]."""
    work = accumulation_dtype(x.dtype)
    trailing = x.ndim - 1

    def view(v: np.ndarray) -> np.ndarray:
        v = np.asarray(v).astype(work, copy=False)
        return v.reshape((1, *v.shape, *(1,) * (trailing - v.ndim)))

    eps = work.type(epsilon)
    # The formula's operations in its order, each in place on one fresh array (no temporary per operation:
    # ResNet-50's 53 BatchNorms took 48 ms a run with temporaries).
    y = np.subtract(x, view(mean), dtype=work)
    np.divide(y, np.sqrt(view(var) + eps), out=y)
    np.multiply(y, view(scale), out=y)
    np.add(y, view(bias), out=y)
    return y.astype(x.dtype, copy=False)


def lrn(x: np.ndarray, axes: Sequence[int], alpha: float, beta: float, bias: float, before: int,
        after: int) -> np.ndarray:
    """y = x / (bias + alpha * square_sum) ^ beta, square_sum over the window [i - before, i + after] on
    every axis in `axes` (their product: a box), clipped to the tensor (zeros outside).

    `alpha` is applied as given: the ONNX and OpenVINO scalings (alpha / size, alpha / size^len(axes))
    are their adapters' business. The window is summed offset by offset (at most 2 * length - 1 whole-
    tensor additions per axis, however large `before`/`after` are), one axis after the other.
    Example: x = [1, 2, 3] on one axis, before = after = 1, alpha = 1, beta = 1, bias = 0:
    square sums [5, 14, 13], y = [1/5, 2/14, 3/13]."""
    work = accumulation_dtype(x.dtype)
    total = np.square(x.astype(work))
    for axis in sorted(set(axes)):
        length = x.shape[axis]
        summed = np.zeros_like(total)
        for offset in range(-min(before, length - 1), min(after, length - 1) + 1):
            # summed[i] += total[i + offset] where 0 <= i + offset < length
            dst = [slice(None)] * x.ndim
            src = [slice(None)] * x.ndim
            dst[axis] = slice(max(0, -offset), length - max(0, offset))
            src[axis] = slice(max(0, offset), length + min(0, offset))
            summed[tuple(dst)] += total[tuple(src)]
        total = summed
    denominator = np.power(work.type(bias) + work.type(alpha) * total, work.type(beta))
    return (x.astype(work) / denominator).astype(x.dtype, copy=False)


__all__ = ["batch_norm", "lrn"]
