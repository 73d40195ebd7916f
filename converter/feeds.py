"""Model inputs from files or from a seed: what `poolir run` and `poolir verify` feed a model.

Random inputs: floats uniformly in [-1, 1), drawn in their own element type (float32 as float32: no
float64 array on the way; 16-bit floats through float32), integers across the whole range of their type,
booleans fair. Each input's random stream depends only on the seed and the input's position, so giving one
input from a file does not change the random values of the others.

Dynamic dims cannot be guessed (fix_shapes): `--input-shape` fixes them; a dynamic batch alone (dim 0
dynamic, every other dim static) defaults to 1, and says so; any other dynamic dim must be given.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Mapping, Sequence

import math

import numpy as np

from poolir.converter.npz import load_archive, load_array  # noqa: F401 (their home before)
from poolir.ir.budget import check_bytes
from poolir.ir.errors import BudgetError, FeedError, UsageError
from poolir.ir.model import shape_str
from poolir.runtime import TensorSpec
from poolir.runtime.program import by_declared_name

# How `poolir run` lets a user give an input; `poolir verify` takes files of arrays only (--inputs).
RUN_INPUT_HINT = "--input-shape {name}=... or --input {name}=FILE.npy or --inputs FILE.npz"
VERIFY_INPUT_HINT = "--input-shape {name}=... or --inputs FILE.npz"


def fix_shapes(inputs: Sequence[TensorSpec], shapes: Mapping[str, Sequence[int]] | None, source: str | None,
               given: Sequence[str] = (), note: Callable[[str], None] | None = None) -> list[TensorSpec]:
    """The inputs with the shapes a run will draw them in: each --input-shape applied (it must name a
    declared input, with the declared rank, agreeing with every static dim), and a dynamic batch alone
    (dim 0 dynamic, every other dim static) set to 1, told to `note` in one line. Inputs in `given`
    come from files: their arrays decide their shapes.
    """
    shapes = by_declared_name(shapes or {}, inputs, source)
    given = list(by_declared_name(dict.fromkeys(given), inputs, source))
    refuse_unknown_names(shapes, inputs, source, UsageError, "--input-shape names ")
    fixed = []
    for spec in inputs:
        shape = spec.shape
        if spec.name in shapes:
            dims = tuple(shapes[spec.name])
            if shape is not None:
                if len(dims) != len(shape):
                    raise UsageError(f"--input-shape {spec.name}{shape_str(dims)}: rank {len(dims)}, but the "
                                     f"model declares rank {len(shape)} ({shape_str(shape)})",
                                     file=source, where=f"input '{spec.name}'")
                for axis, (want, declared_dim) in enumerate(zip(dims, shape)):
                    if declared_dim is not None and want >= 0 and want != declared_dim:
                        raise UsageError(f"--input-shape {spec.name}{shape_str(dims)}: dim {axis} is {want}, "
                                         f"but the model declares {shape_str(shape)}", file=source,
                                         where=f"input '{spec.name}'")
            shape = tuple(None if d < 0 else d for d in dims)
        elif (spec.name not in given and shape and shape[0] is None
              and all(d is not None for d in shape[1:])):
            shape = (1, *shape[1:])
            if note is not None:
                message = f"input '{spec.name}': dynamic batch set to 1 (give --input-shape to choose)"
                note(f"{source}: {message}" if source else message)
        fixed.append(dataclasses.replace(spec, shape=shape))
    return fixed


def refuse_unknown_names(names, inputs: Sequence[TensorSpec], source: str | None, error=FeedError,
                         prefix: str = "") -> None:
    """The one check that every name given for an input (a feed, an --input-shape) is a declared input."""
    declared = [spec.name for spec in inputs]
    unknown = [name for name in names if name not in declared]
    if unknown:
        raise error(f"{prefix}unknown input {', '.join(repr(n) for n in unknown)} (the model's inputs "
                    f"are: {', '.join(repr(n) for n in declared) or 'none'})", file=source)


def complete_feeds(inputs: Sequence[TensorSpec], given: Mapping[str, np.ndarray] | None, seed: int, source: str,
                   hint: str = RUN_INPUT_HINT) -> dict[str, np.ndarray]:
    """A feed for every declared input: the given array where one is named (a bfloat16 stored as raw
    2-byte records is read back as bfloat16), else a random one from `seed` (see the module docstring).

    A given name the model does not declare is a FeedError; an input with dynamic dims that is not given
    is a UsageError whose message says how to give it (`hint`, with {name} filled in). Both name `source`.
    """
    given = by_declared_name(given or {}, inputs, source)
    refuse_unknown_names(given, inputs, source, FeedError)
    feeds = {}
    for position, spec in enumerate(inputs):
        if spec.name in given:
            feeds[spec.name] = adopt_bfloat16(np.asarray(given[spec.name]), np.dtype(spec.dtype))
        else:
            feeds[spec.name] = random_input(spec, seed, position, source=source, hint=hint)
    return feeds


def adopt_bfloat16(array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """numpy stores bfloat16 arrays as raw 2-byte records (V2); read them back as the declared bfloat16."""
    if array.dtype.kind == "V" and array.dtype.itemsize == dtype.itemsize and dtype.name == "bfloat16":
        return array.view(dtype)
    return array


def random_input(spec: TensorSpec, seed: int, position: int, source: str | None = None,
                 hint: str = RUN_INPUT_HINT) -> np.ndarray:
    """A random feed for a fully static input (see the module docstring for the distributions).

    `source` (the model file) is named in every error; `hint` says how to give an input that cannot be drawn."""
    if seed < 0:  # numpy's generators take non-negative seeds only
        raise UsageError(f"--seed {seed} must be >= 0")
    try:
        return _random_values(spec, seed, position, hint.format(name=spec.name))
    except (UsageError, BudgetError) as error:  # dynamic dims, an element type that cannot be drawn: name the model
        raise error.located(file=source) from None
    except MemoryError:  # a legal model (below ir.MAX_ELEMENTS) can still exceed this machine
        raise UsageError(f"not enough memory for a random input '{spec.name}' of shape {spec.shape_text()} "
                         f"({_size(spec)} of {np.dtype(spec.dtype).name})", file=source) from None


def _size(spec: TensorSpec) -> str:
    """The bytes an input of a static shape needs in its own element type, e.g. '6.4 GB'."""
    nbytes = int(np.prod([int(d) for d in spec.shape], dtype=object)) * np.dtype(spec.dtype).itemsize
    for unit in ("bytes", "kB", "MB", "GB", "TB", "PB", "EB"):
        if nbytes < 1000 or unit == "EB":
            return f"{nbytes:.3g} {unit}" if unit != "bytes" else f"{nbytes} bytes"
        nbytes /= 1000


def _random_values(spec: TensorSpec, seed: int, position: int, hint: str) -> np.ndarray:
    if spec.shape is None or any(d is None for d in spec.shape):
        raise UsageError(f"input '{spec.name}' has dynamic dims (shape {spec.shape_text()}), which random inputs "
                         f"cannot guess: give {hint}")
    generator = np.random.default_rng([seed, position])
    shape = tuple(spec.shape)
    dtype = np.dtype(spec.dtype)
    # Checked against the memory budget before drawing, and drawn in the input's own type (f16 and bf16 through
    # f32), never through a float64 array twice the size.
    work = np.dtype(np.float32) if dtype.kind == "V" or dtype.name in ("float16", "bfloat16") else dtype
    check_bytes(math.prod(shape) * (dtype.itemsize + (work.itemsize if work != dtype else 0)),
                f"a random input '{spec.name}' of shape {spec.shape_text()}:")
    if dtype == np.bool_:
        return generator.integers(0, 2, size=shape, dtype=np.bool_)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return generator.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    if dtype in (np.float32, np.float64):  # drawn in place, in their own type
        values = generator.random(size=shape, dtype=dtype)
        values *= 2
        values -= 1
        return values
    if dtype.kind == "f" or dtype.name == "bfloat16":  # 16-bit floats: through float32, never float64
        values = generator.random(size=shape, dtype=np.float32)
        values *= 2
        values -= 1
        return values.astype(dtype)
    raise UsageError(f"input '{spec.name}' has element type {dtype}, which cannot be drawn at random: give it "
                     f"with {hint}")
