"""AdaptiveAvgPool-8 and AdaptiveMaxPool-8 (what OpenVINO's PyTorch frontend writes for adaptive_*_pool):
poolir runs the IR, and the ONNX it converts runs on onnxruntime, both as OpenVINO computes the IR. The IRs
are built and written by OpenVINO itself; bins are hand-worked in test_bins_hand_worked."""

from __future__ import annotations

import numpy as np
import openvino as ov
import openvino.opset1 as ov1
import openvino.opset8 as ov8
import pytest

from poolir import ir, runtime
from poolir.converter import ir_to_onnx
from poolir.ir.errors import ConversionError
from poolir.runtime.kernels.adaptive_pool import adaptive_bins
from tests.peers import onnxruntime_run, openvino_run_onnx, openvino_run_xml
from tests.runtime.ir_cases import OV_TYPES, run_poolir, save_ir


def _adaptive_ir(path, shape, out, dtype, *, indices=False, index_type="i32"):
    x = ov1.parameter(shape, OV_TYPES[np.dtype(dtype)], name="x")
    size = ov1.constant(np.array(out, np.int32))
    avg = ov8.adaptive_avg_pool(x, size)
    mx = ov8.adaptive_max_pool(x, size, index_type)
    outputs = [avg.output(0), mx.output(0)] + ([mx.output(1)] if indices else [])
    return save_ir(outputs, [x], path)


def _check(path, x, *, float_tol):
    """poolir's run, and onnxruntime and poolir on poolir's ONNX, against OpenVINO: indices equal, values within `float_tol`
    of the output's magnitude (summation order)."""
    expected = openvino_run_xml(path, {"x": x})
    ran = run_poolir(path, {"x": x})
    onnx_model = ir_to_onnx(ir.read_model(path))
    converted = onnxruntime_run(onnx_model, {"x": x})
    converted_by_poolir = runtime.run(onnx_model, {"x": x})
    # Outputs pair by position: these Results have no tensor names, and each tool names them its own way.
    for got in (ran, converted, converted_by_poolir):
        assert len(got) == len(expected)
        for (name, want), value in zip(expected.items(), got.values()):
            assert value.shape == want.shape and value.dtype == want.dtype, name
            if want.dtype.kind in "iu":
                np.testing.assert_array_equal(value, want, err_msg=name)
            else:
                scale = float(np.abs(want.astype(np.float64)).max())
                np.testing.assert_allclose(value.astype(np.float64), want.astype(np.float64), rtol=0,
                                           atol=float_tol * scale, err_msg=name)


def test_bins_hand_worked():
    # L=5 into 3: [0, 2), [1, 4), [3, 5); L=3 into 5 repeats elements: [0,1) [0,2) [1,2) [1,3) [2,3)
    assert [list(v) for v in adaptive_bins(5, 3)] == [[0, 1, 3], [2, 4, 5]]
    assert [list(v) for v in adaptive_bins(3, 5)] == [[0, 0, 1, 1, 2], [1, 2, 2, 3, 3]]
    assert [list(v) for v in adaptive_bins(8, 4)] == [[0, 2, 4, 6], [2, 4, 6, 8]]


CASES = [  # (shape, out): divisible, non-divisible, out > L, global, mixed; 1-D, 2-D, 3-D
    ((2, 3, 10), [4]), ((2, 3, 12), [4]), ((1, 2, 36, 36), [4, 4]), ((1, 2, 36, 36), [5, 7]),
    ((1, 2, 38, 38), [3, 3]), ((1, 2, 3, 4), [5, 7]), ((1, 2, 7, 9), [1, 1]), ((1, 2, 12, 13), [3, 2]),
    ((1, 2, 5, 6, 7), [2, 4, 3]), ((1, 2, 4, 6, 8), [2, 3, 4]),
]


@pytest.mark.parametrize("shape,out,dtype,tol", [(*case, np.float32, 1e-6) for case in CASES] + [
    (*CASES[i], np.float16, 2e-3) for i in (0, 1, 3, 6, 8)])
def test_adaptive_pools_match_openvino(shape, out, dtype, tol, tmp_path):
    path = _adaptive_ir(tmp_path / "adaptive.xml", list(shape), out, dtype)
    _check(path, np.random.default_rng(len(shape) + sum(out)).standard_normal(shape).astype(dtype), float_tol=tol)


