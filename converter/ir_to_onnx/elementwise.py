"""Element-wise IR layers -> ONNX: unary and binary arithmetic, integer division and modulo, conversions.

auto_broadcast numpy is ONNX's multidirectional broadcasting; "none" needs equal shapes, a special case of it.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from onnx import TensorProto

from poolir.converter.element_types import onnx_element_type
from poolir.converter.ir_to_onnx.context import Context
from poolir.converter.ir_to_onnx.opsets import check_writes, first_opset_accepting
from poolir.ir.element_types import OPENVINO_SATURATED_TYPES, dtype_of, openvino_narrow_arithmetic
from poolir.ir.float_to_integer import openvino_float_to_integer
from poolir.ir.errors import ConversionError
from poolir.ir.model import Layer
from poolir.runtime.onnx_ops import first_opset


def _unary(op_type: str) -> Callable[[Context, Layer], None]:
    def convert(context: Context, layer: Layer) -> None:
        element_type = context.input_info(layer, 0).element_type
        check_writes(context, op_type, element_type, layer.type)
        source = context.input(layer, 0)
        if op_type in ("Abs", "Neg") and element_type == "i8":
            # OpenVINO saturates |-128| and -(-128) to 127 (runtime.kernels.elementwise.openvino_cpu_integer_unary);
            # ONNX wraps them to -128. Raising the input to -127 first keeps OpenVINO's meaning.
            check_writes(context, "Clip", element_type, f"{layer.type} of i8 (127 for -128, as OpenVINO computes it)")
            floor = context.initializer(np.array(-127, np.int8), f"{layer.name}/floor")
            (source,) = context.node("Clip", [source, floor], f"{layer.name}/saturate")
        context.node_into(op_type, [source], [context.name_output(layer, 0)], layer.name)
    return convert


def _rounding(op_type: str) -> Callable[[Context, Layer], None]:
    """Floor and Ceiling: ONNX Floor and Ceil of floats. An integer (PyTorch's frontend writes a Floor after an
    integer Divide) is its own floor, but OpenVINO's CPU plugin takes i32/i64 through float32, which rounds past
    2**24 (16777217 -> 16777216; 2**31 - 1 -> INT32_MIN): Cast to float32 and back through int32, as poolir's IR
    runtime computes it (runtime.kernels.elementwise.openvino_cpu_integer_unary); i8/u8 are exact there."""
    def convert(context: Context, layer: Layer) -> None:
        element_type = context.input_info(layer, 0).element_type
        source, output = context.input(layer, 0), context.name_output(layer, 0)
        if not _is_integer(element_type):
            context.node_into(op_type, [source], [output], layer.name)
        elif element_type in ("i32", "i64"):
            (value,) = context.node("Cast", [source], f"{layer.name}/f32", to=TensorProto.FLOAT)
            _truncated_back(context, layer, value, output)
        else:
            context.node_into("Identity", [source], [output], layer.name)
    return convert


def _saturates(context: Context, layer: Layer) -> bool:
    """Whether OpenVINO's CPU plugin saturates this i8/u8 layer: it computes in int32 and saturates on run-time
    inputs (runtime/ir_ops/elementwise.py: u8 3 - 5 -> 0, i8 100 * 100 -> 127), where ONNX wraps; a layer it folds
    (every input known when compiling) gets the reference implementation, which wraps as ONNX does."""
    return (context.input_info(layer, 0).element_type in OPENVINO_SATURATED_TYPES
            and any(context.constant(layer, i) is None for i in range(len(layer.inputs))))


def _in_int32_saturated(context: Context, layer: Layer, op_type: str, **attributes) -> None:
    """`op_type` of two i8/u8 inputs as OpenVINO's CPU plugin computes it: in int32 (exact for Add, Sub and Mul of
    8-bit values; Div truncates in both), clipped to the type and cast back."""
    element_type = context.input_info(layer, 0).element_type
    what = f"{layer.type} of {element_type} (saturated, as OpenVINO's CPU plugin computes it)"
    check_writes(context, op_type, "i32", what)
    check_writes(context, "Clip", "i32", what)
    base = layer.name
    wide = [context.node("Cast", [context.input(layer, i)], f"{base}/i32_{i}", to=TensorProto.INT32)[0]
            for i in range(2)]
    negated, in_int16 = openvino_narrow_arithmetic(layer.type, dtype_of(element_type), context.on_dynamic_path(layer))
    if negated:  # a + min(-b, 127)
        (wide[1],) = context.node("Clip", [wide[1], context.initializer(np.array(-127, np.int32), f"{base}/-127")],
                                  f"{base}/negatable")
    (result,) = context.node(op_type, wide, f"{base}/wide", **attributes)
    if in_int16:  # ((p + 2**15) mod 2**16) - 2**15
        check_writes(context, "Mod", "i32", what)
        half, whole = (context.initializer(np.array(v, np.int32), f"{base}/{v}") for v in (2 ** 15, 2 ** 16))
        (result,) = context.node("Add", [result, half], f"{base}/shifted")
        (result,) = context.node("Mod", [result, whole], f"{base}/wrapped")
        (result,) = context.node("Sub", [result, half], f"{base}/in_int16")
    limits = np.iinfo(dtype_of(element_type))
    bounds = [context.initializer(np.array(v, np.int32), f"{base}/{name}")
              for v, name in ((limits.min, "min"), (limits.max, "max"))]
    (clipped,) = context.node("Clip", [result, *bounds], f"{base}/saturated")
    context.node_into("Cast", [clipped], [context.name_output(layer, 0)], base, to=onnx_element_type(element_type))


def _binary(op_type: str) -> Callable[[Context, Layer], None]:
    def convert(context: Context, layer: Layer) -> None:
        if op_type in ("Add", "Sub", "Mul") and _saturates(context, layer):
            _in_int32_saturated(context, layer, op_type)
            return
        check_writes(context, op_type, context.input_info(layer, 0).element_type, layer.type)
        context.node_into(op_type, [context.input(layer, 0), context.input(layer, 1)], [context.name_output(layer, 0)],
                          layer.name)
    return convert


def _select_by(comparison: str, op_type: str) -> Callable[[Context, Layer], None]:
    """Maximum as Where(Greater(a, b), a, b), Minimum with Less, for floats: OpenVINO gives b where either is NaN
    (runtime/ir_ops/elementwise.py), ONNX Max and Min NaN; comparisons with NaN are false in both worlds. Integers
    take ONNX Max and Min where the opset's version takes their type (from 12), the same select before."""
    direct = _binary(op_type)

    def convert(context: Context, layer: Layer) -> None:
        element_type = context.input_info(layer, 0).element_type
        integer = _is_integer(element_type)
        if integer and (first_opset_accepting(op_type, dtype_of(element_type)) or math.inf) <= context.opset:
            direct(context, layer)
            return
        what = f"{layer.type} of {element_type}" if integer else \
            f"{layer.type} (b where either is NaN, as OpenVINO computes it)"
        check_writes(context, comparison, element_type, what)
        check_writes(context, "Where", element_type, what)
        a, b = context.input(layer, 0), context.input(layer, 1)
        (chosen,) = context.node(comparison, [a, b], f"{layer.name}/{comparison.lower()}")
        context.node_into("Where", [chosen, a, b], [context.name_output(layer, 0)], layer.name)
    return convert


