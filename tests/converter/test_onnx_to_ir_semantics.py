"""OpenVINO's pooling semantics that the converter relies on, pinned by running OpenVINO on single layers.

These are the numbered facts of converter/onnx_to_ir.py's docstring. Every expected value is worked by
hand here; if an OpenVINO release changes one of them, this file says which conversion rule to revisit.
"""

from __future__ import annotations

import numpy as np
import pytest

from poolir import ir
from poolir.ir.builder import GraphBuilder
from tests.peers import openvino_run_xml

LOWEST_F32 = float(np.finfo(np.float32).min)


def run_layer(tmp_path, layer_type: str, version: str, attrs: dict, x: np.ndarray, outputs=(0,),
              before: list | None = None) -> list[np.ndarray]:
    builder = GraphBuilder("fact")
    source = builder.parameter("x", "f32", x.shape)
    for kind, kind_version, extra_inputs, kind_attrs in before or ():
        consts = [builder.const(value) for value in extra_inputs]
        source = builder.add(kind, kind_version, [source, *consts], attrs=kind_attrs)[0]
    refs = builder.add(layer_type, version, [source], attrs=attrs, name="pool")
    for index in outputs:
        builder.result(refs[index], name=f"out{index}")
    ir.write_model(builder.build(), tmp_path / "fact.xml")
    got = openvino_run_xml(tmp_path / "fact.xml", {"x": x})
    return [got[f"out{index}"] for index in outputs]


def avg(kernel, strides, pads_begin, pads_end, exclude, rounding="floor", auto_pad="explicit", **extra):
    return {"kernel": kernel, "strides": strides, "pads_begin": pads_begin, "pads_end": pads_end,
            "exclude-pad": exclude, "rounding_type": rounding, "auto_pad": auto_pad, **extra}


def mx(kernel, strides, pads_begin, pads_end, rounding="floor", auto_pad="explicit", **extra):
    return {"kernel": kernel, "strides": strides, "pads_begin": pads_begin, "pads_end": pads_end,
            "rounding_type": rounding, "auto_pad": auto_pad, **extra}


ROW6 = np.arange(1, 7, dtype=np.float32).reshape(1, 1, 6) * 10  # 10 .. 60


@pytest.mark.parametrize("rounding, expected", [("ceil", [-10, -30, -50, LOWEST_F32]), ("ceil_torch", [-10, -30, -50])])
def test_fact_1_2_ceil_keeps_a_window_of_padding_with_the_lowest_value(tmp_path, rounding, expected):
    # L=6, k=2, s=2, pads (0,2): windows start 0, 2, 4, 6; the last is padding only (index 0).
    values, indices = run_layer(tmp_path, "MaxPool", "opset14", mx((2,), (2,), (0,), (2,), rounding), -ROW6,
                                outputs=(0, 1))
    np.testing.assert_array_equal(values.ravel(), expected)
    assert indices.ravel()[-1] == (0 if rounding == "ceil" else 4)


def test_fact_3_exclude_pad_divides_by_real_taps(tmp_path):
    # L=6, k=3, s=2, pads (1,1), ceil: windows [pad,10,20] [20,30,40] [40,50,60] [60,pad,past] -> 15 30 50 60.
    (y,) = run_layer(tmp_path, "AvgPool", "opset1", avg((3,), (2,), (1,), (1,), True, "ceil"), ROW6)
    np.testing.assert_allclose(y.ravel(), [15, 30, 50, 60])


@pytest.mark.parametrize("pads, expected", [
    ((1, 1), [10, 30, 50, 20]),   # a pad is non-zero: 60 / 3, the tap past the padded input counted too
    ((0, 0), [20, 40, 55]),       # no pads: (50 + 60) / 2 real taps
])
def test_fact_4_include_pad_divisor(tmp_path, pads, expected):
    (y,) = run_layer(tmp_path, "AvgPool", "opset1", avg((3,), (2,), (pads[0],), (pads[1],), False, "ceil"), ROW6)
    np.testing.assert_allclose(y.ravel(), expected, rtol=1e-6)


