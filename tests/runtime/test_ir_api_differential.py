"""Regressions found by the differential fuzzer over IRs written by OpenVINO's own Python API
(tests/runtime/ir_api_fuzz.py): each builds the layer with `openvino.opsetN`, saves it with `openvino.save_model`,
and compares poolir with OpenVINO's CPU plugin on the same file (and, where the bug was in IR -> ONNX, poolir's
ONNX with onnxruntime). A fixed-seed run of the fuzzer itself is the slow test at the end."""

from __future__ import annotations

import numpy as np
import openvino as ov
import openvino.opset1 as ov1
import openvino.opset4 as ov4
import openvino.opset5 as ov5
import pytest

from poolir.ir.errors import ConversionError

from tests.runtime.ir_cases import OV_TYPES, assert_matches_openvino, save_ir


def _param(shape, dtype, name="x"):
    node = ov1.parameter(list(shape), OV_TYPES[np.dtype(dtype)], name=name)
    node.output(0).get_tensor().set_names({name})
    return node


def _named(node, name="y"):
    output = node.output(0)
    output.get_tensor().set_names({name})
    return output


@pytest.mark.parametrize("build", [
    lambda x: ov1.hard_sigmoid(x, np.float32(-0.2), np.float32(0.6)),
    lambda x: ov4.hswish(x),
    lambda x: ov5.hsigmoid(x),
], ids=["HardSigmoid", "HSwish", "HSigmoid"])
def test_hard_activations_of_a_scalar(tmp_path, build):
    # A 0-d input crashed the kernel (np.clip into a numpy scalar: "return arrays must be of ArrayType").
    x = _param([], np.float32)
    path = save_ir([_named(build(x))], [x], tmp_path / "m.xml")
    for value in (-4.0, 0.5, 2.0):
        assert_matches_openvino(path, {"x": np.array(value, np.float32)})


def test_pad_12_crop_longer_than_the_axis(tmp_path):
    # constant mode, an axis of 1 padded by 3 and cropped by 2: 1 + 3 - 2 = 2 elements in OpenVINO and in
    # onnxruntime; poolir's ONNX runtime cropped first (nothing left) and padded 3. (A crop longer than the axis
    # plus the other side's pad crashes OpenVINO 2026.4: [3, 4] with pads [0, 3], [0, -5]; so does this case on a
    # 2-D [3, 1].)
    import openvino.opset12 as ov12
    from poolir import converter, ir, runtime

    x = _param([3, 1, 3], np.float32)
    node = ov12.pad(x, np.array([0, 3, 1], np.int64), np.array([0, -2, 0], np.int64), "constant", np.float32(9))
    path = save_ir([_named(node)], [x], tmp_path / "m.xml")
    feeds = {"x": np.arange(9, dtype=np.float32).reshape(3, 1, 3)}
    expected = assert_matches_openvino(path, feeds)["y"]
    np.testing.assert_array_equal(runtime.run(converter.ir_to_onnx(ir.read_model(path)), feeds)["y"], expected)


