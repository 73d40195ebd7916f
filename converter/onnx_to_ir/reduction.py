"""ONNX Reduce* nodes -> IR Reduce* layers with constant axes.

ONNX keepdims is IR keep_dims. Axes: an attribute before the op's first version with
noop_with_empty_axes (runtime.onnx_ops.first_opset_with asks the table), an optional input after. Absent or
empty axes reduce every axis, unless noop_with_empty_axes=1, when they reduce over no axis (_over_no_axis).
ReduceSumSquare is ReduceSum(x * x) and ReduceLogSum Log(ReduceSum(x)). OpenVINO has no log-sum-exp layer;
ReduceLogSumExp is log(sum(exp(x))) computed as onnxruntime, onnx.reference and PyTorch compute it, shifted
by the largest finite element m so that exp cannot overflow or underflow every term:
    m = ReduceMax(x) where finite, else 0;   y = Log(ReduceSum(Exp(x - m))) + m
(equal to the plain Exp, ReduceSum, Log in exact arithmetic; the plain chain overflows to inf at x = 89 in
f32 where onnxruntime gives 89.0, and gives -inf at x = -104 where onnxruntime gives -104). The Exp keeps NaN
(pointwise.exp_keeping_nan; OpenVINO's ReduceMax skips NaN, measured). Both are defined for floats only (the
onnx reference refuses integers, and opset 28 drops them from the schema), so integer inputs are refused.
"""

from __future__ import annotations

import numpy as np

from poolir.converter.onnx_to_ir.node import OnnxNode, Value
from poolir.converter.onnx_to_ir.pointwise import check_float, exp_keeping_nan
from poolir.ir.errors import ConversionError
from poolir.ir.shapes import checked_axes

_DIRECT = {op: op for op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                             "ReduceL2")}
_NUMPY = {"auto_broadcast": "numpy"}
_RUN_TIME_AXES_TYPES = frozenset(("f16", "f32", "f64", "i32", "i64"))  # measured on OpenVINO 2026.4's CPU plugin


def _axes(node: OnnxNode, attrs: dict, axes_input: Value | None, rank: int) -> list[int] | Value | None:
    """The reduced axes, normalised; None: reduce nothing (noop_with_empty_axes); the axes input itself when it
    is computed at run time with a known, non-zero length (IR Reduce* take run-time axes; an empty one would
    mean "every axis" or "none" by noop_with_empty_axes, which a layer cannot decide)."""
    if "axes" in attrs:
        axes = list(attrs["axes"])
    elif axes_input is not None and axes_input.shape != (0,):
        known = node.builder.info(axes_input.ref).value
        if known is None and len(axes_input.shape) == 1 and (axes_input.shape[0] or 0) > 0:
            return axes_input
        if known is None:
            raise ConversionError("the axes input must be constant, or of a known non-zero length, to convert to IR")
        axes = [int(v) for v in np.asarray(known).reshape(-1)]
    else:
        axes = []
    if not axes:
        return None if attrs.get("noop_with_empty_axes", 0) else list(range(rank))
    return sorted(checked_axes(axes, rank, "attribute 'axes'" if "axes" in attrs else "input 'axes'"))


def reduce(node: OnnxNode) -> list[Value]:
    attrs = node.attributes()
    x, axes_input = (node.checked_inputs(1, 1 if "axes" in node.version.attributes else 2, optional=(1,))
                     + [None])[:2]
    axes = _axes(node, attrs, axes_input, len(x.shape))
    op_type = node.version.op_type
    if axes is None:
        return _over_no_axis(node, x)
    keep_dims = bool(attrs.get("keepdims", 1))
    if isinstance(axes, Value) and x.element_type not in _RUN_TIME_AXES_TYPES:
        raise ConversionError(f"the axes input must be constant for {x.element_type} data: OpenVINO's CPU plugin "
                              "has no Reduce* with run-time axes for it (bf16: no ReduceMean; i8/u8: no ReduceSum)")
    if isinstance(axes, Value) and not keep_dims and axes.shape[0] != 1:
        raise ConversionError("the axes input must be constant with keepdims=0 and more than one axis: with "
                              "run-time axes OpenVINO cannot know the output rank (they might repeat), and its CPU "
                              "plugin refuses a dynamic rank")
    axes_value = axes if isinstance(axes, Value) else Value(node.const(np.asarray(axes, np.int64)), "i64",
                                                            (len(axes),))
    if op_type in _LOGARITHMIC:
        check_float(node, x)
        return [_LOGARITHMIC[op_type](node, x, axes_value, keep_dims)]
    source = x
    if op_type == "ReduceSumSquare":
        (source,) = node.layer("Multiply", [x, x], _NUMPY, name=f"{node.name}/square")
        layer_type = "ReduceSum"
    else:
        layer_type = _DIRECT[op_type]
    if x.element_type == "boolean":
        # ReduceMax/ReduceMin-20 take bool; OpenVINO's Reduce* refuse it ("data_et.is_real() ||
        # data_et.is_integral_number()"): reduce 0/1 as u8 and convert back, which is exact.
        (source,) = node.layer("Convert", [x], {"destination_type": "u8"}, name=f"{node.name}/u8")
        (reduced,) = node.layer(layer_type, [source, axes_value], {"keep_dims": keep_dims}, name=f"{node.name}/reduce")
        return node.layer("Convert", [reduced], {"destination_type": "boolean"}, name=node.name)
    return node.layer(layer_type, [source, axes_value], {"keep_dims": keep_dims}, name=node.name)


