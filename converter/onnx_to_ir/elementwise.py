"""ONNX elementwise nodes -> IR: arithmetic (unary, binary, variadic), Mod, Cast and CastLike.

ONNX broadcasting from opset 7 is multidirectional (numpy's), which is IR auto_broadcast "numpy"; the
rows before opset 7 (broadcast/axis attributes) are not in the runtime's table, so they never get here.

Where ONNX and OpenVINO give one name two meanings (evidence: tests/converter/test_onnx_to_ir_elementwise.py,
which runs each case in onnxruntime and in OpenVINO 2026.4 on CPU):

- Integer Div: ONNX truncates toward zero (onnxruntime, i32 [-7, 7] / [2, -2] -> [-3, -3]); OpenVINO Divide
  floors by default (m_pythondiv=true: its spec and its constant folding give [-4, -4]). poolir writes
  m_pythondiv=false, which truncates in the spec, the reference and the CPU plugin alike.
- Integer Pow: onnxruntime computes std::pow in double and truncates (2 ** -1 -> 0; a result outside the type,
  or 0 ** -1, gives its minimum); OpenVINO's CPU plugin computes in float32 (i64 as i32), so the two agree on
  i32 results up to 2**24 and past int32, and differ by float32 rounding between (as integer Divide does).
- Mod: fmod=0 takes the divisor's sign (Python's %), which is IR FloorMod for integers. For floats (allowed
  with fmod=0 by the newest spec) OpenVINO's FloorMod differs at infinities and signed zeros (the onnx backend
  case test_mod_float_edge_cases_fmod_0_float32: ONNX [-0, 0, 0, -0, inf, 3, -1, -inf, nan...], OpenVINO
  [0, 0, 0, 0, nan, nan, nan, nan, nan...]), so float Mod is refused. fmod=1 is C's
  fmod (the dividend's sign): for integers a - trunc(a / b) * b with Divide m_pythondiv=false; for floats
  poolir's IR has no Mod layer and a - trunc(a / b) * b is not exact, so it is refused.
- Cast: OpenVINO's Convert does what onnxruntime's Cast does (measured, CPU): float -> integer truncates
  toward zero ([-1.7, 1.5, 2.5, -0.5] -> [-1, 1, 2, 0]); integer -> narrower integer wraps (i32 300 -> u8 44,
  -129 -> i8 127); f32 7e4 -> f16 inf. Out-of-range float -> integer is undefined in ONNX. One difference
  is not Convert's: the CPU plugin computes i64 in i32, so f32 3e9 -> i64 gives -2147483648 in OpenVINO and
  3000000000 in onnxruntime (any i64 value beyond the i32 range is affected, on every layer); poolir's IR
  runtime follows the spec's i64.
- Cast to bool becomes NotEqual(x, 0): OpenVINO's CPU Convert to boolean gives False for NaN and for i32
  -2147483648 (ONNX: True), its NotEqual does not.
- i8/u8 Add, Sub, Mul, Div and i8 Abs wrap in ONNX (onnxruntime: i8 127 + 1 = -128, 100 * 3 = 44, |-128| =
  -128); OpenVINO's CPU plugin saturates them (127). poolir computes them in i32 (where no i8/u8 result
  overflows) and Converts back, which wraps as Cast does (below).
- Max and Min propagate NaN (onnxruntime); OpenVINO's Maximum and Minimum give the second operand where either
  is NaN: the conversion is exact for inputs without NaN (as for Relu and Clip).
- Neg becomes Multiply by -1, Reciprocal Divide(1, x), Ceil -Floor(-x): each exact in IEEE arithmetic
  (and for integers Neg's wrap of the lowest value is Multiply's wrap too).
- Mean of n inputs: the Add chain, then Divide by n (onnxruntime sums, then divides).
"""

from __future__ import annotations

import numpy as np

from poolir.converter.element_types import ir_element_type
from poolir.converter.onnx_to_ir.node import OnnxNode, Value
from poolir.ir.element_types import OPENVINO_SATURATED_TYPES, dtype_of
from poolir.ir.errors import ConversionError, InvalidModelError, UnsupportedError

_BINARY = {"Add": "Add", "Sub": "Subtract", "Mul": "Multiply", "Div": "Divide", "Pow": "Power",
           "Max": "Maximum", "Min": "Minimum", "Sum": "Add", "Mean": "Add"}
_UNARY = {"Abs": "Abs", "Sqrt": "Sqrt", "Floor": "Floor"}
def _is_integer(element_type: str) -> bool:
    return bool(np.issubdtype(dtype_of(element_type), np.integer))




