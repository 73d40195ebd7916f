"""Elementwise operations on broadcast operands at numpy's unbroadcast speed: `rows_unbuffered(shapes)`.

numpy runs a ufunc through an iterator that merges the output's axes into one long inner loop where every
operand's strides allow it. A broadcast operand stops that merge: a per-channel [C, 1, 1] operand on a
[C, H, W] output merges H and W (the operand's stride is 0 on both) but not C. The inner loop then is one
run of H*W elements, and when that run is shorter than numpy's buffer (8192 elements), numpy fills its
buffer across runs, copying the broadcast operand element by element, which doubles the time. Measured
(numpy 2.4, float32 x * per-channel factor into a fresh array, us): 256x3136 127 -> 60 with a 16-element
buffer (a plain x * 2: 60), 1024x784 135 -> 77, 1024x512 86 -> 61, 1024x392 62 -> 52, 1024x256 40 -> 39,
1024x196 33 -> 35, 2048x49 15 -> 59. So the buffer is made small when the run is between _LONG_RUN and the
buffer's size, and left alone otherwise. An operand varying along the run and broadcast across runs
([1, L] on [C, L]) is the same case (256x3136: 111 -> 66).

ResNet-50's 53 BatchNorms (three per-channel operations each) and the convolutions' per-channel bias adds
are the users that matter; the same holds for every broadcasting binary operation, which goes through here.
The buffer size only changes how numpy chunks the work, never a value.
"""

from __future__ import annotations

import contextlib
from typing import Iterator, Sequence

import numpy as np

_SMALL_BUFFER = 16      # numpy's smallest buffer (a multiple of 16 elements)
_LONG_RUN = 384         # the measured crossover: shorter runs are faster with the default buffer
_SMALLEST_TENSOR = 1 << 16   # below this many elements the two setbufsize calls (about 2 us) do not pay


def merged_run(shapes: Sequence[Sequence[int]]) -> tuple[int, int]:
    """(elements in the innermost run numpy's iterator can merge, elements of the output) for operands of
    `shapes` (numpy broadcasting). The run is the product of the output's trailing axes along which each
    operand is either broadcast on all or on none: the whole output when no operand breaks the merge."""
    rank = max((len(shape) for shape in shapes), default=0)
    padded = [(1,) * (rank - len(shape)) + tuple(shape) for shape in shapes]
    run, total, pattern, merging = 1, 1, None, True
    for axis in reversed(range(rank)):
        size = max(shape[axis] for shape in padded)
        total *= size
        if size == 1 or not merging:
            continue
        broadcast = tuple(shape[axis] == 1 for shape in padded)
        merging = pattern is None or broadcast == pattern
        if merging:
            pattern = broadcast
            run *= size
    return run, total


@contextlib.contextmanager
def rows_unbuffered(shapes: Sequence[Sequence[int]]) -> Iterator[None]:
    """Run the block with numpy's smallest ufunc buffer when operands of `shapes` would make numpy copy a
    broadcast operand into its buffer (see the module doc); otherwise change nothing."""
    if all(shape == shapes[0] for shape in shapes[1:]):
        yield
        return
    run, total = merged_run(shapes)
    if not (_LONG_RUN <= run < np.getbufsize() and run < total and total >= _SMALLEST_TENSOR):
        yield
        return
    previous = np.setbufsize(_SMALL_BUFFER)
    try:
        yield
    finally:
        np.setbufsize(previous)