def _is_integer(element_type: str) -> bool:
    return np.issubdtype(dtype_of(element_type), np.integer)


def _check_mod(context: Context, what: str) -> None:
    since = first_opset("Mod")
    context.check_opset(since, f"{what} needs Mod, from opset {since}")


def _refuse_integer_division_by_zero(context: Context, layer: Layer) -> None:
    """An integer Divide, FloorMod or Mod by a constant holding 0 gives OpenVINO's value for it (see the kernels);
    ONNX leaves integer division by zero undefined, and onnxruntime refuses such a model ("Integer modulo by
    zero"): nothing carries the meaning."""
    divisor = context.constant(layer, 1)
    if divisor is not None and _is_integer(context.input_info(layer, 0).element_type) and np.any(divisor == 0):
        raise ConversionError(f"integer {layer.type} by a constant holding 0: ONNX leaves integer division by zero "
                              "undefined (onnxruntime refuses the model), OpenVINO gives a value")


def divide(context: Context, layer: Layer) -> None:
    _refuse_integer_division_by_zero(context, layer)
    if _saturates(context, layer):  # truncated whatever m_pythondiv says, on run-time inputs
        if context.on_dynamic_path(layer):
            raise ConversionError(f"{layer.type} of {context.input_info(layer, 0).element_type} on dynamic dims or in "
                                  "an If body: OpenVINO's CPU plugin rounds the quotient half to even there (truncates "
                                  "on static dims), which poolir does not write in ONNX")
        _in_int32_saturated(context, layer, "Div")
        return
    check_writes(context, "Div", context.input_info(layer, 0).element_type, layer.type)
    a, b = context.input(layer, 0), context.input(layer, 1)
    output = context.name_output(layer, 0)
    run_time = any(context.constant(layer, i) is None for i in range(2))
    if _is_integer(context.input_info(layer, 0).element_type) and layer.attrs.get("m_pythondiv", True) \
            and not run_time:
        # m_pythondiv=true floors an integer quotient (OpenVINO's spec and its reference implementation,
        # which constant folding uses), ONNX Div truncates: floor(a / b) = (a - mod(a, b)) / b with Mod's
        # fmod=0 taking the divisor's sign. On run-time inputs the CPU plugin divides in float32 and truncates
        # whatever m_pythondiv says (runtime/ir_ops/elementwise.py): Cast, Div, Cast below.
        _check_mod(context, "integer floor division")
        remainder = context.node("Mod", [a, b], f"{layer.name}/remainder", fmod=0)[0]
        exact = context.node("Sub", [a, remainder], f"{layer.name}/multiple")[0]
        context.node_into("Div", [exact, b], [output], layer.name)
        return
    if _in_cpu_float32(context, layer):  # the quotient in float32, truncated
        a, b = _as_float32(context, layer)
        _truncated_back(context, layer, context.node("Div", [a, b], f"{layer.name}/quotient")[0], output)
        return
    context.node_into("Div", [a, b], [output], layer.name)