@pytest.mark.parametrize("shape,feed,out", [
    ([1, 2, -1, -1], (1, 2, 38, 29), [4, 3]),
    ([-1, 2, -1], (2, 2, 17), [5]),
    ([1, 2, -1, -1], (1, 2, 8, 12), [4, 4]),
])
def test_dynamic_spatial_dims_run_and_convert(shape, feed, out, tmp_path):
    path = _adaptive_ir(tmp_path / "adaptive.xml", shape, out, np.float32)
    _check(path, np.random.default_rng(5).standard_normal(feed).astype(np.float32), float_tol=1e-6)


@pytest.mark.parametrize("shape,out", [((2, 3, 8, 12), [4, 3]), ((1, 2, 12), [1]), ((1, 2, 4, 6, 8), [2, 3, 4]),
                                       ((2, 3, 7, 10), [3, 4]), ((1, 2, 5), [3]), ((1, 2, 3, 4), [5, 6]),
                                       ((1, 2, 5, 6, 7), [2, 4, 3])])
def test_indices_per_slab(shape, out, tmp_path):
    path = _adaptive_ir(tmp_path / "adaptive.xml", list(shape), out, np.float32, indices=True)
    x = np.random.default_rng(1).permutation(np.prod(shape)).astype(np.float32).reshape(shape)
    _check(path, x, float_tol=1e-6)


def test_indices_first_maximum_and_nan_rule_in_the_runtime(tmp_path):
    """OpenVINO scans each window from its first element with `>`: ties go to the first, a NaN first element
    wins, a NaN elsewhere is skipped. Checked on non-divisible bins; ties also through the ONNX form."""
    x = np.ones((1, 1, 5, 7), np.float32)
    x[0, 0, 0, 0] = np.nan
    x[0, 0, 3, 5] = np.nan
    x[0, 0, 4, 2] = 3.0
    path = _adaptive_ir(tmp_path / "adaptive.xml", [1, 1, 5, 7], [2, 3], np.float32, indices=True)
    expected = openvino_run_xml(path, {"x": x})
    ran = run_poolir(path, {"x": x})
    for name, want in expected.items():
        np.testing.assert_array_equal(ran[name], want, err_msg=name)
    x = np.ones((1, 1, 5, 7), np.float32)
    x[0, 0, 4, 2] = 3.0
    _check(path, x, float_tol=0)


def test_indices_with_dynamic_dims_are_refused(tmp_path):
    path = _adaptive_ir(tmp_path / "adaptive.xml", [1, 2, -1, -1], [2, 3], np.float32, indices=True)
    with pytest.raises(ConversionError, match="AdaptiveMaxPool indices with dynamic spatial dims"):
        ir_to_onnx(ir.read_model(path))


@pytest.mark.parametrize("shape,out", [((2, 4, 23, 19), [5, 7]), ((1, 2, 7), [3])])
def test_indices_onnx_form_runs_on_openvino_too(shape, out, tmp_path):
    """The ONNX form's "not a maximum" filler is one past the slab's last position, not int64.max: OpenVINO's
    CPU plugin computes int64 in int32, read int64.max as -2^31 and returned it as the index (found running
    poolir's ONNX of a PyTorch-frontend AdaptiveMaxPool2d((5, 7), return_indices=True) IR with OpenVINO)."""
    x = ov1.parameter(list(shape), ov.Type.f32, name="x")
    # as the PyTorch frontend writes a Conv -> AdaptiveMaxPool(return_indices=True) module: i32 indices converted
    # to torch's int64 (with the Parameter feeding the pool directly, OpenVINO folds the positions and is right)
    weights = np.random.default_rng(0).standard_normal((shape[1], shape[1]) + (1,) * (len(shape) - 2))
    conv = ov1.convolution(x, ov1.constant(weights.astype(np.float32)), [1] * (len(shape) - 2),
                           [0] * (len(shape) - 2), [0] * (len(shape) - 2), [1] * (len(shape) - 2))
    pool = ov8.adaptive_max_pool(conv, ov1.constant(np.array(out, np.int32)), "i32")
    path = save_ir([pool.output(0), ov1.convert(pool.output(1), "i64").output(0)], [x], tmp_path / "adaptive.xml")
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    expected = openvino_run_xml(path, {"x": x})
    got = openvino_run_onnx(ir_to_onnx(ir.read_model(path)), {"x": x})
    assert len(got) == len(expected)
    for want, value in zip(expected.values(), got.values()):  # by position: the Results have no tensor names
        np.testing.assert_array_equal(value, want)
