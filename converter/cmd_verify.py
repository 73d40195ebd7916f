"""`poolir verify`: run a model on every path (runtime, converted forms, peers) and compare, output by output.

A thin layer over `converter.verify`: this module only parses options and formats the report.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from poolir.converter.exit_codes import EXIT_BAD_INPUT, EXIT_MISMATCH
from poolir.converter.input_shapes import input_shape_option
from poolir.converter.json_errors import json_option
from poolir.converter.verify import EXACT, PEERS, ModelReport, Report, Row, verify_paths
from poolir.ir.atomic import refuse_overwriting_inputs, write_files_atomically
from poolir.ir.model import shape_str
from poolir.converter.verify.examples import walk_folders
from poolir.ir.errors import printable

STATUS_WORDS = {"reference": "reference", "ok": "ok", "mismatch": "MISMATCH", "refused": "REFUSED",
                "expected-refused": "refused (expected)", "error": "ERROR", "unsupported": "not supported",
                "known-deviation": "differs (known)"}
# Seconds of work before progress appears: a verify that takes less shows none.
PROGRESS_AFTER = 2.0


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    if value == 0:
        return "0"
    return f"{value:.3g}"


def _shape(shape) -> str:
    return "-" if shape is None else shape_str(shape)


def _value(value) -> str:
    return repr(value) if isinstance(value, bool) else (f"{value:.9g}" if isinstance(value, float) else str(value))


def _status(row: Row) -> str:
    """The status cell: which tolerance passed an ok row, which engine lacks a kernel."""
    if row.status == "ok" and row.passed_by:
        return f"ok ({row.passed_by})"
    if row.status == "unsupported":
        return f"not supported by {row.path.split('(')[0]}"
    return STATUS_WORDS.get(row.status, row.status)


def format_model(model: ModelReport) -> list[str]:
    """One model as a table: a header, one line per output and path, then the details of every failure and
    the first node where each failing path diverges."""
    if model.error is not None:
        return [f"{model.source}  [ERROR]", f"  error: {model.error['message']}"]
    source = model.expected_source or {}
    origin = ", ".join(str(v) for k, v in source.items() if k in ("kind", "document", "section", "test", "engine"))
    reference = model.reference + (f" ({origin})" if origin else "")
    if model.source_model:
        reference += f" of {model.source_model}"
    lines = [f"{model.source}  [{'PASS' if model.passed else 'FAIL'}]",
             f"  reference: {reference}; inputs: {model.inputs}"]
    lines += [f"  warning: {warning}" for warning in model.warnings]
    header = ("output", "path", "shape", "dtype", "max abs err", "max rel err", "status")
    table = [header] + [(printable(r.output), printable(r.path), _shape(r.shape), r.dtype or "-",
                         _number(r.max_abs_error), _number(r.max_rel_error), _status(r)) for r in model.rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        lines.append("  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    for row in model.rows:
        if row.status in ("mismatch", "refused", "error", "expected-refused", "unsupported", "known-deviation"):
            lines.append(f"  {row.output} via {row.path}: {_explain(row)}")
    groups: dict = {}  # paths that diverge at the same node the same way are reported once, together
    for location in model.locations:
        d = location.divergence
        key = (id(location),) if d is None else (d.node, d.tensor, d.mismatched, d.shape, location.first_output)
        groups.setdefault(key, []).append(location)
    for locations in groups.values():
        lines.extend(_located(locations[0], ", ".join(location.path for location in locations)))
    # Names, paths and details come from files: a newline or an ANSI escape in one is shown escaped.
    return [printable(line, limit=None) for line in lines]


def _explain(row: Row) -> str:
    parts = [row.detail] if row.detail else []
    if row.first_mismatch is not None:
        m = row.first_mismatch
        parts.append(f"first difference at [{','.join(map(str, m.index))}]: {_value(m.actual)} "
                     f"instead of {_value(m.expected)}")
    if row.tolerance is not None and row.status == "mismatch" and row.first_mismatch is not None:
        parts.append("compared exactly" if row.tolerance == EXACT
                     else f"rtol {row.tolerance.rtol:g}, atol {_number(row.atol_used)}"
                     + (" (rtol x max|expected|)" if row.tolerance.atol is None else ""))
    return "; ".join(parts)


def _located(location, paths: str) -> list[str]:
    d = location.divergence
    if d is None:
        why = location.note or (f"no tensor diverges among the {location.compared} of {location.tensors} "
                                "it exposes by name; the difference is in the outputs alone")
        return [f"  {paths}: first divergence not located: {why}"]
    attributes = " ".join(f"{k}={_attribute(v)}" for k, v in d.attributes.items())
    figures = (d.detail or "") if d.shape != d.expected_shape else (
        f"{d.mismatched} of {d.size} elements differ, max abs err {_number(d.max_abs_error)}, "
        f"max rel err {_number(d.max_rel_error)} ({d.tolerance})")
    lines = [f"  {paths}: first diverges at node '{d.node}' ({d.op}), output '{d.tensor}'",
             f"      {attributes}" if attributes else None,
             f"      {figures}",
             f"      after {location.compared} tensors that agree; first diverging model output: "
             f"'{location.first_output}'"]
    if d.first_mismatch is not None:
        m = d.first_mismatch
        lines.insert(3, f"      first difference at [{','.join(map(str, m.index))}]: {_value(m.actual)} instead of "
                        f"{_value(m.expected)}")
    if d.amplified:
        lines.append("      its inputs agree, and poolir fed this path's own inputs computes this path's output: the "
                     "node does not compute differently; upstream differences inside the tolerance at its inputs are "
                     "outside it here (amplified by an ill-conditioned node, or judged against this tensor's smaller "
                     "range)")
    if d.unobserved_inputs:
        lines.append(f"      inputs this path does not expose (the cause may be there): "
                     f"{', '.join(d.unobserved_inputs)}")
    return [line for line in lines if line is not None]


def _attribute(value) -> str:
    if isinstance(value, list):
        return ",".join(_attribute(v) for v in value)
    return _value(value) if isinstance(value, float) else str(value)


def format_summary(report: Report) -> str:
    counts = report.counts()
    failed = sum(not m.passed for m in report.models)
    rows = ", ".join(f"{n} {STATUS_WORDS.get(s, s)}" for s, n in sorted(counts.items()))
    invalid = len(report.invalid)
    verdict = "all match" if report.passed else f"{failed} model(s) failed" + (
        f" ({invalid} could not be verified)" if invalid else "")
    summary = f"{len(report.models)} model(s), {sum(counts.values())} row(s): {rows or 'none'} -- {verdict}"
    # The failures by name only: an error's message is in its model's block above, and on stderr.
    lines = [f"\nfailed: {printable(m.source, limit=None)}" for m in report.models if not m.passed]
    return summary + "".join(lines)


class _Progress:
    """Progress on stderr, only when stderr is a terminal (never in logs or pipes): a counter of the models of
    a folder, and each model's current path or search once the work has taken PROGRESS_AFTER seconds."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()
        self.started = time.monotonic()
        self.model = ""
        self.shown = False

    def __call__(self, done: int, total: int, target: Path | None) -> None:
        if not self.enabled:
            return
        if target is None:
            if self.shown:
                sys.stderr.write("\r\033[K")
                sys.stderr.flush()
            return
        self.model = (f"{done + 1}/{total} " if total > 1 else "") + printable(target, limit=None)
        if total >= 2:
            self._show(f"verifying {self.model}")

    def step(self, message: str) -> None:
        """A path of the current model starts (or its divergence is searched)."""
        if self.enabled and time.monotonic() - self.started >= PROGRESS_AFTER:
            self._show(f"verifying {self.model}: {printable(message, limit=None)}")

    def _show(self, text: str) -> None:
        sys.stderr.write(f"\r\033[K{text}")
        sys.stderr.flush()
        self.shown = True


