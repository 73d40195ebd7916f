"""ONNX elementwise operators: unary, binary and variadic arithmetic, comparisons and logic, Mod, Where,
Cast/CastLike and Identity: version rows and adapters onto numpy and runtime.kernels.elementwise (Relu and
Clip are activations: activation.py).

Element types are not restricted when these ops run (numpy computes any of them), except that inputs the spec
binds to one type T must share it (element_types.check_one_type), and where a row names its types: Floor, Ceil,
Sqrt, Exp, Log, Reciprocal and Erf take floats only (their spec; onnxruntime refuses an integer model). The comparison rows carry the spec's type constraints all the same, for the IR -> ONNX converter, which
must not write a type an opset does not allow: Equal-7 takes bool, int32 and int64 only (numbers from 11,
bfloat16 from 13), Less and Greater-7 floats only (every number from 9, bfloat16 from 13). Versions before an
op's first row use legacy semantics (e.g. broadcast/axis attributes before opset 7) and are unsupported.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from poolir.ir.errors import UsageError
from poolir.runtime.kernels.elementwise import cast, divide, modulo, power, unary_float
from poolir.runtime.kernels.erf import erf
from poolir.runtime.kernels.movement import check_broadcast
from poolir.runtime.kernels.precision import accumulation_dtype
from poolir.runtime.kernels.ufunc_buffer import fitted
from poolir.runtime.onnx_ops.element_types import (BF16, BOOL, FLOAT_TYPES, NUMERIC_TYPES, check_dtype,
                                                   check_one_type, onnx_dtype)
from poolir.runtime.onnx_ops.registry import INT, STRING, Attribute, NodeContext, Step, adapter, define

for _op in ("Abs", "Neg"):
    define(_op, [(6, {})])
for _op in ("Floor", "Ceil", "Sqrt", "Exp", "Log", "Reciprocal"):  # floats only, as onnxruntime 1.31 refuses others
    define(_op, [(6, {}, FLOAT_TYPES), (13, {}, FLOAT_TYPES | {BF16})])
# Erf: floats only (Erf-9's T allows integers too, but onnxruntime 1.31 runs float and float16 only, and an
# integer erf is 0 or +-1 rounded: no model needs it). Computed in float64 and rounded once (kernels.erf).
define("Erf", [(9, {}, FLOAT_TYPES), (13, {}, FLOAT_TYPES | {BF16})])
define("Sign", [(9, {})])
define("Not", [(1, {})])
# Type constraint T of the arithmetic: 8- and 16-bit integers only from 14 (Pow's base: floats, then 32/64-bit
# integers from 12); onnxruntime refuses a model outside them as invalid ("Type 'tensor(int8)' ... is invalid").
_WIDE_TYPES = FLOAT_TYPES | {np.dtype(t) for t in (np.int32, np.int64, np.uint32, np.uint64)}
for _op in ("Add", "Sub", "Mul", "Div"):
    define(_op, [(7, {}, _WIDE_TYPES), (13, {}, _WIDE_TYPES | {BF16}), (14, {}, NUMERIC_TYPES | {BF16})])
define("Pow", [(7, {}, FLOAT_TYPES), (12, {}, FLOAT_TYPES | {np.dtype(np.int32), np.dtype(np.int64)}),
               (13, {}, FLOAT_TYPES | {BF16, np.dtype(np.int32), np.dtype(np.int64)})])
for _op in ("And", "Or", "Xor"):
    define(_op, [(7, {})])
define("Equal", [(7, {}, frozenset({BOOL, np.dtype(np.int32), np.dtype(np.int64)})),
                 (11, {}, NUMERIC_TYPES | {BOOL}), (13, {}, NUMERIC_TYPES | {BOOL, BF16})])
for _op in ("Less", "Greater"):
    define(_op, [(7, {}, FLOAT_TYPES), (9, {}, NUMERIC_TYPES), (13, {}, NUMERIC_TYPES | {BF16})])
for _op in ("LessOrEqual", "GreaterOrEqual"):
    define(_op, [(12, {}, NUMERIC_TYPES), (16, {}, NUMERIC_TYPES | {BF16})])
# Max and Min take integers from version 12 (onnxruntime refuses an int64 Max-8 as an invalid graph); Sum and Mean
# never do.
for _op in ("Max", "Min"):
    define(_op, [(6, {}, FLOAT_TYPES), (12, {}, NUMERIC_TYPES), (13, {}, NUMERIC_TYPES | {BF16})])
for _op in ("Sum", "Mean"):
    define(_op, [(6, {}, FLOAT_TYPES), (13, {}, FLOAT_TYPES | {BF16})])
define("Mod", [(10, {"fmod": Attribute(INT, 0)})])
define("Where", [(9, {})])
define("Identity", [(1, {})])
# saturate and round_mode only concern float8/float4 targets, which poolir does not support.
define("Cast", [(6, {"to": Attribute(INT, required=True)}), (19, {"saturate": Attribute(INT, 1)}),
                (24, {"round_mode": Attribute(STRING, "up")})])
define("CastLike", [(15, {}), (19, {"saturate": Attribute(INT, 1)}), (24, {"round_mode": Attribute(STRING, "up")})])


_UNARY = {
    "Abs": np.abs, "Neg": np.negative, "Sign": np.sign, "Not": np.logical_not,
    "Floor": np.floor, "Ceil": np.ceil,
}
# op -> kernel of a float array, giving its dtype: numpy's ufuncs compute f16/bf16 in float32 (unary_float);
# erf computes every type in float64 and rounds once (a float32 step would round twice).
_UNARY_FLOAT = {**{op: partial(unary_float, function) for op, function in (
    ("Sqrt", np.sqrt), ("Exp", np.exp), ("Log", np.log), ("Reciprocal", np.reciprocal))}, "Erf": erf}
_BINARY = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": divide, "Pow": power,
    "Equal": np.equal, "Less": np.less, "Greater": np.greater, "LessOrEqual": np.less_equal,
    "GreaterOrEqual": np.greater_equal, "And": np.logical_and, "Or": np.logical_or, "Xor": np.logical_xor,
}
_KEEP_TYPE = {"Add", "Sub", "Mul"}  # numpy may promote mixed scalars; ONNX requires one type T


@adapter(*_UNARY)
def plan_unary(ctx: NodeContext) -> Step:
    function = _UNARY[ctx.version.op_type]
    version = ctx.version

    def run(x):
        check_dtype(version, x.dtype)
        return (np.asarray(function(x)).astype(x.dtype, copy=False),)
    return run


@adapter(*_UNARY_FLOAT)
def plan_unary_float(ctx: NodeContext) -> Step:
    function = _UNARY_FLOAT[ctx.version.op_type]
    version = ctx.version

    def run(x):
        check_dtype(version, x.dtype)
        return (function(x),)
    return run


def _refuse_integer_division_by_zero(op_type: str, divisor: np.ndarray) -> None:
    """ONNX leaves an integer Div or Mod by zero undefined, and onnxruntime 1.31 stops with "Integer division by
    zero" (Mod: "Integer modulo by zero"): poolir refuses it too rather than invent a value (numpy's is 0)."""
    if divisor.dtype.kind in "iu" and not np.all(divisor):
        raise UsageError(f"integer {op_type} by zero: undefined in ONNX (onnxruntime refuses it)")


