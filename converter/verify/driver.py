"""Verifying models and example folders: every path of a model compared, output by output, with the reference.

    report = verify_paths(["examples/"], peers=("onnxruntime",))
    report.passed            # every row matched (or was an expected refusal)
    report.to_dict()         # the --json schema

The reference is the example's `expected.npz`, else the model's first path (paths.py). Each path yields
one row per output: shape, dtype, max abs and rel error and a status:

    reference          the path the others are compared with (only when there is no expected.npz)
    ok                 equal within the tolerance (compare.py)
    mismatch           a value, shape or dtype differs, or an output is missing / unexpected
    refused            the converter refused (ConversionError / UnsupportedError): it will not
                       change a model's meaning, and says why. Fails verification, because the model
                       could not be carried across, unless the manifest lists the path under
                       "expected_refused" (status "expected-refused", which passes).
    error              the path could not run (a peer failed, a converted model was rejected).
                       Fails, unless listed under "expected_refused" like a refusal.
    known-deviation    a mismatch the example's manifest lists under "known_deviations" (a peer's converter
                       known to compute something else there, pinned by a test). Passes.
    unsupported        a peer has no kernel for an operator of the model ("not supported by onnxruntime"):
                       it says nothing about the model, for a bundled example and a user's model alike. Passes.

Every path with a mismatching row is then searched for the first node where it diverges (locate.py), in the
graph run by poolir in the reference's world: the model itself, or the --source ONNX for an IR checked against
the model it came from (`verify MODEL.xml --source MODEL.onnx`).

A model whose own reference path cannot run (it is unreadable, unsupported, or the inputs do not fit)
is bad input: verify_model raises the PoolirError, naming the model. verify_paths reports it as that
model's error and goes on with the others (the command line exits 2 when any model is invalid).

Random inputs are drawn once per model in one fixed shape (--input-shape, or a dynamic batch set to 1),
and every path runs on those same arrays; the shapes given are also the ones the ONNX -> IR conversion fixes.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import onnx

from poolir import ir, runtime
from poolir.converter.feeds import VERIFY_INPUT_HINT, complete_feeds, fix_shapes
from poolir.converter.verify.compare import COMPUTED_AS, Row, ToleranceOptions, compare
from poolir.converter.verify.locate import Location, locate
from poolir.converter.verify.examples import EXAMPLE_MODELS, Manifest, expand, load_arrays, read_manifest
from poolir.converter.verify.paths import PathOutcome, check_peers, ir_paths, onnx_paths
from poolir.converter.verify.report import ModelReport, Report
from poolir.ir.errors import PoolirError, UsageError
from poolir.runtime.onnx_functions import inline_functions
from poolir.runtime.onnx_model import load_onnx


def _shape_warnings(model) -> list[str]:
    """Declared-vs-inferred disagreements of an IR model (the AvgPool-1 spec's own examples have two)."""
    # The report names the file once, in its header: drop it from each warning.
    prefix = f"{model.source}: " if model.source else ""
    return [str(warning).removeprefix(prefix) for warning in ir.check(model)]


def _compressed_weights_warning(model: ir.Model) -> list[str]:
    """With --source: the IR's weights stored in a narrower float type than the computation reads them in (Const
    f16 -> Convert f32: OpenVINO's compress_to_fp16, the default of ovc and save_model). They were rounded from the
    source's weights, so the IR cannot keep every number, whatever converted it: said before the rows, since every
    node then differs a little and the first to leave the tolerance only shows where the rounding adds up."""
    narrow = {layer.id: layer for layer in model.layers
              if layer.type == "Const" and layer.attrs.get("element_type") in ("f16", "bf16")}
    widening = {layer.id for layer in model.layers
                if layer.type == "Convert" and layer.attrs.get("destination_type") in ("f32", "f64")}
    widened = {edge.from_layer for edge in model.edges if edge.from_layer in narrow and edge.to_layer in widening}
    if not widened:
        return []
    types = sorted({narrow[layer_id].attrs["element_type"] for layer_id in widened})
    return [f"{len(widened)} weight tensors are stored as {'/'.join(types)} and widened by Convert (compressed "
            f"weights: OpenVINO's compress_to_fp16, the default of ovc and save_model): rounded from the source's, so "
            f"every output differs from the source's by that rounding; save with compress_to_fp16=False to keep "
            f"every number"]


def verify_model(path: str | os.PathLike, *, peers: Sequence[str] = (), rtol: float | None = None,
                 atol: float | None = None, seed: int = 0, inputs: Mapping[str, np.ndarray] | None = None,
                 inputs_source: str | None = None, expected: Mapping[str, np.ndarray] | None = None,
                 manifest: Manifest | None = None, example: str | None = None,
                 input_shapes: Mapping[str, Sequence[int]] | None = None,
                 note: Callable[[str], None] | None = None, source: str | os.PathLike | None = None,
                 tolerances: ToleranceOptions | None = None, locate_divergence: bool = True,
                 step: Callable[[str], None] | None = None) -> ModelReport:
    """Verify one `.onnx` or `.xml` model on every path. See the module docstring for the rules.

    `input_shapes` fixes dynamic dims (name -> dims); `note` is told when a dynamic batch is set to 1; `source`
    (an .onnx) makes the reference the ONNX an .xml came from; `tolerances` (per-output overrides) replaces
    `rtol`/`atol`; `step(message)` is told each path as it starts (progress)."""
    options = tolerances or ToleranceOptions(rtol, atol)
    try:
        return _verify_model(Path(path), peers, options, seed, inputs, inputs_source, expected, manifest,
                             example, input_shapes, note, source, locate_divergence, step)
    except PoolirError as error:  # a feed that does not fit, found while running a ModelProto: name the model
        raise error.located(file=path) from None


_SOURCE_PAIR = "--source checks an IR (.xml) against the ONNX (.onnx) it came from"


def _verify_model(path: Path, peers, options, seed, inputs, inputs_source, expected, manifest, example,
                  input_shapes, note, source, locate_divergence, step) -> ModelReport:
    suffix = path.suffix.lower()
    if suffix not in (".onnx", ".xml"):
        raise UsageError(f"cannot verify {suffix or 'a file without suffix'!r}: expected .onnx, .xml or a folder "
                         "of examples", file=path)
    if not path.is_file():
        raise UsageError("no such file", file=path)
    peers = check_peers(peers)
    manifest = manifest or Manifest()
    source_model = None
    if source is not None:
        if suffix != ".xml" or Path(source).suffix.lower() != ".onnx":
            raise UsageError(_SOURCE_PAIR, file=source)
        source_model = load_onnx(source)
    if suffix == ".onnx":
        model, kind, warnings = load_onnx(path), "onnx", []
    else:
        model, kind = ir.read_model(path), "ir"
        warnings = _shape_warnings(model) + (_compressed_weights_warning(model) if source is not None else [])
    try:
        session = runtime.Session(model if source_model is None else source_model)
    except PoolirError as error:  # given a ModelProto, the ONNX program knows no file name to report
        raise error.located(file=path if source is None else source) from None
    specs = fix_shapes(session.inputs, input_shapes, str(path), given=list(inputs or {}), note=note)
    feeds = complete_feeds(specs, inputs, seed, str(path), hint=VERIFY_INPUT_HINT)
    reference_names = list(expected) if expected is not None else list(session.outputs)
    report = ModelReport(os.fspath(path), kind, "-", example, manifest.expected_source,
                         inputs_source or f"random (seed {seed})", warnings,
                         source_model=None if source is None else os.fspath(source))
    try:
        with tempfile.TemporaryDirectory(prefix="poolir-verify-") as workdir:
            if kind == "onnx":
                outcomes = onnx_paths(model, feeds, peers, reference_names, Path(workdir),
                                      input_shapes=input_shapes, step=step)
            else:
                outcomes = ir_paths(model, path, feeds, peers, reference_names, source=source_model, step=step)
            if expected is not None:
                reference_outputs, report.reference = dict(expected), "expected.npz"
            else:
                reference_outputs, report.reference = outcomes[0].outputs, outcomes[0].name
            for outcome in outcomes:
                report.rows.extend(_rows(outcome, reference_outputs, report.reference, manifest, options))
            report.warnings.extend(f"{outcome.name}: {outcome.note}" for outcome in outcomes if outcome.note)
            if locate_divergence:
                _locate(report, outcomes, model if source_model is None else source_model, feeds, options, step)
    except PoolirError as error:  # the reference path could not run: the model's fault, named
        raise error.located(file=path) from None
    return report


def _locate(report: ModelReport, outcomes: list[PathOutcome], reference_model, feeds, options, step) -> None:
    """For each path with a mismatching row, the first node where it diverges (locate.py), and its first
    diverging model output. The reference graph is run by poolir in its own world (outcomes[0])."""
    reference = outcomes[0]
    if isinstance(reference_model, onnx.ModelProto):  # the runtime names the tensors of the inlined graph
        reference_model = inline_functions(reference_model)
    if any(row.path == reference.name and not row.passed for row in report.rows):
        return  # the graph itself differs from expected.npz: the other paths are searched against a wrong run
    for outcome in outcomes[1:]:
        failing = [row for row in report.rows if row.path == outcome.name
                   and row.status in ("mismatch", "known-deviation")]
        if not failing or outcome.probe is None or reference.probe is None:
            continue
        try:
            location = locate(reference.probe, reference_model, outcome.name, outcome.probe, feeds, options,
                              step=step, outputs=list(dict.fromkeys(row.output for row in failing)))
        except Exception as error:  # noqa: BLE001 - a peer failing while probed: the search's outcome, reported
            text = str(error).strip().splitlines()
            location = Location(outcome.name, note=f"could not look inside the path: {type(error).__name__}: "
                                                   f"{text[0] if text else ''}")
        location.first_output = failing[0].output
        report.locations.append(location)


def _rows(outcome: PathOutcome, reference_outputs: Mapping[str, np.ndarray], reference: str, manifest: Manifest,
          options: ToleranceOptions) -> list[Row]:
    if outcome.outputs is None:
        expected_reason = manifest.expected_refused.get(outcome.name)
        status = outcome.status
        detail = outcome.detail
        if expected_reason is not None and status != "unsupported":
            status, detail = "expected-refused", f"{outcome.detail} (expected: {expected_reason})"
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
            tolerance = options.for_output(name, computed_as, manifest.tolerance)
            row = compare(name, outcome.name, outcome.outputs[name], want, tolerance)
            deviation = manifest.known_deviations.get(outcome.name)
            if row.status == "mismatch" and deviation is not None:
                row.status, row.detail = "known-deviation", f"{row.detail} (known: {deviation})"
            rows.append(row)
    for name, array in outcome.outputs.items():
        if name not in reference_outputs:
            rows.append(Row(name, outcome.name, "mismatch", tuple(array.shape), str(array.dtype),
                            detail=f"unexpected output (the reference has: {', '.join(reference_outputs)})"))
    return rows


def verify_example(folder: str | os.PathLike, *, peers: Sequence[str] = (), rtol: float | None = None,
                   atol: float | None = None, seed: int = 0, keep_going: bool = False,
                   tolerances: ToleranceOptions | None = None,
                   step: Callable[[str], None] | None = None) -> list[ModelReport]:
    """Verify every model of one example folder against its expected.npz, with its inputs.npz.

    keep_going=True reports a bad model (or a bad folder) as an error entry instead of raising."""
    folder = Path(folder)
    try:
        manifest = read_manifest(folder)
        inputs = load_arrays(folder / "inputs.npz") if (folder / "inputs.npz").is_file() else None
        expected = load_arrays(folder / "expected.npz") if (folder / "expected.npz").is_file() else None
    except PoolirError as error:
        if not keep_going:
            raise
        return [ModelReport.failed(os.fspath(folder), error, example=os.fspath(folder))]
    reports = []
    for name in EXAMPLE_MODELS:
        if (folder / name).is_file():
            try:
                reports.append(verify_model(folder / name, peers=peers, rtol=rtol, atol=atol, seed=seed,
                                            inputs=inputs,
                                            inputs_source=os.fspath(folder / "inputs.npz") if inputs else None,
                                            expected=expected, manifest=manifest, example=os.fspath(folder),
                                            tolerances=tolerances, step=step))
            except PoolirError as error:
                if not keep_going:
                    raise
                reports.append(ModelReport.failed(os.fspath(folder / name), error, example=os.fspath(folder)))
    return reports


def verify_paths(paths: Sequence[str | os.PathLike] = (), *, peers: Sequence[str] = (),
                 rtol: float | str | Sequence[str | float] | None = None,
                 atol: float | str | Sequence[str | float] | None = None, seed: int = 0,
                 inputs: str | os.PathLike | None = None, input_shapes: Mapping[str, Sequence[int]] | None = None,
                 progress: Callable[[int, int, Path], None] | None = None,
                 note: Callable[[str], None] | None = None, source: str | os.PathLike | None = None,
                 step: Callable[[str], None] | None = None) -> Report:
    """Verify model files and example folders (default: examples/). The public entry point.

    `rtol`/`atol`: a number, or command-line values (`V` or `NAME=V`, see ToleranceOptions.parse). `inputs` (an
    .npz) and `input_shapes` feed the model files given directly; example folders use their own inputs.npz.
    `source` (an .onnx) is the model the one .xml given came from, and becomes its reference.
    `progress(done, total, target)` is called before each target and `step(message)` before each path; `note`
    is told when a dynamic batch is set to 1. A model that cannot be verified (unreadable, unsupported, inputs
    that do not fit) is reported as an error entry (ModelReport.error) and the others are still verified.
    """
    peers = check_peers(peers)
    options = ToleranceOptions.parse(rtol, atol)
    given_inputs = load_arrays(Path(inputs)) if inputs is not None else None
    targets = expand(paths)
    if source is not None and (len(targets) != 1 or targets[0].is_dir()):
        raise UsageError("--source takes one model file to check against it (an .xml), "
                         f"not {len(targets)} targets" if len(targets) != 1 else "--source takes a model file, "
                         "not a folder of examples", file=source)
    if source is not None and (targets[0].suffix.lower() != ".xml" or Path(source).suffix.lower() != ".onnx"):
        # A usage error, said once: not a model that failed in the report, the summary and the exit line.
        raise UsageError(_SOURCE_PAIR, file=source)
    report = Report([], peers, options.rtol, options.atol, seed, dict(options.output_rtol),
                    dict(options.output_atol))
    for done, target in enumerate(targets):
        if progress is not None:
            progress(done, len(targets), target)
        if target.is_dir():
            report.models.extend(verify_example(target, peers=peers, seed=seed, keep_going=True,
                                                tolerances=options, step=step))
            continue
        try:
            report.models.append(verify_model(target, peers=peers, seed=seed, inputs=given_inputs,
                                              inputs_source=os.fspath(inputs) if inputs is not None else None,
                                              input_shapes=input_shapes, note=note, source=source,
                                              tolerances=options, step=step))
        except PoolirError as error:
            report.models.append(ModelReport.failed(os.fspath(target), error))
    if progress is not None:
        progress(len(targets), len(targets), None)
    return report


def verify_path(path: str | os.PathLike, **options) -> Report:
    """Verify one model file or folder; see `verify_paths`."""
    return verify_paths([path], **options)
