"""Fuzz the ONNX side: the ONNX executor (planning and running) and ONNX -> IR, on mutated pooling nodes,
broken graphs and garbage bytes. Every outcome is a PoolirError naming the node or file, or a result.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from hypothesis import given, strategies as st
from onnx import TensorProto, helper

from poolir import runtime
from tests.robustness.exercise import exercise_onnx
from tests.robustness.harness import fuzz, survive

POOL_OPS = ("MaxPool", "AveragePool", "LpPool", "GlobalMaxPool", "GlobalAveragePool", "GlobalLpPool")
OPSETS = (1, 7, 8, 10, 11, 12, 18, 19, 22, 0, 5, 28, 29, 99)
DTYPES = (TensorProto.FLOAT, TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE,
          TensorProto.INT8, TensorProto.UINT8, TensorProto.INT32, TensorProto.INT64, TensorProto.BOOL,
          TensorProto.STRING, TensorProto.COMPLEX64, TensorProto.FLOAT8E4M3FN, TensorProto.UNDEFINED)
AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", "same_upper", "SAME", "", "EXPLICIT")

value = st.one_of(st.integers(-2, 6), st.sampled_from((2**31, 2**62, 2**63 - 1, -(2**63))))


def int_list(rank: int):
    return st.one_of(st.lists(value, min_size=rank, max_size=rank), st.lists(value, max_size=2 * rank + 2))


@st.composite
def pool_attributes(draw, op_type: str, spatial: int) -> dict:
    attrs = {}
    maybe = lambda: draw(st.integers(0, 3)) > 0  # noqa: E731 - most attributes present most of the time
    if not op_type.startswith("Global"):
        if maybe():
            attrs["kernel_shape"] = draw(int_list(spatial))
        if maybe():
            attrs["strides"] = draw(int_list(spatial))
        if draw(st.booleans()):
            attrs["pads"] = draw(int_list(2 * spatial))
        if draw(st.booleans()):
            attrs["dilations"] = draw(int_list(spatial))
        if draw(st.booleans()):
            attrs["auto_pad"] = draw(st.sampled_from(AUTO_PADS))
        if draw(st.booleans()):
            attrs["ceil_mode"] = draw(st.sampled_from((0, 1, 2, -1)))
    if op_type == "AveragePool" and draw(st.booleans()):
        attrs["count_include_pad"] = draw(st.sampled_from((0, 1, 7)))
    if op_type == "MaxPool" and draw(st.booleans()):
        attrs["storage_order"] = draw(st.sampled_from((0, 1, 2, -1)))
    if "Lp" in op_type and draw(st.booleans()):
        attrs["p"] = draw(st.one_of(st.sampled_from((0, -1, 1, 2, 3, 2**40)),
                                    st.sampled_from((0.0, -2.0, 0.5, 1.0, 2.0, 3.5, float("nan"), float("inf")))))
    if draw(st.integers(0, 9)) == 0:  # a wrong attribute type or an attribute the op does not have
        name = draw(st.sampled_from(("kernel_shape", "strides", "pads", "auto_pad", "ceil_mode", "p", "bogus")))
        attrs[name] = draw(st.sampled_from((1.5, "2", [1.0, 2.0], b"x", 3)))
    return attrs


def _graph_outputs(draw, names, dtype, rank: int) -> list[onnx.ValueInfoProto]:
    """Output declarations: usually typed with symbolic dims of the input's rank (what onnx.checker, and so
    'poolir convert' and 'inspect', require), sometimes untyped or with a wrong rank."""
    kind = draw(st.sampled_from(("symbolic", "symbolic", "untyped", "wrong rank")))
    infos = []
    for index, name in enumerate(names):
        element = TensorProto.INT64 if index == 1 else dtype
        if kind == "untyped":
            infos.append(helper.make_tensor_value_info(name, TensorProto.UNDEFINED, None))
        else:
            out_rank = rank if kind == "symbolic" else rank + 1
            infos.append(helper.make_tensor_value_info(name, element, [f"{name}{axis}" for axis in range(out_rank)]))
    return infos


def _attribute(name: str, value) -> onnx.AttributeProto:
    if isinstance(value, list):
        kind = onnx.AttributeProto.FLOATS if any(isinstance(v, float) for v in value) else onnx.AttributeProto.INTS
        return helper.make_attribute(name, value, attr_type=kind)
    return helper.make_attribute(name, value)


@st.composite
def pool_models(draw) -> onnx.ModelProto:
    op_type = draw(st.sampled_from(POOL_OPS))
    rank = draw(st.integers(1, 6))
    spatial = max(0, rank - 2)
    dims = [draw(st.one_of(st.integers(0, 7), st.just("N"), st.just(-1))) for _ in range(rank)]
    dtype = draw(st.sampled_from(DTYPES))
    attrs = draw(pool_attributes(op_type, max(1, spatial)))
    outputs = ["y"]
    if op_type == "MaxPool" and draw(st.booleans()):
        outputs.append("indices")
    node = helper.make_node(op_type, ["x"], outputs, name="pool")
    node.attribute.extend(_attribute(name, value) for name, value in attrs.items())
    typed_dims = [d if d != -1 else None for d in dims]
    inputs = [helper.make_tensor_value_info("x", dtype, typed_dims)]
    graph_outputs = _graph_outputs(draw, outputs, dtype, rank)
    graph = helper.make_graph([node], "fuzz", inputs, graph_outputs)
    opset = draw(st.sampled_from(OPSETS))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


@fuzz(2000)
@given(pool_models(), st.integers(0, 2**16))
def test_mutated_onnx_pooling_nodes_are_refused_or_work(model, seed):
    exercise_onnx(model, seed=seed)


@st.composite
def broken_graphs(draw) -> onnx.ModelProto:
    """A small valid chain (MaxPool -> AveragePool), then broken at the graph level."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 6, 6])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("MaxPool", ["x"], ["m"], name="max", kernel_shape=[2, 2]),
             helper.make_node("AveragePool", ["m"], ["y"], name="avg", kernel_shape=[2, 2])]
    inputs, outputs, initializers, opsets = [x], [y], [], [helper.make_opsetid("", 13)]
    kind = draw(st.sampled_from(("cycle", "missing input", "self loop", "duplicate output", "no output producer",
                                 "unknown op", "custom domain", "initializer input", "bad initializer",
                                 "empty names", "no opset", "two default opsets", "reversed", "non tensor input",
                                 "duplicate input")))
    if kind == "cycle":
        nodes[0].input[0] = "y"
    elif kind == "missing input":
        nodes[1].input[0] = "nowhere"
    elif kind == "self loop":
        nodes[1].input[0] = "y"
    elif kind == "duplicate output":
        nodes[1].output[0] = "m"
        outputs = [helper.make_tensor_value_info("m", TensorProto.FLOAT, None)]
    elif kind == "no output producer":
        outputs.append(helper.make_tensor_value_info("ghost", TensorProto.FLOAT, None))
    elif kind == "unknown op":
        nodes[1].op_type = draw(st.sampled_from(("Conv", "MaxPoolX", "", "Loop")))
    elif kind == "custom domain":
        nodes[0].domain = "com.example"
        opsets.append(helper.make_opsetid("com.example", 1))
    elif kind == "initializer input":
        initializers.append(helper.make_tensor("x", TensorProto.FLOAT, [1, 1, 6, 6], np.zeros(36, np.float32)))
    elif kind == "bad initializer":
        nodes[1] = helper.make_node("Add", ["m", "w"], ["y"], name="add")
        tensor = helper.make_tensor("w", TensorProto.FLOAT, [1, 1, 5, 5], np.zeros(25, np.float32))
        tensor.dims[:] = draw(st.sampled_from(([3, 3], [2**40, 2**40], [-1], [5, 5, 5])))
        initializers.append(tensor)
    elif kind == "empty names":
        nodes[0].output[0] = ""
    elif kind == "no opset":
        opsets = []
    elif kind == "two default opsets":
        opsets.append(helper.make_opsetid("ai.onnx", 7))
    elif kind == "reversed":
        nodes.reverse()
    elif kind == "non tensor input":
        inputs = [helper.make_tensor_sequence_value_info("x", TensorProto.FLOAT, [1, 1, 6, 6])]
    elif kind == "duplicate input":
        inputs = [x, x]
    graph = helper.make_graph(nodes, "broken", inputs, outputs, initializer=initializers)
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


