"""Atomic file output: a failed or interrupted write leaves no partial file and never touches inputs.

- Outputs are regular files or new paths only (check_output_path): never a device, a FIFO, a symlink or a folder.
- SIGTERM and SIGHUP (install_signal_cleanup, done by the CLI) raise SystemExit(128 + signal), so the cleanup
  below runs: temporaries are removed and a half-replaced pair is put back.
- Concurrent writers of one pair (`poolir convert a.onnx -o out.xml` twice at once): the renames that replace
  a pair (.xml + .bin) happen under an exclusive flock on the destination's folder, so each process replaces
  the whole pair before the other starts, and out.xml never points at another run's out.bin.
"""

from __future__ import annotations

import os
import fcntl
import shutil
import signal
import stat
import threading
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator, Mapping

from poolir.ir.errors import UsageError
from poolir.ir.files import kind_of


def write_files_atomically(contents: Mapping[str | os.PathLike, bytes]) -> None:
    """Write every file of `contents` or none of them.

    Each file is written to a temporary file in its own directory, flushed and fsynced, and only
    when all are complete are they renamed into place (rename is atomic on one filesystem). On any
    failure the temporary files are removed and the destinations are left as they were.
    """
    staged: list[tuple[str, Path]] = []
    # (destination, hard-link backup of its old content or None when it did not exist), for every rename
    # done: if a later rename fails, these are put back, so a pair like .xml + .bin is never half new.
    replaced: list[tuple[Path, str | None]] = []
    lock = None
    try:
        for destination, data in contents.items():
            destination = Path(destination)
            fd, temporary = _temporary_beside(destination, ".tmp")
            staged.append((temporary, destination))
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        if len(staged) > 1:
            lock = _lock_folder(staged[0][1])
        for temporary, destination in staged:
            backup = _backup(destination) if len(staged) > 1 else None
            try:
                os.replace(temporary, destination)
            except BaseException:
                _discard(backup)
                raise
            replaced.append((destination, backup))
        staged.clear()
        for _, backup in replaced:
            _discard(backup)
        replaced.clear()
    finally:
        for destination, backup in reversed(replaced):  # a rename failed: undo the ones done
            if backup is not None:
                os.replace(backup, destination)
            else:
                _discard(os.fspath(destination))
        for temporary, _ in staged:
            _discard(temporary)
        if lock is not None:
            os.close(lock)  # releases the flock


def _lock_folder(destination: Path) -> int | None:
    """An exclusive flock on the destination's folder (None where the folder cannot be locked)."""
    try:
        fd = os.open(destination.parent or Path("."), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:
        os.close(fd)
        return None
    return fd


def _exit_on_signal(signum, frame) -> None:
    signal.signal(signum, signal.SIG_IGN)  # once is enough: the cleanup must not be interrupted again
    raise SystemExit(128 + signum)


def install_signal_cleanup() -> None:
    """Make SIGTERM and SIGHUP exit (128 + signal) through the cleanup of any write under way."""
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, _exit_on_signal)


def check_output_path(destination: str | os.PathLike) -> None:
    """Raise UsageError unless `destination` is a new path or an existing regular file (not a symlink).

    The atomic rename replaces whatever has the destination's name: a device node (`-o /dev/null`), a
    symlink (`--report /proc/self/fd/1`) or a FIFO would be swapped for a regular file. poolir refuses."""
    text = os.fspath(destination)
    if not text:
        raise UsageError("the output path is empty")
    if text.endswith(("/", os.sep)) or os.path.isdir(text):
        raise UsageError("is a folder; give an output file name", file=text)
    try:
        mode = os.lstat(text).st_mode
    except FileNotFoundError:
        return
    except (OSError, ValueError) as error:
        raise UsageError(f"cannot write the output: {getattr(error, 'strerror', None) or error}", file=text) from None
    if stat.S_ISLNK(mode):
        raise UsageError("is a symlink; poolir writes regular files only (give the real path)", file=text)
    if not stat.S_ISREG(mode):
        raise UsageError(f"is {kind_of(mode)}; poolir writes regular files only", file=text)


def _temporary_beside(destination: Path, suffix: str) -> tuple[int, str]:
    """mkstemp in the destination's folder; a missing folder is named as the user wrote the output path
    (mkstemp's own error names the random temporary name instead).

    mkstemp creates its file with mode 0600 whatever the umask; an output must follow the umask like any
    file a Unix tool creates (0644 under umask 022), so the temporary file gets 0666 & ~umask before it is
    renamed into place."""
    check_output_path(destination)
    folder = destination.parent or Path(".")
    if not folder.is_dir():
        raise UsageError(f"cannot write the output: the folder {os.fspath(folder)} does not exist",
                         file=destination)
    fd, temporary = tempfile.mkstemp(prefix=f".{destination.name}.", suffix=suffix, dir=folder)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
    except BaseException:
        os.close(fd)
        _discard(temporary)
        raise
    return fd, temporary


def _umask() -> int:
    """The process's umask (reading it means setting it: set it back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _backup(destination: Path) -> str | None:
    """A hard link to the current content of `destination` (None when there is none), beside it."""
    if not destination.is_file():
        return None
    backup = os.fspath(destination.parent / f".{destination.name}.{os.getpid()}.{id(destination)}.bak")
    _discard(backup)
    try:
        os.link(destination, backup)
    except OSError:  # a filesystem without hard links: a copy does as well
        shutil.copy2(destination, backup)
    return backup


def _discard(path: str | None) -> None:
    if path is None:
        return
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def refuse_overwriting_inputs(destination: str | os.PathLike, inputs: Iterable[str | os.PathLike | None]) -> None:
    """Raise UsageError when `destination` is one of `inputs` (same path, through a symlink or a hard link).

    Every command calls this for each output before doing any work: an output must never replace an input.
    """
    check_output_path(destination)
    destination = Path(destination)
    for source in inputs:
        if source is None:
            continue
        source = Path(source)
        same = destination.resolve() == source.resolve()
        if not same and destination.exists() and source.exists():
            same = os.path.samefile(destination, source)
        if same:
            raise UsageError(f"the output {os.fspath(destination)} is the input {os.fspath(source)}; "
                             "choose another output file")


@contextmanager
def atomic_path(destination: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside `destination`; rename it into place only if the block succeeds.

    For writers that insist on a file name (numpy.savez, onnx.save).
    """
    destination = Path(destination)
    fd, temporary = _temporary_beside(destination, destination.suffix or ".tmp")
    os.close(fd)
    try:
        yield Path(temporary)
        os.replace(temporary, destination)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
