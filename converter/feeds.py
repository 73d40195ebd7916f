"""Model inputs from files or from a seed: what `poolir run` and `poolir verify` feed a model.

Random inputs: floats uniformly in [-1, 1), integers across the whole range of their type, booleans
fair. Each input's random stream depends only on the seed and the input's position, so giving one
input from a file does not change the random values of the others. Dynamic dims cannot be guessed:
such inputs must be given.
"""

from __future__ import annotations

import numpy as np

from poolir.ir.errors import PoolirError, UsageError


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
