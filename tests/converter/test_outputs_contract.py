"""Outputs at the edges (issue 14.4): a graph with no outputs is refused by every command that would produce or
run one; IR v10, which cannot hold output names, is said so when converting and verified by position."""

from __future__ import annotations

import json

import numpy as np
import onnx
import openvino as ov
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper

from poolir import converter, ir
from poolir.converter.cli import main
from poolir.ir.builder import GraphBuilder
from poolir.ir.errors import InvalidModelError
from tests.peers import openvino_core, openvino_run_xml


def _ir_without_result(path):
    builder = GraphBuilder("m")
    x = builder.parameter("x", "f32", (1, 1, 4, 4))
    builder.add("MaxPool", "opset1", [x], name="pool", attrs={
        "kernel": (2, 2), "strides": (2, 2), "pads_begin": (0, 0), "pads_end": (0, 0), "rounding_type": "floor",
        "auto_pad": "explicit"})
    ir.write_model(builder.build(), path)
    return path


def _onnx_pool(path, outputs=("y", "idx")):
    node = helper.make_node("MaxPool", ["x"], ["y", "idx"], name="pool", kernel_shape=[2, 2], strides=[2, 2])
    infos = [helper.make_tensor_value_info(o, TensorProto.FLOAT if o == "y" else TensorProto.INT64, [1, 2, 2, 2])
             for o in outputs]
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                              infos)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)], ir_version=10), path)
    return path


def _cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_openvino_runs_an_ir_without_result_and_returns_nothing(tmp_path):
    # What the refusal below protects from: OpenVINO 2026.4 reads, compiles and runs it, silently.
    path = _ir_without_result(tmp_path / "m.xml")
    assert openvino_run_xml(path, {"x": np.zeros((1, 1, 4, 4), np.float32)}) == {}


def test_ir_without_result_is_refused_by_convert_run_and_verify(tmp_path):
    path = _ir_without_result(tmp_path / "m.xml")
    with pytest.raises(InvalidModelError, match="no Result layer"):
        converter.ir_to_onnx(ir.read_model(path))
    for args in (("convert", path, "-o", tmp_path / "m.onnx"), ("run", path), ("verify", path)):
        result = _cli(*args)
        assert result.exit_code == 2, (args, result.output)
        assert "no Result layer" in result.output
        assert "Traceback" not in result.output
    assert not (tmp_path / "m.onnx").exists()


def test_onnx_without_outputs_is_refused_by_convert_run_and_verify(tmp_path):
    path = _onnx_pool(tmp_path / "m.onnx", outputs=())
    for args in (("convert", path, "-o", tmp_path / "m.xml"), ("run", path), ("verify", path)):
        result = _cli(*args)
        assert result.exit_code == 2, (args, result.output)
        assert "declares no outputs" in result.output
    assert not (tmp_path / "m.xml").exists()


def test_ir_v10_conversion_names_what_openvino_will_call_the_outputs(tmp_path):
    source, xml = _onnx_pool(tmp_path / "m.onnx"), tmp_path / "m.xml"
    result = _cli("convert", source, "-o", xml, "--ir-version", "10")
    assert result.exit_code == 0, result.output
    # The oracle: the names OpenVINO itself gives the outputs.
    names = [next(iter(output.get_names())) for output in openvino_core().read_model(str(xml)).outputs]
    assert names == ["pool.0", "pool.1"]
    assert "IR v10 has no tensor names" in result.output and "y -> pool.0, idx -> pool.1" in result.output
    quiet = _cli("convert", source, "-o", tmp_path / "m11.xml")
    assert "tensor names" not in quiet.output


def test_verify_pairs_ir_v10_outputs_by_position(tmp_path):
    source, xml = _onnx_pool(tmp_path / "m.onnx"), tmp_path / "m.xml"
    assert _cli("convert", source, "-o", xml, "--ir-version", "10").exit_code == 0
    result = _cli("verify", xml, "--peer", "openvino", "--json")
    report = json.loads(result.output)["models"][0]
    rows = {(row["output"], row["path"]): row for row in report["rows"]}
    assert rows[("y", "openvino(ir)")]["status"] == "ok"
    assert not any("missing" in (row["detail"] or "") for row in report["rows"])
    assert any("compared by position: y = pool.0, idx = pool.1" in warning for warning in report["warnings"])
    # OpenVINO returns a v10 IR's i64 output as i32 (the oracle: its own output type); every i32 is an i64,
    # so the values are compared as the i64 the file declares, and the warning says so.
    assert ov.Type.i32 == openvino_core().read_model(str(xml)).outputs[1].get_element_type()
    idx = rows[("idx", "openvino(ir)")]
    assert idx["status"] == "ok" and idx["dtype"] == "int64" and idx["max_abs_error"] == 0
    assert any("OpenVINO returns IR v10's i64 outputs as i32; compared as i64: idx" in warning
               for warning in report["warnings"])
    assert result.exit_code == 0
