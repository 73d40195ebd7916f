"""AvgPool exclude-pad=false with pads, ceil/ceil_torch rounding and dynamic spatial dims -> ONNX
(converter/ir_to_onnx/pool_windows.py: an explicit zero Pad), as PyTorch's frontend writes avg_pool2d(ceil_mode=True, padding=1):
one ONNX graph, onnxruntime on it against OpenVINO on the IR for many lengths."""

from __future__ import annotations

import numpy as np
import openvino as ov
import openvino.opset1 as ov1
import openvino.opset14 as ov14
import pytest

from poolir import ir
from poolir.converter import ir_to_onnx
from tests.peers import onnxruntime_run, openvino_run_xml
from tests.runtime.ir_cases import save_ir


@pytest.mark.parametrize("kernel,stride,pads,rounding", [
    (3, 2, (1, 1), "ceil_torch"), (3, 2, (1, 1), "ceil"), (2, 3, (1, 0), "ceil_torch"), (3, 3, (0, 2), "ceil"),
    (4, 3, (2, 1), "ceil_torch"), (2, 2, (1, 1), "ceil"),
])
def test_one_graph_matches_openvino_for_every_length(kernel, stride, pads, rounding, tmp_path):
    x = ov1.parameter([1, 2, -1, -1], ov.Type.f32, name="x")
    pool = ov14.avg_pool(x, [stride, stride], [pads[0]] * 2, [pads[1]] * 2, [kernel, kernel], False, rounding)
    path = save_ir([pool.output(0)], [x], tmp_path / "pool.xml")
    onnx_model = ir_to_onnx(ir.read_model(path))
    rng = np.random.default_rng(kernel * 10 + stride)
    for height, width in [(4, 5), (6, 7), (7, 8), (9, 12)]:
        feed = {"x": rng.standard_normal((1, 2, height, width)).astype(np.float32)}
        (want,) = openvino_run_xml(path, feed).values()
        (got,) = onnxruntime_run(onnx_model, feed).values()
        assert got.shape == want.shape, (height, width)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=str((height, width)))
