"""The numpy pooling kernels: one N-D function per reduction family (max, average, Lp, global).

Every kernel takes `x` of shape (*leading, *spatial) and one `ir.geometry.AxisWindow` per trailing
spatial axis, already resolved (pads, rounding and auto_pad are the geometry's business, not ours).
Along one axis, output position o reads the taps

    i(o, j) = o * stride - pad_begin + j * dilation,   j = 0 .. kernel-1

and only *real* taps (0 <= i < length on every axis) take part. Padding taps and taps past the padded
extent (a ceil overhang) never contribute a value and are never selected as an argmax; whether they
count in an average's divisor is the caller's choice (`divisor`). The adapters (ONNX, IR) decide what
their operator means and express it with these parameters.

How it is computed (see shared/PERFORMANCE.md for the measurements behind each choice):

* Max and sum are separable: an N-D window is the product of per-axis windows, so the kernel runs one
  1-D pass per spatial axis, outermost axis first (its slices are long contiguous blocks).
* A 1-D pass never pads: for every tap j the outputs that read real input form one range
  [out_lo_j, out_hi_j), found by clipping. The interior, where every tap is real, is reduced with one
  ufunc call per tap over the whole interior (the first two taps in one call); the few edge outputs
  are computed one position at a time from their real taps only.
* Long kernels with stride 1 reduce by doubling (about log2(kernel) calls per axis, not kernel - 1);
  global average is a matvec with a ones vector (BLAS).
* Argmax indices: max first, then an equality search over the N-D taps, keeping the first matching
  tap in row-major scan order with arithmetic (no masked assignment); the tap number is turned into a
  flat index at the end, from per-axis vectors.
* Per-axis plans (tap ranges, edge outputs, empty windows) and average divisors are cached per geometry;
  intermediate arrays are reused per thread (fresh large arrays cost page faults on every call).

Dtypes: max runs exactly in the input dtype (floats, bfloat16 and integers). Average and Lp accumulate
in float32 (float64 for float64 input) and return the input dtype; they accept floating types only.
The input array is never modified.
"""

from __future__ import annotations

import functools
import itertools
import math
import threading
from dataclasses import dataclass
from typing import Literal, Sequence

import ml_dtypes
import numpy as np

from poolir.ir.errors import UnsupportedError, UsageError
from poolir.ir.geometry import AxisWindow

__all__ = ["IndexLayout", "max_pool", "avg_pool", "lp_pool", "global_pool", "lowest_value", "DIVISORS",
           "release_work_arrays"]

Divisor = Literal["real", "padded", "kernel"]
DIVISORS: tuple[str, ...] = ("real", "padded", "kernel")

# Leading rows (N * C) are pooled in blocks of about this many input bytes, so that the intermediates of
# all passes stay in cache: the input is read from memory once instead of once per pass. Measured for
# W4 (16 MiB, 3 passes): 3.8-4.3 ms whole, 2.5 ms in 4 MiB blocks, 3.1 ms in 8 MiB, 3.2 ms in 512 KiB
# (smaller blocks pay more per-call overhead than they save).
_CHUNK_BYTES = 4 << 20

# The innermost axis with stride > 1 is reduced densely and then subsampled when its input is at most
# this large (cache-resident: 0.13 ms instead of 0.26 ms on 1.6 MB); larger inputs are bandwidth-bound
# and read fewer bytes with strided calls (8x256x28x56 float32: 0.54 ms strided, 0.97 ms dense).
_DENSE_MAX_BYTES = 8 << 20



@dataclass(frozen=True)
class IndexLayout:
    """How max_pool reports the position of each maximum.

    The index is the flat position of the input element over axes `flatten_from..end` of x, row-major
    (ONNX MaxPool Indices: flatten_from=0; OpenVINO MaxPool-8 `axis`, normalised to >= 0). With
    `spatial_column_major` (ONNX storage_order=1) only the spatial part is column-major: for x of shape
    (N, C, H, W) and flatten_from=0 the index of (n, c, h, w) is (n*C + c)*H*W + h + w*H.
    A window without any real input element reports `empty_index`.
    """

    dtype: np.dtype = np.int64
    flatten_from: int = 0
    spatial_column_major: bool = False
    empty_index: int = -1