@adapter(*_BINARY)
def plan_binary(ctx: NodeContext) -> Step:
    function = _BINARY[ctx.version.op_type]
    keep_type = ctx.version.op_type in _KEEP_TYPE
    op_type = ctx.version.op_type
    version = ctx.version
    one_type = op_type != "Pow"  # Pow alone takes an exponent of another type (T1)

    def run(a, b):
        if one_type:
            check_one_type(version, (a, b))
        check_dtype(version, a.dtype)
        check_broadcast((a, b))
        if op_type == "Div":
            _refuse_integer_division_by_zero(op_type, b)
        with fitted(a, b):
            result = np.asarray(function(a, b))
        return (result.astype(a.dtype, copy=False) if keep_type else result,)
    return run


@adapter("Max", "Min", "Sum", "Mean")
def plan_variadic(ctx: NodeContext) -> Step:
    op_type = ctx.version.op_type
    version = ctx.version

    def run(*xs):
        check_one_type(version, xs)
        check_dtype(version, xs[0].dtype)
        check_broadcast(xs)
        if op_type == "Mean":
            work = accumulation_dtype(xs[0].dtype)
            total = sum(x.astype(work) for x in xs) / len(xs)
            return (np.asarray(total).astype(xs[0].dtype),)
        function = {"Max": np.maximum, "Min": np.minimum, "Sum": np.add}[op_type]
        result = xs[0]
        with fitted(*xs):
            for x in xs[1:]:
                result = function(result, x)
        return (np.asarray(result).astype(xs[0].dtype, copy=False),)
    return run


@adapter("Mod")
def plan_mod(ctx: NodeContext) -> Step:
    fmod = bool(ctx.attrs.get("fmod", 0))
    version = ctx.version

    def run(a, b):
        check_one_type(version, (a, b))
        check_broadcast((a, b))
        _refuse_integer_division_by_zero("Mod", b)
        return (modulo(a, b, fmod),)
    return run


@adapter("Where")
def plan_where(ctx: NodeContext) -> Step:
    version = ctx.version

    def run(c, a, b):
        if c.dtype != np.bool_:  # the spec's condition is a bool tensor: np.where would take any truthiness
            raise UsageError(f"the condition (input 0) must be bool, not {c.dtype}")
        check_one_type(version, (a, b))
        check_broadcast((c, a, b))
        return (np.where(c, a, b),)
    if ctx.input_types and ctx.input_types[0] is not None and ctx.input_types[0] != np.bool_:
        raise UsageError(f"the condition (input 0) must be bool, not {ctx.input_types[0]}")
    return run


@adapter("Identity")
def plan_identity(ctx: NodeContext) -> Step:
    return lambda x: (x,)


@adapter("Cast")
def plan_cast(ctx: NodeContext) -> Step:
    target = onnx_dtype(ctx.attrs["to"])
    return lambda x: (cast(x, target),)


@adapter("CastLike")
def plan_cast_like(ctx: NodeContext) -> Step:
    return lambda x, like: (cast(x, like.dtype),)

