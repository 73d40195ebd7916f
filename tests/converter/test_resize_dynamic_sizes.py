"""Resize / Interpolate with sizes known only at run time, both directions: a segmentation head upsampled to the
image's dynamic height and width, Resize(p, '', '', Concat(Slice(Shape(p), 0, 2), Slice(Shape(x), 2, 4))) as
PyTorch's exporters write F.interpolate(p, size=x.shape[-2:]).

Both engines read such an axis at float32(output) / float32(input) with the same coordinate formula, so the sizes
are passed on as the graph computes them (converter/onnx_to_ir/resize.py, _computed_sizes), except where the worlds
are ulps apart and nearest sampling could move a source (align_corners), which is refused. Oracles: onnxruntime on
the ONNX model, OpenVINO on the IR, each at two input shapes the converter never saw.

Integer scales on dynamic axes (nn.Upsample(scale_factor=2) with a dynamic height and width) convert too: to IR as
sizes ShapeOf * k, read at k as Resize reads them; from OpenVINO's scales mode as Resize with the same scales, whose
lengths agree below ir_to_onnx.resize.MAX_DYNAMIC_UPSAMPLED_LENGTH (pinned at the bound by both engines).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from poolir import ir, runtime
from poolir.converter import ir_to_onnx, onnx_to_ir
from poolir.ir.errors import ConversionError, PoolirError
from poolir.ir.infer import infer_model
from tests.peers import onnxruntime_run, openvino_run_xml

ov = pytest.importorskip("openvino", reason="OpenVINO writes and runs the IRs of these tests")

SHAPES = [(1, 3, 17, 23), (2, 3, 32, 9)]
MODES = [("linear", "half_pixel", "round_prefer_floor"), ("linear", "align_corners", "round_prefer_floor"),
         ("linear", "pytorch_half_pixel", "round_prefer_floor"), ("cubic", "half_pixel", "round_prefer_floor"),
         ("nearest", "asymmetric", "floor"), ("nearest", "half_pixel", "round_prefer_floor"),
         ("nearest", "tf_half_pixel_for_nn", "ceil")]


def _segmentation_head(mode, transform, nearest, opset=17, axes=False):
    """x [N, 3, H, W] -> MaxPool 2x2 s2 ceil (exact in every engine) -> Resize back to [N, 3, H, W] by sizes from
    x's shape (opset 18 with `axes`: the axes attribute [2, 3] and sizes Slice(Shape(x), 2, 4))."""
    ints = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (("zero", [0]), ("two", [2]), ("four", [4]))]
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
             helper.make_node("Shape", ["x"], ["x_shape"]),
             helper.make_node("Slice", ["x_shape", "two", "four"], ["hw"])]
    if axes:
        sizes, extra = "hw", {"axes": [2, 3]}
    else:
        nodes += [helper.make_node("Shape", ["p"], ["p_shape"]),
                  helper.make_node("Slice", ["p_shape", "zero", "two"], ["nc"]),
                  helper.make_node("Concat", ["nc", "hw"], ["sizes"], axis=0)]
        sizes, extra = "sizes", {}
    nodes.append(helper.make_node("Resize", ["p", "", "", sizes], ["y"], mode=mode, nearest_mode=nearest,
                                  coordinate_transformation_mode=transform, **extra))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], ints)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _openvino_ir(model, tmp_path):
    onnx.save(model, tmp_path / "head.onnx")
    ov.save_model(ov.convert_model(tmp_path / "head.onnx"), str(tmp_path / "head.xml"), compress_to_fp16=False)
    return tmp_path / "head.xml"


def _feeds(shape):
    return {"x": np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)}


def _close(got, want, mode):
    """Nearest copies elements: exact. Linear and cubic: to the ulps of the weights (align_corners' coordinates are
    an ulp apart in the two worlds, the same agreement the constant-sizes conversion accepts)."""
    if mode == "nearest":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))


@pytest.mark.parametrize("mode,transform,nearest", MODES)
@pytest.mark.parametrize("opset,axes", [(17, False), (18, True)], ids=["opset17", "opset18-axes"])
def test_sizes_known_at_run_time_convert_to_ir(mode, transform, nearest, opset, axes, tmp_path):
    model = _segmentation_head(mode, transform, nearest, opset, axes)
    if mode == "nearest" and transform == "align_corners":
        return
    converted = onnx_to_ir(model)
    (interpolate,) = [layer for layer in converted.layers if layer.type == "Interpolate"]
    assert interpolate.attrs["shape_calculation_mode"] == "sizes"
    ir.write_model(converted, tmp_path / "head.xml")
    # the axes it keeps keep their dims in shape inference, as in OpenVINO's: [?, 3, ?, ?]
    dims = infer_model(converted).outputs[(interpolate.id, interpolate.outputs[0].id)].shape
    assert str(ov.Core().read_model(tmp_path / "head.xml").output(0).partial_shape) == "[?,3,?,?]"
    assert [d.value for d in dims] == [None, 3, None, None]
    for shape in SHAPES:
        want = onnxruntime_run(model, _feeds(shape))["y"]
        assert want.shape == shape
        _close(openvino_run_xml(tmp_path / "head.xml", _feeds(shape))["y"], want, mode)
        _close(runtime.run(tmp_path / "head.xml", _feeds(shape))["y"], want, mode)


