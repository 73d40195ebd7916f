"""Example folders: what verify reads from one (manifest.json, inputs.npz, expected.npz) and where it finds them.

An *example folder* holds `model.onnx` and/or `model.xml`, `inputs.npz`, `expected.npz` and a
`manifest.json` (where the expected values come from, the tolerance its source rounds to, and the paths
expected to refuse, with the reason). There the reference is `expected.npz`: every path, the first
included, must match it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import ml_dtypes
import numpy as np

from poolir.converter.feeds import adopt_bfloat16, load_archive
from poolir.converter.verify.compare import Tolerance, check_tolerance
from poolir.ir.errors import InvalidModelError, UsageError, printable
from poolir.ir.files import read_regular

EXAMPLE_MODELS = ("model.onnx", "model.xml")
DEFAULT_EXAMPLES = "examples"
BFLOAT16 = np.dtype(ml_dtypes.bfloat16)


@dataclass(slots=True)
class Manifest:
    """What verify reads from an example's manifest.json (every field optional)."""

    expected_source: dict[str, Any] | None = None
    tolerance: Tolerance | None = None
    expected_refused: dict[str, str] = field(default_factory=dict)
    # path -> reason: a peer known to compute something else for this example (OpenVINO's converter, pinned).
    known_deviations: dict[str, str] = field(default_factory=dict)


# The keys a manifest may hold (the documentation keys the bundled examples write, and the three verify reads),
# checked like command-line options: a misspelt "tolerence" must not silently fall back to the defaults.
MANIFEST_KEYS = frozenset({"cross_checks", "expected", "expected_refused", "expected_source", "generated_by",
                           "generated_with", "inputs", "known_deviations", "models", "name", "notes", "title",
                           "tolerance"})
TOLERANCE_KEYS = frozenset({"rtol", "atol", "reason"})


def read_manifest(folder: Path) -> Manifest:
    path = folder / "manifest.json"
    if not os.path.lexists(path):
        return Manifest()
    text = read_regular(path, error=InvalidModelError)
    try:
        data = json.loads(text.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise InvalidModelError(f"not valid JSON ({printable(error, 120)})", file=path) from None
    except RecursionError:
        raise InvalidModelError("not valid JSON (nested too deeply)", file=path) from None
    if not isinstance(data, dict):
        raise InvalidModelError("expected a JSON object", file=path)
    unknown = sorted(set(data) - MANIFEST_KEYS)
    if unknown:
        raise InvalidModelError(f"unknown key '{printable(unknown[0], 60)}' (known: {', '.join(sorted(MANIFEST_KEYS))})",
                                file=path)
    source = data.get("expected_source")
    refused = data.get("expected_refused") or {}
    tolerance = data.get("tolerance")
    if not isinstance(refused, dict) or not all(isinstance(k, str) for k in refused):
        raise InvalidModelError("'expected_refused' must map path names to reasons", file=path)
    deviations = data.get("known_deviations") or {}
    if not isinstance(deviations, dict) or not all(isinstance(k, str) for k in deviations):
        raise InvalidModelError("'known_deviations' must map path names to reasons", file=path)
    parsed_tolerance = None
    if tolerance is not None:
        if not isinstance(tolerance, dict) or not {"rtol", "atol"} <= set(tolerance) <= TOLERANCE_KEYS:
            raise InvalidModelError("'tolerance' must be an object with numbers 'rtol' and 'atol' (and a 'reason')",
                                    file=path)
        try:
            parsed_tolerance = Tolerance(*(check_tolerance(f"'tolerance': {key}", tolerance[key])
                                           for key in ("rtol", "atol")))
        except UsageError as error:
            raise InvalidModelError(error.problem, file=path) from None
    return Manifest(source if isinstance(source, dict) else None, parsed_tolerance,
                    {k: str(v) for k, v in refused.items()}, {k: str(v) for k, v in deviations.items()})


def load_arrays(path: Path) -> dict[str, np.ndarray]:
    """The named arrays of an .npz file (bad files are user errors).

    numpy has no bfloat16 and stores one as raw 2-byte records (dtype V2); in an .npz that poolir reads,
    V2 means bfloat16, so such arrays are viewed as bfloat16 again.
    """
    arrays = load_archive(os.fspath(path))  # a damaged archive is a UsageError naming the file
    return {name: adopt_bfloat16(array, BFLOAT16) for name, array in arrays.items()}


def is_example(folder: Path) -> bool:
    return any((folder / name).is_file() for name in EXAMPLE_MODELS)


def walk_folders(folder: Path) -> Iterator[Path]:
    """`folder` and the folders below it, depth first in sorted order, without recursion (a tree 10,000 deep
    is fine), never through a symlinked folder and never twice into one (dev, inode): a symlink loop ends."""
    seen: set[tuple[int, int]] = set()
    stack = [folder]
    while stack:
        current = stack.pop()
        try:
            status = current.stat()
            children = sorted((p for p in current.iterdir() if not p.name.startswith((".", "__"))), reverse=True)
        except OSError:
            continue
        if (status.st_dev, status.st_ino) in seen:
            continue
        seen.add((status.st_dev, status.st_ino))
        yield current
        stack.extend(p for p in children if not p.is_symlink() and p.is_dir())


def find_examples(folder: Path) -> list[Path]:
    """`folder` itself when it is an example, else every example folder below it (not below an example), in
    sorted order."""
    found: list[Path] = []
    for current in walk_folders(folder):
        if any(current.is_relative_to(example) for example in found[-1:]):
            continue
        if is_example(current):
            found.append(current)
    return found


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
