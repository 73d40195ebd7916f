"""Fuzz ONNX -> IR for the elementwise, movement and reduction converters and the driver's constant folding:
random attributes and constant inputs (out-of-range axes, huge shapes, wrong arities), constant or fed.
Every outcome is a PoolirError naming the node, or a converted model that poolir writes and reads back.

Only the converter is exercised: poolir's ONNX executor has bugs of its own on these mutated nodes (a
TypeError for Unsqueeze-13 or Pad-11 without their inputs, ZeroDivisionError for Mod by a constant zero,
onnx.shape_inference aborting the process), which belong to the runtime's fuzzing.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, strategies as st
from onnx import TensorProto, helper, numpy_helper

from poolir import ir
from poolir.converter.onnx_to_ir import onnx_to_ir
from poolir.ir.errors import PoolirError
from tests.robustness.harness import fuzz, survive

OPS = ("Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Mean", "Neg", "Ceil", "Reciprocal", "Cast", "CastLike",
       "Transpose", "Reshape", "Concat", "Split", "Slice", "Squeeze", "Unsqueeze", "Gather", "Shape", "Expand",
       "Pad", "ConstantOfShape", "ReduceSum", "ReduceMean", "ReduceL2", "ReduceSumSquare", "Constant")
OPSETS = (1, 7, 9, 11, 13, 14, 15, 18, 19, 22)
DTYPES = (TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64, TensorProto.UINT8, TensorProto.FLOAT16)
ALL_ATTRIBUTES = ("axis", "axes", "perm", "split", "starts", "ends", "keepdims", "allowzero", "to", "fmod", "mode",
                  "pads", "num_outputs", "noop_with_empty_axes", "start", "end", "value")
_REDUCE = ("axes", "keepdims", "noop_with_empty_axes")
RELEVANT = {"Mod": ("fmod",), "Cast": ("to",), "Transpose": ("perm",), "Reshape": ("allowzero",),
            "Concat": ("axis",), "Split": ("axis", "split", "num_outputs"), "Slice": ("starts", "ends", "axes"),
            "Squeeze": ("axes",), "Unsqueeze": ("axes",), "Gather": ("axis",), "Shape": ("start", "end"),
            "Pad": ("mode", "pads", "value"), "ConstantOfShape": ("value",), "Constant": ("value",),
            "ReduceSum": _REDUCE, "ReduceMean": _REDUCE, "ReduceL2": _REDUCE, "ReduceSumSquare": _REDUCE}
ARITY = {**dict.fromkeys(("Add", "Sub", "Mul", "Div", "Pow", "Mod", "CastLike", "Reshape", "Gather", "Expand"),
                         (2, 2)), "Max": (1, 3), "Mean": (1, 3), "Concat": (1, 3), "Split": (1, 2), "Slice": (3, 5),
         "Squeeze": (1, 2), "Unsqueeze": (2, 2), "Pad": (2, 4), "ConstantOfShape": (2, 2), "Constant": (1, 1),
         "ReduceSum": (1, 2), "ReduceMean": (1, 2), "ReduceL2": (1, 2), "ReduceSumSquare": (1, 2)}
small = st.integers(-4, 5)
huge = st.sampled_from((2**31, 2**62, -(2**63), 10**6))
ints = st.lists(st.one_of(small, small, huge), max_size=5)


@st.composite
def models(draw):
    op = draw(st.sampled_from(OPS))
    opset = draw(st.sampled_from(OPSETS))
    rank = draw(st.integers(0, 4))
    shape = [draw(st.integers(1, 4)) for _ in range(rank)]
    dtype = draw(st.sampled_from(DTYPES))
    x = helper.make_tensor_value_info("x", dtype, shape)
    inputs, initializers, names = [x], [], ["x"]
    low, high = ARITY.get(op, (1, 1))
    extra = draw(st.integers(max(low - 1, 0), max(high - 1, 0))) if draw(st.integers(0, 4)) else draw(st.integers(0, 4))
    for index in range(extra):
        name = f"c{index}"
        if draw(st.booleans()):
            values = np.array(draw(ints), np.int64)
        else:
            values = np.asarray(draw(st.lists(st.floats(-3, 3, width=32), max_size=6)), np.float32)
        if draw(st.booleans()) and values.size:
            initializers.append(numpy_helper.from_array(values, name))
        else:
            inputs.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(values.dtype),
                                                        list(values.shape)))
        names.append(draw(st.sampled_from((name, name, name, ""))))
    if op in ("ConstantOfShape", "Constant") or not draw(st.integers(0, 4)):
        names = names[1:]  # x only as a graph input, the node fed by constants alone (folding)
    attrs = {}
    relevant = RELEVANT.get(op, ()) if draw(st.integers(0, 4)) else ALL_ATTRIBUTES  # mostly the op's own
    for attribute in draw(st.lists(st.sampled_from(relevant or ALL_ATTRIBUTES), max_size=3, unique=True)):
        if attribute in ("axes", "perm", "split", "starts", "ends", "pads"):
            attrs[attribute] = draw(ints) or [0]
        elif attribute == "mode":
            attrs[attribute] = draw(st.sampled_from(("constant", "reflect", "edge", "wrap", "bogus")))
        elif attribute == "to":
            attrs[attribute] = draw(st.sampled_from((1, 6, 7, 2, 3, 10, 9, 8, 0, 99)))
        elif attribute == "value" and op == "Pad":
            attrs[attribute] = float(draw(small))
        elif attribute == "value":
            attrs[attribute] = numpy_helper.from_array(np.array([draw(small)], np.float32))
        else:
            attrs[attribute] = draw(st.one_of(small, huge))
    outputs = [f"y{i}" for i in range(draw(st.integers(1, 3)) if op == "Split" else 1)]
    node = helper.make_node(op, names, outputs, name="fuzzed", **attrs)
    graph = helper.make_graph([node], "fuzz", inputs, [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None)
                                                        for o in outputs], initializer=initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


@fuzz(300)
@given(models())
def test_mutated_family_nodes_are_refused_or_convert(model):
    converted = survive("onnx.to_ir", lambda: onnx_to_ir(model))
    if isinstance(converted, PoolirError):
        return
    written = survive("onnx.to_ir.serialize", lambda: ir.serialize(converted))
    if not isinstance(written, PoolirError):
        again = survive("onnx.to_ir.reparse", lambda: ir.parse_model(written[0], written[1], source="converted.xml"))
        assert not isinstance(again, PoolirError), f"poolir wrote a converted IR it refuses to read: {again}"
