"""The separable reductions behind max, average and Lp pooling (shared/PERFORMANCE.md has the measurements).

* Max and sum are separable: an N-D window is the product of per-axis windows, so a kernel runs one
  1-D pass per spatial axis (runtime.kernels.axis_pass), outermost axis first (its slices are long
  contiguous blocks).
* An axis whose stride divides its dilation reads one input phase only: it is subsampled once and pooled
  with stride 1 (window_plan.on_tap_grid).
* Leading rows are processed in cache-sized blocks, and intermediates live in per-thread work arrays
  (runtime.kernels.work_arrays).
* When every window lies inside the input with stride 1 on every axis (no padding: W6's AveragePool 7x7),
  each pass reduces the whole flat input densely, windows that run into the next row or channel included,
  and one copy at the end picks the real outputs (`_flat_passes`): per-pass picks copied every
  intermediate once more (W6: 264 -> 241 us). The kept outputs get the same operations in the same order.
* Everything above is worked out once per (input shape, dtype, windows, ufunc) (_Reduction, cached), so
  a call only applies slices: the Python work of planning was 10-15 us per pass, a third of
  onnxruntime's whole time on W7.

Sums are not banded 0/1 matrix products, although BLAS is fast at them: 0 * inf and 0 * NaN are NaN, so
one non-finite input would poison every output of its row; and threaded BLAS is erratic on a busy machine.
"""

from __future__ import annotations

import functools
import math
from typing import Sequence

import numpy as np

from poolir.ir.geometry import AxisWindow
from poolir.runtime.kernels.axis_pass import AxisPass, as_rows, dense_reduce, lanes_dtype, narrow_copy
from poolir.runtime.kernels.window_plan import axis_plan, on_tap_grid
from poolir.runtime.kernels.work_arrays import (SLOT_DENSE, SLOT_FLAT_PASS, SLOT_PASS, SLOT_RESULT, SLOT_TAP_GRID,
                                                work_array)

# Leading rows (N * C) are pooled in blocks of about this many input bytes, so that the intermediates of
# all passes stay in cache: the input is read from memory once instead of once per pass. Measured for
# W4 (16 MiB, 3 passes): 3.8-4.3 ms whole, 2.5 ms in 4 MiB blocks, 3.1 ms in 8 MiB, 3.2 ms in 512 KiB
# (smaller blocks pay more per-call overhead than they save).
CHUNK_BYTES = 4 << 20


def separable_reduce(x: np.ndarray, windows: Sequence[AxisWindow], ufunc: np.ufunc, empty_fill, *,
                     fresh_result: bool = True) -> np.ndarray:
    """`ufunc` (np.maximum or np.add) over the real taps of every window of the trailing spatial axes of
    contiguous x; outputs without a real tap on some axis get `empty_fill`.

    Intermediate results live in this thread's work arrays; the result is a fresh array (or a work array
    too when `fresh_result` is False, because the caller converts it into a fresh one), never `x` itself.
    """
    return _reduction(x.shape, x.dtype, tuple(windows), ufunc, CHUNK_BYTES).run(x, empty_fill, fresh_result)


@functools.lru_cache(maxsize=256)
def _reduction(shape: tuple[int, ...], dtype: np.dtype, windows: tuple[AxisWindow, ...], ufunc: np.ufunc,
               chunk_bytes: int) -> _Reduction:
    return _Reduction(shape, dtype, windows, ufunc, chunk_bytes)