def test_broadcast_1_explicit_is_written_as_mode_none(tmp_path):
    # OpenVINO writes Broadcast-1's explicit mode as mode="none"; poolir refused the file ("'none' is not allowed").
    x = _param([3, 1], np.float32)
    node = ov1.broadcast(x, np.array([2, 3, 4], np.int64), np.array([1, 2], np.int64), "explicit")
    path = save_ir([_named(node)], [x], tmp_path / "m.xml")
    assert 'mode="none"' in path.read_text()
    feeds = {"x": np.arange(3, dtype=np.float32).reshape(3, 1)}
    assert assert_matches_openvino(path, feeds)["y"].shape == (2, 3, 4)
    from poolir import converter, ir
    with pytest.raises(ConversionError, match="explicit"):  # refused as explicit, never converted as numpy
        converter.ir_to_onnx(ir.read_model(path))


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric"])
@pytest.mark.parametrize("begin, end", [
    ([2, -1], [-1, 3]),     # the Pad-12 spec's mixed example: reflect reaches the cropped column
    ([-1, 3], [0, -1]),     # crop one side, pad the other past what the crop leaves
    ([0, -2], [1, 2]),
    ([1, 0], [-2, -3]),
])
def test_pad_12_negative_pads_index_the_uncropped_input(tmp_path, mode, begin, end):
    # poolir cropped first and padded what was left (onnxruntime's order); OpenVINO maps every output element
    # back to the uncropped input, as the spec's example shows.
    import openvino.opset12 as ov12
    from poolir import converter, ir
    from tests.peers import onnxruntime_run

    x = _param([3, 4], np.float32)
    node = ov12.pad(x, np.array(begin, np.int64), np.array(end, np.int64), mode,
                    np.float32(9) if mode == "constant" else None)
    path = save_ir([_named(node)], [x], tmp_path / "m.xml")
    feeds = {"x": np.arange(1, 13, dtype=np.float32).reshape(3, 4)}
    expected = assert_matches_openvino(path, feeds)["y"]
    if begin == [2, -1] and mode == "reflect":
        np.testing.assert_array_equal(expected, [[10, 11, 12, 11, 10, 9], [6, 7, 8, 7, 6, 5], [2, 3, 4, 3, 2, 1],
                                                 [6, 7, 8, 7, 6, 5]])  # the spec's own output
    if mode != "symmetric":  # ONNX Pad has no symmetric mode
        np.testing.assert_array_equal(onnxruntime_run(converter.ir_to_onnx(ir.read_model(path)), feeds)["y"],
                                      expected)


@pytest.mark.parametrize("op, dtype, values, axes, keep", [
    ("reduce_mean", np.uint8, [[200, 200, 7], [255, 1, 2]], [1], False),   # the sum saturates first: 127
    ("reduce_sum", np.uint8, [[200, 200, 7], [255, 1, 2]], [0, 1], True),
    ("reduce_mean", np.int8, [[-100, -100, -100], [1, 2, 3]], [1], False),  # -128 / 3 truncated: -42
    ("reduce_l1", np.int8, [[-128, -3, 5], [0, 127, -1]], [], True),       # each element alone: 127 for -128
    ("reduce_l2", np.int8, [[-128, -3, 5], [0, 12, -11]], [], True),       # trunc(sqrt(min(x*x, 127)))
    ("reduce_l2", np.int8, [[-128, -3, 5], [0, 12, -11]], [0], False),
    ("reduce_l1", np.float32, [[-0.5, 2.0, -3.0]], [], True),              # |x|, not x
    ("reduce_l2", np.float32, [[-0.5, 2.0, -3.0]], [], True),
])
def test_reductions_of_small_integers_and_over_no_axes(tmp_path, op, dtype, values, axes, keep):
    # poolir summed i8/u8 in their own type (wrapping: ReduceMean of u8 [200, 200] was 72) where OpenVINO's
    # CPU plugin saturates, and returned x itself for ReduceL1/L2 over no axes (OpenVINO: |x|).
    module = ov4 if op in ("reduce_l1", "reduce_l2") else ov1
    x = _param(np.shape(values), dtype)
    node = getattr(module, op)(x, np.array(axes, np.int64), keep)
    path = save_ir([_named(node)], [x], tmp_path / "m.xml")
    assert_matches_openvino(path, {"x": np.array(values, dtype)}, rtol=0, atol=0)


@pytest.mark.parametrize("build, element_type, opset, pattern", [
    (lambda x: ov1.reduce_sum(x, np.array([0], np.int64), False), np.int8, 22, "ONNX ReduceSum does not take"),
    (lambda x: ov1.reduce_mean(x, np.array([0], np.int64), False), np.uint8, 22, "ONNX ReduceMean does not take"),
    (lambda x: ov1.reduce_max(x, np.array([0], np.int64), False), np.int8, 11, "ReduceMax on i8, from opset 12"),
    (lambda x: ov1.power(x, x), np.int8, 22, "ONNX Pow does not take"),
    (lambda x: ov1.add(x, x), np.int8, 11, "Clip on i32, from opset 12"),  # saturated: test_8_bit_arithmetic
])
def test_ir_to_onnx_refuses_element_types_onnx_does_not_take(tmp_path, build, element_type, opset, pattern):
    # poolir wrote ReduceSum/ReduceMean/Pow on int8 (onnxruntime: "Type 'tensor(int8)' ... is invalid").
    from poolir import converter, ir
    x = _param([3, 2], element_type)
    path = save_ir([_named(build(x))], [x], tmp_path / "m.xml")
    with pytest.raises(ConversionError, match=pattern):
        converter.ir_to_onnx(ir.read_model(path), opset=opset)