def _binary_layer(node: OnnxNode, layer_type: str, a: Value, b: Value, name: str | None = None,
                  extra: dict | None = None) -> Value:
    if a.element_type != b.element_type:
        raise InvalidModelError(f"{node.version.label} inputs have different element types "
                                f"({a.element_type}, {b.element_type})")
    attrs = {"auto_broadcast": "numpy", **(extra or {})}
    name = name or node.name
    if a.element_type in OPENVINO_SATURATED_TYPES and layer_type in ("Add", "Subtract", "Multiply", "Divide"):
        wide = [_convert_to(node, x, "i32", f"{name}/{side}_i32") for side, x in (("a", a), ("b", b))]
        result = node.layer(layer_type, wide, attrs, name=f"{name}/i32")[0]
        return _convert_to(node, result, a.element_type, name)  # wraps into i8/u8, as ONNX's arithmetic
    return node.layer(layer_type, [a, b], attrs, name=name)[0]


def _convert_to(node: OnnxNode, x: Value, target: str, name: str) -> Value:
    (ref,) = node.add("Convert", [x.ref], {"destination_type": target}, name=name)
    return Value(ref, target, x.shape)


def _scalar(node: OnnxNode, value, like: Value) -> Value:
    return Value(node.const(np.asarray(value, dtype=dtype_of(like.element_type))), like.element_type, ())


def unary(node: OnnxNode) -> list[Value]:
    """Abs, Sqrt, Floor: one IR layer each."""
    x = node.single_input()
    node.check_element_type(x)  # Sqrt and Floor: floats only (the runtime's rows)
    node.attributes()
    if x.element_type == "i8" and node.version.op_type == "Abs":  # |-128| wraps to -128 in ONNX, saturates in IR
        (wide,) = node.add("Abs", [_convert_to(node, x, "i32", f"{node.name}/i32").ref], name=f"{node.name}/abs")
        return [_convert_to(node, Value(wide, "i32", x.shape), "i8", node.name)]
    (ref,) = node.add(_UNARY[node.version.op_type], [x.ref], name=node.name)
    return [Value(ref, x.element_type, x.shape)]


def neg(node: OnnxNode) -> list[Value]:
    """Neg -> Multiply(x, -1): exact for floats (signed zero and NaN included) and wraps like ONNX for ints."""
    x = node.single_input()
    node.attributes()
    if np.issubdtype(dtype_of(x.element_type), np.unsignedinteger):
        raise UnsupportedError(f"{node.version.label} is defined for signed types, got {x.element_type}")
    return [_binary_layer(node, "Multiply", x, _scalar(node, -1, x))]


def reciprocal(node: OnnxNode) -> list[Value]:
    """Reciprocal -> Divide(1, x), one correctly rounded IEEE division."""
    x = node.single_input()
    node.check_element_type(x)
    node.attributes()
    return [_binary_layer(node, "Divide", _scalar(node, 1, x), x)]


def ceil(node: OnnxNode) -> list[Value]:
    """Ceil -> -Floor(-x): negation is exact, so this is ceil for every float (and keeps -0.0 for x in (-1, 0])."""
    x = node.single_input()
    node.check_element_type(x)
    node.attributes()
    minus = _scalar(node, -1, x)
    negated = _binary_layer(node, "Multiply", x, minus, name=f"{node.name}/negate")
    (floored,) = node.add("Floor", [negated.ref], name=f"{node.name}/floor")
    return [_binary_layer(node, "Multiply", Value(floored, x.element_type, x.shape), minus)]


def binary(node: OnnxNode) -> list[Value]:
    """Add, Sub, Mul, Div, Pow: one IR layer, numpy broadcasting."""
    node.attributes()
    a, b = node.checked_inputs(2, 2)
    op_type = node.version.op_type
    extra = {}
    if op_type == "Div" and _is_integer(a.element_type):
        extra["m_pythondiv"] = False  # ONNX truncates an integer quotient (module docstring)
    if op_type == "Pow" and a.element_type != b.element_type:
        # Pow-12+ lets the exponent have its own type; IR Power takes one type.
        if _is_integer(a.element_type):
            raise UnsupportedError(f"Pow of {a.element_type} by a {b.element_type} exponent: IR Power takes one "
                                   "element type, and converting a fractional exponent to an integer changes it")
        exponent = node.builder.constant_value(b.ref)
        if exponent is not None and not _is_integer(b.element_type):
            # A constant exponent that the base's type holds exactly (x ** 2.0 in f16) converts without rounding.
            narrowed = exponent.astype(dtype_of(a.element_type))
            if np.array_equal(narrowed.astype(exponent.dtype), exponent):
                b = Value(node.const(narrowed, a.element_type), a.element_type, b.shape)
        if b.element_type != a.element_type:
            if not _is_integer(b.element_type):
                raise UnsupportedError(f"Pow of {a.element_type} by a {b.element_type} exponent: converting the "
                                       "exponent would round it")
            (converted,) = node.add("ConvertLike", [b.ref, a.ref], name=f"{node.name}/exponent")
            b = Value(converted, a.element_type, b.shape)
    return [_binary_layer(node, _BINARY[op_type], a, b, extra=extra)]


