"""Depthwise convolution (one input and one output channel per group) for runtime.kernels.convolution: the
two layouts it picks between by output size (convolution._CHANNELS_LAST_MAX_IMAGE), and the zero-padded input
split by stride phase that the channels-first layout reads. Each returns the sums in the accumulation dtype as a
view of a work array; convolution._finished copies them out, adding the bias and rounding once.
"""

from __future__ import annotations

import itertools
import math
from typing import Sequence

import numpy as np

from poolir.ir.geometry import AxisWindow
from poolir.runtime.kernels.axis_pass import copy_strided
from poolir.runtime.kernels.work_arrays import (SLOT_CONV_COLUMNS, SLOT_CONV_PHASES, SLOT_CONV_PRODUCT, SLOT_CONV_WIDE,
                                                work_array)

__all__ = ["depthwise_channels_last", "depthwise_columns", "zero_outside"]


def depthwise_columns(x: np.ndarray, w: np.ndarray, windows: Sequence[AxisWindow],
                      acc: np.dtype) -> tuple[np.ndarray, bool]:
    """One input and one output channel per group: y[:, c] = weights[c] @ the taps' views of x[:, c].

    Computed on the wide grid of a phase buffer (see _PhaseBuffer), where every tap is one contiguous range
    per channel: the taps are copied into columns [N, C, taps, wide] (a block of channels at a time, at most
    _DEPTHWISE_COLUMN_BYTES), and one batched matrix product per block multiplies each channel's weight row
    into them. Against a multiply and an add per tap over the whole grid (half the memory traffic; measured
    1 thread, us, MobileNetV3's layers): 16x112x112 k3 350 -> 284, 72x56x56 k3 401 -> 348, 72x56x56 k5 s2
    615 -> 379, 120x28x28 k5 932 -> 462, ConvNeXt's 96x56x56 k7 3280 -> 2286. The wide grid's extra columns
    are dropped by the final copy into the fresh result (_finished).
    """
    n, c = x.shape[:2]
    phases = _PhaseBuffer(x, windows, acc)
    taps = math.prod(window.kernel for window in windows)
    weights = w.astype(acc, copy=False).reshape(c, 1, taps)
    wide = work_array(SLOT_CONV_WIDE, (n, c, 1, phases.wide_size), acc)
    views = [view for _, view in phases.tap_views()]
    block = max(1, _DEPTHWISE_COLUMN_BYTES // (n * taps * phases.wide_size * acc.itemsize))
    for lo in range(0, c, block):
        hi = min(c, lo + block)
        columns = work_array(SLOT_CONV_COLUMNS, (n, hi - lo, taps, phases.wide_size), acc)
        for tap, view in enumerate(views):
            np.copyto(columns[:, :, tap], view[:, lo:hi])
        np.matmul(weights[lo:hi], columns, out=wide[:, lo:hi])
    return phases.cropped(wide.reshape(n, c, phases.wide_size)), False


# The columns of one block of channels (measured, 16x112x112 k3 to 120x28x28 k5: blocks of 256 KiB 1.2-3x slower
# than 4 MiB, 1 MiB up to 1.25x slower, one block for all channels no faster, and 96x56x56 k7 needs 62 MiB).
_DEPTHWISE_COLUMN_BYTES = 4 << 20


_TILED_WEIGHTS_MAX_BYTES = 4 << 20


def depthwise_channels_last(x: np.ndarray, w: np.ndarray, windows: Sequence[AxisWindow],
                             acc: np.dtype) -> tuple[np.ndarray, bool]:
    """Depthwise on small images with the channels innermost: each tap multiplies an [N, *out, C] view by the
    tap's weight row. Channels-first multiplies each image row by its channel's own scalar, which numpy runs
    1.5-3x slower than a contiguous multiply, in inner loops one image row long (7 elements at 7x7).

    The taps of one stride phase of the last axis are one strided view (_phase_groups), and one einsum multiplies
    and adds all of them in one pass: against a multiply and an add per tap, which wrote every product and read it
    back, the taps of 672x14x14 k3 take 131 instead of 183 us, of 960x7x7 k5 121 instead of 154 (same bits: numpy
    2.4's einsum adds the products in tap order). With stride s > 1 on the last axis the s groups' sums are added
    phase by phase.

    The last image axis is split by stride phase (phase r holds padded positions r, r + s, ...), so that a
    tap reads one contiguous run of out[-1] * C values; the weight row is repeated along it (120x28x28 k5:
    1.19 -> 0.72 ms), and numpy's inner loops get that long. Other axes are plain strided views. Returns
    the sums as an [N, C, *out] view of a work array (transposed by _finished's copy)."""
    n, c = x.shape[:2]
    last = windows[-1]
    s = last.stride
    # Padded position o * s + j * d is read by output o's tap j; input i sits at i + pad_begin.
    extents = tuple((window.output - 1) * window.stride + (window.kernel - 1) * window.dilation + 1
                    for window in windows)
    per_phase = -(-extents[-1] // s)
    padded = work_array(SLOT_CONV_PHASES, (n,) + extents[:-1] + (s, per_phase, c), acc)
    padded.fill(0)
    kept = tuple(max(0, min(window.length, extent - window.pad_begin))
                 for window, extent in zip(windows[:-1], extents[:-1]))
    if all(kept):
        inside = tuple(slice(window.pad_begin, window.pad_begin + size) for window, size in zip(windows, kept))
        rows = x[(slice(None), slice(None)) + tuple(slice(0, size) for size in kept)]
        for r in sorted({j * last.dilation % s for j in range(last.kernel)}):
            # phase index q holds input q * s + r - pad_begin: keep 0 <= it < length and q < per_phase
            lo = max(0, -((r - last.pad_begin) // s))
            hi = min(per_phase, (last.length - 1 + last.pad_begin - r) // s + 1)
            if lo < hi:
                start = lo * s + r - last.pad_begin
                source = rows[..., start: start + (hi - lo - 1) * s + 1: s]
                np.copyto(padded[(slice(None),) + inside + (r, slice(lo, hi))], np.moveaxis(source, 1, -1),
                          casting="unsafe")
    weights = np.ascontiguousarray(w.astype(acc, copy=False).reshape(c, -1).T)      # [taps, C]
    out = tuple(window.output for window in windows)
    # Repeating the weights along the last axis costs taps * out[-1] * C values: bounded, or kept unmerged.
    merged = weights.nbytes * last.output <= _TILED_WEIGHTS_MAX_BYTES
    if merged:
        weights = np.tile(weights, (1, last.output))
        padded = padded.reshape(padded.shape[:-2] + (-1,))     # [N, *extents[:-1], s, per_phase * C]
        out = out[:-1] + (last.output * c,)
    else:
        out = out + (c,)
    total = work_array(SLOT_CONV_WIDE, (n,) + out, acc)
    for number, (taps, group_weights, subscripts) in enumerate(_phase_groups(padded, weights, windows, merged, c)):
        target = total if number == 0 else work_array(SLOT_CONV_PRODUCT, total.shape, acc)
        np.einsum(subscripts, taps, group_weights, out=target)
        if number:
            np.add(total, target, out=total)
    total = total.reshape((n,) + tuple(window.output for window in windows) + (c,))
    return np.moveaxis(total, -1, 1), False


def _phase_groups(padded: np.ndarray, weights: np.ndarray, windows: Sequence[AxisWindow], merged: bool, c: int):
    """The taps of depthwise_channels_last grouped by the stride phase of the last image axis: per group, one
    strided view [N, *kernel[:-1], group taps, *out] of `padded` holding every tap's [N, *out] input (the same
    elements the taps' own slices read), the group's weights [*kernel[:-1], group taps, out[-1] * C or C], and the
    einsum subscripts that sum their products. Along the last axis tap j reads phase (j * d) % s at shift
    (j * d) // s; the taps of one phase step their shift by d / gcd(d, s), a constant stride."""
    rank = len(windows)
    last = windows[-1]
    s, d = last.stride, last.dilation
    itemsize = padded.itemsize
    by_tap = weights.reshape(tuple(window.kernel for window in windows) + weights.shape[1:])
    letters = "abcdefghijklm"[:rank - 1]
    outs = "ABCDEFGHIJKLM"[:rank - 1]
    tail = "q" if merged else "pq"
    subscripts = f"n{letters}z{outs}{tail},{letters}z{tail[-1]}->n{outs}{tail}"
    step = d // math.gcd(d, s)
    for phase in sorted({j * d % s for j in range(last.kernel)}):
        js = [j for j in range(last.kernel) if j * d % s == phase]
        base = padded[(slice(None),) * rank + (phase,)]     # [N, *extents[:-1], per_phase * C or per_phase, C]
        row = base.strides[1:rank]
        shift = js[0] * d // s                              # the group's first tap reads from this position on
        if merged:
            start = base[..., shift * c:]
            last_shape, last_strides, tap_stride = (last.output * c,), (itemsize,), step * c * itemsize
        else:
            start = base[..., shift:, :]
            last_shape, last_strides, tap_stride = (last.output, c), base.strides[-2:], step * base.strides[-2]
        shape = ((base.shape[0],) + tuple(window.kernel for window in windows[:-1]) + (len(js),)
                 + tuple(window.output for window in windows[:-1]) + last_shape)
        strides = ((base.strides[0],) + tuple(window.dilation * stride for window, stride in zip(windows, row))
                   + (tap_stride,) + tuple(window.stride * stride for window, stride in zip(windows, row))
                   + last_strides)
        # as_strided checks nothing: the last element the view can reach must lie inside `padded`.
        reach = start.ctypes.data - padded.ctypes.data + sum((n - 1) * stride for n, stride in zip(shape, strides))
        if min(shape) > 0 and reach + itemsize > padded.nbytes:
            raise AssertionError(f"depthwise tap view {shape} {strides} runs past its buffer ({padded.nbytes} bytes)")
        taps = np.lib.stride_tricks.as_strided(start, shape, strides, writeable=False)
        yield taps, by_tap[(Ellipsis,) + (js, slice(None))], subscripts


class _PhaseBuffer:
    """The zero-padded input split into stride phases, so that every tap is one contiguous 1-D range.

    Along an axis with stride s, dilation d and kernel k, output o's tap j reads padded position
    o*s + j*d = (o + a)*s + r with a = (j*d) // s and r = (j*d) % s: element o + a of phase r, where
    phase r holds padded positions r, r + s, r + 2s, ... So each tap reads one phase combination
    (r_0, r_1, ...) shifted by (a_0, a_1, ...). With the phase flattened row-major, outputs on the
    "wide grid" (O_0, Q_1, ..., Q_last) (Q = phase extent: O + max a) read flat position
    q + sum a_i * row_i: a contiguous range per tap for all outputs. Wide positions past O_i on inner
    axes are garbage (they wrap into the next row) and are cropped; axis 0 gets one spare zero row so
    that the last tap's range stays inside the buffer. Layout [N, C, phase combination, flat].
    """

    def __init__(self, x: np.ndarray, windows: Sequence[AxisWindow], acc: np.dtype):
        n, c = x.shape[:2]
        self.windows = tuple(windows)
        self.out = tuple(window.output for window in windows)
        self.extents = tuple(w.output + (w.kernel - 1) * w.dilation // w.stride for w in windows)
        self.strides = tuple(window.stride for window in windows)
        rows = (self.extents[0] + 1,) + self.extents[1:]
        self.wide_shape = (self.out[0],) + self.extents[1:]
        self.wide_size = math.prod(self.wide_shape)
        self.row_sizes = tuple(math.prod(self.extents[axis + 1:]) for axis in range(len(windows)))
        self.buffer = work_array(SLOT_CONV_PHASES, (n, c, math.prod(self.strides)) + rows, acc)
        used = itertools.product(*({(j * w.dilation) % w.stride for j in range(w.kernel)} for w in windows))
        for phase in used:
            target = self.buffer[:, :, self._phase_number(phase)]
            ranges, sources = [], []
            for window, r, extent in zip(windows, phase, rows):
                # phase position q holds input i = q*s + r - pad_begin; keep 0 <= i < length, q < extent
                lo = max(0, -((r - window.pad_begin) // window.stride))
                hi = min(extent, (window.length - 1 + window.pad_begin - r) // window.stride + 1)
                hi = max(hi, lo)
                start = lo * window.stride + r - window.pad_begin
                ranges.append((lo, hi))
                sources.append(slice(start, start + (hi - lo - 1) * window.stride + 1, window.stride)
                               if hi > lo else slice(0, 0))
            if all(hi > lo for lo, hi in ranges):
                copy_strided(target[(Ellipsis,) + tuple(slice(lo, hi) for lo, hi in ranges)],
                              x, (Ellipsis,) + tuple(sources))
            zero_outside(target, ranges)
        self.flat = self.buffer.reshape(n, c, math.prod(self.strides), -1)

    def _phase_number(self, phase: Sequence[int]) -> int:
        number = 0
        for r, stride in zip(phase, self.strides):
            number = number * stride + r
        return number

    def tap_views(self):
        """(tap number in weight order, [N, C, wide_size] view of the input that tap multiplies)."""
        for tap, taps in enumerate(itertools.product(*(range(w.kernel) for w in self.windows))):
            shifts = [j * w.dilation for j, w in zip(taps, self.windows)]
            phase = [shift % w.stride for shift, w in zip(shifts, self.windows)]
            offset = sum(shift // w.stride * row for shift, w, row in zip(shifts, self.windows, self.row_sizes))
            yield tap, self.flat[:, :, self._phase_number(phase), offset: offset + self.wide_size]

    def cropped(self, wide: np.ndarray) -> np.ndarray:
        """The [N, C, *out] view of the real outputs in a [N, C, wide_size] array."""
        n, c = wide.shape[:2]
        grid = wide.reshape((n, c) + self.wide_shape)
        return grid[(Ellipsis,) + tuple(slice(0, o) for o in self.out)]


def zero_outside(target: np.ndarray, ranges: Sequence[tuple[int, int]]) -> None:
    """Zero target[..., *out] outside the box given by one (lo, hi) per trailing axis (the padding strips)."""
    rank = len(ranges)
    for axis, (lo, hi) in enumerate(ranges):
        size = target.shape[target.ndim - rank + axis]
        for strip in ((0, lo), (hi, size)):
            if strip[0] < strip[1]:
                index = [slice(None)] * target.ndim
                index[target.ndim - rank + axis] = slice(*strip)
                target[tuple(index)] = 0