@pytest.mark.parametrize("version, axes, skip", [(1, [], False), (15, [], False), (15, [0, 1, 3], True),
                                                 (15, [-2], True)])
def test_squeeze_with_an_empty_axes_input_removes_every_dim_of_1(tmp_path, version, axes, skip):
    # poolir removed nothing for axes [] (OpenVINO: every dim of 1, in both versions).
    import openvino.opset15 as ov15
    from poolir import converter, ir
    from tests.peers import onnxruntime_run

    x = _param([1, 5, 1, 4], np.float32)
    axes_node = ov.op.Constant(ov.Type.i64, ov.Shape([len(axes)]), axes)
    node = ov1.squeeze(x, axes_node) if version == 1 else ov15.squeeze(x, axes_node, skip)
    path = save_ir([_named(node)], [x], tmp_path / "m.xml")
    feeds = {"x": np.arange(20, dtype=np.float32).reshape(1, 5, 1, 4)}
    expected = assert_matches_openvino(path, feeds)["y"]
    got = onnxruntime_run(converter.ir_to_onnx(ir.read_model(path)), feeds)["y"]
    assert got.shape == expected.shape and np.array_equal(got, expected)


def test_adaptive_max_pool_with_indices_keeps_its_output_names_in_onnx(tmp_path):
    # Bins that divide the input (MaxPool + Mod in ONNX): output 0 was named twice, so the ONNX graph output was
    # "y_2" instead of the IR tensor name "y".
    import openvino.opset8 as ov8
    from poolir import converter, ir
    from tests.peers import onnxruntime_run

    x = _param([2, 3, 4, 6], np.float32)
    node = ov8.adaptive_max_pool(x, np.array([2, 3], np.int64), "i32")
    node.output(0).get_tensor().set_names({"y"})
    node.output(1).get_tensor().set_names({"i"})
    path = save_ir(list(node.outputs()), [x], tmp_path / "m.xml")
    feeds = {"x": np.random.default_rng(0).standard_normal((2, 3, 4, 6)).astype(np.float32)}
    expected = assert_matches_openvino(path, feeds)
    got = onnxruntime_run(converter.ir_to_onnx(ir.read_model(path)), feeds)
    assert sorted(got) == ["i", "y"]
    for name in expected:
        np.testing.assert_array_equal(got[name], expected[name])


@pytest.mark.parametrize("ir_version", [10, 11])
def test_verify_names_the_diverging_node_of_an_ir_without_port_names(tmp_path, ir_version):
    # x -> Log -> ReLU -> Multiply -> Sigmoid: log of a negative is NaN, which OpenVINO's ReLU makes 0 and ONNX's
    # keeps, so runtime(ir->onnx) parts from the IR at 'relu'. OpenVINO names only the output port ('y'), and
    # an IR v10 (written here as OpenVINO before 2022 wrote it: version 10, no names attributes) none: verify
    # said "the path exposes none of the reference's tensors by name" (v10), or named 'sig', the last node (v11).
    import re

    from poolir.converter.verify import verify_paths

    x = _param([1, 8], np.float32)
    relu = ov1.relu(ov1.log(x))
    relu.set_friendly_name("relu")
    scaled = ov1.multiply(relu, np.full((1, 8), 2.0, np.float32))
    path = save_ir([_named(ov1.sigmoid(scaled))], [x], tmp_path / "m.xml")
    if ir_version == 10:
        text = path.read_text().replace('version="11"', 'version="10"')
        path.write_text(re.sub(r' names="[^"]*"', "", text))
    np.savez(tmp_path / "in.npz", x=np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 8))
    report = verify_paths([path], inputs=tmp_path / "in.npz")
    (model,) = report.models
    located = [location for location in model.locations if location.divergence is not None]
    assert [(loc.path, loc.divergence.node) for loc in located] == [("runtime(ir->onnx)", "relu")]


