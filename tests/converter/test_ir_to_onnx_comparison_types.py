"""IR -> ONNX at every writable opset: a comparison is written only where the opset's version takes its type.

ONNX Equal-7 takes bool, int32 and int64 only (floats from Equal-11); Less and Greater-7 take floats only
(integers from 9); LessOrEqual and GreaterOrEqual exist from 12. poolir used to write Equal on floats at opsets
9 and 10 (IR Equal and NotEqual, the NaN guard of Exp, and the first-maximum pick of AdaptiveMaxPool's indices
over irregular bins, found on OpenVINO's PyTorch-frontend IR of AdaptiveMaxPool1d(5, return_indices=True)):
an invalid model that onnxruntime refuses to load ("Type 'tensor(float)' of input parameter ... of operator
(Equal) ... is invalid"). Now each opset gives either a model the onnx checker accepts with full type checking,
or a refusal naming the opset that is needed. The IRs are OpenVINO's own (openvino.opset1/opset8 saved with
ov.save_model); the values at the first accepted opset come from OpenVINO and onnxruntime.
"""

from __future__ import annotations

import numpy as np
import onnx
import openvino as ov
import openvino.opset1 as ov1
import openvino.opset8 as ov8
import pytest

from poolir import ir
from poolir.converter import ir_to_onnx
from poolir.converter.ir_to_onnx.opsets import WRITABLE_OPSETS
from poolir.ir.errors import ConversionError
from tests.peers import onnxruntime_run, openvino_run_xml
from tests.runtime.ir_cases import OV_TYPES

RNG = np.random.default_rng(3)
F32 = RNG.standard_normal((2, 5)).round(1).astype(np.float32)
I32 = RNG.integers(-3, 4, (2, 5)).astype(np.int32)


def _binary(build, dtype):
    def make():
        x = ov1.parameter([2, 5], OV_TYPES[np.dtype(dtype)], name="x")
        y = ov1.parameter([2, 5], OV_TYPES[np.dtype(dtype)], name="y")
        return [build(x, y)], [x, y]
    return make


def _adaptive_max_indices():
    x = ov1.parameter([1, 2, 7], ov.Type.f32, name="x")
    pool = ov8.adaptive_max_pool(x, ov1.constant(np.array([3], np.int32)), "i32")
    return [pool.output(0), pool.output(1)], [x]


# name: (IR builder, feeds, the first opset that can write it)
CASES = {
    "equal_f32": (_binary(ov1.equal, np.float32), {"x": F32, "y": F32[::-1].copy()}, 11),
    "not_equal_f32": (_binary(ov1.not_equal, np.float32), {"x": F32, "y": F32[::-1].copy()}, 11),
    "equal_i32": (_binary(ov1.equal, np.int32), {"x": I32, "y": I32[::-1].copy()}, 7),
    "less_f32": (_binary(ov1.less, np.float32), {"x": F32, "y": F32[::-1].copy()}, 7),
    "less_i32": (_binary(ov1.less, np.int32), {"x": I32, "y": I32[::-1].copy()}, 9),
    "greater_i32": (_binary(ov1.greater, np.int32), {"x": I32, "y": I32[::-1].copy()}, 9),
    "greater_f32": (_binary(ov1.greater, np.float32), {"x": F32, "y": F32[::-1].copy()}, 12),
    "exp_f32": (lambda: (lambda x: ([ov1.exp(x)], [x]))(ov1.parameter([2, 5], ov.Type.f32, name="x")),
                {"x": F32}, 11),
    "adaptive_max_indices": (_adaptive_max_indices, {"x": RNG.permutation(14).astype(np.float32).reshape(1, 2, 7)},
                             11),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_opset_writes_a_valid_model_or_refuses(name, tmp_path):
    build, feeds, first = CASES[name]
    outputs, params = build()
    path = tmp_path / f"{name}.xml"
    ov.save_model(ov.Model([ov1.result(o) for o in outputs], params, name), path, compress_to_fp16=False)
    model = ir.read_model(path)
    for opset in WRITABLE_OPSETS:
        if opset < first:
            with pytest.raises(ConversionError, match=f"opset {opset}"):
                ir_to_onnx(model, opset=opset)
            continue
        onnx_model = ir_to_onnx(model, opset=opset)
        onnx.checker.check_model(onnx_model, full_check=True)
    expected = openvino_run_xml(path, feeds)
    got = onnxruntime_run(ir_to_onnx(model, opset=first), feeds)
    assert len(got) == len(expected)
    for want, value in zip(expected.values(), got.values()):  # by position: the Results have no tensor names
        np.testing.assert_allclose(value, want, rtol=1e-6)
        assert value.dtype == want.dtype