@pytest.mark.parametrize("mode,transform,nearest", MODES)
@pytest.mark.parametrize("source_opset,opset", [(17, 13), (17, 22), (18, 17), (18, 18)])
def test_openvino_irs_with_sizes_known_at_run_time_convert_to_onnx(mode, transform, nearest, source_opset, opset,
                                                                    tmp_path):
    """OpenVINO's own IR of the head: Interpolate-11 in sizes mode, its sizes ShapeOf(x) (OpenVINO folds the Concat)
    or, for the opset 18 model, a Slice of it with an axes input; before opset 18 Resize takes sizes for every axis,
    scattered into the input's shape."""
    path = _openvino_ir(_segmentation_head(mode, transform, nearest, source_opset, source_opset == 18), tmp_path)
    back = ir_to_onnx(ir.read_model(path), opset=opset)
    assert "Resize" in {node.op_type for node in back.graph.node}
    for shape in SHAPES:
        want = list(openvino_run_xml(path, _feeds(shape)).values())[0]
        _close(list(onnxruntime_run(back, _feeds(shape)).values())[0], want, mode)


def test_nearest_align_corners_with_sizes_known_at_run_time_is_refused_both_ways(tmp_path):
    """o * (in - 1) / (out - 1) in onnxruntime, o * ((in - 1) / (out - 1)) in OpenVINO: an ulp apart, a nearest
    source can move, and with lengths unknown the converter cannot check that it does not."""
    model = _segmentation_head("nearest", "align_corners", "round_prefer_floor")
    with pytest.raises(ConversionError, match="align_corners.*run time"):
        onnx_to_ir(model)
    with pytest.raises(ConversionError, match="align_corners.*run time"):
        ir_to_onnx(ir.read_model(_openvino_ir(model, tmp_path)))


def test_keep_aspect_ratio_with_sizes_known_at_run_time_is_refused():
    model = _segmentation_head("linear", "half_pixel", "round_prefer_floor", 18, axes=True)
    model.graph.node[-1].attribute.append(helper.make_attribute("keep_aspect_ratio_policy", "not_larger"))
    with pytest.raises(ConversionError, match="keep_aspect_ratio_policy"):
        onnx_to_ir(model)


@pytest.mark.parametrize("make_sizes,match", [
    (lambda: [helper.make_node("Cast", ["x_shape"], ["sizes"], to=TensorProto.FLOAT)], "must be int64, got f32"),
    (lambda: [helper.make_node("Slice", ["x_shape", "zero", "two"], ["sizes"])], r"sizes of shape \[2\] for 4 axes"),
    (lambda: [helper.make_node("Unsqueeze", ["x_shape", "zero"], ["sizes"])], r"sizes of shape \[1, 4\]"),
], ids=["float", "short", "2-D"])
def test_bad_sizes_known_at_run_time_are_refused_naming_the_node(make_sizes, match):
    model = _segmentation_head("linear", "half_pixel", "round_prefer_floor")
    nodes = [node for node in model.graph.node if node.output[0] in ("p", "x_shape")] + make_sizes()
    resize = model.graph.node[-1]
    del model.graph.node[:]
    model.graph.node.extend([*nodes, resize])
    with pytest.raises(PoolirError, match=f"Resize.*{match}"):
        onnx_to_ir(model)


# -- integer scales on dynamic axes: nn.Upsample(scale_factor=k) exported with a dynamic height and width ----------

UPSAMPLES = [("nearest", "asymmetric", "floor", [1, 1, 2, 2]),
             ("linear", "half_pixel", "round_prefer_floor", [1, 1, 2, 2]),
             ("linear", "align_corners", "round_prefer_floor", [1, 1, 2, 2]),
             ("cubic", "half_pixel", "round_prefer_floor", [1, 1, 3, 4]),
             ("nearest", "half_pixel", "round_prefer_ceil", [1, 1, 4, 3]),
             ("nearest", "asymmetric", "floor", [1, 1, 2, 1])]


def _upsample(mode, transform, nearest, scales, width="W"):
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode=mode,
                            coordinate_transformation_mode=transform, nearest_mode=nearest)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", width])
    graph = helper.make_graph([node], "g", [x],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.array(scales, np.float32), "scales")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("mode,transform,nearest,scales", UPSAMPLES, ids=str)