def _preprocessed_cnn(path, resize: str | None):
    """A small CNN behind OpenVINO's PrePostProcessor: u8 NHWC input, convert_element_type, reverse_channels,
    mean/scale, NHWC -> NCHW (and optionally resize from 9x9, which becomes Interpolate on the NHWC data: `resize`
    LINEAR, OpenVINO's own linear mode, or CUBIC, a downscale onnxruntime's cubic kernel takes only as NCHW);
    u8 NHWC output."""
    import openvino.opset8 as ov8
    from openvino.preprocess import PrePostProcessor, ResizeAlgorithm

    rng = np.random.default_rng(0)
    x = _param([1, 3, 6, 6], np.float32)
    conv = ov1.convolution(x, rng.standard_normal((4, 3, 3, 3)).astype(np.float32), [1, 1], [1, 1], [1, 1], [1, 1])
    pool = ov8.max_pool(ov1.relu(conv), [2, 2], [1, 1], [0, 0], [0, 0], [2, 2], "ceil")
    ppp = PrePostProcessor(ov.Model([_named(pool)], [x], "cnn"))
    ppp.input().tensor().set_element_type(ov.Type.u8).set_layout(ov.Layout("NHWC"))
    if resize:
        ppp.input().tensor().set_spatial_static_shape(9, 9)
        ppp.input().preprocess().resize(getattr(ResizeAlgorithm, f"RESIZE_{resize}"))
    ppp.input().model().set_layout(ov.Layout("NCHW"))
    ppp.input().preprocess().convert_element_type(ov.Type.f32).reverse_channels().mean([1.0, 2.0, 3.0]) \
        .scale([64.0, 32.0, 16.0])
    ppp.output().model().set_layout(ov.Layout("NCHW"))
    ppp.output().tensor().set_layout(ov.Layout("NHWC")).set_element_type(ov.Type.f16)
    ov.save_model(ppp.build(), str(path), compress_to_fp16=False)
    return path


@pytest.mark.parametrize("resize", [None, "LINEAR", "CUBIC", "NEAREST"])
def test_preprocessing_written_by_openvino_runs_converts_and_round_trips(tmp_path, resize):
    """OpenVINO's linear mode was refused ("not supported"): without antialias it is linear_onnx (ir/ops/resize.py).
    The cubic NHWC downscale converts as Transpose, Resize, Transpose (onnxruntime_gaps.onnxruntime_resizes)."""
    from poolir import converter, ir
    from tests.peers import onnxruntime_run, openvino_run_xml

    path = _preprocessed_cnn(tmp_path / "m.xml", resize=resize)
    side = 9 if resize else 6
    feeds = {"x": np.random.default_rng(1).integers(0, 256, (1, side, side, 3)).astype(np.uint8)}
    expected = assert_matches_openvino(path, feeds, rtol=1e-3, atol=1e-3)["y"]
    assert expected.dtype == np.float16 and expected.shape == (1, 3, 3, 4)
    np.testing.assert_allclose(onnxruntime_run(converter.ir_to_onnx(ir.read_model(path)), feeds)["y"].astype(float),
                               expected.astype(float), rtol=1e-3, atol=1e-3)
    ir.write_model(ir.read_model(path), tmp_path / "poolir.xml")
    np.testing.assert_array_equal(openvino_run_xml(tmp_path / "poolir.xml", feeds)["y"], expected)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int32])
