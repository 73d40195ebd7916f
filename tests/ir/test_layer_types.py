"""Every supported layer type, built with GraphBuilder and checked against OpenVINO.

For each small graph: poolir infers output dims and element types; OpenVINO reads the file poolir
wrote and must report the same; reading poolir's file back and writing it again gives identical
bytes; and re-inference finds no declared-vs-inferred disagreement.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from poolir import ir
from poolir.ir.builder import GraphBuilder, OutputRef
from poolir.ir.schema import SCHEMAS
from tests.peers import openvino_core

Build = Callable[[GraphBuilder], list[OutputRef]]


def i64(*values) -> np.ndarray:
    return np.asarray(values, np.int64)


def _x(b: GraphBuilder, shape=(2, 3, 4, 5), element_type="f32") -> OutputRef:
    return b.parameter("x", element_type, shape)


def _binary(layer_type: str, **attrs) -> Build:
    def build(b):
        y = b.parameter("y", "f32", (3, 1, 1))
        return b.add(layer_type, "opset1", [_x(b, (-1, 3, 4, 5)), y], attrs)
    return build


def _reduce(layer_type: str, version: str, keep: bool) -> Build:
    return lambda b: b.add(layer_type, version, [_x(b), b.const(i64(1, -1))], {"keep_dims": keep})


def _shape_arithmetic(b: GraphBuilder) -> list[OutputRef]:
    """The pattern OpenVINO's frontend emits for GlobalLpPool with a static batch: ShapeOf -> Gather -> Concat
    -> Reshape; folding must give a static target."""
    x = _x(b)
    (shape,) = b.add("ShapeOf", "opset3", [x])
    (batch,) = b.add("Gather", "opset8", [shape, b.const(i64(0, 1)), b.const(i64(0))])
    (target,) = b.add("Concat", "opset1", [batch, b.const(i64(-1))], {"axis": 0})
    return b.add("Reshape", "opset1", [x, target], {"special_zero": False})


CASES: dict[str, Build] = {
    "Pad-1 constant": lambda b: b.add("Pad", "opset1", [_x(b), b.const(i64(0, 0, 1, 2)), b.const(i64(0, 1, 2, 0)),
                                                         b.const(np.float32(0.5))], {"pad_mode": "constant"}),
    "Pad-1 reflect": lambda b: b.add("Pad", "opset1", [_x(b), b.const(i64(0, 0, 1, 2)), b.const(i64(0, 0, 2, 1))],
                                     {"pad_mode": "reflect"}),
    "Pad-12 negative": lambda b: b.add("Pad", "opset12", [_x(b), b.const(i64(0, 0, -1, 2)), b.const(i64(0, 0, 2, -3))],
                                       {"pad_mode": "edge"}),
    "Add": _binary("Add"),
    "Subtract": _binary("Subtract"),
    "Multiply": _binary("Multiply"),
    "Divide": _binary("Divide", m_pythondiv=False),
    "FloorMod": _binary("FloorMod"),
    "Mod": _binary("Mod"),
    "Maximum": _binary("Maximum"),
    "Minimum": _binary("Minimum"),
    "Power": _binary("Power"),
    "Add without broadcast": lambda b: b.add("Add", "opset1", [_x(b), b.parameter("y", "f32", (2, 3, 4, 5))],
                                             {"auto_broadcast": "none"}),
    "Abs": lambda b: b.add("Abs", "opset1", [_x(b)]),
    "Sqrt": lambda b: b.add("Sqrt", "opset1", [_x(b, (-1, 3, 4))]),
    "Floor": lambda b: b.add("Floor", "opset1", [_x(b, (1, 2), "f16")]),
    "Ceiling": lambda b: b.add("Ceiling", "opset1", [_x(b, (1, 2), "f16")]),
    "Convert": lambda b: b.add("Convert", "opset1", [_x(b)], {"destination_type": "f16"}),
    "Convert to boolean": lambda b: b.add("Convert", "opset1", [_x(b)], {"destination_type": "boolean"}),
    "ConvertLike": lambda b: b.add("ConvertLike", "opset1", [_x(b), b.parameter("like", "f64", (1,))]),
    "Reshape special_zero": lambda b: b.add("Reshape", "opset1", [_x(b, (-1, 3, 4, 5)), b.const(i64(0, -1))],
                                            {"special_zero": True}),
    "Reshape": lambda b: b.add("Reshape", "opset1", [_x(b), b.const(i64(6, -1, 2))], {"special_zero": False}),
    "ShapeOf Gather Concat Reshape": _shape_arithmetic,
    "Squeeze axes": lambda b: b.add("Squeeze", "opset1", [_x(b, (2, 1, 4, 1)), b.const(i64(-1))]),
    "Squeeze all": lambda b: b.add("Squeeze", "opset1", [_x(b, (2, 1, 4, 1))]),
    "Squeeze-15": lambda b: b.add("Squeeze", "opset15", [_x(b, (2, 1, 4, 1)), b.const(i64(1))],
                                  {"allow_axis_skip": False}),
    "Unsqueeze": lambda b: b.add("Unsqueeze", "opset1", [_x(b, (-1, 3)), b.const(i64(0, -1))]),
    "Concat": lambda b: b.add("Concat", "opset1", [_x(b), b.parameter("y", "f32", (2, 3, 4, 2))], {"axis": -1}),
    "Split": lambda b: b.add("Split", "opset1", [_x(b, (-1, 6, 4)), b.const(i64(1)[0])], {"num_splits": 3}),
    "VariadicSplit": lambda b: b.add("VariadicSplit", "opset1", [_x(b), b.const(np.int64(2)), b.const(i64(1, -1))]),
    "VariadicSplit computed lengths": lambda b: b.add("VariadicSplit", "opset1", [
        _x(b), b.const(np.int64(2)), b.parameter("lengths", "i64", (2,))]),
    "Transpose": lambda b: b.add("Transpose", "opset1", [_x(b), b.const(i64(0, 2, 3, 1))]),
    "Transpose reverse (empty Const)": lambda b: b.add("Transpose", "opset1", [_x(b), b.const(np.zeros(0, np.int64))]),
    "ReduceSum empty axes": lambda b: b.add("ReduceSum", "opset1", [_x(b), b.const(np.zeros(0, np.int64))],
                                            {"keep_dims": False}),
    "Pad-1 edge with pad_value": lambda b: b.add("Pad", "opset1", [_x(b), b.const(i64(0, 0, 1, 2)),
                                                                   b.const(i64(0, 0, 2, 1)), b.const(np.float32(0))],
                                                 {"pad_mode": "edge"}),
    "Slice-8": lambda b: b.add("Slice", "opset8", [_x(b), b.const(i64(1, -1)), b.const(i64(4, -5)), b.const(i64(2, -1)),
                                                    b.const(i64(2, 3))]),
    "Slice-8 dynamic": lambda b: b.add("Slice", "opset8", [_x(b, (-1, 3, 9)), b.const(i64(1)), b.const(i64(100)),
                                                            b.const(i64(3)), b.const(i64(2))]),
    "StridedSlice": lambda b: b.add("StridedSlice", "opset1",
                                    [_x(b), b.const(i64(0, 1, 0, 2)), b.const(i64(1, 3, 0, 5)), b.const(i64(1, 1, 1, 2))],
                                    {"begin_mask": (0, 0, 1, 0), "end_mask": (0, 0, 1, 0),
                                     "shrink_axis_mask": (1, 0, 0, 0)}),
    "Gather-8": lambda b: b.add("Gather", "opset8", [_x(b), b.const(i64(3, 0, -1)), b.const(np.int64(-1))]),
    "Gather-1": lambda b: b.add("Gather", "opset1", [_x(b), b.const(i64([1, 0])), b.const(np.int64(0))]),
    "Gather-7 batch_dims": lambda b: b.add("Gather", "opset7", [_x(b), b.const(np.zeros((2, 3), np.int64)),
                                                                  b.const(np.int64(1))], {"batch_dims": 1}),
    "ShapeOf-1": lambda b: b.add("ShapeOf", "opset1", [_x(b, (-1, 3))]),
    "ShapeOf-3 i32": lambda b: b.add("ShapeOf", "opset3", [_x(b)], {"output_type": "i32"}),
    "Broadcast-3 numpy": lambda b: b.add("Broadcast", "opset3", [_x(b, (3, 1)), b.const(i64(2, 3, 4))]),
    "Broadcast-3 bidirectional": lambda b: b.add("Broadcast", "opset3", [_x(b, (3, 1)), b.const(i64(2, 1, 4))],
                                                 {"mode": "bidirectional"}),
    "Broadcast-3 explicit": lambda b: b.add("Broadcast", "opset3", [_x(b, (3,)), b.const(i64(2, 3)), b.const(i64(1))],
                                            {"mode": "explicit"}),
    "Broadcast-1": lambda b: b.add("Broadcast", "opset1", [_x(b, (1, 4)), b.const(i64(3, 4))]),
    # pointwise and rearrange families (ir/ops/pointwise.py, ir/ops/rearrange.py)
    **{t: (lambda t: lambda b: b.add(t, "opset1", [_x(b, (-1, 3, 4))]))(t) for t in ("Sign", "Negative", "Exp", "Log", "Erf")},
    **{t: _binary(t) for t in ("Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual")},
    **{t: (lambda t: lambda b: b.add(t, "opset1", [_x(b, (-1, 3, 4), "boolean"), b.parameter("y", "boolean", (4,))]))(t)
       for t in ("LogicalAnd", "LogicalOr", "LogicalXor")},
    "LogicalNot": lambda b: b.add("LogicalNot", "opset1", [_x(b, (2, 3), "boolean")]),
    "Identity-16": lambda b: b.add("Identity", "opset16", [_x(b, (-1, 3, 4))]),
    "Select": lambda b: b.add("Select", "opset1", [b.parameter("c", "boolean", (1, 3, 1)), _x(b, (-1, 3, 4)),
                                                    b.parameter("y", "f32", (4,))]),
    "ShuffleChannels": lambda b: b.add("ShuffleChannels", "opset3", [_x(b, (-1, 6, 4, 4))], {"axis": 1, "group": 3}),
    "GatherND-5 batch_dims 2": lambda b: b.add("GatherND", "opset5", [_x(b), b.const(np.zeros((2, 3, 1), np.int32))],
                                               {"batch_dims": 2}),
    "GatherND-8 batch_dims 2": lambda b: b.add("GatherND", "opset8", [_x(b), b.const(np.zeros((2, 3, 1), np.int64))],
                                               {"batch_dims": 2}),
    "Tile": lambda b: b.add("Tile", "opset1", [_x(b, (-1, 3)), b.const(i64(2, 1, 3))]),
    "ReduceMean keep": _reduce("ReduceMean", "opset1", True),
    "ReduceMax": _reduce("ReduceMax", "opset1", False),
    "ReduceMin": _reduce("ReduceMin", "opset1", True),
    "ReduceSum": _reduce("ReduceSum", "opset1", False),
    "ReduceProd": _reduce("ReduceProd", "opset1", True),
    "ReduceL1": _reduce("ReduceL1", "opset4", False),
    "ReduceL2": _reduce("ReduceL2", "opset4", True),
    "MaxPool-8 i32 indices u8": lambda b: b.add("MaxPool", "opset8", [_x(b, (1, 2, 5, 5), "u8")], {
        "kernel": (2, 2), "strides": (1, 1), "pads_begin": (0, 0), "pads_end": (0, 0),
        "index_element_type": "i32", "axis": 2}),
    "AdaptiveAvgPool-8 f16": lambda b: b.add("AdaptiveAvgPool", "opset8", [_x(b, (1, 2, 7, 9), "f16"),
                                                                           b.const(np.array([3, 4], np.int32))]),
    "AdaptiveMaxPool-8 i32 indices": lambda b: b.add("AdaptiveMaxPool", "opset8", [
        _x(b, (1, 2, 5, 6, 7)), b.const(i64(2, 4, 3))], {"index_element_type": "i32"}),
    "AdaptiveMaxPool-8 computed size": lambda b: b.add("AdaptiveMaxPool", "opset8", [
        _x(b, (1, 2, 10)), b.parameter("size", "i64", (1,))]),
    "MaxPool-1 i8": lambda b: b.add("MaxPool", "opset1", [_x(b, (1, 2, 5), "i8")], {
        "kernel": (2,), "strides": (2,), "pads_begin": (0,), "pads_end": (1,), "rounding_type": "ceil"}),
    "AvgPool-14 bf16": lambda b: b.add("AvgPool", "opset14", [_x(b, (1, 2, 5, 5), "bf16")], {
        "kernel": (2, 2), "strides": (2, 2), "pads_begin": (0, 0), "pads_end": (1, 1), "exclude-pad": False,
        "rounding_type": "ceil_torch"}),
    "AvgPool-1 same_lower": lambda b: b.add("AvgPool", "opset1", [_x(b, (-1, 2, 7, 6))], {
        "kernel": (3, 2), "strides": (2, 2), "pads_begin": (0, 0), "pads_end": (0, 0), "exclude-pad": True,
        "auto_pad": "same_lower"}),
    "MaxPool-14 ceil_torch f16": lambda b: b.add("MaxPool", "opset14", [_x(b, (1, 2, 6, 6, 6), "f16")], {
        "kernel": (2, 2, 2), "strides": (2, 2, 2), "dilations": (1, 2, 1), "pads_begin": (1, 1, 1),
        "pads_end": (1, 1, 1), "rounding_type": "ceil_torch"}),
    "AvgPool-16 f64": lambda b: b.add("AvgPool", "opset16", [_x(b, (1, 2, 9), "f64")], {
        "kernel": (3,), "strides": (2,), "dilations": (2,), "pads_begin": (1,), "pads_end": (1,), "exclude-pad": True}),
    "Convolution-1 same_upper dilated": lambda b: b.add("Convolution", "opset1", [
        _x(b, (1, 3, 9, 8)), b.const(np.ones((4, 3, 3, 3), np.float32))], {
        "strides": (2, 1), "dilations": (2, 1), "pads_begin": (1, 1), "pads_end": (0, 0), "auto_pad": "same_upper"}),
    "Convolution-1 dynamic": lambda b: b.add("Convolution", "opset1", [
        _x(b, (-1, 2, -1, 7)), b.const(np.ones((4, 2, 3, 2), np.float32))], {
        "strides": (2, 2), "dilations": (1, 2), "pads_begin": (1, 0), "pads_end": (2, 1)}),
    "Convolution-1 same_lower dynamic": lambda b: b.add("Convolution", "opset1", [
        _x(b, (1, 2, -1, 7)), b.const(np.ones((4, 2, 3, 2), np.float32))], {
        "strides": (2, 3), "dilations": (1, 1), "pads_begin": (0, 0), "pads_end": (0, 0), "auto_pad": "same_lower"}),
    "GroupConvolution-1 valid": lambda b: b.add("GroupConvolution", "opset1", [
        _x(b, (1, 4, 6, 7)), b.const(np.ones((2, 3, 2, 3, 3), np.float32))], {
        "strides": (1, 2), "dilations": (1, 1), "pads_begin": (1, 1), "pads_end": (1, 1), "auto_pad": "valid"}),
    "MatMul-1 vector": lambda b: b.add("MatMul", "opset1", [_x(b, (3,)), b.const(np.ones((2, 4, 3), np.float32))],
                                       {"transpose_a": True, "transpose_b": True}),
    "MatMul-1 batch": lambda b: b.add("MatMul", "opset1", [_x(b, (-1, 1, 3, 4)), b.const(np.ones((5, 4, 2), np.float32))],
                                      {"transpose_a": False, "transpose_b": False}),
    # Einsum: ellipses of different lengths broadcast, a dynamic batch, a size-1 label broadcast, implicit output
    "Einsum-7 ellipsis": lambda b: b.add("Einsum", "opset7", [_x(b, (-1, 1, 3, 4)), b.parameter("y", "f32", (5, 4, 2))],
                                         {"equation": "...ij,...jk->...ik"}),
    "Einsum-7 implicit": lambda b: b.add("Einsum", "opset7", [
        _x(b, (2, 3)), b.parameter("y", "f32", (1, 4)), b.parameter("z", "f32", (4, 5))], {"equation": "Ab,Ac,cd"}),
    "ScaledDotProductAttention-13 mask widens": lambda b: b.add("ScaledDotProductAttention", "opset13", [
        _x(b, (-1, 2, 1, 8)), b.parameter("k", "f32", (1, 2, 5, 8)), b.parameter("v", "f32", (2, 1, 5, 3)),
        b.parameter("m", "boolean", (7, 1, 1, 4, 5))], {"causal": False}),
    "ScaledDotProductAttention-13 causal sink": lambda b: b.add("ScaledDotProductAttention", "opset13", [
        _x(b, (2, 4, 8)), b.parameter("k", "f32", (2, 6, 8)), b.parameter("v", "f32", (2, 6, 3)),
        b.const(np.float32(0)), b.const(np.float32(0.25)), b.parameter("s", "f32", (1, 4, 1))], {"causal": True}),
    # activations
    "ReLU": lambda b: b.add("ReLU", "opset1", [_x(b, (-1, 3))]),
    "Clamp": lambda b: b.add("Clamp", "opset1", [_x(b)], {"min": -1.5, "max": 6.0}),
    "Clamp i32": lambda b: b.add("Clamp", "opset1", [_x(b, (4,), "i32")], {"min": -1.5, "max": 2.5}),
    "Sigmoid": lambda b: b.add("Sigmoid", "opset1", [_x(b)]),
    "Tanh": lambda b: b.add("Tanh", "opset1", [_x(b, (2,), "f16")]),
    "HSwish": lambda b: b.add("HSwish", "opset4", [_x(b)]),
    "Gelu-2": lambda b: b.add("Gelu", "opset2", [_x(b, (-1, 3, 4))]),
    "Gelu-7": lambda b: b.add("Gelu", "opset7", [_x(b)], {"approximation_mode": "tanh"}),
    "MVN-1": lambda b: b.add("MVN", "opset2", [_x(b, (-1, 3, 4, 5))],
                             {"across_channels": True, "normalize_variance": True, "eps": 1e-9}),
    "MVN-6": lambda b: b.add("MVN", "opset6", [_x(b, (2, -1, 4, 5)), b.const(i64(-2, -1))],
                             {"normalize_variance": True, "eps": 1e-5, "eps_mode": "outside_sqrt"}),
    "ConvolutionBackpropData": lambda b: b.add("ConvolutionBackpropData", "opset1", [
        _x(b, (-1, 4, 3, 5)), b.const(np.ones((4, 2, 3, 3), np.float32)), b.const(i64(7, 11))],
        {"strides": (2, 2), "dilations": (1, 1), "pads_begin": (0, 0), "pads_end": (0, 0), "auto_pad": "same_upper"}),
    "GroupConvolutionBackpropData": lambda b: b.add("GroupConvolutionBackpropData", "opset1", [
        _x(b, (1, 4, 3, 5)), b.const(np.ones((2, 2, 3, 3, 3), np.float32))],
        {"strides": (2, 2), "pads_begin": (1, 1), "pads_end": (1, 1), "dilations": (1, 1), "output_padding": (1, 0)}),
    "DepthToSpace": lambda b: b.add("DepthToSpace", "opset1", [_x(b, (-1, 8, 2, 3))],
                                    {"block_size": 2, "mode": "depth_first"}),
    "SpaceToDepth": lambda b: b.add("SpaceToDepth", "opset1", [_x(b, (1, 2, 4, 6, 2))],
                                    {"block_size": 2, "mode": "blocks_first"}),
    "GroupNormalization": lambda b: b.add("GroupNormalization", "opset12", [_x(b, (-1, 4, 5)),
                                                                          b.const(np.ones(4, np.float32)),
                                                                          b.const(np.zeros(4, np.float32))],
                                          {"num_groups": 2, "epsilon": 1e-5}),
    "Interpolate-4 scales, pads": lambda b: b.add("Interpolate", "opset4", [
        _x(b, (-1, 3, 5, 7)), b.const(i64(1, 1)), b.const(np.array([0.3333333, 2.5], np.float32)), b.const(i64(2, 3))],
        {"mode": "linear_onnx", "shape_calculation_mode": "scales", "pads_begin": (0, 0, 1, 0),
         "pads_end": (0, 0, 0, 2)}),
    "Interpolate-11 sizes": lambda b: b.add("Interpolate", "opset11", [_x(b, (-1, 3, 5, 7)), b.const(i64(9, 2)),
                                                                       b.const(i64(3, 1))],
                                            {"mode": "nearest", "shape_calculation_mode": "sizes"}),
    "Interpolate-11 scales": lambda b: b.add("Interpolate", "opset11", [
        _x(b, (2, 3, 6, 7)), b.const(np.array([1, 1, 0.6, 1.7], np.float32))],
        {"mode": "cubic", "shape_calculation_mode": "scales", "coordinate_transformation_mode": "align_corners"}),
    "HSigmoid": lambda b: b.add("HSigmoid", "opset5", [_x(b)]),
    "HardSigmoid": lambda b: b.add("HardSigmoid", "opset1", [_x(b), b.const(np.float32(0.2)),
                                                              b.const(np.float32(0.5))]),
    "Swish": lambda b: b.add("Swish", "opset4", [_x(b)]),
    "Elu": lambda b: b.add("Elu", "opset1", [_x(b)], {"alpha": 0.5}),
    "Selu": lambda b: b.add("Selu", "opset1", [_x(b, (2, -1), "f16"), b.const(np.float16(1.67)),
                                                b.const(np.float16(1.05))]),
    "SoftPlus": lambda b: b.add("SoftPlus", "opset4", [_x(b)]),
    "SoftSign": lambda b: b.add("SoftSign", "opset9", [_x(b)]),
    "Mish": lambda b: b.add("Mish", "opset4", [_x(b)]),
    "Swish beta": lambda b: b.add("Swish", "opset4", [_x(b), b.const(np.float32(1.5))]),
    "PReLU channels": lambda b: b.add("PReLU", "opset1", [_x(b), b.const(np.full(3, 0.1, np.float32))]),
    "PReLU scalar": lambda b: b.add("PReLU", "opset1", [_x(b), b.const(np.full(1, 0.1, np.float32))]),
    "SoftMax-1": lambda b: b.add("SoftMax", "opset1", [_x(b)], {"axis": 1}),
    "SoftMax-8 negative axis": lambda b: b.add("SoftMax", "opset8", [_x(b, (-1, 3, 4))], {"axis": -1}),
    "LogSoftmax": lambda b: b.add("LogSoftmax", "opset5", [_x(b)], {"axis": -2}),
    "i32 Const": lambda b: b.add("Add", "opset1", [_x(b, (3,), "i32"), b.const(np.asarray([1, 2, 3], np.int32))]),
    "boolean Parameter": lambda b: b.add("Convert", "opset1", [_x(b, (2,), "boolean")], {"destination_type": "f32"}),
    # normalization: BatchNormInference-1 takes gamma, beta, data, mean, variance; -5 takes data first
    "BatchNormInference-1": lambda b: b.add("BatchNormInference", "opset1", [
        *(b.const(np.ones(3, np.float32)) for _ in range(2)), _x(b, (-1, 3, 4)),
        *(b.const(np.ones(3, np.float32)) for _ in range(2))], {"epsilon": 1e-3}),
    "BatchNormInference-5": lambda b: b.add("BatchNormInference", "opset5", [
        _x(b, (2, 3)), *(b.const(np.ones(3, np.float32)) for _ in range(4))], {"epsilon": 0.5}),
    "LRN": lambda b: b.add("LRN", "opset1", [_x(b), b.const(i64(1))],
                           {"alpha": 1e-4, "beta": 0.75, "bias": 2.0, "size": 5}),
    # generation, scatter, Roll: OpenVINO writes ScatterNDUpdate-3 as "opset4" (it refuses "opset3")
    "Range-1 folded": lambda b: b.add("Range", "opset1", [b.const(np.int32(10)), b.const(np.int32(-7)),
                                                          b.const(np.int32(-3))]),
    "Range-4 computed": lambda b: b.add("Range", "opset4", [_x(b, (), "f32"), b.const(np.float32(9.5)),
                                                            b.const(np.float32(0.5))], {"output_type": "i64"}),
    "Range-4 f16 folded": lambda b: b.add("Range", "opset4", [b.const(np.float32(0)), b.const(np.float32(1)),
                                                              b.const(np.float32(0.1))], {"output_type": "f16"}),
    "ScatterNDUpdate-3": lambda b: b.add("ScatterNDUpdate", "opset4", [_x(b, (-1, 3, 4)), b.const(i64([0], [-1])),
                                                                       b.parameter("u", "f32", (2, 3, 4))]),
    "ScatterNDUpdate-15 sum": lambda b: b.add("ScatterNDUpdate", "opset15", [
        _x(b, (2, 3, 4)), b.const(np.asarray([[1, 2], [0, -1]], np.int32)), b.parameter("u", "f32", (2, 4))],
        {"reduction": "sum"}),
    "Roll": lambda b: b.add("Roll", "opset7", [_x(b, (-1, 3, 4)), b.const(i64(1, -2)), b.const(i64(0, 2))]),
    "Roll scalar shift": lambda b: b.add("Roll", "opset7", [_x(b), b.const(np.int32(5)), b.const(np.int32(-1))]),
}


def _build(name: str) -> tuple[GraphBuilder, list[OutputRef]]:
    b = GraphBuilder(name.replace(" ", "_"))
    outputs = CASES[name](b)
    for index, output in enumerate(outputs):
        b.result(output, f"out{index}")
    return b, outputs


def _dims(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


@pytest.mark.parametrize("name", list(CASES))
def test_layer_type_matches_openvino(tmp_path: Path, name: str) -> None:
    b, outputs = _build(name)
    model = b.build()
    path = tmp_path / "model.xml"
    ir.write_model(model, path)
    theirs = openvino_core().read_model(str(path))
    assert [(o.get_element_type().get_type_name(), str(o.get_partial_shape())) for o in theirs.outputs] == [
        (b.info(ref).element_type, _dims(b.info(ref).shape)) for ref in outputs]
    again = ir.read_model(path)
    assert ir.check(again) == []
    assert ir.serialize(again) == ir.serialize(model)


def test_every_schema_type_is_exercised() -> None:
    built = set()
    for name in CASES:
        b, _ = _build(name)
        built |= {(layer.type, ir.op_version(layer.type, layer.version).since) for layer in b.build().layers}
    expected = {(layer_type, version.since) for layer_type, versions in SCHEMAS.items() for version in versions}
    assert expected - built == set()


def test_reshape_copied_dynamic_dim_cancels_in_minus_one() -> None:
    """[?,3,4,5] reshaped to [0,-1] with special_zero: the copied batch cancels, -1 = 3*4*5 (OpenVINO agrees,
    see the 'Reshape special_zero' case)."""
    b = GraphBuilder("r")
    (out,) = b.add("Reshape", "opset1", [_x(b, (-1, 3, 4, 5)), b.const(i64(0, -1))], {"special_zero": True})
    assert _dims(b.info(out).shape) == "[?,60]"
