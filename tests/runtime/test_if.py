"""ONNX If (runtime.onnx_ops.control_flow): run as onnxruntime runs it; converted when its condition is constant.

The real case, PyTorch's TorchScript export of nn.LocalResponseNorm from opset 11, is judged against PyTorch in
tests/networks/test_pytorch_blocks.py; here the rules one at a time, against onnxruntime and OpenVINO."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from poolir import converter, ir, runtime
from poolir.ir.errors import FeedError, InvalidModelError, PoolirError, UnsupportedError
from tests.networks.peers import run_onnxruntime, run_openvino_xml

X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 5, 5])
CONDITION = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
WEIGHTS = numpy_helper.from_array(np.random.default_rng(0).standard_normal((2, 2, 3, 3)).astype(np.float32), "w")


def _branch(name: str, nodes, output: str) -> onnx.GraphProto:
    return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)])


def _model(nodes, inputs=(X, CONDITION), initializers=(WEIGHTS,), opset=17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "if", list(inputs), [Y], list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _feeds(condition: bool) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(1).standard_normal((1, 2, 5, 5)).astype(np.float32),
            "c": np.array(condition)}


def _conv_if_model() -> onnx.ModelProto:
    """The then branch reads a Conv's output that a fused in-place Relu would otherwise overwrite, and an
    initializer; the else branch nests another If on the same condition."""
    inner = helper.make_node("If", ["c"], ["n"], then_branch=_branch("t2", [helper.make_node("Neg", ["x"], ["t2"])],
                                                                       "t2"),
                             else_branch=_branch("e2", [helper.make_node("Abs", ["x"], ["e2"])], "e2"))
    then = _branch("then", [helper.make_node("Conv", ["conv", "w"], ["t"], pads=[1, 1, 1, 1])], "t")
    other = _branch("else", [inner, helper.make_node("Sub", ["n", "conv"], ["e"])], "e")
    nodes = [helper.make_node("Conv", ["x", "w"], ["conv"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["conv"], ["relu"]),
             helper.make_node("If", ["c"], ["chosen"], then_branch=then, else_branch=other),
             helper.make_node("Add", ["chosen", "relu"], ["y"])]
    return _model(nodes)


@pytest.mark.parametrize("condition", [True, False])
def test_the_branch_the_condition_chooses_runs_with_the_outer_values_it_reads(condition):
    model = _conv_if_model()
    feeds = _feeds(condition)
    expected = run_onnxruntime(model, feeds)["y"]
    np.testing.assert_allclose(runtime.run(model, feeds)["y"], expected, rtol=1e-5, atol=1e-5)
    session = runtime.Session(model)  # a second run on the same session takes the other branch first
    session.run(_feeds(not condition))
    np.testing.assert_allclose(session.run(feeds)["y"], expected, rtol=1e-5, atol=1e-5)


def test_a_condition_computed_from_static_shapes_converts_to_the_branch_it_takes(tmp_path):
    """TorchScript's squeeze(1) test: Shape, Gather, Equal. The IR holds the taken branch only, and OpenVINO runs it
    as onnxruntime runs the If."""
    one = numpy_helper.from_array(np.array(1, np.int64), "one")
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    then = _branch("then", [helper.make_node("Squeeze", ["x", "axes"], ["t"])], "t")
    other = _branch("else", [helper.make_node("Identity", ["x"], ["e"])], "e")
    nodes = [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("Gather", ["shape", "one"], ["dim"]),
             helper.make_node("Equal", ["dim", "one"], ["c"]),
             helper.make_node("If", ["c"], ["chosen"], then_branch=then, else_branch=other),
             helper.make_node("Relu", ["chosen"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 5, 5])
    model = _model(nodes, inputs=(x,), initializers=(one, axes))
    feeds = {"x": _feeds(True)["x"][:, :1]}
    expected = run_onnxruntime(model, feeds)["y"]
    assert expected.shape == (1, 5, 5)  # dim 1 is 1: the then branch squeezes it
    np.testing.assert_array_equal(runtime.run(model, feeds)["y"], expected)
    converted = converter.onnx_to_ir(model)
    assert {layer.type for layer in converted.layers} == {"Parameter", "Const", "Squeeze", "ReLU", "Result"}
    xml = tmp_path / "taken.xml"
    ir.write_model(converted, xml)
    np.testing.assert_array_equal(run_openvino_xml(xml, feeds, ["y"])["y"], expected)


def test_a_condition_known_only_at_run_time_converts_to_an_if8_that_openvino_runs(tmp_path):
    """The condition is an input: the IR holds an If-8 (converter.onnx_to_ir.branches), nested in its else body,
    with the outer Conv output and the weights read by the bodies (tests/runtime/test_ir_if.py has more)."""
    model = _conv_if_model()
    xml = tmp_path / "if.xml"
    ir.write_model(converter.onnx_to_ir(model), xml)
    for condition in (True, False):
        feeds = _feeds(condition)
        expected = run_onnxruntime(model, feeds)["y"]
        np.testing.assert_allclose(run_openvino_xml(xml, feeds)["y"], expected, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(runtime.run(ir.read_model(xml), feeds)["y"], expected, rtol=1e-5, atol=1e-5)


def test_a_condition_of_two_elements_is_refused():
    then = _branch("then", [helper.make_node("Neg", ["x"], ["t"])], "t")
    other = _branch("else", [helper.make_node("Abs", ["x"], ["e"])], "e")
    model = _model([helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
                   inputs=(X, helper.make_tensor_value_info("c", TensorProto.BOOL, [2])), initializers=())
    with pytest.raises(FeedError, match="the condition of If has 2 elements; it must have one"):
        runtime.run(model, {"x": _feeds(True)["x"], "c": np.array([True, False])})


def test_a_condition_that_is_not_bool_is_refused():
    then = _branch("then", [helper.make_node("Neg", ["x"], ["t"])], "t")
    other = _branch("else", [helper.make_node("Abs", ["x"], ["e"])], "e")
    model = _model([helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
                   inputs=(X, helper.make_tensor_value_info("c", TensorProto.FLOAT, [])), initializers=())
    with pytest.raises(FeedError, match="the condition of If is float32; it must be bool"):
        runtime.run(model, {"x": _feeds(True)["x"], "c": np.array(0.5, np.float32)})


def test_a_branch_that_returns_an_outer_value_returns_it():
    """onnxruntime refuses such a model ("Subgraph output (x) is an outer scope value being returned directly"); a
    graph may list an input among its outputs, and poolir reads a branch alike."""
    then = helper.make_graph([], "then", [], [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)])
    other = _branch("else", [helper.make_node("Abs", ["x"], ["e"])], "e")
    model = _model([helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)], initializers=())
    feeds = _feeds(True)
    np.testing.assert_array_equal(runtime.run(model, feeds)["y"], feeds["x"])


def test_a_branch_with_another_number_of_outputs_is_refused():
    then = _branch("then", [helper.make_node("Neg", ["x"], ["t"])], "t")
    other = _branch("else", [helper.make_node("Abs", ["x"], ["e"])], "e")
    node = helper.make_node("If", ["c"], ["y", "z"], then_branch=then, else_branch=other)
    with pytest.raises(InvalidModelError, match="else_branch has 1 outputs, the node 2"):
        runtime.Session(_model([node], initializers=()))


def test_an_unsupported_op_inside_a_branch_is_named_before_any_run():
    then = _branch("then", [helper.make_node("Unique", ["x"], ["t"])], "t")
    other = _branch("else", [helper.make_node("Abs", ["x"], ["e"])], "e")
    model = _model([helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)], initializers=())
    with pytest.raises(UnsupportedError, match=r"unsupported operators: Unique \(ai.onnx, opset 17\)"):
        runtime.Session(model)


def test_a_branch_that_declares_inputs_is_refused():
    """A branch reads outer values by name; one declaring an input (onnx's checker and onnxruntime refuse it) was a
    KeyError in the run."""
    then = helper.make_graph([helper.make_node("Neg", ["q"], ["t"])], "then",
                             [helper.make_tensor_value_info("q", TensorProto.FLOAT, [1, 2, 5, 5])],
                             [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)])
    other = _branch("else", [helper.make_node("Abs", ["x"], ["e"])], "e")
    model = _model([helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)], initializers=())
    for use in (runtime.Session, converter.onnx_to_ir):
        with pytest.raises(PoolirError, match="then_branch declares 1 inputs; an If branch takes none"):
            use(model)
