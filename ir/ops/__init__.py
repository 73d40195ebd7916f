"""IR operator families: each module holds one family's schema rows and shape rules.

    io           Parameter, Const, Result
    pooling      AvgPool, MaxPool (OpenVINO's pooling shape rules, pool_windows_of)
    elementwise  Add .. Power, Abs, Sqrt, Floor, Convert, ConvertLike
    movement     Reshape, Squeeze, Unsqueeze, Concat, Split, VariadicSplit, Transpose, ShapeOf, Broadcast, Pad
    indexing     Slice, StridedSlice, Gather
    reduction    ReduceMean, ReduceMax, ReduceMin, ReduceSum, ReduceProd, ReduceL1, ReduceL2
    convolution  Convolution, GroupConvolution
    transposed_convolution  ConvolutionBackpropData, GroupConvolutionBackpropData
    matmul       MatMul, Einsum
    normalization  BatchNormInference, LRN, MVN, GroupNormalization
    activation   ReLU, Clamp, Sigmoid, Tanh, HardSigmoid, HSigmoid, HSwish, Swish, PReLU, SoftMax, LogSoftmax,
                 Gelu, Elu, Selu, SoftPlus, SoftSign, Mish
    pointwise    Sign, Negative, Exp, Log, Erf, comparisons, LogicalNot/And/Or/Xor, Select
    rearrange    ShuffleChannels, GatherND, Tile, DepthToSpace, SpaceToDepth, Roll
    generation   Range
    scatter      ScatterNDUpdate
    attention    ScaledDotProductAttention

A family module declares SCHEMA_ROWS (ir.attributes.OpVersion rows) and SHAPE_RULES (an
ir.registry.ShapeRules). Adding a family is: write ir/ops/<family>.py, add it to FAMILIES. At import,
SCHEMAS and SHAPE_RULES are built from every family and checked against each other (ir.registry):
a duplicate row or rule, or a layer type with a schema but no rule (or the reverse), fails with its name.
"""

from __future__ import annotations

from types import ModuleType

from poolir.ir.attributes import OpVersion
from poolir.ir.ops import (activation, attention, convolution, elementwise, generation, indexing, io, matmul, movement,
                           normalization, pointwise, pooling, rearrange, reduction, resize, scatter,
                           transposed_convolution)
from poolir.ir.registry import ShapeRule, check_coverage, index_schema_rows, merge_shape_rules

FAMILIES: tuple[ModuleType, ...] = (io, pooling, elementwise, movement, indexing, reduction, convolution, matmul,
                                    normalization, activation, pointwise, rearrange, resize, transposed_convolution,
                                    generation, scatter, attention)

# layer type -> its op versions, oldest first
SCHEMAS: dict[str, tuple[OpVersion, ...]] = index_schema_rows(row for family in FAMILIES for row in family.SCHEMA_ROWS)
# layer type -> its shape rule
SHAPE_RULES: dict[str, ShapeRule] = merge_shape_rules(family.SHAPE_RULES for family in FAMILIES)
check_coverage(SCHEMAS, SHAPE_RULES)
