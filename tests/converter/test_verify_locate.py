"""locate(): which tensors it searches, and the 'amplified' diagnosis of a node whose inputs agree.

The path is a stand-in Probe whose tensors are written here with numpy (the reference's own values, changed
where a test says), so each case fixes exactly where a path differs and why."""

from __future__ import annotations

import json

import numpy as np
import onnx
from click.testing import CliRunner
from onnx import TensorProto, helper

from poolir import ir, runtime
from poolir.converter.cli import main
from poolir.converter.verify.locate import Probe, locate, runtime_probe


def _model(nodes, outputs, initializers=()):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in outputs],
                              list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def _reference_tensors(model, feeds) -> dict[str, np.ndarray]:
    seen = {}
    runtime.Session(model).run(feeds, lambda name, value: seen.__setitem__(name, np.array(value)))
    return seen


def _path(tensors: dict[str, np.ndarray]) -> Probe:
    return Probe(lambda: set(tensors), lambda names: {name: tensors[name] for name in names})


FEEDS = {"x": np.linspace(-1.0, 1.0, 8, dtype=np.float32).reshape(1, 8)}


def test_a_tensor_no_diverging_output_reads_is_not_searched():
    # x -> Neg -> side (a dead end: no output reads it); x -> Relu -> a -> Sigmoid -> y
    model = _model([helper.make_node("Neg", ["x"], ["side"], name="neg"),
                    helper.make_node("Relu", ["x"], ["a"], name="relu"),
                    helper.make_node("Sigmoid", ["a"], ["y"], name="sigmoid")], ["y"])
    tensors = _reference_tensors(model, FEEDS)
    tensors["side"] = tensors["side"] + 1.0
    tensors["y"] = tensors["y"] + 1.0
    reference = runtime_probe(lambda: model, FEEDS, keep=True)
    everything = locate(reference, model, "peer(onnx)", _path(tensors), FEEDS)
    assert everything.divergence.node == "neg"
    searched = locate(reference, model, "peer(onnx)", _path(tensors), FEEDS, outputs=["y"])
    assert searched.divergence.node == "sigmoid"


def _softmax_model():
    # logits = x * 0.5 + 1e10: every logit rounds to 1e10 (one float32 ulp there is 1024), as in a
    # constant-weight network
    scale = helper.make_tensor("scale", TensorProto.FLOAT, [], [0.5])
    offset = helper.make_tensor("offset", TensorProto.FLOAT, [], [1e10])
    return _model([helper.make_node("Mul", ["x", "scale"], ["scaled"], name="mul"),
                   helper.make_node("Add", ["scaled", "offset"], ["logits"], name="add"),
                   helper.make_node("Softmax", ["logits"], ["y"], name="softmax", axis=1)], ["y"], [scale, offset])


def _numpy_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits.astype(np.float64) - logits.max(axis=1, keepdims=True))
    return (shifted / shifted.sum(axis=1, keepdims=True)).astype(np.float32)


def test_a_softmax_fed_logits_one_ulp_apart_is_amplifying_not_diverging():
    model = _softmax_model()
    tensors = _reference_tensors(model, FEEDS)
    logits = tensors["logits"].copy()
    logits[0, ::2] = np.nextafter(logits[0, ::2], np.float32(np.inf))   # one ulp: within any float32 tolerance
    tensors["logits"] = logits
    tensors["y"] = _numpy_softmax(logits)
    location = locate(runtime_probe(lambda: model, FEEDS, keep=True), model, "peer(onnx)", _path(tensors), FEEDS,
                      outputs=["y"])
    assert location.divergence.node == "softmax"
    assert location.divergence.amplified is True


