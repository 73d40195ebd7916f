"""numpy's ufunc buffer, fitted to broadcast operands: `with fitted(a, b): ...` around an elementwise operation.

numpy runs a ufunc through an iterator that merges the output's axes into one long inner loop where every
operand allows it. A broadcast operand stops that merge: a per-channel [C, 1, 1] operand on a [C, H, W] output
merges H and W (its stride is 0 on both) but not C, and a [1, L] row on [C, L] merges nothing across rows.
Call the merged block a run (H*W, L). numpy 2.x fills its buffer (8192 elements) across runs, copying the
broadcast operand element by element, which about doubles the time. A buffer of exactly one run (rounded up
to numpy's multiple of 16) keeps each chunk inside one run: nothing broadcast needs copying. Measured
(numpy 2.4, float32 x + per-channel or per-row values into a fresh array, us, default buffer -> one run):

    [C, L] + [C, 1]       256x3136 125 -> 61 (x + 2: 60), 512x784 67 -> 39, 1024x392 61 -> 46
    [C, L] + [1, L]       256x784 28 -> 20, 256x3136 109 -> 66
    the cropped wide grid of a depthwise convolution plus its bias (rows of 28 in 32, 120x28x28): 32 -> 19
    BatchNorm, three per-channel operations: 1x256x56x56 318 -> 149, 1x512x28x28 184 -> 103

A smaller buffer is no good: numpy then chunks every run, and on the cropped grid (inner loops of 28) a
16-element buffer took 103 us. Runs shorter than _LONG_RUN keep the default buffer (1024x196: 30 default,
36 with a run's buffer; 2048x49: 16 and 60), and so do runs of at least the buffer's size, which numpy does
not split. An operand that is only strided (every other row of an array) is no such case: the buffer size did
not change its time. Users: BatchNorm, the convolutions' bias, and every broadcasting binary operation of
both executors. The buffer size only changes how numpy chunks the work, never a value.
"""

from __future__ import annotations

import numpy as np

_BUFFER_MULTIPLE = 16        # numpy refuses other buffer sizes
_LONG_RUN = 384              # the measured crossover: shorter runs are faster with the default buffer
_SMALLEST_TENSOR = 1 << 16   # below this many output elements the two setbufsize calls (about 2 us) do not pay;
                             # an operation whose largest operand is smaller is left alone before any shape arithmetic


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
    """Run the block with numpy's ufunc buffer one run long when an elementwise operation on `operands` (arrays;
    anything else is a scalar) broadcasts one of them over runs that numpy would copy into its buffer (see the
    module doc); otherwise change nothing. A class, not a generator: it runs around every binary operation."""

    __slots__ = ("size", "previous")

    def __init__(self, *operands):
        self.size = self.previous = None
        arrays = [operand for operand in operands if isinstance(operand, np.ndarray) and operand.ndim]
        if len(arrays) < 2 or max(array.size for array in arrays) < _SMALLEST_TENSOR:
            return    # a small operation, or a scalar (merges with anything); the largest operand decides, cheaply
        shapes = [array.shape for array in arrays]
        if all(shape == shapes[0] for shape in shapes):
            return                                  # nothing broadcast
        run, total = merged_run(*shapes)
        if _LONG_RUN <= run < np.getbufsize() and run < total and total >= _SMALLEST_TENSOR:
            self.size = -(-run // _BUFFER_MULTIPLE) * _BUFFER_MULTIPLE

    def __enter__(self) -> None:
        if self.size is not None:
            self.previous = np.setbufsize(self.size)

    def __exit__(self, *exc_info) -> None:
        if self.previous is not None:
            np.setbufsize(self.previous)