def lowest_value(dtype: np.dtype) -> np.generic:
    """The lowest finite value of a dtype: -max for floats (bfloat16 included), iinfo.min for integers."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return dtype.type(np.iinfo(dtype).min)
    if dtype.kind == "b":
        return dtype.type(False)
    return dtype.type(-_finfo(dtype).max)


# --------------------------------------------------------------------------------------------------
# Public kernels
# --------------------------------------------------------------------------------------------------

def max_pool(x: np.ndarray, windows: Sequence[AxisWindow], *, indices: IndexLayout | None = None,
             empty_value=None):
    """Max over the real taps of every window; returns y, or (y, idx) when `indices` is given.

    A window without a real tap gives `empty_value` (None: the lowest finite value of the dtype).
    NaN propagates: a window containing a NaN gives NaN, and its index is that of the first NaN in
    row-major scan order of the window (what np.argmax reports). On ties the first real tap in row-major
    scan order of the window wins.
    """
    x = _as_input(x, windows)
    _check_max_dtype(x.dtype)
    plans = _plans(windows)
    fill = lowest_value(x.dtype) if empty_value is None else x.dtype.type(empty_value)
    y = _separable(x, plans, lambda y, axis, plan, out: _reduce_axis(y, axis, plan, np.maximum, fill, out))
    if indices is None:
        return y
    return y, _argmax_indices(x, y, plans, indices)


def avg_pool(x: np.ndarray, windows: Sequence[AxisWindow], *, divisor: str | Sequence[str],
             empty_value=0.0) -> np.ndarray:
    """Sum over the real taps divided by a per-axis count product.

    `divisor` (one string, or one per spatial axis): "real" counts the real taps on that axis,
    "padded" the taps inside the padded extent [-pad_begin, length + pad_end), "kernel" the full kernel.
    A window whose divisor is 0 gives `empty_value`.
    """
    x = _as_input(x, windows)
    acc = _accumulator_dtype(x.dtype, "avg_pool")
    plans = _plans(windows)
    kinds = _divisor_kinds(divisor, len(plans))
    wide = _widened(x, acc)
    total = _separable(wide, plans, _sum_pass, fresh_result=acc == x.dtype)
    divisor_nd, zero_axes = _divisor(tuple(plan.window for plan in plans), kinds, acc)
    np.divide(total, divisor_nd, out=total)
    _fill_positions(total, zero_axes, empty_value)
    return total.astype(x.dtype, copy=False)


def lp_pool(x: np.ndarray, windows: Sequence[AxisWindow], *, p: float) -> np.ndarray:
    """(sum over real taps of |x|^p) ** (1/p). A window without a real tap gives 0."""
    x = _as_input(x, windows)
    acc = _accumulator_dtype(x.dtype, "lp_pool")
    p = _check_p(p)
    powered = _abs_power(x, p, acc, _work_array(_SLOT_WIDENED, x.shape, acc))
    total = _separable(powered, _plans(windows), _sum_pass, fresh_result=acc == x.dtype)
    return _root(total, p).astype(x.dtype, copy=False)


def global_pool(x: np.ndarray, kind: str, *, spatial_rank: int, p: float = 2.0) -> np.ndarray:
    """Reduce all `spatial_rank` trailing axes, keeping them as size-1 axes (ONNX Global*Pool).

    kind "avg": mean; "max": max (NaN propagates); "lp": (sum |x|^p) ** (1/p).
    """
    x = np.asarray(x)
    if not isinstance(spatial_rank, (int, np.integer)) or not 1 <= spatial_rank <= x.ndim:
        raise UsageError(f"spatial_rank {spatial_rank!r} must be between 1 and the input rank {x.ndim}")
    leading = x.shape[: x.ndim - spatial_rank]
    size = math.prod(x.shape[x.ndim - spatial_rank:])
    if size == 0:
        raise UsageError(f"global pooling needs a non-empty spatial extent, got shape {x.shape}")
    rows = np.ascontiguousarray(x).reshape(math.prod(leading), size)
    if kind == "max":
        _check_max_dtype(x.dtype)
        result = rows.max(axis=1)
    elif kind == "avg":
        acc = _accumulator_dtype(x.dtype, "global_pool(avg)")
        # A matvec with a ones vector is a BLAS sum: measured 13x faster than rows.sum(axis=1).
        result = rows.astype(acc, copy=False) @ np.ones(size, dtype=acc)
        result /= acc.type(size)
    elif kind == "lp":
        acc = _accumulator_dtype(x.dtype, "global_pool(lp)")
        p = _check_p(p)
        if p == 2.0:
            wide = rows.astype(acc, copy=False)
            result = np.sqrt(np.einsum("ij,ij->i", wide, wide))
        else:
            powered = _abs_power(rows, p, acc, np.empty(rows.shape, dtype=acc))
            result = _root(powered @ np.ones(size, dtype=acc), p)
    else:
        raise UsageError(f"global pool kind {kind!r} is not one of avg, max, lp")
    return result.astype(x.dtype, copy=False).reshape(leading + (1,) * spatial_rank)


# --------------------------------------------------------------------------------------------------
# Per-axis plans
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class _Tap:
    """One tap j of one axis: outputs [out_lo, out_hi) read real input starting at in_start."""

    j: int
    out_lo: int
    out_hi: int
    in_start: int


@dataclass(frozen=True)
class _AxisPlan:
    window: AxisWindow
    taps: tuple[_Tap, ...]           # only taps that read real input for at least one output
    interior: tuple[int, int]        # outputs where every one of the kernel's taps is real (may be empty)
    empty: np.ndarray                # output positions with no real tap at all
    edges: tuple[tuple[int, tuple[int, ...]], ...]   # (output outside the interior, its real input rows)

    def input_slice(self, tap: _Tap, lo: int, hi: int) -> slice:
        """Input positions read by `tap` for outputs [lo, hi) (a subrange of [tap.out_lo, tap.out_hi))."""
        stride = self.window.stride
        start = tap.in_start + (lo - tap.out_lo) * stride
        return slice(start, start + (hi - lo - 1) * stride + 1, stride)

    @property
    def is_identity(self) -> bool:
        w = self.window
        return w.kernel == 1 and w.stride == 1 and w.pad_begin == 0 and w.output == w.length


@functools.lru_cache(maxsize=256)
def _axis_plan(window: AxisWindow) -> _AxisPlan:
    def tap_range(j: int) -> tuple[int, int, int]:
        offset = j * window.dilation - window.pad_begin       # input position of output 0's tap j
        lo = max(0, -(offset // window.stride))     # ceil(-offset / s): first output reading i >= 0
        hi = min(window.output, (window.length - 1 - offset) // window.stride + 1)
        return lo, hi, offset

    taps = []
    for j in _taps_reading_input(window):
        lo, hi, offset = tap_range(j)
        if lo < hi:
            taps.append(_Tap(j, lo, hi, lo * window.stride + offset))
    # The interior is the intersection of every tap's range (all k taps, including those never real). Offsets
    # grow with j, so both ends of a tap's range fall with j: tap 0 has the largest lo, tap k-1 the smallest hi.
    interior_lo, interior_hi = tap_range(0)[0], tap_range(window.kernel - 1)[1]
    interior = (interior_lo, interior_hi) if interior_lo < interior_hi else (0, 0)
    empty = np.flatnonzero(window.real_taps() == 0)
    starts = window.starts()
    first = np.maximum(0, -(starts // window.dilation))   # per output: first tap reading i >= 0
    last = np.minimum(window.kernel - 1, (window.length - 1 - starts) // window.dilation)
    positions = np.arange(window.output)
    edge_positions = positions[(positions < interior[0]) | (positions >= interior[1])]
    edges = tuple(
        (int(o), tuple(int(i) for i in starts[o] + np.arange(first[o], last[o] + 1) * window.dilation))
        for o in edge_positions)
    return _AxisPlan(window, tuple(taps), interior, empty, edges)


_TAP_SCAN_LIMIT = 4096


def _taps_reading_input(window: AxisWindow):
    """The tap numbers j that read real input for at least one output, as ranges.

    For output o those are j in [ceil((pb - o*s) / d), floor((L - 1 + pb - o*s) / d)], clipped to [0, k);
    both ends fall as o grows, so the union is a few merged intervals. A hostile kernel of 10**9 taps that
    lie nearly all in a huge padding is then planned at the cost of its real taps (scanning every tap took
    33 s for a kernel of 10**7 on an input of 5). Short kernels are scanned whole, as before.
    """
    k = window.kernel
    if k <= _TAP_SCAN_LIMIT:
        return range(k)
    o = np.arange(window.output, dtype=np.int64)[::-1]      # ascending interval starts
    lows = np.maximum(0, -((o * window.stride - window.pad_begin) // window.dilation))
    highs = np.minimum(k - 1, (window.length - 1 + window.pad_begin - o * window.stride) // window.dilation)
    keep = lows <= highs
    lows, highs = lows[keep], highs[keep]
    if lows.size == 0:
        return range(0)
    # Intervals sorted by start with non-decreasing ends: a new merged interval starts where a start
    # passes the previous end by more than one.
    breaks = np.flatnonzero(lows[1:] > highs[:-1] + 1) + 1
    begins = np.concatenate(([0], breaks))
    ends = np.concatenate((breaks - 1, [lows.size - 1]))
    return itertools.chain.from_iterable(range(int(lows[b]), int(highs[e]) + 1) for b, e in zip(begins, ends))


def _plans(windows: Sequence[AxisWindow]) -> tuple[_AxisPlan, ...]:
    return tuple(_axis_plan(w) for w in windows)


# --------------------------------------------------------------------------------------------------
# 1-D passes
# --------------------------------------------------------------------------------------------------

def _outer_first(ndim: int, plans: Sequence[_AxisPlan]):
    """(array axis, plan) for every spatial axis that changes something, outermost first."""
    first = ndim - len(plans)
    return [(first + k, plan) for k, plan in enumerate(plans) if not plan.is_identity]


def _reduce_axis(x: np.ndarray, axis: int, plan: _AxisPlan, ufunc: np.ufunc, empty_fill,
                 out: np.ndarray | None = None) -> np.ndarray:
    """One 1-D pass of `ufunc` (np.maximum or np.add) over the real taps along `axis` of contiguous x.

    Outputs without a real tap get `empty_fill`. For max that is the caller's empty value: a later pass
    over another axis only combines outputs of the same position on this axis, so it stays exact.

    View x as (before, length, after). The interior outputs (every tap real) get one ufunc call per tap;
    when output * stride == length the rows of consecutive `before` blocks line up (output q = b * n_out + o
    reads input row q * stride + tap offset), so the interior of *all* blocks is one long call per tap over
    the (before * length, after) view, and the outputs that straddle two blocks are edge outputs, which are
    recomputed exactly afterwards. Long calls are what makes numpy fast (shared/PERFORMANCE.md).
    """
    shape = x.shape
    before, length, after = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])
    window = plan.window
    n_out, stride = window.output, window.stride
    if out is None:
        out = np.empty(shape[:axis] + (n_out,) + shape[axis + 1:], dtype=x.dtype)
    x3 = x.reshape(before, length, after)
    out3 = out.reshape(before, n_out, after)

    lo, hi = plan.interior
    has_interior = lo < hi
    if has_interior and _use_dense(window, after, x.nbytes):
        # Reduce at every row position of the flattened (before * length, after) view with long contiguous
        # calls (rows running into the next block are computed but never kept), then copy out the interior
        # outputs: every stride-th row of each block.
        x2 = x.reshape(before * length, after)
        dense = _dense_reduce(ufunc, x2, window.kernel, window.dilation)
        first = lo * stride - window.pad_begin          # input row of the first interior window
        if n_out * stride == length and before > 1:
            q_lo, q_hi = lo, (before - 1) * n_out + hi    # interior of the first through the last block
            np.copyto(out.reshape(before * n_out, after)[q_lo:q_hi],
                      dense[first: first + (q_hi - q_lo - 1) * stride + 1: stride])
        else:
            # Block b's interior output o reads dense row b * length + first + (o - lo) * stride; the last,
            # (before - 1) * length + (hi - 1) * stride - pad_begin, is in range because its window is real.
            item = dense.itemsize
            picks = np.lib.stride_tricks.as_strided(
                dense[first:], shape=(before, hi - lo, after),
                strides=(length * after * item, stride * after * item, item), writeable=False)
            np.copyto(out3[:, lo:hi], picks)
    elif has_interior and n_out * stride == length and before > 1:
        x2 = x.reshape(before * length, after)
        out2 = out.reshape(before * n_out, after)
        offsets = [j * window.dilation - window.pad_begin for j in range(window.kernel)]
        rows = before * length
        q_lo = max(max(0, -(c // stride)) for c in offsets)
        q_hi = min(min(before * n_out, (rows - 1 - c) // stride + 1) for c in offsets)
        views = [x2[q_lo * stride + c: (q_hi - 1) * stride + c + 1: stride] for c in offsets]
        _fold(ufunc, views, out2[q_lo:q_hi])
        # Everything outside [lo, hi) in each block, including rows before q_lo and after q_hi, is redone.
    elif has_interior:
        views = [x3[:, plan.input_slice(tap, lo, hi)] for tap in plan.taps]
        _fold(ufunc, views, out3[:, lo:hi])
    # Edge outputs, one position at a time: their number is bounded by (pad + effective kernel) / stride,
    # not by the data, and each call still covers every `before` and `after` element.
    for position, real_rows in plan.edges:
        target = out3[:, position]
        if real_rows:
            _fold(ufunc, [x3[:, row] for row in real_rows], target)
        else:
            target[...] = empty_fill
    return out


def _use_dense(window: AxisWindow, after: int, nbytes: int) -> bool:
    """Whether a pass should reduce densely first (see _reduce_axis); measured on this machine:

    - innermost axis with stride > 1: strided reads cost ~5x contiguous ones, so for cache-resident data
      a dense reduction plus one strided copy wins (W1's last pass: 0.13 ms instead of 0.26 ms); beyond
      that, bandwidth rules and the strided calls read fewer bytes (W3: 0.54 ms strided, 0.97 ms dense);
    - stride 1 with a long kernel: doubling needs about log2(kernel) + popcount(kernel) calls, not kernel - 1.
    """
    if window.kernel < 2:
        return False
    if window.stride == 1:
        return window.kernel >= 4
    return after == 1 and nbytes <= _DENSE_MAX_BYTES


def _dense_reduce(ufunc: np.ufunc, x2: np.ndarray, kernel: int, dilation: int) -> np.ndarray:
    """D[r] = ufunc over x2[r + j * dilation] for j < kernel, for every row r whose taps are all in x2.

    Short kernels take one call per tap. Longer ones double: block_w[r] reduces w consecutive taps, and
    block_2w[r] = ufunc(block_w[r], block_w[r + w * dilation]). Max then covers the kernel with two
    overlapping blocks (max is idempotent); a sum adds the disjoint blocks of the kernel's binary digits.
    """
    rows = x2.shape[0]
    size = rows - (kernel - 1) * dilation
    dense = _work_array(_SLOT_DENSE, (size,) + x2.shape[1:], x2.dtype)
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
        target = _work_array(_SLOT_DOUBLING[level % 2], (grown,) + x2.shape[1:], x2.dtype)
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


def _sum_pass(x: np.ndarray, axis: int, plan: _AxisPlan, out: np.ndarray | None) -> np.ndarray:
    # Not a banded 0/1 matrix product, although BLAS is fast here: 0 * inf and 0 * NaN are NaN, so one
    # non-finite input would poison every output of its row; and threaded BLAS is erratic on a busy machine.
    return _reduce_axis(x, axis, plan, np.add, 0, out)


def _separable(x: np.ndarray, plans: Sequence[_AxisPlan], one_pass, *, fresh_result: bool = True) -> np.ndarray:
    """Run `one_pass(y, axis, plan, out)` over every non-trivial spatial axis, outermost first.

    Intermediate results live in this thread's work arrays; the last pass writes a fresh array (or a
    work array too when `fresh_result` is False, because the caller converts it into a fresh one).
    The result is never `x` itself.
    """
    passes = _outer_first(x.ndim, plans)
    if not passes:
        return x.copy() if fresh_result else x
    rank = len(plans)
    leading = x.shape[: x.ndim - rank]
    rows = math.prod(leading)
    out_spatial = tuple(plan.window.output for plan in plans)
    chunk = max(1, _CHUNK_BYTES // max(1, x.nbytes // max(rows, 1)))
    if fresh_result:
        result = np.empty(leading + out_spatial, dtype=x.dtype)
    else:
        result = _work_array(_SLOT_RESULT, leading + out_spatial, x.dtype)
    if rows == 0:
        return result
    if rows <= chunk:
        _passes(x, passes, one_pass, result)
        return result
    # Blocks of leading rows small enough that every intermediate stays in the core's cache: the input is
    # read from memory once and the result written once, instead of every pass streaming through memory.
    x_rows = x.reshape((rows,) + x.shape[x.ndim - rank:])
    result_rows = result.reshape((rows,) + out_spatial)
    block_passes = [(1 + axis - (x.ndim - rank), plan) for axis, plan in passes]
    for start in range(0, rows, chunk):
        _passes(x_rows[start: start + chunk], block_passes, one_pass, result_rows[start: start + chunk])
    return result


def _passes(x: np.ndarray, passes, one_pass, out: np.ndarray) -> None:
    """Run `passes` over x (one block of leading rows); the last pass writes into `out`."""
    y = x
    for number, (axis, plan) in enumerate(passes):
        last = number == len(passes) - 1
        shape = y.shape[:axis] + (plan.window.output,) + y.shape[axis + 1:]
        y = one_pass(y, axis, plan, out if last else _work_array(_SLOT_PASS[number % 2], shape, y.dtype))


# Work arrays: large fresh arrays cost a page fault per 4 KiB page on every call here (W3, 8x256x56x56:
# 10.3 ms with fresh intermediates, 4.8 ms without the faults), so intermediates that never leave a kernel
# are kept per thread and reused. They grow to the largest size used; release_work_arrays() frees them.
_SLOT_PASS = (0, 1)      # alternating outputs of consecutive passes
_SLOT_DENSE = 2          # every-row reductions of _dense_reduce
_SLOT_WIDENED = 3        # the input converted to the accumulation dtype (or |x|^p)
_SLOT_EQUAL, _SLOT_SCORE, _SLOT_BEST = 4, 5, 6   # argmax search
_SLOT_DOUBLING = (7, 8)  # the growing blocks of _dense_reduce
_SLOT_RESULT = 9         # a result the caller converts into a fresh array anyway


class _WorkArrays(threading.local):
    def __init__(self):
        self.buffers: dict[int, np.ndarray] = {}


_WORK = _WorkArrays()


def _work_array(slot: int, shape: tuple[int, ...], dtype) -> np.ndarray:
    """An uninitialised array of `shape` and `dtype` backed by this thread's buffer for `slot`."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    buffer = _WORK.buffers.get(slot)
    if buffer is None or buffer.nbytes < nbytes:
        buffer = np.empty(max(nbytes, 64), dtype=np.uint8)
        _WORK.buffers[slot] = buffer
    return buffer[:nbytes].view(dtype).reshape(shape)


