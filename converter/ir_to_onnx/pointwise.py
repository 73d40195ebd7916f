"""Element-wise IR layers beyond arithmetic -> ONNX: Sign, Exp, Log, Erf, comparisons, logical ops, Select.

auto_broadcast numpy is ONNX's multidirectional broadcasting (and "none", equal shapes, a special case of it);
Select is ONNX Where. LessEqual and GreaterEqual need ONNX LessOrEqual/GreaterOrEqual (opset 12): Not(Greater)
would turn a NaN comparison from false into true, so older opsets are refused. NotEqual is Not(Equal), exact
for NaN too (NaN != NaN is true in both). Exp differs for NaN (OpenVINO +inf, ONNX NaN): see `exp`.
OpenVINO's Greater and GreaterEqual are true for a NaN operand (runtime/ir_ops/pointwise.py): for float inputs
they are written as Not(LessOrEqual) and Not(Less), which are too; integer and boolean inputs have no NaN.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from poolir.converter.ir_to_onnx.context import Context
from poolir.converter.ir_to_onnx.opsets import check_writes
from poolir.ir.element_types import dtype_of, is_integer
from poolir.ir.model import Layer
from poolir.runtime.onnx_ops import first_opset


def _direct(op_type: str) -> Callable[[Context, Layer], None]:
    def convert(context: Context, layer: Layer) -> None:
        # Where's type constraint is on its values (input 1); the others' on input 0.
        typed = 1 if op_type == "Where" else 0
        check_writes(context, op_type, context.input_info(layer, typed).element_type, layer.type)
        inputs = [context.input(layer, i) for i in range(len(layer.inputs))]
        context.node_into(op_type, inputs, [context.name_output(layer, 0)], layer.name)
    return convert


def exp(context: Context, layer: Layer) -> None:
    """OpenVINO's Exp gives +inf for NaN (runtime/ir_ops/pointwise.py), ONNX Exp NaN: Where(x == x, Exp(x), inf)
    keeps OpenVINO's meaning (x == x is false exactly for NaN)."""
    since = first_opset("Where")
    context.check_opset(since, f"Exp (+inf for NaN, as OpenVINO computes it) needs ONNX Where, from opset {since}")
    element_type = context.input_info(layer, 0).element_type
    check_writes(context, "Exp", element_type, layer.type)
    check_writes(context, "Equal", element_type, "Exp (+inf for NaN, as OpenVINO computes it)")
    x = context.input(layer, 0)
    dtype = dtype_of(element_type)
    (raised,) = context.node("Exp", [x], f"{layer.name}/exp")
    (number,) = context.node("Equal", [x, x], f"{layer.name}/not_nan")
    infinity = context.initializer(np.array(np.inf, dtype), f"{layer.name}/inf")
    context.node_into("Where", [number, raised, infinity], [context.name_output(layer, 0)], layer.name)


def _negated(op_type: str, direct: str) -> Callable[[Context, Layer], None]:
    """Greater as Not(LessOrEqual), GreaterEqual as Not(Less) for floats (OpenVINO's NaN rule); `direct` else."""
    direct_converter = _direct(direct)

    def convert(context: Context, layer: Layer) -> None:
        element_type = context.input_info(layer, 0).element_type
        if is_integer(element_type) or element_type == "boolean":
            direct_converter(context, layer)
            return
        check_writes(context, op_type, element_type, f"{layer.type} (true for NaN, as OpenVINO computes it)")
        inputs = [context.input(layer, 0), context.input(layer, 1)]
        (compared,) = context.node(op_type, inputs, f"{layer.name}/{op_type.lower()}")
        context.node_into("Not", [compared], [context.name_output(layer, 0)], layer.name)
    return convert


def fold_exp_keeping_nan(context: Context, layer: Layer) -> bool:
    """Select(Equal(x, x), Exp(x), x), poolir's IR for ONNX Exp (OpenVINO's Exp gives +inf for NaN), is ONNX
    Exp(x): written as one node when Exp and Equal are read by that Select only. Tried at whichever of Exp and
    Equal comes first in the order."""
    select = context.single_consumer(layer)
    if select is None or select.type != "Select":
        return False
    source = [context.producers[(select.id, port.id)] for port in select.inputs]
    by_id = {producer: context.by_id[producer[0]] for producer in source[:2]}
    equal, raised = by_id[source[0]], by_id[source[1]]
    if equal.type != "Equal" or raised.type != "Exp" or (layer is not equal and layer is not raised):
        return False
    x = source[2]
    operands = [context.producers[(equal.id, port.id)] for port in equal.inputs]
    if operands != [x, x] or context.producers[(raised.id, raised.inputs[0].id)] != x:
        return False
    other = raised if layer is equal else equal
    if context.single_consumer(other) is not select:
        return False
    context.node_into("Exp", [context.tensors[x]], [context.name_output(select, 0)], select.name)
    context.folded.update((other.id, select.id))
    return True


def not_equal(context: Context, layer: Layer) -> None:
    check_writes(context, "Equal", context.input_info(layer, 0).element_type, layer.type)
    (equal,) = context.node("Equal", [context.input(layer, 0), context.input(layer, 1)], f"{layer.name}/equal")
    context.node_into("Not", [equal], [context.name_output(layer, 0)], layer.name)


CONVERTERS: dict[str, Callable[[Context, Layer], None]] = {
    "Sign": _direct("Sign"), "Exp": exp, "Log": _direct("Log"), "Erf": _direct("Erf"),
    "Equal": _direct("Equal"), "NotEqual": not_equal, "Less": _direct("Less"),
    "Greater": _negated("LessOrEqual", "Greater"),
    "LessEqual": _direct("LessOrEqual"), "GreaterEqual": _negated("Less", "GreaterOrEqual"),
    "LogicalNot": _direct("Not"), "LogicalAnd": _direct("And"), "LogicalOr": _direct("Or"),
    "LogicalXor": _direct("Xor"), "Select": _direct("Where"), "Identity": _direct("Identity"),
}

FOLDS: dict[str, Callable[[Context, Layer], bool]] = dict.fromkeys(("Exp", "Equal"), fold_exp_keeping_nan)
