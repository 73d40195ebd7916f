"""IR Interpolate -> ONNX Resize where onnxruntime's linear and cubic kernels take the resized axes only in some
places (an NHWC cubic downscale, OpenVINO's PrePostProcessor resize of an NHWC image, is refused at run time): the
converter moves the resized axes last around the Resize (onnxruntime_gaps.onnxruntime_resizes). Each case against
OpenVINO running the IR; the rule itself is pinned against the installed onnxruntime."""

from __future__ import annotations

import itertools

import numpy as np
import openvino as ov
import openvino.opset11 as o11
import pytest
from onnx import TensorProto, helper

from poolir import ir
from poolir.converter import ir_to_onnx
from poolir.converter.ir_to_onnx.onnxruntime_gaps import onnxruntime_resizes
from poolir.ir.errors import ConversionError
from tests.peers import onnxruntime_run, openvino_run_xml


def _interpolate_file(tmp_path, shape, axes, target, mode, scales=False):
    x = o11.parameter(ov.PartialShape(shape), np.float32, name="x")
    attrs = {"mode": mode, "shape_calculation_mode": "scales" if scales else "sizes",
             "coordinate_transformation_mode": "half_pixel", "nearest_mode": "floor", "cube_coeff": -0.75}
    values = np.array(target, np.float32 if scales else np.int64)
    y = o11.interpolate(x, o11.constant(values), axes=o11.constant(np.array(axes, np.int64)), **attrs)
    path = tmp_path / "resize.xml"
    ov.save_model(ov.Model([y], [x], "resize"), str(path), compress_to_fp16=False)
    return path


CASES = {  # shape (-1: dynamic), axes, sizes or scales, mode, scales mode
    "cubic NHWC downscale": ((1, 16, 18, 3), (1, 2), (11, 12), "cubic", False),
    "cubic NHWC mixed": ((2, 9, 18, 3), (1, 2), (12, 12), "cubic", False),
    "cubic NHWC upscale stays": ((1, 8, 9, 3), (1, 2), (12, 14), "cubic", False),
    "cubic one inner axis": ((1, 16, 18, 3), (1,), (11,), "cubic", False),
    "linear outer axes": ((7, 9, 1, 3), (0, 1), (5, 4), "linear_onnx", False),
    "linear 5-D": ((1, 6, 7, 3, 2), (1, 2), (4, 9), "linear_onnx", False),
    "cubic NHWC opset 13": ((1, 16, 18, 3), (1, 2), (11, 12), "cubic", False),
    "cubic NHWC dynamic x2": ((1, -1, -1, 3), (1, 2), (2.0, 2.0), "cubic", True),
}


@pytest.mark.parametrize("case", list(CASES))
def test_resized_axes_onnxruntime_takes_elsewhere_are_moved(tmp_path, case):
    shape, axes, target, mode, scales = CASES[case]
    path = _interpolate_file(tmp_path, shape, axes, target, mode, scales)
    back = ir_to_onnx(ir.read_model(path), opset=13 if "opset 13" in case else 22)
    x = np.random.default_rng(3).standard_normal([8 if d == -1 else d for d in shape]).astype(np.float32)
    expected = list(openvino_run_xml(path, {"x": x}).values())[0]
    got = list(onnxruntime_run(back, {"x": x}).values())[0]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    moved = any(node.op_type == "Transpose" for node in back.graph.node)
    assert moved == (case not in ("cubic NHWC upscale stays", "cubic NHWC dynamic x2"))


def test_a_resize_onnxruntime_takes_in_no_order_is_refused(tmp_path):
    path = _interpolate_file(tmp_path, (16, 18, 3), (0, 1), (11, 12), "cubic")
    with pytest.raises(ConversionError, match="onnxruntime's cubic Resize takes no rank-3 input resized on 2 axes"):
        ir_to_onnx(ir.read_model(path))


def _runs_on_onnxruntime(mode: str, shape: list[int], scales: list[float]) -> bool:
    graph = helper.make_graph(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode=mode)], "resize",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [helper.make_tensor("scales", TensorProto.FLOAT, [len(scales)], scales)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    try:
        onnxruntime_run(model, {"x": np.ones(shape, np.float32)})
    except Exception as error:  # noqa: BLE001 - onnxruntime's own error types
        if "only supports" not in str(error):
            raise
        return False
    return True


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("rank", [2, 3, 4, 5])
def test_the_layout_rule_matches_the_installed_onnxruntime(mode, rank):
    for count in (1, 2, 3):
        for resized in itertools.combinations(range(rank), count):
            for factor in (0.5, 2.0):
                scales = [factor if axis in resized else 1.0 for axis in range(rank)]
                expected = _runs_on_onnxruntime(mode, [4] * rank, scales)
                assert onnxruntime_resizes(mode, rank, list(resized), factor >= 1) == expected, (resized, factor)