@fuzz(240)
@given(broken_graphs(), st.integers(0, 2**16))
def test_broken_onnx_graphs_are_refused_or_work(model, seed):
    exercise_onnx(model, seed=seed)


def _base_bytes() -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 5, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 3, 3])
    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    graph = helper.make_graph([node], "g", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=10).SerializeToString()


BASE_ONNX = _base_bytes()


@st.composite
def garbled_onnx_bytes(draw) -> bytes:
    data = bytearray(BASE_ONNX)
    kind = draw(st.sampled_from(("truncate", "flip", "garbage", "empty", "xml")))
    if kind == "truncate":
        return bytes(data[:draw(st.integers(0, len(data) - 1))])
    if kind == "flip":
        for _ in range(draw(st.integers(1, 6))):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        return bytes(data)
    if kind == "garbage":
        return draw(st.binary(max_size=200))
    if kind == "empty":
        return b""
    return b'<?xml version="1.0"?><net name="x" version="11"/>'


@fuzz(600)
@given(garbled_onnx_bytes())
def test_garbled_onnx_files_are_refused_or_work(tmp_path_factory, data):
    path = Path(tmp_path_factory.mktemp("garbled")) / "model.onnx"
    path.write_bytes(data)
    session = survive("onnx.load", lambda: runtime.Session(path), names=str(path))
    from poolir.converter.describe import describe

    survive("onnx.inspect", lambda: describe(str(path)), names=str(path))
    if not hasattr(session, "inputs"):
        return
    model = onnx.load_model_from_string(data)
    exercise_onnx(model)


