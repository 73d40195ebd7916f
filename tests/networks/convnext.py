"""A network in the shape of torchvision's ConvNeXt (convnext_tiny and its family), in both of PyTorch's ONNX
exporter styles, and its layers as the two exporters write them (read from torch 2.13's exports of the same
modules: the TorchScript exporter at opset 17, the dynamo exporter at opset 18):

    layer                 torchscript (opset 17)                   dynamo (opset 18)
    LayerNorm2d           Transpose(0, 2, 3, 1), LayerNormalization(axis=-1, epsilon), Transpose(0, 3, 1, 2);
                          dynamo adds stash_type=1
    nn.LayerNorm(C)       LayerNormalization(axis=-1, epsilon) on [N, H, W, C], both styles
    nn.Linear on [N,H,W,C]  MatMul(x, W^T folded), Add(bias, .)    MatMul(x, W^T), Add(., bias)
    nn.GELU()             Div(x, sqrt 2), Erf, Add(1), Mul(x, .),  Div(x, sqrt 2), Erf, Add(1), Mul(0.5, .),
                          Mul(., 0.5)                              Mul(x, .)
    layer scale           Mul(x, gamma) (gamma of shape [C], on the channels-last tensor), both styles

torchvision's CNBlock: depthwise 7x7 conv, permute to channels-last, LayerNorm(eps=1e-6), Linear(C, 4C), GELU,
Linear(4C, C), layer scale, permute back, residual add (stochastic depth is an identity in eval). Stem: Conv
4x4 stride 4 and LayerNorm2d; downsampling: LayerNorm2d and Conv 2x2 stride 2; head: AdaptiveAvgPool2d(1),
LayerNorm2d, Flatten, Linear. Channel counts are small; every structural feature is there.
"""

from __future__ import annotations

import math

import numpy as np

from tests.networks import layers as L
from tests.networks.builder import Net

LN_EPSILON = float(np.float32(1e-6))


def layer_norm(net: Net, x: str, module: str) -> str:
    """nn.LayerNorm over the last axis (elementwise affine)."""
    channels = net.shape_of(x)[-1]
    with net.module(module):
        scale, bias = net.param("weight", 1 + net.normal(0.1, channels)), net.param("bias", net.normal(0.1, channels))
        extra = {"stash_type": 1} if net.dynamo else {}
        return net.op("LayerNormalization", [x, scale, bias], aten="layer_norm", axis=-1, epsilon=LN_EPSILON, **extra)


def permute(net: Net, x: str, perm: list[int]) -> str:
    return net.op("Transpose", [x], aten="permute", perm=perm)


def layer_norm_2d(net: Net, x: str, module: str) -> str:
    """torchvision's LayerNorm2d: permute to channels-last, LayerNorm, permute back."""
    with net.module(module):
        y = permute(net, x, [0, 2, 3, 1])
        y = layer_norm(net, y, module)
        return permute(net, y, [0, 3, 1, 2])


def linear_last(net: Net, x: str, out_features: int, module: str) -> str:
    """nn.Linear on a channels-last tensor of rank 4: MatMul with the transposed weight, then the bias."""
    in_features = net.shape_of(x)[-1]
    weight_t = np.ascontiguousarray(net.he_normal(out_features, in_features).T)
    bias = net.normal(0.01, out_features)
    with net.module(module):
        bias_name = net.param("bias", bias)
        weight_name = net.folded_param("MatMul", weight_t)
        y = net.op("MatMul", [x, weight_name])
        return net.op("Add", [y, bias_name] if net.dynamo else [bias_name, y], aten="linear")


def gelu(net: Net, x: str, module: str) -> str:
    """nn.GELU() (approximate='none'), as both exporters decompose it."""
    with net.module(module):
        erf = net.op("Erf", [net.op("Div", [x, net.const(math.sqrt(2), np.float32)])])
        gate = net.op("Add", [erf, net.const(1.0, np.float32)])
        if net.dynamo:
            return net.op("Mul", [x, net.op("Mul", [net.const(0.5, np.float32), gate])], aten="gelu")
        return net.op("Mul", [net.op("Mul", [x, gate]), net.const(0.5, np.float32)])


def cn_block(net: Net, x: str, module: str) -> str:
    channels = net.channels(x)
    with net.module(module):
        y = L.conv(net, x, channels, 7, padding=3, groups=channels, module="dwconv")
        y = layer_norm(net, permute(net, y, [0, 2, 3, 1]), "norm")
        y = linear_last(net, gelu(net, linear_last(net, y, 4 * channels, "pwconv1"), "act"), channels, "pwconv2")
        y = net.op("Mul", [y, net.param("layer_scale", net.uniform(0.1, 0.6, channels))], aten="mul")
        return L.add(net, x, permute(net, y, [0, 3, 1, 2]))


def convnext(style="torchscript", seed=0, folder=None, dims=(16, 32), depths=(2, 1)):
    """ConvNeXt: stem, stages of CNBlocks with LayerNorm2d + 2x2 stride-2 downsampling between them, head."""
    net = Net("convnext", style, seed, (1, 3, 64, 64))
    with net.module("features", "features.0"):
        y = layer_norm_2d(net, L.conv(net, net.x, dims[0], 4, 4, module="features.0.0"), "features.0.1")
    index = 1
    for stage, (channels, depth) in enumerate(zip(dims, depths)):
        if stage:
            with net.module("features", f"features.{index}"):
                y = layer_norm_2d(net, y, f"features.{index}.0")
                y = L.conv(net, y, channels, 2, 2, module=f"features.{index}.1")
            index += 1
        for block in range(depth):
            with net.module("features", f"features.{index}"):
                y = cn_block(net, y, f"features.{index}.{block}")
        index += 1
    y = L.adaptive_avg_pool(net, y)
    with net.module("classifier"):
        y = layer_norm_2d(net, y, "classifier.0")
        logits = L.linear(net, L.flatten(net, y), 10, module="classifier.2", name="logits")
    net.output(logits)
    return net.finish(folder)