def test_integer_scales_on_dynamic_axes_convert_to_ir(mode, transform, nearest, scales, tmp_path):
    """Interpolate in sizes mode with sizes ShapeOf * k: read at (k * n) / n = k, as Resize reads at k."""
    model = _upsample(mode, transform, nearest, scales)
    ir.write_model(onnx_to_ir(model), tmp_path / "up.xml")
    for shape in [*SHAPES, (1, 3, 1, 1)]:
        want = onnxruntime_run(model, _feeds(shape))["y"]
        _close(openvino_run_xml(tmp_path / "up.xml", _feeds(shape))["y"], want, mode)
        _close(runtime.run(tmp_path / "up.xml", _feeds(shape))["y"], want, mode)


@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize("mode,transform,nearest,scales", UPSAMPLES, ids=str)
def test_openvino_integer_scales_on_dynamic_axes_convert_to_onnx(mode, transform, nearest, scales, opset, tmp_path):
    path = _openvino_ir(_upsample(mode, transform, nearest, scales), tmp_path)
    back = ir_to_onnx(ir.read_model(path), opset=opset)
    for shape in [*SHAPES, (1, 3, 1, 1)]:
        want = list(openvino_run_xml(path, _feeds(shape)).values())[0]
        _close(list(onnxruntime_run(back, _feeds(shape)).values())[0], want, mode)


@pytest.mark.slow
def test_the_length_bound_of_converted_dynamic_integer_scales_is_where_openvino_departs(tmp_path):
    """OpenVINO's scales mode truncates n * float32(k + 1e-6): below MAX_DYNAMIC_UPSAMPLED_LENGTH every k in 2..8
    gives k * n as Resize does (k = 8 at the bound itself); k = 2 at n = 983,040 gives one element more, which is why
    the bound is stated."""
    from poolir.converter.ir_to_onnx.resize import MAX_DYNAMIC_UPSAMPLED_LENGTH
    for k, n, agree in [(8, MAX_DYNAMIC_UPSAMPLED_LENGTH, True), (2, 983_040, False)]:
        model = _upsample("nearest", "asymmetric", "floor", [1, 1, 1, k], width="W")
        path = _openvino_ir(model, tmp_path)
        back = ir_to_onnx(ir.read_model(path))
        feeds = {"x": np.arange(3 * n, dtype=np.float32).reshape(1, 3, 1, n)}
        ov_length = list(openvino_run_xml(path, feeds).values())[0].shape[-1]
        assert list(onnxruntime_run(back, feeds).values())[0].shape[-1] == k * n
        assert (ov_length == k * n) == agree, (k, n, ov_length)


def test_non_integer_scales_on_dynamic_axes_are_still_refused(tmp_path):
    """Scale 1.5: the two worlds' length rules differ for some n (OpenVINO adds 1e-6), and n is unknown."""
    model = _upsample("linear", "half_pixel", "round_prefer_floor", [1, 1, 1.5, 1.5])
    with pytest.raises(ConversionError, match="static lengths"):
        onnx_to_ir(model)
    with pytest.raises(ConversionError, match="static .*lengths"):
        ir_to_onnx(ir.read_model(_openvino_ir(model, tmp_path)))


@pytest.mark.parametrize("mode,transform,nearest", MODES)
@pytest.mark.parametrize("opset", [13, 18])
def test_constant_sizes_of_a_dynamic_input_convert_to_onnx(mode, transform, nearest, opset, tmp_path):
    """OpenVINO's IR of a PyTorch module upsampled to a fixed 13x17 with a dynamic height and width: constant sizes,
    input lengths known only at run time; both worlds read the axis at output / input as for run-time sizes (the
    conversion refused it: "needs static input and output lengths")."""
    if mode == "nearest" and transform == "align_corners":
        return
    x = ov.opset11.parameter(ov.PartialShape([-1, 3, -1, -1]), np.float32, name="x")
    ir_mode = "linear_onnx" if mode == "linear" else mode
    y = ov.opset11.interpolate(x, ov.opset11.constant(np.array([13, 17], np.int64)), mode=ir_mode,
                               shape_calculation_mode="sizes", coordinate_transformation_mode=transform,
                               nearest_mode=nearest, axes=ov.opset11.constant(np.array([2, 3], np.int64)))
    path = tmp_path / "fixed.xml"
    ov.save_model(ov.Model([y], [x], "fixed"), str(path), compress_to_fp16=False)
    back = ir_to_onnx(ir.read_model(path), opset=opset)
    for shape in SHAPES:
        want = list(openvino_run_xml(path, _feeds(shape)).values())[0]
        assert want.shape[2:] == (13, 17)
        _close(list(onnxruntime_run(back, _feeds(shape)).values())[0], want, mode)