def release_work_arrays() -> None:
    """Free the calling thread's reusable intermediate arrays (they are re-created on demand)."""
    _WORK.buffers.clear()


def _widened(x: np.ndarray, acc: np.dtype) -> np.ndarray:
    if x.dtype == acc:
        return x
    wide = _work_array(_SLOT_WIDENED, x.shape, acc)
    np.copyto(wide, x, casting="unsafe")
    return wide


# --------------------------------------------------------------------------------------------------
# Argmax indices
# --------------------------------------------------------------------------------------------------

def _argmax_indices(x: np.ndarray, y: np.ndarray, plans: Sequence[_AxisPlan], layout: IndexLayout) -> np.ndarray:
    """Flat index of the first real tap (row-major scan of the window) equal to the window's max.

    The N-D taps that read real input somewhere are numbered t = 0 .. T-1 in row-major order. For each,
    and every output where it is real, a match scores T - t; the running maximum of the scores is the
    first matching tap (branchless: masked assignment is 8-20x slower on random masks). Windows that hold
    a NaN match their first NaN instead (y is NaN there, and NaN never compares equal). The winning
    score becomes an index through per-axis vectors and one table lookup.
    """
    rank = len(plans)
    multipliers = _index_multipliers(x.shape, rank, layout)
    if y.size == 0:
        return np.empty(y.shape, dtype=layout.dtype)
    rows = math.prod(x.shape[: x.ndim - rank])
    xs = x.reshape((rows,) + x.shape[x.ndim - rank:])
    ys = y.reshape((rows,) + y.shape[y.ndim - rank:])
    combos = list(itertools.product(*(plan.taps for plan in plans)))
    n_combos = len(combos)
    score_dtype = np.uint8 if n_combos < 2**8 else np.uint16 if n_combos < 2**16 else np.uint32
    best = _work_array(_SLOT_BEST, ys.shape, score_dtype)
    best.fill(0)
    scratch_eq = _work_array(_SLOT_EQUAL, ys.shape, bool)
    scratch_score = _work_array(_SLOT_SCORE, ys.shape, score_dtype)
    has_nan = _is_float(x.dtype) and bool(np.isnan(ys).any())
    y_nan = np.isnan(ys) if has_nan else None
    # offsets[score]: the tap's position inside its window, as a flat index difference; score 0 = no match.
    offsets = np.zeros(n_combos + 1, dtype=np.int64)
    spatial_multipliers = multipliers[x.ndim - rank:]
    for number, combo in enumerate(combos):
        score = n_combos - number
        offsets[score] = sum(t.j * plan.window.dilation * m for t, plan, m in zip(combo, plans, spatial_multipliers))
        out_region = (slice(None),) + tuple(slice(t.out_lo, t.out_hi) for t in combo)
        in_region = (slice(None),) + tuple(plan.input_slice(t, t.out_lo, t.out_hi) for plan, t in zip(plans, combo))
        eq = scratch_eq[out_region]
        np.equal(xs[in_region], ys[out_region], out=eq)
        if has_nan:
            eq |= np.isnan(xs[in_region]) & y_nan[out_region]
        matched = scratch_score[out_region]
        np.multiply(eq, score_dtype(score), out=matched)
        np.maximum(best[out_region], matched, out=best[out_region])

    out_shape = y.shape
    index = _window_origins(x.shape, plans, multipliers)   # int64, broadcast to out_shape below
    index = index + offsets[best.reshape(out_shape)]
    # best == 0 only where no tap is real (every other window matches its own max or first NaN).
    for k, plan in enumerate(plans):
        if plan.empty.size:
            region = [slice(None)] * index.ndim
            region[index.ndim - rank + k] = plan.empty
            index[tuple(region)] = layout.empty_index
    return index.astype(layout.dtype, copy=False)


