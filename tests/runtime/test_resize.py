"""Resize and Upsample (ONNX), Interpolate-4/11 (IR) and both conversions, against the onnx package's backend cases,
onnxruntime, OpenVINO's CPU plugin on its own layers, and the engines running the converted models. Nearest resizing
copies elements: exact. Linear and cubic: within the few ulps the engines' summation orders give."""

from __future__ import annotations

import random

import numpy as np
import onnx
import openvino.opset11 as ov11
import pytest
from onnx import TensorProto, helper, numpy_helper
from openvino.utils.node_factory import NodeFactory

from poolir import ir, runtime
from poolir.converter import ir_to_onnx, onnx_to_ir
from poolir.ir.errors import ConversionError, PoolirError, UnsupportedError
from tests.backend_cases import accepting_versions, at_opset, feeds_of, node_cases
from tests.peers import onnxruntime_run, openvino_run_xml
from tests.runtime.ir_cases import assert_matches_openvino, single_layer_ir

BACKEND_CASES = node_cases(("resize", "upsample"), ("Resize", "Upsample"))
# The onnx reference divides align_corners by the fractional output length (input * scale - 1), not by the length
# of the resized axis the spec names (output - 1); onnxruntime and OpenVINO follow the spec, so does poolir.
FRACTIONAL_ALIGN_CORNERS = {"test_resize_downsample_scales_linear_align_corners",
                            "test_resize_downsample_scales_cubic_align_corners"}
CLOSE = {"rtol": 2e-6, "atol": 2e-6}


def test_every_generator_case_is_collected():
    assert {case.model.graph.node[0].op_type for case in BACKEND_CASES.values()} == {"Resize", "Upsample"}
    assert len(BACKEND_CASES) >= 40


@pytest.mark.parametrize("name", sorted(BACKEND_CASES))
def test_onnx_backend_case_at_every_opset_that_accepts_it(name):
    case = BACKEND_CASES[name]
    node = case.model.graph.node[0]
    _, outputs = case.data_sets[0]
    feeds = feeds_of(case)
    if any(a.name == "antialias" and a.i for a in node.attribute):
        with pytest.raises(UnsupportedError, match="antialias"):
            runtime.run(case.model, feeds)
        return
    opset = case.model.opset_import[0].version
    nearest = helper.get_attribute_value(next(a for a in node.attribute if a.name == "mode")) == b"nearest" \
        if any(a.name == "mode" for a in node.attribute) else True
    ran = 0
    for version in accepting_versions(case):
        if (version.since < 11) != (opset < 11) or version.since > 19:
            continue
        if version.op_type == "Upsample" and version.since < 9 <= opset:   # scales became an input in 9
            continue
        if "half_pixel_symmetric" in str(node) and version.since < 19:
            continue
        got = runtime.run(at_opset(case, version.since), feeds)[case.model.graph.output[0].name]
        want = onnxruntime_run(case.model, feeds)["Y"] if name in FRACTIONAL_ALIGN_CORNERS else outputs[0]
        assert got.shape == want.shape
        if nearest:
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-5)
        ran += 1
    assert ran >= 1


def test_the_reference_align_corners_differs_from_onnxruntime_and_poolir_follows_the_spec():
    """2 x 4 by scale 0.6 is 1 x 2: align_corners reads at o * (4 - 1) / (2 - 1) = 0, 3 (the spec's output length),
    not at o * 3 / (2.4 - 1) as the onnx reference does."""
    case = BACKEND_CASES["test_resize_downsample_scales_linear_align_corners"]
    got = runtime.run(case.model, feeds_of(case))["Y"]
    np.testing.assert_array_equal(got, [[[[1.0, 4.0]]]])
    assert not np.allclose(got, case.data_sets[0][1][0])


