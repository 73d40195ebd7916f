"""The separable 1-D passes behind max, average and Lp pooling (shared/PERFORMANCE.md has the measurements).

* Max and sum are separable: an N-D window is the product of per-axis windows, so a kernel runs one
  1-D pass per spatial axis, outermost axis first (its slices are long contiguous blocks).
* A 1-D pass never pads: for every tap j the outputs that read real input form one range
  [out_lo_j, out_hi_j), found by clipping (runtime.kernels.window_plan). The interior, where every tap is
  real, is reduced with one ufunc call per tap over the whole interior (the first two taps in one call);
  the few edge outputs are computed one position at a time from their real taps only.
* Long kernels with stride 1 reduce by doubling (about log2(kernel) calls per axis, not kernel - 1).
* Leading rows are processed in cache-sized blocks, and intermediates live in per-thread work arrays
  (runtime.kernels.work_arrays).
"""

from __future__ import annotations

import functools
import math
import sys
from typing import Sequence

import numpy as np

from poolir.ir.geometry import AxisWindow
from poolir.runtime.kernels.window_plan import AxisPlan, axis_plan, on_tap_grid
from poolir.runtime.kernels.work_arrays import (SLOT_DENSE, SLOT_DOUBLING, SLOT_PASS, SLOT_RESULT, SLOT_TAP_GRID,
                                                work_array)

# Leading rows (N * C) are pooled in blocks of about this many input bytes, so that the intermediates of
# all passes stay in cache: the input is read from memory once instead of once per pass. Measured for
# W4 (16 MiB, 3 passes): 3.8-4.3 ms whole, 2.5 ms in 4 MiB blocks, 3.1 ms in 8 MiB, 3.2 ms in 512 KiB
# (smaller blocks pay more per-call overhead than they save).
CHUNK_BYTES = 4 << 20

# The innermost axis with stride > 1 is reduced densely and then subsampled when its input is at most
# this large (cache-resident: 0.13 ms instead of 0.26 ms on 1.6 MB); larger inputs are bandwidth-bound
# and read fewer bytes with strided calls (8x256x28x56 float32: 0.54 ms strided, 0.97 ms dense).
_DENSE_MAX_BYTES = 8 << 20
# ... and so is an outer axis with stride > 1 whose rows (the axes after it) are at most this long.
_DENSE_ROW_BYTES = 4 << 10


def _outer_first(ndim: int, plans: Sequence[AxisPlan]):
    """(array axis, plan) for every spatial axis that changes something, outermost first."""
    first = ndim - len(plans)
    return [(first + k, plan) for k, plan in enumerate(plans) if not plan.is_identity]


def reduce_axis(x: np.ndarray, axis: int, plan: AxisPlan, ufunc: np.ufunc, empty_fill,
                out: np.ndarray | None = None) -> np.ndarray:
    """One 1-D pass of `ufunc` (np.maximum or np.add) over the real taps along `axis` of contiguous x.

    Outputs without a real tap get `empty_fill`. For max that is the caller's empty value: a later pass
    over another axis only combines outputs of the same position on this axis, so it stays exact.

    View x as (before, length, after). The interior outputs (every tap real) get one ufunc call per tap;
    when output * stride == length the rows of consecutive `before` blocks line up (output q = b * n_out + o
    reads input row q * stride + tap offset), so the interior of *all* blocks is one long call per tap over
    the (before * length, after) view, and the outputs that straddle two blocks are edge outputs, which are
    recomputed exactly afterwards. Long calls are what makes numpy fast (shared/PERFORMANCE.md).
    Every slice is worked out once per (shape, axis, window, ufunc, dtype) (_AxisPass, cached): the Python
    work of a pass was 10-15 us a call, a third of onnxruntime's whole time on W7.
    """
    step = _axis_pass(x.shape, axis, plan.window, ufunc, x.dtype)
    if out is None:
        out = np.empty(step.out_shape, dtype=x.dtype)
    step.run(x, out, empty_fill)
    return out


_DENSE_ALIGNED, _DENSE_PICKS, _LONG, _BLOCKS, _EDGES_ONLY = range(5)


