"""The non-pooling ONNX ops of the executor (the ones a converter emits), each vs onnxruntime.

Data inputs are fed; shape-like inputs (pads, axes, shape, split, starts...) are initializers, as
converters write them. Every op version row whose attributes differ is exercised.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from poolir import runtime
from poolir.ir.errors import PoolirError
from tests.peers import onnxruntime_run

R = np.random.default_rng(7)
F = R.uniform(-3, 3, (2, 3, 4)).astype(np.float32)
POS = R.uniform(0.5, 3, (2, 3, 4)).astype(np.float32)
I = R.integers(-9, 9, (2, 3, 4)).astype(np.int32)
NZ = np.where(I == 0, 3, I).astype(np.int32)
i64 = lambda *v: np.array(v, np.int64)  # noqa: E731


def case(op, opset, feeds, consts=None, outputs=1, **attrs):
    return pytest.param(op, opset, feeds, consts or {}, outputs, attrs,
                        id=f"{op}-{opset}-" + "-".join(f"{k}={v}" for k, v in attrs.items()))


CASES = [
    *[case(op, 13, {"x": F}) for op in ("Abs", "Neg", "Floor", "Ceil", "Relu", "Sign", "Exp")],
    *[case(op, 13, {"x": POS}) for op in ("Sqrt", "Log", "Reciprocal")],
    case("Sqrt", 13, {"x": POS.astype(np.float16)}),
    case("Abs", 13, {"x": I}),
    *[case(op, 14, {"a": F, "b": POS[:, :1]}) for op in ("Add", "Sub", "Mul", "Div", "Equal", "Less", "Greater")],
    case("Div", 14, {"a": I, "b": NZ}),
    case("Pow", 15, {"a": POS, "b": F}),
    case("Pow", 15, {"a": POS.astype(np.float16), "b": np.array(1.5, np.float32)}),
    case("Mod", 13, {"a": I, "b": NZ}),
    case("Mod", 13, {"a": F, "b": POS}, fmod=1),
    *[case(op, 13, {"a": F, "b": POS, "c": F[:1]}) for op in ("Max", "Min", "Sum", "Mean")],
    case("Where", 16, {"c": F > 0, "a": F, "b": POS}),
    case("Not", 1, {"x": F > 0}),
    case("And", 7, {"a": F > 0, "b": POS > 1}),
    case("Identity", 16, {"x": F}),
    case("Pad", 2, {"x": F}, pads=[0, 1, 2, 0, 2, 1], value=-1.5),
    case("Pad", 2, {"x": F}, pads=[0, 1, 1, 0, 1, 1], mode="reflect"),
    case("Pad", 11, {"x": F}, {"pads": i64(0, 0, 2, 0, 1, 3), "value": np.array(-np.inf, np.float32)}),
    case("Pad", 13, {"x": F}, {"pads": i64(0, 2, 1, 0, 1, 0)}, mode="edge"),
    case("Pad", 18, {"x": F}, {"pads": i64(1, 2, 3, 0), "value": np.array(0.5, np.float32), "axes": i64(-1, 1)}),
    case("Pad", 19, {"x": F}, {"pads": i64(0, 1, 2, 0, 1, 1)}, mode="wrap"),
    case("Transpose", 13, {"x": F}, perm=[2, 0, 1]),
    case("Transpose", 13, {"x": F}),
    case("Reshape", 13, {"x": F}, {"shape": i64(0, -1)}),
    case("Reshape", 14, {"x": F}, {"shape": i64(4, 0, -1)}),
    case("Reshape", 14, {"x": F}, {"shape": i64(6, 4)}, allowzero=1),
    case("Concat", 13, {"a": F, "b": POS}, axis=-1),
    case("Split", 11, {"x": F}, outputs=2, axis=2, split=[1, 3]),
    case("Split", 13, {"x": F}, {"split": i64(2, 1)}, outputs=2, axis=1),
    case("Split", 13, {"x": F}, outputs=2, axis=2),
    case("Split", 18, {"x": R.uniform(size=(7, 2)).astype(np.float32)}, outputs=3, num_outputs=3),
    case("Slice", 1, {"x": F}, starts=[1, -3], ends=[3, 100], axes=[1, 2]),
    case("Slice", 13, {"x": F}, {"starts": i64(-1, 0), "ends": i64(-100, 4), "axes": i64(2, 1), "steps": i64(-2, 3)}),
    case("Squeeze", 11, {"x": F[:, :1]}, axes=[1]),
    case("Squeeze", 13, {"x": F[:1, :, :1]}, {"axes": i64(-1, 0)}),
    case("Unsqueeze", 11, {"x": F}, axes=[0, -1]),
    case("Unsqueeze", 13, {"x": F}, {"axes": i64(1, 4)}),
    case("Gather", 13, {"x": F, "i": i64(-1, 0, 2)}, axis=1),
    case("Shape", 15, {"x": F}, start=1, end=-1),
    case("Shape", 13, {"x": F}),
    case("Cast", 13, {"x": F}, to=onnx.TensorProto.FLOAT16),
    case("Cast", 13, {"x": F}, to=onnx.TensorProto.INT32),
    case("Cast", 19, {"x": I}, to=onnx.TensorProto.DOUBLE),
    case("CastLike", 15, {"x": F, "like": I}),
    case("Clip", 6, {"x": F}, min=-1.0, max=0.5),
    case("Clip", 13, {"x": F}, {"lo": np.array(-0.5, np.float32)}),
    case("Expand", 13, {"x": F[:, :1]}, {"shape": i64(2, 3, 1)}),
    case("ConstantOfShape", 20, {}, {"shape": i64(2, 3)}, value=numpy_helper.from_array(np.array([1.5], np.float32))),
    case("ReduceSum", 11, {"x": F}, axes=[1], keepdims=0),
    case("ReduceSum", 13, {"x": F}, {"axes": i64(-1)}),
    case("ReduceSum", 13, {"x": F}, noop_with_empty_axes=1),
    case("ReduceMean", 13, {"x": F}, axes=[1, 2]),
    case("ReduceMean", 18, {"x": F}, {"axes": i64(0, 2)}, keepdims=0),
    case("ReduceMean", 18, {"x": F.astype(np.float16)}),
    *[case(op, 18, {"x": POS}, {"axes": i64(1)}) for op in
      ("ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum",
       "ReduceLogSumExp")],
    case("ReduceMax", 13, {"x": I}, axes=[0, 2]),
]

# Input names a case gives as initializers, in the op's input order (optional inputs by position).
INPUT_ORDER = {"Pad": ["x", "pads", "value", "axes"], "Clip": ["x", "lo", "hi"],
               "Slice": ["x", "starts", "ends", "axes", "steps"]}


def build(op, opset, feeds, consts, outputs, attrs):
    names = INPUT_ORDER.get(op, [*feeds, *consts])
    used = [n for n in names if n in feeds or n in consts]
    last = max(names.index(n) for n in used) if used else -1
    inputs = [n if (n in feeds or n in consts) else "" for n in names[:last + 1]]
    out_names = [f"y{k}" for k in range(outputs)]
    node = helper.make_node(op, inputs, out_names, **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a in feeds.items()],
        [helper.make_tensor_value_info(n, onnx.TensorProto.UNDEFINED, None) for n in out_names],
        initializer=[numpy_helper.from_array(a, n) for n, a in consts.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    # onnxruntime needs typed graph outputs: take them from onnx's shape inference.
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    for output, typed in zip(model.graph.output, inferred.graph.output):
        output.type.CopyFrom(typed.type)
    return model


@pytest.mark.parametrize("op, opset, feeds, consts, outputs, attrs", CASES)
def test_op_matches_onnxruntime(op, opset, feeds, consts, outputs, attrs):
    model = build(op, opset, feeds, consts, outputs, attrs)
    ours = runtime.run(model, feeds)
    theirs = onnxruntime_run(model, feeds)
    assert list(ours) == list(theirs)
    for name in ours:
        got, want = np.asarray(ours[name]), theirs[name]
        assert got.dtype == want.dtype and got.shape == want.shape, name
        if got.dtype.kind == "f":
            tolerance = 1e-3 if got.dtype == np.float16 else 1e-6
            np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)
        else:
            np.testing.assert_array_equal(got, want)


def test_constant_nodes_and_a_converter_style_lp_decomposition():
    """LpPool p=3 written the way OpenVINO's frontend lowers it (Abs, Pow, AveragePool include-pad,
    Mul by the kernel volume, Pow 1/p) with Constant nodes, vs onnxruntime on the same graph."""
    c = lambda name, value: helper.make_node("Constant", [], [name], value=numpy_helper.from_array(  # noqa: E731
        np.array(value, np.float32)))
    nodes = [c("p", 3.0), c("volume", 4.0), c("inverse_p", 1 / 3),
             helper.make_node("Abs", ["x"], ["a"]), helper.make_node("Pow", ["a", "p"], ["b"]),
             helper.make_node("AveragePool", ["b"], ["m"], kernel_shape=[2, 2], pads=[1, 0, 0, 1],
                              count_include_pad=1),
             helper.make_node("Mul", ["m", "volume"], ["s"]), helper.make_node("Pow", ["s", "inverse_p"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 2, 5, 4])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)], ir_version=10)
    x = R.uniform(-2, 2, (1, 2, 5, 4)).astype(np.float32)
    np.testing.assert_allclose(runtime.run(model, {"x": x})["y"], onnxruntime_run(model, {"x": x})["y"], rtol=1e-5)


@pytest.mark.parametrize("op, opset, dtype, runs", [
    ("Max", 11, np.int64, False), ("Min", 8, np.int32, False), ("Max", 12, np.int64, True), ("Min", 13, np.uint8, True),
    ("Sum", 13, np.int64, False), ("Mean", 22, np.int32, False), ("Sum", 8, np.float32, True)])
def test_variadic_ops_take_the_types_of_their_version(op, opset, dtype, runs):
    """Max and Min take integers from version 12; Sum and Mean never do (onnxruntime refuses the graph as invalid;
    poolir refuses it naming the node)."""
    x = np.arange(-3, 3).astype(dtype).reshape(2, 3) if np.dtype(dtype).kind != "u" else np.arange(6, dtype=dtype)
    node = helper.make_node(op, ["a", "b"], ["y"])
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, elem, x.shape) for n in "ab"],
                              [helper.make_tensor_value_info("y", elem, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    feeds = {"a": x, "b": x[::-1].copy()}
    if runs:
        np.testing.assert_array_equal(runtime.run(model, feeds)["y"], onnxruntime_run(model, feeds)["y"])
        return
    with pytest.raises(PoolirError, match=f"{op}"):
        runtime.run(model, feeds)
    with pytest.raises(Exception):
        onnxruntime_run(model, feeds)