def test_fact_4_the_full_kernel_divisor_applies_to_every_axis(tmp_path):
    # 6x6 ones, k=3, s=2, pads H (0,0) W (1,1), ceil: the H overhang is divided by 3 although H has no pad.
    (y,) = run_layer(tmp_path, "AvgPool", "opset1", avg((3, 3), (2, 2), (0, 1), (0, 1), False, "ceil"),
                     np.ones((1, 1, 6, 6), np.float32))
    np.testing.assert_allclose(y[0, 0, -1], [4 / 9, 6 / 9, 6 / 9, 2 / 9], rtol=1e-6)


def test_fact_4_pad_fusion_turns_exclude_pad_zero_pads_into_full_kernel(tmp_path):
    # Pad(2, 1) + AvgPool(exclude-pad=true, no pads, ceil), L=8 (1..8), k=4, s=3: the padded tensor has 11
    # elements and the last window covers [x7=8, 0 | past, past]: 8 / 2 by the layer's own rule, but OpenVINO
    # fuses the Pad into the AvgPool as exclude-pad=false with pads (2, 1) and divides by 4. The converter
    # therefore keeps a non-zero pad on an AvgPool that follows its own Pad.
    pads = (np.asarray([0, 0, 2], np.int64), np.asarray([0, 0, 1], np.int64), np.asarray(0, np.float32))
    x = np.arange(1, 9, dtype=np.float32).reshape(1, 1, 8)
    (fused,) = run_layer(tmp_path, "AvgPool", "opset1", avg((4,), (3,), (0,), (0,), True, "ceil"), x,
                         before=[("Pad", "opset1", pads, {"pad_mode": "constant"})])
    assert fused.ravel()[-1] == pytest.approx(2.0)  # 8 / 4
    (kept,) = run_layer(tmp_path, "AvgPool", "opset1", avg((4,), (3,), (0,), (2,), True, "floor"), x,
                        before=[("Pad", "opset1", pads, {"pad_mode": "constant"})])
    assert kept.ravel()[-1] == pytest.approx(4.0)  # 8 / 2: not fused


def test_fact_5_same_and_valid_with_rounding(tmp_path):
    x = np.arange(1, 8, dtype=np.float32).reshape(1, 1, 7)
    # same_upper, L=7, k=3, d=2, s=2: total pad 4 -> (2, 2), windows start -2, 0, 2, 4.
    (y,) = run_layer(tmp_path, "MaxPool", "opset8", mx((3,), (2,), (0,), (0,), "floor", "same_upper", dilations=(2,)), x)
    np.testing.assert_array_equal(y.ravel(), [3, 5, 7, 7])
    # valid, L=7, k=2, s=2: floor 3 windows, ceil 4 (the last is x6 alone): ONNX VALID would give 3.
    (y,) = run_layer(tmp_path, "AvgPool", "opset1", avg((2,), (2,), (0,), (0,), False, "ceil", "valid"), x)
    np.testing.assert_allclose(y.ravel(), [1.5, 3.5, 5.5, 7.0])


@pytest.mark.parametrize("axis, expected", [(0, [[0, 13], [24, 37]]), (1, [[0, 13], [0, 13]]), (2, [[0, 1], [0, 1]])])
def test_fact_6_maxpool_axis_is_where_flattening_starts(tmp_path, axis, expected):
    # Shape (2, 2, 3, 4), each plane's maximum of its top-left 1x2 window at (0, 1) for c=1, (0, 0) for c=0.
    x = np.zeros((2, 2, 3, 4), np.float32)
    x[:, 0, 0, 0] = 1
    x[:, 1, 0, 1] = 1
    _, indices = run_layer(tmp_path, "MaxPool", "opset8", mx((1, 2), (1, 2), (0, 0), (0, 0), axis=axis), x,
                           outputs=(0, 1))
    np.testing.assert_array_equal(indices[:, :, 0, 0], expected)


def test_fact_6_ties_go_to_the_first_element(tmp_path):
    _, indices = run_layer(tmp_path, "MaxPool", "opset8", mx((3,), (1,), (0,), (0,)),
                           np.array([[[1, 5, 5, 2, 5, 5]]], np.float32), outputs=(0, 1))
    np.testing.assert_array_equal(indices.ravel(), [1, 1, 2, 4])
