"""Export the building blocks of torchvision's classifiers with PyTorch's own exporters, and record PyTorch's outputs.

    python tests/networks/data/pytorch_blocks/export.py     # needs torch and torchvision (not poolir dependencies)

Each block is torchvision's own module (ResNet's BasicBlock and Bottleneck, GoogLeNet's Inception, SqueezeNet's Fire,
MobileNetV3's InvertedResidual, ShuffleNetV2's unit, DenseNet's dense block and transition, EfficientNet's MBConv and
FusedMBConv, RegNetY's block, ConvNeXt's CNBlock, Inception-v3's InceptionA and InceptionC branches) with a few channels and a
small map, inside the stem and head its network puts around it (ceil-mode pools, adaptive pooling, Flatten, Dropout,
Linear), plus AlexNet's head and nn.LocalResponseNorm. BatchNorm statistics are drawn at random, so that folding them
matters. Writes, beside this file, `<block>.npz` (input `x`, PyTorch's output `y`), `<block>_<exporter>.onnx` for every
exporter that accepts the block, and `<block>_openvino.xml/.bin/.npz` (OpenVINO's PyTorch frontend and OpenVINO's
outputs on that IR), for tests/networks/test_pytorch_blocks.py.

Exporters: `ts<opset>` is the TorchScript exporter (torch.onnx.export(dynamo=False)) at opsets 7, 9, 11, 13 and 17,
where it writes each op in that opset's form (HardSwish below 14 as HardSigmoid and Mul, LayerNorm below 17 as
ReduceMean, Sub, Pow and Sqrt, Squeeze and Unsqueeze axes as attributes below 13); `ts11_kiai` is opset 11 with
keep_initializers_as_inputs=True (every weight also a graph input, as IR version 3 files have them); `dynamo` is
torch.onnx.export(dynamo=True), opset 18; `ts17_functions` is opset 17 with export_modules_as_functions=True (every
module class a model-local ONNX function, the graph one call). An exporter that refuses a block at an opset is
skipped (printed). Made with torch 2.15.0, torchvision 0.29.2, onnxscript 0.7.2 and OpenVINO 2026.4.1; the
`ts17_functions` exports with torch 2.13.0 and torchvision 0.28.0, whose outputs for these blocks are the stored ones
bit for bit.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
from torchvision.models import convnext, densenet, efficientnet, inception, mobilenetv3, regnet, resnet
from torchvision.models import shufflenetv2, squeezenet

googlenet = importlib.import_module("torchvision.models.googlenet")  # the package's `googlenet` is the function

HERE = Path(__file__).parent
_POOLING = HERE.parents[2] / "converter" / "data" / "pytorch_exports" / "export.py"
_spec = importlib.util.spec_from_file_location("pytorch_pooling_export", _POOLING)
pooling_export = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pooling_export)

EXPORTERS = ("ts7", "ts9", "ts11", "ts11_kiai", "ts13", "ts17", "dynamo", "ts17_functions")
OPTIONS = {"ts11_kiai": {"keep_initializers_as_inputs": True}, "ts17_functions": {"export_modules_as_functions": True}}
BN = functools.partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)


def _head(channels: int, classes: int = 10) -> nn.Sequential:
    return nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(1), nn.Dropout(0.2), nn.Linear(channels, classes))


def _stem(channels: int, stride: int = 2) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(3, channels, 3, stride, 1, bias=False), nn.BatchNorm2d(channels), nn.ReLU(True))


class _InceptionV3Style(nn.Module):
    """Inception-v3's InceptionA and InceptionC branches (torchvision's BasicConv2d, its 3x3 average pool that counts
    the padding, its 1x7 and 7x1 convolutions) with a few channels: torchvision's own modules fix 64 to 192."""

    def __init__(self, channels: int):
        super().__init__()
        conv = inception.BasicConv2d
        self.branch1x1 = conv(channels, 8, kernel_size=1)
        self.branch5x5 = nn.Sequential(conv(channels, 6, kernel_size=1), conv(6, 8, kernel_size=5, padding=2))
        self.branch7x7 = nn.Sequential(conv(channels, 6, kernel_size=1), conv(6, 6, kernel_size=(1, 7), padding=(0, 3)),
                                       conv(6, 8, kernel_size=(7, 1), padding=(3, 0)))
        self.branch_pool = conv(channels, 8, kernel_size=1)

    def forward(self, x):
        pooled = nn.functional.avg_pool2d(x, kernel_size=3, stride=1, padding=1)
        return torch.cat([self.branch1x1(x), self.branch5x5(x), self.branch7x7(x), self.branch_pool(pooled)], 1)


