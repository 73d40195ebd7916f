"""`poolir run MODEL`: execute an .onnx or .xml model with the reference runtime and summarise its outputs.

A thin layer over `runtime.Session`. Inputs come from `--input NAME=FILE.npy` and `--inputs FILE.npz`
(an --input wins over the same name in the .npz); every other input is drawn at random from `--seed`:
floats uniformly in [-1, 1), integers across the whole range of their type, booleans fair. Each input's
random stream depends only on the seed and the input's position, so giving one input from a file does
not change the random values of the others. `--input-shape` fixes dynamic dims; a dynamic batch alone
defaults to 1 (and says so on stderr); any other dynamic dim needs a shape or a file.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import click
import numpy as np

from poolir import runtime
from poolir.converter.feeds import complete_feeds, fix_shapes
from poolir.converter.input_shapes import input_shape_option
from poolir.converter.json_errors import json_option
from poolir.converter.npz import check_archive_names, load_archive, load_array, save_archive
from poolir.ir.atomic import atomic_path, refuse_overwriting_inputs
from poolir.ir.errors import PoolirError, UsageError, printable
from poolir.ir.model import shape_str


def _parse_input_option(text: str) -> tuple[str, str]:
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise UsageError(f"--input {text!r}: expected NAME=FILE.npy")
    return name, path


def _note(message: str) -> None:
    click.echo(message, err=True)


def _number(value) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def summarize(name: str, array: np.ndarray) -> dict:
    """Name, shape, dtype and min/max/mean (None for an empty array; NaN shown as None in JSON), and for an output
    holding NaN or infinities their counts, `non_finite` ({"nan": 1, "+inf": 2, "-inf": 0})."""
    summary = {"name": name, "shape": list(array.shape), "dtype": str(array.dtype)}
    if array.size == 0 or array.dtype.kind not in "biuf" and array.dtype.name != "bfloat16":
        summary.update(min=None, max=None, mean=None)
        return summary
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf in the mean: NaN, without numpy's warning
        summary.update(min=_number(array.min()), max=_number(array.max()),
                       mean=_number(array.mean(dtype=np.float64)))
    if array.dtype.kind not in "biu":
        counts = {"nan": int(np.isnan(array).sum()), "+inf": int(np.isposinf(array).sum()),
                  "-inf": int(np.isneginf(array).sum())}
        if any(counts.values()):
            summary["non_finite"] = counts
    return summary


def non_finite_warning(model, summary: dict) -> str | None:
    """The warning line for an output holding NaN or infinities, which its min, max and mean hide or mislead."""
    counts = summary.get("non_finite")
    if not counts:
        return None
    held = ", ".join(f"{count} {kind if kind != 'nan' else 'NaN'}" for kind, count in counts.items() if count)
    return f"poolir: warning: {printable(str(model))}: output '{printable(summary['name'])}' holds {held}"


def _text(summary: dict) -> str:
    def show(value):
        return "nan" if value is None else f"{value:.6g}"
    if 0 in summary["shape"]:
        stats = "(empty)"
    else:
        stats = f"min {show(summary['min'])}  max {show(summary['max'])}  mean {show(summary['mean'])}"
    return f"{printable(summary['name'])}: shape {shape_str(summary['shape'])}  dtype {summary['dtype']}  {stats}"


@click.command("run")
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("--input", "input_options", multiple=True, metavar="NAME=FILE.npy",
              help="Feed input NAME from a .npy file (repeatable).")
@click.option("--inputs", "inputs_archive", type=click.Path(dir_okay=False), metavar="FILE.npz",
              help="Feed inputs from the named arrays of an .npz archive.")
@input_shape_option(allow_dynamic=False)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for inputs that are not given.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), metavar="OUT.npz",
              help="Save every output to an .npz archive (written atomically).")
@json_option("Print the summary (or the error) as JSON.")
def command(model, input_options, inputs_archive, input_shapes, seed, output, as_json) -> None:
    """Run MODEL (.onnx or .xml) with the reference runtime and print a summary of each output.

    Inputs not given are drawn from --seed in the shape --input-shape gives: floats uniformly in [-1, 1),
    integers over their type's whole range. A dynamic batch alone defaults to 1; other dynamic dims need
    --input-shape or an input file.
    """
    if output is not None:
        refuse_overwriting_inputs(output, [model, Path(model).with_suffix(".bin"), inputs_archive,
                                           *(_parse_input_option(option)[1] for option in input_options)])
    session = runtime.Session(model)
    given: dict[str, np.ndarray] = {}
    if inputs_archive:
        given.update(load_archive(inputs_archive))
    for option in input_options:
        name, path = _parse_input_option(option)
        given[name] = load_array(path, f"input '{name}'")
    notes: list[str] = []  # told after the run, or inside its error: a failed command prints one line
    specs = fix_shapes(session.inputs, input_shapes, model, given=list(given), note=notes.append)
    try:
        outputs = session.run(complete_feeds(specs, given, seed, model))
    except PoolirError as error:
        if not notes:
            raise
        told = "; ".join(note.removeprefix(f"{model}: ") for note in notes)
        extended = error.located()
        PoolirError.__init__(extended, f"{error.problem} ({told})", file=error.file, where=error.where)
        raise extended from None
    for note in notes:
        _note(note)
    # Everything is computed and checked before the output file is written: a failure leaves no file.
    summaries = [summarize(name, array) for name, array in outputs.items()]
    if output is not None:
        check_archive_names(outputs, file=model)
        with atomic_path(output) as temporary, open(temporary, "wb") as handle:
            save_archive(handle, outputs)
    if as_json:
        click.echo(json.dumps({"model": str(Path(model)), "outputs": summaries}, indent=2))
    else:
        for summary in summaries:
            click.echo(_text(summary))
    for warning in filter(None, (non_finite_warning(model, summary) for summary in summaries)):
        click.echo(warning, err=True)
