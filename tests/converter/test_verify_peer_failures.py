"""How `poolir verify` reports a peer that fails: a missing conversion rule says nothing about the model
("unsupported"), but OpenVINO's converter rejecting a node it knows is a finding ("error", naming the node and
the problem). The failures are OpenVINO's own exceptions, raised by openvino.convert_model on small graphs. The
engines run in a child process (verify.peer_process), so one that crashes is that path's error row."""

from __future__ import annotations

import os
import signal

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from poolir import ir
from poolir.converter import onnx_to_ir, peers
from poolir.converter.verify import peer_process, verify_paths

pytest.importorskip("openvino")


def one_node_model(node: onnx.NodeProto, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def reflect_pad_past_the_edge() -> onnx.ModelProto:
    """OpenVINO's shape inference rejects a reflect pad of 5 on a length-4 axis."""
    pads = helper.make_tensor("pads", TensorProto.INT64, [8], [0, 0, 5, 5, 0, 0, 5, 5])
    return one_node_model(helper.make_node("Pad", ["x", "pads"], ["y"], mode="reflect", name="pad"), [pads])


def openvino_conversion_error(model: onnx.ModelProto) -> Exception:
    with pytest.raises(Exception) as caught:
        peers.openvino_convert(model)
    return caught.value


def test_a_node_openvino_rejects_is_an_error_naming_node_and_problem():
    error = openvino_conversion_error(reflect_pad_past_the_edge())
    assert not peers.unsupported_by_peer("openvino", error)
    summary = peers.peer_failure_summary(error)
    assert "Pad-17 at node 'y'" in summary and "REFLECT padding mode requires" in summary, summary


def test_an_operator_openvino_has_no_rule_for_is_unsupported():
    error = openvino_conversion_error(one_node_model(helper.make_node("NoSuchOp", ["x"], ["y"], domain="test.x")))
    assert peers.unsupported_by_peer("openvino", error)
    assert "No conversion rule found for operations: test.x.NoSuchOp" in peers.peer_failure_summary(error)


def test_verify_reports_openvino_rejecting_a_node_as_an_error_row(tmp_path):
    """A wrap Pad (PyTorch's circular padding): poolir runs it and converts it exactly (a Gather); OpenVINO's own
    converter rejects the mode, in verify's engine process."""
    pads = helper.make_tensor("pads", TensorProto.INT64, [8], [0, 0, 1, 1, 0, 0, 1, 1])
    model = one_node_model(helper.make_node("Pad", ["x", "pads"], ["y"], mode="wrap", name="pad"), [pads])
    model.opset_import[0].version = 19
    path = tmp_path / "pad.onnx"
    onnx.save(model, path)
    report = verify_paths([path], peers=("openvino",), inputs=None)
    (model_report,) = report.models
    rows = {row.path: row for row in model_report.rows}
    assert rows["openvino(onnx)"].status == "error"
    assert "Pad-19 at node 'y': Unsupported padding mode: [wrap]" in rows["openvino(onnx)"].detail
    assert rows["openvino(onnx->ir)"].status == "ok"
    assert not report.passed
    assert len(rows) == 5


def _empty_gather_ir(folder):
    """poolir's IR of a Pad that crops an axis of length 1 away: a Slice, then a Gather, to an empty [2, 0]."""
    node = helper.make_node("Pad", ["x", "pads"], ["y"], mode="reflect")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [helper.make_tensor("pads", TensorProto.INT64, [4], [1, -1, -1, 0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    xml = folder / "empty.xml"
    ir.write_model(onnx_to_ir(model), xml)
    np.savez(folder / "inputs.npz", x=np.ones((2, 1), np.float32))
    return xml


def test_an_engine_crash_is_an_error_row_not_the_end_of_verify(tmp_path):
    """OpenVINO 2026.4's CPU plugin dies of SIGFPE on this IR; in-process that killed verify with no report."""
    xml = _empty_gather_ir(tmp_path)
    report = verify_paths([xml], peers=("openvino",), inputs=tmp_path / "inputs.npz")
    rows = {row.path: row for row in report.models[0].rows}
    if rows["openvino(ir)"].status == "ok":
        pytest.skip("this OpenVINO runs the IR (it crashed in 2026.4)")
    assert rows["openvino(ir)"].status == "error"
    assert "openvino: the engine crashed (SIGFPE)" in rows["openvino(ir)"].detail
    assert rows["runtime(ir->onnx)"].status == "ok"


def test_the_engine_process_is_started_again_after_it_died(tmp_path):
    xml = tmp_path / "relu.xml"
    ir.write_model(onnx_to_ir(one_node_model(helper.make_node("Relu", ["x"], ["y"]))), xml)
    assert peer_process.openvino_tensor_names(("xml", xml))
    os.kill(peer_process._CHILD.process.pid, signal.SIGKILL)
    peer_process._CHILD.process.wait()
    feeds = {"x": np.full((1, 1, 4, 4), -1.0, np.float32)}
    assert np.array_equal(peer_process.openvino_run(("xml", xml), feeds)["y"], np.zeros((1, 1, 4, 4), np.float32))


def test_an_engine_that_does_not_answer_is_stopped_after_the_timeout(tmp_path, monkeypatch):
    """OpenVINO compiling If-8s nested 30 deep ran for over 10 minutes: a peer call gets POOLIR_PEER_TIMEOUT seconds
    (default 600), then its process is killed, the path is an error row, and the next call starts a new one."""
    xml = tmp_path / "relu.xml"
    ir.write_model(onnx_to_ir(one_node_model(helper.make_node("Relu", ["x"], ["y"]))), xml)
    assert peer_process.openvino_tensor_names(("xml", xml))
    os.kill(peer_process._CHILD.process.pid, signal.SIGSTOP)  # it will never answer
    monkeypatch.setenv("POOLIR_PEER_TIMEOUT", "1")
    with pytest.raises(peer_process.PeerCrash, match="did not finish this path in 1 s and was stopped"):
        peer_process.openvino_tensor_names(("xml", xml))
    monkeypatch.delenv("POOLIR_PEER_TIMEOUT")
    assert peer_process.peer_seconds() == 600
    feeds = {"x": np.full((1, 1, 4, 4), -1.0, np.float32)}
    assert np.array_equal(peer_process.openvino_run(("xml", xml), feeds)["y"], np.zeros((1, 1, 4, 4), np.float32))


def test_a_crash_left_by_another_path_is_not_blamed_on_the_next(tmp_path):
    """OpenVINO 2026.4 returns an empty tensor for its own conversion of a ceil_mode AveragePool whose input is
    shorter than the kernel, and crashes (SIGSEGV) on the next model it runs in that process: poolir's correct IR
    was an ERROR row. A child that dies after serving other calls is replaced and the call made again."""
    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4, "h", "w"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    path = tmp_path / "short.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    report = verify_paths([path], peers=("openvino",), input_shapes={"x": (1, 4, 1, 2)})
    rows = {row.path: row for row in report.models[0].rows}
    assert rows["openvino(onnx->ir)"].status == "ok", rows["openvino(onnx->ir)"].detail
