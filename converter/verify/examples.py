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
from typing import Any, Sequence

import ml_dtypes
import numpy as np

from poolir.converter.feeds import adopt_bfloat16, load_archive
from poolir.converter.verify.compare import Tolerance
from poolir.ir.errors import InvalidModelError, UsageError

EXAMPLE_MODELS = ("model.onnx", "model.xml")
DEFAULT_EXAMPLES = "examples"
BFLOAT16 = np.dtype(ml_dtypes.bfloat16)


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
    arrays = load_archive(os.fspath(path))  # a damaged archive is a UsageError naming the file
    return {name: adopt_bfloat16(array, BFLOAT16) for name, array in arrays.items()}


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
