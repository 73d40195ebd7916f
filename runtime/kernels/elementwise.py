"""Elementwise numpy kernels whose meaning numpy's own ufuncs do not give directly.

Each takes numpy arrays and plain parameters already validated by the ONNX or IR adapter that calls it.
"""

from __future__ import annotations

import numpy as np

from poolir.runtime.kernels.precision import accumulation_dtype, is_float


def divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a / b; integer division truncates toward zero (C semantics, as ONNX Div and OpenVINO Divide
    with pythondiv=false), unlike numpy's floor division."""
    if is_float(a.dtype):
        return np.divide(a, b).astype(a.dtype, copy=False)
    quotient = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -quotient, quotient).astype(a.dtype, copy=False)


def power(base: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """base ** exponent in the type of base (ONNX Pow: the exponent may have another type)."""
    work = accumulation_dtype(base.dtype) if is_float(base.dtype) else base.dtype
    result = np.power(base.astype(work, copy=False), exponent.astype(work, copy=False))
    return result.astype(base.dtype, copy=False)


def modulo(a: np.ndarray, b: np.ndarray, fmod: bool) -> np.ndarray:
    """fmod=True: sign of the dividend (C fmod); fmod=False: sign of the divisor (Python %)."""
    return (np.fmod(a, b) if fmod else np.mod(a, b)).astype(a.dtype, copy=False)


def unary_float(function, x: np.ndarray) -> np.ndarray:
    """Apply a float ufunc (sqrt, exp, ...) computing low-precision floats in float32."""
    work = accumulation_dtype(x.dtype)
    return function(x.astype(work, copy=False)).astype(x.dtype, copy=False)


_INT32_MIN = np.int32(np.iinfo(np.int32).min)


def _saturated_i32(values: np.ndarray) -> np.ndarray:
    limits = np.iinfo(np.int32)
    return np.clip(values, limits.min, limits.max).astype(np.int32)


def _f32_to_i32(values: np.ndarray) -> np.ndarray:
    """x86's cvtps2dq: round to nearest even; NaN, infinities and values outside int32 become INT32_MIN."""
    inside = np.isfinite(values) & (values >= -2.0 ** 31) & (values < 2.0 ** 31)
    return np.where(inside, np.rint(np.where(inside, values, 0)), _INT32_MIN).astype(np.int32)


def openvino_cpu_integer(kind: str, a: np.ndarray, b: np.ndarray, constant: tuple[bool, bool] = (False, False)
                         ) -> np.ndarray:
    """Add, Subtract, Multiply, Divide, FloorMod or Mod on i32/i64 as OpenVINO 2026.4's CPU plugin computes them
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
    - A float32 result outside int32, NaN or infinite (a division by zero) becomes INT32_MIN.
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
            elif kind == "Mod":  # a - trunc(a / b) * b in float32: -16777217 mod 50176 -> -18432 (exact -18433)
                result = _f32_to_i32(fa - np.trunc(quotient) * fb)
            else:
                result = _f32_to_i32(fa - np.floor(quotient) * fb)  # float32 throughout, as the kernel
    return result.astype(a.dtype)


def cast(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return x.astype(dtype, copy=False)


__all__ = ["cast", "divide", "modulo", "openvino_cpu_integer", "power", "unary_float"]
