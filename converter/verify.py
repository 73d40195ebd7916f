"""Verification: prove, output by output, that a model means the same on every path it can take.

    report = verify_paths(["examples/"], peers=("onnxruntime",))
    report.passed            # every row matched (or was an expected refusal)
    report.to_dict()         # the --json schema

A *path* is one engine running one form of the model. For a model given as

    .onnx   runtime(onnx)            the ONNX graph, ONNX semantics            (the reference)
            runtime(onnx->ir)        converter.onnx_to_ir, OpenVINO semantics
            runtime(onnx->ir->onnx)  and back with converter.ir_to_onnx
            onnxruntime(onnx), onnxruntime(onnx->ir->onnx)        with --peer onnxruntime
            openvino(onnx->ir)       poolir's IR run by OpenVINO   with --peer openvino
    .xml    runtime(ir)              the IR, OpenVINO semantics                (the reference)
            runtime(ir->onnx)        converter.ir_to_onnx, ONNX semantics
            onnxruntime(ir->onnx)    with --peer onnxruntime
            openvino(ir)             the IR file itself run by OpenVINO       with --peer openvino

An *example folder* holds `model.onnx` and/or `model.xml`, `inputs.npz`, `expected.npz` and a
`manifest.json` (where the expected values come from). There the reference is `expected.npz`: every
path, the first included, must match it.

Each path yields one row per output: shape, dtype, max abs and rel error and a status:

    reference          the path the others are compared with (only when there is no expected.npz)
    ok                 equal within the tolerance
    mismatch           a value, shape or dtype differs, or an output is missing / unexpected
    refused            the converter refused (ConversionError / UnsupportedError): it will not
                       change a model's meaning, and says why. Fails verification, because the model
                       could not be carried across, unless the manifest lists the path under
                       "expected_refused" (status "expected-refused", which passes).
    error              the path could not run (a peer failed, a converted model was rejected).
                       Fails, unless listed under "expected_refused" like a refusal.

A model whose own reference path cannot run (it is unreadable, unsupported, or the inputs do not fit)
is bad input: the PoolirError propagates, and the command line exits 2.

Tolerances (|actual - expected| <= atol + rtol * |expected|, NaN equal to NaN, inf to the same inf)
default per dtype of the expected output; see DEFAULT_TOLERANCES. Integer and boolean outputs (max
pooling of int8/uint8, argmax indices) are always compared exactly: an index off by one is never
close. `rtol`/`atol` arguments replace the defaults of floating outputs; a manifest's "tolerance"
does the same for its example (for expected values its source rounds), and arguments win over it.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from poolir.converter.ir_to_onnx import MAX_OPSET
from poolir.converter.peers import onnxruntime_run, openvino_run_xml
from poolir.runtime.onnx_model import load_onnx
from poolir.ir.errors import ConversionError, InvalidModelError, PoolirError, UnsupportedError, UsageError

PEERS = ("onnxruntime", "openvino")
EXAMPLE_MODELS = ("model.onnx", "model.xml")
DEFAULT_EXAMPLES = "examples"


@dataclass(frozen=True, slots=True)
class Tolerance:
    rtol: float
    atol: float


EXACT = Tolerance(0.0, 0.0)
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


# ----------------------------------------------------------------------------------------------------
# Report


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

    @property
    def passed(self) -> bool:
        return all(row.passed for row in self.rows)


@dataclass(slots=True)
class Report:
    models: list[ModelReport]
    peers: tuple[str, ...] = ()
    rtol: float | None = None
    atol: float | None = None
    seed: int = 0

    @property
    def passed(self) -> bool:
        return all(model.passed for model in self.models)

    def counts(self) -> dict[str, int]:
        statuses: dict[str, int] = {}
        for model in self.models:
            for row in model.rows:
                statuses[row.status] = statuses.get(row.status, 0) + 1
        return statuses

    def to_dict(self) -> dict[str, Any]:
        """The machine-readable report (`poolir verify --json`); every number is JSON-safe."""
        return {
            "schema": "poolir-verify/1",
            "passed": self.passed,
            "peers": list(self.peers),
            "rtol": self.rtol,
            "atol": self.atol,
            "seed": self.seed,
            "default_tolerances": {k: {"rtol": v.rtol, "atol": v.atol} for k, v in DEFAULT_TOLERANCES.items()},
            "summary": {"models": len(self.models), "models_failed": sum(not m.passed for m in self.models),
                        "rows": self.counts()},
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
        "warnings": list(model.warnings), "rows": [_row_dict(r) for r in model.rows],
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
        "first_mismatch": None if mismatch is None else {
            "index": list(mismatch.index), "actual": _json_number(mismatch.actual),
            "expected": _json_number(mismatch.expected)},
        "rtol": row.tolerance.rtol if row.tolerance else None,
        "atol": row.tolerance.atol if row.tolerance else None,
        "detail": row.detail,
    }


# ----------------------------------------------------------------------------------------------------
# Comparing one array with its reference


def compare(output: str, path: str, actual: np.ndarray, expected: np.ndarray, tolerance: Tolerance) -> Row:
    """Compare `actual` with `expected`. A shape or dtype difference is a mismatch, never an exception."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    row = Row(output, path, "ok", tuple(actual.shape), str(actual.dtype), tuple(expected.shape),
              str(expected.dtype), tolerance=tolerance)
    problems = []
    if actual.dtype != expected.dtype:
        problems.append(f"dtype {actual.dtype}, expected {expected.dtype}")
    if actual.shape != expected.shape:
        problems.append(f"shape {list(actual.shape)}, expected {list(expected.shape)}")
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