def _input_files(paths, inputs) -> list[Path]:
    """Every file verify reads: the models given (and their .bin), the files of example folders, --inputs."""
    files = [Path(inputs)] if inputs else []
    for path in map(Path, paths or ("examples",)):
        if path.is_dir():
            files.extend(p for folder in walk_folders(path) for p in folder.iterdir() if p.is_file())
        else:
            files.extend((path, path.with_suffix(".bin")))
    return files


@click.command("verify")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--source", type=click.Path(dir_okay=False), metavar="MODEL.onnx",
              help="The ONNX model the .xml given was converted from (by ovc, OpenVINO's API or poolir): the "
                   "reference becomes its ONNX semantics.")
@click.option("--peer", "peers", multiple=True, type=click.Choice(PEERS),
              help="Add a real engine as an extra path (repeatable).")
@click.option("--rtol", multiple=True, metavar="R|NAME=R", help="Relative tolerance for floating outputs; NAME=R "
              "for one output (repeatable; default per dtype: f64 1e-9, f32 3e-4, f16 2e-3, bf16 1.6e-2).")
@click.option("--atol", multiple=True, metavar="A|NAME=A", help="Absolute tolerance for floating outputs; NAME=A "
              "for one output (default: rtol x the output's largest magnitude). Integers are always exact.")