@st.composite
def plausible_pool_models(draw) -> onnx.ModelProto:
    """Well-typed pooling nodes near the edges of the valid range (pads >= kernel, empty windows, tiny inputs)."""
    op_type = draw(st.sampled_from(("MaxPool", "AveragePool", "LpPool")))
    spatial = draw(st.integers(1, 3))
    dims = [draw(st.integers(1, 2)), draw(st.integers(1, 3))] + [draw(st.integers(1, 7)) for _ in range(spatial)]
    small = lambda low, high: st.lists(st.integers(low, high), min_size=spatial, max_size=spatial)  # noqa: E731
    attrs = {"kernel_shape": draw(small(1, 4))}
    if draw(st.booleans()):
        attrs["strides"] = draw(small(1, 3))
    if draw(st.booleans()):
        attrs["pads"] = draw(small(0, 4)) + draw(small(0, 4))
    elif draw(st.booleans()):
        attrs["auto_pad"] = draw(st.sampled_from(("SAME_UPPER", "SAME_LOWER", "VALID")))
    opset = draw(st.sampled_from((8, 10, 11, 12, 18, 19, 22)))
    if opset >= 10 and draw(st.booleans()):
        attrs["ceil_mode"] = 1
    if (op_type != "LpPool" and opset >= 10 or opset >= 18) and draw(st.booleans()):
        attrs["dilations"] = draw(small(1, 3))
    if op_type == "AveragePool" and draw(st.booleans()):
        attrs["count_include_pad"] = 1
    outputs = ["y"]
    if op_type == "MaxPool" and draw(st.booleans()):
        outputs.append("indices")
        attrs["storage_order"] = draw(st.sampled_from((0, 1)))
    if op_type == "LpPool":
        attrs["p"] = draw(st.integers(1, 4))
    dtype = draw(st.sampled_from((TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE) +
                                 ((TensorProto.INT8, TensorProto.UINT8) if op_type == "MaxPool" else ())))
    node = helper.make_node(op_type, ["x"], outputs, name="pool", **attrs)
    graph = helper.make_graph([node], "plausible", [helper.make_tensor_value_info("x", dtype, dims)],
                              _graph_outputs(draw, outputs, dtype, len(dims)))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


@fuzz(1200)
@given(plausible_pool_models(), st.integers(0, 2**16), st.booleans())
def test_edge_of_range_onnx_pooling_is_refused_or_works(model, seed, specials):
    exercise_onnx(model, seed=seed, specials=specials)
