"""Regressions of the defects the whole-network fuzzer (network_fuzz.py) found, each as a small fixed mutant:
the CLI keeps its contract (exit 0 with nothing but results, or exit 2 with one line naming the file) and, where
an engine is involved, agrees with what onnxruntime or OpenVINO do with the same file."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from poolir import ir
from tests.peers import onnxruntime_run, openvino_core, openvino_run_xml
from tests.robustness.cli_check import invoke_cli


def _onnx(path, nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs], initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    onnx.save(model, path)
    return model


def _one_line_error(result, path, *fragments) -> str:
    assert result.exit_code == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert str(path) in line and all(f in line for f in fragments), line
    return line


# -- a mean over an empty axis printed numpy's "Mean of empty slice" warning on stderr, and gave NaN ---------------
def test_onnx_mean_over_an_empty_axis_is_zero_like_onnxruntime_and_prints_nothing(tmp_path):
    path = tmp_path / "m.onnx"
    model = _onnx(path, [helper.make_node("ReduceMean", ["x"], ["y"], axes=[1], keepdims=0)],
                  [("x", TensorProto.FLOAT, [2, 0, 3])], [("y", TensorProto.FLOAT, [2, 3])])
    feeds = {"x": np.zeros((2, 0, 3), np.float32)}
    np.savez(tmp_path / "in.npz", **feeds)
    result = invoke_cli("run", ["run", path, "--inputs", tmp_path / "in.npz", "-o", tmp_path / "out.npz"])
    assert result.exit_code == 0 and result.stderr == "", result.stderr
    # The ONNX spec: "Reduction over an empty set of values yields undefined"; onnxruntime gives 0.
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["y"], onnxruntime_run(model, feeds)["y"])


def test_ir_mean_over_an_empty_axis_is_zero_like_openvino(tmp_path):
    b = ir.GraphBuilder("mean")
    x = b.parameter("x", "f32", (2, 0, 3))
    (y,) = b.add("ReduceMean", "opset1", [x, b.const(np.array([1], np.int64))], {"keep_dims": False})
    b.result(y, "y")
    path = tmp_path / "m.xml"
    ir.write_model(b.build(), path)
    feeds = {"x": np.zeros((2, 0, 3), np.float32)}
    np.savez(tmp_path / "in.npz", **feeds)
    result = invoke_cli("run", ["run", path, "--inputs", tmp_path / "in.npz", "-o", tmp_path / "out.npz"])
    assert result.exit_code == 0 and result.stderr == "", result.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["y"], openvino_run_xml(path, feeds)["y"])


# -- BatchNormalization epsilon = inf was converted to an IR OpenVINO cannot compile ---------------------------
def _batch_norm_ir(epsilon: str) -> bytes:
    b = ir.GraphBuilder("bn")
    x = b.parameter("x", "f32", (1, 2, 3))
    per_channel = [b.const(np.array(v, np.float32)) for v in ([1, 2], [0, 1], [0, 0], [1, 1])]
    (y,) = b.add("BatchNormInference", "opset5", [x, *per_channel], {"epsilon": 1e-3}, name="bn")
    b.result(y, "y")
    xml, weights = ir.serialize(b.build())
    assert xml.count(b'epsilon="0.001"') == 1
    return xml.replace(b'epsilon="0.001"', f'epsilon="{epsilon}"'.encode()), weights


@pytest.mark.parametrize("epsilon", ["inf", "1e39"])
def test_batch_norm_epsilon_above_the_largest_f32_is_refused_as_openvino_refuses_it(tmp_path, epsilon):
    xml, weights = _batch_norm_ir(epsilon)
    path = tmp_path / "bn.xml"
    path.write_bytes(xml)
    path.with_suffix(".bin").write_bytes(weights)
    core = openvino_core()
    with pytest.raises(RuntimeError, match="out of range for f32"):  # OpenVINO reads it, its CPU plugin refuses it
        core.compile_model(core.read_model(str(path)), "CPU")
    _one_line_error(invoke_cli("run", ["run", path]), path, "'bn'", "epsilon")


def test_onnx_batch_norm_with_an_infinite_epsilon_is_not_converted(tmp_path):
    path = tmp_path / "bn.onnx"
    stats = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in
             (("s", [1, 2]), ("b", [0, 1]), ("m", [0, 0]), ("v", [1, 1]))]
    _onnx(path, [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn",
                                  epsilon=float("inf"))],
          [("x", TensorProto.FLOAT, [1, 2, 3])], [("y", TensorProto.FLOAT, [1, 2, 3])], stats)
    result = invoke_cli("convert", ["convert", path, "-o", tmp_path / "bn.xml"])
    _one_line_error(result, path, "'bn'", "epsilon")
    assert not (tmp_path / "bn.xml").exists() and not (tmp_path / "bn.bin").exists()


# -- a graph output named "" (ONNX's name for an omitted optional input) crashed `run` with an AttributeError -----
@pytest.mark.parametrize("what", ["output", "input"])
def test_a_graph_value_with_an_empty_name_is_refused_by_every_command(tmp_path, what):
    path = tmp_path / "m.onnx"
    names = {"input": ("", "y"), "output": ("x", "")}[what]
    _onnx(path, [helper.make_node("Relu", [names[0]], [names[1]])], [(names[0], TensorProto.FLOAT, [2])],
          [(names[1], TensorProto.FLOAT, [2])])
    for command in (["run", path], ["inspect", path], ["verify", path], ["convert", path, "-o", tmp_path / "m.xml"]):
        _one_line_error(invoke_cli(command[0], command), path, f"a graph {what} has an empty name")
    assert not (tmp_path / "m.xml").exists()