# ----------------------------------------------------------------------------------------------------
# Paths


@dataclass(slots=True)
class PathOutcome:
    """What one path produced: outputs by name, or why it produced none."""

    name: str
    outputs: dict[str, np.ndarray] | None = None
    status: str = "ran"  # ran | refused | error
    detail: str | None = None


class _Refused(Exception):
    """A path could not be taken because an earlier step of it (a conversion) refused or failed."""

    def __init__(self, status: str, detail: str):
        super().__init__(detail)
        self.status, self.detail = status, detail


def _lazy(compute: Callable[[], Any]) -> Callable[[], Any]:
    """Compute once on first use; remember a refusal so that every dependent path reports it."""
    cache: dict[str, Any] = {}

    def get():
        if "value" not in cache:
            try:
                cache["value"] = compute()
            except _Refused as refusal:
                cache["value"] = refusal
            except (ConversionError, UnsupportedError) as error:
                cache["value"] = _Refused("refused", str(error))
            except PoolirError as error:
                cache["value"] = _Refused("error", str(error))
        if isinstance(cache["value"], _Refused):
            raise cache["value"]
        return cache["value"]

    return get


def _converter(name: str):
    from poolir import converter
    function = getattr(converter, name, None)
    if function is None:
        raise _Refused("error", f"converter.{name} is not available in this build")
    return function


def _run_path(name: str, run: Callable[[], dict[str, np.ndarray]], *, peer: bool) -> PathOutcome:
    try:
        return PathOutcome(name, {k: np.asarray(v) for k, v in run().items()})
    except _Refused as refusal:
        return PathOutcome(name, status=refusal.status, detail=refusal.detail)
    except (ConversionError, UnsupportedError) as error:
        return PathOutcome(name, status="refused", detail=str(error))
    except PoolirError as error:
        return PathOutcome(name, status="error", detail=str(error))
    except Exception as error:  # noqa: BLE001 - a peer engine failing is a finding to report, not a crash
        if not peer:
            raise
        text = str(error).strip().splitlines()
        return PathOutcome(name, status="error", detail=f"{type(error).__name__}: {text[0] if text else ''}")