def _index_multipliers(x_shape: tuple[int, ...], rank: int, layout: IndexLayout) -> list[int]:
    """Per axis of x, what one step along it adds to the flat index (0 before `flatten_from`)."""
    ndim = len(x_shape)
    if not 0 <= layout.flatten_from < ndim:
        raise UsageError(f"index flatten_from {layout.flatten_from} is outside the input rank {ndim}")
    order = list(range(ndim))
    if layout.spatial_column_major:
        # Leading axes row-major (outermost first), then the spatial axes innermost-first.
        order = order[: ndim - rank] + order[ndim - rank:][::-1]
    multipliers = [0] * ndim
    step = 1
    for axis in reversed(order):
        if axis >= layout.flatten_from:
            multipliers[axis] = step
            step *= x_shape[axis]
    return multipliers


def _window_origins(x_shape: tuple[int, ...], plans: Sequence[_AxisPlan], multipliers: list[int]) -> np.ndarray:
    """Flat index of each window's tap 0 (which may lie in the padding): a broadcast sum of axis vectors."""
    ndim, rank = len(x_shape), len(plans)
    vectors = [np.arange(x_shape[axis], dtype=np.int64) for axis in range(ndim - rank)]
    vectors += [plan.window.starts() for plan in plans]
    total = np.zeros((), dtype=np.int64)
    for axis, (vector, multiplier) in enumerate(zip(vectors, multipliers)):
        shape = [1] * ndim
        shape[axis] = vector.size
        total = total + (vector * multiplier).reshape(shape)
    return np.broadcast_to(total, x_shape[: ndim - rank] + tuple(p.window.output for p in plans))