def floor_mod(context: Context, layer: Layer) -> None:
    _refuse_integer_division_by_zero(context, layer)
    if not _is_integer(context.input_info(layer, 0).element_type) or _in_cpu_float32(context, layer):
        _float_remainder(context, layer, truncate=False)
        return
    _check_mod(context, "FloorMod")
    context.node_into("Mod", [context.input(layer, 0), context.input(layer, 1)], [context.name_output(layer, 0)],
                      layer.name, fmod=0)  # the divisor's sign, like FloorMod


def _in_cpu_float32(context: Context, layer: Layer) -> bool:
    """Whether OpenVINO's CPU plugin computes this integer Divide, FloorMod or Mod in float32: i32 and i64 of
    run-time values (runtime.kernels.elementwise.openvino_cpu_integer: 19267583 / 7 -> 2752512); i8/u8 go through
    _in_int32_saturated or are exact, folded ones take the reference implementation."""
    return (context.input_info(layer, 0).element_type in ("i32", "i64")
            and any(context.constant(layer, i) is None for i in range(2)))


def _as_float32(context: Context, layer: Layer) -> tuple[str, str]:
    return tuple(context.node("Cast", [context.input(layer, i)], f"{layer.name}/f32_{i}", to=TensorProto.FLOAT)[0]
                 for i in range(2))


