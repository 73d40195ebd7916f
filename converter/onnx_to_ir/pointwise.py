"""ONNX element-wise nodes beyond arithmetic -> IR (ir/ops/pointwise.py): Sign.

Sign is IR Sign-1: -1, 0 or 1 per element, NaN for NaN (OpenVINO 2026.4's CPU plugin gives
[nan, 0, 1, -1] for [nan, -0.0, 2, -inf], as onnxruntime does: runtime/ir_ops/pointwise.py).
"""

from __future__ import annotations

from poolir.converter.onnx_to_ir.node import OnnxNode, Value


def sign(node: OnnxNode) -> list[Value]:
    x, _ = node.checked_single_input()
    return node.layer("Sign", [x], name=node.name)


CONVERTERS = {"Sign": sign}