@pytest.mark.parametrize("low, high", [(1.678, 3.677), (0.5, 4.5), (-4.5, -1.5), (-2.7, 1e10), (200.5, 300.7)])
@pytest.mark.parametrize("dynamic", [False, True])
def test_clamp_of_integers_rounds_its_bounds_as_openvino(tmp_path, dtype, low, high, dynamic):
    # i8/u8 on static dims: OpenVINO clamps in float32 and truncates, so u8 0 with min 1.678 is 1 (poolir: ceil(min)
    # = 2, which is right for i32, and for i8/u8 on a dim declared dynamic).
    from poolir import converter, ir
    from tests.peers import onnxruntime_run

    x = ov1.parameter(ov.PartialShape([-1] if dynamic else [9]), OV_TYPES[np.dtype(dtype)], name="x")
    x.output(0).get_tensor().set_names({"x"})
    path = save_ir([_named(ov1.clamp(x, low, high))], [x], tmp_path / "m.xml")
    feeds = {"x": np.arange(-3, 6).astype(dtype) if dtype != np.uint8 else np.arange(0, 9).astype(dtype)}
    expected = assert_matches_openvino(path, feeds)["y"]
    np.testing.assert_array_equal(onnxruntime_run(converter.ir_to_onnx(ir.read_model(path)), feeds)["y"], expected)


@pytest.mark.parametrize("source", [np.float32, np.float16])
@pytest.mark.parametrize("destination", ["u8", "i8"])
@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("like", [False, True])
def test_float_to_8_bit_conversion_saturates_on_dynamic_dims(tmp_path, source, destination, dynamic, like):
    # OpenVINO's CPU plugin wraps an out-of-range float into i8/u8 on static dims (300 -> 44) but saturates on a
    # dim declared dynamic (300 -> 255): poolir wrapped in both.
    x = ov1.parameter(ov.PartialShape([-1] if dynamic else [10]), OV_TYPES[np.dtype(source)], name="x")
    x.output(0).get_tensor().set_names({"x"})
    target = np.zeros([1], {"u8": np.uint8, "i8": np.int8}[destination])
    node = ov1.convert_like(x, target) if like else ov1.convert(x, destination)
    path = save_ir([_named(node)], [x], tmp_path / "m.xml")
    values = [300.0, -159.0, np.nan, np.inf, -np.inf, 255.5, -0.7, 127.9, -128.9, 97.0]
    assert_matches_openvino(path, {"x": np.array(values, source)})


@pytest.mark.parametrize("shape, axes", [([1, 1, 2], [3, -2]), ([2, 3], [0, 0]), ([2, 3], [1, -2]), ([2, 3], [0, -4]),
                                         ([2], [1, -1, 0])])
def test_unsqueeze_with_repeated_axes_counts_each_position_once(tmp_path, shape, axes):
    # poolir refused "repeated Unsqueeze axes"; OpenVINO counts a repeat once ([2, 3] with [0, 0] -> [1, 2, 3]).
    from poolir import converter, ir
    from tests.peers import onnxruntime_run

    x = _param(shape, np.float32)
    path = save_ir([_named(ov1.unsqueeze(x, np.array(axes, np.int64)))], [x], tmp_path / "m.xml")
    feeds = {"x": np.arange(np.prod(shape), dtype=np.float32).reshape(shape)}
    expected = assert_matches_openvino(path, feeds)["y"]
    assert onnxruntime_run(converter.ir_to_onnx(ir.read_model(path)), feeds)["y"].shape == expected.shape


def test_auto_broadcast_none_accepts_a_ranged_dim_that_holds_the_other(tmp_path):
    # [1..2,2] + [1,2] with auto_broadcast none: poolir refused "needs equal shapes"; OpenVINO merges the dims.
    x = ov1.parameter(ov.PartialShape([ov.Dimension(1, 2), 2]), ov.Type.f32, name="x")
    x.output(0).get_tensor().set_names({"x"})
    b = _param([1, 2], np.float32, name="b")
    path = save_ir([_named(ov1.add(x, b, auto_broadcast="none"))], [x, b], tmp_path / "m.xml")
    assert_matches_openvino(path, {"x": np.array([[1, 2]], np.float32), "b": np.array([[3, 4]], np.float32)})


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("build", [ov1.add, ov1.subtract, ov1.multiply, ov1.divide],
                         ids=["Add", "Subtract", "Multiply", "Divide"])