def _resize_model(opset, shape, attrs, *, scales=None, sizes=None, dtype=np.float32):
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    inits = [numpy_helper.from_array(np.zeros(0, np.float32), "roi")]
    inputs = ["x", "roi"]
    if scales is not None:
        inits.append(numpy_helper.from_array(np.asarray(scales, np.float32), "scales"))
        inputs.append("scales")
    else:
        inits.append(numpy_helper.from_array(np.zeros(0, np.float32), "no_scales"))
        inits.append(numpy_helper.from_array(np.asarray(sizes, np.int64), "sizes"))
        inputs += ["no_scales", "sizes"]
    graph = helper.make_graph([helper.make_node("Resize", inputs, ["y"], **attrs)], "g",
                              [helper.make_tensor_value_info("x", elem, shape)],
                              [helper.make_tensor_value_info("y", elem, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


MODES = ("nearest", "linear", "cubic")
COORDINATES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn")
NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _grid(count=90, seed=11):
    """Random Resize-11..19 nodes: every mode, coordinate mode and nearest mode, by sizes (any length, ties of
    rounding included) or by scales (powers of two and awkward fractions)."""
    rng = random.Random(seed)
    cases = []
    for index in range(count):
        mode = MODES[index % 3]
        shape = (1, rng.randint(1, 3), rng.randint(1, 7), rng.randint(2, 8))
        attrs = {"mode": mode, "coordinate_transformation_mode": rng.choice(COORDINATES)}
        if mode == "nearest":
            attrs["nearest_mode"] = rng.choice(NEAREST)
        if mode == "cubic" and rng.random() < 0.3:
            attrs["cubic_coeff_a"] = -0.5
        opset = rng.choice((11, 13, 18, 19))
        if rng.random() < 0.5:
            sizes = [shape[0], shape[1], rng.randint(1, 15), rng.randint(1, 15)]
            cases.append((opset, shape, attrs, None, sizes))
        else:
            scales = [1, 1, rng.choice((0.5, 2.0, 3.0, 0.6, 1.3, 1.7, 2.5, 0.3333333)),
                      rng.choice((0.5, 2.0, 4.0, 0.75, 1.25, 2.3333333))]
            cases.append((opset, shape, attrs, scales, None))
    return cases


@pytest.mark.parametrize("case", _grid(), ids=str)
def test_against_onnxruntime(case):
    opset, shape, attrs, scales, sizes = case
    model = _resize_model(opset, shape, attrs, scales=scales, sizes=sizes)
    x = np.random.default_rng(len(str(case))).standard_normal(shape).astype(np.float32)
    expected = onnxruntime_run(model, {"x": x})["y"]
    got = runtime.run(model, {"x": x})["y"]
    assert got.shape == expected.shape
    if attrs["mode"] == "nearest":
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", _grid(40, seed=12), ids=str)
def test_converted_for_openvino_or_refused_where_it_would_sample_differently(case, tmp_path):
    opset, shape, attrs, scales, sizes = case
    model = _resize_model(opset, shape, attrs, scales=scales, sizes=sizes)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    expected = onnxruntime_run(model, {"x": x})["y"]
    try:
        converted = onnx_to_ir(model)
    except ConversionError as error:
        assert "samples differently" in str(error)
        assert scales is not None or attrs["coordinate_transformation_mode"] in ("align_corners",
                                                                                   "tf_half_pixel_for_nn")
        return
    ir.write_model(converted, tmp_path / "model.xml")
    got = openvino_run_xml(tmp_path / "model.xml", {"x": x}, ["y"])["y"]
    assert got.shape == expected.shape
    if attrs["mode"] == "nearest":
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_pytorch_upsampling_converts_exactly(tmp_path):
    """nn.Upsample(scale_factor=2) as both exporters write it: scales [1, 1, 2, 2], asymmetric, floor."""
    attrs = {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}
    model = _resize_model(13, (1, 2, 3, 5), attrs, scales=[1, 1, 2, 2])
    x = np.arange(30, dtype=np.float32).reshape(1, 2, 3, 5)
    want = x.repeat(2, axis=2).repeat(2, axis=3)
    np.testing.assert_array_equal(runtime.run(model, {"x": x})["y"], want)
    ir.write_model(onnx_to_ir(model), tmp_path / "model.xml")
    np.testing.assert_array_equal(openvino_run_xml(tmp_path / "model.xml", {"x": x}, ["y"])["y"], want)


def test_scales_convert_as_scales_where_openvino_reads_at_them(tmp_path):
    """2 elements by scale 1.7 are 3, read at (o + 0.5) / 1.7 - 0.5 (sources 0, 0, 0 by floor); Interpolate in sizes
    mode would read at output / input = 1.5 (sources 0, 0, 1), in scales mode at 1.7: the converter keeps the scales."""
    attrs = {"mode": "nearest", "coordinate_transformation_mode": "half_pixel", "nearest_mode": "floor"}
    model = _resize_model(13, (1, 1, 1, 2), attrs, scales=[1, 1, 1, 1.7])
    x = np.array([[[[5.0, 7.0]]]], np.float32)
    np.testing.assert_array_equal(runtime.run(model, {"x": x})["y"], [[[[5.0, 5.0, 5.0]]]])
    np.testing.assert_array_equal(onnxruntime_run(model, {"x": x})["y"], [[[[5.0, 5.0, 5.0]]]])
    converted = onnx_to_ir(model)
    (layer,) = [layer for layer in converted.layers if layer.type == "Interpolate"]
    assert layer.attrs["shape_calculation_mode"] == "scales"
    ir.write_model(converted, tmp_path / "model.xml")
    np.testing.assert_array_equal(openvino_run_xml(tmp_path / "model.xml", {"x": x}, ["y"])["y"], [[[[5.0, 5.0, 5.0]]]])


@pytest.mark.parametrize("mode", ["half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners"])
def test_linear_on_a_height_of_one_converts_whatever_the_coordinates(mode, tmp_path):
    """F.interpolate(scale_factor=1.5, mode="bilinear") of an image 1 high: height 1 -> 1, every tap is the one row
    whatever the coordinate rule (the conversion refused it: "samples differently")."""
    attrs = {"mode": "linear", "coordinate_transformation_mode": mode}
    model = _resize_model(13, (1, 3, 1, 2), attrs, scales=[1, 1, 1.5, 1.5])
    x = np.random.default_rng(4).standard_normal((1, 3, 1, 2)).astype(np.float32)
    expected = onnxruntime_run(model, {"x": x})["y"]
    ir.write_model(onnx_to_ir(model), tmp_path / "model.xml")
    np.testing.assert_allclose(openvino_run_xml(tmp_path / "model.xml", {"x": x}, ["y"])["y"], expected,
                               rtol=1e-6, atol=1e-6)


def test_a_resize_openvino_cannot_sample_alike_is_refused_in_conversion():
    """6 elements by scale 0.3333333 (just below 1/3): onnxruntime makes trunc(1.9999998) = 1 output read at
    0.5 / 0.3333333 - 0.5 = 1 (source 1); Interpolate's scales mode makes trunc(6 * (0.3333333 + 1e-6)) = 2
    outputs, its sizes mode reads at 0.5 * 6 - 0.5 = 2.5 (source 2)."""
    attrs = {"mode": "nearest", "coordinate_transformation_mode": "half_pixel", "nearest_mode": "floor"}
    model = _resize_model(13, (1, 1, 1, 6), attrs, scales=[1, 1, 1, 0.3333333])
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 1, 6)
    np.testing.assert_array_equal(onnxruntime_run(model, {"x": x})["y"], [[[[1.0]]]])
    np.testing.assert_array_equal(runtime.run(model, {"x": x})["y"], [[[[1.0]]]])
    with pytest.raises(ConversionError, match="samples differently"):
        onnx_to_ir(model)


def test_a_resize_that_keeps_the_shape_copies_the_input_as_onnxruntime_does(tmp_path):
    """Scale 1.3 on 2 elements makes 2: onnxruntime returns the input unchanged (its sources by the formula would
    be 0, 0), so does poolir, and the conversion drops the layer."""
    attrs = {"mode": "nearest", "coordinate_transformation_mode": "half_pixel", "nearest_mode": "floor"}
    model = _resize_model(13, (1, 1, 1, 2), attrs, scales=[1, 1, 1, 1.3])
    x = np.array([[[[5.0, 7.0]]]], np.float32)
    np.testing.assert_array_equal(onnxruntime_run(model, {"x": x})["y"], x)
    np.testing.assert_array_equal(runtime.run(model, {"x": x})["y"], x)
    assert "Interpolate" not in {layer.type for layer in onnx_to_ir(model).layers}


def _interpolate(version, mode, calc, values, axes, coordinate, nearest, pads=(0, 0, 0, 0)):
    def build(x):
        target = np.asarray(values, np.float32 if calc == "scales" else np.int64)
        attrs = {"coordinate_transformation_mode": coordinate, "nearest_mode": nearest,
                 "pads_begin": list(pads[:2]) and [0, 0, pads[0], pads[1]], "pads_end": [0, 0, pads[2], pads[3]]}
        if version == 11:
            return ov11.interpolate(x, target, mode, calc, axes=np.asarray(axes, np.int64), **attrs)
        sizes = target if calc == "sizes" else np.ones(len(axes), np.int64)
        scales = target if calc == "scales" else np.ones(len(axes), np.float32)
        inputs = [x] + [ov11.constant(value) for value in (sizes, scales, np.asarray(axes, np.int64))]
        return NodeFactory("opset4").create("Interpolate", inputs, {
            "mode": mode, "shape_calculation_mode": calc, "antialias": False, "cube_coeff": -0.75, **attrs})
    return build


def _ir_grid(count=70, seed=5):
    rng = random.Random(seed)
    cases = []
    for index in range(count):
        mode = ("nearest", "linear_onnx", "cubic")[index % 3]
        calc = rng.choice(("sizes", "scales"))
        values = ([rng.randint(1, 12), rng.randint(1, 12)] if calc == "sizes"
                  else [rng.choice((0.5, 2.0, 0.6, 1.3, 1.7, 2.5)), rng.choice((0.5, 2.0, 0.75, 1.25, 3.0))])
        pads = tuple(rng.choice((0, 0, 1)) for _ in range(4))
        nearest = rng.choice(NEAREST + ("simple",))
        cases.append((rng.choice((4, 11)), mode, calc, values, rng.choice(([2, 3], [3, 2])),
                      rng.choice(COORDINATES), nearest, pads, (1, 2, rng.randint(1, 6), rng.randint(2, 7))))
    return cases


@pytest.mark.parametrize("case", _ir_grid(), ids=str)
def test_ir_layer_against_openvino_and_as_onnx(case, tmp_path):
    version, mode, calc, values, axes, coordinate, nearest, pads, shape = case
    xml = single_layer_ir(_interpolate(version, mode, calc, values, axes, coordinate, nearest, pads), shape,
                          np.float32, tmp_path / "model.xml")
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    exact = mode == "nearest"
    expected = next(iter(assert_matches_openvino(xml, {"x": x}, rtol=0 if exact else 1e-5,
                                                 atol=0 if exact else 1e-5).values()))
    try:
        back = ir_to_onnx(ir.read_model(xml), opset=18)
    except ConversionError as error:
        assert "samples differently" in str(error)
        # one Resize reads every axis by scales or every axis by sizes; a layer whose scales give one axis its own
        # length (read at o in OpenVINO) and another a new one needs both
        assert coordinate in ("align_corners", "tf_half_pixel_for_nn") or nearest == "simple" or calc == "scales"
        return
    onnx.checker.check_model(back, full_check=True)
    got = onnxruntime_run(back, {back.graph.input[0].name: x})[back.graph.output[0].name]
    if exact:
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("attrs,inputs,match", [
    ({"mode": "linear", "antialias": 1}, {"scales": [1, 1, 0.5, 0.5]}, "antialias"),
    ({"mode": "area"}, {"scales": [1, 1, 2, 2]}, "mode"),
    ({"mode": "nearest", "exclude_outside": 1}, {"scales": [1, 1, 2, 2]}, "exclude_outside"),
    ({"mode": "nearest", "coordinate_transformation_mode": "half_pixel_symmetric"}, {"scales": [1, 1, 2, 2]},
     "half_pixel_symmetric"),
    ({"mode": "nearest"}, {"scales": [1, 2, 2]}, "3 values for 4 axes"),
    ({"mode": "nearest"}, {"scales": [1, 1, 0, 2]}, "> 0"),
    ({"mode": "nearest"}, {"sizes": [1, 1, -2, 2]}, "negative"),
    ({"mode": "nearest", "coordinate_transformation_mode": "tf_crop_and_resize"}, {"scales": [1, 1, 2, 2]}, "roi"),
])
def test_bad_resize_is_refused(attrs, inputs, match):
    opset = 18 if "antialias" in attrs else 13
    model = _resize_model(opset, (1, 1, 2, 2), attrs, **inputs)
    with pytest.raises(PoolirError, match=match):
        runtime.run(model, {"x": np.zeros((1, 1, 2, 2), np.float32)})


def test_upsample_7_scales_attribute_and_a_scale_below_one_is_refused():
    graph = helper.make_graph([helper.make_node("Upsample", ["x"], ["y"], scales=[1.0, 1.0, 2.0, 3.0])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 1, 2, 2))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 7)], ir_version=10)
    x = np.array([[[[1, 2], [3, 4]]]], np.float32)
    np.testing.assert_array_equal(runtime.run(model, {"x": x})["y"], onnxruntime_run(model, {"x": x})["y"])
    model.graph.node[0].attribute[0].floats[2] = 0.5
    with pytest.raises(PoolirError, match=">= 1"):
        runtime.run(model, {"x": x})


