"""Resize / Interpolate on a dynamic batch, both directions: the sizes are computed from the input's shape.

PyTorch's TorchScript exporter writes F.interpolate(x, size=(h, w)) as Resize(x, '', '', Concat(Slice(Shape(x), 0, 2),
[h, w])): with a dynamic batch the sizes are not a constant, yet each element is known (x's own batch and channels,
then h and w). OpenVINO's ONNX frontend keeps that computation in its IR, with the Slice's step written as
Broadcast([1], ShapeOf(start)). poolir converts both: the axes whose size is the input's own dim are left out of the
IR layer (ONNX -> IR) or of the Resize (IR -> ONNX). Oracles: onnxruntime on the ONNX model and OpenVINO on the IR,
each at batch 1 and 3.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from poolir import ir, runtime
from poolir.converter import ir_to_onnx, onnx_to_ir
from tests.peers import onnxruntime_run, openvino_run_xml

ov = pytest.importorskip("openvino", reason="OpenVINO writes and runs the IRs of these tests")
ops = pytest.importorskip("openvino.opset11", reason="OpenVINO writes and runs the IRs of these tests")


def _const(name, values, dtype=np.int64):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(values, dtype)))


def _torchscript_resize(mode="linear", transform="half_pixel", size_of=None):
    """x [batch, 2, 5, 7] -> Resize to [batch, 2, 9, 4] by Concat(Slice(Shape(x), 0, 2), [9, 4]), as TorchScript
    writes it; `size_of` takes the leading dims from another tensor's shape instead of x's."""
    nodes = [_const("zero", [0]), _const("two", [2]), _const("hw", [9, 4]),
             helper.make_node("Relu", ["x"], ["other"]),
             helper.make_node("Shape", [size_of or "x"], ["shape"]),
             helper.make_node("Slice", ["shape", "zero", "two", "zero"], ["leading"]),
             helper.make_node("Concat", ["leading", "hw"], ["sizes"], axis=0),
             helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode=mode,
                              coordinate_transformation_mode=transform, nearest_mode="floor", cubic_coeff_a=-0.75)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2, 5, 7])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2, 9, 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _feeds(batch):
    return {"x": np.random.default_rng(batch).standard_normal((batch, 2, 5, 7)).astype(np.float32)}


@pytest.mark.parametrize(("mode", "transform"), [("linear", "half_pixel"), ("nearest", "asymmetric"),
                                                 ("cubic", "half_pixel"), ("linear", "align_corners")])
def test_torchscript_sizes_on_a_dynamic_batch_convert_to_ir(mode, transform, tmp_path):
    model = _torchscript_resize(mode, transform)
    converted = onnx_to_ir(model)
    (interpolate,) = [layer for layer in converted.layers if layer.type == "Interpolate"]
    assert converted.layers[0].outputs[0].shape[0].value is None      # the batch stays dynamic
    path = tmp_path / "resize.xml"
    ir.write_model(converted, path)
    for batch in (1, 3):
        expected = onnxruntime_run(model, _feeds(batch))["y"]
        np.testing.assert_allclose(openvino_run_xml(path, _feeds(batch))["y"], expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(runtime.run(path, _feeds(batch))["y"], expected, rtol=1e-5, atol=1e-6)


def test_sizes_from_another_tensors_shape_are_passed_on_as_computed():
    """Relu(x) has x's shape, but nothing in the graph says so to a converter that reads it element by element: the
    sizes go to Interpolate as the graph computes them (tests/converter/test_resize_dynamic_sizes.py)."""
    model = _torchscript_resize(size_of="other")
    (interpolate,) = [layer for layer in onnx_to_ir(model).layers if layer.type == "Interpolate"]
    assert interpolate.attrs["shape_calculation_mode"] == "sizes"
    for batch in (1, 3):
        np.testing.assert_allclose(runtime.run(onnx_to_ir(model), _feeds(batch))["y"],
                                   onnxruntime_run(model, _feeds(batch))["y"], rtol=1e-5, atol=1e-6)


def _openvino_frontend_ir(tmp_path, mode="linear_onnx"):
    """What OpenVINO's ONNX frontend writes for the TorchScript pattern: ShapeOf, Slice-8 with the step a Broadcast,
    Concat with [9, 4], Interpolate-11 in sizes mode without axes."""
    x = ops.parameter(ov.PartialShape([-1, 2, 5, 7]), np.float32, name="x")
    start = ops.constant(np.array([0], np.int64))
    step = ov.opset8.broadcast(ops.constant(np.array([1], np.int64)), ov.opset8.shape_of(start))
    leading = ov.opset8.slice(ov.opset8.shape_of(x), start, ops.constant(np.array([2], np.int64)), step,
                              ops.constant(np.array([0], np.int64)))
    sizes = ops.concat([leading, ops.constant(np.array([9, 4], np.int64))], 0)
    attrs = {"mode": mode, "shape_calculation_mode": "sizes", "coordinate_transformation_mode": "half_pixel",
             "nearest_mode": "floor"}
    y = ops.interpolate(x, sizes, **attrs)
    path = tmp_path / "frontend.xml"
    ov.save_model(ov.Model([y], [x], "frontend"), str(path), compress_to_fp16=False)
    return path


@pytest.mark.parametrize("mode", ["linear_onnx", "nearest", "cubic"])
def test_openvino_frontend_sizes_on_a_dynamic_batch_run_and_convert_to_onnx(mode, tmp_path):
    path = _openvino_frontend_ir(tmp_path, mode)
    model = ir.read_model(path)      # was refused: "Interpolate with scales or sizes of unknown length"
    back = ir_to_onnx(model)
    (resize,) = [node for node in back.graph.node if node.op_type == "Resize"]
    axes = helper.get_attribute_value(next(a for a in resize.attribute if a.name == "axes"))
    assert 0 not in axes and {2, 3} <= set(axes)      # the dynamic batch is left out
    for batch in (1, 3):
        expected = list(openvino_run_xml(path, _feeds(batch)).values())[0]
        np.testing.assert_allclose(list(runtime.run(model, _feeds(batch)).values())[0], expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(list(onnxruntime_run(back, _feeds(batch)).values())[0], expected, rtol=1e-5,
                                   atol=1e-6)
