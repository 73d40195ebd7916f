"""Valid single-op models that a differential fuzzer over the non-pooling operators found poolir wrong on
(the fuzzer draws random valid models of every opset version and compares poolir's ONNX runtime with
onnxruntime, and poolir's IR of it under poolir and OpenVINO; `test_valid_op_fuzz.py` runs it with a fixed
seed). Each case is checked against the engines, never against poolir: the ONNX model under onnxruntime (or
the spec's numbers, where onnxruntime is wrong, saying why) and poolir's IR of it under OpenVINO.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from poolir import ir, runtime
from poolir.converter.onnx_to_ir import onnx_to_ir
from poolir.ir.errors import ConversionError, PoolirError
from tests.peers import onnxruntime_run, openvino_run_onnx, openvino_run_xml

INT64_MAX, INT64_MIN = 2**63 - 1, -2**63


def node_model(op: str, opset: int, feeds: dict, constants: dict = {}, inputs=None, outputs=1, **attrs):
    """One `op` node over graph inputs (`feeds`, by name) and initializers (`constants`); `inputs` orders them
    ("" leaves an optional input out), by default feeds then constants."""
    names = list(inputs) if inputs is not None else [*feeds, *constants]
    node = helper.make_node(op, names, [f"y{i}" for i in range(outputs)], name="node", **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in feeds.items()],
        [onnx.ValueInfoProto(name=f"y{i}") for i in range(outputs)],  # types left to inference
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in constants.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def in_both_worlds(model, feeds, tmp_path, expected=None):
    """poolir's ONNX runtime == `expected` (default: onnxruntime's outputs), and poolir's IR of the model gives
    the same bits under OpenVINO and under poolir's IR runtime."""
    expected = expected if expected is not None else onnxruntime_run(model, feeds)
    _equal(runtime.run(model, feeds), expected, "poolir (ONNX)")
    xml = tmp_path / "m.xml"
    ir.write_model(onnx_to_ir(model), xml)
    _equal(openvino_run_xml(xml, feeds, list(expected)), expected, "OpenVINO on poolir's IR")
    _equal(runtime.run(ir.read_model(xml), feeds), expected, "poolir (IR)")


def _equal(got: dict, expected: dict, what: str) -> None:
    for name, value in expected.items():
        value = np.asarray(value)
        assert got[name].shape == value.shape, f"{what} {name}: shape {got[name].shape} != {value.shape}"
        assert got[name].dtype == value.dtype, f"{what} {name}: {got[name].dtype} != {value.dtype}"
        np.testing.assert_array_equal(got[name], value, err_msg=f"{what} {name}")


# -- HardSigmoid / HardSwish of a 0-d tensor: TypeError "return arrays must be of ArrayType" (a ufunc on a 0-d
# array returns a numpy scalar, which the kernel then used as `out=`).

@pytest.mark.parametrize("op,opset", [("HardSigmoid", 6), ("HardSwish", 14)])
def test_hard_sigmoid_swish_of_a_scalar(op, opset, tmp_path):
    feeds = {"x": np.array(-1.25, np.float32)}
    in_both_worlds(node_model(op, opset, feeds), feeds, tmp_path)


# -- Slice with a negative step and a start before the axis. Slice-13: "for negative stepping starts[axes[i]]
# is clamped to [0, dims[axes[i]]-1]", so the slice starts at index 0; Python's slicing (which poolir used, in
# both worlds and in IR shape inference) selects nothing. onnxruntime and OpenVINO's Slice-8 start at 0.

@pytest.mark.parametrize("start,end,step", [(-5, -9, -1), (INT64_MIN, INT64_MIN, -1), (-2**31, -7, -2),
                                            (-9, 0, -1)])
def test_slice_negative_step_from_before_the_axis(start, end, step, tmp_path):
    feeds = {"x": np.arange(8, dtype=np.float32).reshape(2, 4)}
    constants = {"starts": np.array([start]), "ends": np.array([end]), "axes": np.array([1]),
                 "steps": np.array([step])}
    in_both_worlds(node_model("Slice", 13, feeds, constants), feeds, tmp_path)


def test_slice_negative_step_to_int_max(tmp_path):
    """The other side, where onnxruntime is wrong: an end of INT64_MAX with a negative step is clamped to
    dims - 1 ("end is clamped to [-1, dims[axes[i]]-1] for negative stepping"), so [0 : INT64_MAX : -1] is
    empty. onnxruntime 1.31 reads INT_MAX as "to the end in the direction of the step" and returns [x[0]];
    OpenVINO's Slice-8 and onnx.reference return nothing. The expected values are the spec's."""
    feeds = {"x": np.arange(4, dtype=np.float32)}
    constants = {"starts": np.array([0]), "ends": np.array([INT64_MAX]), "steps": np.array([-1])}
    model = node_model("Slice", 13, feeds, constants, inputs=["x", "starts", "ends", "", "steps"])
    assert onnxruntime_run(model, feeds)["y0"].tolist() == [0.0]  # onnxruntime's reading, pinned
    in_both_worlds(model, feeds, tmp_path, expected={"y0": np.zeros(0, np.float32)})


