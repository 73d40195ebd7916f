"""Reusable per-thread intermediate arrays of the pooling kernels.

Large fresh arrays cost a page fault per 4 KiB page on every call (W3, 8x256x56x56: 10.3 ms with fresh
intermediates, 4.8 ms without the faults), so intermediates that never leave a kernel are kept per
thread and reused. They grow to the largest size used; release_work_arrays() frees them.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from poolir.ir.budget import check_allocation

# One slot per kind of intermediate that can be alive at the same time as another.
SLOT_PASS = (0, 1)      # alternating outputs of consecutive passes (separable)
SLOT_DENSE = 2          # every-row reductions of separable's dense reduction
SLOT_WIDENED = 3        # the input converted to the accumulation dtype (or |x|^p) (pooling)
SLOT_EQUAL, SLOT_SCORE, SLOT_BEST = 4, 5, 6   # argmax search (argmax)
SLOT_DOUBLING = (7, 8)  # the growing blocks of separable's dense reduction
SLOT_RESULT = 9         # a result the caller converts into a fresh array anyway (separable, convolution)
SLOT_CONV_COLUMNS = 10  # the im2col columns (convolution)
SLOT_CONV_PRODUCT = 11  # depthwise per-tap products (convolution)
SLOT_CONV_WIDE = 12     # the depthwise accumulator on the stride-phase grid (convolution)
SLOT_CONV_PHASES = 13   # the zero-padded input split by stride phase (convolution)
SLOT_TAP_GRID = 14      # the input subsampled to the one phase its taps read (separable)
SLOT_PAIR = 15          # the first two taps folded over every row (axis_pass)
SLOT_PHASES = 16        # the input's stride phases, each contiguous (axis_pass)
SLOT_FLAT_PASS = 17     # every other pass of a reduction computed densely on the flat input (separable)
SLOT_ACTIVATION = 18    # an activation's factor when it writes in place (activation.hard_swish)


class _WorkArrays(threading.local):
    def __init__(self):
        self.buffers: dict[int, np.ndarray] = {}


_WORK = _WorkArrays()


def work_array(slot: int, shape: tuple[int, ...], dtype) -> np.ndarray:
    """An uninitialised array of `shape` and `dtype` backed by this thread's buffer for `slot`."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    buffer = _WORK.buffers.get(slot)
    if buffer is None or buffer.nbytes < nbytes:
        # Scratch (im2col columns, pooling passes) counts against the budget beside the run's live tensors.
        _WORK.buffers.pop(slot, None)
        check_allocation(shape, dtype.itemsize, "a scratch array (convolution columns, pooling passes)")
        buffer = np.empty(max(nbytes, 64), dtype=np.uint8)
        _WORK.buffers[slot] = buffer
    return buffer[:nbytes].view(dtype).reshape(shape)


def widened(x: np.ndarray, acc: np.dtype) -> np.ndarray:
    """x in the accumulation dtype: x itself, or a copy in this thread's SLOT_WIDENED work array (overwritten by
    the next call that widens: a kernel's intermediate, never its result)."""
    if x.dtype == acc:
        return x
    wide = work_array(SLOT_WIDENED, x.shape, acc)
    np.copyto(wide, x, casting="unsafe")
    return wide


def release_work_arrays() -> None:
    """Free the calling thread's reusable intermediate arrays (they are re-created on demand)."""
    _WORK.buffers.clear()


__all__ = ["SLOT_ACTIVATION", "SLOT_BEST", "SLOT_CONV_COLUMNS", "SLOT_CONV_PHASES", "SLOT_CONV_PRODUCT",
           "SLOT_CONV_WIDE", "SLOT_DENSE", "SLOT_DOUBLING", "SLOT_EQUAL", "SLOT_FLAT_PASS", "SLOT_PAIR", "SLOT_PASS",
           "SLOT_PHASES", "SLOT_RESULT", "SLOT_SCORE", "SLOT_TAP_GRID", "SLOT_WIDENED", "release_work_arrays",
           "widened", "work_array"]
