"""IR -> ONNX: an ONNX model whose meaning *as the ONNX specs define it* equals OpenVINO's result for the IR.

Each layer maps to the ONNX op of the same meaning, to an exact rewrite, or is refused with a
ConversionError naming the layer and the reason.

    driver.py         ir_to_onnx(): the layers in order, folds first; the graph's inputs and outputs
    context.py        the ONNX graph being written, and what a converter may ask about a layer
    opsets.py         the opsets poolir writes; version facts asked of the runtime's op table
    registry.py       IR layer type -> converter, per family; the folds
    io.py             Parameter, Const, Result
    pooling.py        MaxPool, AvgPool; LpPool decomposition and Global pools folded back
    pool_windows.py   the ONNX pads, ceil_mode and count_include_pad giving OpenVINO's windows
    elementwise.py    arithmetic, integer division and modulo, conversions
    movement.py       reshape, concat, split, transpose, squeeze, pad, shape, gather, slice, broadcast
    reduction.py      Reduce*
    activation.py     ReLU, Clamp, Sigmoid, Tanh, HardSigmoid, HSigmoid, HSwish, Swish, PReLU, SoftMax, LogSoftmax,
                      Gelu, Elu, Selu, SoftPlus, SoftSign, Mish
    normalization.py  BatchNormInference (both input orders), LRN (OpenVINO's window and bias carried over), MVN,
                      GroupNormalization
"""

from poolir.converter.element_types import ONNX_ELEMENT_TYPES
from poolir.converter.ir_to_onnx.driver import ir_to_onnx
from poolir.converter.ir_to_onnx.opsets import (NEWEST_WRITTEN_OPSET, OLDEST_WRITTEN_OPSET, ONNX_IR_VERSION,
                                                WRITABLE_OPSETS)

__all__ = ["NEWEST_WRITTEN_OPSET", "OLDEST_WRITTEN_OPSET", "ONNX_ELEMENT_TYPES", "ONNX_IR_VERSION", "WRITABLE_OPSETS",
           "ir_to_onnx"]
