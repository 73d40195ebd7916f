"""`poolir run MODEL`: execute an .onnx or .xml model with the reference runtime and summarise its outputs.

A thin layer over `runtime.Session`. Inputs come from `--input NAME=FILE.npy` and `--inputs FILE.npz`
(an --input wins over the same name in the .npz); every other input is drawn at random from `--seed`:
floats uniformly in [-1, 1), integers across the whole range of their type, booleans fair. Each input's
random stream depends only on the seed and the input's position, so giving one input from a file does
not change the random values of the others. Dynamic dims cannot be guessed: such inputs must be given.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import click
import numpy as np

from ir.atomic import atomic_path, refuse_overwriting_inputs
from ir.errors import FeedError, PoolirError, UsageError


def _load_array(path: str, what: str) -> np.ndarray:
    try:
        array = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise UsageError("no such file", file=path, where=what) from None
    except Exception as error:  # numpy's header parser raises ValueError, SyntaxError, TokenError... on bad bytes
        raise UsageError(f"not a readable .npy file ({type(error).__name__}: {' '.join(str(error).split())})",
                         file=path, where=what) from None
    if not isinstance(array, np.ndarray):
        raise UsageError("expected a single array (.npy), got an archive; use --inputs for .npz", file=path,
                         where=what)
    return array


def _load_archive(path: str) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as archive:
            if not hasattr(archive, "files"):
                raise UsageError("expected an .npz archive of named arrays", file=path)
            return {name: archive[name] for name in archive.files}
    except FileNotFoundError:
        raise UsageError("no such file", file=path) from None
    except PoolirError:
        raise
    except Exception as error:  # zipfile and numpy's header parser raise many types on bad bytes
        raise UsageError(f"not a readable .npz archive ({type(error).__name__}: {' '.join(str(error).split())})",
                         file=path) from None


def _parse_input_option(text: str) -> tuple[str, str]:
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise UsageError(f"--input {text!r}: expected NAME=FILE.npy")
    return name, path


def _adopt_bfloat16(array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """numpy stores bfloat16 arrays as raw 2-byte records (V2); read them back as the declared bfloat16."""
    if array.dtype.kind == "V" and array.dtype.itemsize == dtype.itemsize and dtype.name == "bfloat16":
        return array.view(dtype)
    return array


def random_input(spec, seed: int, position: int, source: str | None = None) -> np.ndarray:
    """A random feed for a fully static input (see the module docstring for the distributions).

    `source` (the model file) is named in the error when the input does not fit in memory."""
    if seed < 0:  # numpy's seeds are non-negative ('poolir run --seed -1' was an internal error)
        raise UsageError(f"--seed {seed} must be >= 0")
    try:
        return _random_values(spec, seed, position)
    except UsageError as error:  # dynamic dims, an element type that cannot be drawn: name the model
        raise error.located(file=source) from None
    except MemoryError as error:  # a legal model (below ir.MAX_ELEMENTS) can still exceed this machine
        raise UsageError(f"not enough memory for a random input '{spec.name}' of shape {spec.shape_text()} "
                         f"({error})", file=source) from None


def _random_values(spec, seed: int, position: int) -> np.ndarray:
    if spec.shape is None or any(d is None for d in spec.shape):
        raise UsageError(f"input '{spec.name}' has dynamic dims (shape {spec.shape_text()}): give it with "
                         f"--input {spec.name}=FILE.npy or --inputs FILE.npz")
    generator = np.random.default_rng([seed, position])
    shape = tuple(spec.shape)
    dtype = np.dtype(spec.dtype)
    if dtype == np.bool_:
        return generator.integers(0, 2, size=shape).astype(np.bool_)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return generator.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    if dtype.kind == "f" or dtype.name == "bfloat16":
        return generator.uniform(-1.0, 1.0, size=shape).astype(dtype)
    raise UsageError(f"input '{spec.name}' has element type {dtype}, which cannot be drawn at random: give it "
                     f"with --input")


def _number(value) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def summarize(name: str, array: np.ndarray) -> dict:
    """Name, shape, dtype and min/max/mean (None for an empty array; NaN shown as None in JSON)."""
    summary = {"name": name, "shape": list(array.shape), "dtype": str(array.dtype)}
    if array.size == 0:
        summary.update(min=None, max=None, mean=None)
    else:
        wide = array.astype(np.float64)
        summary.update(min=_number(wide.min()), max=_number(wide.max()), mean=_number(wide.mean()))
    return summary


def _text(summary: dict) -> str:
    def show(value):
        return "nan" if value is None else f"{value:.6g}"
    if 0 in summary["shape"]:
        stats = "(empty)"
    else:
        stats = f"min {show(summary['min'])}  max {show(summary['max'])}  mean {show(summary['mean'])}"
    return f"{summary['name']}: shape {summary['shape']}  dtype {summary['dtype']}  {stats}"


@click.command("run")
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("--input", "input_options", multiple=True, metavar="NAME=FILE.npy",
              help="Feed input NAME from a .npy file (repeatable).")
@click.option("--inputs", "inputs_archive", type=click.Path(dir_okay=False), metavar="FILE.npz",
              help="Feed inputs from the named arrays of an .npz archive.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for inputs that are not given.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), metavar="OUT.npz",
              help="Save every output to an .npz archive (written atomically).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def command(model, input_options, inputs_archive, seed, output, as_json) -> None:
    """Run MODEL (.onnx or .xml) with the reference runtime and print a summary of each output.

    Inputs not given are drawn from --seed: floats uniformly in [-1, 1), integers over their type's
    whole range. Inputs with dynamic dims must be given.
    """
    import runtime

    if output:
        refuse_overwriting_inputs(output, [model, Path(model).with_suffix(".bin"), inputs_archive,
                                           *(_parse_input_option(option)[1] for option in input_options)])
    session = runtime.Session(model)
    expected = {spec.name: spec for spec in session.inputs}
    feeds: dict[str, np.ndarray] = {}
    if inputs_archive:
        feeds.update(_load_archive(inputs_archive))
    for option in input_options:
        name, path = _parse_input_option(option)
        feeds[name] = _load_array(path, f"input '{name}'")
    unknown = [name for name in feeds if name not in expected]
    if unknown:
        raise FeedError(f"unknown input {', '.join(repr(n) for n in unknown)} (the model's inputs are: "
                        f"{', '.join(repr(n) for n in expected) or 'none'})", file=model)
    for position, spec in enumerate(session.inputs):
        if spec.name in feeds:
            feeds[spec.name] = _adopt_bfloat16(feeds[spec.name], np.dtype(spec.dtype))
        else:
            feeds[spec.name] = random_input(spec, seed, position, source=model)
    outputs = session.run(feeds)
    if output:
        with atomic_path(output) as temporary, open(temporary, "wb") as handle:
            np.savez(handle, **outputs)
    summaries = [summarize(name, array) for name, array in outputs.items()]
    if as_json:
        click.echo(json.dumps({"model": str(Path(model)), "outputs": summaries}, indent=2))
    else:
        for summary in summaries:
            click.echo(_text(summary))
