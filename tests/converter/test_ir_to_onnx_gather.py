"""IR Gather with constant indices outside the axis: OpenVINO gives zeros there, ONNX Gather fails ("indices element
out of data bounds" in onnxruntime, at run time), so IR -> ONNX gathers the indices inside and zeroes the others
with a Where. Against OpenVINO running the IR; onnxruntime runs the ONNX."""

from __future__ import annotations

import numpy as np
import pytest

from poolir import ir, runtime
from poolir.converter import ir_to_onnx
from poolir.ir.builder import GraphBuilder
from tests.peers import onnxruntime_run, openvino_run_xml


@pytest.mark.parametrize("element_type, axis, indices", [
    ("f32", 1, np.array([1, 7, -2, -6], np.int64)),
    ("i32", 0, np.array([[2, -3], [3, 0]], np.int32)),
    ("f16", -1, np.array([[4], [5]], np.int64)),
])
def test_constant_indices_outside_the_axis_give_zeros_in_both_worlds(tmp_path, element_type, axis, indices):
    b = GraphBuilder("gather")
    x = b.parameter("x", element_type, (3, 5))
    (gathered,) = b.add("Gather", "opset8", [x, b.const(indices), b.const(np.array(axis, np.int64))])
    b.result(gathered, name="y")
    path = tmp_path / "gather.xml"
    ir.write_model(b.build(), path)
    feeds = {"x": np.arange(1, 16).reshape(3, 5).astype(ir.element_types.dtype_of(element_type))}
    expected = openvino_run_xml(path, feeds)["y"]
    assert (expected == 0).any()
    model = ir.read_model(path)
    np.testing.assert_array_equal(runtime.run(model, feeds)["y"], expected)
    back = ir_to_onnx(model)
    assert [node.op_type for node in back.graph.node] == ["Gather", "Where"]
    np.testing.assert_array_equal(onnxruntime_run(back, feeds)["y"], expected)
