"""The fusions of the ONNX executor: an inference BatchNormalization folded into the Conv that feeds it, and a
Relu or HardSwish applied in place to the fresh result of the Conv, Add or Sum before it (`ActivationInPlace`; bit
for bit what the node computes, without a second array). The executor also binds a Conv's constant weights and bias
into its step, the bias packed into the matrix product (kernels.convolution.BiasedWeights), under the same switch.

onnxruntime (ConvBNFusion) and OpenVINO (its ONNX frontend's BatchNorm decomposition, then weight fusion) both
fold it, and OpenVINO's IRs of such networks hold only the folded Convolution. With f = scale / sqrt(var + eps)
per output channel m (computed as runtime.kernels.normalization.batch_norm computes it):

    W'[m] = W[m] * f[m]        B'[m] = (B[m] - mean[m]) * f[m] + beta[m]     (B = 0 when the Conv has none)

so BN(Conv(x, W, B)) = Conv(x, W', B') in exact arithmetic. In floats the two differ by rounding only: W'
rounds each weight once more (half an ulp), and the scaling is applied to the products instead of to their
sum; both are inside the bound that summation order already gives a convolution (K * eps * sum |x * w'|).
What it saves: BatchNorm's three whole-tensor passes (ResNet-50: 53 BatchNorms, 4.9 of 56 ms).

A fused-away tensor (the Conv's own output) is never computed, so `observe` does not see it;
`Session(model, fuse=False)` plans every node as written (poolir verify's runtime paths do, so that they expose every tensor).

Folded only when nothing else can tell: the Conv's output feeds this BatchNormalization alone and is not a
graph output; W, B and the four statistics are constants of one float32 or float64 type, the statistics one
value per output channel; and the BatchNormalization computes inference (its adapter has checked that).
"""

from __future__ import annotations

import numpy as np

from poolir.runtime.kernels.activation import hard_swish, relu
from poolir.runtime.onnx_ops.element_types import check_dtype
from poolir.runtime.onnx_subgraphs import node_reads

_FOLDED_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


def folded_conv_weights(weights, conv_bias, scale, beta, mean, var, epsilon: float
                        ) -> tuple[np.ndarray, np.ndarray] | None:
    """(W', B') of a Conv with weights [M, ...] and bias [M] (or None) followed by a BatchNormalization with these
    constants; None when they do not qualify (see the module doc)."""
    statistics = (scale, beta, mean, var)
    if not isinstance(weights, np.ndarray) or weights.dtype not in _FOLDED_TYPES or weights.ndim < 3:
        return None
    channels = weights.shape[0]
    for value in (*statistics, *(() if conv_bias is None else (conv_bias,))):
        if not isinstance(value, np.ndarray) or value.dtype != weights.dtype or value.shape != (channels,):
            return None
    dtype = weights.dtype.type
    factor = scale / np.sqrt(var + dtype(epsilon))
    folded_weights = weights * factor.reshape((channels,) + (1,) * (weights.ndim - 1))
    bias = np.zeros(channels, weights.dtype) if conv_bias is None else conv_bias
    folded_bias = (bias - mean) * factor + beta
    return folded_weights, folded_bias


class ActivationInPlace:
    """A step whose result is always a fresh array (`fresh_result`), followed by an activation node
    (IN_PLACE[op_type]) on that result, written into it: nothing else reads it (the activation was its one
    reader). ResNet-50's 49 ReLUs wrote 49 more arrays; MobileNetV3's 21 HardSwishes 21."""

    __slots__ = ("producer", "activation", "version")

    def __init__(self, producer, activation, version):
        self.producer, self.activation, self.version = producer, activation, version

    def __call__(self, *inputs) -> tuple:
        (y,) = self.producer(*inputs)
        check_dtype(self.version, y.dtype)        # what the activation's own step checks first
        return (self.activation(y, out=y),)


# The activations a fresh result may take in place: the same kernels the nodes run, given `out`.
IN_PLACE = {"Relu": relu, "HardSwish": hard_swish}


def fresh_result(node) -> bool:
    """Whether the step of this node always returns a new array that no other value shares: a Conv
    (kernels.convolution.conv), an Add, or a Sum of two or more inputs (ufunc results; a one-input Sum returns
    its input itself)."""
    return node.op_type in ("Conv", "Add") or node.op_type == "Sum" and sum(1 for name in node.input if name) >= 2


def single_use_outputs(nodes, graph_outputs) -> set[str]:
    """The tensor names read by exactly one node input and not graph outputs: a fusion may skip computing them."""
    uses: dict[str, int] = {}
    for node in nodes:
        for name in node_reads(node):  # a value an If's branch reads is read there too
            if name:
                uses[name] = uses.get(name, 0) + 1
    return {name for name, count in uses.items() if count == 1} - set(graph_outputs)


__all__ = ["IN_PLACE", "ActivationInPlace", "folded_conv_weights", "fresh_result", "single_use_outputs"]
