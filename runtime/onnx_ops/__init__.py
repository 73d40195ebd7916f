"""ONNX operators for the reference runtime: one version table per op, one normaliser, thin adapters.

    registry       the table machinery (rows, normaliser, adapter registry, NodeContext)
    element_types  the element types rows allow, and ONNX -> numpy dtypes
    pooling        AveragePool, MaxPool, LpPool, Global*Pool
    elementwise    unary/binary/variadic arithmetic, Erf, Mod, Where, Cast/CastLike, Identity
    activation     Relu, Clip, Sigmoid, Tanh, HardSigmoid, HardSwish, LeakyRelu, Softmax, LogSoftmax, Gelu,
                   Elu, Selu, Celu, Softplus, Softsign, Mish
    movement       Pad, Transpose, Reshape, Concat, Split, Slice, Squeeze, Unsqueeze, Gather, Expand, Shape,
                   Constant, ConstantOfShape, Flatten, GatherND, Tile, DepthToSpace, SpaceToDepth
    reduction      Reduce*
    convolution    Conv
    resize         Resize, Upsample
    generation     Range
    control_flow   If (its branches run by the planning program)
    scatter        ScatterND
    transposed_convolution  ConvTranspose
    matmul         MatMul, Gemm, Einsum
    normalization  BatchNormalization, LayerNormalization, InstanceNormalization, GroupNormalization, LRN,
                   Dropout (inference only)

Importing the package registers every family's rows and adapters and checks that the two registries name
the same ops: a family that defines rows without an adapter (or the reverse) fails here, naming the op.
"""

from poolir.runtime.onnx_ops import (activation, control_flow, convolution, elementwise, generation, matmul,
                                     movement, normalization, pooling, reduction, resize, scatter,
                                     transposed_convolution)  # noqa: F401  (they register)
from poolir.runtime.onnx_ops.element_types import check_dtype, onnx_dtype
from poolir.runtime.onnx_ops.movement import constant_value
from poolir.runtime.onnx_ops.pooling import POOLING_OPS, OnnxPool, empty_max_value, global_p, onnx_pool
from poolir.runtime.onnx_ops.registry import (ADAPTERS, OP_VERSIONS, NodeContext, OnnxOpVersion, arity_problem,
                                              attribute_value, check_adapters_match_tables, first_opset, first_opset_with,
                                              normalize_attributes, op_version)

check_adapters_match_tables(OP_VERSIONS, ADAPTERS)


__all__ = ["ADAPTERS", "NodeContext", "OP_VERSIONS", "OnnxOpVersion", "OnnxPool", "POOLING_OPS", "arity_problem",
           "attribute_value", "check_dtype", "constant_value", "empty_max_value", "first_opset", "first_opset_with",
           "global_p", "normalize_attributes", "onnx_dtype", "onnx_pool", "op_version"]
