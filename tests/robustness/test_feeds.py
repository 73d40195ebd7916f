"""Feeds: wrong name, rank, dim or dtype are refused with a FeedError naming the input and the file; NaN and
Inf give the results written here, worked by hand and, where a peer agrees, checked against it.

NaN and Inf rules (README material):
- ONNX AveragePool / LpPool: IEEE arithmetic over the window; a NaN in the window gives NaN, +inf gives
  +inf, +inf and -inf together give NaN.
- ONNX MaxPool (poolir): NaN propagates (a window holding a NaN gives NaN, its index is the first NaN's);
  -inf is an ordinary value. onnxruntime and OpenVINO instead ignore NaN; poolir follows numpy's and
  onnx.reference's maximum. This is a documented difference, pinned below.
- IR MaxPool (OpenVINO's semantics, pinned against OpenVINO): NaN never wins, -inf never wins; a window
  with nothing else gives float32's lowest value (-3.4028235e38) with index 0.
- IR AvgPool: IEEE arithmetic like ONNX AveragePool.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, strategies as st
from onnx import TensorProto, helper

from poolir import runtime
from poolir.converter.onnx_to_ir import onnx_to_ir
from poolir.ir.builder import GraphBuilder
from poolir.ir.errors import FeedError, PoolirError
from tests.robustness.harness import fuzz, survive

NAN, INF = np.nan, np.inf
LOWEST = np.finfo(np.float32).min


def _onnx(op: str, dtype=TensorProto.FLOAT, shape=(1, 1, 5), outputs=("y",), **attrs):
    node = helper.make_node(op, ["x"], list(outputs), name="pool", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", dtype, list(shape))],
                              [helper.make_tensor_value_info(name, TensorProto.UNDEFINED, None) for name in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=10)


def _ir_max_pool(length: int):
    b = GraphBuilder("m")
    x = b.parameter("x", "f32", (1, 1, length))
    values, indices = b.add("MaxPool", "opset8", [x], {"kernel": (2,), "strides": (1,), "pads_begin": (0,),
                                                       "pads_end": (0,)}, name="pool")
    b.result(values, "y")
    b.result(indices, "i")
    return b.build()


def _ir_avg_pool(length: int):
    b = GraphBuilder("a")
    x = b.parameter("x", "f32", (1, 1, length))
    (y,) = b.add("AvgPool", "opset1", [x], {"kernel": (2,), "strides": (1,), "pads_begin": (0,), "pads_end": (0,),
                                            "exclude-pad": True}, name="pool")
    b.result(y, "y")
    return b.build()


def row(*values):
    return np.array([[values]], np.float32)


# -- NaN and Inf: hand-worked ------------------------------------------------------------------------------

def test_onnx_average_pool_nan_and_inf():
    x = row(NAN, 1, 2, INF, -INF)
    (y,) = runtime.run(_onnx("AveragePool", kernel_shape=[2]), {"x": x}).values()
    np.testing.assert_array_equal(y, row(NAN, 1.5, INF, NAN))


def test_onnx_lp_pool_inf():
    x = row(INF, 1, 3, -INF, 4)
    (y,) = runtime.run(_onnx("LpPool", kernel_shape=[2], p=2), {"x": x}).values()
    np.testing.assert_allclose(y, row(INF, np.sqrt(10), INF, INF))


def test_onnx_max_pool_propagates_nan_and_keeps_minus_inf():
    x = row(NAN, 1, -INF, -INF, 2)
    outs = runtime.run(_onnx("MaxPool", kernel_shape=[2], outputs=("y", "i")), {"x": x})
    np.testing.assert_array_equal(outs["y"], row(NAN, 1, -INF, 2))
    np.testing.assert_array_equal(outs["i"], [[[0, 1, 2, 4]]])


def test_ir_max_pool_ignores_nan_and_minus_inf_like_openvino(tmp_path):
    from tests.peers import openvino_run_xml
    from poolir import ir
    x = row(NAN, 1, NAN, NAN, 2, -INF, -INF)
    model = _ir_max_pool(7)
    outs = runtime.run(model, {"x": x})
    expected_values = row(1, 1, LOWEST, 2, 2, LOWEST)
    np.testing.assert_array_equal(outs["y"], expected_values)
    np.testing.assert_array_equal(outs["i"], [[[1, 1, 0, 4, 4, 0]]])
    ir.write_model(model, tmp_path / "m.xml")
    engine = openvino_run_xml(tmp_path / "m.xml", {"x": x})
    np.testing.assert_array_equal(engine["y"], expected_values)


def test_ir_avg_pool_nan_and_inf():
    (y,) = runtime.run(_ir_avg_pool(5), {"x": row(NAN, 1, 2, INF, -INF)}).values()
    np.testing.assert_array_equal(y, row(NAN, 1.5, INF, NAN))


def test_max_pool_nan_and_minus_inf_are_the_documented_difference(tmp_path):
    """ONNX MaxPool is silent on NaN. poolir reads it as IEEE 754 `maximum` (NaN propagates, as numpy and
    PyTorch do) and a window of -inf as -inf, its mathematical max. onnxruntime and OpenVINO both ignore NaN
    and give float32's lowest value for a window of -inf (their running max starts there), and onnx.reference
    depends on where the NaN stands. No IR pooling layer can express poolir's reading and the converter cannot
    see the data, so a converted MaxPool differs exactly there: the README's documented limit. If an engine
    changes, this test says so."""
    from poolir.ir import write_model
    from tests.peers import onnxruntime_run, openvino_run_xml

    lowest = np.finfo(np.float32).min
    model = _onnx("MaxPool", shape=(1, 1, 8), kernel_shape=[2], strides=[2])
    model.graph.output[0].type.tensor_type.elem_type = TensorProto.FLOAT  # onnxruntime needs the output type
    x = row(NAN, 1, 1, NAN, -INF, -INF, NAN, NAN)  # windows [nan, 1] [1, nan] [-inf, -inf] [nan, nan]
    np.testing.assert_array_equal(runtime.run(model, {"x": x})["y"], row(NAN, NAN, -INF, NAN))
    np.testing.assert_array_equal(onnxruntime_run(model, {"x": x})["y"], row(1, 1, lowest, lowest))
    write_model(onnx_to_ir(model), tmp_path / "m.xml")
    np.testing.assert_array_equal(openvino_run_xml(tmp_path / "m.xml", {"x": x})["y"], row(1, 1, lowest, lowest))
    np.testing.assert_array_equal(runtime.run(onnx_to_ir(model), {"x": x})["y"], row(1, 1, lowest, lowest))


def test_converted_average_pool_keeps_nan_and_inf():
    model = _onnx("AveragePool", kernel_shape=[2])
    x = row(NAN, 1, 2, INF, -INF)
    np.testing.assert_array_equal(runtime.run(onnx_to_ir(model), {"x": x})["y"], row(NAN, 1.5, INF, NAN))


# -- wrong feeds ----------------------------------------------------------------------------------------------

MODELS = {"onnx": _onnx("MaxPool", kernel_shape=[2]), "ir": _ir_avg_pool(5)}
GOOD = np.zeros((1, 1, 5), np.float32)


@st.composite
def wrong_feeds(draw):
    kind = draw(st.sampled_from(("name", "extra", "missing", "rank", "dim", "dtype", "not array", "scalar")))
    if kind == "name":
        return kind, {draw(st.sampled_from(("X", "y", "", "x ", "pool", "\u00e9"))): GOOD}
    if kind == "extra":
        return kind, {"x": GOOD, draw(st.sampled_from(("z", "y", "i"))): GOOD}
    if kind == "missing":
        return kind, {}
    if kind == "rank":
        shape = draw(st.sampled_from(((1, 5), (5,), (1, 1, 1, 5), (1, 1, 5, 1, 1))))
        return kind, {"x": np.zeros(shape, np.float32)}
    if kind == "dim":
        shape = draw(st.sampled_from(((2, 1, 5), (1, 2, 5), (1, 1, 4), (1, 1, 0), (1, 1, 6))))
        return kind, {"x": np.zeros(shape, np.float32)}
    if kind == "dtype":
        dtype = draw(st.sampled_from((np.float64, np.float16, np.int32, np.int8, np.uint8, np.bool_, np.complex64,
                                      np.int64, np.str_, np.object_)))
        return kind, {"x": np.zeros((1, 1, 5), dtype)}
    if kind == "not array":
        return kind, {"x": draw(st.sampled_from(([[[0.0] * 5]], 0.0, None, "x", b"\x00" * 20)))}
    return kind, {"x": np.float32(0)}


@fuzz(480)
@given(st.sampled_from(sorted(MODELS)), wrong_feeds())
def test_wrong_feeds_are_refused_naming_the_input(which, case):
    kind, feeds = case
    session = runtime.Session(MODELS[which])
    error = survive(f"feeds.{kind}", lambda: session.run(feeds))
    assert isinstance(error, FeedError), f"{kind}: {feeds!r} gave {error!r}"
    if kind in ("rank", "dim", "dtype", "not array", "scalar"):
        assert "input 'x'" in str(error)


def test_non_mapping_feeds_are_refused():
    session = runtime.Session(MODELS["onnx"])
    for feeds in ([GOOD], GOOD, None, "x"):
        error = survive("feeds.container", lambda: session.run(feeds))
        assert isinstance(error, PoolirError), f"{feeds!r} gave {error!r}"
