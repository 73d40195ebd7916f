"""ONNX -> IR for Flatten (every version, static and dynamic dims) and Sign, each case run by onnxruntime on the
ONNX, by OpenVINO (CPU, f32) on poolir's IR, and by onnxruntime on poolir's ONNX -> IR -> ONNX
(tests/converter/test_onnx_to_ir_families.check)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T

from poolir.converter.onnx_to_ir import onnx_to_ir
from poolir.ir.errors import InvalidModelError
from tests.converter.test_onnx_to_ir_families import check, single

FLATTEN_GRID = [(opset, axis) for opset in (1, 9, 11, 13, 21) for axis in (0, 1, 2, 4)] + \
               [(opset, axis) for opset in (11, 13, 21) for axis in (-1, -3, -4)]


@pytest.mark.parametrize("opset,axis", FLATTEN_GRID)
def test_flatten_static(opset, axis, tmp_path):
    model = single("Flatten", [(T.FLOAT, (2, 3, 4, 5))], opset=opset, axis=axis)
    check(model, tmp_path)


# Dynamic dims: None marks a dim the model leaves symbolic; the feed fixes it (a zero length included).
DYNAMIC = [
    ((None, 3, 4, 5), (2, 3, 4, 5), 1),     # dynamic batch, static rest: [-1, 60]
    ((None, 3, 4, 5), (2, 3, 4, 5), 2),     # both sides dynamic: ShapeOf products
    ((2, 3, None, None), (2, 3, 4, 5), 2),  # static outer [6, -1]
    ((2, 3, None, None), (2, 3, 4, 5), 3),
    ((None, None), (0, 3), 1),              # a zero-length dim: no -1 can be used
    ((2, 0, None), (2, 0, 3), 1),           # static outer 2, inner has a static 0 and a dynamic dim
    ((0, None), (0, 7), 1),                 # static outer product 0: -1 would be ambiguous
    ((None, 3), (4, 3), 0),
    ((None, 3), (4, 3), 2),
    ((None, 3, 4), (2, 3, 4), -1),
]


@pytest.mark.parametrize("shape,fed,axis", DYNAMIC)
def test_flatten_dynamic(shape, fed, axis, tmp_path):
    declared = tuple("d%d" % i if d is None else d for i, d in enumerate(shape))
    model = single("Flatten", [(T.FLOAT, declared)], opset=13, axis=axis)
    feeds = {"x0": np.random.default_rng(3).standard_normal(fed).astype(np.float32)}
    check(model, tmp_path, feeds)


@pytest.mark.parametrize("elem", [T.INT64, T.UINT8, T.FLOAT16])
def test_flatten_types(elem, tmp_path):
    check(single("Flatten", [(elem, (2, 3, 4))], opset=13, axis=2), tmp_path)


@pytest.mark.parametrize("opset,axis", [(9, -1), (13, 5), (13, -5)])
def test_flatten_axis_out_of_range_refused(opset, axis):
    with pytest.raises(InvalidModelError, match="axis"):
        onnx_to_ir(single("Flatten", [(T.FLOAT, (2, 3, 4, 5))], opset=opset, axis=axis))


@pytest.mark.parametrize("elem", [T.FLOAT, T.FLOAT16, T.DOUBLE, T.INT8, T.INT32, T.INT64, T.UINT8])
@pytest.mark.parametrize("opset", [9, 13])
def test_sign(elem, opset, tmp_path):
    model = single("Sign", [(elem, (2, 3, 5))], opset=opset)
    rng = np.random.default_rng(opset)
    if elem in (T.FLOAT, T.FLOAT16, T.DOUBLE):
        dtype = {T.FLOAT: np.float32, T.FLOAT16: np.float16, T.DOUBLE: np.float64}[elem]
        x = (rng.standard_normal((2, 3, 5)) * 3).astype(dtype)
        x.reshape(-1)[:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-30 if elem != T.FLOAT16 else 1e-7]
        if elem == T.FLOAT16:  # the spec says nothing of NaN; onnxruntime 1.x gives 0 for f16 NaN, NaN for f32
            x.reshape(-1)[0] = 5
    else:
        dtype = {T.INT8: np.int8, T.INT32: np.int32, T.INT64: np.int64, T.UINT8: np.uint8}[elem]
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, size=(2, 3, 5), endpoint=True).astype(dtype)
        x.reshape(-1)[:3] = [0, info.min, info.max]
        if elem == T.INT64:  # OpenVINO's CPU plugin computes i64 in i32 (onnx_to_ir/elementwise.py): stay inside
            x = np.clip(x, -2 ** 31, 2 ** 31 - 1)
    check(model, tmp_path, {"x0": x})