def _truncated_back(context: Context, layer: Layer, value: str, output: str) -> None:
    """A float32 result into the layer's integer type as the plugin converts it (cvttps2dq: truncated; NaN,
    infinities and values outside int32 give INT32_MIN), through int32 for i64."""
    element_type = context.input_info(layer, 0).element_type
    if element_type == "i64":
        (value,) = context.node("Cast", [value], f"{layer.name}/i32", to=TensorProto.INT32)
    context.node_into("Cast", [value], [output], layer.name, to=onnx_element_type(element_type))


def _float_remainder(context: Context, layer: Layer, truncate: bool) -> None:
    """a - floor(a / b) * b, or with trunc(q) written Where(q < 0, Ceil(q), Floor(q)) (-0 stays -0): OpenVINO's
    float FloorMod and Mod, step by step (runtime.kernels.elementwise.remainder_by_formula), not ONNX Mod's exact
    remainder. f16 and bf16 run in float32 and round once at the end, as the plugin and poolir's IR runtime compute
    them (rounding each step to f16 gave 0.09375 where OpenVINO gives 0.0845); so do i32 and i64 of run-time values
    (16777217 mod 50176 -> 18432), truncated back."""
    a, b = context.input(layer, 0), context.input(layer, 1)
    source_type = context.input_info(layer, 0).element_type
    integral = _is_integer(source_type)
    in_float32 = source_type in ("f16", "bf16") or integral
    if in_float32:
        a, b = _as_float32(context, layer)
    quotient = context.node("Div", [a, b], f"{layer.name}/quotient")[0]
    whole = context.node("Floor", [quotient], f"{layer.name}/floor")[0]
    if truncate:
        element_type = "f32" if in_float32 else source_type
        check_writes(context, "Less", element_type, f"{layer.type} of {element_type}")
        check_writes(context, "Where", element_type, f"{layer.type} of {element_type}")
        zero = context.initializer(np.array(0, dtype_of(element_type)), f"{layer.name}/zero")
        negative = context.node("Less", [quotient, zero], f"{layer.name}/negative")[0]
        raised = context.node("Ceil", [quotient], f"{layer.name}/ceil")[0]
        whole = context.node("Where", [negative, raised, whole], f"{layer.name}/trunc")[0]
    product = context.node("Mul", [whole, b], f"{layer.name}/product")[0]
    if not in_float32:
        context.node_into("Sub", [a, product], [context.name_output(layer, 0)], layer.name)
        return
    remainder = context.node("Sub", [a, product], f"{layer.name}/remainder")[0]
    if integral:
        _truncated_back(context, layer, remainder, context.name_output(layer, 0))
        return
    context.node_into("Cast", [remainder], [context.name_output(layer, 0)], layer.name,
                      to=onnx_element_type(source_type))


def mod(context: Context, layer: Layer) -> None:
    """Mod-1 (the dividend's sign) is ONNX Mod with fmod=1 for integers OpenVINO computes exactly; floats, and i32
    and i64 of run-time values: _float_remainder."""
    _refuse_integer_division_by_zero(context, layer)
    if not _is_integer(context.input_info(layer, 0).element_type) or _in_cpu_float32(context, layer):
        _float_remainder(context, layer, truncate=True)
        return
    _check_mod(context, "Mod")
    context.node_into("Mod", [context.input(layer, 0), context.input(layer, 1)], [context.name_output(layer, 0)],
                      layer.name, fmod=1)


