"""ONNX -> IR: an IR model whose meaning, as OpenVINO executes it, equals the ONNX model's meaning.

    driver.py            onnx_to_ir(): graph inputs, initializers and outputs; one converter per node
    node.py              what a converter receives (OnnxNode) and how it adds layers (versions from ir.schema)
    registry.py          ONNX op -> converter, per family; the ops not converted, with the reason
    pooling.py           AveragePool, MaxPool, LpPool, Global*Pool (and OpenVINO's pooling facts)
    pool_windows.py      the IR pads and rounding that give ONNX's windows
    max_pool_indices.py  storage_order=1 indices by index arithmetic
    activation.py        Relu, Clip, Sigmoid, Tanh, HardSigmoid, HardSwish, LeakyRelu, PRelu, Softmax, LogSoftmax,
                         Gelu, Elu, Selu, Celu, Softplus, Softsign, Mish
    elementwise.py       arithmetic, Mod, Cast/CastLike (and where ONNX and OpenVINO differ on them)
    movement.py          Identity, Transpose, Reshape, Concat, Split, Slice, Squeeze, Unsqueeze, Gather, Shape,
                         Expand, Pad, Constant, ConstantOfShape
    normalization.py     BatchNormalization, LayerNormalization, InstanceNormalization, GroupNormalization, LRN,
                         Dropout (OpenVINO's LRN window and bias)
    computed_bounds.py   Slice axes and Pad pads computed at run time
    reduction.py         Reduce*
"""

from poolir.converter.element_types import IR_ELEMENT_TYPES
from poolir.converter.onnx_to_ir.driver import onnx_to_ir

__all__ = ["IR_ELEMENT_TYPES", "onnx_to_ir"]