def test_8_bit_arithmetic_saturates_in_onnx_as_in_openvino(tmp_path, dtype, build):
    # OpenVINO's CPU plugin computes i8/u8 arithmetic in int32 and saturates (u8 3 - 5 -> 0, i8 100 * 100 -> 127;
    # Divide truncates); poolir's IR runtime did, but its ONNX wrapped (3 - 5 -> 254) and floored.
    from poolir import converter, ir
    from tests.peers import onnxruntime_run

    a, b = _param([6], dtype, name="a"), _param([6], dtype, name="b")
    path = save_ir([_named(build(a, b))], [a, b], tmp_path / "m.xml")
    if dtype == np.int8:
        feeds = {"a": np.array([100, -100, 127, -128, -7, 7], dtype), "b": np.array([100, 100, 2, -1, 2, -2], dtype)}
    else:
        feeds = {"a": np.array([3, 200, 255, 0, 7, 250], dtype), "b": np.array([5, 100, 2, 1, 2, 3], dtype)}
    expected = assert_matches_openvino(path, feeds)["y"]
    np.testing.assert_array_equal(onnxruntime_run(converter.ir_to_onnx(ir.read_model(path)), feeds)["y"], expected)


@pytest.mark.slow
def test_fixed_seed_differential_fuzz_against_openvino():
    # tests/runtime/ir_api_fuzz.py, 300 cases (every generator about 10 times, each on every path): no poolir
    # crash, and every disagreement with OpenVINO explained (ir_api_fuzz.KNOWN: OpenVINO's, onnxruntime's, or not
    # modelled). Refusals are PoolirErrors by construction; OpenVINO refusing what poolir runs is allowed.
    from tests.runtime.ir_api_fuzz import fuzz, known_reason

    findings, counts = fuzz(300, seed=7)
    assert sum(counts.values()) == 300
    unexplained = [f.line() for f in findings if f.kind in ("mismatch", "crash") and not known_reason(f, findings)]
    assert not unexplained, "\n".join(unexplained)


def test_prelu_slope_over_a_dynamic_channel_dim_is_not_converted(tmp_path):
    # [1, ?, 4] with a slope of 4: OpenVINO (and poolir's IR runtime) scale channel c by slope[c] when the run's
    # C is 4; IR -> ONNX wrote a plain PRelu, which scales along the last axis.
    from poolir import converter, ir

    x = ov1.parameter(ov.PartialShape([1, -1, 4]), ov.Type.f32, name="x")
    x.output(0).get_tensor().set_names({"x"})
    node = ov1.prelu(x, np.array([0.1, 0.2, 0.3, 0.4], np.float32))
    path = save_ir([_named(node)], [x], tmp_path / "m.xml")
    assert_matches_openvino(path, {"x": -np.arange(1, 17, dtype=np.float32).reshape(1, 4, 4)})
    with pytest.raises(ConversionError, match="dynamic channel dim"):
        converter.ir_to_onnx(ir.read_model(path))


def test_integer_divide_of_run_time_values_truncates_in_onnx_as_in_openvino(tmp_path):
    # i32 Divide (m_pythondiv=true) of run-time values: OpenVINO's CPU plugin truncates (-7 / 2 -> -3), the spec's
    # floor (-4) is what it folds constants to. poolir's IR runtime did both; its ONNX always floored.
    from poolir import converter, ir
    from tests.peers import onnxruntime_run

    a, b = _param([4], np.int32, name="a"), _param([4], np.int32, name="b")
    path = save_ir([_named(ov1.divide(a, b))], [a, b], tmp_path / "m.xml")
    feeds = {"a": np.array([-7, 7, -9, 9], np.int32), "b": np.array([2, -2, 4, 4], np.int32)}
    expected = assert_matches_openvino(path, feeds)["y"]
    np.testing.assert_array_equal(expected, [-3, -3, -2, 2])
    np.testing.assert_array_equal(onnxruntime_run(converter.ir_to_onnx(ir.read_model(path)), feeds)["y"], expected)