def _runtime(model: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    from poolir import runtime
    return runtime.run(model, feeds)


def check_peers(peers: Sequence[str]) -> tuple[str, ...]:
    """Validate --peer values; a peer that is not installed is a usage error with the install hint."""
    for peer in peers:
        if peer not in PEERS:
            raise UsageError(f"unknown peer {peer!r} (known: {', '.join(PEERS)})")
        if importlib.util.find_spec(peer) is None:
            raise UsageError(f"--peer {peer}: {peer} is not installed (pip install {peer}, or "
                             f"pip install 'poolir[test]')")
    return tuple(dict.fromkeys(peers))


def onnx_paths(model, feeds: Mapping[str, np.ndarray], peers: Sequence[str], output_names: Sequence[str],
               workdir: Path) -> list[PathOutcome]:
    """The paths of an ONNX model (see the module docstring); the first is the reference."""
    to_ir = _lazy(lambda: _converter("onnx_to_ir")(model))
    back = _lazy(lambda: _converter("ir_to_onnx")(to_ir(), opset=MAX_OPSET))
    outcomes = [PathOutcome("runtime(onnx)", {k: np.asarray(v) for k, v in _runtime(model, feeds).items()})]
    outcomes.append(_run_path("runtime(onnx->ir)", lambda: _runtime(to_ir(), feeds), peer=False))
    outcomes.append(_run_path("runtime(onnx->ir->onnx)", lambda: _runtime(back(), feeds), peer=False))
    if "onnxruntime" in peers:
        outcomes.append(_run_path("onnxruntime(onnx)", lambda: onnxruntime_run(model, feeds), peer=True))
        outcomes.append(_run_path("onnxruntime(onnx->ir->onnx)", lambda: onnxruntime_run(back(), feeds),
                                  peer=True))
    if "openvino" in peers:
        def openvino_on_poolir_ir():
            from poolir import ir
            xml_path = workdir / "onnx_to_ir.xml"
            ir.write_model(to_ir(), xml_path)
            return openvino_run_xml(xml_path, feeds, output_names)

        outcomes.append(_run_path("openvino(onnx->ir)", openvino_on_poolir_ir, peer=True))
    return outcomes


def ir_paths(model, xml_path: Path, feeds: Mapping[str, np.ndarray], peers: Sequence[str],
             output_names: Sequence[str]) -> list[PathOutcome]:
    """The paths of an IR model (see the module docstring); the first is the reference."""
    back = _lazy(lambda: _converter("ir_to_onnx")(model, opset=MAX_OPSET))
    outcomes = [PathOutcome("runtime(ir)", {k: np.asarray(v) for k, v in _runtime(model, feeds).items()})]
    outcomes.append(_run_path("runtime(ir->onnx)", lambda: _runtime(back(), feeds), peer=False))
    if "onnxruntime" in peers:
        outcomes.append(_run_path("onnxruntime(ir->onnx)", lambda: onnxruntime_run(back(), feeds), peer=True))
    if "openvino" in peers:
        outcomes.append(_run_path("openvino(ir)", lambda: openvino_run_xml(xml_path, feeds, output_names),
                                  peer=True))
    return outcomes


# ----------------------------------------------------------------------------------------------------
# Models, examples, folders


@dataclass(slots=True)
class Manifest:
    """What verify reads from an example's manifest.json (every field optional)."""

    expected_source: dict[str, Any] | None = None
    tolerance: Tolerance | None = None
    expected_refused: dict[str, str] = field(default_factory=dict)


def read_manifest(folder: Path) -> Manifest:
    path = folder / "manifest.json"
    if not path.is_file():
        return Manifest()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise InvalidModelError(f"not valid JSON ({error})", file=path) from None
    if not isinstance(data, dict):
        raise InvalidModelError("expected a JSON object", file=path)
    source = data.get("expected_source")
    refused = data.get("expected_refused") or {}
    tolerance = data.get("tolerance")
    if not isinstance(refused, dict) or not all(isinstance(k, str) for k in refused):
        raise InvalidModelError("'expected_refused' must map path names to reasons", file=path)
    parsed_tolerance = None
    if tolerance is not None:
        try:
            parsed_tolerance = Tolerance(float(tolerance["rtol"]), float(tolerance["atol"]))
        except (TypeError, KeyError, ValueError):
            raise InvalidModelError("'tolerance' must be an object with numbers 'rtol' and 'atol'",
                                    file=path) from None
    return Manifest(source if isinstance(source, dict) else None, parsed_tolerance,
                    {k: str(v) for k, v in refused.items()})


def load_arrays(path: Path) -> dict[str, np.ndarray]:
    """The named arrays of an .npz file (bad files are user errors).

    numpy has no bfloat16 and stores one as raw 2-byte records (dtype V2); in an .npz that poolir reads,
    V2 means bfloat16, so such arrays are viewed as bfloat16 again.
    """
    import ml_dtypes

    from poolir.converter.feeds import adopt_bfloat16, load_archive

    bfloat16 = np.dtype(ml_dtypes.bfloat16)
    arrays = load_archive(os.fspath(path))  # a damaged archive is a UsageError naming the file
    return {name: adopt_bfloat16(array, bfloat16) for name, array in arrays.items()}


def _feeds_for(session, given: Mapping[str, np.ndarray] | None, seed: int, source: str) -> dict[str, np.ndarray]:
    """Feeds for every declared input: from `given` where named, else random from `seed` (as `poolir run`)."""
    from poolir.converter.feeds import adopt_bfloat16, random_input

    given = dict(given or {})
    declared = [spec.name for spec in session.inputs]
    unknown = [name for name in given if name not in declared]
    if unknown:
        from poolir.ir.errors import FeedError

        raise FeedError(f"unknown input {', '.join(repr(n) for n in unknown)} (the model's inputs are: "
                        f"{', '.join(repr(n) for n in declared) or 'none'})", file=source)
    feeds = {}
    for position, spec in enumerate(session.inputs):
        if spec.name in given:
            feeds[spec.name] = adopt_bfloat16(np.asarray(given[spec.name]), np.dtype(spec.dtype))
        elif spec.shape is None or None in spec.shape:
            raise UsageError(f"input '{spec.name}' has dynamic dims (shape {spec.shape_text()}), which random "
                             f"inputs cannot guess: give it with --inputs FILE.npz", file=source)
        else:
            feeds[spec.name] = random_input(spec, seed, position, source=source)
    return feeds


def _shape_warnings(model) -> list[str]:
    """Declared-vs-inferred disagreements of an IR model (the AvgPool-1 spec's own examples have two)."""
    from poolir.ir.infer import check

    # The report names the file once, in its header: drop it from each warning.
    prefix = f"{model.source}: " if model.source else ""
    return [str(warning).removeprefix(prefix) for warning in check(model)]


def verify_model(path: str | os.PathLike, *, peers: Sequence[str] = (), rtol: float | None = None,
                 atol: float | None = None, seed: int = 0, inputs: Mapping[str, np.ndarray] | None = None,
                 inputs_source: str | None = None, expected: Mapping[str, np.ndarray] | None = None,
                 manifest: Manifest | None = None, example: str | None = None) -> ModelReport:
    """Verify one `.onnx` or `.xml` model on every path. See the module docstring for the rules."""
    from poolir import runtime
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".onnx", ".xml"):
        raise UsageError(f"cannot verify {suffix or 'a file without suffix'!r}: expected .onnx, .xml or a folder "
                         "of examples", file=path)
    if not path.is_file():
        raise UsageError("no such file", file=path)
    peers = check_peers(peers)
    manifest = manifest or Manifest()
    if suffix == ".onnx":
        model, kind, warnings = load_onnx(path), "onnx", []
    else:
        from poolir import ir
        model, kind = ir.read_model(path), "ir"
        warnings = _shape_warnings(model)
    try:
        session = runtime.Session(model)
    except PoolirError as error:  # given a ModelProto, the ONNX program knows no file name to report
        raise error.located(file=path) from None
    feeds = _feeds_for(session, inputs, seed, str(path))
    reference_names = list(expected) if expected is not None else list(session.outputs)
    with tempfile.TemporaryDirectory(prefix="poolir-verify-") as workdir:
        if kind == "onnx":
            outcomes = onnx_paths(model, feeds, peers, reference_names, Path(workdir))
        else:
            outcomes = ir_paths(model, path, feeds, peers, reference_names)
    if expected is not None:
        reference_outputs, reference = dict(expected), "expected.npz"
    else:
        reference_outputs, reference = outcomes[0].outputs, outcomes[0].name
    report = ModelReport(os.fspath(path), kind, reference, example, manifest.expected_source,
                         inputs_source or f"random (seed {seed})", warnings)
    for outcome in outcomes:
        report.rows.extend(_rows(outcome, reference_outputs, reference, manifest, rtol, atol))
    return report


