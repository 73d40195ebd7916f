"""The one memory budget: the most tensor data (bytes) a file may make poolir allocate.

Default 2 GiB (a ResNet-50's largest tensor at batch 1 is 12 MB; a single tensor above 2 GiB is hostile or
a job for a bigger budget). Raise or lower it with the environment variable POOLIR_MAX_MEMORY or the command line's
`poolir --max-memory SIZE` (bytes, or with a suffix K, M, G, T: powers of 1024, e.g. `16G`). Every
allocation whose size a file controls is checked against it *before* allocating: file sizes read, Const
and initializer data, declared and inferred tensor shapes, random inputs, .npz members (from their .npy
headers, before inflating), and each operator's output at run time where its size is computable.
"""

from __future__ import annotations

import contextvars
import math
import os
import re

from poolir.ir.errors import BudgetError, UsageError

DEFAULT_MAX_MEMORY = 2 * 2**30
ENVIRONMENT_VARIABLE = "POOLIR_MAX_MEMORY"
_UNITS = {"": 1, "B": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_override: int | None = None
# Bytes of tensors a run holds while its current step runs (set by the executors, runtime.live_memory): an
# allocation whose size only the run decides must fit in what the budget leaves beside them.
_in_use: contextvars.ContextVar[int] = contextvars.ContextVar("poolir_bytes_in_use", default=0)


def parse_size(text: str) -> int:
    """'4G' -> 4294967296, '512M', '1000000' (bytes). Raises UsageError."""
    match = re.fullmatch(r"\s*([0-9]{1,15})\s*([KMGT]?)(?:I?B)?\s*", str(text), re.ASCII | re.IGNORECASE)
    if not match or int(match.group(1)) < 1:
        raise UsageError(f"memory size {str(text)[:40]!r} is not a positive number of bytes (e.g. 4G, 512M)")
    return int(match.group(1)) * _UNITS[match.group(2).upper()]


def set_max_memory(size: int | str | None) -> None:
    """Set the budget for this process (None: back to the environment variable or the default)."""
    global _override
    _override = None if size is None else (parse_size(size) if isinstance(size, str) else int(size))


def max_memory() -> int:
    """The budget in bytes."""
    if _override is not None:
        return _override
    text = os.environ.get(ENVIRONMENT_VARIABLE)
    if not text:
        return DEFAULT_MAX_MEMORY
    try:
        return parse_size(text)
    except UsageError as error:
        raise UsageError(f"{ENVIRONMENT_VARIABLE}: {error.problem}") from None


def human_size(size: int) -> str:
    for unit in ("T", "G", "M", "K"):
        if size >= _UNITS[unit] and size % _UNITS[unit] == 0:
            return f"{size // _UNITS[unit]} {unit}iB"
    return f"{size} bytes"


def check_bytes(size: int, what: str, *, file=None, where: str | None = None) -> None:
    """Raise BudgetError when `size` bytes exceed the budget; `what` says what would be allocated."""
    limit = max_memory()
    if size > limit:
        raise BudgetError(f"{what} {size} bytes exceeds the memory budget of {human_size(limit)} (raise it with "
                          f"--max-memory or {ENVIRONMENT_VARIABLE})", file=file, where=where)


def check_tensor(shape, itemsize: int, what: str, *, file=None, where: str | None = None) -> None:
    """Check a tensor of static `shape` (ints) and `itemsize` bytes per element against the budget."""
    count = math.prod(max(int(d), 1) for d in shape) if len(shape) else 1
    check_bytes(count * max(int(itemsize), 1), f"{what} of shape {list(shape)[:8]}{'...' if len(shape) > 8 else ''}:",
                file=file, where=where)


class bytes_in_use:  # noqa: N801 - used as a function: `with bytes_in_use(size):`
    """While the block runs, `size` bytes of live tensors count against the budget of check_allocation.

    A class rather than a contextlib generator: executors enter it once per node, and the generator form
    cost 2.8 us per entry (a fifth of a one-node run). Entries nest and add up: a branch a step runs (an If) holds
    its own tensors beside the outer run's."""

    __slots__ = ("_size", "_token")

    def __init__(self, size: int):
        self._size = int(size)

    def __enter__(self) -> None:
        self._token = _in_use.set(_in_use.get() + self._size)

    def __exit__(self, *exc_info) -> None:
        _in_use.reset(self._token)


def check_allocation(shape, itemsize: int, what: str) -> None:
    """Before a kernel allocates a tensor whose size the run decides (a Tile by computed repeats, a Broadcast to a
    computed shape, im2col columns...): raise BudgetError when it does not fit in the budget beside the tensors
    the run already holds. The executor adds the file and the node."""
    count = math.prod(int(d) for d in shape) if len(shape) else 1
    size, used, limit = count * max(int(itemsize), 1), _in_use.get(), max_memory()
    if used + size > limit:
        dims = ",".join(str(int(d)) for d in list(shape)[:8]) + (",..." if len(shape) > 8 else "")
        held = f" beside {used} bytes of live tensors" if used else ""
        raise BudgetError(f"{what} [{dims}] needs {size} bytes, which{held} exceeds the memory budget of "
                          f"{human_size(limit)} (raise it with --max-memory or {ENVIRONMENT_VARIABLE})")
