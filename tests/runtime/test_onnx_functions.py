"""Model-local ONNX functions (runtime.onnx_functions): inlined as onnxruntime runs them, hostile ones refused.

Real exports with functions (torch.onnx.export(export_modules_as_functions=True)) are judged against PyTorch in
tests/networks/test_pytorch_blocks.py; here the rules of a call, one at a time, against onnxruntime and onnx's
checker."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from poolir import converter, ir, runtime
from poolir.ir.errors import InvalidModelError, PoolirError, UnsupportedError
from poolir.runtime.onnx_functions import MAX_CALL_DEPTH, MAX_INLINED_NODES, inline_functions
from tests.networks.peers import run_onnxruntime, run_openvino_xml

OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]


def _model(nodes, functions, *, opset=17, shape=(1, 2, 6, 6)):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid("local", 1)],
                             functions=functions, ir_version=10)


def _reference(name: str, attributes: dict) -> onnx.AttributeProto:
    kind = onnx.AttributeProto.INTS
    return onnx.AttributeProto(name=name, ref_attr_name=attributes[name], type=kind)


def _pool_function(passed_through: bool = False) -> onnx.FunctionProto:
    """MaxPool whose kernel comes from the call, pads from the function's default, strides from the call when
    given (else left out: stride 1); then a clip between two inputs; with `passed_through`, the input is an output."""
    pool = helper.make_node("MaxPool", ["a"], ["p"], name="pool")
    pool.attribute.extend([_reference(name, {"kernel_shape": "k", "pads": "pads", "strides": "s"})
                           for name in ("kernel_shape", "pads", "strides")])
    body = [pool, helper.make_node("Clip", ["p", "lo", "hi"], ["q"], name="clip"),
            helper.make_node("Mul", ["q", "q"], ["r"], name="square")]
    outputs = ["r", "a", "p"] if passed_through else ["r", "p"]
    function = helper.make_function("local", "Pool", ["a", "lo", "hi"], outputs, body, OPSETS, attributes=["k", "s"])
    function.attribute_proto.extend([helper.make_attribute("pads", [1, 1, 1, 1])])
    return function


def _block_function() -> onnx.FunctionProto:
    """Two calls of Pool (nested; the same internal names twice), their results added; the calls' pads are the
    block's `padding` when its call gives one, else Pool's default."""
    calls = [helper.make_node("Pool", ["a", "lo", "hi"], ["r1", "p1"], domain="local", name="first", k=[3, 3]),
             helper.make_node("Pool", ["r1", "lo", "hi"], ["r2", "p2"], domain="local", name="second", k=[3, 3],
                              s=[1, 1])]
    for call in calls:  # the block's own attribute reaches the inner calls too
        call.attribute.append(onnx.AttributeProto(name="pads", ref_attr_name="padding", type=onnx.AttributeProto.INTS))
    body = calls + [helper.make_node("Add", ["r2", "p1"], ["b"], name="add")]
    function = helper.make_function("local", "Block", ["a", "lo", "hi"], ["b"], body, OPSETS, attributes=["padding"])
    return function


def _constants():
    return [helper.make_node("Constant", [], ["lo"], value=helper.make_tensor("lo", TensorProto.FLOAT, [], [-0.25])),
            helper.make_node("Constant", [], ["hi"], value=helper.make_tensor("hi", TensorProto.FLOAT, [], [0.75]))]


def test_nested_calls_run_as_onnxruntime_runs_them(tmp_path):
    calls = [helper.make_node("Block", ["x", "lo", "hi"], ["b1"], domain="local", name="block1", padding=[2, 2, 0, 0]),
             helper.make_node("Block", ["b1", "lo", "hi"], ["b2"], domain="local", name="block2"),
             helper.make_node("Pool", ["x", "lo", "hi"], ["r", "p"], domain="local", name="pool", k=[3, 3], s=[2, 2]),
             helper.make_node("ReduceMean", ["r"], ["m"], keepdims=1, axes=[2, 3]),
             helper.make_node("Add", ["b2", "m"], ["y"])]
    model = _model(_constants() + calls, [_pool_function(), _block_function()])
    x = np.random.default_rng(0).standard_normal((1, 2, 6, 6)).astype(np.float32)
    expected = run_onnxruntime(model, {"x": x})["y"]  # onnxruntime inlines the functions itself
    np.testing.assert_array_equal(runtime.run(model, {"x": x})["y"], expected)
    xml = tmp_path / "inlined.xml"
    ir.write_model(converter.onnx_to_ir(model), xml)
    np.testing.assert_allclose(run_openvino_xml(xml, {"x": x}, ["y"])["y"], expected, rtol=1e-6, atol=1e-6)


def test_inlined_values_get_fresh_names_under_the_call():
    calls = [helper.make_node("Block", ["x", "lo", "hi"], ["y"], domain="local", name="block", padding=[0, 0, 0, 0])]
    inlined = inline_functions(_model(_constants() + calls, [_pool_function(), _block_function()]))
    assert not inlined.functions
    names = [name for node in inlined.graph.node for name in node.output]
    assert len(names) == len(set(names))
    assert "block/first/pool" in {node.name for node in inlined.graph.node}
    assert "block/first/q" in names and "block/second/q" in names


def test_an_output_that_is_an_input_of_the_function_is_that_input():
    """onnxruntime refuses such a function when it loads the model ("failed validating the check:
    !(it.GetName().empty())"); a graph may list an input among its outputs, and poolir reads a function alike."""
    call = helper.make_node("Pool", ["x", "lo", "hi"], ["r", "passed", "p"], domain="local", k=[3, 3])
    model = _model(_constants() + [call, helper.make_node("Identity", ["passed"], ["y"])], [_pool_function(True)])
    x = np.random.default_rng(2).standard_normal((1, 2, 6, 6)).astype(np.float32)
    np.testing.assert_array_equal(runtime.run(model, {"x": x})["y"], x)


def test_a_model_without_functions_is_not_copied():
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [])
    assert inline_functions(model) is model


