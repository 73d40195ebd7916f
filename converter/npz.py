"""Arrays in files, read and written one checked way: `.npy` inputs, `.npz` inputs and `run -o OUT.npz`.

Reading: the file must be a regular file (ir.files); an .npz's members must all be `.npy` arrays, and each
one's declared size (its .npy header: shape and dtype) is checked against the memory budget (ir.budget)
*before* it is inflated, so a 3 MB archive cannot inflate a 3 GB member. Nothing is ever unpickled.

Writing: every output must come back from `np.load(path, allow_pickle=False)` under its own name, or the
write is refused (exit 2) naming the output: a name must be a UTF-8 string without '/', '\\\\' or NUL and
not '.' or '..' (a zip member name, no zip-slip), and the array must not need pickle (strings, objects).
Names like `file` or `allow_pickle`, which `np.savez(**arrays)` would take as its own arguments, are
written like any other: poolir writes the archive with zipfile itself.
"""

from __future__ import annotations

import math
import zipfile
from typing import Mapping

import numpy as np

from poolir.ir.budget import check_bytes
from poolir.ir.errors import PoolirError, UsageError, printable
from poolir.ir.files import open_regular

_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
_HEADER_LIMIT = 10000


def _header(stream, what: str, file) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype from an .npy header, without reading the data."""
    try:
        version = np.lib.format.read_magic(stream)
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, dtype = read(stream, max_header_size=_HEADER_LIMIT)
    except Exception as error:  # numpy raises ValueError, SyntaxError, TokenError... on bad bytes
        raise UsageError(f"{what}not a readable .npy file ({type(error).__name__}: "
                         f"{printable(' '.join(str(error).split()), 120)})", file=file) from None
    if dtype.hasobject:
        raise UsageError(f"{what}holds Python objects, which poolir does not unpickle", file=file)
    return shape, dtype


def _read_array(stream, what: str, file) -> np.ndarray:
    try:
        return np.lib.format.read_array(stream, allow_pickle=False, max_header_size=_HEADER_LIMIT)
    except MemoryError:
        raise UsageError(f"{what}not enough memory to read it", file=file) from None
    except Exception as error:
        raise UsageError(f"{what}not a readable .npy file ({type(error).__name__}: "
                         f"{printable(' '.join(str(error).split()), 120)})", file=file) from None


def load_array(path: str, what: str) -> np.ndarray:
    """One array from an .npy file (the input `what` names, e.g. "input 'x'")."""
    try:
        handle = open_regular(path)
    except PoolirError as error:
        raise error.located(where=what) from None
    with handle:
        if handle.read(4) in _ZIP_MAGIC:
            raise UsageError("expected a single array (.npy), got an archive; use --inputs for .npz", file=path,
                             where=what)
        handle.seek(0)
        shape, dtype = _header(handle, f"{what}: ", path)
        check_bytes(math.prod(shape) * dtype.itemsize, f"{what}: an array", file=path)
        handle.seek(0)
        return _read_array(handle, f"{what}: ", path)


def load_archive(path: str) -> dict[str, np.ndarray]:
    """The named arrays of an .npz archive, checked as the module docstring says."""
    with open_regular(path) as handle:
        if handle.read(4) not in _ZIP_MAGIC:
            raise UsageError("not a readable .npz archive (not a zip file)", file=path)
        handle.seek(0)
        try:
            archive = zipfile.ZipFile(handle)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as error:
            raise UsageError(f"not a readable .npz archive ({type(error).__name__}: {printable(error, 120)})",
                             file=path) from None
        with archive:
            members = archive.infolist()
            names = [info.filename for info in members]
            for name in names:
                if not name.endswith(".npy"):
                    raise UsageError(f"member '{printable(name)}' is not an .npy array", file=path)
            if len(set(names)) != len(names):
                raise UsageError("an archive member appears twice", file=path)
            total = 0
            try:
                for info in members:  # every header checked before anything is inflated
                    with archive.open(info) as member:
                        shape, dtype = _header(member, f"member '{printable(info.filename)}': ", path)
                    total += math.prod(shape) * dtype.itemsize
                    check_bytes(total, "the arrays of the archive:", file=path)
                arrays = {}
                for info in members:
                    with archive.open(info) as member:
                        arrays[info.filename[:-4]] = _read_array(member, f"member '{printable(info.filename)}': ",
                                                                 path)
            except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError) as error:
                raise UsageError(f"not a readable .npz archive ({type(error).__name__}: {printable(error, 120)})",
                                 file=path) from None
            return arrays


def check_archive_names(arrays: Mapping[str, np.ndarray], file=None) -> None:
    """Raise UsageError for an output that would not come back from the .npz under its own name."""
    for name, array in arrays.items():
        shown = f"output '{printable(name)}'"
        if not isinstance(name, str):
            raise UsageError(f"{shown}: the name is not text, so it cannot name an .npz member", file=file)
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise UsageError(f"{shown}: the name is not valid UTF-8, so it cannot name an .npz member",
                             file=file) from None
        if name in ("", ".", "..") or any(c in name for c in "/\\\0"):
            raise UsageError(f"{shown}: an .npz member cannot be named so (no '/', '\\\\' or NUL, not empty, "
                             "'.' or '..')", file=file)
        if np.asarray(array).dtype.hasobject:
            raise UsageError(f"{shown}: of type {np.asarray(array).dtype} (strings or objects), which an .npz "
                             "cannot hold without pickle", file=file)


def save_archive(handle, arrays: Mapping[str, np.ndarray]) -> None:
    """Write `arrays` as an .npz to an open binary file; call check_archive_names first."""
    with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in arrays.items():
            with archive.open(name + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)


__all__ = ["check_archive_names", "load_archive", "load_array", "save_archive"]
