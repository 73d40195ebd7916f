"""ONNX data-movement nodes -> IR: ops that pass a tensor on or rearrange it without arithmetic.

Identity is the one converted so far: it becomes no layer, its output is its input's IR tensor (the
driver gives a graph output that is also a graph input, or a second name of one tensor, its own copy).
"""

from __future__ import annotations

from poolir.converter.onnx_to_ir.node import OnnxNode, Value


def identity(node: OnnxNode) -> list[Value]:
    return [node.single_input()]


CONVERTERS = {"Identity": identity}
