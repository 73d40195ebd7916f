"""One 1-D pass of a separable pooling reduction along one axis, its slices worked out once per input shape.

A pass never pads: for every tap j the outputs that read real input form one range [out_lo_j, out_hi_j),
found by clipping (runtime.kernels.window_plan). View the input as (before, length, after):

* The interior outputs (every tap real) get one ufunc call per tap, the first two taps in one call. When
  output * stride == length the rows of consecutive `before` blocks line up (output q = b * n_out + o reads
  input row q * stride + tap offset), so the interior of *all* blocks is one long call per tap over the
  (before * length, after) view; outputs that straddle two blocks are edge outputs, recomputed afterwards.
  Long calls are what makes numpy fast (shared/PERFORMANCE.md).
* Strided passes over short rows, and long stride-1 kernels, reduce densely first (`_use_dense`): aligned
  strided passes with three or more taps copy out the input's stride phases and fold over them
  (`_split_phases`); the others reduce at every row and pick the kept rows (as low integer lanes on the
  innermost axis: `lanes_dtype`).
* Stride-1 passes over an outer axis with short rows, whose edges have at most two real taps, fold the first
  two taps first, so that the edge outputs are copies of that partial fold (`_pair_first`).
* The other edge outputs are computed one position at a time from their real taps only.

Outputs without a real tap get the caller's `empty_fill`. For max that is the empty value: a later pass
over another axis only combines outputs of the same position on this axis, so it stays exact.
"""

from __future__ import annotations

import math
import sys
from typing import Sequence

import numpy as np

from poolir.ir.geometry import AxisWindow
from poolir.runtime.kernels.window_plan import axis_plan
from poolir.runtime.kernels.work_arrays import SLOT_DENSE, SLOT_DOUBLING, SLOT_PAIR, SLOT_PHASES, work_array

# The innermost axis with stride > 1 is reduced densely and then subsampled when its input is at most
# this large (cache-resident: 0.13 ms instead of 0.26 ms on 1.6 MB); larger inputs are bandwidth-bound
# and read fewer bytes with strided calls (8x256x28x56 float32: 0.54 ms strided, 0.97 ms dense).
_DENSE_MAX_BYTES = 8 << 20
# ... and so is an outer axis with stride > 1 whose rows (the axes after it) are at most this long.
_DENSE_ROW_BYTES = 4 << 10
# Stride-1 passes fold the first two taps first (_pair_first) only on an outer axis with rows (the axes after it)
# at most this long: there the edge outputs are many short rows, and copying them beats recomputing them.
# Elsewhere the plain fold wins, its second call in place (numpy, microseconds, pair / plain, 3x3 sum or max):
# innermost axis 192x28x28 43 / 37, 64x56x56 49 / 41, 64x112x112 160 / 140; outer axis with rows of 14
# float32 256x14x14 11.6 / 15.4, 1024x14x14 51 / 55, of 28 33 / 31, of 56 41 / 36, of 224 314 / 219.
_PAIR_ROW_BYTES = 112
# Edges with more real taps than this in all are reduced from running reductions along the axis (_running_edges).
_LONG_EDGES = 256


def lanes_dtype(step: int, itemsize: int) -> np.dtype | None:
    """The unsigned integer type that holds `step` consecutive elements of `itemsize` bytes, when every
    step-th element can be picked as its low lane; None when no such type exists (or on big-endian).

    Narrowing a contiguous array of these integers to `itemsize` (narrow_copy) keeps exactly the low lanes:
    measured twice as fast as the strided copy of the same elements (401K float32: 61 -> 29 us)."""
    size = step * itemsize
    if size not in (2, 4, 8) or sys.byteorder != "little":
        return None
    return np.dtype(f"<u{size}")


def as_rows(array: np.ndarray) -> np.ndarray:
    """array with its last (contiguous) axis as one opaque element: numpy copies strided rows of 448 bytes
    this way in 43 us against 54 us element by element (W1's row pick, 3519 rows of 112 float32)."""
    size = array.shape[-1] * array.itemsize
    return array.view(np.dtype((np.void, size))) if size else array


def narrow_copy(out: np.ndarray, lanes: np.ndarray) -> None:
    """Copy the low lanes of `lanes` (a lanes_dtype view) into `out` (contiguous last axis)."""
    np.copyto(out.view(f"<u{out.itemsize}"), lanes, casting="unsafe")