def _blocks() -> dict[str, tuple[nn.Module, tuple[int, ...]]]:
    mbconv = efficientnet.MBConvConfig(4, 5, 2, 16, 24, 1)
    fused = efficientnet.FusedMBConvConfig(4, 3, 2, 16, 24, 1)
    return {
        "resnet_basic": (nn.Sequential(
            _stem(16), nn.MaxPool2d(3, 2, 1),
            resnet.BasicBlock(16, 32, 2, nn.Sequential(nn.Conv2d(16, 32, 1, 2, bias=False), nn.BatchNorm2d(32))),
            _head(32)), (1, 3, 32, 32)),
        "resnet_bottleneck": (nn.Sequential(_stem(32), resnet.Bottleneck(32, 8), _head(32)), (1, 3, 24, 24)),
        "googlenet_inception": (nn.Sequential(
            _stem(16), nn.MaxPool2d(3, 2, ceil_mode=True), googlenet.Inception(16, 8, 8, 12, 4, 6, 6),
            nn.MaxPool2d(3, 2, ceil_mode=True), _head(32)), (1, 3, 30, 30)),
        "squeezenet_fire": (nn.Sequential(
            nn.Conv2d(3, 16, 3, 2), nn.ReLU(True), nn.MaxPool2d(3, 2, ceil_mode=True), squeezenet.Fire(16, 4, 8, 8),
            nn.Dropout(0.5), nn.Conv2d(16, 10, 1), nn.ReLU(True), nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(1)),
            (1, 3, 33, 33)),
        "mobilenet_v3_blocks": (nn.Sequential(
            nn.Conv2d(3, 16, 3, 2, 1, bias=False), BN(16), nn.Hardswish(),
            mobilenetv3.InvertedResidual(mobilenetv3.InvertedResidualConfig(16, 3, 32, 24, True, "HS", 2, 1, 1.0), BN),
            mobilenetv3.InvertedResidual(mobilenetv3.InvertedResidualConfig(24, 5, 48, 24, False, "RE", 1, 1, 1.0), BN),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(1), nn.Linear(24, 32), nn.Hardswish(), nn.Dropout(0.2),
            nn.Linear(32, 10)), (1, 3, 32, 32)),
        "shufflenet_units": (nn.Sequential(
            _stem(16), nn.MaxPool2d(3, 2, 1), shufflenetv2.InvertedResidual(16, 32, 2),
            shufflenetv2.InvertedResidual(32, 32, 1), _head(32)), (1, 3, 40, 40)),
        "densenet_transition": (nn.Sequential(
            _stem(16), densenet._DenseBlock(2, 16, 2, 8, 0.0), densenet._Transition(32, 16), nn.ReLU(),
            _head(16)), (1, 3, 32, 32)),
        "efficientnet_mbconv": (nn.Sequential(
            nn.Conv2d(3, 16, 3, 2, 1, bias=False), BN(16), nn.SiLU(), efficientnet.MBConv(mbconv, 0.0, BN),
            _head(24)), (1, 3, 32, 32)),
        "efficientnet_fused_mbconv": (nn.Sequential(
            nn.Conv2d(3, 16, 3, 2, 1, bias=False), BN(16), nn.SiLU(), efficientnet.FusedMBConv(fused, 0.0, BN),
            _head(24)), (1, 3, 32, 32)),
        "regnet_y_block": (nn.Sequential(
            _stem(16), regnet.ResBottleneckBlock(16, 32, 2, nn.BatchNorm2d, nn.ReLU, 8, 1.0, 0.25), _head(32)),
            (1, 3, 32, 32)),
        "convnext_block": (nn.Sequential(
            nn.Conv2d(3, 16, 4, 4), convnext.LayerNorm2d(16, eps=1e-6), convnext.CNBlock(16, 0.5, 0.0),
            nn.AdaptiveAvgPool2d(1), convnext.LayerNorm2d(16, eps=1e-6), nn.Flatten(1), nn.Linear(16, 10)),
            (1, 3, 32, 32)),
        "inception_v3_style": (nn.Sequential(_stem(16), _InceptionV3Style(16), nn.MaxPool2d(3, 2), _head(32)),
                               (1, 3, 35, 35)),
        "alexnet_head": (nn.Sequential(
            nn.Conv2d(3, 16, 11, 4, 2), nn.ReLU(True), nn.MaxPool2d(3, 2), nn.AdaptiveAvgPool2d((3, 3)),
            nn.Flatten(1), nn.Dropout(0.5), nn.Linear(144, 32), nn.ReLU(True), nn.Linear(32, 10)), (1, 3, 59, 59)),
        "local_response_norm": (nn.Sequential(
            nn.Conv2d(3, 12, 3, 1, 1), nn.ReLU(True), nn.LocalResponseNorm(5, 1e-2, 0.75, 2.0),
            nn.MaxPool2d(3, 2, ceil_mode=True)), (1, 3, 20, 20)),
    }


def _random_statistics(module: nn.Module) -> nn.Module:
    generator = torch.Generator().manual_seed(1)
    for layer in module.modules():
        if isinstance(layer, nn.BatchNorm2d):
            shape = layer.running_mean.shape
            layer.running_mean.copy_(torch.rand(shape, generator=generator) - 0.5)
            layer.running_var.copy_(torch.rand(shape, generator=generator) * 1.5 + 0.5)
            layer.weight.data.copy_(torch.rand(shape, generator=generator) + 0.5)
            layer.bias.data.copy_(torch.rand(shape, generator=generator) * 0.4 - 0.2)
    return module.eval()


def main() -> None:
    torch.manual_seed(0)
    for number, (name, (module, shape)) in enumerate(_blocks().items()):
        module = _random_statistics(module)
        x = torch.randn(shape, generator=torch.Generator().manual_seed(number))
        with torch.no_grad():
            np.savez(HERE / f"{name}.npz", x=x.numpy(), y=module(x).numpy())
            for exporter in EXPORTERS:
                try:
                    pooling_export.export(name, module, x, exporter, HERE, **OPTIONS.get(exporter, {}))
                except Exception as error:  # an op this opset cannot express: no such export exists
                    print(f"{name}: {exporter} refused: {str(error).splitlines()[0][:160]}")
            pooling_export.openvino_ir(name, module, x, HERE)


if __name__ == "__main__":
    main()
