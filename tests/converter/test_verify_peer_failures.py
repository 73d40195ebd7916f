"""How `poolir verify` reports a peer that fails: a missing conversion rule says nothing about the model
("unsupported"), but OpenVINO's converter rejecting a node it knows is a finding ("error", naming the node and
the problem). The failures are OpenVINO's own exceptions, raised by openvino.convert_model on small graphs."""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

from poolir.converter import peers
from poolir.converter.verify import verify_paths

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


def test_verify_reports_openvino_rejecting_a_node_as_an_error_row(tmp_path, monkeypatch):
    """A model poolir and onnxruntime run, whose OpenVINO conversion fails in validation (the failure is that of
    the reflect pad above: no small graph that onnxruntime runs makes OpenVINO 2026.4 fail validation)."""
    path = tmp_path / "relu.onnx"
    onnx.save(one_node_model(helper.make_node("Relu", ["x"], ["y"])), path)
    failure = openvino_conversion_error(reflect_pad_past_the_edge())

    def failing_convert(model):
        raise failure

    monkeypatch.setattr(peers, "openvino_convert", failing_convert)
    report = verify_paths([path], peers=("openvino",), inputs=None)
    (model_report,) = report.models
    rows = {row.path: row for row in model_report.rows}
    assert rows["openvino(onnx)"].status == "error"
    assert "Pad-17 at node 'y': REFLECT padding mode" in rows["openvino(onnx)"].detail
    assert rows["openvino(onnx->ir)"].status == "ok"
    assert not report.passed
    assert len(rows) == 5
