"""OpenVINO's CPU plugin runs an If-8's bodies on its dynamic-shape path whatever their dims, and a body's
Parameter is not the model's input boundary: a float -> u8/i8 Convert saturates there (wraps on static dims
outside), an i8 Divide rounds half to even, an integer Clamp rounds its bounds inward, and a Convert straight
from an f64 or f16 body Parameter converts as after any layer. poolir's IR run against OpenVINO's, for both
branches; the ONNX If `poolir convert` writes, run by onnxruntime, against the same values."""

from __future__ import annotations

import numpy as np
import onnx
import openvino as ov
import openvino.opset8 as o8
import pytest

from poolir import ir, runtime
from poolir.converter import ir_to_onnx
from poolir.ir.errors import ConversionError
from tests.peers import onnxruntime_run, openvino_run_xml
from tests.robustness.cli_check import invoke_cli

_VALUES = np.array([300.5, -159.25, np.nan, 3e9, -0.5, 127.5], np.float64)


def _if_file(tmp_path, dtype, then_body, else_body):
    """An If-8 of condition `c` over `x`: each body is a function of its Parameter."""
    element_type = ov.Type(np.dtype(dtype))
    x = o8.parameter([len(_VALUES)], element_type, name="x")
    condition = o8.parameter([], ov.Type.boolean, name="c")
    bodies = []
    for build in (then_body, else_body):
        parameter = o8.parameter([len(_VALUES)], element_type)
        bodies.append((ov.Model([o8.result(build(parameter))], [parameter]), parameter))
    layer = o8.if_op(condition)
    layer.set_then_body(bodies[0][0])
    layer.set_else_body(bodies[1][0])
    layer.set_input(x.output(0), bodies[0][1], bodies[1][1])
    output = layer.set_output(bodies[0][0].get_results()[0], bodies[1][0].get_results()[0])
    model = ov.Model([o8.result(output)], [condition, x])
    model.outputs[0].get_tensor().set_names({"y"})
    path = tmp_path / "if.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    return path


_CASES = {
    "f32 -> u8 saturates": (np.float32, lambda p: o8.convert(p, "u8"), lambda p: o8.convert(o8.abs(p), "u8")),
    "f64 Parameter -> i64 wraps": (np.float64, lambda p: o8.convert(p, "i64"), lambda p: o8.convert(o8.abs(p), "i64")),
    "f16 Parameter inf -> i32": (np.float16, lambda p: o8.convert(p, "i32"), lambda p: o8.convert(o8.abs(p), "i32")),
    "i32 Clamp bounds": (np.int32, lambda p: o8.clamp(p, 1.678, 100.2), lambda p: o8.clamp(p, -2.5, 2.5)),
}


@pytest.mark.parametrize("case", list(_CASES))
def test_if_bodies_compute_as_openvinos_dynamic_path(tmp_path, case):
    dtype, then_body, else_body = _CASES[case]
    with np.errstate(over="ignore", invalid="ignore"):
        x = _VALUES.astype(dtype) if np.dtype(dtype).kind == "f" else np.nan_to_num(_VALUES).astype(dtype)
    path = _if_file(tmp_path, dtype, then_body, else_body)
    invoke_cli("convert", ["convert", path, "-o", tmp_path / "if.onnx"], allowed=(0,))
    back = onnx.load(tmp_path / "if.onnx")
    for condition in (True, False):
        feeds = {"c": np.array(condition), "x": x}
        expected = openvino_run_xml(path, feeds)["y"]
        np.testing.assert_array_equal(runtime.run(ir.read_model(path), feeds)["y"], expected, err_msg=str(condition))
        np.testing.assert_array_equal(onnxruntime_run(back, feeds)["y"], expected, err_msg=str(condition))


def test_i8_divide_in_a_body_rounds_half_to_even_and_is_not_converted(tmp_path):
    """7 / 2 -> 4 and 127 / 2 -> 64 in a body (3 and 63 outside); IR -> ONNX does not write that rounding."""
    halves = lambda p: o8.divide(p, o8.constant(np.full(len(_VALUES), 2, np.int8)))  # noqa: E731
    path = _if_file(tmp_path, np.int8, halves, lambda p: o8.abs(p))
    feeds = {"c": np.array(True), "x": np.array([7, 5, 0, 127, -7, 1], np.int8)}
    expected = openvino_run_xml(path, feeds)["y"]
    assert expected.tolist() == [4, 2, 0, 64, -4, 0]
    np.testing.assert_array_equal(runtime.run(ir.read_model(path), feeds)["y"], expected)
    with pytest.raises(ConversionError, match="on dynamic dims or in an If body"):
        ir_to_onnx(ir.read_model(path))
