"""`poolir verify` of an ONNX model whose dynamic dims the converter refuses (no single IR is exact for every
length) but whose given inputs fix them: the IR paths run the conversion for the inputs' shapes, as --input-shape
would fix it, and the report says so. Expected values: onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from poolir.converter import onnx_to_ir
from poolir.converter.verify import verify_paths
from poolir.ir.errors import ConversionError


def dilated_max_pool(length) -> onnx.ModelProto:
    """PyTorch's MaxPool1d(2, stride=3, padding=1, dilation=3): at L = 2 its one window holds only padding."""
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2], strides=[3], pads=[1, 1], dilations=[3])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, length])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
    model.ir_version = 7
    return model


def test_inputs_fix_the_dims_the_dynamic_conversion_refuses(tmp_path):
    with pytest.raises(ConversionError):
        onnx_to_ir(dilated_max_pool("L"))
    path, inputs = tmp_path / "pool.onnx", tmp_path / "inputs.npz"
    onnx.save(dilated_max_pool("L"), path)
    np.savez(inputs, x=np.random.default_rng(0).standard_normal((1, 2, 29)).astype(np.float32))
    report = verify_paths([path], peers=("onnxruntime",), inputs=inputs)
    (model_report,) = report.models
    assert report.passed, [(row.path, row.status, row.detail) for row in model_report.rows]
    assert {row.path: row.status for row in model_report.rows}["onnxruntime(onnx->ir->onnx)"] == "ok"
    assert any("converted for this run's input shapes (x[1,2,29])" in warning for warning in model_report.warnings)


def test_a_refusal_the_inputs_do_not_lift_stays_a_refusal(tmp_path):
    path, inputs = tmp_path / "pool.onnx", tmp_path / "inputs.npz"
    onnx.save(dilated_max_pool("L"), path)
    np.savez(inputs, x=np.ones((1, 2, 2), np.float32))  # the padding-only window: refused for this length too
    (model_report,) = verify_paths([path], inputs=inputs).models
    assert {row.path: row.status for row in model_report.rows}["runtime(onnx->ir)"] == "refused"
