"""IR Convert from a float type into an integer one, for NaN, infinities and values outside the target, where the
spec says "undefined" and OpenVINO 2026.4's CPU plugin gives measured values (ir.element_types.openvino_float_to_
integer): x86's truncating conversion, through int32 for i64, saturating on the dynamic-shape path into i8/u8 and
straight from an f64 Parameter. poolir's IR run against OpenVINO; the ONNX model `poolir convert` writes, run by
onnxruntime, against the same values (IR -> ONNX refused every float -> integer Convert before)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from poolir import ir, runtime
from poolir.converter import ir_to_onnx
from poolir.ir.errors import ConversionError
from poolir.ir.infer import infer_model
from tests.peers import onnxruntime_run, openvino_run_xml
from tests.robustness.cli_check import invoke_cli
from tests.robustness.edge_values import ir_file

# Each exact in float32 (so OpenVINO computing an f64 layer in float32 changes none), 3e9 and 1e10 past int32.
_VALUES = np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, 3e9, 300.5, -159.25, 255.5, -129.5, 65504, -1.75, 2.5,
                    -0.5, 0], np.float64)
_SOURCES = {"f16": np.float16, "f32": np.float32, "f64": np.float64}
_TARGETS = ["i8", "u8", "i32", "i64"]


def _convert_file(tmp_path, source: str, target: str, how: str):
    def build(b):
        x = b.parameter("x", source, (-1,) if how == "dynamic" else (len(_VALUES),))
        if how == "after a layer":
            (x,) = b.add("Negative", "opset1", [x])
        return b.add("Convert", "opset1", [x], {"destination_type": target}, name="convert")[0]
    return ir_file(tmp_path, build)


@pytest.mark.parametrize("how", ["static", "dynamic", "after a layer"])
@pytest.mark.parametrize("target", _TARGETS)
@pytest.mark.parametrize("source", list(_SOURCES))
def test_ir_float_to_integer_convert_matches_openvino_and_converts_to_onnx_exactly(tmp_path, source, target, how):
    with np.errstate(over="ignore"):  # 1e10 and 3e9 are inf in f16
        x = _VALUES.astype(_SOURCES[source])
    path = _convert_file(tmp_path, source, target, how)
    expected = openvino_run_xml(path, {"x": x})["y"]
    with np.errstate(all="raise"):
        got = runtime.run(ir.read_model(path), {"x": x})["y"]
    np.testing.assert_array_equal(got, expected)
    invoke_cli("convert", ["convert", path, "-o", tmp_path / "convert.onnx"], allowed=(0,))
    np.testing.assert_array_equal(onnxruntime_run(onnx.load(tmp_path / "convert.onnx"), {"x": x})["y"], expected)


def test_hand_worked_values():
    """The rules by hand: f32 3e9 -> i64 goes through int32; f32 300.5 -> u8 wraps on static dims, saturates on
    a dynamic one; f64 straight from a Parameter saturates (i64 within int32), NaN -> 0 into u8."""
    def run(source, target, how, values):
        b = ir.GraphBuilder("hand")
        x = b.parameter("x", source, (-1,) if how == "dynamic" else (len(values),))
        b.result(b.add("Convert", "opset1", [x], {"destination_type": target})[0], "y")
        return runtime.run(b.build(), {"x": np.asarray(values, _SOURCES[source])})["y"].tolist()
    assert run("f32", "i64", "static", [3e9, -2.5, 7.9]) == [-2 ** 31, -2, 7]
    assert run("f32", "u8", "static", [300.5, -1.5]) == [44, 255]
    assert run("f32", "u8", "dynamic", [300.5, -1.5, np.nan]) == [255, 0, 0]
    assert run("f64", "i64", "static", [3e9, -1e300, np.nan]) == [2 ** 31 - 1, -2 ** 31, -2 ** 31]
    assert run("f64", "u8", "static", [np.nan, 300.5, -0.99]) == [0, 255, 0]
    assert run("f16", "i32", "static", [np.inf, -np.inf]) == [65504, -65504]


def test_folded_convert_is_the_reference_conversion(tmp_path):
    """A Convert OpenVINO folds (a Const input) takes its reference implementation: an f16 infinity gives int32's
    minimum, as x86 converts it, where the same layer at run time gives 65504."""
    def build(b):
        constant = b.const(np.array([np.inf, -np.inf, np.nan, -2.5, 300], np.float16))
        return b.add("Convert", "opset1", [constant], {"destination_type": "i32"})[0]
    path = ir_file(tmp_path, build)
    expected = openvino_run_xml(path, {})["y"]
    assert expected.tolist() == [-2 ** 31, -2 ** 31, -2 ** 31, -2, 300]
    np.testing.assert_array_equal(runtime.run(ir.read_model(path), {})["y"], expected)
    invoke_cli("convert", ["convert", path, "-o", tmp_path / "folded.onnx"], allowed=(0,))
    np.testing.assert_array_equal(onnxruntime_run(onnx.load(tmp_path / "folded.onnx"), {})["y"], expected)


def test_bounded_conversion_needs_onnx_where(tmp_path):
    """The bounds need ONNX Where (opset 9) and Equal on floats (opset 11); a plain conversion is one Cast at any
    opset."""
    with pytest.raises(ConversionError, match="needs ONNX Equal on f64, from opset 11"):
        ir_to_onnx(ir.read_model(_convert_file(tmp_path, "f32", "u8", "dynamic")), opset=10)
    with pytest.raises(ConversionError, match="needs ONNX Where, from opset 9"):
        ir_to_onnx(ir.read_model(_convert_file(tmp_path, "f16", "i32", "static")), opset=8)
    plain = ir_to_onnx(ir.read_model(_convert_file(tmp_path, "f32", "i32", "static")), opset=7)
    assert [node.op_type for node in plain.graph.node] == ["Cast"]


def test_pytorch_size_arithmetic_in_float_leaves_the_dims_static(tmp_path):
    """OpenVINO folds ShapeOf -> Convert(f32) -> Multiply(0.5) -> Floor -> Convert(i64) when it compiles, so the
    Slice it bounds has static dims and a Convert to u8 after it wraps as on static dims (300 -> 44): IR inference
    folds float arithmetic of known values too (it made the dims dynamic, and poolir saturated: 255)."""
    def build(b):
        x = b.parameter("x", "f32", (4, 3))
        (shape,) = b.add("ShapeOf", "opset3", [x], {"output_type": "i64"})
        (rows,) = b.add("Gather", "opset8", [shape, b.const(np.array([0])), b.const(np.array(0))])
        (as_float,) = b.add("Convert", "opset1", [rows], {"destination_type": "f32"})
        (half,) = b.add("Multiply", "opset1", [as_float, b.const(np.array(0.5, np.float32))])
        (floored,) = b.add("Floor", "opset1", [half])
        (stop,) = b.add("Convert", "opset1", [floored], {"destination_type": "i64"})
        (kept,) = b.add("Slice", "opset8", [x, b.const(np.array([0])), stop, b.const(np.array([1])),
                                            b.const(np.array([0]))])
        return b.add("Convert", "opset1", [kept], {"destination_type": "u8"})[0]
    path = ir_file(tmp_path, build)
    x = {"x": np.array([[-1.5, 300.0, -159.0], [1000.7, 256.0, -0.5], [0, 0, 0], [0, 0, 0]], np.float32)}
    expected = openvino_run_xml(path, x)["y"]
    assert expected.tolist() == [[255, 44, 97], [232, 0, 0]]
    model = ir.read_model(path)
    (sliced,) = [layer for layer in model.layers if layer.type == "Slice"]
    assert [dim.value for dim in infer_model(model).outputs[(sliced.id, sliced.outputs[0].id)].shape] == [2, 3]
    np.testing.assert_array_equal(runtime.run(model, x)["y"], expected)
    np.testing.assert_array_equal(onnxruntime_run(ir_to_onnx(model), x)["y"], expected)
