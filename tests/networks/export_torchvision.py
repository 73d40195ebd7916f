"""Export real torchvision classifiers with PyTorch's two ONNX exporters, for `paths_table --onnx`:

    python -m tests.networks.export_torchvision DIR [NAME ...]      # needs torch and torchvision

Writes `<name>_ts.onnx` (torch.onnx.export(dynamo=False), opset 17: the TorchScript exporter) and
`<name>_dynamo.onnx` (+ `.onnx.data`; dynamo=True, opset 18: torch.export) for each model, at 1x3x224x224
(Inception-v3: 299x299), in eval mode. The weights are torchvision's random initialisation (no download); the
BatchNorm running statistics and affine parameters are drawn too, so that folding them changes the numbers.
torch is not a poolir dependency: this is a developer's tool, not run by the test suite. Then

    python -m tests.networks.paths_table --onnx DIR

prints every path of six_paths.py for every file; so does `poolir verify DIR/*.onnx --peer onnxruntime --peer
openvino`, the way a user checks a model.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

NETWORKS = ("alexnet", "vgg11_bn", "resnet18", "resnet50", "resnext50_32x4d", "wide_resnet50_2", "googlenet",
            "inception_v3", "squeezenet1_0", "squeezenet1_1", "densenet121", "mobilenet_v2", "mobilenet_v3_small",
            "mobilenet_v3_large", "mnasnet0_5", "shufflenet_v2_x0_5", "efficientnet_b0", "regnet_x_400mf",
            "regnet_y_400mf", "convnext_tiny")


def export(name: str, folder: Path) -> None:
    import torch
    import torchvision

    extra = {"aux_logits": False, "init_weights": True} if name in ("googlenet", "inception_v3") else {}
    model = getattr(torchvision.models, name)(weights=None, **extra).eval()
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.copy_(torch.randn(module.running_mean.shape, generator=generator) * 0.1)
                module.running_var.copy_(torch.rand(module.running_var.shape, generator=generator) + 0.5)
                module.weight.copy_(torch.rand(module.weight.shape, generator=generator) + 0.5)
                module.bias.copy_(torch.randn(module.bias.shape, generator=generator) * 0.1)
    size = 299 if name == "inception_v3" else 224
    x = torch.randn(1, 3, size, size, generator=generator)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), str(folder / f"{name}_ts.onnx"), dynamo=False, opset_version=17,
                          input_names=["x"], output_names=["y"])
        torch.onnx.export(model, (x,), dynamo=True, input_names=["x"], output_names=["y"]).save(
            str(folder / f"{name}_dynamo.onnx"), external_data=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.networks.export_torchvision",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("names", nargs="*", help=f"default: {', '.join(NETWORKS)}")
    arguments = parser.parse_args(argv)
    arguments.folder.mkdir(parents=True, exist_ok=True)
    for name in arguments.names or NETWORKS:
        export(name, arguments.folder)
        print("exported", name, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
