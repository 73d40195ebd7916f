"""OpenVINO's If-8 with a condition inference knows (ir.branches): run and converted as the body it takes.

The real case, OpenVINO's IR of PyTorch's TorchScript LocalResponseNorm export, is in
tests/networks/test_pytorch_blocks.py; here both branches of one If, static and with a dynamic batch, and hostile
edits of a body and its port map. The ONNX side of If is tests/runtime/test_if.py."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from poolir import converter, ir, runtime
from poolir.ir.branches import with_constant_branches
from poolir.ir.errors import InvalidModelError
from tests.networks.peers import ir_layer_types, openvino_ir_of, run_onnxruntime, run_openvino_xml

DATA = Path(__file__).parent / "data"


def _squeeze_if_one(channels: int, folder, batch: int | str = 2):
    """TorchScript's squeeze(1): Shape, Gather, Equal, If (then: Squeeze; else: Identity), then a Relu, as the ONNX
    file and as OpenVINO's IR of it."""
    one = numpy_helper.from_array(np.array(1, np.int64), "one")
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    then = helper.make_graph([helper.make_node("Squeeze", ["x", "axes"], ["t"])], "then", [],
                             [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["e"])], "else", [],
                              [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("Gather", ["shape", "one"], ["dim"]),
             helper.make_node("Equal", ["dim", "one"], ["c"]),
             helper.make_node("If", ["c"], ["chosen"], then_branch=then, else_branch=other),
             helper.make_node("Relu", ["chosen"], ["y"])]
    graph = helper.make_graph(nodes, "squeeze_if_one",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, channels, 3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [one, axes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return model, openvino_ir_of(model, folder, compress_to_fp16=False)


@pytest.mark.parametrize("batch", [2, "N"], ids=["static", "dynamic batch"])
@pytest.mark.parametrize("channels", [1, 3])
def test_the_body_the_condition_takes_runs_and_converts_as_openvino_runs_the_if(channels, batch, tmp_path):
    """With a dynamic batch, dim 1 of the shape the condition reads is still a number: inference carries the known
    elements of a shape vector (ir.shapes.TensorInfo.elements)."""
    model, xml = _squeeze_if_one(channels, tmp_path, batch)
    assert ir_layer_types(xml)[("If", "opset8")] == 1
    x = np.random.default_rng(channels).standard_normal((2, channels, 3, 4)).astype(np.float32)
    (expected,) = run_openvino_xml(xml, {"x": x}).values()
    assert expected.shape == ((2, 3, 4) if channels == 1 else (2, channels, 3, 4))
    read = ir.read_model(xml)
    (by_poolir,) = runtime.run(read, {"x": x}).values()
    np.testing.assert_array_equal(by_poolir, expected)
    back = converter.ir_to_onnx(read)
    assert "If" not in {node.op_type for node in back.graph.node}
    (by_onnxruntime,) = run_onnxruntime(back, {back.graph.input[0].name: x}).values()
    np.testing.assert_array_equal(by_onnxruntime, expected)
    if channels == 1:  # with 3 channels onnxruntime refuses the ONNX file: the untaken Squeeze fails its inference
        np.testing.assert_array_equal(by_onnxruntime, run_onnxruntime(model, {"x": x})["y"])
    assert ir.serialize(read) == (xml.read_bytes(), xml.with_suffix(".bin").read_bytes())  # the file keeps its If


# Hostile edits of the taken (then) body and its port map: each is refused with the file's error, never a crash.
BROKEN = {
    "a missing layer": (r'(<then_port_map>\s*<input external_port_id="\d+" internal_layer_id=")\d+', r"\g<1>999",
                        "the then_port_map names a layer its body does not have"),
    "a Parameter as output": (r'(<then_port_map>.*?<output external_port_id="\d+" internal_layer_id=")\d+', r"\g<1>0",
                              "maps a port to layer 0 of its body, which is a Parameter, not a Result"),
    "no integer port": (r'(<then_port_map>\s*<input external_port_id=")\d+', r"\g<1>x",
                        "a port map entry without integer external_port_id and internal_layer_id"),
    "an unconnected port": (r'(<then_port_map>\s*<input external_port_id=")\d+', r"\g<1>7",
                            "the then_port_map maps input port 7, which the If does not have"),
    "no output": (r'(<then_port_map>.*?)<output [^>]*/>', r"\g<1>", "but the then body does not compute it"),
    "no body": (r"<then_body>.*?</then_body>", "", "the If has no <then_body> or <then_port_map>"),
    "a Parameter fed by no port": (r'(<then_port_map>\s*)<input [^>]*/>', r"\g<1>",
                                   "the then_body's Parameter 0 is fed by no input port of the If"),
    "the body not taken broken": (r"<else_body>.*?</else_body>", "", "the If has no <else_body> or <else_port_map>"),
    "a Const past the .bin": (r'(<then_body>.*?offset=")\d+', r"\g<1>99999999", "lies past the end of the weights"),
}


@pytest.mark.parametrize("edit", sorted(BROKEN))
def test_a_broken_body_or_port_map_is_refused(edit, tmp_path):
    _, xml = _squeeze_if_one(1, tmp_path)
    assert_edit_refused(xml, *BROKEN[edit])


def assert_edit_refused(xml, pattern: str, replacement: str, message: str) -> None:
    """The first match of `pattern` in the file replaced: the model is read and kept as it stands (only run and
    convert look inside an If), and a Session and IR -> ONNX both refuse it with `message`."""
    text = xml.read_text()
    broken = re.sub(pattern, replacement, text, count=1, flags=re.S)
    assert broken != text
    xml.write_text(broken)
    model = ir.read_model(xml)
    for use in (runtime.Session, converter.ir_to_onnx):
        with pytest.raises(InvalidModelError, match=re.escape(message)):
            use(model)


def test_a_model_without_an_if_is_not_copied(tmp_path):
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = ir.read_model(openvino_ir_of(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                                           ir_version=8), tmp_path))
    assert with_constant_branches(model) is model


def test_openvinos_ir_of_a_dynamic_batch_local_response_norm_export_runs_and_converts(tmp_path):
    """PyTorch's TorchScript export (opset 17, dynamic batch) of Conv, ReLU, LocalResponseNorm and a ceil MaxPool:
    the If tests dim 1 of an AvgPool of the input reshaped to a target built from ShapeOf of the dynamic-batch
    tensor, which OpenVINO keeps. Inference carries the target's known elements (ir.shapes.TensorInfo.elements),
    so dim 1 is known through the pool, and so is the condition."""
    source = DATA / "local_response_norm_dynamic_batch_ts17.onnx"
    xml = openvino_ir_of(source, tmp_path, compress_to_fp16=False)
    assert ir_layer_types(xml)[("If", "opset8")] == 1
    x = np.random.default_rng(5).standard_normal((3, 3, 16, 16)).astype(np.float32)
    (expected,) = run_openvino_xml(xml, {"x": x}).values()
    read = ir.read_model(xml)
    np.testing.assert_allclose(next(iter(runtime.run(read, {"x": x}).values())), expected, rtol=1e-5, atol=1e-6)
    back = converter.ir_to_onnx(read)
    (by_onnxruntime,) = run_onnxruntime(back, {back.graph.input[0].name: x}).values()
    np.testing.assert_allclose(by_onnxruntime, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(run_onnxruntime(source, {"x": x})["y"], expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("then_node", ["Identity", "Neg"])
def test_the_spliced_body_keeps_the_ifs_output_name_as_openvino_names_it(then_node, tmp_path):
    """The If's output 'o' names the output, as in OpenVINO, whether the body computes it (Neg) or passes the outer
    x through (Identity: a copy carries the name; it was named 'x', after the input, or after the body's tensor)."""
    then = helper.make_graph([helper.make_node(then_node, ["x"], ["xi"])], "then", [],
                             [helper.make_tensor_value_info("xi", TensorProto.FLOAT, None)])
    other = helper.make_graph([helper.make_node("Abs", ["x"], ["xa"])], "else", [],
                              [helper.make_tensor_value_info("xa", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "one"], ["d"], axis=0),
             helper.make_node("Equal", ["d", "three"], ["c"]),
             helper.make_node("If", ["c"], ["o"], then_branch=then, else_branch=other)]
    graph = helper.make_graph(nodes, "splice", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
                              [helper.make_tensor_value_info("o", TensorProto.FLOAT, ["N", 3])],
                              [numpy_helper.from_array(np.array(1, np.int64), "one"),
                               numpy_helper.from_array(np.array(3, np.int64), "three")])
    xml = openvino_ir_of(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), tmp_path)
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    expected = run_openvino_xml(xml, {"x": x})
    assert list(expected) == ["o"]
    read = ir.read_model(xml)
    np.testing.assert_array_equal(runtime.run(read, {"x": x})["o"], expected["o"])
    back = converter.ir_to_onnx(read)
    assert [value.name for value in back.graph.output] == ["o"]
    np.testing.assert_array_equal(run_onnxruntime(back, {"x": x})["o"], expected["o"])
