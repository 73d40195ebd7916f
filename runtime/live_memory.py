"""The tensors a run holds at once, against the one memory budget (ir.budget): planned, then tracked.

Both executors free each intermediate after its last use, so what a run needs is not the sum of its tensors
but its largest live set: constants and feeds for the whole run, plus, at each step, every intermediate
produced and not yet released, the step's outputs included (they are allocated while its inputs live).

- `planned_peak` computes that maximum from the sizes known before the run (static shapes): the executors
  refuse a model whose planned peak exceeds the budget before the first step, naming the step where it is
  reached. An output whose size is unknown (a data-dependent shape) counts 0 here.
- `LiveBytes` tracks the same set while the run goes (by the arrays' memory, a view counting with its base
  once), and each step runs inside `ir.budget.bytes_in_use(live.total)`, so a kernel that allocates a size
  only the run decides (`ir.budget.check_allocation`: Tile, Broadcast/Expand, ConstantOfShape, Pad, Concat,
  Gather, GatherND, MatMul, convolution columns...) is refused when it does not fit beside what is held.

A step whose output is a view of its input (Reshape, Squeeze, Slice...) is planned as a new tensor: the plan
errs on the side of refusing, never of allocating more than the budget.
"""

from __future__ import annotations

import math
from typing import Callable, Hashable, Iterable, Sequence

import numpy as np

from poolir.ir.budget import ENVIRONMENT_VARIABLE, human_size, max_memory
from poolir.ir.errors import BudgetError


def tensor_bytes(shape, dtype) -> int:
    """Bytes of a tensor of static `shape` (ints) and `dtype`; 0 when a dim or the type is unknown."""
    if shape is None or dtype is None or any(d is None or (isinstance(d, int) and d < 0) for d in shape):
        return 0
    return math.prod(int(d) for d in shape) * np.dtype(dtype).itemsize


def planned_peak(steps: Sequence[tuple[Iterable[Hashable], Iterable[Hashable]]], size_of: Callable[[Hashable], int],
                 resident: int, limit: int | None = None) -> tuple[int, int]:
    """(peak bytes, index of the step where it is first reached; -1: before any step) for `steps` given as
    (outputs, releases) keys, `size_of` a key's bytes (0 when unknown), `resident` the bytes held throughout.
    With a `limit`, the first step whose live set exceeds it is returned at once (the step to name)."""
    live = peak = resident
    at = -1
    for index, (outputs, releases) in enumerate(steps):
        if limit is not None and peak > limit:
            break
        live += sum(size_of(key) for key in outputs)
        if live > peak:
            peak, at = live, index
        live -= sum(size_of(key) for key in releases)
    return peak, at


def check_planned_peak(steps: Sequence[tuple[Iterable[Hashable], Iterable[Hashable]]],
                       size_of: Callable[[Hashable], int], resident: int, label_of: Callable[[int], str],
                       file: str | None) -> None:
    """Refuse a plan whose live set exceeds the budget, located at the first step where it does."""
    limit = max_memory()
    peak, at = planned_peak(steps, size_of, resident, limit)
    if peak > limit:
        where = None if at < 0 else label_of(at)
        raise BudgetError(f"the tensors live at once at this step need {peak} bytes (constants, inputs and "
                          f"intermediates not yet freed), which exceeds the memory budget of {human_size(limit)} (raise it "
                          f"with --max-memory or {ENVIRONMENT_VARIABLE})", file=file, where=where)


def _base(array) -> np.ndarray | None:
    """The array that owns the memory of `array` (itself when it owns it); None for a non-array."""
    if type(array) is not np.ndarray and not isinstance(array, np.ndarray):
        return None
    base = array.base
    while base is not None:
        if not isinstance(base, np.ndarray):
            break
        array, base = base, base.base
    return array


class LiveBytes:
    """The bytes of the arrays a run holds, each memory block counted once however many views share it."""

    def __init__(self):
        self.total = 0
        self.limit = max_memory()       # read once per run: the budget does not change during one
        self._blocks: dict[int, list] = {}  # id(base) -> [base, number of held values on it]

    def add(self, value) -> None:
        base = _base(value)
        if base is None:
            return
        entry = self._blocks.get(id(base))
        if entry is None:
            self._blocks[id(base)] = [base, 1]
            self.total += base.nbytes
        else:
            entry[1] += 1

    def remove(self, value) -> None:
        base = _base(value)
        entry = None if base is None else self._blocks.get(id(base))
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] == 0:
            del self._blocks[id(base)]
            self.total -= base.nbytes

    def check(self, file: str | None, where: str | None) -> None:
        """After a step: refuse to go on when what the run holds exceeds the budget (a kernel that allocated
        without asking check_allocation first; the step's outputs are freed with the run)."""
        if self.total > self.limit:
            raise BudgetError(f"the tensors live after this step hold {self.total} bytes, which exceeds the memory "
                              f"budget of {human_size(self.limit)} (raise it with --max-memory or {ENVIRONMENT_VARIABLE})",
                              file=file, where=where)


__all__ = ["LiveBytes", "check_planned_peak", "planned_peak", "tensor_bytes"]
