"""Export the pooling modules of PyTorch with PyTorch's own exporters, and record PyTorch's own outputs.

    python tests/converter/data/pytorch_exports/export.py     # needs torch (not a poolir dependency)

Writes, beside this file, `<module>.npz` (the input `x` and PyTorch's outputs `y`, and `indices` for
return_indices) and `<module>_<exporter>.onnx` for each exporter (weights inside; every module is a bare pooling
module), for tests/converter/test_pytorch_exports.py. Exporters: `ts<opset>` is torch.onnx.export(dynamo=False) (the
TorchScript exporter) at that opset, `dynamo` is torch.onnx.export(dynamo=True) at opset 18. Made with torch
2.15.0 and onnxscript 0.7.2.

Each module also goes through OpenVINO's PyTorch frontend (openvino.convert_model(module, example_input=x), then
save_model; OpenVINO 2026.4.1), which writes MaxPool-14, AvgPool-14, AdaptiveAvgPool/AdaptiveMaxPool-8, and Lp
pooling as Sign/Abs/Power/AvgPool/ReLU: `<module>_openvino.xml` + `.bin`, and `<module>_openvino.npz` with
OpenVINO's own outputs on its IR (`y`, and `indices`).

Below opset 10 AveragePool and MaxPool have no ceil_mode: the TorchScript exporter then emulates ceil_mode=True
with a larger pad_end (for MaxPool, and for AvgPool with count_include_pad=False), or, for AvgPool with
count_include_pad=True, writes a Pad and a floor AveragePool that drops the last window PyTorch keeps; that
export is wrong and is not a case here. Neither is AvgPool2d(divisor_override=...): both exporters drop it and
write a plain AveragePool (ONNX has no such attribute), so the model divides by 9 where PyTorch divides by 5.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = Path(__file__).parent
MAP = (1, 4, 24, 18)


class Functional(nn.Module):
    def __init__(self, function):
        super().__init__()
        self.function = function

    def forward(self, x):
        return self.function(x)


CASES = {
    # name: (module, input shape, exporters)
    "avg_ceil_exclude_pad": (nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False), MAP,
                             ("ts9", "ts10", "ts17", "dynamo")),
    "avg_ceil_include_pad": (nn.AvgPool2d(3, 2, 1, ceil_mode=True), MAP, ("ts10", "ts17", "dynamo")),
    "avg_ceil_include_pad_odd": (nn.AvgPool2d(3, 2, 1, ceil_mode=True), (1, 4, 23, 17), ("ts17", "dynamo")),
    "max_ceil": (nn.MaxPool2d(3, 2, 1, ceil_mode=True), MAP, ("ts9", "ts17", "dynamo")),
    "max_ceil_k2_odd": (nn.MaxPool2d(2, 2, 1, ceil_mode=True), (1, 4, 23, 17), ("ts9", "ts17", "dynamo")),
    "max_dilated": (nn.MaxPool2d(3, 1, 1, dilation=2), MAP, ("ts10", "dynamo")),
    "max_indices": (nn.MaxPool2d(3, 2, 1, ceil_mode=True, return_indices=True), (1, 4, 23, 17),
                    ("ts9", "ts17", "dynamo")),
    "lp_p2_ceil": (nn.LPPool2d(2, 3, 2, ceil_mode=True), MAP, ("ts9", "ts17", "dynamo")),
    "lp_p1_5": (nn.LPPool2d(1.5, 2), MAP, ("ts17", "dynamo")),
    "adaptive_avg_divisible": (nn.AdaptiveAvgPool2d((4, 2)), MAP, ("ts9", "ts17", "dynamo")),
    "adaptive_avg_not_divisible": (nn.AdaptiveAvgPool2d((5, 4)), MAP, ("dynamo",)),
    "adaptive_max_divisible": (nn.AdaptiveMaxPool2d((3, 6)), MAP, ("ts9", "ts17", "dynamo")),
    "global_avg": (nn.AdaptiveAvgPool2d(1), MAP, ("ts17", "dynamo")),
    "max_1d_ceil": (Functional(lambda x: F.max_pool1d(x, 5, 3, 2, ceil_mode=True)), (1, 3, 40), ("ts17", "dynamo")),
    "avg_1d_ceil_exclude_pad": (Functional(lambda x: F.avg_pool1d(x, 4, 2, 1, ceil_mode=True,
                                                                  count_include_pad=False)), (1, 3, 39),
                                ("ts9", "ts17", "dynamo")),
    "max_3d_ceil": (nn.MaxPool3d(3, 2, 1, ceil_mode=True), (1, 2, 8, 9, 10), ("ts17", "dynamo")),
    "avg_3d_ceil": (nn.AvgPool3d(2, 2, ceil_mode=True), (1, 2, 7, 8, 9), ("ts17", "dynamo")),
}


def export(name: str, module: nn.Module, x: torch.Tensor, exporter: str, folder: Path = HERE, **options) -> None:
    """`folder`/<name>_<exporter>.onnx; `options` go to the TorchScript exporter (keep_initializers_as_inputs...)."""
    outputs = ["y", "indices"] if getattr(module, "return_indices", False) else ["y"]
    path = folder / f"{name}_{exporter}.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "dynamo":
            program = torch.onnx.export(module, (x,), dynamo=True, input_names=["x"], output_names=outputs)
            program.save(str(path))
        else:
            torch.onnx.export(module, (x,), str(path), dynamo=False, opset_version=int(exporter[2:].split("_")[0]),
                              input_names=["x"], output_names=outputs, **options)


def main() -> None:
    for number, (name, (module, shape, exporters)) in enumerate(CASES.items()):
        x = torch.randn(shape, generator=torch.Generator().manual_seed(number))
        result = module.eval()(x)
        arrays = {"x": x.numpy()}
        if isinstance(result, tuple):
            arrays.update(y=result[0].numpy(), indices=result[1].numpy())
        else:
            arrays["y"] = result.numpy()
        np.savez(HERE / f"{name}.npz", **arrays)
        for exporter in exporters:
            export(name, module, x, exporter)
        openvino_ir(name, module, x)


def openvino_ir(name: str, module: nn.Module, x: torch.Tensor, folder: Path = HERE) -> None:
    import openvino as ov

    xml = folder / f"{name}_openvino.xml"
    ov.save_model(ov.convert_model(module, example_input=x), xml, compress_to_fp16=False)
    compiled = ov.Core().compile_model(xml, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    results = compiled({0: x.numpy()})
    outputs = {"y": results[compiled.outputs[0]]}
    if len(compiled.outputs) > 1:
        outputs["indices"] = results[compiled.outputs[1]]
    np.savez(folder / f"{name}_openvino.npz", **outputs)


if __name__ == "__main__":
    main()
