"""Atomic file output: a failed or interrupted write leaves no partial file and never touches inputs."""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping


def write_files_atomically(contents: Mapping[str | os.PathLike, bytes]) -> None:
    """Write every file of `contents` or none of them.

    Each file is written to a temporary file in its own directory, flushed and fsynced, and only
    when all are complete are they renamed into place (rename is atomic on one filesystem). On any
    failure the temporary files are removed and the destinations are left as they were.
    """
    staged: list[tuple[str, Path]] = []
    try:
        for destination, data in contents.items():
            destination = Path(destination)
            fd, temporary = tempfile.mkstemp(prefix=f".{destination.name}.", suffix=".tmp",
                                             dir=destination.parent or Path("."))
            staged.append((temporary, destination))
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        for temporary, destination in staged:
            os.replace(temporary, destination)
        staged.clear()
    finally:
        for temporary, _ in staged:
            try:
                os.unlink(temporary)
            except FileNotFoundError:
                pass


@contextmanager
def atomic_path(destination: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside `destination`; rename it into place only if the block succeeds.

    For writers that insist on a file name (numpy.savez, onnx.save).
    """
    destination = Path(destination)
    fd, temporary = tempfile.mkstemp(prefix=f".{destination.name}.", suffix=destination.suffix or ".tmp",
                                     dir=destination.parent or Path("."))
    os.close(fd)
    try:
        yield Path(temporary)
        os.replace(temporary, destination)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
