"""Depthwise convolution (one input and one output channel per group) for runtime.kernels.convolution: the
two layouts it picks between by output size and taps (convolution._CHANNELS_LAST_*). Each returns the sums in the
accumulation dtype as a view of a work array; convolution._finished copies them out, adding the bias and rounding
once.
"""

from __future__ import annotations

import functools
import math
from typing import Sequence

import numpy as np

from poolir.ir.geometry import AxisWindow
from poolir.runtime.kernels.phase_buffer import phase_plan, phase_span, used_phases
from poolir.runtime.kernels.work_arrays import (SLOT_CONV_COLUMNS, SLOT_CONV_PHASES, SLOT_CONV_PRODUCT, SLOT_CONV_WIDE,
                                                work_array)

__all__ = ["depthwise_channels_last", "depthwise_columns"]


def depthwise_columns(x: np.ndarray, w: np.ndarray, windows: Sequence[AxisWindow],
                      acc: np.dtype) -> tuple[np.ndarray, bool]:
    """One input and one output channel per group: y[:, c] = weights[c] @ the taps' views of x[:, c].

    Computed on the wide grid of a phase buffer (runtime.kernels.phase_buffer), where every tap is one contiguous
    range per channel: the taps are copied into columns [N, C, taps, wide] (a block of channels at a time, at most
    _DEPTHWISE_COLUMN_BYTES), and one batched matrix product per block multiplies each channel's weight row
    into them. Against a multiply and an add per tap over the whole grid (half the memory traffic; measured
    1 thread, us, MobileNetV3's layers): 16x112x112 k3 350 -> 284, 72x56x56 k3 401 -> 348, 72x56x56 k5 s2
    615 -> 379, 120x28x28 k5 932 -> 462, ConvNeXt's 96x56x56 k7 3280 -> 2286. The wide grid's extra columns
    are dropped by the final copy into the fresh result (_finished).
    """
    n, c = x.shape[:2]
    phases = phase_plan(x.shape, np.dtype(acc), tuple(windows))
    views = phases.tap_views(phases.fill(x))
    taps = len(views)
    weights = w.astype(acc, copy=False).reshape(c, 1, taps)
    wide = work_array(SLOT_CONV_WIDE, (n, c, 1, phases.wide_size), acc)
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


def depthwise_channels_last(x: np.ndarray, w: np.ndarray, windows: Sequence[AxisWindow], acc: np.dtype,
                            bias: np.ndarray | None = None) -> tuple[np.ndarray, bool]:
    """Depthwise on small images with the channels innermost: each tap multiplies an [N, *out, C] view by the
    tap's weight row. Channels-first multiplies each image row by its channel's own scalar, which numpy runs
    1.5-3x slower than a contiguous multiply, in inner loops one image row long (7 elements at 7x7).

    The taps of one stride phase of the last axis are one strided view (_ChannelsLast), and one einsum multiplies
    and adds all of them in one pass: against a multiply and an add per tap, which wrote every product and read it
    back, the taps of 672x14x14 k3 take 131 instead of 183 us, of 960x7x7 k5 121 instead of 154 (same bits: numpy
    2.4's einsum adds the products in tap order). With stride s > 1 on the last axis the s groups' sums are added
    phase by phase.

    The last image axis is split by stride phase (phase r holds padded positions r, r + s, ...), so that a
    tap reads one contiguous run of out[-1] * C values; the weight row is repeated along it (120x28x28 k5:
    1.19 -> 0.72 ms), and numpy's inner loops get that long. Other axes are plain strided views. Returns
    the sums, plus `bias` if given, as an [N, C, *out] view of a work array (transposed by _finished's copy). The
    bias is added channels-last, along contiguous rows: adding it during the transposing copy made that copy half as
    slow again (672x14x14: 52 us against 34 us for the copy alone)."""
    plan = _channels_last_plan(x.shape, np.dtype(acc), tuple(windows), _TILED_WEIGHTS_MAX_BYTES)
    padded = work_array(SLOT_CONV_PHASES, plan.padded_shape, acc)
    padded.fill(0)
    for target, source in plan.copies:
        np.copyto(padded[target], x[source].transpose(plan.channels_to_last), casting="unsafe")
    weights = np.ascontiguousarray(w.astype(acc, copy=False).reshape(w.shape[0], -1).T)      # [taps, C]
    if plan.merged:
        weights = np.tile(weights, (1, plan.out_last))
    by_tap = weights.reshape(plan.kernel + weights.shape[1:])
    total = work_array(SLOT_CONV_WIDE, plan.total_shape, acc)
    for number, (offset, shape, strides, taps_of_phase) in enumerate(plan.groups):
        # numpy checks that the view lies inside the buffer (as_strided would not)
        taps = np.ndarray(shape, acc, buffer=padded, offset=offset, strides=strides)
        target = total if number == 0 else work_array(SLOT_CONV_PRODUCT, plan.total_shape, acc)
        np.einsum(plan.subscripts, taps, by_tap[..., taps_of_phase, :], out=target)
        if number:
            np.add(total, target, out=total)
    sums = total.reshape(plan.result_shape)
    if bias is not None:
        np.add(sums, bias.astype(acc, copy=False), out=sums)
    return sums.transpose(plan.channels_to_front), False