def copy_strided(target: np.ndarray, x: np.ndarray, index: tuple) -> None:
    """target[...] = x[index] (casting to target's dtype). When the innermost axis steps by 2-4 elements of the
    same dtype, the kept elements are the low lanes of wider integers (kernels.axis_pass.lanes_dtype), copied
    twice as fast as element by element (MobileNetV3's 64x112x112 k3 s2 phase split: 261 -> 167 us). A lane
    reads up to step - 1 elements past its own, so the last image row, whose lane may end past x, is copied
    element by element."""
    source = x[index]
    step = source.strides[-1] // x.itemsize if source.ndim >= 3 else 0
    wide = lanes_dtype(step, x.itemsize) if step > 1 and source.strides[-1] == step * x.itemsize else None
    if wide is None or target.dtype != x.dtype or not x.flags.c_contiguous or source.size == 0:
        np.copyto(target, source, casting="unsafe")
        return
    def lanes(view: np.ndarray) -> np.ndarray:
        return np.ndarray(view.shape, dtype=wide, buffer=x, offset=view.ctypes.data - x.ctypes.data,
                          strides=view.strides)
    end = source.ctypes.data - x.ctypes.data + sum((n - 1) * s for n, s in zip(source.shape, source.strides))
    if end + wide.itemsize <= x.nbytes:
        narrow_copy(target, lanes(source))
        return
    if source.shape[1] > 1:
        narrow_copy(target[:, :-1], lanes(source[:, :-1]))
    if source.shape[0] > 1:
        narrow_copy(target[:-1, -1], lanes(source[:-1, -1]))
    np.copyto(target[-1, -1], source[-1, -1])


_PHASES, _DENSE_ALIGNED, _DENSE_LANES, _DENSE_PICKS, _LONG, _LONG_PAIR, _BLOCKS, _EDGES_ONLY = range(8)


