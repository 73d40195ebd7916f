"""OpenVINO's If-8 decided at run time (runtime.ir_if), and its conversion to an ONNX If
(converter.ir_to_onnx.branches); an ONNX If decided at run time converted to an If-8 (converter.onnx_to_ir.branches).

The IRs are OpenVINO's own, of ONNX files whose If condition comes from the data: a run must take each branch as
OpenVINO does, and the ONNX If poolir writes must give the same in onnxruntime. An If a constant decides is
tests/ir/test_branches.py."""

from __future__ import annotations

import importlib
import re

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from poolir import converter, ir, runtime
from poolir.ir.errors import ConversionError, InvalidModelError, UnsupportedError
from poolir.ir.branches import MAX_NESTING, body_depth
from tests.ir.test_branches import assert_edit_refused
from tests.networks.peers import ir_layer_types, openvino_ir_of, run_onnxruntime, run_openvino_xml

SHAPE = [1, 3, 8, 8]


def _value(name: str, shape=SHAPE):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _branches(depth: int, tag: str = ""):
    """then: Relu(x), or at depth > 1 an If of its own on the mean of x; else: x * 2.5 - 1 (its own constants)."""
    if depth > 1:
        then_nodes = [*_condition(f"inner{tag}{depth}", 1.0),
                      helper.make_node("If", [f"inner{tag}{depth}c"], [f"t{tag}{depth}"],
                                       **_branches(depth - 1, f"{tag}{depth}"))]
    else:
        then_nodes = [helper.make_node("Relu", ["x"], [f"t{tag}{depth}"])]
    scale = numpy_helper.from_array(np.array(2.5, np.float32), f"scale{tag}{depth}")
    one = numpy_helper.from_array(np.array(1.0, np.float32), f"one{tag}{depth}")
    other = helper.make_graph([helper.make_node("Mul", ["x", f"scale{tag}{depth}"], [f"m{tag}{depth}"]),
                               helper.make_node("Sub", [f"m{tag}{depth}", f"one{tag}{depth}"], [f"e{tag}{depth}"])],
                              "else", [], [_value(f"e{tag}{depth}")], [scale, one])
    then = helper.make_graph(then_nodes, "then", [], [_value(f"t{tag}{depth}")])
    return {"then_branch": then, "else_branch": other}


def _condition(prefix: str, threshold: float):
    """prefix + "c": whether the mean of x exceeds `threshold` (a value only a run knows)."""
    threshold = helper.make_tensor(f"{prefix}t", TensorProto.FLOAT, [], [threshold])
    return [helper.make_node("ReduceMean", ["x"], [f"{prefix}m"], keepdims=0),
            helper.make_node("Constant", [], [f"{prefix}k"], value=threshold),
            helper.make_node("Greater", [f"{prefix}m", f"{prefix}k"], [f"{prefix}c"])]


