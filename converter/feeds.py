"""Model inputs from files or from a seed: what `poolir run` and `poolir verify` feed a model.

Random inputs: floats uniformly in [-1, 1), integers across the whole range of their type, booleans
fair. Each input's random stream depends only on the seed and the input's position, so giving one
input from a file does not change the random values of the others. Dynamic dims cannot be guessed:
such inputs must be given.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from poolir.ir.errors import FeedError, PoolirError, UsageError
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


def load_array(path: str, what: str) -> np.ndarray:
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


def load_archive(path: str) -> dict[str, np.ndarray]:
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
    except UsageError as error:  # dynamic dims, an element type that cannot be drawn: name the model
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
    if dtype == np.bool_:
        return generator.integers(0, 2, size=shape).astype(np.bool_)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return generator.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    if dtype.kind == "f" or dtype.name == "bfloat16":
        return generator.uniform(-1.0, 1.0, size=shape).astype(dtype)
    raise UsageError(f"input '{spec.name}' has element type {dtype}, which cannot be drawn at random: give it "
                     f"with {hint}")
