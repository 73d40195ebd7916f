"""Comparing one output of one path with its reference: the tolerances and the row that records the result.

Tolerances (|actual - expected| <= atol + rtol * |expected|, NaN equal to NaN, inf to the same inf)
default per dtype of the expected output; see DEFAULT_TOLERANCES. Integer and boolean outputs (max
pooling of int8/uint8, argmax indices) are always compared exactly: an index off by one is never
close. `rtol`/`atol` arguments replace the defaults of floating outputs; a manifest's "tolerance"
does the same for its example (for expected values its source rounds), and arguments win over it.
"""

from __future__ import annotations

import math

from dataclasses import dataclass

import numpy as np

from poolir.ir.errors import UsageError
from poolir.ir.model import shape_str


@dataclass(frozen=True, slots=True)
class Tolerance:
    rtol: float
    atol: float


EXACT = Tolerance(0.0, 0.0)
# The largest tolerance verify accepts, from the command line or a manifest: a relative error of 100% (or an
# absolute error of 1) already hides any wrong window; above it, "verify passed" would mean nothing.
MAX_TOLERANCE = 1.0


def check_tolerance(name: str, value, file=None) -> float:
    """`value` as a tolerance (finite, >= 0, <= MAX_TOLERANCE) or a UsageError naming `name` (and `file`)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(f"{name} {str(value)[:40]!r} must be a number", file=file)
    value = float(value)
    if not (math.isfinite(value) and 0 <= value <= MAX_TOLERANCE):
        raise UsageError(f"{name} {value} must be a finite number >= 0 and <= {MAX_TOLERANCE:g}", file=file)
    return value
# Floating defaults, by the expected output's dtype: about two units in the last place relative, and an
# absolute floor for results near zero (averages of mixed signs cancel). Every engine accumulates in at
# least float32 but in its own order, so half-precision results may differ by a rounding step.
DEFAULT_TOLERANCES: dict[str, Tolerance] = {
    "float64": Tolerance(1e-9, 1e-12),
    "float32": Tolerance(1e-5, 1e-6),
    "float16": Tolerance(2e-3, 1e-3),
    "bfloat16": Tolerance(1.6e-2, 1e-2),
}


# OpenVINO's CPU plugin has no float64 kernels: it computes float64 models in float32 and converts the
# results back. Its float64 rows are therefore held to the float32 tolerance (the numbers show the loss).
COMPUTED_AS: dict[tuple[str, str], str] = {("openvino", "float64"): "float32"}


def tolerance_for(dtype: np.dtype, rtol: float | None = None, atol: float | None = None,
                  example: Tolerance | None = None) -> Tolerance:
    """The tolerance for outputs of `dtype`: exact for integers and booleans, else defaults overridden."""
    dtype = np.dtype(dtype)
    if dtype.name not in DEFAULT_TOLERANCES:
        return EXACT
    base = example or DEFAULT_TOLERANCES[dtype.name]
    return Tolerance(base.rtol if rtol is None else rtol, base.atol if atol is None else atol)


@dataclass(frozen=True, slots=True)
class Mismatch:
    """The first differing element (C order): its index and both values."""

    index: tuple[int, ...]
    actual: float | int | bool
    expected: float | int | bool


@dataclass(slots=True)
class Row:
    """One output of one path, compared with the reference."""

    output: str
    path: str
    status: str  # reference | ok | mismatch | refused | expected-refused | error
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    expected_shape: tuple[int, ...] | None = None
    expected_dtype: str | None = None
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    mismatched: int = 0  # how many elements differ
    first_mismatch: Mismatch | None = None
    tolerance: Tolerance | None = None
    detail: str | None = None  # why: the refusal, the error, the shape or dtype difference

    @property
    def passed(self) -> bool:
        return self.status in ("reference", "ok", "expected-refused")


def compare(output: str, path: str, actual: np.ndarray, expected: np.ndarray, tolerance: Tolerance) -> Row:
    """Compare `actual` with `expected`. A shape or dtype difference is a mismatch, never an exception."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    row = Row(output, path, "ok", tuple(actual.shape), str(actual.dtype), tuple(expected.shape),
              str(expected.dtype), tolerance=tolerance)
    problems = []
    if actual.dtype != expected.dtype:
        problems.append(f"dtype {actual.dtype}, expected {expected.dtype}")
    if actual.shape != expected.shape:
        problems.append(f"shape {shape_str(actual.shape)}, expected {shape_str(expected.shape)}")
        row.status, row.detail = "mismatch", "; ".join(problems)
        return row
    if actual.size == 0:
        row.max_abs_error = row.max_rel_error = 0.0
    else:
        differs, abs_error, rel_error = _elementwise(actual, expected, tolerance)
        row.max_abs_error = float(abs_error.max())
        row.max_rel_error = float(rel_error.max()) if rel_error.size else 0.0
        row.mismatched = int(np.count_nonzero(differs))
        if row.mismatched:
            first = int(np.argmax(differs.reshape(-1)))
            index = tuple(int(i) for i in np.unravel_index(first, actual.shape))
            row.first_mismatch = Mismatch(index, _scalar(actual[index]), _scalar(expected[index]))
            problems.append(f"{row.mismatched} of {actual.size} elements differ")
    if problems:
        row.status, row.detail = "mismatch", "; ".join(problems)
    return row


def _elementwise(actual: np.ndarray, expected: np.ndarray, tolerance: Tolerance):
    """(differs mask, |a - e| per element, |a - e| / |e| where e != 0), NaN/inf-aware, in float64."""
    if actual.dtype.kind in "iub" and expected.dtype.kind in "iub":
        # Exact integer comparison without a float64 round trip (int64 indices exceed 2**53 in theory).
        differs = actual != expected
        wide_a, wide_e = actual.astype(np.float64), expected.astype(np.float64)
    else:
        wide_a, wide_e = actual.astype(np.float64), expected.astype(np.float64)
        same = (wide_a == wide_e) | (np.isnan(wide_a) & np.isnan(wide_e))
        with np.errstate(invalid="ignore", over="ignore"):
            close = np.abs(wide_a - wide_e) <= tolerance.atol + tolerance.rtol * np.abs(wide_e)
        differs = ~(same | close)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        abs_error = np.abs(wide_a - wide_e)
        abs_error[wide_a == wide_e] = 0.0  # inf == inf
        abs_error[np.isnan(wide_a) & np.isnan(wide_e)] = 0.0
        abs_error[np.isnan(abs_error)] = np.inf  # NaN against a number, or opposite infinities
        nonzero = wide_e != 0
        rel_error = abs_error[nonzero] / np.abs(wide_e[nonzero])
        rel_error[np.isnan(rel_error)] = np.inf
    return differs, abs_error, rel_error


def _scalar(value) -> float | int | bool:
    value = np.asarray(value)
    if value.dtype.kind == "b":
        return bool(value)
    if value.dtype.kind in "iu":
        return int(value)
    return float(value.astype(np.float64))
