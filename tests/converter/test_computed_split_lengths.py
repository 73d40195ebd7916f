"""VariadicSplit whose split_lengths are computed (ShapeOf arithmetic, as OpenVINO's PyTorch frontend writes
ShuffleNetV2's channel split): the IR is read, poolir runs it, and its ONNX runs on onnxruntime, all equal
to OpenVINO on the same IR. The IRs are built and written by OpenVINO itself."""

from __future__ import annotations

import numpy as np
import openvino as ov
import openvino.opset1 as ov1
import openvino.opset3 as ov3
import openvino.opset8 as ov8
import pytest

from poolir import ir
from poolir.converter import ir_to_onnx
from tests.peers import onnxruntime_run, openvino_run_xml
from tests.runtime.ir_cases import run_poolir, save_ir


def c(values, dtype=np.int32):
    return ov1.constant(np.array(values, dtype=dtype))


def _channel_split_ir(path, shape, rest_first: bool):
    """x -> VariadicSplit(x, 1, [C // 2 + (C % 2 > 1), -1]) with C from ShapeOf, as torch.chunk's lowering."""
    x = ov1.parameter(shape, ov.Type.f32, name="x")
    channels = ov8.gather(ov3.shape_of(x, "i32"), c(1, np.int64), c(0))
    half = ov1.add(ov1.divide(channels, c(2)), ov1.convert(ov1.greater(ov1.mod(channels, c(2)), c(1)), "i32"))
    half = ov1.unsqueeze(half, c(0))
    lengths = ov1.concat([c([-1]), half] if rest_first else [half, c([-1])], 0)
    split = ov1.variadic_split(ov1.relu(x), c(1, np.int64), lengths)
    return save_ir([ov1.multiply(split.output(0), c(2.0, np.float32)).output(0), split.output(1)], [x], path)


@pytest.mark.parametrize("shape,feed,rest_first", [
    ([1, 6, 3, 3], (1, 6, 3, 3), False),
    ([1, 7, 2, 2], (1, 7, 2, 2), True),
    ([1, 6, -1, -1], (1, 6, 5, 4), False),
    ([-1, -1, 2, 2], (2, 9, 2, 2), True),
])
def test_computed_split_lengths_read_run_and_convert(shape, feed, rest_first, tmp_path):
    path = _channel_split_ir(tmp_path / "split.xml", shape, rest_first)
    model = ir.read_model(path)  # used to fail: "VariadicSplit split_lengths must be constant"
    x = np.random.default_rng(3).standard_normal(feed).astype(np.float32)
    expected = openvino_run_xml(path, {"x": x})
    ran = run_poolir(path, {"x": x})
    converted = onnxruntime_run(ir_to_onnx(model), {"x": x})
    for got in (ran, converted):
        assert sorted(got) == sorted(expected)
        for name, want in expected.items():
            np.testing.assert_array_equal(got[name], want, err_msg=name)


def test_mod_takes_the_dividends_sign(tmp_path):
    a = np.array([-7, 7, -7, 7, 5, -16777217], np.int32)
    b = np.array([2, -2, -2, 2, 3, 50176], np.int32)
    pa, pb = ov1.parameter([6], ov.Type.i32, name="a"), ov1.parameter([6], ov.Type.i32, name="b")
    path = save_ir([ov1.mod(pa, pb).output(0)], [pa, pb], tmp_path / "mod.xml")
    feeds = {"a": a, "b": b}
    (want,) = openvino_run_xml(path, feeds).values()
    np.testing.assert_array_equal(want[:5], [-1, 1, -1, 1, 2])  # hand-worked: C fmod
    np.testing.assert_array_equal(list(run_poolir(path, feeds).values())[0], want)
    # The CPU plugin computes it in float32 (exact -18433 becomes -18432); ONNX Mod is exact, equal below 2**24.
    converted = onnxruntime_run(ir_to_onnx(ir.read_model(path)), feeds)
    np.testing.assert_array_equal(list(converted.values())[0][:5], want[:5])