# -- HardSwish in float64: its alpha is the f32 attribute of its function body, HardSigmoid<alpha =
# 0.16666667163372>; poolir used 1/6 in f64 (HardSwish(1.0) = 0.6666666666666666, onnxruntime 0.6666666716337204).

def test_hard_swish_float64_alpha_is_f32():
    feeds = {"x": np.array([1.0, -2.5, 2.0, 0.1], np.float64)}
    model = node_model("HardSwish", 18, feeds)  # onnxruntime has no f64 HardSigmoid-22 to expand HardSwish-22 into
    expected = onnxruntime_run(model, feeds)["y0"]
    assert expected[0] == 0.6666666716337204
    np.testing.assert_array_equal(runtime.run(model, feeds)["y0"], expected)


# -- Integer arithmetic at the edges of i8/u8. ONNX wraps (onnxruntime: i8 100 * 3 = 44); OpenVINO's CPU plugin
# saturates i8/u8 Add/Subtract/Multiply/Divide (127), so poolir's IR used to give 127 where ONNX gives 44: the
# converter now computes in i32 and Converts back (a wrap). And poolir's own ONNX Div took |a| // |b|, which
# overflows at the type's minimum (i8 -128 / 127 gave 2, not -1).

@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_small_integer_arithmetic_wraps(op, dtype, tmp_path):
    info = np.iinfo(dtype)
    feeds = {"a": np.array([info.max, info.min, info.max, 100, 7, info.min, 12], dtype),
             "b": np.array([1, 1, info.max, 3, 100, info.max, 5], dtype)}
    in_both_worlds(node_model(op, 14, feeds), feeds, tmp_path)


def test_int8_abs_wraps(tmp_path):
    feeds = {"x": np.array([-128, -127, 0, 5, 127], np.int8)}
    in_both_worlds(node_model("Abs", 13, feeds), feeds, tmp_path)


def test_int32_division_at_the_minimum():
    feeds = {"a": np.array([-2**31, -2**31, -7, 7, 2**31 - 1], np.int32),
             "b": np.array([2**31 - 1, 2, 2, -2, -2**31], np.int32)}
    model = node_model("Div", 14, feeds)
    np.testing.assert_array_equal(runtime.run(model, feeds)["y0"], onnxruntime_run(model, feeds)["y0"])


# -- ReduceMax / ReduceMin of bool (opset 20): OpenVINO's Reduce* refuse boolean data, so poolir's IR of them did
# not load; they are reduced as u8 now.

@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_max_min_of_bool(op, keepdims, tmp_path):
    feeds = {"x": np.array([[True, False, False], [False, False, False]])}
    model = node_model(op, 20, feeds, {"axes": np.array([-1])}, keepdims=keepdims)
    in_both_worlds(model, feeds, tmp_path)


# -- Integer MatMul (MatMul-9 adds int32, int64, uint32, uint64): poolir refused it ("input type int32 is not
# allowed for MatMul-9"). It runs now, wrapping on overflow as onnxruntime does. ONNX -> IR refuses it, naming
# the node: OpenVINO's CPU plugin multiplies integers in float32 (pinned here).

@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("opset", [9, 13])
def test_integer_matmul(dtype, opset):
    feeds = {"a": np.array([[[16777217, 1], [2**20, -3]]], dtype), "b": np.array([[1, 0], [4096, 2**31 - 1]], dtype)}
    model = node_model("MatMul", opset, feeds)
    _equal(runtime.run(model, feeds), onnxruntime_run(model, feeds), "poolir (ONNX)")
    with pytest.raises(ConversionError, match=r"node 'node' \(MatMul\): integer MatMul"):
        onnx_to_ir(model)
    assert openvino_run_onnx(model, feeds)["y0"][0, 0, 0] == 16781312  # OpenVINO's own frontend: float32


# -- Slice with axes fed at run time: OpenVINO 2026.4 crashed (SIGSEGV) on poolir's IR, a Slice-8 with a computed
# axes input (OpenVINO's own frontend writes the same layer and crashes too). poolir names every axis instead,
# moving the bounds without arithmetic (the plugin's integer ReduceSum runs in float32: INT32_MAX -> INT32_MIN).