def _log_sum(node: OnnxNode, x: Value, axes: Value, keep_dims: bool) -> Value:
    (total,) = node.layer("ReduceSum", [x, axes], {"keep_dims": keep_dims}, name=f"{node.name}/sum")
    return node.layer("Log", [total], name=node.name)[0]


def _log_sum_exp(node: OnnxNode, x: Value, axes: Value, keep_dims: bool) -> Value:
    """Log(ReduceSum(Exp(x - m))) + m, m the largest element where finite, else 0 (module docstring)."""
    name = node.name
    (largest,) = node.layer("ReduceMax", [x, axes], {"keep_dims": True}, name=f"{name}/max")
    (difference,) = node.layer("Subtract", [largest, largest], _NUMPY, name=f"{name}/max_minus_max")
    zero = Value(node.const(0, x.element_type), x.element_type, ())
    (finite,) = node.layer("Equal", [difference, zero], _NUMPY, name=f"{name}/max_is_finite")
    (shift,) = node.layer("Select", [finite, largest, zero], _NUMPY, name=f"{name}/shift")
    (shifted,) = node.layer("Subtract", [x, shift], _NUMPY, name=f"{name}/shifted")
    raised = exp_keeping_nan(node, shifted, f"{name}/exp")
    (total,) = node.layer("ReduceSum", [raised, axes], {"keep_dims": keep_dims}, name=f"{name}/sum")
    (logarithm,) = node.layer("Log", [total], name=f"{name}/log")
    if not keep_dims and node.builder.info(axes.ref).value is None:
        # run-time axes: the IR Squeeze needs constant ones; reducing the size-1 axes (finite values) is the same
        (shift,) = node.layer("ReduceMax", [shift, axes], {"keep_dims": False}, name=f"{name}/shift_squeezed")
    elif not keep_dims:
        (shift,) = node.layer("Squeeze", [shift, axes], name=f"{name}/shift_squeezed")
    return node.layer("Add", [logarithm, shift], _NUMPY, name=name)[0]


_LOGARITHMIC = {"ReduceLogSum": _log_sum, "ReduceLogSumExp": _log_sum_exp}


def _over_no_axis(node: OnnxNode, x: Value) -> list[Value]:
    """noop_with_empty_axes=1 with no axes: "reduction over an empty set of axes ... composite-reduction
    operators will still perform the non-reduction steps" (the spec, onnx 1.23; onnxruntime 1.31 and
    onnx.reference agree): ReduceSumSquare is x * x, ReduceL1 |x|, ReduceL2 sqrt(x * x), ReduceLogSum log(x);
    the others (ReduceLogSumExp too: onnxruntime gives x, inf and NaN included) pass x through, and the
    driver copies it if it is also a graph input/output name."""
    op_type = node.version.op_type
    if op_type in _LOGARITHMIC:
        check_float(node, x)
    if op_type in ("ReduceSumSquare", "ReduceL2"):
        (square,) = node.layer("Multiply", [x, x], _NUMPY, name=node.name if op_type == "ReduceSumSquare" else
                               f"{node.name}/square")
        return [square] if op_type == "ReduceSumSquare" else node.layer("Sqrt", [square], name=node.name)
    if op_type in ("ReduceL1", "ReduceLogSum"):
        return node.layer("Abs" if op_type == "ReduceL1" else "Log", [x], name=node.name)
    return [x]


CONVERTERS = {**dict.fromkeys(_DIRECT, reduce), "ReduceSumSquare": reduce, **dict.fromkeys(_LOGARITHMIC, reduce)}