class _AxisPass:
    """The views of one pass (see reduce_axis) as slices, for one input shape; `run` only applies them."""

    __slots__ = ("ufunc", "out_shape", "shape2", "shape3", "out2", "out3", "mode", "kernel", "dilation",
                 "sources", "target", "picks", "edges")

    def __init__(self, shape: tuple[int, ...], axis: int, window: AxisWindow, ufunc: np.ufunc, dtype: np.dtype):
        plan = axis_plan(window)
        before, length, after = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])
        n_out, stride = window.output, window.stride
        self.ufunc, self.kernel, self.dilation = ufunc, window.kernel, window.dilation
        self.out_shape = shape[:axis] + (n_out,) + shape[axis + 1:]
        self.shape2, self.shape3 = (before * length, after), (before, length, after)
        self.out2, self.out3 = (before * n_out, after), (before, n_out, after)
        self.sources, self.target, self.picks = (), (), None
        lo, hi = plan.interior
        has_interior = lo < hi
        aligned = n_out * stride == length and before > 1
        nbytes = math.prod(shape) * dtype.itemsize
        if has_interior and _use_dense(window, after, dtype.itemsize, nbytes, ufunc):
            # Reduce at every row position of the flattened (before * length, after) view with long contiguous
            # calls (rows running into the next block are computed but never kept), then copy out the interior
            # outputs: every stride-th row of each block.
            first = lo * stride - window.pad_begin          # input row of the first interior window
            if aligned:
                self.mode = _DENSE_ALIGNED
                q_lo, q_hi = lo, (before - 1) * n_out + hi    # interior of the first through the last block
                self.target = slice(q_lo, q_hi)
                self.sources = slice(first, first + (q_hi - q_lo - 1) * stride + 1, stride)
            else:
                # Block b's interior output o reads dense row b * length + first + (o - lo) * stride; the last,
                # (before - 1) * length + (hi - 1) * stride - pad_begin, is in range because its window is real.
                self.mode = _DENSE_PICKS
                self.target = (slice(None), slice(lo, hi))
                self.picks = (first, (before, hi - lo, after), (length * after, stride * after, 1))
        elif has_interior and aligned:
            self.mode = _LONG
            offsets = [j * window.dilation - window.pad_begin for j in range(window.kernel)]
            rows = before * length
            q_lo = max(max(0, -(c // stride)) for c in offsets)
            q_hi = min(min(before * n_out, (rows - 1 - c) // stride + 1) for c in offsets)
            self.sources = tuple(slice(q_lo * stride + c, (q_hi - 1) * stride + c + 1, stride) for c in offsets)
            self.target = slice(q_lo, q_hi)
            # Everything outside [lo, hi) in each block, including rows before q_lo and after q_hi, is redone.
        elif has_interior:
            self.mode = _BLOCKS
            self.sources = tuple((slice(None), plan.input_slice(tap, lo, hi)) for tap in plan.taps)
            self.target = (slice(None), slice(lo, hi))
        else:
            self.mode = _EDGES_ONLY
        # Edge outputs, one position at a time: their number is bounded by (pad + effective kernel) / stride,
        # not by the data, and each call still covers every `before` and `after` element.
        self.edges = tuple(((slice(None), position), tuple((slice(None), row) for row in real_rows))
                           for position, real_rows in plan.edges)

    def run(self, x: np.ndarray, out: np.ndarray, empty_fill) -> None:
        ufunc, mode = self.ufunc, self.mode
        if mode == _DENSE_ALIGNED:
            dense = _dense_reduce(ufunc, x.reshape(self.shape2), self.kernel, self.dilation)
            np.copyto(out.reshape(self.out2)[self.target], dense[self.sources])
        elif mode == _DENSE_PICKS:
            dense = _dense_reduce(ufunc, x.reshape(self.shape2), self.kernel, self.dilation)
            first, shape, steps = self.picks
            item = dense.itemsize
            picks = np.lib.stride_tricks.as_strided(dense[first:], shape=shape,
                                                    strides=tuple(step * item for step in steps), writeable=False)
            np.copyto(out.reshape(self.out3)[self.target], picks)
        elif mode == _LONG:
            x2 = x.reshape(self.shape2)
            _fold(ufunc, [x2[s] for s in self.sources], out.reshape(self.out2)[self.target])
        elif mode == _BLOCKS:
            x3 = x.reshape(self.shape3)
            _fold(ufunc, [x3[s] for s in self.sources], out.reshape(self.out3)[self.target])
        if self.edges:
            x3, out3 = x.reshape(self.shape3), out.reshape(self.out3)
            for position, rows in self.edges:
                target = out3[position]
                if rows:
                    _fold(ufunc, [x3[row] for row in rows], target)
                else:
                    target[...] = empty_fill


@functools.lru_cache(maxsize=512)
def _axis_pass(shape: tuple[int, ...], axis: int, window: AxisWindow, ufunc: np.ufunc, dtype: np.dtype) -> _AxisPass:
    return _AxisPass(shape, axis, window, ufunc, dtype)


def _use_dense(window: AxisWindow, after: int, itemsize: int, nbytes: int, ufunc: np.ufunc) -> bool:
    """Whether a pass should reduce densely first (see reduce_axis); measured on this machine:

    - stride > 1 on the innermost axis, or on an outer axis whose rows (the `after` elements behind it) are
      short: numpy is slow on arrays with strided rows, ~5x a contiguous call per element on the innermost
      axis and ~6x for rows of 112 float32 (401K maxima in cache: 0.36 ms, contiguous 0.06 ms), so a dense
      reduction over every row (contiguous calls, twice the elements) plus one copy of the kept rows wins for
      cache-resident data (W1's last pass: 0.13 ms instead of 0.26 ms; W1 whole with its first pass dense
      too: 0.53 -> 0.45 ms and 0.70 -> 0.56 ms in two interleaved runs). Beyond that, bandwidth rules and
      strided calls read fewer bytes (W3: 0.54 ms strided, 0.97 ms dense); long rows (W4's 16 KiB) are as
      fast strided. A sum over rows stays tap by tap (kernel <= 3), so its order, and every bit of its
      result, is what the strided calls give;
    - stride 1 with a long kernel: doubling needs about log2(kernel) + popcount(kernel) calls, not kernel - 1.
    """
    if window.kernel < 2:
        return False
    if window.stride == 1:
        return window.kernel >= 4
    if nbytes > _DENSE_MAX_BYTES:
        return False
    if after == 1:
        return True
    return after * itemsize <= _DENSE_ROW_BYTES and (window.kernel <= 3 or ufunc is np.maximum)


def _dense_reduce(ufunc: np.ufunc, x2: np.ndarray, kernel: int, dilation: int) -> np.ndarray:
    """D[r] = ufunc over x2[r + j * dilation] for j < kernel, for every row r whose taps are all in x2.

    Short kernels take one call per tap. Longer ones double: block_w[r] reduces w consecutive taps, and
    block_2w[r] = ufunc(block_w[r], block_w[r + w * dilation]). Max then covers the kernel with two
    overlapping blocks (max is idempotent); a sum adds the disjoint blocks of the kernel's binary digits.
    """
    rows = x2.shape[0]
    size = rows - (kernel - 1) * dilation
    dense = work_array(SLOT_DENSE, (size,) + x2.shape[1:], x2.dtype)
    if kernel <= 3:
        _fold(ufunc, [x2[j * dilation: j * dilation + size] for j in range(kernel)], dense)
        return dense
    overlapping = ufunc is np.maximum
    block, width, level = x2, 1, 0
    pending = None            # the sum so far when it is not yet in `dense` (a view of x2 or of a block)
    offset = 0
    while True:
        if not overlapping and kernel & width:
            view = block[offset: offset + size]
            if pending is None and offset == 0 and block is not x2 and 2 * width <= kernel:
                np.copyto(dense, view)       # this block's buffer is about to be reused
                pending = dense
            elif pending is None:
                pending = view
            else:
                ufunc(pending, view, out=dense)
                pending = dense
            offset += width * dilation
        if 2 * width > kernel:
            break
        grown = rows - (2 * width - 1) * dilation
        target = work_array(SLOT_DOUBLING[level % 2], (grown,) + x2.shape[1:], x2.dtype)
        ufunc(block[:grown], block[width * dilation: width * dilation + grown], out=target)
        block, width, level = target, 2 * width, level + 1
    if overlapping:
        shift = (kernel - width) * dilation
        ufunc(block[:size], block[shift: shift + size], out=dense)
    elif pending is not dense:
        np.copyto(dense, pending)
    return dense


def _fold(ufunc: np.ufunc, views: Sequence[np.ndarray], out: np.ndarray) -> None:
    """out = ufunc over views, the first two in one call, then in place."""
    if len(views) == 1:
        np.copyto(out, views[0])
        return
    ufunc(views[0], views[1], out=out)
    for view in views[2:]:
        ufunc(out, view, out=out)


def sum_pass(x: np.ndarray, axis: int, plan: AxisPlan, out: np.ndarray | None) -> np.ndarray:
    # Not a banded 0/1 matrix product, although BLAS is fast here: 0 * inf and 0 * NaN are NaN, so one
    # non-finite input would poison every output of its row; and threaded BLAS is erratic on a busy machine.
    return reduce_axis(x, axis, plan, np.add, 0, out)


def separable_reduce(x: np.ndarray, plans: Sequence[AxisPlan], one_pass, *,
                     fresh_result: bool = True) -> np.ndarray:
    """Run `one_pass(y, axis, plan, out)` over every non-trivial spatial axis, outermost first.

    Intermediate results live in this thread's work arrays; the last pass writes a fresh array (or a
    work array too when `fresh_result` is False, because the caller converts it into a fresh one).
    The result is never `x` itself.
    """
    x, plans = _to_tap_grid(x, plans)
    passes = _outer_first(x.ndim, plans)
    if not passes:
        return x.copy() if fresh_result else x
    rank = len(plans)
    leading = x.shape[: x.ndim - rank]
    rows = math.prod(leading)
    out_spatial = tuple(plan.window.output for plan in plans)
    chunk = max(1, CHUNK_BYTES // max(1, x.nbytes // max(rows, 1)))
    if fresh_result:
        result = np.empty(leading + out_spatial, dtype=x.dtype)
    else:
        result = work_array(SLOT_RESULT, leading + out_spatial, x.dtype)
    if rows == 0:
        return result
    if rows <= chunk:
        _run_block(x, passes, one_pass, result)
        return result
    # Blocks of leading rows small enough that every intermediate stays in the core's cache: the input is
    # read from memory once and the result written once, instead of every pass streaming through memory.
    x_rows = x.reshape((rows,) + x.shape[x.ndim - rank:])
    result_rows = result.reshape((rows,) + out_spatial)
    block_passes = [(1 + axis - (x.ndim - rank), plan) for axis, plan in passes]
    for start in range(0, rows, chunk):
        _run_block(x_rows[start: start + chunk], block_passes, one_pass, result_rows[start: start + chunk])
    return result


def _to_tap_grid(x: np.ndarray, plans: Sequence[AxisPlan]) -> tuple[np.ndarray, Sequence[AxisPlan]]:
    """x subsampled (one contiguous copy) on every axis whose taps all read one phase, with the plans of
    the stride-1 windows that pool it (window_plan.on_tap_grid); x and plans unchanged when none does."""
    grids = [on_tap_grid(plan.window) for plan in plans]
    if not any(grids):
        return x, plans
    first = x.ndim - len(plans)
    picks = [slice(None)] * first + [grid[0] if grid else slice(None) for grid in grids]
    sub = work_array(SLOT_TAP_GRID, x[tuple(picks)].shape, x.dtype)
    inner = picks[-1]
    lanes = inner.step * x.itemsize if inner.step else 0
    if lanes in (2, 4, 8) and inner.start == 0 and x.shape[-1] % inner.step == 0 and sys.byteorder == "little":
        # Every step-th element of the innermost axis is the low lane of a wider unsigned integer: a
        # contiguous integer narrowing copies it twice as fast as a strided copy (W7: 29 -> 15 us).
        picks[-1] = slice(None)
        wide = x.view(f"<u{lanes}")[tuple(picks)]
        np.copyto(sub.view(f"<u{x.itemsize}"), wide, casting="unsafe")
    else:
        np.copyto(sub, x[tuple(picks)])
    return sub, tuple(axis_plan(grid[1]) if grid else plan for grid, plan in zip(grids, plans))


def _run_block(x: np.ndarray, passes, one_pass, out: np.ndarray) -> None:
    """Run `passes` over x (one block of leading rows); the last pass writes into `out`."""
    y = x
    for number, (axis, plan) in enumerate(passes):
        last = number == len(passes) - 1
        shape = y.shape[:axis] + (plan.window.output,) + y.shape[axis + 1:]
        y = one_pass(y, axis, plan, out if last else work_array(SLOT_PASS[number % 2], shape, y.dtype))


__all__ = ["CHUNK_BYTES", "reduce_axis", "separable_reduce", "sum_pass"]
