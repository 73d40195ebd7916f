"""A network in the shape of a segmentation / detection neck, in both of PyTorch's ONNX exporter styles: the
upsampling layers torchvision's DeepLabV3 and LR-ASPP heads, U-Nets and YOLO necks use, as the two exporters write
them (read from torch 2.15's exports of the same modules: the TorchScript exporter at opset 17, the dynamo exporter):

    layer                                    torchscript (opset 17)               dynamo
    nn.Upsample(scale_factor=2, 'nearest')   Resize(x, '', scales [1, 1, 2, 2]),  the same, with every Resize
                                             mode nearest, asymmetric, floor      attribute written out
                                                                                  (antialias 0, exclude_outside
                                                                                  0, keep_aspect_ratio_policy
                                                                                  stretch, extrapolation 0)
    nn.Upsample(2, 'bilinear',               Resize(x, '', scales), mode linear,  the same, attributes written out
                align_corners=True)          align_corners
    F.interpolate(x, size=(h, w),            Resize(x, '', '', sizes) with sizes  Resize(x, '', '', sizes) with
                  'bilinear')                = Concat(Slice(Shape(x), 0, 2),      sizes a constant [1, C, h, w]
                                             [h, w]), mode linear, half_pixel
    F.interpolate(x, size=t.shape[-2:])      the same, [h, w] = Cast(Concat(      the same
                                             Unsqueeze(Gather(Shape(t), 2)),
                                             Unsqueeze(Gather(Shape(t), 3))))
    SiLU                                     Sigmoid, Mul, both styles

The network: a stem and a max pool over an odd 45x37 map, a YOLO SPPF block (MaxPool2d(5, 1, 2) three times, SiLU),
a DeepLab ASPP pooling branch (global average, 1x1 conv, bilinear back to the map's size), a nearest 2x upsample
cropped to the stem's 23x19 and concatenated with it, a bilinear align_corners 2x upsample, and the head
interpolated bilinearly to the input's 45x37.

The dynamo style's sizes are constants with the batch of 1 the model was traced with, so it runs with that batch
only (as a real static export does).
"""

from __future__ import annotations

import numpy as np
import onnx

from tests.networks import layers as L
from tests.networks.builder import Net
from tests.networks.unet import crop_to

ATEN = {"nearest": "upsample_nearest2d", "linear": "upsample_bilinear2d"}


def interpolate(net: Net, x: str, mode: str, *, scale: float | None = None, size: tuple[int, int] | str | None = None,
                align_corners: bool = False) -> str:
    """F.interpolate / nn.Upsample: by `scale` (a scales constant) or to `size` (sizes: (h, w), or the name of a
    tensor whose last two dims it takes)."""
    if mode == "nearest":
        transform = "asymmetric"
    else:
        transform = "align_corners" if align_corners else "half_pixel"
    attributes = dict(coordinate_transformation_mode=transform, cubic_coeff_a=-0.75, mode=mode, nearest_mode="floor")
    if net.dynamo:
        attributes.update(antialias=0, exclude_outside=0, extrapolation_value=0.0, keep_aspect_ratio_policy="stretch")
    if scale is not None:
        inputs = [x, "", net.const([1.0, 1.0, scale, scale], np.float32)]
    elif net.dynamo:
        spatial = net.shape_of(size)[2:] if isinstance(size, str) else size
        inputs = [x, "", "", net.const([*net.shape_of(x)[:2], *spatial])]
    else:
        leading = net.op("Slice", [net.op("Shape", [x]), net.const([0]), net.const([2]), net.const([0])])
        inputs = [x, "", "", net.op("Concat", [leading, _spatial_size(net, size)], axis=0)]
    return net.op("Resize", inputs, aten=ATEN[mode], **attributes)


def _spatial_size(net: Net, size) -> str:
    """TorchScript's [h, w]: a constant, or, for a size read from a tensor (x.shape[-2:], as torchvision's
    segmentation models give it), Cast(Concat(Unsqueeze(Gather(Shape(t), 2)), Unsqueeze(Gather(Shape(t), 3))))."""
    if not isinstance(size, str):
        return net.const(list(size))
    dims = [net.op("Unsqueeze", [net.op("Gather", [net.op("Shape", [size]), net.const(axis)], axis=0),
                                 net.const([0])]) for axis in (2, 3)]
    return net.op("Cast", [net.op("Concat", dims, axis=0)], to=onnx.TensorProto.INT64)


def silu(net: Net, x: str) -> str:
    return L.mul(net, x, net.op("Sigmoid", [x]))


def _conv_silu(net: Net, x: str, channels: int, module: str) -> str:
    with net.module(module):
        return silu(net, L.conv_bn(net, x, channels, 1, conv_module="conv", bn_module="bn"))


def _sppf(net: Net, x: str, channels: int) -> str:
    """YOLOv5's SPPF: a 1x1 conv, MaxPool2d(5, 1, 2) three times in a row, Concat of all four, a 1x1 conv."""
    with net.module("sppf"):
        y = _conv_silu(net, x, channels // 2, "cv1")
        pooled = [y]
        for _ in range(3):
            pooled.append(L.max_pool(net, pooled[-1], 5, 1, 2, module="m"))
        return _conv_silu(net, L.concat(net, pooled), channels, "cv2")


def _aspp_pooling(net: Net, x: str, channels: int) -> str:
    """torchvision's ASPPPooling: AdaptiveAvgPool2d(1), 1x1 conv, BatchNorm, ReLU, bilinear back to x's size."""
    with net.module("aspp_pool"):
        pooled = L.adaptive_avg_pool(net, x, module="0")
        y = L.relu(net, L.conv_bn(net, pooled, channels, 1, conv_module="1", bn_module="2"), module="3")
        return interpolate(net, y, "linear", size=net.shape_of(x)[2:])


def segmentation(style="torchscript", seed=0, folder=None):
    """Stem 45x37 -> 23x19, max pool -> 12x10, SPPF and ASPP pooling, nearest 2x cropped back to 23x19 and
    concatenated with the stem, bilinear align_corners 2x (46x38), a 1x1 head, bilinear to the input's 45x37."""
    net = Net("segmentation", style, seed, (1, 3, 45, 37))
    stem = L.relu(net, L.conv_bn(net, net.x, 8, 3, 2, 1, conv_module="stem.0", bn_module="stem.1"), module="stem.2")
    y = L.max_pool(net, stem, 3, 2, 1, module="pool")
    y = L.relu(net, L.conv(net, y, 16, 3, padding=1, module="layer1"))
    y = L.concat(net, [_sppf(net, y, 16), _aspp_pooling(net, y, 8)])
    y = _conv_silu(net, y, 8, "project")
    with net.module("up1"):
        up = crop_to(net, interpolate(net, y, "nearest", scale=2.0), stem)
    y = L.relu(net, L.conv(net, L.concat(net, [up, stem]), 8, 3, padding=1, module="fuse"))
    with net.module("up2"):
        y = interpolate(net, y, "linear", scale=2.0, align_corners=True)
    head = L.conv(net, y, 4, 1, module="head")
    net.output(net.rename(interpolate(net, head, "linear", size=net.x), "y"))
    return net.finish(folder)
