"""ONNX op -> its IR converter, one registry per family, checked at import against the runtime's op table.

Every ONNX op poolir runs (runtime.onnx_ops.OP_VERSIONS) has a converter here or is listed in
NOT_CONVERTED with the reason; a converter for an op the table does not have fails too. A converter
receives every input of its node (OnnxNode) and checks its own arity, so a multi-input op is one more row.
"""

from __future__ import annotations

from typing import Callable

from poolir.converter.onnx_to_ir import (activation, convolution, elementwise, generation, matmul, movement,
                                         normalization, pointwise, pooling, rearrange, reduction, resize, scatter,
                                         transposed_convolution)
from poolir.converter.onnx_to_ir.node import OnnxNode, Value
from poolir.converter.registry import check_coverage, merge_families
from poolir.runtime.onnx_ops import OP_VERSIONS

NodeConverter = Callable[[OnnxNode], list[Value]]

CONVERTERS: dict[str, NodeConverter] = merge_families("ONNX op", {
    "pooling": pooling.CONVERTERS,
    "movement": movement.CONVERTERS,
    "convolution": convolution.CONVERTERS,
    "matmul": matmul.CONVERTERS,
    "normalization": normalization.CONVERTERS,
    "elementwise": elementwise.CONVERTERS,
    "reduction": reduction.CONVERTERS,
    "activation": activation.CONVERTERS,
    "pointwise": pointwise.CONVERTERS,
    "rearrange": rearrange.CONVERTERS,
    "transposed_convolution": transposed_convolution.CONVERTERS,
    "resize": resize.CONVERTERS,
    "generation": generation.CONVERTERS,
    "scatter": scatter.CONVERTERS,
})

# Converted by the driver itself, not by a family: If becomes the branch its constant condition takes, in its place
# (converter.onnx_to_ir.branches).
BY_THE_DRIVER = frozenset({"If"})

# Every ONNX op the runtime runs converts today.
NOT_CONVERTED: dict[str, str] = {}


def check_registry(converters: dict[str, NodeConverter] = CONVERTERS,
                   not_converted: dict[str, str] = NOT_CONVERTED) -> None:
    """Raise RegistryError naming every ONNX op without a converter or reason, or with one but no table row."""
    covered = {**converters, **{op_type: None for op_type in BY_THE_DRIVER}}
    check_coverage("ONNX op", OP_VERSIONS, covered, not_converted, "row in runtime.onnx_ops.OP_VERSIONS")


check_registry()
