"""Transposed convolution (ONNX ConvTranspose, OpenVINO ConvolutionBackpropData and GroupConvolutionBackpropData):
the gradient of a convolution with respect to its input. Input position o on an axis sends x[c, o] * w[c, m, t] to
output position o * stride + t * dilation - pad_begin, for every kernel tap t; positions outside [0, out) are cut.

Computed as col2im: one matrix product per group (BLAS) gives every product column x[:, o] . w[:, m, t], then each
tap's column block is added into its strided output positions (a loop over the kernel's taps, each one numpy call).
Only real products are formed: a convolution over the input with zeros inserted between its elements would add
0 * w terms, which are NaN where w is infinite or NaN. Sums run in float32 (float64 for float64) and the result is
rounded once to x's dtype.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from poolir.ir.budget import check_allocation
from poolir.runtime.kernels.precision import accumulation_dtype

__all__ = ["conv_transpose"]


def _tap_range(tap_offset: int, stride: int, length: int, out: int) -> tuple[int, int]:
    """The input positions [lo, hi) whose output o * stride + tap_offset lies in [0, out) (empty: lo >= hi)."""
    return max(0, -(tap_offset // stride)), min(length, (out - 1 - tap_offset) // stride + 1)


def conv_transpose(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, *, strides: Sequence[int],
                   dilations: Sequence[int], pads_begin: Sequence[int], output: Sequence[int],
                   groups: int = 1) -> np.ndarray:
    """y[n, g * M + m, p] = bias + sum of x[n, g * C + c, o] * w[g * C + c, m, t] over c, and over o, t with
    o * strides + t * dilations - pads_begin = p (per axis). x [N, G * C, *spatial], w [G * C, M, *kernel],
    `output` the output's spatial dims (pads_end and output_padding are implied by it)."""
    acc = accumulation_dtype(x.dtype)
    n, channels, *spatial = x.shape
    _, per_group_out, *kernel = w.shape
    per_group_in = channels // groups
    taps, length = math.prod(kernel), math.prod(spatial)
    check_allocation((n, groups, per_group_out * taps, length), acc.itemsize, "the transposed convolution's columns")
    check_allocation((n, groups * per_group_out, *output), acc.itemsize, "the transposed convolution output")
    xg = x.reshape(n, groups, per_group_in, length).astype(acc, copy=False)
    wg = w.reshape(groups, per_group_in, per_group_out * taps).astype(acc, copy=False)
    columns = np.matmul(wg.transpose(0, 2, 1), xg).reshape(n, groups, per_group_out, *kernel, *spatial)
    y = np.zeros((n, groups, per_group_out, *output), dtype=acc)
    for tap in np.ndindex(*kernel):
        source, target = [], []
        for t, s, d, pb, size, out in zip(tap, strides, dilations, pads_begin, spatial, output):
            offset = t * d - pb
            lo, hi = _tap_range(offset, s, size, out)
            if lo >= hi:
                break
            source.append(slice(lo, hi))
            target.append(slice(lo * s + offset, (hi - 1) * s + offset + 1, s))
        else:
            y[(..., *target)] += columns[(slice(None), slice(None), slice(None), *tap, *source)]
    y = y.reshape(n, groups * per_group_out, *output)
    if bias is not None:
        y += bias.astype(acc, copy=False).reshape((-1,) + (1,) * len(output))
    return y.astype(x.dtype, copy=False)
