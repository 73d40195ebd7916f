"""The one way poolir opens a file it reads: regular files only, never blocking, never larger than the budget.

A FIFO, a socket or a device (a `.bin` that is a symlink to /dev/zero, a `--inputs` that is a named pipe)
would block forever or be read until memory runs out, so every input file goes through `open_regular`:
the path is checked with stat, opened with O_NONBLOCK (opening a FIFO for reading never blocks then),
checked again with fstat on the open descriptor (no race between the two), and its size is checked against
the memory budget (ir.budget) before a byte is read.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from poolir.ir.budget import check_bytes
from poolir.ir.errors import PoolirError, UsageError

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def kind_of(mode: int) -> str:
    """'a folder', 'a named pipe (FIFO)'... for a file mode that is not a regular file's."""
    return next((text for test, text in _KINDS if test(mode)), "not a regular file")


def open_regular(path: str | os.PathLike, *, error: type[PoolirError] = UsageError, file=None,
                 what: str = "the file") -> BinaryIO:
    """Open `path` for binary reading if it is a regular file within the memory budget, else raise `error`.

    `file` is the file named in the message (default: `path`); `what` says which file it is when `file`
    names another one ("the weights file x.bin")."""
    named = os.fspath(file if file is not None else path)
    prefix = "" if file is None else f"{what} {os.fspath(path)}: "
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise error(f"{prefix}no such file", file=named) from None
    except (OSError, ValueError) as problem:  # ValueError: a NUL byte in the path
        raise error(f"{prefix}cannot read: {getattr(problem, 'strerror', None) or problem}", file=named) from None
    if not stat.S_ISREG(mode):
        raise error(f"{prefix}{kind_of(mode)}, not a regular file", file=named)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as problem:
        raise error(f"{prefix}cannot read: {problem.strerror or problem}", file=named) from None
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):  # replaced between the stat and the open
            raise error(f"{prefix}{kind_of(status.st_mode)}, not a regular file", file=named)
        check_bytes(status.st_size, f"{prefix}a file of", file=named)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike, *, error: type[PoolirError] = UsageError, file=None,
                 what: str = "the file") -> bytes:
    """The bytes of a regular file (see `open_regular`); an I/O error is `error` naming the file."""
    with open_regular(path, error=error, file=file, what=what) as handle:
        try:
            return handle.read()
        except OSError as problem:
            named = os.fspath(file if file is not None else path)
            raise error(f"cannot read: {problem.strerror or problem}", file=named) from None