def test_a_softmax_that_computes_differently_is_not_amplifying():
    model = _softmax_model()
    tensors = _reference_tensors(model, FEEDS)
    y = tensors["y"].copy()
    tensors["y"] = np.roll(y, 1, axis=1)       # a wrong softmax from agreeing logits
    if np.array_equal(tensors["y"], y):        # a uniform softmax rolls onto itself: make it differ
        tensors["y"] = y * 2
    location = locate(runtime_probe(lambda: model, FEEDS, keep=True), model, "peer(onnx)", _path(tensors), FEEDS,
                      outputs=["y"])
    assert location.divergence.node == "softmax"
    assert location.divergence.amplified is False


def test_light_squeezenet_softmax_is_reported_amplified(tmp_path):
    """The onnx package's light_squeezenet has constant weights: its logits are all equal (~1.05e10), and the
    peers' softmax (0.001 everywhere) differs from poolir's because OpenBLAS sums some rows in another order.
    The search must say the Softmax amplifies, with the peers' own logits as the proof."""
    import json
    import os
    import subprocess
    import sys

    path = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light", "light_squeezenet.onnx")
    result = subprocess.run([sys.executable, "-m", "poolir", "verify", path, "--peer", "onnxruntime", "--json"],
                            capture_output=True, text=True, timeout=600)
    document = json.loads(result.stdout)
    divergences = document["models"][0]["divergences"]
    if not divergences:   # this machine's BLAS summed every row alike: nothing to diagnose
        assert result.returncode == 0
        return
    for divergence in divergences:
        assert divergence["node"]["op"] == "Softmax-1", divergence
        assert divergence["node"]["amplified"] is True, divergence


def _ir_with_an_unnamed_port():
    """x -> Add(bias) 'biased' -> ReLU 'relu' -> Multiply(2) (an unnamed port, as OpenVINO leaves most) -> Add(1)
    'y'. The bias holds a NaN: ReLU makes it 0 in IR (OpenVINO) and keeps it in ONNX."""
    b = ir.GraphBuilder("unnamed")
    x = b.parameter("x", "f32", (1, 4))
    bias = b.const(np.array([[0.5, np.nan, -2.0, 1.0]], np.float32))
    (biased,) = b.add("Add", "opset1", [x, bias], {"auto_broadcast": "numpy"}, name="bias", output_names=["biased"])
    (relu,) = b.add("ReLU", "opset1", [biased], name="relu", output_names=["relu"])
    (doubled,) = b.add("Multiply", "opset1", [relu, b.const(np.float32(2))], {"auto_broadcast": "numpy"},
                       name="double")
    (y,) = b.add("Add", "opset1", [doubled, b.const(np.float32(1))], {"auto_broadcast": "numpy"}, name="plus_one",
                 output_names=["y"])
    b.result(y, "y")
    return b.build()


def test_an_unnamed_ir_port_does_not_hide_the_tensors_behind_it():
    model = _ir_with_an_unnamed_port()
    feeds = {"x": np.array([[1.0, 2.0, 3.0, -4.0]], np.float32)}
    tensors = _reference_tensors(model, feeds)
    assert tensors["relu"][0, 1] == 0 and "y" in tensors  # OpenVINO's ReLU(NaN)
    tensors["relu"] = np.where(np.isnan(tensors["biased"]), np.float32(np.nan), tensors["relu"])  # ONNX's Relu
    tensors["y"] = tensors["relu"] * 2 + 1
    location = locate(runtime_probe(lambda: model, feeds, keep=True), model, "peer(ir->onnx)", _path(tensors),
                      feeds, outputs=["y"])
    assert (location.divergence.node, location.compared) == ("relu", 1)  # 'biased' agreed, 'relu' differs


def test_verify_names_the_relu_behind_an_unnamed_ir_port(tmp_path):
    path = tmp_path / "m.xml"
    ir.write_model(_ir_with_an_unnamed_port(), path)
    result = CliRunner().invoke(main, ["verify", str(path), "--json"])
    (model,) = json.loads(result.stdout)["models"]
    (divergence,) = model["divergences"]
    assert (divergence["path"], divergence["node"]["name"]) == ("runtime(ir->onnx)", "relu")
