"""Element-wise IR layers beyond arithmetic -> ONNX: Sign, Negative, Exp, Log, comparisons, logical ops, Select.

auto_broadcast numpy is ONNX's multidirectional broadcasting (and "none", equal shapes, a special case of it);
Select is ONNX Where. LessEqual and GreaterEqual need ONNX LessOrEqual/GreaterOrEqual (opset 12): Not(Greater)
would turn a NaN comparison from false into true, so older opsets are refused. NotEqual is Not(Equal), exact
for NaN too (NaN != NaN is true in both).
"""

from __future__ import annotations

from typing import Callable

from poolir.converter.ir_to_onnx.context import Context
from poolir.ir.model import Layer
from poolir.runtime.onnx_ops import first_opset


def _direct(op_type: str) -> Callable[[Context, Layer], None]:
    def convert(context: Context, layer: Layer) -> None:
        since = first_opset(op_type)
        context.check_opset(since, f"{layer.type} needs ONNX {op_type}, from opset {since}")
        inputs = [context.input(layer, i) for i in range(len(layer.inputs))]
        context.node_into(op_type, inputs, [context.name_output(layer, 0)], layer.name)
    return convert


def not_equal(context: Context, layer: Layer) -> None:
    (equal,) = context.node("Equal", [context.input(layer, 0), context.input(layer, 1)], f"{layer.name}/equal")
    context.node_into("Not", [equal], [context.name_output(layer, 0)], layer.name)


CONVERTERS: dict[str, Callable[[Context, Layer], None]] = {
    "Sign": _direct("Sign"), "Negative": _direct("Neg"), "Exp": _direct("Exp"), "Log": _direct("Log"),
    "Equal": _direct("Equal"), "NotEqual": not_equal, "Less": _direct("Less"), "Greater": _direct("Greater"),
    "LessEqual": _direct("LessOrEqual"), "GreaterEqual": _direct("GreaterOrEqual"),
    "LogicalNot": _direct("Not"), "LogicalAnd": _direct("And"), "LogicalOr": _direct("Or"),
    "LogicalXor": _direct("Xor"), "Select": _direct("Where"),
}
