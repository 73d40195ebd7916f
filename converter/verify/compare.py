"""Comparing one output of one path with its reference: the tolerances and the row that records the result.

An element passes when |actual - expected| <= atol + rtol * |expected| (NaN equal to NaN, inf to the same inf).
Floating outputs default to the whole-network rule (DEFAULT_TOLERANCES): rtol per dtype, and an absolute slack
scaled to the output, atol = rtol * max|expected|, so logits of size 30 and probabilities of size 1e-3 are judged
alike and nothing near zero needs a number picked per network. Integer and boolean outputs (max pooling of
int8/uint8, argmax indices, shapes) are always compared exactly: an index off by one is never close.

Which values replace the defaults, the first that applies: a per-output option (`--rtol NAME=V`, `--atol NAME=V`),
the global option (`--rtol V`, `--atol V`), an example manifest's "tolerance" (for expected values its source
rounds), the default. A given atol is a number; an rtol given alone keeps the scaled atol (rtol * max|expected|).

A row that passes says which tolerance passed it (Row.passed_by): "exact" (every element equal), "rtol" (every
element within rtol * |expected|: the relative figure holds everywhere), or "atol" (some element needed the
absolute slack: a large relative error on a value near zero).
"""

from __future__ import annotations

import math

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from poolir.ir.errors import UsageError
from poolir.ir.model import shape_str


@dataclass(frozen=True, slots=True)
class Tolerance:
    rtol: float
    atol: float | None = None  # None: scaled to the output, rtol * max|expected| (the whole-network rule)

    def absolute(self, expected: np.ndarray) -> float:
        """The absolute slack for `expected`: atol, or rtol * its largest finite magnitude when atol is scaled."""
        if self.atol is not None:
            return self.atol
        if self.rtol == 0 or expected.size == 0:
            return 0.0
        finite = np.abs(expected[np.isfinite(expected)]) if expected.dtype.kind == "f" else np.abs(expected)
        return self.rtol * float(finite.max()) if finite.size else 0.0

    def describe(self) -> str:
        """`rtol 0.0003, atol scaled` or `rtol 1e-05, atol 1e-06` or `exact`."""
        if self.rtol == 0 and self.atol == 0:
            return "exact"
        return f"rtol {self.rtol:g}, atol " + ("rtol x max|expected|" if self.atol is None else f"{self.atol:g}")


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


