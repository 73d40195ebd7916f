"""ReLU's edge values in both worlds, bit for bit against the peers: onnxruntime's Relu keeps -0 and NaN;
OpenVINO's CPU ReLU gives +0 for both (runtime/kernels/activation.py: relu, relu_openvino)."""

from __future__ import annotations

import numpy as np
import openvino.opset1 as ov1
import pytest
from onnx import TensorProto, helper

from poolir import runtime
from poolir.converter.peers import onnxruntime_run
from tests.peers import openvino_run_xml
from tests.runtime.ir_cases import run_poolir, single_layer_ir

EDGES = np.array([np.nan, -0.0, 0.0, -1.5, 2.5, -np.inf, np.inf, -1e-45, 1e-45] * 3, np.float32).reshape(3, 9)


def _same_bits(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_onnx_relu_keeps_negative_zero_and_nan_as_onnxruntime():
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, EDGES.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=10)
    want = onnxruntime_run(model, {"x": EDGES})["y"]
    assert np.signbit(want[0, 1]) and np.isnan(want[0, 0])          # the facts the kernel's docstring states
    _same_bits(runtime.Session(model).run({"x": EDGES})["y"], want)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_ir_relu_gives_positive_zero_for_nan_and_negative_zero_as_openvino(dtype, tmp_path):
    path = single_layer_ir(lambda x: ov1.relu(x), EDGES.shape, dtype, tmp_path / "relu.xml")
    feeds = {"x": EDGES.astype(dtype)}
    want = next(iter(openvino_run_xml(path, feeds).values()))
    assert want[0, 0] == 0 and not np.signbit(want[0, 1])
    got = next(iter(run_poolir(path, feeds).values()))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))