def test_interpolate_modes_poolir_does_not_run_are_refused(tmp_path):
    xml = single_layer_ir(_interpolate(11, "bilinear_pillow", "scales", [2.0, 2.0], [2, 3], "half_pixel", "floor"),
                          (1, 1, 2, 2), np.float32, tmp_path / "model.xml")
    with pytest.raises(PoolirError, match="bilinear_pillow"):
        runtime.Session(ir.read_model(xml)).run({"x": np.zeros((1, 1, 2, 2), np.float32)})
    with pytest.raises(ConversionError, match="bilinear_pillow"):
        ir_to_onnx(ir.read_model(xml), opset=18)


def test_oversized_resize_is_refused_before_allocating():
    model = _resize_model(13, (1, 1, 2, 2), {"mode": "nearest"}, sizes=[1, 1, 2**20, 2**20])
    with pytest.raises(PoolirError, match="budget|elements"):
        runtime.run(model, {"x": np.zeros((1, 1, 2, 2), np.float32)})


def test_a_resize_to_sizes_fed_at_run_time_gives_each_run_its_own_shape():
    """A Shape read after a Resize whose sizes are a feed is recomputed on every run: the runtime's per-signature
    cache of shape values (runtime/onnx_shape_values.py) must not keep the first run's [1, 1, 4, 4]."""
    nodes = [helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="nearest"),
             helper.make_node("Shape", ["y"], ["out"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2]),
                                           helper.make_tensor_value_info("sizes", TensorProto.INT64, [4])],
                              [helper.make_tensor_value_info("out", TensorProto.INT64, [4])])
    session = runtime.Session(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    x = np.ones((1, 1, 2, 2), np.float32)
    for sizes in ([1, 1, 4, 4], [1, 1, 6, 2], [1, 1, 4, 4]):
        assert session.run({"x": x, "sizes": np.array(sizes, np.int64)})["out"].tolist() == sizes