def _chain(length: int, calls_per_level: int = 1) -> onnx.ModelProto:
    functions = [helper.make_function("local", "F0", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])], OPSETS)]
    for level in range(1, length):
        names = ["a"] + [f"t{k}" for k in range(calls_per_level - 1)] + ["b"]
        body = [helper.make_node(f"F{level - 1}", [names[k]], [names[k + 1]], domain="local")
                for k in range(calls_per_level)]
        functions.append(helper.make_function("local", f"F{level}", ["a"], ["b"], body, OPSETS))
    return _model([helper.make_node(f"F{length - 1}", ["x"], ["y"], domain="local")], functions)


def test_calls_nested_as_deep_as_onnxs_checker_allows_run():
    x = np.random.default_rng(1).standard_normal((1, 2, 6, 6)).astype(np.float32)
    np.testing.assert_array_equal(runtime.run(_chain(MAX_CALL_DEPTH), {"x": x})["y"], np.maximum(x, 0))


def test_deeper_calls_are_refused_as_onnxs_checker_refuses_them():
    model = _chain(MAX_CALL_DEPTH + 1)
    with pytest.raises(UnsupportedError, match=f"call each other more than {MAX_CALL_DEPTH} deep"):
        runtime.Session(model)
    relaxed = onnx.ModelProto.FromString(model.SerializeToString())
    relaxed.graph.output[0].type.tensor_type.shape.SetInParent()
    with pytest.raises(onnx.checker.ValidationError, match="call chain depth exceeds limit"):
        onnx.checker.check_model(relaxed)


def test_a_doubling_chain_is_refused_before_it_is_expanded():
    model = _chain(24, calls_per_level=2)  # 2**23 Relu nodes once inlined
    with pytest.raises(UnsupportedError, match=f"more than {MAX_INLINED_NODES}"):
        converter.onnx_to_ir(model)


@pytest.mark.parametrize("cycle", [["F"], ["A", "B"]])
def test_a_function_that_calls_itself_is_refused(cycle, tmp_path):
    functions = [helper.make_function("local", name, ["a"], ["b"],
                                      [helper.make_node(cycle[(k + 1) % len(cycle)], ["a"], ["b"], domain="local")],
                                      OPSETS) for k, name in enumerate(cycle)]
    model = _model([helper.make_node(cycle[0], ["x"], ["y"], domain="local")], functions)
    message = "model-local function 'local." + cycle[0] + "' calls itself (" + " -> ".join(
        f"local.{name}" for name in cycle + cycle[:1]) + ")"
    with pytest.raises(InvalidModelError, match=re.escape(message)):
        runtime.Session(model)
    path = tmp_path / "recursive.onnx"
    onnx.save(model, path)
    for command in ("inspect", "convert"):  # read before onnx's checker and shape inference see the functions
        result = subprocess.run([sys.executable, "-m", "poolir", command, str(path)]
                                + (["-o", str(tmp_path / "out.xml")] if command == "convert" else []),
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 2, result.stderr
        assert result.stderr.strip() == f"poolir: error: {path}: {message}"
    assert not (tmp_path / "out.xml").exists()


def test_two_functions_with_one_name_are_refused():
    relu = helper.make_function("local", "F", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])], OPSETS)
    model = _model([helper.make_node("F", ["x"], ["y"], domain="local")], [relu, relu])
    with pytest.raises(InvalidModelError, match="two model-local functions are named 'local.F'"):
        runtime.Session(model)


@pytest.mark.parametrize("kind", ["inputs", "outputs"])
def test_a_call_with_more_inputs_or_outputs_than_its_function_declares_is_refused(kind):
    """onnxruntime refuses it when it loads the model; inlined, an extra output would be a value nothing computes."""
    relu = helper.make_function("local", "F", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])], OPSETS)
    inputs, outputs = (["x", "x"], ["y"]) if kind == "inputs" else (["x"], ["y", "z"])
    model = _model([helper.make_node("F", inputs, outputs, domain="local")], [relu])
    for use in (runtime.Session, converter.onnx_to_ir):
        with pytest.raises(InvalidModelError, match=f"the call gives 2 {kind}; model-local function 'local.F' "
                                                    "declares 1"):
            use(model)