def _rows(outcome: PathOutcome, reference_outputs: Mapping[str, np.ndarray], reference: str, manifest: Manifest,
          rtol: float | None, atol: float | None) -> list[Row]:
    if outcome.outputs is None:
        expected_reason = manifest.expected_refused.get(outcome.name)
        status = "expected-refused" if expected_reason is not None else outcome.status
        detail = outcome.detail if expected_reason is None else f"{outcome.detail} (expected: {expected_reason})"
        return [Row(name, outcome.name, status, expected_shape=tuple(array.shape), expected_dtype=str(array.dtype),
                    detail=detail) for name, array in reference_outputs.items()]
    rows = []
    for name, want in reference_outputs.items():
        want = np.asarray(want)
        if outcome.name == reference:
            rows.append(Row(name, outcome.name, "reference", tuple(want.shape), str(want.dtype)))
        elif name not in outcome.outputs:
            rows.append(Row(name, outcome.name, "mismatch", expected_shape=tuple(want.shape),
                            expected_dtype=str(want.dtype),
                            detail=f"output missing (this path produced: {', '.join(outcome.outputs) or 'none'})"))
        else:
            engine = outcome.name.split("(")[0]
            computed_as = np.dtype(COMPUTED_AS.get((engine, want.dtype.name), want.dtype))
            tolerance = tolerance_for(computed_as, rtol, atol, manifest.tolerance)
            rows.append(compare(name, outcome.name, outcome.outputs[name], want, tolerance))
    for name, array in outcome.outputs.items():
        if name not in reference_outputs:
            rows.append(Row(name, outcome.name, "mismatch", tuple(array.shape), str(array.dtype),
                            detail=f"unexpected output (the reference has: {', '.join(reference_outputs)})"))
    return rows