@click.option("--inputs", "inputs", type=click.Path(dir_okay=False), metavar="FILE.npz",
              help="Feeds for the model files given (example folders use their own inputs.npz).")
@input_shape_option(allow_dynamic=False)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for inputs that are not given.")
@json_option("Print the report (or the error) as JSON instead of tables.")
@click.option("--report", "report_file", type=click.Path(dir_okay=False), metavar="FILE",
              help="Also write the JSON report to FILE (atomically).")
def command(paths, source, peers, rtol, atol, inputs, input_shapes, seed, as_json, report_file) -> None:
    """Check that a model gives the same outputs on every path: as given, converted, converted back, and
    on the real engines (--peer; with openvino, OpenVINO's own converter too). PATHS are .onnx or .xml models
    or folders of examples (default: examples/); an example's expected.npz is the reference there. For every
    path that does not match, the first node where it diverges is named. Random inputs have one fixed shape
    on every path (--input-shape; a dynamic batch alone defaults to 1).

    Every path is reported, a model that cannot be verified as an error. Exit status: the worst outcome:
    2 when any model is invalid (or on bad usage), else 1 on any mismatch or unexpected refusal, else 0.
    """
    if report_file is not None:
        refuse_overwriting_inputs(report_file, _input_files(paths, inputs) + ([Path(source)] if source else []))
    progress = _Progress()
    notes: list[str] = []  # told once the report is made; not when a model is invalid (then one error line)
    report = verify_paths(paths, peers=peers, rtol=list(rtol), atol=list(atol), seed=seed, inputs=inputs,
                          input_shapes=input_shapes, progress=progress, source=source, step=progress.step,
                          note=notes.append)
    for note in notes if not report.invalid else ():
        click.echo(note, err=True)
    document = json.dumps(report.to_dict(), indent=2) + "\n"
    if report_file is not None:
        write_files_atomically({report_file: document.encode()})
    if as_json:
        click.echo(document, nl=False)
    else:
        for model in report.models:
            click.echo("\n".join(format_model(model)) + "\n")
        click.echo(format_summary(report))
    outputs = {row.output for model in report.models for row in model.rows}
    for name in sorted({*report.output_rtol, *report.output_atol} - outputs):
        click.echo(f"poolir: warning: --rtol/--atol {printable(name)}=...: no model verified has an output "
                   "of that name", err=True)
    for model in report.invalid:  # one line on stderr per invalid model, like every other bad input
        click.echo(f"poolir: error: {model.error['message']}", err=True)
    if report.invalid:
        sys.exit(EXIT_BAD_INPUT)
    if not report.passed:
        sys.exit(EXIT_MISMATCH)