def test_a_required_input_left_out_inside_a_function_is_refused_by_the_conversion():
    """onnx's checker does not look inside a function's body: a Conv called without its weight (an empty name) was
    an internal error in the converter; the run refused it already."""
    body = [helper.make_node("Conv", ["a", "w", "b"], ["c"])]
    conv = helper.make_function("local", "F", ["a", "w", "b"], ["c"], body, OPSETS)
    bias = helper.make_node("Constant", [], ["bias"], value=helper.make_tensor("bias", TensorProto.FLOAT, [2], [0, 0]))
    model = _model([bias, helper.make_node("F", ["x", "", "bias"], ["y"], domain="local")], [conv])
    for use in (runtime.Session, converter.onnx_to_ir):
        with pytest.raises(PoolirError, match="input 1 of Conv-11 is required but left out"):
            use(model)


@pytest.mark.parametrize("function_opset, model_opset, accepted", [(13, 14, True), (11, 13, False)])
def test_a_function_importing_another_opset_is_read_as_onnxs_checker_reads_it(function_opset, model_opset, accepted):
    """Abs is version 13 at opsets 13 and 14: the same op. At opset 11 it is version 6, and the checker refuses
    ("not compatible with the version imported by model"): the function would mean another op at the model's."""
    absolute = helper.make_function("local", "G", ["a"], ["b"], [helper.make_node("Abs", ["a"], ["b"])],
                                   [helper.make_opsetid("", function_opset)])
    model = _model([helper.make_node("G", ["x"], ["y"], domain="local")], [absolute], opset=model_opset)
    model.graph.output[0].type.tensor_type.shape.SetInParent()
    if accepted:
        onnx.checker.check_model(model)
        x = np.linspace(-3, 3, 72, dtype=np.float32).reshape(1, 2, 6, 6)
        np.testing.assert_array_equal(runtime.run(model, {"x": x})["y"], run_onnxruntime(model, {"x": x})["y"])
        return
    with pytest.raises(onnx.checker.ValidationError, match="not compatible"):
        onnx.checker.check_model(model)
    with pytest.raises(UnsupportedError, match=f"imports opset {function_opset} and the model {model_opset}"):
        runtime.Session(model)


def _branch_calling(name: str, function: str) -> onnx.GraphProto:
    return helper.make_graph([helper.make_node(function, ["x"], [name], domain="local")], name, [],
                             [helper.make_tensor_value_info(name, TensorProto.FLOAT, None)])


def test_calls_inside_if_branches_run_and_convert_as_the_peers_run_them(tmp_path):
    """A branch of the graph's If calls a function, and so does a branch of an If inside a function's body (the
    calls were left in the branches: "unsupported operators: Neg2 (local, opset 1)")."""
    neg = helper.make_function("local", "Neg2", ["a"], ["b"], [helper.make_node("Neg", ["a"], ["n"]),
                                                              helper.make_node("Add", ["n", "n"], ["b"])], OPSETS)
    relu = helper.make_function("local", "Relu1", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])], OPSETS)
    inner_if = helper.make_node("If", ["c"], ["b"], then_branch=_branch_calling("t", "Neg2"),
                                else_branch=_branch_calling("e", "Relu1"))
    chooser = helper.make_function("local", "Choose", ["c", "x"], ["b"], [inner_if], OPSETS)
    outer_if = helper.make_node("If", ["c"], ["y"], then_branch=_branch_calling("t0", "Neg2"),
                                else_branch=helper.make_graph([helper.make_node("Choose", ["c", "x"], ["e0"],
                                                                                domain="local")], "e0", [],
                                                              [helper.make_tensor_value_info("e0", TensorProto.FLOAT,
                                                                                             None)]))
    graph = helper.make_graph([outer_if], "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                                                helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=OPSETS, functions=[neg, relu, chooser], ir_version=10)
    xml = tmp_path / "m.xml"
    ir.write_model(converter.onnx_to_ir(model), xml)
    x = np.random.default_rng(0).standard_normal((1, 2, 6, 6)).astype(np.float32)
    for flag in (True, False):
        feeds = {"c": np.array(flag), "x": x}
        expected = run_onnxruntime(model, feeds)["y"]
        np.testing.assert_array_equal(expected, -2 * x if flag else np.maximum(x, 0))  # hand-worked
        np.testing.assert_array_equal(runtime.run(model, feeds)["y"], expected)
        np.testing.assert_array_equal(run_openvino_xml(xml, feeds)["y"], expected)


def test_a_function_that_calls_itself_inside_an_if_branch_is_refused():
    branch = _branch_calling("t", "Loop")
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "e", [],
                              [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)])
    body = [helper.make_node("If", ["c"], ["b"], then_branch=branch, else_branch=other)]
    loop = helper.make_function("local", "Loop", ["c", "x"], ["b"], body, OPSETS)
    model = _model([helper.make_node("Loop", ["c", "x"], ["y"], domain="local")], [loop])
    with pytest.raises(InvalidModelError, match="model-local function 'local.Loop' calls itself"):
        runtime.Session(model)
