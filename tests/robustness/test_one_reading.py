"""Invalid models are refused by every command, naming the node or layer (issue item 9): no model is run by
one command and renamed, converted or compared differently by another."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from poolir import runtime
from tests import peers

from tests.robustness.big_graphs import _net, _parameter, _port, _result
from tests.robustness.cli_check import invoke_cli


def _onnx(path: Path, nodes, inputs, outputs, opsets=(("", 17),), initializers=()) -> Path:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets], ir_version=10)
    path.write_bytes(model.SerializeToString())
    return path


def _value(name, shape=(1, 3), elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def _negative_dims() -> onnx.TensorProto:
    tensor = onnx.TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[-1, 4], raw_data=bytes(16))
    return tensor


def _commands(path: Path, work: Path) -> list[list]:
    target = work / ("o.xml" if path.suffix == ".onnx" else "o.onnx")
    return [["run", path], ["verify", path], ["convert", path, "-o", target]]


CASES = {
    "reduce_axis_out_of_range": (lambda: ([helper.make_node("ReduceMean", ["x"], ["y"], axes=[7])], [_value("x")],
                                          [_value("y", None)], (("", 13),), ()),
                                 "attribute 'axes' = [7] is out of range for rank 2 (valid -2..1)"),
    "negative_split": (lambda: ([helper.make_node("Split", ["x", "s"], ["a", "b"], axis=1)], [_value("x")],
                                [_value("a", None), _value("b", None)], (("", 13),),
                                [helper.make_tensor("s", TensorProto.INT64, [2], [4, -1])]), "negative size"),
    "where_float_condition": (lambda: ([helper.make_node("Where", ["c", "x", "x"], ["y"])], [_value("c"), _value("x")],
                                       [_value("y", None)], (("", 13),), ()), "must be bool"),
    "default_domain_twice": (lambda: ([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[1])],
                                      [_value("x", (1, 1, 3))], [_value("y", (1, 1, 3))],
                                      (("", 17), ("ai.onnx", 1000)), ()), "imports domain 'ai.onnx' twice"),
    "negative_initializer_dim": (lambda: ([helper.make_node("Identity", ["w"], ["z"])], [], [_value("z", (1, 4))],
                                          (("", 17),), [_negative_dims()]), "declares a negative dim in [-1, 4]"),
    "two_inputs_one_name": (lambda: ([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[1])],
                                     [_value("x", (1, 1, 3)), _value("x", (1, 1, 3))], [_value("y", (1, 1, 3))],
                                     (("", 17),), ()), "two graph inputs are named 'x'"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_invalid_onnx_is_refused_by_every_command(tmp_path, case):
    make, problem = CASES[case]
    nodes, inputs, outputs, opsets, initializers = make()
    path = _onnx(tmp_path / "m.onnx", nodes, inputs, outputs, opsets, initializers)
    for command in _commands(path, tmp_path)[:2]:  # run and verify run it; convert refuses it or its ops
        result = invoke_cli("one-reading", command, names=str(path), allowed=(2,))
        assert problem in result.stderr
    invoke_cli("one-reading", _commands(path, tmp_path)[2], names=str(path), allowed=(2,))


def _maxpool(layer_id: int, name: str, names: str) -> str:
    return (f'<layer id="{layer_id}" name="{name}" type="MaxPool" version="opset1"><data kernel="1" strides="1" '
            f'pads_begin="0" pads_end="0" rounding_type="floor" auto_pad="explicit"/><input>{_port(0, (1, 2))}'
            f"</input><output>{_port(1, (1, 2), names)}</output></layer>")


@pytest.mark.parametrize("layers, edges, problem", [
    ([_parameter(0, "x"), _parameter(1, "x"), _result(2, "r0"), _result(3, "r1")], [(0, 0, 2, 0), (1, 0, 3, 0)],
     "the tensor name 'x' is also the name of an output of layer 'x' (id 0, Parameter)"),
    ([_parameter(0, "x"), _maxpool(1, "pool", "x"), _result(2, "r")], [(0, 0, 1, 0), (1, 1, 2, 0)],
     "the tensor name 'x' is also the name of an output of layer 'x' (id 0, Parameter)"),
    # OpenVINO runs it, but names both outputs {'y'}: the second Result is refused by every command.
    ([_parameter(0, "x"), _maxpool(1, "pool", "y").replace("(1, 2)", "(1, 1, 2)"), _result(2, "r0"),
      _result(3, "r1")], [(0, 0, 1, 0), (1, 1, 2, 0), (1, 1, 3, 0)],
     "layer 'r1' (id 3, Result): two Results have the output name 'y'"),
])
def test_ir_names_have_one_reading(tmp_path, layers, edges, problem):
    path = tmp_path / "m.xml"
    path.write_text(_net(layers, edges))
    for command in _commands(path, tmp_path) + [["inspect", path]]:
        result = invoke_cli("one-reading", command, names=str(path), allowed=(2,))
        assert problem in result.stderr


def test_nodes_out_of_topological_order_are_read_in_dependency_order_by_every_command(tmp_path):
    """ONNX requires a topologically sorted node list (onnx.checker refuses another), but onnxruntime and OpenVINO
    read any order in dependency order: every poolir command does too, and convert and inspect warn, naming the
    first node listed too late."""
    nodes = [helper.make_node("Relu", ["a"], ["y"], name="relu"), helper.make_node("Neg", ["x"], ["a"], name="neg")]
    path = _onnx(tmp_path / "m.onnx", nodes, [_value("x")], [_value("y")])
    warning = ("the nodes are not in topological order, as ONNX requires (node 'neg' (Neg) is listed after a node "
               "that reads its output); read in dependency order, as onnxruntime and OpenVINO do")
    for command in ([["inspect", path]] + _commands(path, tmp_path)):
        result = invoke_cli("one-reading", command, names=str(path), allowed=(0,))
        assert (warning in result.stderr) == (command[0] in ("inspect", "convert")), result.stderr
    x = np.array([[1, -2, 3]], np.float32)
    expected = peers.onnxruntime_run(onnx.load(path), {"x": x})["y"]  # the oracle: [0, 2, 0]
    assert expected.tolist() == [[0, 2, 0]]
    for model in (path, tmp_path / "o.xml"):
        assert runtime.run(model, {"x": x})["y"].tolist() == expected.tolist()


def test_a_cycle_is_refused_by_every_command_naming_the_node(tmp_path):
    nodes = [helper.make_node("Relu", ["b"], ["a"], name="one"), helper.make_node("Neg", ["a"], ["b"], name="two"),
             helper.make_node("Add", ["a", "x"], ["y"], name="out")]
    path = _onnx(tmp_path / "m.onnx", nodes, [_value("x")], [_value("y")])
    for command in [["inspect", path]] + _commands(path, tmp_path):
        result = invoke_cli("one-reading", command, names=str(path), allowed=(2,))
        assert "node 'one' (Relu): input 'b' is part of a cycle" in result.stderr, result.stderr


def _axis_case(op, opset, attrs=None, axes_input=None, shape=(1, 3), outputs=("y",)):
    inputs = ["x"] + (["ax"] if axes_input is not None else [])
    inits = [helper.make_tensor("ax", TensorProto.INT64, [len(axes_input)], axes_input)] if axes_input else []
    if op == "Gather":
        inputs, inits = ["x", "i"], [helper.make_tensor("i", TensorProto.INT64, [1], [0])]
    node = helper.make_node(op, inputs * (2 if op == "Concat" else 1), list(outputs), **(attrs or {}))
    return [node], [_value("x", shape)], [_value(o, None) for o in outputs], (("", opset),), inits


AXIS_CASES = {  # one wording: node, attribute or input, value, rank and the valid range, in run and in convert
    "Squeeze-11": (_axis_case("Squeeze", 11, {"axes": [7]}),
        "(Squeeze): attribute 'axes' = [7] is out of range for rank 2 (valid -2..1)"),
    "Squeeze-13": (_axis_case("Squeeze", 13, axes_input=[-3]),
        "(Squeeze): input 'axes' = [-3] is out of range for rank 2 (valid -2..1)"),
    "Unsqueeze-13": (_axis_case("Unsqueeze", 13, axes_input=[7]),
        "(Unsqueeze): input 'axes' = [7] is out of range for rank 3 (valid -3..2)"),
    "ReduceMean-18": (_axis_case("ReduceMean", 18, axes_input=[7]),
        "(ReduceMean): input 'axes' = [7] is out of range for rank 2 (valid -2..1)"),
    "ReduceSum-11 twice": (_axis_case("ReduceSum", 11, {"axes": [1, -1]}),
        "(ReduceSum): attribute 'axes' = [1, -1] names an axis twice"),
    "Concat": (_axis_case("Concat", 13, {"axis": 7}),
        "(Concat): attribute 'axis' = 7 is out of range for rank 2 (valid -2..1)"),
    "Gather": (_axis_case("Gather", 13, {"axis": -3}),
        "(Gather): attribute 'axis' = -3 is out of range for rank 2 (valid -2..1)"),
    "Split": (_axis_case("Split", 13, {"axis": 7}, shape=(2, 4), outputs=("y", "z")),
        "(Split): attribute 'axis' = 7 is out of range for rank 2 (valid -2..1)"),
    "Softmax": (_axis_case("Softmax", 13, {"axis": 2}),
        "(Softmax): attribute 'axis' = 2 is out of range for rank 2 (valid -2..1)"),
    "LogSoftmax-11": (_axis_case("LogSoftmax", 11, {"axis": -3}),
        "(LogSoftmax): attribute 'axis' = -3 is out of range for rank 2 (valid -2..1)"),
}


@pytest.mark.parametrize("case", sorted(AXIS_CASES))
def test_an_axis_out_of_range_has_one_wording_in_every_command(tmp_path, case):
    (nodes, inputs, outputs, opsets, initializers), message = AXIS_CASES[case]
    path = _onnx(tmp_path / "m.onnx", nodes, inputs, outputs, opsets, initializers)
    for command in _commands(path, tmp_path):
        result = invoke_cli("one-reading", command, names=str(path), allowed=(2,))
        assert f"{path}: node '#0' {message}" in result.stderr, result.stderr


def test_an_ir_axis_out_of_range_has_the_same_wording(tmp_path):
    from poolir import ir
    b = ir.GraphBuilder("m")
    x = b.parameter("x", "f32", (1, 3))
    (y,) = b.add("Concat", "opset1", [x, x], {"axis": 0}, name="cat")
    b.result(y, "y")
    path = tmp_path / "m.xml"
    ir.write_model(b.build(), path)
    path.write_text(path.read_text().replace('axis="0"', 'axis="7"'))
    for command in _commands(path, tmp_path) + [["inspect", path]]:
        result = invoke_cli("one-reading", command, names=str(path), allowed=(2,))
        assert "layer 'cat' (id 1, Concat): axis = 7 is out of range for rank 2 (valid -2..1)" in result.stderr, \
            result.stderr
