"""BatchNormalization, LRN and Dropout through poolir's converters, each direction run by the real engines.

- ONNX -> IR: poolir's IR run by OpenVINO vs the ONNX model run by onnxruntime.
- OpenVINO's own IR of an ONNX model (openvino.convert_model + save_model) -> ONNX by poolir, run by
  onnxruntime vs OpenVINO on that IR.
- ONNX -> IR -> ONNX under onnxruntime vs the original under onnxruntime.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from poolir import converter, ir, runtime
from poolir.ir.errors import PoolirError
from tests.peers import onnxruntime_run, openvino_convert_to_xml, openvino_run_xml

SHAPE = [2, 5, 4, 3]


def _model(nodes, outputs, opset, initializers=(), shape=SHAPE):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(name, elem, shape) for name, elem in outputs],
                              initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def _bn(opset, rng, epsilon=1e-3, stats_type=np.float32, shape=SHAPE, spatial=None):
    c = shape[1] if spatial is None or spatial else tuple(shape[1:])
    stats = [numpy_helper.from_array(rng.standard_normal(c).astype(stats_type), "scale"),
             numpy_helper.from_array(rng.standard_normal(c).astype(stats_type), "bias"),
             numpy_helper.from_array(rng.standard_normal(c).astype(stats_type), "mean"),
             numpy_helper.from_array((rng.random(c) * 2).astype(stats_type), "var")]
    attrs = {} if spatial is None else {"spatial": spatial}
    node = helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["y"], epsilon=epsilon,
                            **attrs)
    return _model([node], [("y", TensorProto.FLOAT)], opset, stats, shape)


def _lrn(opset, size, alpha=1e-4, beta=0.75, bias=1.0):
    node = helper.make_node("LRN", ["x"], ["y"], size=size, alpha=alpha, beta=beta, bias=bias)
    return _model([node], [("y", TensorProto.FLOAT)], opset)


def _dropout(opset, with_mask, training=None, after_lrn=False):
    inputs, inits = ["r" if after_lrn else "x"], []
    if training is not None:
        inputs += ["ratio", "training"]
        inits = [helper.make_tensor("ratio", TensorProto.FLOAT, [], [0.4]),
                 helper.make_tensor("training", TensorProto.BOOL, [], [training])]
    node = helper.make_node("Dropout", inputs, ["y", "mask"] if with_mask else ["y"])
    outputs = [("y", TensorProto.FLOAT)] + ([("mask", TensorProto.BOOL)] if with_mask else [])
    # after_lrn: OpenVINO's IR of a Dropout on a graph input is a Parameter feeding the Result, whose port
    # OpenVINO names by the output's name; an LRN before it keeps the input's name for the input.
    before = [helper.make_node("LRN", ["x"], ["r"], size=3)] if after_lrn else []
    return _model([*before, node], outputs, opset, inits)


def _models():
    rng = np.random.default_rng(42)
    cases = []
    for opset, epsilon in ((7, 1e-5), (9, 0.1), (14, 1e-3), (15, 1e-5), (22, 0.1)):
        cases.append((f"bn{opset}_eps{epsilon}", _bn(opset, rng, epsilon)))
    # (f32 X with f64 statistics, BatchNormalization-15's T2: onnxruntime 1.31 has no kernel for it)
    cases.append(("bn_rank2", _bn(15, rng, 1e-3, shape=[3, 5])))
    cases.append(("bn7_spatial0", _bn(7, rng, 1e-3, spatial=0)))  # statistics per element of a sample
    cases.append(("bn7_spatial1", _bn(7, rng, 1e-3, spatial=1)))
    for size in (1, 3, 5):
        for bias in (2.0, 1.5, 0.3):
            cases.append((f"lrn_s{size}_b{bias}", _lrn(13, size, alpha=0.5, beta=0.75, bias=bias)))
    cases.append(("lrn1_defaults", _lrn(7, 5)))
    cases.append(("dropout7", _dropout(7, False)))
    cases.append(("dropout13_mask", _dropout(13, True)))
    cases.append(("dropout12_after_lrn", _dropout(12, True, after_lrn=True)))
    cases.append(("dropout22_training_false", _dropout(22, True, training=False)))
    return cases


MODELS = _models()


def _feeds(index=0, model=None):
    shape = SHAPE if model is None else [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    return {"x": (np.random.default_rng(index).standard_normal(shape) * 2).astype(np.float32)}


def _close(got, want, name):
    if want.dtype == bool:
        np.testing.assert_array_equal(got, want, err_msg=name)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("name, model", MODELS, ids=[name for name, _ in MODELS])
def test_onnx_to_ir_runs_like_onnxruntime_in_openvino(name, model, tmp_path):
    feeds = _feeds(0, model)
    want = onnxruntime_run(model, feeds)
    path = tmp_path / "m.xml"
    ir.write_model(converter.onnx_to_ir(model), path)
    got = openvino_run_xml(path, feeds, list(want))
    for output in want:
        if output == "mask" and model.opset_import[0].version < 12:
            continue  # onnxruntime's mask before opset 12 is all false (tests/runtime/test_normalization_onnx.py)
        _close(got[output], want[output], output)


@pytest.mark.parametrize("name, model", MODELS, ids=[name for name, _ in MODELS])
def test_onnx_to_ir_to_onnx_under_onnxruntime(name, model):
    feeds = _feeds(1, model)
    want = onnxruntime_run(model, feeds)
    back = converter.ir_to_onnx(converter.onnx_to_ir(model), opset=22)
    got = onnxruntime_run(back, feeds)
    for output in want:
        _close(got[output], want[output], output)


def _openvino_ir_cases():
    rng = np.random.default_rng(7)
    cases = [("bn9", _bn(9, rng)), ("bn15", _bn(15, rng, 0.2)), ("dropout13", _dropout(13, False, after_lrn=True))]
    for size in (1, 2, 3, 4, 5, 6):  # OpenVINO's frontend keeps even sizes; poolir carries its window
        for bias in (1.0, 1.5):  # ... and a non-integer bias, which OpenVINO's CPU plugin truncates
            cases.append((f"lrn_s{size}_b{bias}", _lrn(13, size, alpha=0.4, beta=0.75, bias=bias)))
    return cases


# openvino.convert_model takes ~1.5 s a model: these three run always, the rest with the slow tests.
FAST_OPENVINO_IR_CASES = {"bn15", "dropout13", "lrn_s4_b1.5"}
OPENVINO_IR_CASES = [pytest.param(name, model, id=name,
                                  marks=() if name in FAST_OPENVINO_IR_CASES else pytest.mark.slow)
                     for name, model in _openvino_ir_cases()]


@pytest.mark.parametrize("name, model", OPENVINO_IR_CASES)
def test_openvino_ir_to_onnx_runs_like_openvino(name, model, tmp_path):
    xml = openvino_convert_to_xml(model, tmp_path / "ov.xml")
    feeds = _feeds(2)
    want = openvino_run_xml(xml, feeds, ["y"])
    onnx_model = converter.ir_to_onnx(ir.read_model(xml), opset=22)
    got = onnxruntime_run(onnx_model, feeds)
    _close(got["y"], want["y"], "y")


def test_openvino_frontend_lrn_bias_is_truncated_where_poolir_is_exact(tmp_path):
    """OpenVINO's own ONNX -> IR keeps bias 1.5, which its CPU plugin runs as 1; poolir's IR keeps the meaning."""
    model = _lrn(13, 3, alpha=0.4, beta=0.75, bias=1.5)
    feeds = _feeds(3)
    want = onnxruntime_run(model, feeds)["y"]
    frontend = openvino_run_xml(openvino_convert_to_xml(model, tmp_path / "ov.xml"), feeds, ["y"])["y"]
    assert np.abs(frontend - want).max() > 1e-2
    path = tmp_path / "poolir.xml"
    ir.write_model(converter.onnx_to_ir(model), path)
    np.testing.assert_allclose(openvino_run_xml(path, feeds, ["y"])["y"], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("model, match", [
    (lambda: _lrn(13, 4), "even"),
    (lambda: _lrn(13, 3, bias=-0.5), "truncates"),
    (lambda: _dropout(13, False, training=True), "training_mode is true"),
])
def test_onnx_to_ir_refusals(model, match):
    with pytest.raises(PoolirError, match=match):
        converter.onnx_to_ir(model())


def test_ir_to_onnx_refuses_spatial_lrn():
    from poolir.ir.builder import GraphBuilder

    builder = GraphBuilder()
    x = builder.parameter("x", "f32", SHAPE)
    (y,) = builder.add("LRN", "opset1", [x, builder.const(np.array([2, 3], np.int64))],
                       {"alpha": 1.0, "beta": 0.75, "bias": 1.0, "size": 3})
    builder.result(y, "y")
    with pytest.raises(PoolirError, match="across channels"):
        converter.ir_to_onnx(builder.build())


def test_dropout_output_name_is_kept():
    model = _dropout(13, True)
    irm = converter.onnx_to_ir(model)
    back = converter.ir_to_onnx(irm)
    assert [o.name for o in back.graph.output] == ["y", "mask"]
    onnx.checker.check_model(back)


def test_dropout_with_omitted_ratio_and_constant_training_mode_false():
    """Dropout-12 with ratio omitted (an empty input name) and training_mode a constant false: an identity."""
    node = helper.make_node("Dropout", ["x", "", "training"], ["y"])
    training = helper.make_tensor("training", TensorProto.BOOL, [], [False])
    model = _model([node], [("y", TensorProto.FLOAT)], 13, [training])
    feeds = _feeds(4)
    back = converter.ir_to_onnx(converter.onnx_to_ir(model))
    np.testing.assert_array_equal(onnxruntime_run(back, feeds)["y"], onnxruntime_run(model, feeds)["y"])


def test_dropout_with_training_mode_from_a_graph_input_is_refused():
    node = helper.make_node("Dropout", ["x", "", "training"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE),
                                            helper.make_tensor_value_info("training", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, SHAPE)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    with pytest.raises(PoolirError, match="not a constant"):
        converter.onnx_to_ir(model)


@pytest.mark.parametrize("epsilon", [-1.5, float("nan")])
def test_batch_norm_epsilon_openvino_refuses_converts_to_the_formula(epsilon, tmp_path):
    """A negative or NaN epsilon is legal ONNX, but OpenVINO's BatchNormInference refuses it: the conversion
    writes the formula's own layers. Oracle: the spec's formula in float64 (onnxruntime gives NaN everywhere
    for a negative epsilon, even where var + epsilon > 0), run by OpenVINO on poolir's IR."""
    rng = np.random.default_rng(7)
    model = _bn(15, rng, epsilon=epsilon)
    stats = {init.name: numpy_helper.to_array(init).astype(np.float64).reshape(1, -1, 1, 1)
             for init in model.graph.initializer}
    feeds = _feeds(0, model)
    want = ((feeds["x"] - stats["mean"]) / np.sqrt(stats["var"] + np.float32(epsilon)) * stats["scale"]
            + stats["bias"])
    assert epsilon != epsilon or (np.isfinite(want).any() and np.isnan(want).any())  # var + eps on both sides of 0
    path = tmp_path / "m.xml"
    ir.write_model(converter.onnx_to_ir(model), path)
    got = openvino_run_xml(path, feeds, ["y"])["y"]
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("opset", [10, 13, 22])
def test_dropout_mask_of_a_tensor_with_dynamic_dims(opset, tmp_path):
    """The mask of an inference Dropout is all kept: with dims known only at run time it is a one broadcast to
    ShapeOf(x) (it was refused, the mask being written as a constant). Run at two shapes by OpenVINO and poolir."""
    node = helper.make_node("Dropout", ["x"], ["y", "mask"])
    dynamic = ["n", 5, "h", 3]
    model = _model([node], [("y", TensorProto.FLOAT), ("mask", TensorProto.BOOL)], opset, shape=dynamic)
    path = tmp_path / "m.xml"
    ir.write_model(converter.onnx_to_ir(model), path)
    for shape in ([2, 5, 4, 3], [1, 5, 7, 3]):
        feeds = {"x": np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)}
        want = onnxruntime_run(model, feeds)
        for got in (openvino_run_xml(path, feeds, ["y", "mask"]), runtime.run(ir.read_model(path), feeds)):
            np.testing.assert_array_equal(got["y"], feeds["x"])
            np.testing.assert_array_equal(got["mask"], np.ones(shape, bool))
            if opset >= 12:  # onnxruntime's mask before opset 12 is all false (test_normalization_onnx.py)
                np.testing.assert_array_equal(got["mask"], want["mask"])
