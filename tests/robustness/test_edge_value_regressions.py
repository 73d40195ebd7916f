"""Edge values (empty axes, NaN and infinite attributes, u1, repeated or negative axes, absent inputs, infinite
results) that once crashed poolir or gave another number than the engine of its world: each case against
onnxruntime (the ONNX world), OpenVINO's CPU plugin (the IR world) or a value the spec states. Integer and
float arithmetic at the edges of its types: test_edge_value_arithmetic.py."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from poolir import ir, runtime
from tests.peers import onnxruntime_run, openvino_run_xml
from tests.robustness.cli_check import invoke_cli, one_line_error
from tests.robustness.edge_values import NUMPY_TO_IR, NUMPY_TO_ONNX, ir_file, onnx_one_node


# -- ReduceMax/ReduceMin over an axis of length 0 raised numpy's "zero-size array" error in both worlds ---------
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int64, np.int8, np.uint8])
@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin", "ReduceLogSumExp"])
def test_onnx_reduction_over_an_empty_axis_gives_its_identity_like_onnxruntime(op, dtype):
    dtype = np.dtype(dtype)
    if op == "ReduceLogSumExp" and dtype in (np.int8, np.uint8):
        pytest.skip("onnxruntime 1.31 has no ReduceLogSumExp kernel for this type")
    model = onnx_one_node(helper.make_node(op, ["x", "axes"], ["y"], keepdims=0),
                          [("x", NUMPY_TO_ONNX[dtype], [2, 0, 3])], [("y", NUMPY_TO_ONNX[dtype], [2, 3])],
                          [helper.make_tensor("axes", TensorProto.INT64, [1], [1])])
    feeds = {"x": np.zeros((2, 0, 3), dtype)}
    expected = onnxruntime_run(model, feeds)["y"]
    got = runtime.run(model, feeds)["y"]
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


_LOG_SUM_EXP_ROWS = [[0, 0, 0], [1, 2, 3], [-5, 100, 100], [1000, -1000, 7]]
_LOG_SUM_ROWS = [[0, 3, 1], [0, 0, 0], [100, 100, 5]]  # log 0 = -inf: the type's minimum in onnxruntime


@pytest.mark.parametrize("op, dtype, rows", [("ReduceLogSumExp", np.float32, _LOG_SUM_EXP_ROWS),
                                             ("ReduceLogSumExp", np.int32, _LOG_SUM_EXP_ROWS),
                                             ("ReduceLogSum", np.int32, _LOG_SUM_ROWS),
                                             ("ReduceLogSum", np.int64, _LOG_SUM_ROWS)])
def test_onnx_log_sum_reductions_of_finite_values_match_onnxruntime(op, dtype, rows):
    # Integer ReduceLogSumExp raised OverflowError even over a non-empty axis (an -inf initial for an int max);
    # integer ReduceLogSum of 0 went through numpy's undefined cast of -inf (and its warning).
    onnx_type = NUMPY_TO_ONNX[np.dtype(dtype)]
    model = onnx_one_node(helper.make_node(op, ["x", "axes"], ["y"], keepdims=0), [("x", onnx_type, [len(rows), 3])],
                          [("y", onnx_type, [len(rows)])], [helper.make_tensor("axes", TensorProto.INT64, [1], [1])])
    feeds = {"x": np.array(rows, dtype)}
    with np.errstate(all="raise"):
        got = runtime.run(model, feeds)["y"]
    np.testing.assert_allclose(got, onnxruntime_run(model, feeds)["y"], rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int32, np.int64,
                                   np.int8, np.uint8])
@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
def test_ir_reduction_over_an_empty_axis_gives_openvinos_finite_extremes(tmp_path, op, dtype):
    dtype = np.dtype(dtype)

    def build(b):
        x = b.parameter("x", NUMPY_TO_IR[dtype], (2, 0, 3))
        return b.add(op, "opset1", [x, b.const(np.array([1], np.int64))], {"keep_dims": False})[0]
    path = ir_file(tmp_path, build)
    feeds = {"x": np.zeros((2, 0, 3), dtype)}
    expected = openvino_run_xml(path, feeds)["y"]
    got = runtime.run(ir.read_model(path), feeds)["y"]
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


# -- HardSigmoid with a NaN or infinite alpha or beta: poolir's IR run gave NaN where OpenVINO gives 1 ----------
_HARD_SIGMOID_INPUT = np.array([-2, -0.5, 0, 0.5, 2, np.inf, -np.inf, np.nan], np.float32)
_NON_FINITE_ALPHA_BETA = [(np.nan, 0.5), (0.2, np.nan), (np.inf, 0.5), (-np.inf, 0.5), (0.2, np.inf),
                          (0.2, -np.inf), (np.inf, -np.inf)]


def _hard_sigmoid_ir(folder, alpha, beta):
    def build(b):
        x = b.parameter("x", "f32", _HARD_SIGMOID_INPUT.shape)
        coefficients = [b.const(np.array(v, np.float32)) for v in (alpha, beta)]
        return b.add("HardSigmoid", "opset1", [x, *coefficients], name="hs")[0]
    return ir_file(folder, build)


@pytest.mark.parametrize("alpha, beta", _NON_FINITE_ALPHA_BETA)
def test_ir_hard_sigmoid_with_non_finite_coefficients_follows_openvino(tmp_path, alpha, beta):
    path = _hard_sigmoid_ir(tmp_path, alpha, beta)
    feeds = {"x": _HARD_SIGMOID_INPUT}
    np.testing.assert_array_equal(runtime.run(ir.read_model(path), feeds)["y"], openvino_run_xml(path, feeds)["y"])
    one_line_error(invoke_cli("convert", ["convert", path, "-o", tmp_path / "hs.onnx"]), path, "'hs'", "no exact ONNX")


@pytest.mark.parametrize("alpha, beta", _NON_FINITE_ALPHA_BETA)
def test_onnx_hard_sigmoid_with_non_finite_coefficients_runs_like_onnxruntime_and_is_not_converted(tmp_path, alpha,
                                                                                                  beta):
    model = onnx_one_node(helper.make_node("HardSigmoid", ["x"], ["y"], alpha=alpha, beta=beta, name="hs"),
                          [("x", TensorProto.FLOAT, [8])], [("y", TensorProto.FLOAT, [8])])
    feeds = {"x": _HARD_SIGMOID_INPUT}
    np.testing.assert_array_equal(runtime.run(model, feeds)["y"], onnxruntime_run(model, feeds)["y"])
    path = tmp_path / "hs.onnx"
    onnx.save(model, path)
    one_line_error(invoke_cli("convert", ["convert", path, "-o", tmp_path / "hs.xml"]), path, "'hs'", "no exact IR")
    assert not (tmp_path / "hs.xml").exists()


# -- u1: OpenVINO writes its ports as precision "BIN", which poolir refused to read; a u1 Parameter or Convert
# -- ran as bool, where OpenVINO's CPU plugin refuses both -------------------------------------------------------
def _openvino_ir(path, build) -> str:
    import openvino as ov
    import openvino.opset13 as ops
    parameter, output = build(ov, ops)
    ov.save_model(ov.Model([ops.result(output)], [parameter]), str(path))
    return path


def test_a_packed_u1_const_written_by_openvino_reads_runs_and_round_trips(tmp_path):
    bits = np.array([1, 0, 1, 1, 0, 0, 1, 0, 1, 1], bool)

    def build(ov, ops):
        packed = ov.Tensor(ov.Type.u1, [bits.size])
        packed.data[:] = np.packbits(bits)
        x = ops.parameter([bits.size], ov.Type.f32, name="x")
        return x, ops.add(x, ops.convert(ops.constant(packed), "f32"))
    path = _openvino_ir(tmp_path / "u1.xml", build)
    assert b'precision="BIN"' in path.read_bytes()
    feeds = {"x": np.zeros(bits.size, np.float32)}
    (got,) = runtime.run(ir.read_model(path), feeds).values()
    np.testing.assert_array_equal(got, bits.astype(np.float32))
    ir.write_model(ir.read_model(path), tmp_path / "again.xml")
    assert (tmp_path / "again.xml").read_bytes() == path.read_bytes()
    assert (tmp_path / "again.bin").read_bytes() == path.with_suffix(".bin").read_bytes()


@pytest.mark.parametrize("where", ["Parameter", "Convert"])
def test_a_u1_parameter_or_convert_is_refused_as_openvinos_cpu_plugin_refuses_it(tmp_path, where):
    def build(ov, ops):
        if where == "Parameter":
            x = ops.parameter([2, 3], ov.Type.u1, name="x")
            return x, ops.convert(x, "f32")
        x = ops.parameter([2, 3], ov.Type.f32, name="x")
        return x, ops.convert(x, "u1")
    path = _openvino_ir(tmp_path / "u1.xml", build)
    for command in (["run", path], ["inspect", path], ["convert", path, "-o", tmp_path / "u1.onnx"]):
        one_line_error(invoke_cli(command[0], command), path, where, "u1 is not supported")


# -- LRN axes [1, 1] and [-3] ran as [1], where OpenVINO's CPU plugin refuses them ---------------------------------
@pytest.mark.parametrize("axes", [[1, 1], [-3], [2, -1], [-2, -1], [2, 2]])
def test_ir_lrn_axes_openvino_refuses_are_refused_by_run_and_convert(tmp_path, axes):
    def build(b):
        x = b.parameter("x", "f32", (1, 4, 3, 3))
        return b.add("LRN", "opset1", [x, b.const(np.array(axes, np.int64))],
                     {"alpha": 1e-4, "beta": 0.75, "bias": 1.0, "size": 3}, name="lrn")[0]
    path = ir_file(tmp_path, build)
    feeds = {"x": np.ones((1, 4, 3, 3), np.float32)}
    with pytest.raises(RuntimeError, match="Unsupported operation of type: LRN"):
        openvino_run_xml(path, feeds)
    for command in (["run", path], ["convert", path, "-o", tmp_path / "lrn.onnx"]):
        one_line_error(invoke_cli(command[0], command), path, "'lrn'", f"LRN axes {axes}")


# -- the builder skipped the schemas' value checks (the reader ran them): ShuffleChannels group 0 reached shape
# -- inference and raised ZeroDivisionError -------------------------------------------------------------------
@pytest.mark.parametrize("layer_type, version, attrs, problem", [
    ("ShuffleChannels", "opset1", {"axis": 1, "group": 0}, "'group' = 0"),
    ("ShuffleChannels", "opset1", {"axis": 1, "group": -2}, "'group' = -2"),
    ("Clamp", "opset1", {"min": 2.0, "max": 1.0}, "min"),
])
def test_the_builder_refuses_attribute_values_the_schema_refuses(layer_type, version, attrs, problem):
    b = ir.GraphBuilder("bad")
    x = b.parameter("x", "f32", (1, 4, 2, 2))
    with pytest.raises(ir.PoolirError, match=problem) as caught:
        b.add(layer_type, version, [x], attrs, name="bad")
    assert "'bad'" in str(caught.value)


# -- ONNX Pad-11+ without its required `pads` input: `run` and `verify` raised TypeError (exit 3) ------------------
@pytest.mark.parametrize("inputs", [["x"], ["x", ""]], ids=["absent", "empty-name"])
def test_onnx_pad_without_pads_is_refused_by_every_command(tmp_path, inputs):
    model = onnx_one_node(helper.make_node("Pad", inputs, ["y"], name="pad"), [("x", TensorProto.FLOAT, [2, 3])],
                          [("y", TensorProto.FLOAT, [2, 3])], opset=13)
    with pytest.raises(Exception, match="INVALID_GRAPH"):
        onnxruntime_run(model, {"x": np.zeros((2, 3), np.float32)})
    path = tmp_path / "pad.onnx"
    onnx.save(model, path)
    for command in (["run", path], ["verify", path], ["convert", path, "-o", tmp_path / "pad.xml"], ["inspect", path]):
        one_line_error(invoke_cli(command[0], command), path)
    assert "'pads' is missing" in invoke_cli("run", ["run", path]).stderr


# -- `poolir run` printed "min -inf  max inf  mean nan" with numpy's "invalid value encountered" warning on stderr,
# -- and nothing saying the output held infinities --------------------------------------------------------------
@pytest.mark.parametrize("values, held", [([0, 1, 2, np.inf], "holds 1 +inf, 1 -inf"),
                                          ([0, np.inf, -1, 2], "holds 1 NaN, 1 +inf, 1 -inf"),
                                          ([1, 2, 3, 4], None)])
@pytest.mark.parametrize("as_json", [False, True])
def test_run_warns_once_per_output_holding_nan_or_infinities(tmp_path, values, held, as_json):
    # Log: log(0) = -inf, log(inf) = inf, log(-1) = NaN (IEEE 754).
    path = tmp_path / "log.onnx"
    onnx.save(onnx_one_node(helper.make_node("Log", ["x"], ["y"]), [("x", TensorProto.FLOAT, [4])],
                            [("y", TensorProto.FLOAT, [4])], opset=13), path)
    np.save(tmp_path / "x.npy", np.array(values, np.float32))
    result = invoke_cli("run", ["run", path, "--input", f"x={tmp_path / 'x.npy'}", *(["--json"] if as_json else [])],
                        allowed=(0,))
    if held is None:
        assert result.stderr == ""
    else:
        assert result.stderr.splitlines() == [f"poolir: warning: {path}: output 'y' {held}"]


# -- IR -> ONNX of a MaxPool with its indices output, dynamic spatial dims and pads >= the kernel wrote ONNX pads
# -- onnxruntime refuses ("Pad should be smaller than kernel"), whose windows of padding alone mean another value --
@pytest.mark.parametrize("pad, kernel", [(2, 2), (3, 2), (3, 3), (5, 3)])
def test_ir_max_pool_with_indices_dynamic_dims_and_pads_not_below_the_kernel_is_refused(tmp_path, pad, kernel):
    def build(b):
        x = b.parameter("x", "f32", (1, 2, -1, -1))
        y, indices = b.add("MaxPool", "opset8", [x], {
            "strides": [1, 1], "dilations": [1, 1], "pads_begin": [pad, pad], "pads_end": [pad, pad],
            "kernel": [kernel, kernel], "rounding_type": "floor", "auto_pad": "explicit",
            "index_element_type": "i64", "axis": 0}, name="pool")
        b.result(indices, "i")
        return y
    path = ir_file(tmp_path, build)
    feeds = {"x": np.random.default_rng(0).normal(size=(1, 2, 5, 5)).astype(np.float32)}
    assert (openvino_run_xml(path, feeds)["y"] == np.finfo(np.float32).min).any()  # a window of padding alone
    one_line_error(invoke_cli("convert", ["convert", path, "-o", tmp_path / "pool.onnx"]), path, "'pool'",
                    "not smaller than the kernel")
    assert not (tmp_path / "pool.onnx").exists()


# -- an IR Transpose order with a negative axis (the whole-network fuzzer: 3 -> -1) ran, and IR -> ONNX wrote a perm
# -- onnx's checker refuses (exit 3); OpenVINO refuses the order ------------------------------------------------
@pytest.mark.parametrize("order", [[0, 2, -1, 1], [-4, 1, 2, 3]])
def test_ir_transpose_order_with_a_negative_axis_is_refused_as_openvino_refuses_it(tmp_path, order):
    def build(b):
        x = b.parameter("x", "f32", (1, 2, 3, 4))
        return b.add("Transpose", "opset1", [x, b.const(np.array([0, 1, 2, 3], np.int64))], name="transpose")[0]
    path = ir_file(tmp_path, build)
    model = ir.read_model(path)
    (order_const,) = [layer for layer in model.layers if layer.type == "Const"]
    order_const.data = np.array(order, np.int64)
    xml, weights = ir.serialize(model)
    path.write_bytes(xml)
    path.with_suffix(".bin").write_bytes(weights)
    with pytest.raises(RuntimeError, match="is_valid_axes_order"):
        openvino_run_xml(path, {"x": np.zeros((1, 2, 3, 4), np.float32)})
    for command in (["run", path], ["convert", path, "-o", tmp_path / "t.onnx"]):
        one_line_error(invoke_cli(command[0], command), path, "'transpose'", "not a permutation")


# -- ONNX Clip-11+ with an absent min or max: the spec's default is numeric_limits<T>::lowest()/max(), so +-inf is
# -- clipped to the largest finite value (onnxruntime agrees); poolir read "no bound" and kept the infinity ---------
@pytest.mark.parametrize("bound", ["min", "max", "neither"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_onnx_clip_without_a_bound_clips_to_the_types_limit_and_converts_so(tmp_path, dtype, bound):
    dtype = np.dtype(dtype)
    inputs = {"min": ["x", "b"], "max": ["x", "", "b"], "neither": ["x"]}[bound]
    initializers = [] if bound == "neither" else [helper.make_tensor("b", NUMPY_TO_ONNX[dtype], [], [0.5])]
    model = onnx_one_node(helper.make_node("Clip", inputs, ["y"], name="clip"), [("x", NUMPY_TO_ONNX[dtype], [5])],
                          [("y", NUMPY_TO_ONNX[dtype], [5])], initializers, opset=13)
    feeds = {"x": np.array([np.inf, -np.inf, 1, -1, 0.25], dtype)}
    expected = onnxruntime_run(model, feeds)["y"]
    np.testing.assert_array_equal(runtime.run(model, feeds)["y"], expected)
    path = tmp_path / "clip.onnx"
    onnx.save(model, path)
    invoke_cli("convert", ["convert", path, "-o", tmp_path / "clip.xml"], allowed=(0,))
    if dtype == np.float64:
        return  # OpenVINO's CPU plugin computes f64 in f32: 1.8e308 becomes 3.4e38 (test_onnx_to_ir_backend_cases)
    np.testing.assert_array_equal(openvino_run_xml(tmp_path / "clip.xml", feeds)["y"], expected)
