"""A MobileNetV3-Large-shaped network at 1x3x224x224, as PyTorch's TorchScript exporter writes torchvision's
mobilenet_v3_large (BatchNorms folded into the convolutions): the full layer table of the paper and
torchvision (16 bneck blocks: expansion, kernel 3 or 5, squeeze-excitation, ReLU or Hardswish, stride),
the 960-channel last conv, global average pool, and the classifier (Linear 1280, Hardswish, Dropout,
Linear 1000). Seeded He-normal weights; built with the test networks' layer helpers (tests/networks).
"""

from __future__ import annotations

from tests.networks import layers as L
from tests.networks.builder import Net
from tests.networks.torchvision import _conv_norm_act, _finish, _squeeze_excitation

# (input channels, kernel, expanded channels, output channels, squeeze-excitation, activation, stride)
BNECK = [
    (16, 3, 16, 16, False, "RE", 1), (16, 3, 64, 24, False, "RE", 2), (24, 3, 72, 24, False, "RE", 1),
    (24, 5, 72, 40, True, "RE", 2), (40, 5, 120, 40, True, "RE", 1), (40, 5, 120, 40, True, "RE", 1),
    (40, 3, 240, 80, False, "HS", 2), (80, 3, 200, 80, False, "HS", 1), (80, 3, 184, 80, False, "HS", 1),
    (80, 3, 184, 80, False, "HS", 1), (80, 3, 480, 112, True, "HS", 1), (112, 3, 672, 112, True, "HS", 1),
    (112, 5, 672, 160, True, "HS", 2), (160, 5, 960, 160, True, "HS", 1), (160, 5, 960, 160, True, "HS", 1),
]


def _make_divisible(value: float, divisor: int = 8) -> int:
    new = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * value else new


def mobilenet_v3_large(style: str = "torchscript", seed: int = 0, folder=None, size: int = 224):
    net = Net("mobilenet_v3_large", style, seed, (1, 3, size, size))
    with net.module("features"):
        y = _conv_norm_act(net, net.x, 16, 3, 2, L.hardswish, "features.0")
        for index, (cin, kernel, expanded, cout, se, act, stride) in enumerate(BNECK, start=1):
            activation = L.relu if act == "RE" else L.hardswish
            with net.module(f"features.{index}", "block"):
                x = y
                part = 0
                if expanded != cin:
                    y = _conv_norm_act(net, y, expanded, 1, 1, activation, f"block.{part}")
                    part += 1
                y = _conv_norm_act(net, y, expanded, kernel, stride, activation, f"block.{part}", groups=expanded)
                part += 1
                if se:
                    y = _squeeze_excitation(net, y, _make_divisible(expanded // 4), f"block.{part}")
                    part += 1
                y = _conv_norm_act(net, y, cout, 1, 1, None, f"block.{part}")
            if stride == 1 and cin == cout:
                y = L.add(net, y, x)
        y = _conv_norm_act(net, y, 960, 1, 1, L.hardswish, f"features.{len(BNECK) + 1}")
    y = L.flatten(net, L.adaptive_avg_pool(net, y))
    with net.module("classifier"):
        y = L.hardswish(net, L.linear(net, y, 1280, module="classifier.0"), module="classifier.1")
        y = L.dropout(net, y, 0.2, module="classifier.2")
        y = L.linear(net, y, 1000, module="classifier.3", name="logits")
    return _finish(net, y, folder)