@pytest.mark.parametrize("axes,starts,ends,steps", [([0], [1], [3], [1]), ([-1], [1], [3], [1]),
                                                    ([1, 0], [1, -9], [3, 9], [1, -1]),
                                                    ([-1, 0], [-1, 0], [-9, 9], [-2, 1]),
                                                    ([2, 0, 1], [1 - 2**31, 2**31 - 2, 0],
                                                     [2**31 - 2, -2**31, 2**31 - 2], [1, -1, 1])])
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_slice_with_computed_axes(axes, starts, ends, steps, dtype, tmp_path):
    feeds = {"x": np.arange(24, dtype=np.float32).reshape(2, 3, 4), "axes": np.array(axes, dtype)}
    constants = {"starts": np.array(starts, dtype), "ends": np.array(ends, dtype), "steps": np.array(steps, dtype)}
    model = node_model("Slice", 13, feeds, constants, inputs=["x", "starts", "ends", "axes", "steps"])
    in_both_worlds(model, feeds, tmp_path)


# -- Pad with negative pads (cropping), which ONNX allows: ONNX -> IR refused them ("negative pads ... are not
# converted") though a Slice-8 then a Pad is exact (the crop comes first, as onnxruntime computes it).

@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
@pytest.mark.parametrize("pads", [[0, -1, 1, 0, 2, -2], [-1, 0, 0, 0, -1, -1], [1, -2, 2, -1, 1, 1]])
def test_pad_with_negative_pads(mode, pads, tmp_path):
    feeds = {"x": np.arange(60, dtype=np.float32).reshape(3, 4, 5)}
    model = node_model("Pad", 13, feeds, {"pads": np.array(pads), "value": np.array(2.5, np.float32)},
                       mode=mode, inputs=["x", "pads"] + (["value"] if mode == "constant" else []))
    in_both_worlds(model, feeds, tmp_path)


def test_slice_with_computed_axes_rank_1(tmp_path):
    feeds = {"x": np.array([10, -9, -9, -12, 2], np.int32), "axes": np.array([0])}
    constants = {"starts": np.array([-7]), "ends": np.array([-6]), "steps": np.array([3])}
    in_both_worlds(node_model("Slice", 21, feeds, constants, inputs=["x", "starts", "ends", "axes", "steps"]),
                   feeds, tmp_path)


# -- Squeeze/Unsqueeze with axes computed at run time are refused by ONNX -> IR; the refusal named the IR layer
# ("layer 'node' (id 2, Unsqueeze)") instead of the ONNX node.

@pytest.mark.parametrize("op,shape", [("Squeeze", (2, 1, 3)), ("Unsqueeze", (2, 3))])
def test_computed_squeeze_axes_refused_naming_the_node(op, shape):
    feeds = {"x": np.ones(shape, np.float32), "axes": np.array([1])}
    with pytest.raises(ConversionError, match=rf"^node 'node' \({op}\): the axes input must be constant"):
        onnx_to_ir(node_model(op, 13, feeds))


# -- Integer ReduceMean at the ends of the type: poolir summed in the integer type, which wraps (i32 [MAX, MAX]
# gave -1); onnxruntime's mean is computed in double, truncated and saturated (MAX).

@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_reduce_mean_does_not_wrap(dtype):
    info = np.iinfo(dtype)
    feeds = {"x": np.array([[1, 2], [-1, -2], [info.max, info.max], [info.min, info.min], [info.max, 1], [-7, 0]],
                           dtype)}
    for opset, extra in ((13, {"axes": [1]}), (18, {"noop_with_empty_axes": 1})):
        model = node_model("ReduceMean", opset, feeds, keepdims=0, **extra)
        _equal(runtime.run(model, feeds), onnxruntime_run(model, feeds), f"ReduceMean-{opset}")


# -- Integer Relu (opset 14): OpenVINO's CPU ReLU computes integers in float32 (i32 16777217 -> 16777216,
# INT32_MAX -> INT32_MIN), so ONNX -> IR writes Maximum(x, 0), which it computes exactly.

@pytest.mark.parametrize("dtype", [np.int32, np.int8])  # onnxruntime has no int64 Relu
def test_integer_relu(dtype, tmp_path):
    info = np.iinfo(dtype)
    big = [2**31 - 1, 16777217, 33554433] if dtype != np.int8 else [127, 100, 3]
    feeds = {"x": np.array(big + [-5, 0, info.min], dtype)}
    in_both_worlds(node_model("Relu", 14, feeds), feeds, tmp_path)


# -- Integer Clip with constant bounds became a Clamp, whose bounds OpenVINO's CPU plugin rounds to float32 (max
# 33554433 clamps to 33554432); it fuses Maximum + Minimum with constant bounds into a Clamp too. Such bounds are
# refused now; bounds float32 holds, or the type's own limits, still convert.

@pytest.mark.parametrize("low,high", [(-2**31, 2**31 - 1), (-100, 100), (-16777216, 2**31 - 1)])
def test_integer_clip_bounds_in_float32(low, high, tmp_path):
    feeds = {"x": np.array([2**31 - 1, 16777217, -5, 0, -2**31, 33554435, -16777219], np.int32)}
    constants = {"min": np.array(low, np.int32), "max": np.array(high, np.int32)}
    in_both_worlds(node_model("Clip", 13, feeds, constants), feeds, tmp_path)