@pytest.mark.parametrize("begin, stride", [(-2, 1), (2, 1), (1, -1), (1, 2)])
@pytest.mark.parametrize("begin_mask", [0, 1])
def test_strided_slice_shrink_with_a_masked_begin_takes_element_0(tmp_path, begin, stride, begin_mask):
    # OpenVINO ignores a masked begin for a shrunk axis too (its spec: "the corresponding dimension of the begin
    # input is ignored"), so it takes element 0; poolir took begin[i], as TensorFlow would.
    x = _param([4, 2], np.int8)
    node = ov1.strided_slice(x, np.array([begin]), np.array([0]), np.array([stride]), [begin_mask], [0], [0], [1], [0])
    path = save_ir([_named(node)], [x], tmp_path / "m.xml")
    assert_matches_openvino(path, {"x": np.array([[5, 6], [-19, 1], [18, 2], [7, 3]], np.int8)})


@pytest.mark.parametrize("length, stride, dilation", [(6, 4, 1), (6, 4, 2), (6, 4, 3), (2, 3, 2), (2, 3, 1)])
def test_avg_pool_16_window_starting_past_the_input_with_dilations(tmp_path, length, stride, dilation):
    # A ceil window starting past the input divides 0 by OpenVINO's count (L - start) / dilation, truncated: 0
    # gives NaN (L=6, start 8, dilation 3), a negative count -0. poolir ignored the dilation (-0 everywhere).
    import openvino.opset16 as ov16

    x = _param([1, 1, length], np.float32)
    node = ov16.avg_pool(x, [stride], [0], [0], [1], True, "ceil", "valid", [dilation])
    path = save_ir([_named(node)], [x], tmp_path / "m.xml")
    assert_matches_openvino(path, {"x": np.arange(1, length + 1, dtype=np.float32).reshape(1, 1, length)})


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("dynamic", [False, True])
def test_8_bit_divide_rounds_half_to_even_on_dynamic_dims(tmp_path, dtype, dynamic):
    # OpenVINO's CPU plugin truncates an i8/u8 quotient on static dims (7 / 2 -> 3) but rounds it half to even on
    # a dim declared dynamic (-> 4); poolir truncated both.
    shape = ov.PartialShape([-1] if dynamic else [8])
    a, b = (ov1.parameter(shape, OV_TYPES[np.dtype(dtype)], name=name) for name in "ab")
    for node, name in ((a, "a"), (b, "b")):
        node.output(0).get_tensor().set_names({name})
    path = save_ir([_named(ov1.divide(a, b))], [a, b], tmp_path / "m.xml")
    values = [3, 5, 7, 1, 9, 120, 11, 0] if dtype == np.uint8 else [3, -5, 7, -7, 9, -9, 11, 0]
    assert_matches_openvino(path, {"a": np.array(values, dtype), "b": np.array([2, 2, 2, 2, 4, 4, 3, 5], dtype)})
    if dynamic:  # not written in ONNX (no rounding division there without Round, which poolir does not run)
        from poolir import converter, ir
        with pytest.raises(ConversionError, match="half to even"):
            converter.ir_to_onnx(ir.read_model(path))


@pytest.mark.parametrize("build", [ov1.floor_mod, ov1.mod], ids=["FloorMod", "Mod"])
def test_f16_remainder_in_onnx_rounds_once(tmp_path, build):
    # IR -> ONNX wrote the remainder formula step by step in f16 (each step rounded); OpenVINO and poolir's IR
    # runtime compute f16 in float32 and round once (0.0845 where the ONNX gave 0.09375).
    from poolir import converter, ir, runtime

    a, b = _param([1, 4, 2], np.float16, name="a"), _param([4, 3, 4, 2], np.float16, name="b")
    path = save_ir([_named(build(a, b))], [a, b], tmp_path / "m.xml")
    rng = np.random.default_rng(4)
    feeds = {"a": (rng.standard_normal((1, 4, 2)) * 30).astype(np.float16),
             "b": rng.standard_normal((4, 3, 4, 2)).astype(np.float16)}
    expected = assert_matches_openvino(path, feeds, rtol=0, atol=0)["y"]
    np.testing.assert_array_equal(runtime.run(converter.ir_to_onnx(ir.read_model(path)), feeds)["y"], expected)
