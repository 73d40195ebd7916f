"""PyTorch's own pooling exports, judged by PyTorch's own outputs (data/pytorch_exports: export.py made them with
torch 2.15, both exporters, opsets 9 to 18).

Every case goes through poolir on every path, and each path must give what PyTorch computed:

    poolir runs the ONNX; poolir's IR of it run by OpenVINO and by poolir; that IR converted back to ONNX and run
    by onnxruntime (when onnxruntime can run it: it refuses a pad at least the kernel, which the TorchScript
    exporter writes below opset 10 to emulate ceil_mode).

OpenVINO's own IR of each export (convert_model + save_model) must run the same in poolir as in OpenVINO; it is
judged against OpenVINO, not PyTorch, because OpenVINO's ONNX frontend computes something else for an
AvgPool2d(ceil_mode=True, count_include_pad=True) whose last window hangs past the padding (README: "OpenVINO's
ONNX frontend").

The IRs OpenVINO's PyTorch frontend writes for the same modules (`<case>_openvino.xml`: MaxPool-14, AvgPool-14,
AdaptiveAvgPool-8, AdaptiveMaxPool-8, Lp pooling as Sign/Abs/Power/AvgPool/ReLU) must run in poolir, and converted
to ONNX in onnxruntime, as OpenVINO ran them when export.py wrote them; where OpenVINO's numbers are PyTorch's,
poolir's must be too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from poolir import converter, ir, runtime
from tests.networks.peers import openvino_ir_of, run_onnxruntime, run_openvino_xml
from tests.networks.six_paths import compare, ir_outputs_by_onnx_name

DATA = Path(__file__).parent / "data" / "pytorch_exports"
CASES = sorted(path.stem for path in DATA.glob("*.onnx"))
OPENVINO_IRS = sorted(path.stem for path in DATA.glob("*_openvino.xml"))
# OpenVINO's PyTorch frontend divides the last window of AvgPool2d(3, 2, 1, ceil_mode=True) on an even map, which
# hangs past the padding, by 9 instead of PyTorch's 6 (as its ONNX frontend does: torchvision.OPENVINO_DIVERGENT).
OPENVINO_DIFFERS_FROM_PYTORCH = {"avg_ceil_include_pad_openvino"}


def _pytorch(module: str) -> tuple[dict, dict]:
    """The feeds and PyTorch's outputs of one module (every export of it shares them)."""
    arrays = dict(np.load(DATA / f"{module}.npz"))
    return {"x": arrays.pop("x")}, arrays


def _case(name: str):
    return (onnx.load(DATA / f"{name}.onnx"), *_pytorch(name.rsplit("_", 1)[0]))


def _exact_indices(actual: dict, expected: dict) -> None:
    if "indices" in expected:
        np.testing.assert_array_equal(actual["indices"], expected["indices"])


def test_every_exporter_and_opset_is_here():
    assert len(CASES) == 43
    assert {name.rsplit("_", 1)[1] for name in CASES} == {"ts9", "ts10", "ts17", "dynamo"}


@pytest.mark.parametrize("name", CASES)
def test_poolir_gives_pytorchs_numbers_on_every_path(name, tmp_path):
    model, feeds, expected = _case(name)
    by_poolir = runtime.run(model, feeds)
    assert compare(by_poolir, expected).ok, f"poolir on the ONNX: {compare(by_poolir, expected).detail}"
    _exact_indices(by_poolir, expected)

    xml = tmp_path / "poolir.xml"
    ir.write_model(converter.onnx_to_ir(model), xml)
    names = list(expected)
    by_openvino = run_openvino_xml(xml, feeds, names)
    assert compare(by_openvino, expected).ok, f"poolir's IR on OpenVINO: {compare(by_openvino, expected).detail}"
    _exact_indices(by_openvino, expected)
    read = ir.read_model(xml)
    by_poolir = ir_outputs_by_onnx_name(read, runtime.run(read, feeds), names)
    assert compare(by_poolir, expected).ok, f"poolir's IR on poolir: {compare(by_poolir, expected).detail}"
    _exact_indices(by_poolir, expected)

    back = converter.ir_to_onnx(read)
    try:
        by_onnxruntime = run_onnxruntime(back, feeds)
    except Exception as error:  # onnxruntime refuses a pad >= the kernel, which ONNX and OpenVINO allow
        assert "Pad should be smaller than kernel" in str(error), error
        return
    assert compare(by_onnxruntime, expected).ok, f"IR -> ONNX on onnxruntime: {compare(by_onnxruntime, expected)}"
    _exact_indices(by_onnxruntime, expected)


@pytest.mark.parametrize("name", CASES)
def test_openvinos_own_ir_runs_in_poolir_as_in_openvino(name, tmp_path):
    model, feeds, expected = _case(name)
    try:
        xml = openvino_ir_of(model, tmp_path, compress_to_fp16=False, name="openvino")
    except Exception as error:  # OpenVINO's frontend refuses an exclude-pad pad >= the kernel (opset 9 exports)
        assert "entirely in the padding area" in str(error), error
        return
    names = list(expected)
    reference = run_openvino_xml(xml, feeds, names)
    read = ir.read_model(xml)
    outcome = compare(ir_outputs_by_onnx_name(read, runtime.run(read, feeds), names), reference)
    assert outcome.ok, outcome.detail


def test_every_module_has_openvinos_pytorch_frontend_ir():
    assert len(OPENVINO_IRS) == 17


@pytest.mark.parametrize("name", OPENVINO_IRS)
def test_openvinos_pytorch_frontend_ir_runs_in_poolir_as_in_openvino(name):
    feeds, pytorch = _pytorch(name.removesuffix("_openvino"))
    openvino = dict(np.load(DATA / f"{name}.npz"))
    model = ir.read_model(DATA / f"{name}.xml")
    (parameter,) = [layer.name for layer in model.layers if layer.type == "Parameter"]
    by_poolir = dict(zip(openvino, runtime.run(model, {parameter: feeds["x"]}).values()))
    assert compare(by_poolir, openvino).ok, compare(by_poolir, openvino).detail
    _exact_indices(by_poolir, openvino)
    back = converter.ir_to_onnx(model)
    by_onnxruntime = dict(zip(openvino, run_onnxruntime(back, {back.graph.input[0].name: feeds["x"]}).values()))
    assert compare(by_onnxruntime, openvino).ok, compare(by_onnxruntime, openvino).detail
    _exact_indices(by_onnxruntime, openvino)
    assert compare(openvino, pytorch).ok == (name not in OPENVINO_DIFFERS_FROM_PYTORCH)