@pytest.mark.parametrize("low,high", [(0, 33554433), (-16777217, 5)])
def test_integer_clip_bounds_beyond_float32_refused(low, high):
    feeds = {"x": np.array([33554435, -16777219], np.int32)}
    model = node_model("Clip", 13, feeds, {"min": np.array(low, np.int32), "max": np.array(high, np.int32)})
    with pytest.raises(ConversionError, match=r"^node 'node' \(Clip\): integer Clip bounds"):
        onnx_to_ir(model)


# -- Pad with pads computed at run time: ONNX -> IR refused it ("the pads input must be constant") though OpenVINO's
# Pad takes run-time pads: a Pad-12 by min(pads, 0) crops, then a Pad by max(pads, 0) in the node's mode.

@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
@pytest.mark.parametrize("pads", [[0, -1, 1, 0, 2, -2], [1, -2, 2, -1, 1, 1], [2, 3, 4, 1, 0, 3]])
def test_pad_with_computed_pads(mode, pads, tmp_path):
    feeds = {"x": np.arange(60, dtype=np.float32).reshape(3, 4, 5), "pads": np.array(pads)}
    if mode == "reflect":
        feeds["pads"] = np.minimum(feeds["pads"], 1)
    if mode == "constant":
        feeds["value"] = np.array(2.5, np.float32)
    in_both_worlds(node_model("Pad", 18, feeds, mode=mode), feeds, tmp_path)


# -- Reduce* (opset 18) with axes computed at run time: ONNX -> IR refused them, though IR Reduce* take run-time
# axes. Converted now when their length is known and not zero (an empty axes input means "every axis" or "none"
# by noop_with_empty_axes, which no layer decides at run time), and with keepdims=0 when they are one axis (more
# would give the output a dynamic rank, which OpenVINO's CPU plugin refuses).

@pytest.mark.parametrize("op", ["ReduceMean", "ReduceMax", "ReduceSum", "ReduceLogSumExp", "ReduceL2"])
@pytest.mark.parametrize("axes,keepdims", [([-1], 0), ([0, 2], 1), ([2, -2], 1), ([1], 1)])
def test_reduce_with_computed_axes(op, axes, keepdims, tmp_path):
    feeds = {"x": (np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 11) / 4, "axes": np.array(axes)}
    model = node_model(op, 18, feeds, keepdims=keepdims)
    expected = onnxruntime_run(model, feeds)
    xml = tmp_path / "m.xml"
    ir.write_model(onnx_to_ir(model), xml)
    for what, got in (("poolir (ONNX)", runtime.run(model, feeds)), ("OpenVINO", openvino_run_xml(xml, feeds)),
                      ("poolir (IR)", runtime.run(ir.read_model(xml), feeds))):
        np.testing.assert_allclose(got["y0"], expected["y0"], rtol=1e-6, atol=1e-6, err_msg=what)


# -- Pad reflect with a pad not below the axis length (after cropping): poolir reflected again past the far edge
# (numpy's reading), onnxruntime and OpenVINO refuse it ("Pad reflect: pre-pad (3) exceeds maximum allowed (2)").
# poolir's IR of such a Pad with run-time pads made OpenVINO return garbage and later crash.

@pytest.mark.parametrize("length,pads", [(3, [3, 0]), (1, [1, 0]), (4, [-2, 2])])
def test_pad_reflect_past_the_edge_is_refused(length, pads):
    feeds = {"x": np.arange(length, dtype=np.float32)}
    model = node_model("Pad", 13, feeds, {"pads": np.array(pads)}, mode="reflect")
    with pytest.raises(Exception):
        onnxruntime_run(model, feeds)
    with pytest.raises(PoolirError, match=r"node 'node' \(Pad\): reflect pads"):
        runtime.run(model, feeds)


def test_pad_reflect_up_to_the_edge(tmp_path):
    feeds = {"x": np.arange(12, dtype=np.float32).reshape(3, 4)}
    in_both_worlds(node_model("Pad", 13, feeds, {"pads": np.array([2, -1, 0, 2])}, mode="reflect"), feeds, tmp_path)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, "bfloat16"])
def test_reduce_with_computed_axes_refused_where_openvino_has_no_kernel(dtype):
    import ml_dtypes
    dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
    feeds = {"x": np.arange(24).reshape(2, 3, 4).astype(dtype), "axes": np.array([0])}
    with pytest.raises(ConversionError, match=r"^node 'node' \(ReduceMean\): the axes input must be constant"):
        onnx_to_ir(node_model("ReduceMean", 20, feeds, keepdims=0))