def is_example(folder: Path) -> bool:
    return any((folder / name).is_file() for name in EXAMPLE_MODELS)


def find_examples(folder: Path) -> list[Path]:
    """`folder` itself when it is an example, else every example folder below it, in sorted order."""
    if is_example(folder):
        return [folder]
    found = []
    for child in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith((".", "__"))):
        found.extend(find_examples(child))
    return found


def verify_example(folder: str | os.PathLike, *, peers: Sequence[str] = (), rtol: float | None = None,
                   atol: float | None = None, seed: int = 0) -> list[ModelReport]:
    """Verify every model of one example folder against its expected.npz, with its inputs.npz."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    inputs = load_arrays(folder / "inputs.npz") if (folder / "inputs.npz").is_file() else None
    expected = load_arrays(folder / "expected.npz") if (folder / "expected.npz").is_file() else None
    reports = []
    for name in EXAMPLE_MODELS:
        if (folder / name).is_file():
            reports.append(verify_model(folder / name, peers=peers, rtol=rtol, atol=atol, seed=seed, inputs=inputs,
                                        inputs_source=os.fspath(folder / "inputs.npz") if inputs else None,
                                        expected=expected, manifest=manifest, example=os.fspath(folder)))
    return reports


def expand(paths: Sequence[str | os.PathLike]) -> list[Path]:
    """The model files and example folders to verify, in order; `examples/` when no path is given."""
    targets: list[Path] = []
    for given in paths or [DEFAULT_EXAMPLES]:
        path = Path(given)
        if path.is_dir():
            examples = find_examples(path)
            if not examples:
                raise UsageError(f"no examples here (an example folder holds {' and/or '.join(EXAMPLE_MODELS)})",
                                 file=path)
            targets.extend(examples)
        elif path.is_file():
            targets.append(path)
        else:
            raise UsageError("no such file or folder", file=path)
    return targets


def verify_paths(paths: Sequence[str | os.PathLike] = (), *, peers: Sequence[str] = (), rtol: float | None = None,
                 atol: float | None = None, seed: int = 0, inputs: str | os.PathLike | None = None,
                 progress: Callable[[int, int, Path], None] | None = None) -> Report:
    """Verify model files and example folders (default: examples/). The public entry point.

    `inputs` (an .npz) feeds the model files given directly; example folders use their own inputs.npz.
    `progress(done, total, target)` is called before each target.
    """
    peers = check_peers(peers)
    for name, value in (("rtol", rtol), ("atol", atol)):
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise UsageError(f"--{name} {value} must be a finite number >= 0")
    given_inputs = load_arrays(Path(inputs)) if inputs is not None else None
    targets = expand(paths)
    report = Report([], peers, rtol, atol, seed)
    for done, target in enumerate(targets):
        if progress is not None:
            progress(done, len(targets), target)
        if target.is_dir():
            report.models.extend(verify_example(target, peers=peers, rtol=rtol, atol=atol, seed=seed))
        else:
            report.models.append(verify_model(target, peers=peers, rtol=rtol, atol=atol, seed=seed,
                                              inputs=given_inputs,
                                              inputs_source=os.fspath(inputs) if inputs is not None else None))
    if progress is not None:
        progress(len(targets), len(targets), None)
    return report


def verify_path(path: str | os.PathLike, **options) -> Report:
    """Verify one model file or folder; see `verify_paths`."""
    return verify_paths([path], **options)
