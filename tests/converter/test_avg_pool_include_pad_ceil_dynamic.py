"""ONNX AveragePool ceil_mode=1, count_include_pad=1 with pads on dynamic spatial dims -> IR
(converter/onnx_to_ir/pool_windows.py: a zero Pad, an exclude-pad floor AvgPool and a Slice computed from the
input's shape), as PyTorch writes avg_pool2d(ceil_mode=True, padding=p) with dynamic H/W. One IR for all lengths:
OpenVINO on it, poolir's runtime on it and onnxruntime on its conversion back to ONNX, each against onnxruntime
on the source ONNX, at lengths where ONNX drops a last window starting in the padding and where it does not."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from poolir import ir, runtime
from poolir.converter import ir_to_onnx, onnx_to_ir
from tests.peers import onnxruntime_run, openvino_run_xml

LENGTHS = [(1, 2), (2, 3), (4, 5), (6, 7), (7, 8), (9, 12)]


def average_pool(kernel, strides, pads, dilations=None, spatial=2) -> onnx.ModelProto:
    attrs = {"kernel_shape": kernel, "strides": strides, "pads": pads, "ceil_mode": 1, "count_include_pad": 1}
    if dilations:
        attrs["dilations"] = dilations
    dims = [1, 2] + [f"d{axis}" for axis in range(spatial)]
    graph = helper.make_graph([helper.make_node("AveragePool", ["x"], ["y"], name="pool", **attrs)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 8
    return model


CASES = {
    "k3 s2 p1 (PyTorch's ceil pools)": average_pool([3, 3], [2, 2], [1, 1, 1, 1]),
    "k2 s3 p1,0 (stride over kernel)": average_pool([2, 2], [3, 3], [1, 1, 0, 0]),
    "k4 s3 p2,1": average_pool([4, 4], [3, 3], [2, 2, 1, 1]),
    "k3 s3 p0,2 (only pads_end)": average_pool([3, 3], [3, 3], [0, 0, 2, 2]),
    "k3 s2 pads on H only": average_pool([3, 3], [2, 2], [1, 0, 1, 0]),
    "k2 s2 d2 p1": average_pool([2, 2], [2, 2], [1, 1, 1, 1], dilations=[2, 2]),
    "1-D k3 s2 p1": average_pool([3], [2], [1, 1], spatial=1),
    "3-D k3 s2 p1": average_pool([3, 3, 3], [2, 2, 2], [1, 1, 1, 1, 1, 1], spatial=3),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_ir_matches_onnxruntime_for_every_length(case, tmp_path):
    source = CASES[case]
    model = onnx_to_ir(source)
    assert {"Pad", "AvgPool", "Slice"} <= {layer.type for layer in model.layers}  # the rewrite, not a refusal
    xml = tmp_path / "pool.xml"
    ir.write_model(model, xml)
    back = ir_to_onnx(ir.read_model(xml))
    rng = np.random.default_rng(len(case))
    rank = len(source.graph.input[0].type.tensor_type.shape.dim) - 2
    for lengths in LENGTHS:
        shape = (1, 2, *((lengths * 2)[:rank]))
        feed = {"x": rng.standard_normal(shape).astype(np.float32)}
        (want,) = onnxruntime_run(source, feed).values()
        answers = {"openvino(ir)": next(iter(openvino_run_xml(xml, feed).values())),
                   "poolir(ir)": runtime.run(model, feed)["y"],
                   "onnxruntime(ir->onnx)": next(iter(onnxruntime_run(back, feed).values()))}
        for path, got in answers.items():
            assert got.shape == want.shape, (path, shape)
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=f"{path} {shape}")


def test_the_slice_keeps_the_dims_it_does_not_slice():
    """Batch and channels stay known after the Slice whose ends are computed (as OpenVINO infers them), so the
    layers after the pool see them."""
    (result,) = [layer for layer in onnx_to_ir(CASES["k3 s2 p1 (PyTorch's ceil pools)"]).layers
                 if layer.type == "Result"]
    assert [d.max if d.is_static else None for d in result.inputs[0].shape] == [1, 2, None, None]
