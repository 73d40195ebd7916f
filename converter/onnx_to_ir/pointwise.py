"""ONNX element-wise nodes beyond arithmetic -> IR (ir/ops/pointwise.py): Sign, Exp, Log, Erf, the comparisons
Equal, Less, Greater, LessOrEqual, GreaterOrEqual, the logical Not, And, Or, Xor, and Where.

ONNX broadcasting (multidirectional, from opset 7; Where from 9) is IR auto_broadcast "numpy". Comparisons
give boolean; Not/And/Or/Xor take and give boolean; Where's condition is boolean (IR Select's too).

Where ONNX and OpenVINO give one name two meanings (measured with OpenVINO 2026.4's CPU plugin, f32
inference precision; pinned by tests/converter/test_onnx_to_ir_pointwise.py):

- Sign: -1, 0 or 1, NaN for NaN (OpenVINO gives [nan, 0, 1, -1] for [nan, -0.0, 2, -inf], as onnxruntime
  does for f32; onnxruntime 1.31 gives 0 for a float16 NaN, and the spec says nothing of NaN).
- Exp: OpenVINO's Exp gives +inf for NaN, ONNX NaN; poolir writes Select(Equal(x, x), Exp(x), x), which
  keeps every other value and passes NaN through. Log is IEEE's log in both (NaN below 0, -inf at 0).
- Erf -> Erf-1: the same function (NaN stays NaN in both); OpenVINO's CPU plugin approximates it to 4.8e-7
  (runtime/ir_ops/pointwise.py).
- Greater and GreaterEqual: the CPU plugin computes not(a <= b) and not(a < b), so a NaN operand gives true
  (IEEE and ONNX: false). Less and LessEqual give false for NaN, as ONNX does, so ONNX Greater(a, b) is
  written as IR Less(b, a) and GreaterOrEqual(a, b) as LessEqual(b, a): exact for every input.
- Integer comparisons: the CPU plugin compares i32 (and i64, which it computes in i32) in f32, so integers
  beyond 2^24 that differ can compare equal (Equal(16777217, 16777216) is true). The IR spec compares
  exactly and poolir's IR runtime follows the spec; a converted model agrees for |values| <= 2^24.
"""

from __future__ import annotations

from poolir.converter.onnx_to_ir.node import OnnxNode, Value
from poolir.ir.element_types import is_integer
from poolir.ir.errors import InvalidModelError, UnsupportedError

# ONNX comparison -> (IR layer, whether the operands are swapped): see the module docstring for Greater.
_COMPARISONS = {"Equal": ("Equal", False), "Less": ("Less", False), "LessOrEqual": ("LessEqual", False),
                "Greater": ("Less", True), "GreaterOrEqual": ("LessEqual", True)}
_LOGICAL = {"And": "LogicalAnd", "Or": "LogicalOr", "Xor": "LogicalXor"}
_NUMPY = {"auto_broadcast": "numpy"}


def check_float(node: OnnxNode, x: Value) -> None:
    """Refuse a non-float input of an op ONNX defines for floating-point types only (Exp, Log, ...)."""
    if is_integer(x.element_type) or x.element_type == "boolean":
        raise UnsupportedError(f"{node.version.label} is defined for floating-point inputs, got {x.element_type}")


def _check_boolean(node: OnnxNode, values: list[Value]) -> None:
    for index, value in enumerate(values):
        if value.element_type != "boolean":
            raise InvalidModelError(f"input {index} of {node.version.label} must be bool, got {value.element_type}")


def _same_type(node: OnnxNode, a: Value, b: Value, what: str = "inputs") -> None:
    if a.element_type != b.element_type:
        raise InvalidModelError(f"{node.version.label} {what} have different element types "
                                f"({a.element_type}, {b.element_type})")


def exp_keeping_nan(node: OnnxNode, x: Value, name: str) -> Value:
    """ONNX Exp in IR: Select(Equal(x, x), Exp(x), x), since OpenVINO's Exp turns NaN into +inf."""
    (raised,) = node.layer("Exp", [x], name=f"{name}/exp")
    (number,) = node.layer("Equal", [x, x], _NUMPY, name=f"{name}/not_nan")
    return node.layer("Select", [number, raised, x], _NUMPY, name=name)[0]


def sign(node: OnnxNode) -> list[Value]:
    x, _ = node.checked_single_input()
    if x.element_type == "boolean":
        raise InvalidModelError(f"{node.version.label} is defined for numbers, got boolean")
    return node.layer("Sign", [x], name=node.name)


def exp(node: OnnxNode) -> list[Value]:
    x, _ = node.checked_single_input()
    check_float(node, x)
    return [exp_keeping_nan(node, x, node.name)]


def log(node: OnnxNode) -> list[Value]:
    x, _ = node.checked_single_input()
    check_float(node, x)
    return node.layer("Log", [x], name=node.name)


def erf(node: OnnxNode) -> list[Value]:
    x, _ = node.checked_single_input()
    check_float(node, x)
    return node.layer("Erf", [x], name=node.name)


def compare(node: OnnxNode) -> list[Value]:
    node.attributes()
    a, b = node.checked_inputs(2, 2)
    _same_type(node, a, b)
    layer_type, swapped = _COMPARISONS[node.version.op_type]
    if layer_type != "Equal" and a.element_type == "boolean":
        raise InvalidModelError(f"{node.version.label} is defined for numbers, got boolean")
    return node.layer(layer_type, [b, a] if swapped else [a, b], _NUMPY, name=node.name)


def logical_not(node: OnnxNode) -> list[Value]:
    x, _ = node.checked_single_input()
    _check_boolean(node, [x])
    return node.layer("LogicalNot", [x], name=node.name)


def logical(node: OnnxNode) -> list[Value]:
    node.attributes()
    inputs = node.checked_inputs(2, 2)
    _check_boolean(node, inputs)
    return node.layer(_LOGICAL[node.version.op_type], inputs, _NUMPY, name=node.name)


def where(node: OnnxNode) -> list[Value]:
    node.attributes()
    condition, then, other = node.checked_inputs(3, 3)
    _check_boolean(node, [condition])
    _same_type(node, then, other, "inputs X and Y")
    return node.layer("Select", [condition, then, other], _NUMPY, name=node.name)


CONVERTERS = {
    "Sign": sign, "Exp": exp, "Log": log, "Erf": erf, **dict.fromkeys(_COMPARISONS, compare), "Not": logical_not,
    **dict.fromkeys(_LOGICAL, logical), "Where": where,
}
