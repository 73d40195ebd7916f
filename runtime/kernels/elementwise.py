"""Elementwise numpy kernels whose meaning numpy's own ufuncs do not give directly.

Each takes numpy arrays and plain parameters already validated by the ONNX or IR adapter that calls it.
"""

from __future__ import annotations

import numpy as np

from poolir.ir.float_to_integer import cast, float_to_integer_x86
from poolir.runtime.kernels.precision import accumulation_dtype, is_float


def divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a / b; integer division truncates toward zero (C semantics, as ONNX Div and OpenVINO Divide
    with pythondiv=false), unlike numpy's floor division."""
    if is_float(a.dtype):
        return np.divide(a, b).astype(a.dtype, copy=False)
    # numpy floors; one up where the signs differ and the division is inexact truncates. (|a| // |b| would
    # overflow at the type's minimum: i8 -128 / 127 gave 2, not -1.)
    with np.errstate(all="ignore"):  # the type's minimum / -1 has no value in the type (C: undefined)
        quotient = np.floor_divide(a, b)
        inexact_negative = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
    return (quotient + inexact_negative.astype(quotient.dtype)).astype(a.dtype, copy=False)


def power(base: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """base ** exponent in the type of base (ONNX Pow: the exponent may have another type).

    An integer base: std::pow in double, truncated toward zero, as onnxruntime 1.31 computes it; a result
    that is not finite or outside the type becomes its minimum (x86's cvttsd2si): i32 2 ** -1 -> 0,
    0 ** -1 -> -2147483648, 46341 ** 2 -> -2147483648; i64 3 ** 39 -> 4052555153018976256 (double's)."""
    if not is_float(base.dtype):
        with np.errstate(all="ignore"):
            result = np.power(base.astype(np.float64), exponent.astype(np.float64))
        return float_to_integer_x86(result, base.dtype)
    work = accumulation_dtype(base.dtype)
    result = np.power(base.astype(work, copy=False), exponent.astype(work, copy=False))
    return result.astype(base.dtype, copy=False)


def modulo(a: np.ndarray, b: np.ndarray, fmod: bool) -> np.ndarray:
    """fmod=True: sign of the dividend (C fmod); fmod=False: sign of the divisor (Python %)."""
    return (np.fmod(a, b) if fmod else np.mod(a, b)).astype(a.dtype, copy=False)


def remainder_by_formula(a: np.ndarray, b: np.ndarray, floor: bool) -> np.ndarray:
    """a - floor(a / b) * b (`floor`) or a - trunc(a / b) * b, each step rounded in a's float type: OpenVINO's float
    FloorMod and Mod, not the exact remainder (34.558418 mod -0.5006091: -0.4842186, exactly -0.48421872; a
    divisor of +-inf gives NaN)."""
    with np.errstate(all="ignore"):
        quotient = a / b
        return a - (np.floor(quotient) if floor else np.trunc(quotient)) * b


def unary_float(function, x: np.ndarray) -> np.ndarray:
    """Apply a float ufunc (sqrt, exp, ...) computing low-precision floats in float32."""
    work = accumulation_dtype(x.dtype)
    return function(x.astype(work, copy=False)).astype(x.dtype, copy=False)


def _saturated_i32(values: np.ndarray) -> np.ndarray:
    limits = np.iinfo(np.int32)
    return np.clip(values, limits.min, limits.max).astype(np.int32)


def _f32_to_i32(values: np.ndarray) -> np.ndarray:
    return float_to_integer_x86(values, np.dtype(np.int32), round_half_even=True)


def openvino_cpu_integer(kind: str, a: np.ndarray, b: np.ndarray, constant: tuple[bool, bool] = (False, False)
                         ) -> np.ndarray:
    """Add, Subtract, Multiply, Divide, FloorMod, Mod or Power on i32/i64 as OpenVINO 2026.4's CPU plugin computes them
    on run-time inputs (x86-64 JIT eltwise kernel; pinned in tests/runtime/test_ir_integer_arithmetic.py).

    - i64 runs as i32: the plugin converts i64 tensors to i32 and the result back (sign-extended), so every
      value is the i32 one. A run-time i64 wraps (2**31 -> -2**31); a value OpenVINO knows when compiling
      (`constant`: a Const or a folded layer) saturates (2**40 -> 2**31 - 1).
    - Add, Subtract, Multiply: i32 arithmetic, wrapping on overflow (vpaddd, vpsubd, vpmulld).
    - Divide: float32(a) / float32(b) in float32, truncated toward zero, converted back (cvtps2dq): not an
      integer division. It truncates even with m_pythondiv=true, and float32 holds integers exactly only
      up to 2**24: 19267583 / 7 -> 2752512 (exact 2752511), 2147483647 / 7 -> 306783392 (exact 306783378).
    - FloorMod: a - floor(a / b) * b, each step in float32 (the emitter supports f32 only):
      16777217 mod 50176 -> 18432 (exact 18433); exact while |a| and |b| are below 2**24.
    - Power: through float32 too: i32 16777217 ** 1 -> 16777216, 2 ** -1 -> 0, 46341 ** 2 -> INT32_MIN.
    - A float32 result outside int32, NaN or infinite (a division by zero, 0 ** -1) becomes INT32_MIN.
    """
    a32, b32 = (_saturated_i32(x) if known else x.astype(np.int32) for x, known in zip((a, b), constant))
    with np.errstate(all="ignore"):
        if kind == "Add":
            result = a32 + b32
        elif kind == "Subtract":
            result = a32 - b32
        elif kind == "Multiply":
            result = a32 * b32
        else:
            fa, fb = a32.astype(np.float32), b32.astype(np.float32)
            quotient = fa / fb
            if kind == "Divide":
                result = _f32_to_i32(np.trunc(quotient))
            elif kind == "Power":  # the power rounded to float32, then cvtps2dq (f64's power rounded once
                # to f32 is nearest to the plugin's: it rounds some halfway results past 2**24 up: 29 ** 5 ->
                # 20511150, here 20511148; the exact 20511149 is no float32)
                result = _f32_to_i32(np.power(a32.astype(np.float64), b32.astype(np.float64)).astype(np.float32))
            elif kind == "Mod":  # a - trunc(a / b) * b in float32: -16777217 mod 50176 -> -18432 (exact -18433)
                result = _f32_to_i32(fa - np.trunc(quotient) * fb)
            else:
                result = _f32_to_i32(fa - np.floor(quotient) * fb)  # float32 throughout, as the kernel
    return result.astype(a.dtype)


def openvino_cpu_integer_unary(function, x: np.ndarray, constant: bool = False, in_float32: bool = True
                               ) -> np.ndarray:
    """A function (exp, log, sqrt, floor, sign; negative, abs) of an integer tensor as OpenVINO 2026.4's CPU plugin
    computes it: the value as int32 (a run-time i64 wraps, a `constant` one saturates); `in_float32`, in float32
    with the result rounded half to even by cvtps2dq (NaN, infinities and values outside int32 become INT32_MIN),
    else in int32 arithmetic (wrapping); then saturated into i8/u8 or sign-extended into i64. Measured: i32
    exp(1) -> 3, log(2) -> 1, log(0) -> INT32_MIN, floor(2147483647) -> INT32_MIN (float32 rounds it to 2**31),
    abs(INT32_MIN) and -INT32_MIN -> INT32_MIN, -2147483647 exact; i8 exp(5) -> 127, exp(22) -> -128,
    sqrt(-1) -> -128, -(-128) -> 127; i64 exp(-2**63) -> 1 (it wraps to 0). Its float32 exp is a few ulps from
    numpy's past 2**24 (exp(20): 485165152, numpy's float32 485165216)."""
    as_i32 = _saturated_i32(x) if constant else x.astype(np.int32)
    with np.errstate(all="ignore"):
        if in_float32:
            result = float_to_integer_x86(np.asarray(function(as_i32.astype(np.float32)), np.float32),
                                          np.dtype(np.int32), round_half_even=True)
        else:
            result = np.asarray(function(as_i32)).astype(np.int32)
    if x.dtype.itemsize < 4:
        limits = np.iinfo(x.dtype)
        result = np.clip(result, limits.min, limits.max)
    return result.astype(x.dtype)


__all__ = ["cast", "divide", "float_to_integer_x86", "modulo", "openvino_cpu_integer", "openvino_cpu_integer_unary",
           "power", "remainder_by_formula", "unary_float"]