# --------------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------------

def _as_input(x, windows: Sequence[AxisWindow]) -> np.ndarray:
    x = np.ascontiguousarray(x)
    if not x.dtype.isnative:      # e.g. big-endian '>f8' from a file: compute (and answer) in native order
        x = x.astype(x.dtype.newbyteorder("="))
    rank = len(windows)
    if rank < 1 or rank > x.ndim:
        raise UsageError(f"{rank} pooling windows for an input of rank {x.ndim}")
    for k, window in enumerate(windows):
        length = x.shape[x.ndim - rank + k]
        if window.length != length:
            raise UsageError(f"spatial axis {k}: the window was resolved for length {window.length}, "
                             f"the input has {length}")
    return x


def _finfo(dtype: np.dtype):
    return ml_dtypes.finfo(dtype) if dtype == np.dtype(ml_dtypes.bfloat16) else np.finfo(dtype)


def _is_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f" or dtype == np.dtype(ml_dtypes.bfloat16)


def _check_max_dtype(dtype: np.dtype) -> None:
    if not (_is_float(dtype) or dtype.kind in "iu"):
        raise UnsupportedError(f"max pooling of element type {dtype} is not supported "
                               "(floating types and integers are)")


def _accumulator_dtype(dtype: np.dtype, what: str) -> np.dtype:
    if not _is_float(dtype):
        raise UnsupportedError(f"{what} of element type {dtype} is not supported "
                               "(float16, bfloat16, float32 and float64 are)")
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


