"""IR -> ONNX where OpenVINO's AvgPool(exclude-pad=false) becomes an explicit zero Pad + AveragePool (pads at least
the kernel, a ceil overhang past the padded input): onnxruntime with its default graph optimisations (ORT_ENABLE_ALL)
must compute what OpenVINO computes on the IR. Its PadFusion folds a zero Pad into a following pool with explicit
padding, so the pool after the Pad is written with auto_pad=VALID (converter/ir_to_onnx/pool_windows.py); folded,
these models had pads >= kernel and onnxruntime refused them ("Pad should be smaller than kernel")."""

from __future__ import annotations

import numpy as np
import onnx
import openvino as ov
import openvino.opset1 as ov1
import openvino.opset14 as ov14
import pytest

from poolir import ir
from poolir.converter import ir_to_onnx
from poolir.converter.peers import ONNXRUNTIME_MAX_IR_VERSION
from tests.peers import openvino_run_xml
from tests.runtime.ir_cases import save_ir

ort = pytest.importorskip("onnxruntime")


def onnxruntime_optimised_run(model: onnx.ModelProto, feeds) -> np.ndarray:
    """onnxruntime as users run it: every graph optimisation on (the default)."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    model.ir_version = min(model.ir_version, ONNXRUNTIME_MAX_IR_VERSION)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, dict(feeds))[0]


# kernel, stride, pads_begin, pads_end, rounding_type: include-pad AvgPools that need an explicit Pad in ONNX
CASES = [(2, 1, 2, 0, "floor"), (2, 1, 0, 2, "floor"), (2, 1, 1, 2, "ceil_torch"), (2, 2, 0, 1, "ceil"),
         (2, 2, 0, 2, "floor"), (2, 2, 1, 1, "ceil_torch"), (3, 2, 1, 1, "ceil")]


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("kernel,stride,pad_begin,pad_end,rounding", CASES)
@pytest.mark.parametrize("opset", [11, 19, 22])
def test_optimised_onnxruntime_matches_openvino(kernel, stride, pad_begin, pad_end, rounding, dynamic, opset,
                                                tmp_path):
    x = ov1.parameter([1, 2, -1, -1] if dynamic else [1, 2, 7, 8], ov.Type.f32, name="x")
    pool = ov14.avg_pool(x, [stride] * 2, [pad_begin] * 2, [pad_end] * 2, [kernel] * 2, False, rounding)
    path = save_ir([pool.output(0)], [x], tmp_path / "pool.xml")
    converted = ir_to_onnx(ir.read_model(path), opset=opset)
    if dynamic:  # every case needs the explicit Pad then; with static dims some need none
        assert "Pad" in [node.op_type for node in converted.graph.node]
    rng = np.random.default_rng(kernel * 100 + stride * 10 + pad_begin)
    for shape in [(1, 2, 5, 6), (1, 2, 7, 8)] if dynamic else [(1, 2, 7, 8)]:
        feed = {"x": rng.standard_normal(shape).astype(np.float32)}
        (want,) = openvino_run_xml(path, feed).values()
        got = onnxruntime_optimised_run(converted, feed)
        assert got.shape == want.shape, shape
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=str(shape))
