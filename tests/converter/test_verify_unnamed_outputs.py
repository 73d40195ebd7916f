"""`poolir verify --peer openvino` on an IR whose outputs carry no tensor names.

OpenVINO's PyTorch frontend (ov.convert_model(torch_module) + ov.save_model) writes a network's outputs without
tensor names: the port feeding each Result has no `names` attribute (seen on every torchvision network and on a
MaxPool2d(return_indices=True) module, OpenVINO 2026.4). poolir returns such an output under its Result layer's
name, and so must the OpenVINO peer: it used to key them "0", "1", ..., so verify reported every such IR as a
MISMATCH ("output missing") although the numbers agreed. Expected values: OpenVINO itself and hand-worked maxima.
"""

from __future__ import annotations

import numpy as np
from click.testing import CliRunner

from poolir import ir
from poolir.converter.cli import main
from poolir.converter.peers import openvino_run_xml
from poolir.ir.builder import GraphBuilder


def _unnamed_outputs_ir(tmp_path):
    """x [1,1,4,4] -> MaxPool-8 2x2/2 with indices -> two Results, their ports unnamed (as OpenVINO writes them)."""
    builder = GraphBuilder("unnamed")
    x = builder.parameter("x", "f32", (1, 1, 4, 4))
    refs = builder.add("MaxPool", "opset8", [x], attrs={
        "kernel": (2, 2), "strides": (2, 2), "pads_begin": (0, 0), "pads_end": (0, 0), "axis": 0,
        "index_element_type": "i64"}, name="pool")
    for ref in refs:
        builder.result(ref)
    model = builder.build()
    pool = next(layer for layer in model.layers if layer.type == "MaxPool")
    assert not any(port.names for port in pool.outputs)
    path = tmp_path / "unnamed.xml"
    ir.write_model(model, path)
    return path, [layer.name for layer in model.layers if layer.type == "Result"]


def test_openvino_peer_keys_unnamed_outputs_by_their_result_layer(tmp_path):
    path, results = _unnamed_outputs_ir(tmp_path)
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    got = openvino_run_xml(path, {"x": x})
    assert list(got) == results
    np.testing.assert_array_equal(got[results[0]], [[[[5, 7], [13, 15]]]])
    np.testing.assert_array_equal(got[results[1]], [[[[5, 7], [13, 15]]]])


def test_verify_with_openvino_passes_an_ir_with_unnamed_outputs(tmp_path):
    path, _ = _unnamed_outputs_ir(tmp_path)
    result = CliRunner().invoke(main, ["verify", str(path), "--peer", "openvino"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "MISMATCH" not in result.output and "all match" in result.output