def convert(context: Context, layer: Layer, target: str | None = None) -> None:
    source_type = context.input_info(layer, 0).element_type
    target = target or layer.attrs["destination_type"]
    output = context.name_output(layer, 0)
    if target == source_type:
        context.node_into("Identity", [context.input(layer, 0)], [output], layer.name)
        return
    if not _is_integer(source_type) and source_type != "boolean" and _is_integer(target):
        _float_into_integer(context, layer, source_type, target, output)
        return
    source = context.input(layer, 0)
    if target == "boolean" and context.constant(layer, 0) is None and (source_type == "i32" or
                                                                       not _is_integer(source_type)):
        # OpenVINO's run-time Convert gives False for NaN and i32 -2147483648 (runtime/ir_ops/elementwise.py),
        # ONNX Cast True: And(Cast(x), x is neither).
        check_writes(context, "Equal", source_type, "Convert to boolean (False for NaN, as OpenVINO computes it)")
        if source_type == "i32":
            lowest = context.initializer(np.array(np.iinfo(np.int32).min, np.int32), f"{layer.name}/lowest")
            (is_lowest,) = context.node("Equal", [source, lowest], f"{layer.name}/is_lowest")
            (kept,) = context.node("Not", [is_lowest], f"{layer.name}/not_lowest")
        else:
            (kept,) = context.node("Equal", [source, source], f"{layer.name}/not_nan")
        (truth,) = context.node("Cast", [source], f"{layer.name}/cast", to=onnx_element_type(target))
        context.node_into("And", [truth, kept], [output], layer.name)
        return
    context.node_into("Cast", [source], [output], layer.name, to=onnx_element_type(target))


def _float_into_integer(context: Context, layer: Layer, source_type: str, target: str, output: str) -> None:
    """Convert float -> integer by OpenVINO's rule (ir.float_to_integer.openvino_float_to_integer): Where for the
    bounds (NaN stays NaN, where Clip's NaN is onnxruntime's choice), then ONNX Cast, which converts as x86 does."""
    source = context.input(layer, 0)
    folded = all(context.constant(layer, i) is not None for i in range(len(layer.inputs)))
    rule = openvino_float_to_integer(dtype_of(source_type), dtype_of(target), folded, context.on_dynamic_path(layer),
                                     context.from_input_boundary(layer, 0))
    base = layer.name
    if rule.bounds is not None:
        what = f"Convert {source_type} -> {target} (bounded first, as OpenVINO's CPU plugin converts it)"
        for op_type in ("Equal",) * rule.nan_to_zero + ("Greater", "Less", "Where"):
            check_writes(context, op_type, "f64", what)
        if source_type != "f64":
            (source,) = context.node("Cast", [source], f"{base}/f64", to=TensorProto.DOUBLE)  # exact
        if rule.nan_to_zero:
            (is_number,) = context.node("Equal", [source, source], f"{base}/is_number")
            zero = context.initializer(np.array(0.0), f"{base}/zero")
            (source,) = context.node("Where", [is_number, source, zero], f"{base}/nan_to_zero")
        for compare, bound in zip(("Less", "Greater"), rule.bounds):
            limit = context.initializer(np.array(bound), f"{base}/{compare.lower()}_bound")
            (outside,) = context.node(compare, [source, limit], f"{base}/{compare.lower()}")
            (source,) = context.node("Where", [outside, limit, source], f"{base}/bounded")
    if rule.through_int32:
        (source,) = context.node("Cast", [source], f"{base}/i32", to=TensorProto.INT32)
    context.node_into("Cast", [source], [output], base, to=onnx_element_type(target))


def convert_like(context: Context, layer: Layer) -> None:
    convert(context, layer, context.input_info(layer, 1).element_type)


CONVERTERS = {
    "Abs": _unary("Abs"), "Sqrt": _unary("Sqrt"), "Floor": _rounding("Floor"), "Ceiling": _rounding("Ceil"),
    "Negative": _unary("Neg"),
    "Add": _binary("Add"), "Subtract": _binary("Sub"), "Multiply": _binary("Mul"),
    "Maximum": _select_by("Greater", "Max"), "Minimum": _select_by("Less", "Min"), "Power": _binary("Pow"),
    "Divide": divide, "FloorMod": floor_mod, "Mod": mod,
    "Convert": convert, "ConvertLike": convert_like,
}