def _check_p(p) -> float:
    try:
        value = float(p)
    except (TypeError, ValueError):
        raise UsageError(f"Lp pooling p {p!r} is not a number") from None
    if not (value > 0 and math.isfinite(value)):
        raise UsageError(f"Lp pooling p {p!r} must be a positive finite number")
    return value


def _abs_power(x: np.ndarray, p: float, acc: np.dtype, out: np.ndarray) -> np.ndarray:
    """|x| ** p in the accumulation dtype, written to `out` (p = 1 and 2 exactly, without pow)."""
    if p == 2.0:
        if x.dtype == acc:
            return np.multiply(x, x, out=out)
        np.copyto(out, x, casting="unsafe")
        return np.multiply(out, out, out=out)
    if x.dtype == acc:
        np.abs(x, out=out)
    else:
        np.copyto(out, x, casting="unsafe")
        np.abs(out, out=out)
    if p != 1.0:
        np.power(out, acc.type(p), out=out)
    return out


def _root(total: np.ndarray, p: float) -> np.ndarray:
    if p == 1.0:
        return total
    if p == 2.0:
        return np.sqrt(total, out=total)
    return np.power(total, total.dtype.type(1.0 / p), out=total)


def _divisor_kinds(divisor: str | Sequence[str], rank: int) -> tuple[str, ...]:
    kinds = (divisor,) * rank if isinstance(divisor, str) else tuple(divisor)
    if len(kinds) != rank:
        raise UsageError(f"divisor has {len(kinds)} entries for {rank} spatial axes")
    for kind in kinds:
        if kind not in DIVISORS:
            raise UsageError(f"divisor {kind!r} is not one of {', '.join(DIVISORS)}")
    return kinds


