"""`poolir run` through click's CliRunner. Expected numbers come from onnxruntime or hand-worked cases."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper

from poolir.converter.cli import main
from tests.peers import onnxruntime_run


def _maxpool_model(shape=(1, 2, 6, 6), dtype=TensorProto.FLOAT, with_indices=False):
    node = helper.make_node("MaxPool", ["x"], ["y", "i"] if with_indices else ["y"], kernel_shape=[3, 3],
                            strides=[2, 2], pads=[1, 1, 1, 1])
    outputs = [helper.make_tensor_value_info("y", dtype, None)]
    if with_indices:
        outputs.append(helper.make_tensor_value_info("i", TensorProto.INT64, None))
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", dtype, list(shape))], outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)], ir_version=10)


@pytest.fixture
def model_path(tmp_path):
    path = tmp_path / "net.onnx"
    onnx.save(_maxpool_model(with_indices=True), path)
    return path


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_run_with_input_file_matches_onnxruntime(tmp_path, model_path):
    x = np.random.default_rng(1).standard_normal((1, 2, 6, 6)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "out.npz"
    result = invoke("run", model_path, "--input", f"x={tmp_path / 'x.npy'}", "-o", out)
    assert result.exit_code == 0, result.output
    expected = onnxruntime_run(_maxpool_model(with_indices=True), {"x": x})
    with np.load(out) as saved:
        assert sorted(saved.files) == ["i", "y"]
        np.testing.assert_array_equal(saved["y"], expected["y"])
        np.testing.assert_array_equal(saved["i"], expected["i"])
    lines = result.output.strip().splitlines()
    assert lines[0].startswith("y: shape [1,2,3,3]  dtype float32  min ")
    assert lines[1].startswith("i: shape [1,2,3,3]  dtype int64  min ")


def test_run_json_summary_of_hand_worked_case(tmp_path, model_path):
    x = np.arange(72, dtype=np.float32).reshape(1, 2, 6, 6)
    np.savez(tmp_path / "feeds.npz", x=x)
    result = invoke("run", model_path, "--inputs", tmp_path / "feeds.npz", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    y = report["outputs"][0]
    # 3x3 windows, stride 2, pads 1: each output is the bottom-right real element of its window,
    # rows 1, 3, 5 and columns 1, 3, 5 of each 6x6 channel.
    expected = x[0, :, 1::2, 1::2]
    assert y == {"name": "y", "shape": [1, 2, 3, 3], "dtype": "float32", "min": float(expected.min()),
                 "max": float(expected.max()), "mean": pytest.approx(float(expected.mean()))}
    assert report["outputs"][1]["name"] == "i"


def test_random_inputs_are_reproducible_and_seed_dependent(model_path):
    first = invoke("run", model_path, "--json", "--seed", "3").output
    again = invoke("run", model_path, "--json", "--seed", "3").output
    other = invoke("run", model_path, "--json", "--seed", "4").output
    assert first == again
    assert first != other
    summary = json.loads(first)["outputs"][0]
    assert -1.0 <= summary["min"] <= summary["max"] < 1.0  # floats are drawn from [-1, 1)


def test_random_uint8_input_spans_the_type(tmp_path):
    path = tmp_path / "u8.onnx"
    onnx.save(_maxpool_model(shape=(1, 1, 40, 40), dtype=TensorProto.UINT8), path)
    result = invoke("run", path, "--json", "-o", tmp_path / "o.npz")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)["outputs"][0]
    assert summary["dtype"] == "uint8" and summary["max"] == 255


def _bad(result, *fragments):
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_dynamic_dims_need_an_input(tmp_path):
    path = tmp_path / "dyn.onnx"
    model = _maxpool_model()
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    model.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "H"  # a dynamic batch alone defaults to 1
    onnx.save(model, path)
    _bad(invoke("run", path), "input 'x' has dynamic dims", "--input x=")
    x = np.zeros((3, 2, 6, 6), np.float32)
    np.save(tmp_path / "x.npy", x)
    result = invoke("run", path, "--input", f"x={tmp_path / 'x.npy'}")
    assert result.exit_code == 0 and "shape [3,2,3,3]" in result.output


def test_bad_inputs_exit_2_with_one_line(tmp_path, model_path):
    np.save(tmp_path / "x64.npy", np.zeros((1, 2, 6, 6), np.float64))
    np.save(tmp_path / "rank3.npy", np.zeros((2, 6, 6), np.float32))
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    (tmp_path / "junk.onnx").write_bytes(b"\x00garbage")
    _bad(invoke("run", model_path, "--input", f"x={tmp_path / 'x64.npy'}"), "input 'x'", "float64", "float32")
    _bad(invoke("run", model_path, "--input", f"x={tmp_path / 'rank3.npy'}"), "input 'x'", "rank 3")
    _bad(invoke("run", model_path, "--input", f"z={tmp_path / 'x64.npy'}"), "unknown input 'z'", "'x'")
    _bad(invoke("run", model_path, "--input", "x"), "NAME=FILE.npy")
    _bad(invoke("run", model_path, "--input", f"x={tmp_path / 'missing.npy'}"), "missing.npy", "no such file")
    _bad(invoke("run", model_path, "--input", f"x={tmp_path / 'junk.npy'}"), "junk.npy", "not a readable .npy")
    _bad(invoke("run", tmp_path / "junk.onnx"), "junk.onnx", "not a readable ONNX model")
    _bad(invoke("run", tmp_path / "nothing.onnx"), "nothing.onnx", "no such file")
    _bad(invoke("run", tmp_path / "model.txt"), "expected .onnx or .xml")


def test_failed_run_leaves_no_output_file(tmp_path, model_path):
    np.save(tmp_path / "x64.npy", np.zeros((1, 2, 6, 6), np.float64))
    out = tmp_path / "out.npz"
    _bad(invoke("run", model_path, "--input", f"x={tmp_path / 'x64.npy'}", "-o", out), "float64")
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["net.onnx", "x64.npy"]


def test_unsupported_op_lists_every_one(tmp_path):
    nodes = [helper.make_node("MaxUnpool", ["x", "i"], ["a"], kernel_shape=[2]),
             helper.make_node("Foo", ["a"], ["b"], domain="com.example"),
             helper.make_node("NonMaxSuppression", ["b", "b"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4]),
                                           helper.make_tensor_value_info("i", TensorProto.INT64, [1, 1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22), helper.make_opsetid("com.example", 1)],
                              ir_version=10)
    path = tmp_path / "bad.onnx"
    onnx.save(model, path)
    _bad(invoke("run", path), "MaxUnpool (ai.onnx, opset 22)", "Foo (com.example, opset 1)",
         "NonMaxSuppression (ai.onnx, opset 22)")


def test_run_an_ir_xml_matches_openvino(tmp_path):
    from tests.peers import openvino_convert_to_xml, openvino_run_xml

    xml = openvino_convert_to_xml(_maxpool_model(shape=(1, 2, 7, 5)), tmp_path / "net.xml")
    x = np.random.default_rng(5).standard_normal((1, 2, 7, 5)).astype(np.float32)
    np.savez(tmp_path / "feeds.npz", x=x)
    result = invoke("run", xml, "--inputs", tmp_path / "feeds.npz", "-o", tmp_path / "out.npz")
    assert result.exit_code == 0, result.output
    with np.load(tmp_path / "out.npz") as saved:
        np.testing.assert_array_equal(saved["y"], openvino_run_xml(xml, {"x": x})["y"])
