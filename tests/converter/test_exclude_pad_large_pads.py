"""AveragePool exclude-pad (count_include_pad=0) with a pad at least the dilated kernel -> IR.

PyTorch's TorchScript exporter writes such pads below opset 10, where AveragePool has no ceil_mode:
AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False) on a 24x18 map becomes pads (1, 3) on H. OpenVINO
refuses an exclude-pad AvgPool whose pads reach the dilated kernel (so does onnxruntime, for the ONNX), so the
converter writes the pad_end that just covers the last window (converter/onnx_to_ir/pool_windows.py,
_exclude_pad_ends). The oracle is OpenVINO running poolir's IR against a brute-force average over each window's
real taps written here; a window lying wholly in the padding has no exact IR and is refused at conversion.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from onnx import TensorProto, helper

from poolir import ir
from poolir.converter import onnx_to_ir
from poolir.ir.errors import ConversionError
from tests.peers import openvino_run_xml


def _model(shape, kernel, strides, dilations, pads, opset):
    attrs = dict(kernel_shape=kernel, strides=strides, pads=pads, count_include_pad=0)
    if opset >= 19:
        attrs["dilations"] = dilations
    node = helper.make_node("AveragePool", ["x"], ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _brute_force(x, kernel, strides, dilations, pads):
    """Floor rounding over the padded extent; each window's mean over the taps that read real input."""
    rank = len(kernel)
    spatial = x.shape[2:]
    begins, ends = pads[:rank], pads[rank:]
    counts = [(length + b + e - ((k - 1) * d + 1)) // s + 1
              for length, k, s, d, b, e in zip(spatial, kernel, strides, dilations, begins, ends)]
    y = np.empty(x.shape[:2] + tuple(counts), np.float64)
    for out in itertools.product(*(range(c) for c in counts)):
        taps = [[o * s - b + j * d for j in range(k) if 0 <= o * s - b + j * d < length]
                for o, s, b, k, d, length in zip(out, strides, begins, kernel, dilations, spatial)]
        window = x[(slice(None), slice(None)) + np.ix_(*taps)]
        y[(slice(None), slice(None)) + out] = window.reshape(x.shape[:2] + (-1,)).astype(np.float64).mean(-1)
    return y


CASES = [
    # (input shape, kernel, strides, dilations, pads, opset)
    ((1, 3, 24, 18), [3, 3], [2, 2], [1, 1], [1, 1, 3, 2], 9),        # AvgPool2d(3, 2, 1, ceil_mode=True) at opset 9
    ((1, 2, 7, 5), [2, 2], [2, 2], [1, 1], [0, 0, 2, 2], 7),
    ((1, 2, 12), [3], [3], [1], [1, 3], 9),
    ((1, 2, 9, 11), [2, 3], [3, 2], [2, 1], [1, 0, 3, 3], 19),         # dilated: the dilated kernel is 3 on H
    ((2, 2, 7, 8, 6), [2, 2, 2], [2, 2, 2], [1, 1, 1], [0, 1, 0, 2, 2, 1], 9),
]


@pytest.mark.parametrize("shape,kernel,strides,dilations,pads,opset", CASES)
def test_openvino_runs_the_ir_and_matches_the_real_taps_average(shape, kernel, strides, dilations, pads, opset,
                                                                 tmp_path):
    model = _model(shape, kernel, strides, dilations, pads, opset)
    converted = onnx_to_ir(model)
    layer = next(layer for layer in converted.layers if layer.type == "AvgPool")
    rank = len(kernel)
    effective = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    assert all(pad < k for pad, k in zip(layer.attrs["pads_end"], effective))
    assert list(layer.attrs["pads_begin"]) == pads[:rank]
    ir.write_model(converted, tmp_path / "model.xml")
    x = np.random.default_rng(len(shape) + pads[-1]).standard_normal(shape).astype(np.float32)
    (got,) = openvino_run_xml(tmp_path / "model.xml", {"x": x}).values()
    want = _brute_force(x, kernel, strides, dilations, pads)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_window_wholly_in_the_padding_is_refused():
    # pads_end 4 on L=6, k=2, s=2: windows start at 0, 2, 4, 6, 8; the last two read padding only.
    model = _model((1, 1, 6), [2], [2], [1], [0, 4], 9)
    with pytest.raises(ConversionError, match="entirely in the padding"):
        onnx_to_ir(model)


def test_a_dynamic_axis_is_refused_with_the_way_out():
    model = _model((1, 1, "length"), [3], [2], [1], [1, 3], 9)
    with pytest.raises(ConversionError, match="--input-shape"):
        onnx_to_ir(model)


def test_pads_below_the_kernel_are_written_as_given():
    model = _model((1, 1, 8, 8), [3, 3], [2, 2], [1, 1], [1, 1, 2, 2], 9)
    layer = next(layer for layer in onnx_to_ir(model).layers if layer.type == "AvgPool")
    assert list(layer.attrs["pads_end"]) == [2, 2]
