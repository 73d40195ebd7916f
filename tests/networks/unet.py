"""A network in the shape of a U-Net decoder, in both of PyTorch's ONNX exporter styles, with the layers torchvision's
classifiers lack and segmentation and super-resolution networks use, as the two exporters write them (read from
torch 2.15's exports of the same modules: the TorchScript exporter at opset 17, the dynamo exporter at opset 20):

    layer                        both styles
    nn.ConvTranspose2d           ConvTranspose (explicit pads, output_padding; group when grouped)
    nn.GroupNorm(G, C)           Reshape [0, G, -1], InstanceNormalization (unit scale, zero B, epsilon),
                                 Reshape back (TorchScript: to Shape(x); dynamo: to the static shape),
                                 Mul(weight [C, 1, 1]), Add(bias [C, 1, 1])
    nn.PixelShuffle(r)           DepthToSpace(blocksize r, mode CRD)
    nn.ELU()                     Elu(alpha 1)

The encoder pools with MaxPool2d(2, ceil_mode=True) on odd maps, the decoder crops each upsampled map to its skip
connection's size (a Slice) before the Concat. Channel counts are small; every structural feature is there.
"""

from __future__ import annotations

import numpy as np

from tests.networks import layers as L
from tests.networks.builder import Net

GN_EPSILON = float(np.float32(1e-5))


def conv_transpose(net: Net, x: str, out_channels: int, kernel: int, stride: int, padding=0, output_padding=0,
                   groups=1, module="up") -> str:
    in_channels = net.channels(x)
    weight = net.he_normal(in_channels, out_channels // groups, kernel, kernel)
    with net.module(module):
        inputs = [x, net.param("weight", weight), net.param("bias", net.normal(0.01, out_channels))]
        return net.op("ConvTranspose", inputs, aten="convolution", dilations=[1, 1], group=groups,
                      kernel_shape=[kernel, kernel], output_padding=[output_padding] * 2, pads=[padding] * 4,
                      strides=[stride, stride])


def group_norm(net: Net, x: str, groups: int, module: str) -> str:
    channels = net.channels(x)
    with net.module(module):
        grouped = net.op("Reshape", [x, net.const([0, groups, -1])], allowzero=0)
        normalised = net.op("InstanceNormalization", [grouped, net.const(np.ones(groups), np.float32),
                                                      net.const(np.zeros(groups), np.float32)], epsilon=GN_EPSILON)
        # TorchScript reshapes back to Shape(x); torch.export has the static shape as a constant (its batch as 0,
        # copied, so that the network also runs with the batch dim made dynamic, as test_six_paths does)
        shape = net.const([0, *net.shape_of(x)[1:]]) if net.dynamo else net.op("Shape", [x])
        restored = net.op("Reshape", [normalised, shape], allowzero=0)
        weight = net.param("weight", 1 + net.normal(0.1, channels).reshape(channels, 1, 1))
        scaled = net.op("Mul", [restored, weight])
        return net.op("Add", [scaled, net.param("bias", net.normal(0.1, channels).reshape(channels, 1, 1))],
                      aten="group_norm")


def crop_to(net: Net, x: str, like: str) -> str:
    """x[:, :, :H, :W] of the skip connection's H and W (a Slice on axes 2 and 3)."""
    height, width = net.shape_of(like)[2:]
    return net.op("Slice", [x, net.const([0, 0]), net.const([height, width]), net.const([2, 3])], aten="slice")


def _double_conv(net: Net, x: str, channels: int, module: str) -> str:
    with net.module(module):
        y = L.relu(net, L.conv_bn(net, x, channels, 3, padding=1, conv_module=f"{module}.0", bn_module=f"{module}.1"))
        return L.relu(net, L.conv(net, y, channels, 3, padding=1, module=f"{module}.3"))


def unet(style="torchscript", seed=0, folder=None):
    """Encoder: double convs and ceil-mode max pools over a 45x37 map; decoder: a ConvTranspose 2x2 s2 and a grouped
    ConvTranspose 3x3 s2 with output_padding, each cropped and concatenated with its skip; GroupNorm, ELU,
    PixelShuffle(2) and a 1x1 head."""
    net = Net("unet", style, seed, (1, 3, 45, 37))
    a = _double_conv(net, net.x, 8, "down1")
    b = _double_conv(net, L.max_pool(net, a, 2, 2, ceil_mode=True, module="pool1"), 16, "down2")     # 23x19
    c = _double_conv(net, L.max_pool(net, b, 2, 2, ceil_mode=True, module="pool2"), 32, "down3")     # 12x10
    up = crop_to(net, conv_transpose(net, c, 16, 2, 2, module="up2"), b)
    b2 = _double_conv(net, L.concat(net, [up, b]), 16, "up2conv")
    up = crop_to(net, conv_transpose(net, b2, 8, 3, 2, padding=1, output_padding=1, groups=2, module="up1"), a)
    a2 = _double_conv(net, L.concat(net, [up, a]), 8, "up1conv")
    with net.module("act"):
        y = net.op("Elu", [group_norm(net, a2, 4, "norm")], aten="elu", alpha=1.0)
    with net.module("shuffle"):
        y = net.op("DepthToSpace", [y], aten="pixel_shuffle", blocksize=2, mode="CRD")
    head = L.conv(net, y, 3, 1, module="head")
    net.output(net.rename(head, "y"))
    return net.finish(folder)
