"""torchvision's own building blocks as PyTorch's exporters write them, judged by PyTorch's own outputs
(data/pytorch_blocks: export.py made them with torch 2.15 and torchvision 0.29).

Fourteen blocks (ResNet's basic and bottleneck blocks, GoogLeNet's Inception, SqueezeNet's Fire, MobileNetV3's
inverted residuals with squeeze-excitation and HardSwish, ShuffleNetV2's units, DenseNet's dense block and transition,
EfficientNet's MBConv and FusedMBConv with SiLU, RegNetY's grouped block, ConvNeXt's block with LayerNorm and GELU,
Inception-v3's branches, AlexNet's head, LocalResponseNorm), each with its network's stem and head, exported by the
TorchScript exporter at opsets 7, 9, 11 (also with every weight a graph input), 13 and 17 (also with every module a
model-local function) and by torch.export at 18 (some of them refused, see REFUSED and NOT_EXPORTED):

- poolir runs each export and gives PyTorch's numbers;
- every ONNX path (six_paths.onnx_paths: poolir's IR on OpenVINO and on poolir, IR -> ONNX on onnxruntime) and
  OpenVINO's own IR of the export (run by poolir, and converted to ONNX for onnxruntime) agree with their engines;
- the IR OpenVINO's PyTorch frontend writes for each block runs in poolir, and converted to ONNX in onnxruntime, as in
  OpenVINO, and OpenVINO's numbers there are PyTorch's.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest

from poolir import converter, ir, runtime
from poolir.ir.errors import UnsupportedError
from tests.networks.peers import ir_layer_types, openvino_ir_of, run_onnxruntime
from tests.networks.six_paths import compare, onnx_paths, openvino_ir_paths

DATA = Path(__file__).parent / "data" / "pytorch_blocks"
EXPORTS = sorted(path.stem for path in DATA.glob("*.onnx"))
BLOCKS = sorted(path.stem for path in DATA.glob("*.npz") if not path.stem.endswith("_openvino"))
EXPORTERS = ("ts7", "ts9", "ts11", "ts11_kiai", "ts13", "ts17", "dynamo", "ts17_functions")
# export_modules_as_functions refuses blocks whose module instances of one class differ in annotated attributes
# ("Found outstanding annotated attribute"): torchvision's Conv2dNormActivation, used with and without activation.
NOT_EXPORTED = {"mobilenet_v3_blocks_ts17_functions", "efficientnet_mbconv_ts17_functions",
                "regnet_y_block_ts17_functions"}
# The TorchScript exporter writes GELU as Erf at opset 7 too, two opsets before Erf exists: onnx.checker and
# onnxruntime refuse that model ("No Op registered for Erf with domain_version of 7"), and so does poolir, naming the
# opset the operator needs. (OpenVINO's frontend runs it.)
REFUSED = {"convnext_block_ts7": "unsupported operators: Erf (ai.onnx, opset 7; supported from opset 9)"}
# From opset 11 on, the TorchScript exporter writes LocalResponseNorm's squeeze(1) as an If on whether that dim is 1
# (Shape, Gather, Equal: decided by the static shape). poolir runs the If (runtime.onnx_ops.control_flow), and
# converts the branch the folded condition takes. OpenVINO's IR of such an export keeps it as an If-8 layer with two
# bodies; run and convert read it as the body its condition takes (ir.branches).
IF_EXPORTS = {f"local_response_norm_{exporter}" for exporter in ("ts11", "ts11_kiai", "ts13", "ts17", "ts17_functions")}


def _block(name: str) -> str:
    """The block an export is of: its name without the exporter suffix."""
    exporter = max((exporter for exporter in EXPORTERS if name.endswith("_" + exporter)), key=len)
    return name[: -len(exporter) - 1]


def _pytorch(block: str) -> tuple[dict, dict]:
    arrays = np.load(DATA / f"{block}.npz")
    return {"x": arrays["x"]}, {"y": arrays["y"]}


def test_every_block_is_exported_by_every_exporter():
    assert len(BLOCKS) == 14
    assert sorted(EXPORTS) == sorted(f"{block}_{exporter}" for block in BLOCKS for exporter in EXPORTERS
                                     if f"{block}_{exporter}" not in NOT_EXPORTED)


def test_the_if_exports_hold_an_if_and_openvinos_ir_of_them_an_if_8(tmp_path):
    for name in IF_EXPORTS:
        model = runtime.onnx_functions.inline_functions(onnx.load(DATA / f"{name}.onnx"))
        assert "If" in {node.op_type for node in model.graph.node}, name
    xml = openvino_ir_of(DATA / "local_response_norm_ts17.onnx", tmp_path, compress_to_fp16=False)
    assert ir_layer_types(xml)[("If", "opset8")] == 1


def test_the_functions_exports_are_a_call_of_nested_module_functions():
    model = onnx.load(DATA / "resnet_basic_ts17_functions.onnx")
    assert [node.op_type for node in model.graph.node if node.op_type != "Identity"] == ["Sequential.3"]
    assert {"BasicBlock", "Conv2d", "MaxPool2d"} <= {function.name for function in model.functions}
    references = [attribute for function in model.functions for node in function.node
                  for attribute in node.attribute if attribute.ref_attr_name]
    assert references  # attribute values reach the layers through the calls


def test_weights_as_graph_inputs_are_in_the_kiai_exports():
    model = onnx.load(DATA / "resnet_basic_ts11_kiai.onnx")
    initializers = {tensor.name for tensor in model.graph.initializer}
    assert len([value for value in model.graph.input if value.name in initializers]) >= 10


@pytest.mark.parametrize("name", EXPORTS)
def test_poolir_gives_pytorchs_numbers_and_every_path_agrees(name, tmp_path):
    feeds, expected = _pytorch(_block(name))
    model = onnx.load(DATA / f"{name}.onnx")
    if name in REFUSED:
        with pytest.raises(UnsupportedError, match=re.escape(REFUSED[name])):
            runtime.run(model, feeds)
        with pytest.raises(UnsupportedError, match=re.escape(REFUSED[name])):
            converter.onnx_to_ir(model)
        return
    if name.endswith("_functions"):  # the TorchScript exporter leaves output_names unused with functions
        (output,) = model.graph.output
        expected = {output.name: expected["y"]}
    outcome = compare(runtime.run(model, feeds), expected)
    assert outcome.ok, f"poolir on the ONNX against PyTorch: {outcome.detail}"
    outcomes = onnx_paths(model, feeds, tmp_path)
    if not name.endswith("_functions"):  # OpenVINO's ONNX frontend has no rule for model-local functions
        outcomes.update(openvino_ir_paths(model, feeds, tmp_path, compress_to_fp16=False))
    failed = {path: result.cell() for path, result in outcomes.items() if not result.ok}
    assert not failed, failed


@pytest.mark.parametrize("block", BLOCKS)
def test_openvinos_pytorch_frontend_ir_runs_in_poolir_as_in_openvino(block):
    feeds, pytorch = _pytorch(block)
    openvino = {"y": np.load(DATA / f"{block}_openvino.npz")["y"]}
    model = ir.read_model(DATA / f"{block}_openvino.xml")
    (parameter,) = [layer.name for layer in model.layers if layer.type == "Parameter"]
    (by_poolir,) = runtime.run(model, {parameter: feeds["x"]}).values()
    assert compare({"y": by_poolir}, openvino).ok, compare({"y": by_poolir}, openvino).detail
    back = converter.ir_to_onnx(model)
    (by_onnxruntime,) = run_onnxruntime(back, {back.graph.input[0].name: feeds["x"]}).values()
    assert compare({"y": by_onnxruntime}, openvino).ok, compare({"y": by_onnxruntime}, openvino).detail
    assert compare(openvino, pytorch).ok, compare(openvino, pytorch).detail
