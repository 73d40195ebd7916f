"""ONNX -> IR writes each weight once and folds the constant subgraphs (issue 11): identical initializers share
one blob in the .bin, no Const is left unread, and ConstantOfShape, Shape of a static shape and Identity chains
become no layers; the torch.export style's flatten (Shape, Squeeze, Concat, Reshape) becomes one Reshape with a
constant target, as in OpenVINO's own IR. OpenVINO runs each IR and agrees with onnxruntime on the ONNX.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from poolir import ir
from poolir.converter import onnx_to_ir
from tests.networks import torchvision
from tests.networks.peers import agree, ir_layer_types, openvino_ir_of, run_onnxruntime, run_openvino_xml


def _model(nodes, initializers, output_dims):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, output_dims)], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _converted(model, tmp_path):
    xml = tmp_path / "m.xml"
    ir.write_model(onnx_to_ir(model), xml)
    feeds = {"x": np.random.default_rng(0).standard_normal((1, 4, 6, 6)).astype(np.float32)}
    ok, max_abs, _ = agree(run_openvino_xml(xml, feeds, ["y"])["y"], run_onnxruntime(model, feeds)["y"])
    assert ok, f"OpenVINO on poolir's IR differs from onnxruntime by {max_abs}"
    weights = xml.with_suffix(".bin")
    return ir.read_model(xml), weights.stat().st_size if weights.exists() else 0


def _unread_layers(model: ir.Model) -> list[str]:
    read = {edge.from_layer for edge in model.edges}
    return [layer.name for layer in model.layers if layer.id not in read and layer.type != "Result"]


def test_identical_weights_share_one_blob_and_no_const_is_left_unread(tmp_path):
    """Two Convs with byte-identical weights and biases (a bias is reshaped to [1,C,1,1] by the converter, which
    once left the initializer's own Const in the file, unread)."""
    weight = np.random.default_rng(1).standard_normal((4, 4, 3, 3)).astype(np.float32)
    bias = np.linspace(-1, 1, 4, dtype=np.float32)
    inits = [numpy_helper.from_array(weight, "w1"), numpy_helper.from_array(weight.copy(), "w2"),
             numpy_helper.from_array(bias, "b1"), numpy_helper.from_array(bias.copy(), "b2")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["a", "w2", "b2"], ["y"], pads=[1, 1, 1, 1])]
    model, bin_size = _converted(_model(nodes, inits, [1, 4, 6, 6]), tmp_path)
    assert _unread_layers(model) == []
    assert bin_size == weight.nbytes + bias.nbytes
    assert Counter(layer.type for layer in model.layers)["Const"] == 2


def test_constant_of_shape_static_shape_and_identity_chains_fold(tmp_path):
    """y = x + ConstantOfShape(Shape(x))[0.5] through two Identities: one Add and one Const."""
    value = helper.make_tensor("v", TensorProto.FLOAT, [1], [0.5])
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("ConstantOfShape", ["s"], ["c"], value=value),
             helper.make_node("Identity", ["c"], ["i1"]), helper.make_node("Identity", ["i1"], ["i2"]),
             helper.make_node("Identity", ["x"], ["xi"]), helper.make_node("Add", ["xi", "i2"], ["y"])]
    model, _ = _converted(_model(nodes, [], [1, 4, 6, 6]), tmp_path)
    assert Counter(layer.type for layer in model.layers) == {"Parameter": 1, "Const": 1, "Add": 1, "Result": 1}


@pytest.mark.parametrize("name", ["resnet_basic", "mobilenet_v3", "shufflenet_v2", "densenet"])
def test_the_dynamo_style_shape_arithmetic_folds_as_in_openvinos_ir(built, name, tmp_path):
    """No ShapeOf, Gather, Squeeze or Unsqueeze is left of torch.export's flatten; the .bin holds no more than
    OpenVINO's (f32 weights) plus the BatchNorm statistics, which poolir keeps as BatchNormInference (folding
    them into the convolution changes its rounding) and OpenVINO folds into the convolution's weights."""
    model = built(name, "dynamo")
    proto = torchvision.proto_of(model)
    xml = tmp_path / "poolir.xml"
    converted = onnx_to_ir(proto)
    ir.write_model(converted, xml)
    theirs = openvino_ir_of(model, tmp_path, compress_to_fp16=False)
    ours = Counter(layer.type for layer in converted.layers)
    assert not {"ShapeOf", "Gather", "Squeeze", "Unsqueeze"} & set(ours), ours
    assert ours["Reshape"] == sum(n for (kind, _), n in ir_layer_types(theirs).items() if kind == "Reshape")
    assert _unread_layers(converted) == []
    batch_norm = {name for node in proto.graph.node if node.op_type == "BatchNormalization" for name in node.input[1:]}
    statistics = sum(init.dims[0] * 4 for init in proto.graph.initializer if init.name in batch_norm)
    assert xml.with_suffix(".bin").stat().st_size <= theirs.with_suffix(".bin").stat().st_size + statistics


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("networks")
    return lambda name, style: torchvision.build(name, style, seed=0, folder=folder)


def test_onnx_model_with_unread_initializer_still_converts(tmp_path):
    """An initializer no node reads is no layer at all."""
    inits = [numpy_helper.from_array(np.ones((3, 3), np.float32), "unused")]
    model, _ = _converted(_model([helper.make_node("Relu", ["x"], ["y"])], inits, [1, 4, 6, 6]), tmp_path)
    assert Counter(layer.type for layer in model.layers) == {"Parameter": 1, "ReLU": 1, "Result": 1}


def test_a_big_weight_reshaped_before_its_gemm_is_folded(tmp_path):
    """GoogLeNet (model zoo) reshapes its 1000x1024 classifier weight before the Gemm: more elements than the
    folding bound, but a reshape is a view, so it folds; the IR holds the weight once and no Reshape layer."""
    weight = np.random.default_rng(2).standard_normal((1100, 1000, 1, 1)).astype(np.float32)
    inits = [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(np.array([1100, 1000]), "shape")]
    nodes = [helper.make_node("Flatten", ["x"], ["f"]), helper.make_node("Reshape", ["w", "shape"], ["w2"]),
             helper.make_node("Gemm", ["f", "w2"], ["g"], transB=1),
             helper.make_node("Reshape", ["g", "back"], ["y"])]
    inits.append(numpy_helper.from_array(np.array([1, 1100, 1, 1]), "back"))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1000, 1, 1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1100, 1, 1])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    xml = tmp_path / "m.xml"
    converted = onnx_to_ir(model)
    ir.write_model(converted, xml)
    feeds = {"x": np.random.default_rng(0).standard_normal((1, 1000, 1, 1)).astype(np.float32)}
    ok, max_abs, _ = agree(run_openvino_xml(xml, feeds, ["y"])["y"], run_onnxruntime(model, feeds)["y"])
    assert ok, max_abs
    assert weight.nbytes <= xml.with_suffix(".bin").stat().st_size < weight.nbytes + 100
    assert _unread_layers(converted) == []
    assert Counter(layer.type for layer in converted.layers)["Reshape"] == 2  # Flatten's and `back`, not the weight's
