"""Model inputs from files or from a seed: what `poolir run` and `poolir verify` feed a model.

Random inputs: floats uniformly in [-1, 1), integers across the whole range of their type, booleans
fair. Each input's random stream depends only on the seed and the input's position, so giving one
input from a file does not change the random values of the others. Dynamic dims cannot be guessed:
such inputs must be given.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import math

import numpy as np

from poolir.ir.budget import check_bytes
from poolir.ir.errors import BudgetError, FeedError, UsageError
from poolir.converter.npz import load_archive, load_array  # noqa: F401 (their home before)
from poolir.runtime import TensorSpec

# How `poolir run` lets a user give an input; `poolir verify` takes files of arrays only (--inputs).
RUN_INPUT_HINT = "--input {name}=FILE.npy or --inputs FILE.npz"


def complete_feeds(inputs: Sequence[TensorSpec], given: Mapping[str, np.ndarray] | None, seed: int, source: str,
                   hint: str = RUN_INPUT_HINT) -> dict[str, np.ndarray]:
    """A feed for every declared input: the given array where one is named (a bfloat16 stored as raw
    2-byte records is read back as bfloat16), else a random one from `seed` (see the module docstring).

    A given name the model does not declare is a FeedError; an input with dynamic dims that is not given
    is a UsageError whose message says how to give it (`hint`, with {name} filled in). Both name `source`.
    """
    given = dict(given or {})
    declared = [spec.name for spec in inputs]
    unknown = [name for name in given if name not in declared]
    if unknown:
        raise FeedError(f"unknown input {', '.join(repr(n) for n in unknown)} (the model's inputs are: "
                        f"{', '.join(repr(n) for n in declared) or 'none'})", file=source)
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
    except MemoryError as error:  # a legal model (below ir.MAX_ELEMENTS) can still exceed this machine
        raise UsageError(f"not enough memory for a random input '{spec.name}' of shape {spec.shape_text()} "
                         f"({error})", file=source) from None


def _random_values(spec: TensorSpec, seed: int, position: int, hint: str) -> np.ndarray:
    if spec.shape is None or any(d is None for d in spec.shape):
        raise UsageError(f"input '{spec.name}' has dynamic dims (shape {spec.shape_text()}), which random inputs "
                         f"cannot guess: give it with {hint}")
    generator = np.random.default_rng([seed, position])
    shape = tuple(spec.shape)
    dtype = np.dtype(spec.dtype)
    # Checked against the memory budget before drawing, and drawn in the input's own type (f16 and bf16 through
    # f32), never through a float64 array twice the size.
    work = np.dtype(np.float32) if dtype.kind == "V" or dtype.name in ("float16", "bfloat16") else dtype
    check_bytes(math.prod(shape) * (dtype.itemsize + (work.itemsize if work != dtype else 0)),
                f"a random input '{spec.name}' of shape {spec.shape_text()}:")
    if dtype == np.bool_:
        return generator.integers(0, 2, size=shape, dtype=np.uint8).view(np.bool_)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return generator.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    if dtype.kind == "f" or dtype.name == "bfloat16":
        values = generator.random(size=shape, dtype=work if work.name in ("float32", "float64") else np.float32)
        values *= 2
        values -= 1
        return values if values.dtype == dtype else values.astype(dtype)
    raise UsageError(f"input '{spec.name}' has element type {dtype}, which cannot be drawn at random: give it "
                     f"with {hint}")