def variadic(node: OnnxNode) -> list[Value]:
    """Max, Min, Sum, Mean of one or more inputs: a left-to-right chain of binary layers (Mean then divides
    by the count)."""
    node.attributes()
    inputs = node.checked_inputs(1, None)
    op_type = node.version.op_type
    layer_type = _BINARY[op_type]
    if len(inputs) == 1 and op_type != "Mean":
        return [inputs[0]]  # the driver copies it if it is a graph input that is also an output
    result = inputs[0]
    last = len(inputs) - 1 if op_type != "Mean" else len(inputs)
    for index, x in enumerate(inputs[1:], start=1):
        name = node.name if index == last else f"{node.name}/{index}"
        result = _binary_layer(node, layer_type, result, x, name=name)
    if op_type == "Mean":
        if _is_integer(result.element_type):
            raise UnsupportedError(f"{node.version.label} is defined for floating-point inputs, "
                                   f"got {result.element_type}")
        result = _binary_layer(node, "Divide", result, _scalar(node, len(inputs), result))
    return [result]


def mod(node: OnnxNode) -> list[Value]:
    attrs = node.attributes()
    a, b = node.checked_inputs(2, 2)
    fmod = attrs.get("fmod", 0)
    if fmod not in (0, 1):
        raise InvalidModelError(f"attribute 'fmod' = {fmod}: must be 0 or 1")
    if not _is_integer(a.element_type):
        if not fmod:
            raise ConversionError("floating-point Mod with fmod=0: OpenVINO's FloorMod differs from it at infinities "
                                  "and signed zeros (3 mod inf: ONNX 3, OpenVINO NaN; -0 mod 2: -0 and 0)")
        raise ConversionError("floating-point Mod (C fmod) has no IR layer in poolir, and a - trunc(a / b) * b "
                              "is not exact")
    if not fmod:
        return [_binary_layer(node, "FloorMod", a, b)]
    quotient = _binary_layer(node, "Divide", a, b, name=f"{node.name}/quotient", extra={"m_pythondiv": False})
    product = _binary_layer(node, "Multiply", quotient, b, name=f"{node.name}/product")
    return [_binary_layer(node, "Subtract", a, product)]


def _convert(node: OnnxNode, x: Value, target: str, like: Value | None = None) -> list[Value]:
    if target == "boolean" and x.element_type != "boolean":
        # ONNX: "all else to True", NaN and INT32_MIN included; OpenVINO's CPU Convert gives False for both
        # (runtime/ir_ops/elementwise.py), its NotEqual(x, 0) True.
        return [_binary_layer(node, "NotEqual", x, _scalar(node, 0, x))]
    if like is not None:
        (ref,) = node.add("ConvertLike", [x.ref, like.ref], name=node.name)
    else:
        (ref,) = node.add("Convert", [x.ref], {"destination_type": target}, name=node.name)
    return [Value(ref, target, x.shape)]


def cast(node: OnnxNode) -> list[Value]:
    x = node.single_input()
    attrs = node.attributes()
    target = ir_element_type(attrs["to"], "Cast's 'to'")
    return _convert(node, x, target)


def cast_like(node: OnnxNode) -> list[Value]:
    node.attributes()
    x, like = node.checked_inputs(2, 2)
    return _convert(node, x, like.element_type, like)


CONVERTERS = {
    **dict.fromkeys(_UNARY, unary),
    "Neg": neg, "Reciprocal": reciprocal, "Ceil": ceil,
    **dict.fromkeys(("Add", "Sub", "Mul", "Div", "Pow"), binary),
    **dict.fromkeys(("Max", "Min", "Sum", "Mean"), variadic),
    "Mod": mod, "Cast": cast, "CastLike": cast_like,
}
