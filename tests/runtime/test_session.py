"""runtime.Session / runtime.run: model kinds, declared inputs, feed checks, dynamic dims, outputs by name."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from poolir import ir
from poolir import runtime
from poolir.ir.errors import FeedError, InvalidModelError, UsageError
from poolir.runtime.onnx_executor import OnnxProgram
from poolir.runtime.session import Program, TensorSpec
from tests.peers import onnxruntime_run, openvino_convert_to_xml, openvino_run_xml


def two_input_model(batch=1):
    """y = MaxPool(a) + b, plus the intermediate 'pooled' as a second graph output (also consumed)."""
    nodes = [helper.make_node("MaxPool", ["a"], ["pooled"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Add", ["pooled", "b"], ["y"])]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [batch, 3, 4, 6]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 3, 1, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("pooled", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)], ir_version=10)


A = np.random.default_rng(0).standard_normal((1, 3, 4, 6)).astype(np.float32)
B = np.random.default_rng(1).standard_normal((1, 3, 1, 1)).astype(np.float32)


def test_declared_inputs_and_outputs():
    session = runtime.Session(two_input_model())
    assert session.inputs == [TensorSpec("a", np.dtype(np.float32), (1, 3, 4, 6)),
                              TensorSpec("b", np.dtype(np.float32), (1, 3, 1, 1))]
    assert session.outputs == ["y", "pooled"]
    assert isinstance(session._program, OnnxProgram) and isinstance(session._program, Program)


def test_run_matches_onnxruntime_and_can_repeat():
    model = two_input_model()
    session = runtime.Session(model)
    expected = onnxruntime_run(model, {"a": A, "b": B})
    for _ in range(2):  # a second run on the same plan gives the same answer
        result = session.run({"a": A, "b": B})
        assert list(result) == ["y", "pooled"]
        np.testing.assert_array_equal(result["y"], expected["y"])
        np.testing.assert_array_equal(result["pooled"], expected["pooled"])
    np.testing.assert_array_equal(runtime.run(model, {"a": A, "b": B})["y"], expected["y"])


def test_path_to_onnx_file(tmp_path):
    path = tmp_path / "net.onnx"
    onnx.save(two_input_model(), path)
    result = runtime.run(path, {"a": A, "b": B})
    np.testing.assert_array_equal(result["y"], onnxruntime_run(two_input_model(), {"a": A, "b": B})["y"])
    assert runtime.Session(str(path)).source == str(path)


@pytest.mark.parametrize("feeds, fragments", [
    ({"a": A}, ["missing input 'b'", "the model's inputs are: 'a', 'b'"]),
    ({"a": A, "b": B, "c": B}, ["unknown input 'c'", "'a', 'b'"]),
    ({"a": A, "B": B}, ["unknown input 'B'", "missing input 'b'"]),
    ({"a": A.astype(np.float64), "b": B}, ["input 'a'", "element type float64 does not match the declared float32"]),
    ({"a": A[0], "b": B}, ["input 'a'", "rank 3 (shape [3,4,6])", "declared rank 4 (shape [1,3,4,6])"]),
    ({"a": A, "b": np.zeros((1, 2, 1, 1), np.float32)}, ["input 'b'", "dim 1 is 2", "declares 3"]),
    ({"a": A.tolist(), "b": B}, ["input 'a'", "expected a numpy array, got list"]),
])
def test_feed_errors_name_the_file_input_and_problem(tmp_path, feeds, fragments):
    path = tmp_path / "net.onnx"
    onnx.save(two_input_model(), path)
    with pytest.raises(FeedError) as caught:
        runtime.Session(path).run(feeds)
    message = str(caught.value)
    assert message.startswith(str(path) + ": ")
    for fragment in fragments:
        assert fragment in message


def test_feeds_must_be_a_mapping():
    with pytest.raises(FeedError, match="feeds must be a mapping of input name to numpy array, not list"):
        runtime.Session(two_input_model()).run([A, B])


def test_dynamic_dims_come_from_the_feeds():
    model = two_input_model()
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    model.graph.input[0].type.tensor_type.shape.dim[3].ClearField("dim_value")
    session = runtime.Session(model)
    assert session.inputs[0].shape == (None, 3, 4, None)
    for batch, width in ((1, 6), (3, 8)):
        a = np.random.default_rng(batch).standard_normal((batch, 3, 4, width)).astype(np.float32)
        result = session.run({"a": a, "b": B})
        assert result["y"].shape == (batch, 3, 2, width // 2)
        np.testing.assert_array_equal(result["y"], onnxruntime_run(model, {"a": a, "b": B})["y"])
    with pytest.raises(FeedError, match="dim 1 is 2"):
        session.run({"a": np.zeros((1, 2, 4, 6), np.float32), "b": B})


def test_initializers_listed_as_inputs_are_not_feeds():
    model = two_input_model()
    model.graph.initializer.append(numpy_helper.from_array(B, "b"))
    session = runtime.Session(model)
    assert [spec.name for spec in session.inputs] == ["a"]
    np.testing.assert_array_equal(session.run({"a": A})["y"], onnxruntime_run(model, {"a": A})["y"])


def test_validation_happens_at_construction():
    model = two_input_model()
    model.graph.node[0].attribute.append(helper.make_attribute("strides_typo", [1]))
    with pytest.raises(InvalidModelError, match="attribute 'strides_typo' is not defined for MaxPool-22"):
        runtime.Session(model)


def test_not_a_model():
    with pytest.raises(UsageError, match="not dict"):
        runtime.Session({"a": 1})
    with pytest.raises(UsageError, match="expected .onnx or .xml"):
        runtime.Session("model.pb")


def test_ir_model_and_xml_path_use_the_ir_executor(tmp_path):
    """An OpenVINO-converted IR runs through Session from its path and as an ir.Model; OpenVINO is the oracle."""
    xml = openvino_convert_to_xml(two_input_model(), tmp_path / "net.xml")
    expected = openvino_run_xml(xml, {"a": A, "b": B})
    session = runtime.Session(xml)
    assert [spec.name for spec in session.inputs] == ["a", "b"]
    assert session.inputs[0].shape == (1, 3, 4, 6)
    result = session.run({"a": A, "b": B})
    np.testing.assert_array_equal(result["y"], expected["y"])
    model = ir.read_model(xml)
    np.testing.assert_array_equal(runtime.run(model, {"a": A, "b": B})["y"], expected["y"])
    with pytest.raises(FeedError, match="element type float64"):
        session.run({"a": A.astype(np.float64), "b": B})
