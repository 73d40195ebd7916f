"""IR element-wise layers beyond arithmetic (ir/ops/pointwise.py): Sign, Negative, Exp, Log, Erf, comparisons,
logical ops and Select, with OpenVINO's semantics. Floats below f32 compute in f32 and round once."""

from __future__ import annotations

from typing import Callable

import numpy as np

from poolir.ir.errors import InvalidModelError
from poolir.runtime.ir_ops.elementwise import unary_layer
from poolir.runtime.ir_ops.registry import LayerFn, LayerInfo, builder
from poolir.runtime.kernels.erf import erf
from poolir.runtime.kernels.movement import check_broadcast


def _shapes_equal(mode: str, arrays) -> None:
    if mode == "none" and len({a.shape for a in arrays}) > 1:
        raise InvalidModelError("auto_broadcast=none needs equal shapes, got "
                                + " and ".join(str(list(a.shape)) for a in arrays))


# Sign: -1, 0 or 1, and NaN for NaN (measured: OpenVINO 2026.4 CPU gives [nan, 0, 1, -1] for
# [nan, -0.0, 2, -inf], as onnxruntime's ONNX Sign does), which is numpy's sign.
builder("Sign")(unary_layer(np.sign))
builder("Negative")(unary_layer(np.negative, integers_in_float32=False))
# Exp: OpenVINO 2026.4's CPU plugin gives +inf for NaN (measured: exp([nan, -inf, -1]) = [inf, 0, 0.368]);
# ONNX Exp and numpy give NaN. The IR world follows OpenVINO; ir_to_onnx writes Where(x == x, Exp(x), inf).
builder("Exp")(unary_layer(lambda x: np.where(np.isnan(x), np.inf, np.exp(x))))
builder("Log")(unary_layer(np.log))
# Erf: poolir computes erf in float64 and rounds once (after f16's float32 step, as OpenVINO computes f16 in f32).
# OpenVINO 2026.4's CPU plugin approximates it in f32 (measured on 120001 points in [-7, 7]: up to 4.8e-7 from
# the exact value, 11007 ulps near 0 where erf is small); poolir does not copy that error.
builder("Erf")(unary_layer(erf))
builder("Identity")(lambda info: lambda args: (args[0],))  # a copy in OpenVINO; arrays here are never written to


def _binary(function: Callable) -> Callable[[LayerInfo], LayerFn]:
    def build(info: LayerInfo) -> LayerFn:
        mode = info.layer.attrs["auto_broadcast"]

        def run(args):
            _shapes_equal(mode, args)
            check_broadcast(args)
            return (np.asarray(function(*args)),)
        return run
    return build


# Greater and GreaterEqual: OpenVINO 2026.4's CPU plugin computes not(a <= b) and not(a < b), so a NaN operand
# gives true (measured for f16, f32, f64: Greater(nan, 1), Greater(1, nan), GreaterEqual(nan, nan) are true;
# numpy and ONNX give false). The spec says a > b and nothing of NaN; the IR world follows the plugin.
for _type, _function in (("Equal", np.equal), ("NotEqual", np.not_equal), ("Less", np.less),
                         ("LessEqual", np.less_equal), ("Greater", lambda a, b: np.logical_not(np.less_equal(a, b))),
                         ("GreaterEqual", lambda a, b: np.logical_not(np.less(a, b))),
                         ("LogicalAnd", np.logical_and), ("LogicalOr", np.logical_or),
                         ("LogicalXor", np.logical_xor)):
    builder(_type)(_binary(_function))


@builder("LogicalNot")
def _logical_not(info: LayerInfo) -> LayerFn:
    return lambda args: (np.logical_not(args[0]),)


@builder("Select")
def _select(info: LayerInfo) -> LayerFn:
    mode = info.layer.attrs["auto_broadcast"]

    def run(args):
        _shapes_equal(mode, args)
        check_broadcast(args)
        condition, then, other = args
        return (np.where(condition.astype(bool, copy=False), then, other).astype(then.dtype, copy=False),)
    return run