def _axis_counts(window: AxisWindow, kind: str) -> np.ndarray:
    if kind == "real":
        return window.real_taps()
    if kind == "padded":
        return window.padded_taps()
    return np.full(window.output, window.kernel, dtype=np.int64)


@functools.lru_cache(maxsize=256)
def _divisor(windows: tuple[AxisWindow, ...], kinds: tuple[str, ...], dtype: np.dtype):
    """The N-D divisor of an average (read-only; cached per geometry) and its zero-count windows."""
    divisor, zero_axes = _broadcast_product([_axis_counts(w, kind) for w, kind in zip(windows, kinds)], dtype)
    if isinstance(divisor, np.ndarray):
        divisor.flags.writeable = False
    return divisor, zero_axes


def _broadcast_product(counts: Sequence[np.ndarray], dtype: np.dtype):
    """The product of per-axis count vectors, broadcast over the trailing axes (a scalar when uniform).

    Zero counts are replaced by 1 (their windows are overwritten with the empty value afterwards);
    returns (divisor, [(axis from the end, positions), ...]) for those windows.
    """
    rank = len(counts)
    zero_axes = []
    scalar = 1
    product = None
    for k, count in enumerate(counts):
        zeros = np.flatnonzero(count == 0)
        if zeros.size:
            zero_axes.append((rank - k, zeros))
            count = np.where(count == 0, 1, count)
        if np.all(count == count[0]):
            scalar *= int(count[0])
            continue
        shaped = count.astype(dtype).reshape((-1,) + (1,) * (rank - 1 - k))
        product = shaped if product is None else product * shaped
    if product is None:
        return dtype.type(scalar), zero_axes
    return product * dtype.type(scalar), zero_axes


def _fill_positions(y: np.ndarray, zero_axes, value) -> None:
    for from_end, positions in zero_axes:
        region = [slice(None)] * y.ndim
        region[y.ndim - from_end] = positions
        y[tuple(region)] = value
