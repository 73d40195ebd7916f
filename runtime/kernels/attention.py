"""Scaled dot-product attention (OpenVINO's ScaledDotProductAttention-13; its rules: ir/ops/attention.py).

Both products are np.matmul (BLAS sgemm per batch, float32 accumulators for float32; float64 in float64), the
batch dims broadcasting numpy-style. The softmax is runtime.kernels.activation.softmax (float32, the maximum
subtracted first), so a row whose every score is -inf is NaN. float16 and bfloat16 are widened to float32 and
rounded once at the end, as OpenVINO's CPU plugin does.
"""

from __future__ import annotations

import numpy as np

from poolir.ir.budget import check_allocation
from poolir.runtime.kernels.activation import softmax
from poolir.runtime.kernels.precision import accumulation_dtype

__all__ = ["default_scale", "scaled_dot_product_attention"]


def default_scale(head_size: int, dtype: np.dtype) -> np.generic:
    """1 / sqrt(E) in the computing type, as OpenVINO's spec writes it (1 / Sqrt(ConvertLike(E, query)))."""
    acc = accumulation_dtype(dtype)
    with np.errstate(divide="ignore"):
        return acc.type(1) / np.sqrt(acc.type(head_size))


def scaled_dot_product_attention(query: np.ndarray, key: np.ndarray, value: np.ndarray, mask: np.ndarray | None = None,
                                 scale=None, sink: np.ndarray | None = None, *, causal: bool = False,
                                 scale_key_first: bool = True) -> np.ndarray:
    """softmax(query @ key^T * scale + bias [, sink]) @ value, with bias the causal triangle (causal), else the
    float mask, else 0 / -inf from a boolean mask (true: attend). `scale` None: 1 / sqrt(E). scale_key_first
    scales the key before the product (OpenVINO's CPU plugin for a scale known when compiling), else the product.
    Shapes and types arrive checked (ir.ops.attention.infer_attention); the result is a fresh array."""
    dtype = query.dtype
    acc = accumulation_dtype(dtype)
    q, k, v = (x.astype(acc, copy=False) for x in (query, key, value))
    factor = default_scale(q.shape[-1], dtype) if scale is None else acc.type(np.ravel(scale)[0])
    rows, columns = q.shape[-2], k.shape[-2]
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    check_allocation(batch + (rows, columns), acc.itemsize, "the attention scores")
    with np.errstate(invalid="ignore", over="ignore"):
        if scale_key_first:
            scores = np.matmul(q, np.swapaxes(k * factor, -1, -2))
        else:
            scores = np.matmul(q, np.swapaxes(k, -1, -2))
            scores *= factor
        if causal:
            scores = scores + np.triu(np.full((rows, columns), -np.inf, acc), 1)
        elif mask is not None:
            bias = np.where(mask, acc.type(0), acc.type(-np.inf)) if mask.dtype == np.bool_ else mask.astype(acc)
            check_allocation(np.broadcast_shapes(scores.shape, bias.shape), acc.itemsize, "the masked scores")
            scores = scores + bias
        if sink is not None:
            column = np.broadcast_to(sink.astype(acc, copy=False), scores.shape[:-1] + (1,))
            weights = softmax(np.concatenate([scores, column], axis=-1), -1)[..., :-1]
        else:
            weights = softmax(scores, -1)
    check_allocation(np.broadcast_shapes(weights.shape[:-2], v.shape[:-2]) + (weights.shape[-2], v.shape[-1]),
                     acc.itemsize, "the attention output")
    result = np.matmul(weights, v)
    return result.astype(dtype, copy=False)
