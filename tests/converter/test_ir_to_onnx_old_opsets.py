"""IR -> ONNX at opsets 7-9, before ONNX Slice took its bounds as inputs: constant bounds with step 1 are Slice-1's
attributes (Slice-8, StridedSlice, the crop of a Pad with negative pads), checked against OpenVINO running the IR
and onnxruntime running the ONNX; a step other than 1, or bounds known only at run time, is refused naming
Slice-10."""

from __future__ import annotations

import numpy as np
import pytest

from poolir.converter import ir_to_onnx
from poolir.ir.builder import GraphBuilder
from poolir.ir.errors import ConversionError
from tests.converter.test_ir_to_onnx import _compare_with_openvino

_INT64_MAX = np.iinfo(np.int64).max


def _i64(b: GraphBuilder, values):
    return b.const(np.asarray(values, np.int64))


def _slices() -> GraphBuilder:
    b = GraphBuilder("old_slices")
    x = b.parameter("x", "f32", (2, 5, 6))
    (sliced,) = b.add("Slice", "opset8", [x, _i64(b, [-4, 1]), _i64(b, [_INT64_MAX, -1]), _i64(b, [1, 1]),
                                          _i64(b, [-1, 1])])
    (head,) = b.add("Slice", "opset8", [x, _i64(b, [1]), _i64(b, [100]), _i64(b, [1])])
    (strided,) = b.add("StridedSlice", "opset1", [x, _i64(b, [0, 2, -3]), _i64(b, [1, 0, -1]), _i64(b, [1, 1, 1])],
                       attrs={"begin_mask": [1, 0, 0], "end_mask": [0, 1, 0]})
    (cropped,) = b.add("Pad", "opset12", [x, _i64(b, [0, -1, 2]), _i64(b, [0, 1, -2])],
                       attrs={"pad_mode": "constant"})
    for name, ref in (("sliced", sliced), ("head", head), ("strided", strided), ("cropped", cropped)):
        b.result(ref, name=name)
    return b


@pytest.mark.parametrize("opset", [7, 9])
def test_constant_slices_are_slice_1_attributes(tmp_path, opset):
    x = np.random.default_rng(5).standard_normal((2, 5, 6)).astype(np.float32)
    back = _compare_with_openvino(_slices().build(), x, tmp_path, opset=opset)
    slices = [node for node in back.graph.node if node.op_type == "Slice"]
    assert len(slices) == 4 and all(len(node.input) == 1 for node in slices)


def test_slice_10_inputs_from_opset_10(tmp_path):
    x = np.random.default_rng(6).standard_normal((2, 5, 6)).astype(np.float32)
    back = _compare_with_openvino(_slices().build(), x, tmp_path, opset=10)
    assert all(len(node.input) >= 3 for node in back.graph.node if node.op_type == "Slice")


def test_a_step_or_run_time_bounds_need_slice_10():
    b = GraphBuilder("backward")
    x = b.parameter("x", "f32", (4, 6))
    (backward,) = b.add("Slice", "opset8", [x, _i64(b, [-1]), _i64(b, [-_INT64_MAX]), _i64(b, [-1])])
    b.result(backward, name="y")
    with pytest.raises(ConversionError, match=r"Slice with a step other than 1 needs ONNX Slice-10 \(requested "
                                              r"opset 9\)"):
        ir_to_onnx(b.build(), opset=9)
    b = GraphBuilder("computed")
    x = b.parameter("x", "f32", (4, 6))
    start = b.parameter("start", "i64", (1,))
    (computed,) = b.add("Slice", "opset8", [x, start, _i64(b, [3]), _i64(b, [1])])
    b.result(computed, name="y")
    with pytest.raises(ConversionError, match="Slice with bounds known only at run time needs ONNX Slice-10"):
        ir_to_onnx(b.build(), opset=9)
