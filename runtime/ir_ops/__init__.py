"""IR layer types -> kernel bindings, what OpenVINO computes for each layer.

    registry     the builder registry (layer type -> builder), its check against ir.schema, operand readers
    pooling      AvgPool, MaxPool (OpenVINO's pooling rules, pinned against OpenVINO)
    elementwise  Add, Subtract, Multiply, Divide, FloorMod, Maximum, Minimum, Power, Abs, Floor, Sqrt,
                 Convert, ConvertLike
    movement     Reshape, Squeeze, Unsqueeze, Concat, Split, VariadicSplit, Transpose, Slice, StridedSlice,
                 Gather, ShapeOf, Broadcast, Pad
    reduction    ReduceMean, ReduceMax, ReduceMin, ReduceSum, ReduceProd, ReduceL1, ReduceL2
    convolution  Convolution, GroupConvolution
    transposed_convolution  ConvolutionBackpropData, GroupConvolutionBackpropData
    matmul       MatMul, Einsum-7
    normalization  BatchNormInference (both input orders), LRN (OpenVINO's window, scaling and bias), MVN,
                   GroupNormalization
    activation   ReLU, Clamp, Sigmoid, Tanh, HardSigmoid, HSigmoid, HSwish, Swish, PReLU, SoftMax, LogSoftmax,
                 Gelu, Elu, Selu, SoftPlus, SoftSign, Mish
    pointwise    Sign, Negative, Exp, Log, Erf, comparisons, logical ops, Select
    rearrange    ShuffleChannels, GatherND-5/8, Tile, DepthToSpace, SpaceToDepth, Roll-7
    resize       Interpolate-4/11
    generation   Range-1/4
    scatter      ScatterNDUpdate-3/15
    attention    ScaledDotProductAttention-13

Importing the package registers every family's builders and checks them against the IR schema registry
(`poolir.ir.schema.SCHEMAS`): a layer type with a schema but no builder, or a builder without a schema,
fails here, naming the type.
"""

from poolir.ir.schema import SCHEMAS
from poolir.runtime.ir_ops import (activation, attention, convolution, elementwise, generation, matmul, movement,
                                   normalization, pointwise, pooling, rearrange, reduction, resize, scatter,
                                   transposed_convolution)  # noqa: F401  (they register)
from poolir.runtime.ir_ops.pooling import AvgPoolOp, MaxPoolOp, openvino_max_floor
from poolir.runtime.ir_ops.registry import BUILDERS, check_builders_match_schemas, supported_layer_types

check_builders_match_schemas(BUILDERS, SCHEMAS)

__all__ = ["AvgPoolOp", "BUILDERS", "MaxPoolOp", "openvino_max_floor", "supported_layer_types"]
