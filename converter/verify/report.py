"""The verification report: every path of every model, and its JSON form (`poolir verify --json`).

The JSON schema ("poolir-verify/2") is documented field by field in examples/README.md ("verify --json").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from poolir.converter.verify.compare import DEFAULT_TOLERANCES, Row
from poolir.converter.verify.locate import Location
from poolir.ir.errors import PoolirError


@dataclass(slots=True)
class ModelReport:
    """Every path of one model, compared with the reference (expected.npz or the first path)."""

    source: str
    kind: str  # "onnx" or "ir"
    reference: str  # "expected.npz" or the name of the reference path
    example: str | None = None  # the example folder, when the model is part of one
    expected_source: dict[str, Any] | None = None  # the manifest's statement of where expected comes from
    inputs: str = "random"  # where the feeds came from: a file, or "random (seed N)"
    warnings: list[str] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    # Why the model could not be verified at all (an unreadable file, inputs that do not fit): the same
    # fields as the command line's --json error document.
    error: dict[str, Any] | None = None
    source_model: str | None = None  # the ONNX an IR was checked against (--source), the reference graph's file
    locations: list[Location] = field(default_factory=list)  # one per path with a mismatch (locate.py)

    @classmethod
    def failed(cls, source: str, error: PoolirError, example: str | None = None) -> "ModelReport":
        """The entry of a model that could not be verified: no rows, the error."""
        kind = {".onnx": "onnx", ".xml": "ir"}.get(Path(source).suffix.lower(), "unknown")
        return cls(source, kind, "-", example, inputs="-", error={
            "message": str(error), "file": error.file, "where": error.where, "kind": type(error).__name__})

    @property
    def passed(self) -> bool:
        return self.error is None and all(row.passed for row in self.rows)


@dataclass(slots=True)
class Report:
    models: list[ModelReport]
    peers: tuple[str, ...] = ()
    rtol: float | None = None
    atol: float | None = None
    seed: int = 0
    output_rtol: dict[str, float] = field(default_factory=dict)  # --rtol NAME=V
    output_atol: dict[str, float] = field(default_factory=dict)  # --atol NAME=V

    @property
    def passed(self) -> bool:
        return all(model.passed for model in self.models)

    @property
    def invalid(self) -> list[ModelReport]:
        """The models that could not be verified at all (bad input: exit code 2)."""
        return [model for model in self.models if model.error is not None]

    def counts(self) -> dict[str, int]:
        statuses: dict[str, int] = {}
        for model in self.models:
            for row in model.rows:
                statuses[row.status] = statuses.get(row.status, 0) + 1
        return statuses

    def to_dict(self) -> dict[str, Any]:
        """The machine-readable report (`poolir verify --json`); every number is JSON-safe."""
        return {
            "schema": "poolir-verify/2",
            "passed": self.passed,
            "peers": list(self.peers),
            "rtol": self.rtol,
            "atol": self.atol,
            "output_rtol": dict(self.output_rtol),
            "output_atol": dict(self.output_atol),
            "seed": self.seed,
            # atol null: scaled to each output, rtol * max|expected| (compare.py)
            "default_tolerances": {k: {"rtol": v.rtol, "atol": v.atol} for k, v in DEFAULT_TOLERANCES.items()},
            "summary": {"models": len(self.models), "models_failed": sum(not m.passed for m in self.models),
                        "models_invalid": len(self.invalid), "rows": self.counts()},
            "models": [_model_dict(m) for m in self.models],
        }


def _json_number(value: float | int | bool | None) -> float | int | bool | str | None:
    """NaN and infinities are not JSON: spell them as strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def _model_dict(model: ModelReport) -> dict[str, Any]:
    return {
        "source": model.source, "kind": model.kind, "example": model.example, "reference": model.reference,
        "expected_source": model.expected_source, "inputs": model.inputs, "passed": model.passed,
        "source_model": model.source_model, "warnings": list(model.warnings),
        "rows": [_row_dict(r) for r in model.rows],
        "divergences": [_location_dict(location) for location in model.locations], "error": model.error,
    }


def _mismatch_dict(mismatch) -> dict[str, Any] | None:
    return None if mismatch is None else {"index": list(mismatch.index), "actual": _json_number(mismatch.actual),
                                          "expected": _json_number(mismatch.expected)}


def _location_dict(location: Location) -> dict[str, Any]:
    d = location.divergence
    return {
        "path": location.path, "first_output": location.first_output, "compared": location.compared,
        "exposed": location.exposed, "tensors": location.tensors, "runs": location.runs, "note": location.note,
        "node": None if d is None else {
            "name": d.node, "op": d.op, "attributes": d.attributes, "tensor": d.tensor, "inputs": d.inputs,
            "unobserved_inputs": d.unobserved_inputs,
            "shape": list(d.shape) if d.shape is not None else None,
            "expected_shape": list(d.expected_shape) if d.expected_shape is not None else None,
            "max_abs_error": _json_number(d.max_abs_error), "max_rel_error": _json_number(d.max_rel_error),
            "mismatched": d.mismatched, "size": d.size, "first_mismatch": _mismatch_dict(d.first_mismatch),
            "tolerance": d.tolerance, "detail": d.detail, "amplified": d.amplified},
    }


def _row_dict(row: Row) -> dict[str, Any]:
    mismatch = row.first_mismatch
    return {
        "output": row.output, "path": row.path, "status": row.status, "passed": row.passed,
        "shape": list(row.shape) if row.shape is not None else None, "dtype": row.dtype,
        "expected_shape": list(row.expected_shape) if row.expected_shape is not None else None,
        "expected_dtype": row.expected_dtype,
        "max_abs_error": _json_number(row.max_abs_error), "max_rel_error": _json_number(row.max_rel_error),
        "mismatched": row.mismatched,
        "first_mismatch": _mismatch_dict(mismatch),
        "rtol": row.tolerance.rtol if row.tolerance else None,
        "atol": row.atol_used,
        "atol_scaled": row.tolerance is not None and row.tolerance.atol is None,
        "passed_by": row.passed_by,
        "detail": row.detail,
    }
