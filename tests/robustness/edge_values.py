"""Helpers of the edge-value regression tests: single-node ONNX models and IR files, and the element type maps."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto, helper

from poolir import ir

NUMPY_TO_ONNX = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float16): TensorProto.FLOAT16,
                 np.dtype(np.float64): TensorProto.DOUBLE, np.dtype(np.int32): TensorProto.INT32,
                 np.dtype(np.int64): TensorProto.INT64, np.dtype(np.int8): TensorProto.INT8,
                 np.dtype(np.uint8): TensorProto.UINT8}
NUMPY_TO_IR = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", np.dtype(np.float64): "f64",
               np.dtype(ml_dtypes.bfloat16): "bf16", np.dtype(np.int32): "i32", np.dtype(np.int64): "i64",
               np.dtype(np.int8): "i8", np.dtype(np.uint8): "u8"}


def onnx_one_node(node, inputs, outputs, initializers=(), opset=18) -> onnx.ModelProto:
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs], initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def ir_file(folder, build):
    """An IR file of `build(b) -> output`, its one Result named y."""
    b = ir.GraphBuilder("edge")
    b.result(build(b), "y")
    path = folder / "edge.xml"
    ir.write_model(b.build(), path)
    return path