class _Reduction:
    """separable_reduce for one input shape, dtype, windows and ufunc, with every slice worked out."""

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, windows: tuple[AxisWindow, ...],
                 ufunc: np.ufunc, chunk_bytes: int):
        self.dtype = dtype
        rank = len(windows)
        self.grid = None
        grids = [on_tap_grid(window) for window in windows]
        if any(grids):
            picks = [slice(None)] * (len(shape) - rank) + [grid[0] if grid else slice(None) for grid in grids]
            sub_shape = _picked_shape(shape, picks)
            inner, step = picks[-1], picks[-1].step or 1
            wide = lanes_dtype(step, dtype.itemsize) if step > 1 else None
            if wide is not None and inner.start == 0 and shape[-1] % step == 0:
                # Every step-th element of the innermost axis is the low lane of a wider integer (W7: 29 -> 15 us).
                self.grid = (sub_shape, tuple(picks[:-1]) + (slice(None),), wide)
            else:
                self.grid = (sub_shape, tuple(picks), None)
            windows = tuple(grid[1] if grid else window for grid, window in zip(grids, windows))
            shape = sub_shape
        leading, spatial = shape[: len(shape) - rank], shape[len(shape) - rank:]
        rows = math.prod(leading)
        out_spatial = tuple(window.output for window in windows)
        self.result_shape = leading + out_spatial
        self.row_shapes = ((rows,) + spatial, (rows,) + out_spatial)
        first = len(shape) - rank
        passes = [(k, window) for k, window in enumerate(windows) if not axis_plan(window).is_identity]
        self.identity = not passes
        self.blocks: list[tuple[slice | None, list[tuple[AxisPass, int | None]]]] = []
        self.flat = None
        if self.identity or rows == 0:
            return
        chunk = max(1, chunk_bytes // max(1, math.prod(shape) * dtype.itemsize // rows))
        if len(passes) >= 2 and rows <= chunk and all(_inside_stride_one(window) for _, window in passes):
            self.flat = (ufunc, *_flat_passes(shape, [(first + k, window) for k, window in passes]))
            return
        if rows <= chunk:
            self.blocks.append((None, _steps(shape, [(first + k, w) for k, w in passes], ufunc, dtype)))
            return
        # Blocks of leading rows small enough that every intermediate stays in the core's cache: the input is
        # read from memory once and the result written once, instead of every pass streaming through memory.
        by_size = {}
        for start in range(0, rows, chunk):
            size = min(chunk, rows - start)
            if size not in by_size:
                by_size[size] = _steps((size,) + spatial, [(1 + k, w) for k, w in passes], ufunc, dtype)
            self.blocks.append((slice(start, start + size), by_size[size]))

    def run(self, x: np.ndarray, empty_fill, fresh_result: bool) -> np.ndarray:
        if self.grid is not None:
            x = self._subsample(x)
        if self.identity:
            return x.copy() if fresh_result or self.grid is None else x
        if fresh_result:
            result = np.empty(self.result_shape, dtype=self.dtype)
        else:
            result = work_array(SLOT_RESULT, self.result_shape, self.dtype)
        if self.flat is not None:
            self._run_flat(x, result)
            return result
        x_rows, result_rows = None, None
        if self.blocks and self.blocks[0][0] is not None:
            x_rows, result_rows = x.reshape(self.row_shapes[0]), result.reshape(self.row_shapes[1])
        for rows, steps in self.blocks:
            y, last = (x, result) if rows is None else (x_rows[rows], result_rows[rows])
            for step, slot in steps:
                out = last if slot is None else work_array(slot, step.out_shape, self.dtype)
                step.run(y, out, empty_fill)
                y = out
        return result

    def _run_flat(self, x: np.ndarray, result: np.ndarray) -> None:
        ufunc, passes, strides = self.flat
        dense = x.reshape(-1, 1)
        for number, (kernel, step) in enumerate(passes):
            slot = (SLOT_DENSE, SLOT_FLAT_PASS)[number % 2]
            dense = dense_reduce(ufunc, dense, kernel, step, slot=slot)[: len(dense) - (kernel - 1) * step]
        item = dense.itemsize
        picks = np.lib.stride_tricks.as_strided(dense, shape=result.shape, strides=tuple(n * item for n in strides),
                                                writeable=False)
        np.copyto(as_rows(result), as_rows(picks))

    def _subsample(self, x: np.ndarray) -> np.ndarray:
        shape, picks, wide = self.grid
        sub = work_array(SLOT_TAP_GRID, shape, self.dtype)
        if wide is None:
            np.copyto(sub, x[picks])
        else:
            narrow_copy(sub, x.view(wide)[picks])
        return sub


def _inside_stride_one(window: AxisWindow) -> bool:
    """Every output's window lies inside the input (the interior is every output), and output o starts at input o."""
    return window.stride == 1 and window.pad_begin == 0 and axis_plan(window).interior == (0, window.output)


def _flat_passes(shape: tuple[int, ...], passes):
    """((kernel, tap step in flat elements) per pass, the element strides of the real outputs in the last pass's
    flat result). Output o of every axis starts at input o, so the real outputs sit at x's own flat positions."""
    steps = tuple((window.kernel, window.dilation * math.prod(shape[axis + 1:])) for axis, window in passes)
    strides = tuple(math.prod(shape[axis + 1:]) for axis in range(len(shape)))
    return steps, strides


def _picked_shape(shape: tuple[int, ...], picks) -> tuple[int, ...]:
    return tuple(len(range(*pick.indices(length))) for length, pick in zip(shape, picks))


def _steps(shape: tuple[int, ...], passes, ufunc: np.ufunc, dtype: np.dtype) -> list[tuple[AxisPass, int | None]]:
    """The passes over `shape` as (AxisPass, work slot of its output; None for the last, which writes the result)."""
    steps = []
    for number, (axis, window) in enumerate(passes):
        step = AxisPass(shape, axis, window, ufunc, dtype)
        steps.append((step, None if number == len(passes) - 1 else SLOT_PASS[number % 2]))
        shape = step.out_shape
    return steps


__all__ = ["CHUNK_BYTES", "separable_reduce"]