# Floating defaults, by the expected output's dtype: rtol, with atol scaled to the output (rtol * max|expected|).
# float32 3e-4 is the whole-network rule (tests/networks/peers.py measures it): two correct f32 engines differ
# only in summation order; one reduction of K products is off by about sqrt(K) * 2^-24 of its terms' sum (K =
# 4608 in a 3x3x512 ResNet-50 convolution: 4e-6 of the magnitude), layers add at random (DenseNet-121's logits:
# 4e-6 of their size), and a softmax turns the logits' absolute error into a relative one of at most twice
# their range times it (ResNet-50 and BN-Inception softmaxes: at most 7.1e-5; trained logits reaching 30:
# 2.4e-4). A wrong pooling window is nothing like that: one element more or less in a 3x3 average moves that
# output by about a ninth of its size (measured across networks: 3e-2 to 0.6 of the output's magnitude, a
# hundred times rtol at the closest). Half precisions: about four rounding steps of the type; float64: 1e-9.
DEFAULT_TOLERANCES: dict[str, Tolerance] = {
    "float64": Tolerance(1e-9),
    "float32": Tolerance(3e-4),
    "float16": Tolerance(2e-3),
    "bfloat16": Tolerance(1.6e-2),
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
class ToleranceOptions:
    """The tolerance options of one verification: global values and per-output overrides (by output name)."""

    rtol: float | None = None
    atol: float | None = None
    output_rtol: Mapping[str, float] = field(default_factory=dict)
    output_atol: Mapping[str, float] = field(default_factory=dict)

    def for_output(self, name: str, dtype: np.dtype, example: Tolerance | None = None) -> Tolerance:
        return tolerance_for(dtype, self.output_rtol.get(name, self.rtol), self.output_atol.get(name, self.atol),
                             example)

    @classmethod
    def parse(cls, rtol: Sequence[str | float] | float | None = None,
              atol: Sequence[str | float] | float | None = None) -> "ToleranceOptions":
        """From command-line values: each `V` (global, the last one wins) or `NAME=V` (one output; NAME may
        itself hold '=', the value is after the last one). Values are checked by check_tolerance."""
        parsed = {}
        for flag, values in (("rtol", rtol), ("atol", atol)):
            values = [] if values is None else [values] if isinstance(values, (int, float, str)) else list(values)
            value, per_output = None, {}
            for item in values:
                name, number = None, item
                if isinstance(item, str):
                    name, _, number = item.rpartition("=")
                    try:
                        number = float(number)
                    except ValueError:
                        raise UsageError(f"--{flag} {item[:60]!r}: expected a number or NAME=NUMBER") from None
                    if _ and not name:
                        raise UsageError(f"--{flag} {item[:60]!r}: the output name before '=' is empty")
                number = check_tolerance(f"--{flag} {name}=" if name else f"--{flag}", number)
                if name:
                    per_output[name] = number
                else:
                    value = number
            parsed[flag], parsed[f"output_{flag}"] = value, per_output
        return cls(**parsed)


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
    status: str  # reference | ok | mismatch | refused | expected-refused | error | unsupported | known-deviation
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    expected_shape: tuple[int, ...] | None = None
    expected_dtype: str | None = None
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    mismatched: int = 0  # how many elements differ
    first_mismatch: Mismatch | None = None
    tolerance: Tolerance | None = None  # as given (atol None: scaled to the output)
    atol_used: float | None = None  # the absolute slack applied: atol, or rtol * max|expected|
    passed_by: str | None = None  # ok rows: "exact", "rtol" or "atol" (see the module docstring)
    detail: str | None = None  # why: the refusal, the error, the shape or dtype difference

    @property
    def passed(self) -> bool:
        return self.status in PASSING


# reference: the path the others are compared with; unsupported: a peer engine has no kernel for an operator of
# the model (it says nothing about the model, for a bundled example or a user's model alike).
PASSING = ("reference", "ok", "expected-refused", "unsupported", "known-deviation")


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
        row.atol_used, row.passed_by = 0.0, "exact"
    else:
        wide_e = expected.astype(np.float64) if expected.dtype.kind not in "iub" else expected
        row.atol_used = tolerance.absolute(wide_e) if tolerance != EXACT else 0.0
        differs, abs_error, rel_error, needs_atol = _elementwise(actual, expected, tolerance.rtol, row.atol_used)
        row.max_abs_error = float(abs_error.max())
        row.max_rel_error = float(rel_error.max()) if rel_error.size else 0.0
        row.mismatched = int(np.count_nonzero(differs))
        if row.mismatched:
            first = int(np.argmax(differs.reshape(-1)))
            index = tuple(int(i) for i in np.unravel_index(first, actual.shape))
            row.first_mismatch = Mismatch(index, _scalar(actual[index]), _scalar(expected[index]))
            problems.append(f"{row.mismatched} of {actual.size} elements differ")
        else:
            row.passed_by = "exact" if row.max_abs_error == 0 else ("atol" if needs_atol else "rtol")
    if problems:
        row.status, row.detail, row.passed_by = "mismatch", "; ".join(problems), None
    return row


def _elementwise(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float):
    """(differs mask, |a - e| per element, |a - e| / |e| where e != 0, whether a passing element needed atol),
    NaN/inf-aware, in float64."""
    if actual.dtype.kind in "iub" and expected.dtype.kind in "iub":
        # Exact integer comparison without a float64 round trip (int64 indices exceed 2**53 in theory).
        differs = actual != expected
        wide_a, wide_e = actual.astype(np.float64), expected.astype(np.float64)
        needs_atol = False
    else:
        wide_a, wide_e = actual.astype(np.float64), expected.astype(np.float64)
        same = (wide_a == wide_e) | (np.isnan(wide_a) & np.isnan(wide_e))
        with np.errstate(invalid="ignore", over="ignore"):
            difference = np.abs(wide_a - wide_e)
            relative_ok = difference <= rtol * np.abs(wide_e)
            close = difference <= atol + rtol * np.abs(wide_e)
        differs = ~(same | close)
        needs_atol = bool(np.any(close & ~same & ~relative_ok))
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        abs_error = np.array(np.abs(wide_a - wide_e))  # an array even for 0-d tensors (a Gather of one dim)
        abs_error[wide_a == wide_e] = 0.0  # inf == inf
        abs_error[np.isnan(wide_a) & np.isnan(wide_e)] = 0.0
        abs_error[np.isnan(abs_error)] = np.inf  # NaN against a number, or opposite infinities
        nonzero = wide_e != 0
        rel_error = abs_error[nonzero] / np.abs(wide_e[nonzero])
        rel_error[np.isnan(rel_error)] = np.inf
    return differs, abs_error, rel_error, needs_atol


def _scalar(value) -> float | int | bool:
    value = np.asarray(value)
    if value.dtype.kind == "b":
        return bool(value)
    if value.dtype.kind in "iu":
        return int(value)
    return float(value.astype(np.float64))