class AxisPass:
    """The views of one pass (see the module docstring) as slices, for one input shape; `run` only applies them."""

    __slots__ = ("ufunc", "out_shape", "shape2", "shape3", "out2", "out3", "mode", "kernel", "dilation",
                 "sources", "target", "picks", "lanes", "pair", "pair_edges", "phases", "edges", "running")

    def __init__(self, shape: tuple[int, ...], axis: int, window: AxisWindow, ufunc: np.ufunc, dtype: np.dtype):
        plan = axis_plan(window)
        before, length, after = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])
        n_out, stride = window.output, window.stride
        self.ufunc, self.kernel, self.dilation = ufunc, window.kernel, window.dilation
        self.out_shape = shape[:axis] + (n_out,) + shape[axis + 1:]
        self.shape2, self.shape3 = (before * length, after), (before, length, after)
        self.out2, self.out3 = (before * n_out, after), (before, n_out, after)
        self.sources, self.target, self.picks, self.lanes, self.pair, self.pair_edges = (), (), None, None, None, ()
        self.phases = None
        lo, hi = plan.interior
        has_interior = lo < hi
        aligned = n_out * stride == length and before > 1
        nbytes = math.prod(shape) * dtype.itemsize
        if has_interior and _use_dense(window, after, dtype.itemsize, nbytes, ufunc):
            # Reduce at every row position of the flattened (before * length, after) view with long contiguous
            # calls (rows running into the next block are computed but never kept), then copy out the interior
            # outputs: every stride-th row of each block.
            first = lo * stride - window.pad_begin          # input row of the first interior window
            wide = lanes_dtype(stride, dtype.itemsize)
            if aligned and window.kernel >= 3 and (after > 1 or wide is not None):
                self._split_phases(window, before * n_out, wide if after == 1 else None)
            elif after == 1 and wide is not None and (aligned or before == 1):
                # The kept outputs are every stride-th element of the flat dense reduction: reduce from input
                # `shift` on, so that they are the low lanes of `wide` integers, and narrow them in one
                # contiguous cast (W1's last pass: 63 -> 29 us for the copy). `stride` spare rows at the end
                # hold the high lanes of the last pick, read and dropped.
                self.mode = _DENSE_LANES
                q_lo, q_hi = lo, (before - 1) * n_out + hi
                shift = first % stride
                base = (first - shift) // stride
                self.target = slice(q_lo, q_hi)
                self.lanes = (shift, wide, slice(base, base + q_hi - q_lo))
            elif aligned:
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
            if (stride == 1 and window.kernel >= 3 and 1 < after and after * dtype.itemsize <= _PAIR_ROW_BYTES
                    and all(len(real) <= 2 for _, real in plan.edges)):
                self._pair_first(offsets, rows, window)
        elif has_interior:
            self.mode = _BLOCKS
            self.sources = tuple((slice(None), plan.input_slice(tap, lo, hi)) for tap in plan.taps)
            self.target = (slice(None), slice(lo, hi))
        else:
            self.mode = _EDGES_ONLY
        # Edge outputs, one position at a time: their number is bounded by (pad + effective kernel) / stride,
        # not by the data, and each call still covers every `before` and `after` element.
        self.running = None
        if self.mode != _LONG_PAIR and window.dilation == 1 and sum(len(rows) for _, rows in plan.edges) > _LONG_EDGES:
            self._running_edges(plan.edges, length)
        elif self.mode != _LONG_PAIR:
            self.edges = tuple(((slice(None), position), tuple((slice(None), row) for row in real_rows))
                               for position, real_rows in plan.edges)

    def _split_phases(self, window: AxisWindow, count: int, wide: np.dtype | None) -> None:
        """Aligned stride s > 1, kernel >= 3: copy out the input's stride phases (phase r: rows r, r + s, ...;
        each one contiguous), then fold the taps over them. Tap j of flat output q reads row q * s + c_j
        (c_j = j * d - pad_begin), which is row q + c_j // s of phase c_j % s: every tap is one long contiguous
        call over count = before * output rows, and nothing is computed that is not kept. The phases are row
        copies, or, on the innermost axis, low-lane narrowings (axis_pass.lanes_dtype). Against reducing
        densely and picking rows (W1: 3x3 stride 2): half the reductions, for one more copy of half the rows
        (measured pass by pass in benchmarks/README.md). Edge outputs are redone as in every mode."""
        self.mode = _PHASES
        s = window.stride
        offsets = [j * window.dilation - window.pad_begin for j in range(window.kernel)]
        used = sorted({c % s for c in offsets})
        taps = tuple((used.index(c % s), c // s) for c in offsets)
        q_lo = max(0, max(-shift for _, shift in taps))
        q_hi = min(count, count - max(shift for _, shift in taps))
        self.phases = (tuple(used), taps, (q_lo, q_hi), wide, count)
        self.target = slice(q_lo, q_hi)

    def _running_edges(self, edges, length: int) -> None:
        """Edges of many taps in all (a kernel of 2000 with pads of 1999: 4000 edges of up to 2000 taps took minutes
        tap by tap): with dilation 1 an edge's real rows are a prefix of the axis, a suffix, or all of it, so a
        running reduction along the axis gives every prefix at once, and one over the reversed axis every suffix.
        Max is exact either way; a prefix sum adds its rows in the fold's order, a suffix sum from the end."""
        prefixes, ends, suffixes, starts, empty = [], [], [], [], []
        for position, rows in edges:
            if not rows:
                empty.append(position)
            elif rows[0] == 0:
                prefixes.append(position)
                ends.append(rows[-1])
            else:  # rows[-1] == length - 1: an edge output outside the interior misses input at one end
                suffixes.append(position)
                starts.append(length - 1 - rows[0])
        self.running = tuple(np.asarray(values, np.intp) for values in (prefixes, ends, suffixes, starts, empty))
        self.edges = ()

    def _pair_first(self, offsets: list[int], rows: int, window: AxisWindow) -> None:
        """Stride 1, edges of at most two real taps: fold the first two taps over every row first (P), then the
        others onto P. An edge's real taps J, J+1 at output o are taps 0, 1 of output o + J * d, so its value
        is P there (one tap: x itself): a strided copy, not a strided ufunc call (numpy: 0.3 vs 1.7 ns an
        element; W2's column pass 71 -> 58 us). Same taps in the same order: the same bits as a fold."""
        self.mode = _LONG_PAIR
        first, second = offsets[0], offsets[1]
        lo, hi = max(0, -first), min(rows, rows - second)   # rows q where taps 0 and 1 read x[q + offset]
        self.pair = (slice(lo + first, hi + first), slice(lo + second, hi + second), slice(lo, hi))
        self.sources = self.sources[2:]
        copies, folds = [], []
        for position, real_rows in axis_plan(window).edges:
            if not real_rows:
                folds.append(((slice(None), position), ()))
                continue
            tap = (real_rows[0] - position + window.pad_begin) // window.dilation
            source = real_rows[0] if len(real_rows) == 1 else position + tap * window.dilation
            copies.append(((slice(None), position), len(real_rows) == 2, (slice(None), source)))
        self.pair_edges = tuple(copies)
        self.edges = tuple(folds)

    def run(self, x: np.ndarray, out: np.ndarray, empty_fill) -> None:
        ufunc, mode = self.ufunc, self.mode
        if mode == _PHASES:
            used, taps, (q_lo, q_hi), wide, count = self.phases
            after = self.shape2[1]
            phases = work_array(SLOT_PHASES, (len(used), count, after), x.dtype)
            x2 = x.reshape(self.shape2)
            step = len(x2) // count
            for number, r in enumerate(used):
                if wide is None:
                    np.copyto(as_rows(phases[number]), as_rows(x2[r::step]))
                    continue
                flat, target = x.reshape(-1), phases[number].reshape(-1)
                lanes = count if r == 0 else count - 1      # phase r > 0: its last row lies past a whole lane
                narrow_copy(target[:lanes], flat[r: r + lanes * step].view(wide))
                target[lanes:] = flat[len(flat) - step + r:][:count - lanes]
            _fold(ufunc, [phases[number][q_lo + shift: q_hi + shift] for number, shift in taps],
                  out.reshape(self.out2)[self.target])
        elif mode == _DENSE_LANES:
            shift, wide, picks = self.lanes
            step = wide.itemsize // x.itemsize
            flat = dense_reduce(ufunc, x.reshape(-1, 1)[shift:], self.kernel, self.dilation, spare=step).reshape(-1)
            lanes = flat[: flat.size // step * step].view(wide)[picks]
            narrow_copy(out.reshape(-1)[self.target], lanes)
        elif mode == _DENSE_ALIGNED:
            dense = dense_reduce(ufunc, x.reshape(self.shape2), self.kernel, self.dilation)
            np.copyto(as_rows(out.reshape(self.out2)[self.target]), as_rows(dense[self.sources]))
        elif mode == _DENSE_PICKS:
            dense = dense_reduce(ufunc, x.reshape(self.shape2), self.kernel, self.dilation)
            first, shape, steps = self.picks
            item = dense.itemsize
            picks = np.lib.stride_tricks.as_strided(dense[first:], shape=shape,
                                                    strides=tuple(step * item for step in steps), writeable=False)
            np.copyto(as_rows(out.reshape(self.out3)[self.target]), as_rows(picks))
        elif mode == _LONG:
            x2 = x.reshape(self.shape2)
            _fold(ufunc, [x2[s] for s in self.sources], out.reshape(self.out2)[self.target])
        elif mode == _LONG_PAIR:
            x2 = x.reshape(self.shape2)
            pair = work_array(SLOT_PAIR, self.shape2, x.dtype)
            first, second, rows = self.pair
            ufunc(x2[first], x2[second], out=pair[rows])
            target = out.reshape(self.out2)[self.target]
            ufunc(pair[self.target], x2[self.sources[0]], out=target)
            for source in self.sources[1:]:
                ufunc(target, x2[source], out=target)
            x3, pair3, out3 = x.reshape(self.shape3), pair.reshape(self.shape3), out.reshape(self.out3)
            for position, from_pair, source in self.pair_edges:
                np.copyto(out3[position], (pair3 if from_pair else x3)[source])
        elif mode == _BLOCKS:
            x3 = x.reshape(self.shape3)
            _fold(ufunc, [x3[s] for s in self.sources], out.reshape(self.out3)[self.target])
        if self.running is not None:
            x3, out3 = x.reshape(self.shape3), out.reshape(self.out3)
            prefixes, ends, suffixes, starts, empty = self.running
            if len(prefixes):
                out3[:, prefixes] = ufunc.accumulate(x3, axis=1)[:, ends]
            if len(suffixes):
                out3[:, suffixes] = ufunc.accumulate(x3[:, ::-1], axis=1)[:, starts]
            if len(empty):
                out3[:, empty] = empty_fill
        if self.edges:
            x3, out3 = x.reshape(self.shape3), out.reshape(self.out3)
            for position, rows in self.edges:
                target = out3[position]
                if rows:
                    _fold(ufunc, [x3[row] for row in rows], target)
                else:
                    target[...] = empty_fill


def _use_dense(window: AxisWindow, after: int, itemsize: int, nbytes: int, ufunc: np.ufunc) -> bool:
    """Whether a pass should reduce densely first (see the module docstring); measured on this machine:

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


def dense_reduce(ufunc: np.ufunc, x2: np.ndarray, kernel: int, dilation: int, spare: int = 0,
                 slot: int = SLOT_DENSE) -> np.ndarray:
    """D[r] = ufunc over x2[r + j * dilation] for j < kernel, for every row r whose taps are all in x2;
    the array returned (this thread's work array `slot`) has `spare` more rows after those, left uninitialised.

    Short kernels take one call per tap. Longer ones double: block_w[r] reduces w consecutive taps, and
    block_2w[r] = ufunc(block_w[r], block_w[r + w * dilation]). Max then covers the kernel with two
    overlapping blocks (max is idempotent); a sum adds the disjoint blocks of the kernel's binary digits.
    """
    rows = x2.shape[0]
    size = rows - (kernel - 1) * dilation
    full = work_array(slot, (size + spare,) + x2.shape[1:], x2.dtype)
    dense = full[:size]
    if kernel <= 3:
        _fold(ufunc, [x2[j * dilation: j * dilation + size] for j in range(kernel)], dense)
        return full
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
    return full


def _fold(ufunc: np.ufunc, views: Sequence[np.ndarray], out: np.ndarray) -> None:
    """out = ufunc over views, the first two in one call, then in place."""
    if len(views) == 1:
        np.copyto(out, views[0])
        return
    ufunc(views[0], views[1], out=out)
    for view in views[2:]:
        ufunc(out, view, out=out)


__all__ = ["AxisPass", "as_rows", "copy_strided", "dense_reduce", "lanes_dtype", "narrow_copy"]