@functools.lru_cache(maxsize=256)
def _channels_last_plan(shape: tuple[int, ...], acc: np.dtype, windows: tuple[AxisWindow, ...],
                        tiled_limit: int) -> _ChannelsLast:
    return _ChannelsLast(shape, acc, windows, tiled_limit)


class _ChannelsLast:
    """depthwise_channels_last worked out once per input shape, dtype and windows (its Python cost per call was
    30-48 us, as much as the arithmetic of a 200x14x14 layer): the zero-padded buffer [N, *extents[:-1],
    phases, per_phase, C] (the last image axis split by stride phase, a plane per phase some tap reads), the
    copies of x into it, and per stride phase of the last axis one strided view of the buffer that holds every tap
    of that phase, with the taps' numbers.

    Along the last axis tap j reads phase (j * d) % s at shift (j * d) // s, and the taps of one phase step their
    shift by d / gcd(d, s): a constant stride. Padded position o * s + j * d is read by output o's tap j; input i
    sits at i + pad_begin."""

    __slots__ = ("padded_shape", "copies", "channels_to_last", "channels_to_front", "merged", "out_last", "kernel",
                 "total_shape", "result_shape", "subscripts", "groups")

    def __init__(self, shape: tuple[int, ...], acc: np.dtype, windows: tuple[AxisWindow, ...], tiled_limit: int):
        n, c = shape[:2]
        rank = len(windows)
        last = windows[-1]
        s, d = last.stride, last.dilation
        extents = tuple((window.output - 1) * window.stride + (window.kernel - 1) * window.dilation + 1
                        for window in windows)
        per_phase = -(-extents[-1] // s)
        phases = used_phases(last)                                     # only these get a plane (see phase_buffer)
        self.padded_shape = (n,) + extents[:-1] + (len(phases), per_phase, c)
        self.channels_to_last = (0,) + tuple(range(2, rank + 2)) + (1,)
        self.channels_to_front = (0, rank + 1) + tuple(range(1, rank + 1))
        self.copies = []
        kept = tuple(max(0, min(window.length, extent - window.pad_begin))
                     for window, extent in zip(windows[:-1], extents[:-1]))
        if all(kept):
            inside = tuple(slice(window.pad_begin, window.pad_begin + size) for window, size in zip(windows, kept))
            rows = (slice(None), slice(None)) + tuple(slice(0, size) for size in kept)
            for plane, r in enumerate(phases):
                lo, hi, source = phase_span(last, r, per_phase)
                if lo < hi:
                    self.copies.append(((slice(None),) + inside + (plane, slice(lo, hi)), rows + (source,)))
        self.kernel = tuple(window.kernel for window in windows)
        self.out_last = last.output
        out = tuple(window.output for window in windows)
        # Repeating the weights along the last axis costs taps * out[-1] * C values: bounded, or kept unmerged.
        self.merged = math.prod(self.kernel) * c * acc.itemsize * last.output <= tiled_limit
        self.total_shape = (n,) + (out[:-1] + (last.output * c,) if self.merged else out + (c,))
        self.result_shape = (n,) + out + (c,)
        letters, outs = "abcdefghijklm"[:rank - 1], "ABCDEFGHIJKLM"[:rank - 1]
        tail = "q" if self.merged else "pq"
        self.subscripts = f"n{letters}z{outs}{tail},{letters}z{tail[-1]}->n{outs}{tail}"
        item = acc.itemsize
        dims = self.padded_shape
        strides = [item * math.prod(dims[axis + 1:]) for axis, _ in enumerate(dims)]     # the buffer is C order
        outer = strides[1:rank]
        if self.merged:
            last_shape, last_strides = (last.output * c,), (item,)
        else:
            last_shape, last_strides = (last.output, c), (c * item, item)
        self.groups = []
        for plane, phase in enumerate(phases):
            taps = [j for j in range(last.kernel) if j * d % s == phase]
            self.groups.append((
                plane * strides[rank] + taps[0] * d // s * c * item,          # the group's first tap, output 0
                (n,) + self.kernel[:-1] + (len(taps),) + out[:-1] + last_shape,
                (strides[0],) + tuple(window.dilation * stride for window, stride in zip(windows, outer))
                + (d // math.gcd(d, s) * c * item,)
                + tuple(window.stride * stride for window, stride in zip(windows, outer)) + last_strides,
                slice(taps[0], taps[-1] + 1, s // math.gcd(d, s))))     # the taps: a view of the weights, not a copy