def _if_model(depth: int = 1):
    nodes = [*_condition("outer", 0.1), helper.make_node("If", ["outerc"], ["chosen"], **_branches(depth)),
             helper.make_node("MaxPool", ["chosen"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])]
    graph = helper.make_graph(nodes, "runtime_if", [_value("x")], [_value("y", None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _inputs():
    """Inputs whose means take every path: the outer else (means -0.5, 0.05), the outer then with the inner else
    (0.3), and with the inner then (2.0)."""
    base = np.random.default_rng(3).standard_normal(SHAPE).astype(np.float32)
    return [base - base.mean() + shift for shift in (-0.5, 0.05, 0.3, 2.0)]


@pytest.mark.parametrize("writer", ["openvino", "poolir"])
@pytest.mark.parametrize("depth", [1, 2])
def test_an_if_decided_at_run_time_runs_and_converts_as_the_peers_run_it(depth, writer, tmp_path):
    """OpenVINO's IR of the ONNX file, and poolir's (converter.onnx_to_ir.branches): OpenVINO and poolir run it, and
    onnxruntime the ONNX If that IR -> ONNX writes, each as onnxruntime runs the source (OpenVINO's f16 weights
    round 2.5 and 1 exactly)."""
    model = _if_model(depth)
    xml = openvino_ir_of(model, tmp_path) if writer == "openvino" else _written(model, tmp_path)
    assert ir_layer_types(xml)[("If", "opset8")] == depth
    read = ir.read_model(xml)
    session = runtime.Session(read)
    back = converter.ir_to_onnx(read)
    assert [node.op_type for node in back.graph.node].count("If") == 1
    for x in _inputs():
        expected = run_onnxruntime(model, {"x": x})["y"]
        for computed in (run_openvino_xml(xml, {"x": x}), session.run({"x": x}), run_onnxruntime(back, {"x": x})):
            np.testing.assert_array_equal(next(iter(computed.values())), expected)
    if writer == "openvino":
        assert ir.serialize(read) == (xml.read_bytes(), xml.with_suffix(".bin").read_bytes())  # it keeps its If


# Hostile edits of the then port map of an If decided at run time (more: tests/ir/test_branches.py), each refused
# with the file's error.
BROKEN = {
    "an output port no body gives": (r'(<then_port_map>.*?)<output [^>]*/>', r"\g<1>",
                                     "the then_body gives no value for output port"),
    "the condition feeding a Parameter": (r'(<then_port_map>\s*<input external_port_id=")\d+', r"\g<1>0",
                                          "feeds a Parameter from port 0, the condition"),
}


@pytest.mark.parametrize("edit", sorted(BROKEN))
def test_a_broken_port_map_of_an_if_decided_at_run_time_is_refused(edit, tmp_path):
    assert_edit_refused(openvino_ir_of(_if_model(), tmp_path), *BROKEN[edit])


def test_a_body_that_computes_other_dims_than_the_if_declares_is_refused_by_the_run(tmp_path):
    """Inference trusts the If's declared output dims (the layer after it is planned from them): a run checks them."""
    xml = openvino_ir_of(_if_model(), tmp_path)
    text = xml.read_text()
    head, tail = text.split("<then_body>", 1)
    at = head.rindex("<output>")
    head = head[:at] + head[at:].replace("<dim>8</dim>", "<dim>9</dim>", 1)
    xml.write_text(head + "<then_body>" + tail)
    session = runtime.Session(ir.read_model(xml))
    then_input, else_input = _inputs()[3], _inputs()[0]
    with pytest.raises(InvalidModelError, match=r"the then_body computes output port \d+ as f32 \[1,3,8,8\], "
                                                r"and the If declares f32 \[1,3,9,8\]"):
        session.run({"x": then_input})
    with pytest.raises(InvalidModelError, match="the else_body computes"):
        session.run({"x": else_input})


def test_a_body_parameter_of_another_type_than_its_port_holds_is_refused_by_the_run_and_the_conversion(tmp_path):
    xml = openvino_ir_of(_if_model(), tmp_path)
    text = xml.read_text()
    edited = re.sub(r'(<then_body>\s*<layers>\s*<layer [^>]*type="Parameter"[^>]*>\s*<data [^>]*element_type=")f32',
                    r"\g<1>i64", text, count=1)
    assert edited != text
    xml.write_text(edited)
    model = ir.read_model(xml)
    message = r"the then_body's Parameter .* takes i64 \[1,3,8,8\], and its input port holds f32 \[1,3,8,8\]"
    with pytest.raises(InvalidModelError, match=message):
        converter.ir_to_onnx(model)
    with pytest.raises(InvalidModelError, match=message):
        runtime.run(model, {"x": _inputs()[3]})


def test_bodies_nested_too_deep_are_refused_by_the_run_and_the_conversion(tmp_path, monkeypatch):
    """The limit is the deepest ONNX If protobuf reads back (31; a file 32 deep fails to load)."""
    assert MAX_NESTING == 31
    read = ir.read_model(openvino_ir_of(_if_model(2), tmp_path))
    assert body_depth(next(layer for layer in read.layers if layer.type == "If")) == 2
    for module, use in (("poolir.runtime.ir_if", runtime.Session), ("poolir.converter.ir_to_onnx.branches",
                                                                     converter.ir_to_onnx)):
        monkeypatch.setattr(importlib.import_module(module), "MAX_NESTING", 1)
        with pytest.raises(UnsupportedError, match="If bodies nested more than 1 deep"):
            use(read)


# ------------------------------------------------------------------------------------------------------------
# ONNX If decided at run time -> If-8 (converter.onnx_to_ir.branches)

def _written(model, tmp_path, ir_version: int = 11):
    xml = tmp_path / f"poolir_v{ir_version}.xml"
    ir.write_model(converter.onnx_to_ir(model, ir_version=ir_version), xml)
    return xml


def test_branches_of_other_dims_give_dynamic_dims_and_ir_version_10_holds_them_too(tmp_path):
    """then: MaxPool 2x2 s2 ([1,3,4,4]); else: AveragePool 2x2 s1 ([1,3,7,7]), each reading the outer x."""
    then = helper.make_graph([helper.make_node("MaxPool", ["x"], ["t"], kernel_shape=[2, 2], strides=[2, 2])],
                             "then", [], [_value("t", [1, 3, 4, 4])])
    other = helper.make_graph([helper.make_node("AveragePool", ["x"], ["e"], kernel_shape=[2, 2])], "else", [],
                              [_value("e", [1, 3, 7, 7])])
    nodes = [*_condition("c", 0.1), helper.make_node("If", ["cc"], ["y"], then_branch=then, else_branch=other)]
    model = helper.make_model(helper.make_graph(nodes, "dims", [_value("x")], [_value("y", None)]),
                              opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    for version in (10, 11):
        xml = _written(model, tmp_path, version)
        (layer,) = [layer for layer in ir.read_model(xml).layers if layer.type == "If"]
        assert [dim.is_static for dim in layer.outputs[0].shape] == [True, True, False, False]
        for x in _inputs():
            expected = run_onnxruntime(model, {"x": x})["y"]
            assert expected.shape[2] in (4, 7)
            (by_openvino,) = run_openvino_xml(xml, {"x": x}).values()  # an average of 4: summation order
            np.testing.assert_allclose(by_openvino, expected, rtol=1e-6, atol=1e-7)
            by_poolir = next(iter(runtime.run(ir.read_model(xml), {"x": x}).values()))
            np.testing.assert_allclose(by_poolir, expected, rtol=1e-6, atol=1e-7)


def test_a_branch_returning_an_outer_value_or_a_constant_and_a_condition_of_shape_1(tmp_path):
    """onnxruntime refuses a branch whose output is an outer value; the spec allows it. Hand-worked: then gives x,
    else the initializer k; the condition is an input of shape [1]."""
    k = numpy_helper.from_array(np.full(SHAPE, 7.0, np.float32), "k")
    then = helper.make_graph([], "then", [], [_value("x")])
    other = helper.make_graph([], "else", [], [_value("k")], [k])
    condition = helper.make_tensor_value_info("c", TensorProto.BOOL, [1])
    graph = helper.make_graph([helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)], "pass",
                              [condition, _value("x")], [_value("y")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    xml = _written(model, tmp_path)
    x = _inputs()[0]
    for flag, expected in ((True, x), (False, np.full(SHAPE, 7.0, np.float32))):
        feeds = {"c": np.array([flag]), "x": x}
        np.testing.assert_array_equal(runtime.run(model, feeds)["y"], expected)
        np.testing.assert_array_equal(run_openvino_xml(xml, feeds)["y"], expected)
        np.testing.assert_array_equal(runtime.run(ir.read_model(xml), feeds)["y"], expected)


def test_branches_of_other_ranks_are_refused_by_the_conversion():
    axes = numpy_helper.from_array(np.array([0], np.int64), "axes")
    then = helper.make_graph([helper.make_node("Squeeze", ["x", "axes"], ["t"])], "then", [],
                             [_value("t", SHAPE[1:])])
    other = helper.make_graph([helper.make_node("Relu", ["x"], ["e"])], "else", [], [_value("e")])
    nodes = [*_condition("c", 0.1), helper.make_node("If", ["cc"], ["y"], then_branch=then, else_branch=other)]
    model = helper.make_model(helper.make_graph(nodes, "ranks", [_value("x")], [_value("y", None)], [axes]),
                              opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    with pytest.raises(ConversionError, match="the branches give output 'y' with ranks 3 and 4; an IR port has one "
                                              "rank"):
        converter.onnx_to_ir(model)


def test_if_ports_out_of_position_are_refused_as_openvino_refuses_them(tmp_path):
    """OpenVINO reads an If-8's ports by position, the condition first ("does not support input with element type:
    boolean" when the ports are listed 1, 2, 0)."""
    read = ir.read_model(openvino_ir_of(_if_model(), tmp_path))
    layer = next(layer for layer in read.layers if layer.type == "If")
    layer.inputs = [*layer.inputs[1:], layer.inputs[0]]
    for use in (runtime.Session, converter.ir_to_onnx):
        with pytest.raises(InvalidModelError, match=r"the If's ports are numbered \[1, 2, 0, 3\]; OpenVINO reads them "
                                                    "by position"):
            use(read)


def test_an_if8_without_any_const_is_written_without_a_bin_and_read_back(tmp_path):
    """The condition is an input and the branches have no constants: the IR has no .bin, as OpenVINO writes it."""
    then = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [], [_value("t")])
    other = helper.make_graph([helper.make_node("Abs", ["x"], ["e"])], "else", [], [_value("e")])
    graph = helper.make_graph([helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)], "no_bin",
                              [helper.make_tensor_value_info("c", TensorProto.BOOL, []), _value("x")], [_value("y")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    xml = _written(model, tmp_path)
    assert not xml.with_suffix(".bin").exists()
    x = _inputs()[0]
    for flag in (True, False):
        feeds = {"c": np.array(flag), "x": x}
        np.testing.assert_array_equal(runtime.run(ir.read_model(xml), feeds)["y"], run_openvino_xml(xml, feeds)["y"])
        np.testing.assert_array_equal(runtime.run(ir.read_model(xml), feeds)["y"], np.maximum(x, 0) if flag else np.abs(x))
