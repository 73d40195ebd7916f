"""numpy's ufunc buffer, fitted to broadcast operands: `with fitted(a, b): ...` around an elementwise operation.

numpy runs a ufunc through an iterator that merges the output's axes into one long inner loop where every
operand allows it. A broadcast operand stops that merge: a per-channel [C, 1, 1] operand on a [C, H, W] output
merges H and W (its stride is 0 on both) but not C, and a [1, L] row on [C, L] merges nothing across rows. The
inner loop then is one run of H*W (L) elements, and when that run is shorter than numpy's buffer (8192
elements), numpy 2.x fills its buffer across runs, copying the broadcast operand element by element, which
about doubles the time. With a buffer no longer than the run, numpy loops over the runs without copying.
Measured (numpy 2.4, float32, us, default buffer -> 16 elements; any buffer up to the run gives the same):

    x * per-channel factor into a fresh array  256x3136 127 -> 60 (x * 2: 60), 1024x784 135 -> 77,
                                               1024x512 86 -> 61, 1024x392 62 -> 52, 1024x256 40 -> 39,
                                               1024x196 33 -> 35, 2048x49 15 -> 59
    x + a [1, L] row                           256x3136 111 -> 66, 256x784 28 -> 20
    BatchNorm (three per-channel operations)   1x256x56x56 318 -> 149, 1x512x28x28 184 -> 103

So the buffer is made small (numpy's smallest, 16) when the merged run is between _LONG_RUN and the buffer's
size, and left alone otherwise. An operand that is only strided (every other row of an array) is no such
case: the buffer size did not change its time. Users: BatchNorm, the convolutions' bias, and every
broadcasting binary operation of both executors. The buffer size only changes how numpy chunks the work,
never a value.
"""

from __future__ import annotations

import numpy as np

_SMALL_BUFFER = 16           # numpy's smallest buffer (a multiple of 16 elements)
_LONG_RUN = 384              # the measured crossover: shorter runs are faster with the default buffer
_SMALLEST_TENSOR = 1 << 16   # below this many elements the two setbufsize calls (about 2 us) do not pay


def merged_run(*shapes: tuple[int, ...]) -> tuple[int, int]:
    """(elements in the innermost run numpy's iterator merges, elements of the output) for an elementwise
    operation on operands of `shapes` (numpy broadcasting): the product of the output's trailing axes along
    which each operand is either broadcast on all or on none. The whole output when no operand is broadcast."""
    rank = max(len(shape) for shape in shapes)
    padded = [(1,) * (rank - len(shape)) + tuple(shape) for shape in shapes]
    run, total, pattern, merging = 1, 1, None, True
    for axis in reversed(range(rank)):
        size = max(shape[axis] for shape in padded)
        total *= size
        if size == 1 or not merging:
            continue
        broadcast = [shape[axis] == 1 for shape in padded]
        merging = pattern is None or broadcast == pattern
        if merging:
            pattern = broadcast
            run *= size
    return run, total


class fitted:  # noqa: N801 (used as a function: `with fitted(a, b): ...`)
    """Run the block with numpy's smallest ufunc buffer when an elementwise operation on `operands` (arrays;
    anything else is a scalar) broadcasts one of them over runs that numpy would copy into its buffer (see the
    module doc); otherwise change nothing. A class, not a generator: it runs around every binary operation."""

    __slots__ = ("previous",)

    def __init__(self, *operands):
        self.previous = None
        shapes = [operand.shape for operand in operands if isinstance(operand, np.ndarray) and operand.ndim]
        if len(shapes) < 2 or all(shape == shapes[0] for shape in shapes):
            return                                  # nothing broadcast (a scalar merges with anything)
        run, total = merged_run(*shapes)
        if _LONG_RUN <= run < np.getbufsize() and run < total and total >= _SMALLEST_TENSOR:
            self.previous = _SMALL_BUFFER

    def __enter__(self) -> None:
        if self.previous is not None:
            self.previous = np.setbufsize(self.previous)

    def __exit__(self, *exc_info) -> None:
        if self.previous is not None:
            np.setbufsize(self.previous)
