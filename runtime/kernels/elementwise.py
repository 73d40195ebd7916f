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


def cast(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return x.astype(dtype, copy=False)


__all__ = ["cast", "divide", "modulo", "power", "unary_float"]
