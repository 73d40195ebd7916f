"""IR written by OpenVINO's own ONNX frontend for the ONNX pooling operators, run by poolir vs OpenVINO.

OpenVINO converts each ONNX model (tests/peers.py `openvino_convert_to_xml`); the IR it writes uses
AvgPool-1/16, MaxPool-8 (+ Transpose for storage_order=1), Abs/Power/Multiply/ConvertLike for LpPool,
ReduceMean/ReduceMax for the global pools and Split/ReduceSum/Reshape/Concat for GlobalLpPool. poolir
reads that IR and must compute what OpenVINO computes for it.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnx.helper as oh
import pytest

from tests.peers import openvino_convert_to_xml
from tests.runtime.ir_cases import assert_matches_openvino

FLOAT = onnx.TensorProto.FLOAT


def onnx_model(op: str, attrs: dict, shape, opset: int, *, indices: bool = False, dynamic: bool = False):
    outputs = ["y", "i"] if indices else ["y"]
    node = oh.make_node(op, ["x"], outputs, **attrs)
    in_shape = ["n", shape[1], *["h", "w", "d"][: len(shape) - 2]] if dynamic else list(shape)
    graph = oh.make_graph([node], "g", [oh.make_tensor_value_info("x", FLOAT, in_shape)],
                          [oh.make_tensor_value_info("y", FLOAT, None)]
                          + ([oh.make_tensor_value_info("i", onnx.TensorProto.INT64, None)] if indices else []))
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)], ir_version=10)


MODELS = {
    "AveragePool-19-ceil-include-pad": ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                                            ceil_mode=1, count_include_pad=1), (1, 2, 6, 7), 19),
    "AveragePool-19-dilations": ("AveragePool", dict(kernel_shape=[2, 2], dilations=[2, 1], pads=[1, 0, 0, 1]),
                                 (1, 2, 6, 5), 19),
    "AveragePool-11-same-lower": ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_LOWER"),
                                  (2, 2, 7, 6), 11),
    "AveragePool-7-exclude-pad": ("AveragePool", dict(kernel_shape=[3], pads=[2, 1]), (1, 3, 8), 7),
    "AveragePool-22-3d": ("AveragePool", dict(kernel_shape=[2, 2, 2], strides=[2, 1, 2], ceil_mode=1,
                                              pads=[0, 1, 0, 1, 0, 1], count_include_pad=1), (1, 1, 5, 4, 5), 22),
    "MaxPool-12-ceil": ("MaxPool", dict(kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1, pads=[0, 0, 1, 1]),
                        (1, 2, 5, 5), 12),
    "MaxPool-12-dilations-same-upper": ("MaxPool", dict(kernel_shape=[2, 3], dilations=[2, 1], strides=[2, 2],
                                                        auto_pad="SAME_UPPER"), (1, 2, 7, 6), 12),
    "MaxPool-8-1d": ("MaxPool", dict(kernel_shape=[3], strides=[2], pads=[1, 1]), (2, 3, 9), 8),
    "MaxPool-22-3d": ("MaxPool", dict(kernel_shape=[2, 2, 2], pads=[1, 0, 0, 0, 1, 0]), (1, 2, 4, 3, 4), 22),
    "LpPool-18-p3-ceil-dilations": ("LpPool", dict(kernel_shape=[2, 2], p=3, ceil_mode=1, dilations=[2, 1],
                                                   strides=[2, 2]), (1, 2, 7, 6), 18),
    "LpPool-11-p2-pads": ("LpPool", dict(kernel_shape=[3, 2], p=2, pads=[1, 0, 1, 1], strides=[1, 2]), (1, 2, 6, 5), 11),
    "LpPool-2-p1": ("LpPool", dict(kernel_shape=[2], p=1), (1, 3, 7), 2),
    "GlobalAveragePool": ("GlobalAveragePool", {}, (2, 3, 5, 4), 1),
    "GlobalMaxPool": ("GlobalMaxPool", {}, (2, 3, 5, 4, 2), 1),
    "GlobalLpPool-p3": ("GlobalLpPool", dict(p=3), (1, 2, 4, 5), 2),
}
INDEX_MODELS = {
    "MaxPool-12-indices": ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), (2, 2, 7, 6), 12),
    "MaxPool-12-indices-storage-order": ("MaxPool", dict(kernel_shape=[2, 2], strides=[1, 2], storage_order=1),
                                         (1, 2, 5, 6), 12),
}


def _input(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_frontend_ir_matches_openvino(name, tmp_path):
    op, attrs, shape, opset = MODELS[name]
    path = openvino_convert_to_xml(onnx_model(op, attrs, shape, opset), tmp_path / "model.xml")
    assert_matches_openvino(path, {"x": _input(shape, 1)}, rtol=1e-5, atol=1e-5, context=name)


@pytest.mark.parametrize("name", sorted(INDEX_MODELS))
def test_frontend_ir_with_indices_matches_openvino(name, tmp_path):
    op, attrs, shape, opset = INDEX_MODELS[name]
    path = openvino_convert_to_xml(onnx_model(op, attrs, shape, opset, indices=True), tmp_path / "model.xml")
    x = np.random.default_rng(2).integers(-3, 4, shape).astype(np.float32)  # ties
    assert_matches_openvino(path, {"x": x}, context=name)


# (GlobalLpPool is left out: OpenVINO's frontend refuses it with a dynamic batch dim.)
@pytest.mark.parametrize("name", ["AveragePool-19-ceil-include-pad", "MaxPool-12-ceil", "LpPool-11-p2-pads",
                                  "GlobalAveragePool"])
def test_frontend_ir_with_dynamic_dims(name, tmp_path):
    op, attrs, shape, opset = MODELS[name]
    path = openvino_convert_to_xml(onnx_model(op, attrs, shape, opset, dynamic=True), tmp_path / "model.xml")
    for scale in (1, 2):
        run_shape = (shape[0] * scale, shape[1], *[d + scale for d in shape[2:]])
        assert_matches_openvino(path, {"x": _input(run_shape, scale)}, rtol=1e-5, atol=1e-5,
                                context=f"{name} {run_shape}")
