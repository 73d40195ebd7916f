"""IR elementwise layers: Add, Subtract, Multiply, Divide, FloorMod, Maximum, Minimum, Power, Abs, Floor, Sqrt,
Convert, ConvertLike, with OpenVINO's semantics (its CPU plugin's where the specs are silent)."""

from __future__ import annotations

from typing import Callable

import numpy as np

from poolir.ir.element_types import SATURATED_DTYPES, dtype_of, openvino_narrow_arithmetic
from poolir.ir.float_to_integer import openvino_float_to_integer
from poolir.ir.errors import InvalidModelError, UnsupportedError
from poolir.runtime.ir_ops.registry import LayerFn, LayerInfo, builder
from poolir.runtime.kernels.elementwise import (cast, divide, modulo, openvino_cpu_integer, openvino_cpu_integer_unary,
                                               power, remainder_by_formula, unary_float)
from poolir.runtime.kernels.movement import check_broadcast
from poolir.runtime.kernels.precision import accumulation_dtype, is_float
from poolir.runtime.kernels.ufunc_buffer import fitted


def _broadcasting(info: LayerInfo, function: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> LayerFn:
    mode = info.layer.attrs.get("auto_broadcast", "numpy")
    if mode not in ("numpy", "none"):
        raise UnsupportedError(f"auto_broadcast={mode!r} is not supported (numpy, none)")

    def run(args):
        a, b = args
        if a.dtype != b.dtype:
            raise InvalidModelError(f"input element types differ: {a.dtype} and {b.dtype}")
        if mode == "none" and a.shape != b.shape:
            raise InvalidModelError(f"auto_broadcast=none needs equal shapes, got {list(a.shape)} and "
                                    f"{list(b.shape)}")
        check_broadcast((a, b))
        with fitted(a, b):
            result = np.asarray(function(a, b))
        return (result.astype(a.dtype, copy=False),)

    return run


def _in_work_precision(function):
    """Compute f16/bf16 in float32 and round once (as OpenVINO's CPU plugin does at f32 precision)."""
    def run(a, b):
        work = accumulation_dtype(a.dtype)
        if work != a.dtype:
            return function(a.astype(work), b.astype(work)).astype(a.dtype)
        return function(a, b)
    return run


_CPU_INTEGER_TYPES = (np.dtype(np.int32), np.dtype(np.int64))


def _as_cpu_plugin(info: LayerInfo, function):
    """Integer arithmetic on run-time values as OpenVINO's CPU plugin computes it (i64 runs as i32, Divide
    and FloorMod through float32: kernels.elementwise.openvino_cpu_integer; i8/u8 the same in i32, then
    saturated: i8 127 + 1 -> 127, 100 * 100 -> 127, 0 / 0 -> -128, u8 0 - 3 -> 0); `function` otherwise. A
    layer OpenVINO folds at compile time (LayerInfo.folded) gets its reference implementation: `function`."""
    if info.folded:
        return function

    def run(a, b):
        if a.dtype in _CPU_INTEGER_TYPES:
            return openvino_cpu_integer(info.layer.type, a, b, (0 in info.constant_inputs, 1 in info.constant_inputs))
        if a.dtype in SATURATED_DTYPES:
            negated, in_int16 = openvino_narrow_arithmetic(info.layer.type, a.dtype, info.dynamic)
            b32 = b.astype(np.int32)
            wide = openvino_cpu_integer(info.layer.type, a.astype(np.int32), np.maximum(b32, -127) if negated else b32)
            if in_int16:
                wide = (wide + 2 ** 15) % 2 ** 16 - 2 ** 15
            if info.layer.type == "Divide" and info.dynamic:
                # On its dynamic-shape path the plugin rounds an i8/u8 quotient half to even instead (7 / 2 -> 4,
                # 5 / 2 -> 2; static dims: 3 and 2), which is exact for 8-bit values (OpenVINO 2026.4)
                with np.errstate(all="ignore"):
                    quotient = a.astype(np.float32) / b.astype(np.float32)
                wide = np.where(np.isfinite(quotient), np.rint(quotient), wide)
            limits = np.iinfo(a.dtype)
            return np.clip(wide, limits.min, limits.max).astype(a.dtype)
        return function(a, b)
    return run


@builder("Add")
def _add(info):
    return _broadcasting(info, _as_cpu_plugin(info, _in_work_precision(np.add)))


@builder("Subtract")
def _subtract(info):
    return _broadcasting(info, _as_cpu_plugin(info, _in_work_precision(np.subtract)))


@builder("Multiply")
def _multiply(info):
    return _broadcasting(info, _as_cpu_plugin(info, _in_work_precision(np.multiply)))


# Maximum and Minimum compare as x86's maxps/minps do, a > b ? a : b (a < b ? a : b): where either is NaN, or
# both are zeros, the result is b (OpenVINO 2026.4 CPU: max(NaN, 1) = 1, max(1, NaN) = NaN, max(0, -0) = -0;
# ONNX Max and numpy propagate NaN).
@builder("Maximum")
def _maximum(info):
    return _broadcasting(info, lambda a, b: np.where(a > b, a, b))


@builder("Minimum")
def _minimum(info):
    return _broadcasting(info, lambda a, b: np.where(a < b, a, b))


def _integer_power(info: LayerInfo):
    """OpenVINO's integer Power: on run-time inputs its CPU plugin computes in float32 (i64 as i32;
    kernels.elementwise.openvino_cpu_integer), and i8/u8 saturate that i32 result: i8 (-40) ** 2 -> 127,
    0 ** -1 -> -128. Folded (constant inputs), i32/i64 get the reference's double power, truncated (i32
    -39 ** 5 -> -90224199 exactly, 2 ** -1 -> 0, 0 ** -1 -> INT32_MIN), and the plugin saturates a folded i64
    into int32 (-40 ** 6 -> 2147483647)."""
    cpu_plugin = _as_cpu_plugin(info, power)

    def run(a, b):
        if a.dtype in _CPU_INTEGER_TYPES:
            exact = cpu_plugin(a, b)
        else:
            exact = openvino_cpu_integer("Power", a.astype(np.int32), b.astype(np.int32))
        limits = np.iinfo(np.int32 if a.dtype == np.int64 else a.dtype)
        return np.clip(exact, limits.min, limits.max).astype(a.dtype)
    return run


@builder("Power")
def _power(info):
    integer_power = _integer_power(info)
    return _broadcasting(info, lambda a, b: power(a, b) if is_float(a.dtype) else integer_power(a, b))


@builder("Divide")
def _divide(info):
    # Integer division floors with m_pythondiv=true (the default) and truncates with false, as OpenVINO's
    # Divide-1 spec and its reference implementation say, and that is what OpenVINO computes when it folds
    # the layer (constant inputs): i32 [-7, 7] / [2, -2] -> [-4, -4]. On run-time inputs its CPU plugin
    # instead divides in float32 and truncates, whatever m_pythondiv says: [-7, 7] / [2, -2] -> [-3, -3],
    # and inexact past 2**24 (kernels.elementwise.openvino_cpu_integer). poolir computes what OpenVINO
    # computes in each case; both are pinned in tests/runtime/test_ir_integer_arithmetic.py.
    floor = bool(info.layer.attrs.get("m_pythondiv", True))

    def quotient(a, b):
        if is_float(a.dtype):
            return _in_work_precision(np.divide)(a, b)
        return np.floor_divide(a, b) if floor else divide(a, b)

    return _broadcasting(info, _as_cpu_plugin(info, quotient))


def _float_remainder(info: LayerInfo, floor: bool):
    """OpenVINO's float FloorMod and Mod (measured on 2000 random f32 pairs, OpenVINO 2026.4 CPU): a run computes
    a - floor(a / b) * b (Mod: trunc) in float32, not the exact remainder; folded, Mod the same, FloorMod the exact
    remainder but NaN for an infinite divisor."""
    if info.folded and floor:
        return lambda a, b: np.where(np.isinf(b), np.nan, modulo(a, b, fmod=False)).astype(a.dtype)
    return _in_work_precision(lambda a, b: remainder_by_formula(a, b, floor))


@builder("FloorMod")
def _floor_mod(info):
    # FloorMod: the result has the sign of the divisor (Python's %), for integers and floats; on run-time
    # i32/i64 inputs OpenVINO's CPU plugin computes it in float32 (inexact past 2**24).
    float_remainder = _float_remainder(info, floor=True)
    integer_remainder = _as_cpu_plugin(info, lambda a, b: modulo(a, b, fmod=False))
    return _broadcasting(info, lambda a, b: float_remainder(a, b) if is_float(a.dtype) else integer_remainder(a, b))


def unary_layer(function: Callable[[np.ndarray], np.ndarray], integers_in_float32: bool = True
                ) -> Callable[[LayerInfo], LayerFn]:
    """A layer computing `function`: f16/bf16 in float32 rounded once; integers as OpenVINO's CPU plugin computes
    them, through float32 or int32 (kernels.elementwise.openvino_cpu_integer_unary)."""
    def build(info: LayerInfo) -> LayerFn:
        constant = 0 in info.constant_inputs

        def run(args):
            (x,) = args
            if is_float(x.dtype):
                return (unary_float(function, x),)
            if x.dtype.kind in "iu":
                return (openvino_cpu_integer_unary(function, x, constant, integers_in_float32),)
            return (np.asarray(function(x)).astype(x.dtype, copy=False),)
        return run
    return build


builder("Abs")(unary_layer(np.abs, integers_in_float32=False))
builder("Floor")(unary_layer(np.floor))
builder("Ceiling")(unary_layer(np.ceil))
builder("Sqrt")(unary_layer(np.sqrt))


def openvino_truth(x: np.ndarray, folded: bool) -> np.ndarray:
    """Convert to boolean: x != 0 when OpenVINO folds it (a constant input); on a run-time input its CPU plugin
    also gives False for NaN and for i32 -2147483648 (measured, OpenVINO 2026.4: f32 [nan, inf, -0.0, 1e-45] ->
    [F, T, F, T]; i32 [-2**31, -1, 0] -> [F, T, F]; i8 -128 -> T). An i64 runs as i32 there (2**32 -> False):
    not modelled, as for Convert's other targets."""
    truth = x != 0
    if folded:
        return truth
    if is_float(x.dtype):
        return truth & ~np.isnan(x)
    if x.dtype == np.int32:
        return truth & (x != np.iinfo(np.int32).min)
    return truth


def openvino_convert(x: np.ndarray, dtype: np.dtype, info: LayerInfo) -> np.ndarray:
    """Convert: float -> integer as `ir.element_types.openvino_float_to_integer` rules (x86's truncation, with the
    CPU plugin's saturations at run time); to boolean: `openvino_truth`; otherwise numpy's conversion."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return openvino_truth(x, info.folded)
    if not is_float(x.dtype) or dtype.kind not in "iu":
        return cast(x, dtype)
    rule = openvino_float_to_integer(x.dtype, dtype, info.folded, info.dynamic, 0 in info.parameter_inputs)
    wide = x.astype(np.float64)  # exact for every float type
    if rule.nan_to_zero:
        wide = np.where(np.isnan(wide), 0.0, wide)
    if rule.bounds is not None:
        low, high = rule.bounds
        wide = np.where(wide > high, high, np.where(wide < low, low, wide))
    return cast(wide, np.int32 if rule.through_int32 else dtype).astype(dtype, copy=False)


@builder("Convert")
def _convert(info):
    dtype = dtype_of(info.layer.attrs.get("destination_type", ""))
    return lambda args: (openvino_convert(args[0], dtype, info),)


@builder("ConvertLike")
def _convert_like(info):
    return lambda args: (openvino_convert(args[0], args[1].dtype, info),)


@builder("Mod")
def _mod(info):
    # Mod-1: the remainder has the sign of the dividend (C fmod), for integers and floats: -7 mod 2 -> -1.
    # PyTorch's frontend writes it on shape values (ShuffleNetV2's channel split).
    # On run-time i32/i64 inputs OpenVINO's CPU plugin computes it in float32, like FloorMod.
    float_remainder = _float_remainder(info, floor=False)
    integer_remainder = _as_cpu_plugin(info, lambda a, b: modulo(a, b, fmod=True))
    return _broadcasting(info, lambda a, b: float_remainder(a, b) if is_float(a.dtype) else integer_remainder(a, b))
