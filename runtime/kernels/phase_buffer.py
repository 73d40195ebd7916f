"""The zero-padded input of a convolution split by stride phase, where every tap is one contiguous range.

Along an axis with stride s, dilation d and kernel k, output o's tap j reads padded position
o*s + j*d = (o + a)*s + r with a = (j*d) // s and r = (j*d) % s: element o + a of phase r, where
phase r holds padded positions r, r + s, r + 2s, ... So each tap reads one phase combination
(r_0, r_1, ...) shifted by (a_0, a_1, ...). With the phase flattened row-major, outputs on the
"wide grid" (O_0, Q_1, ..., Q_last) (Q = phase extent: O + max a) read flat position
q + sum a_i * row_i: a contiguous range per tap for all outputs. Wide positions past O_i on inner
axes are garbage (they wrap into the next row) and are cropped; axis 0 gets one spare zero row so
that the last tap's range stays inside the buffer. Layout [N, C, phase combination, flat], a plane per
combination some tap reads.

Used by the depthwise columns (runtime.kernels.depthwise) and by im2col for convolutions whose taps would
otherwise be copied from strided or short rows (runtime.kernels.convolution).
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Sequence

import numpy as np

from poolir.ir.geometry import AxisWindow
from poolir.runtime.kernels.axis_pass import copy_strided
from poolir.runtime.kernels.work_arrays import SLOT_CONV_PHASES, work_array

__all__ = ["CACHED_TAPS", "PhasePlan", "padding_strips", "phase_plan", "phase_span", "used_phases", "wide_grid"]


# Kernels of at most this many taps have their tap geometry cached (here and in runtime.kernels.convolution); a
# hostile file's larger kernel is worked out on every call instead of filling the cache.
CACHED_TAPS = 1024


def phase_plan(shape: tuple[int, ...], acc: np.dtype, windows: tuple[AxisWindow, ...]) -> PhasePlan:
    """The PhasePlan of an input of `shape` read through `windows` in dtype `acc`, worked out once per geometry
    (the Python work of a 7x7 kernel's 49 taps was 140 us a call)."""
    if math.prod(window.kernel for window in windows) > CACHED_TAPS:
        return PhasePlan(shape, acc, windows)
    return _cached_phase_plan(shape, acc, windows)


@functools.lru_cache(maxsize=256)
def _cached_phase_plan(shape: tuple[int, ...], acc: np.dtype, windows: tuple[AxisWindow, ...]) -> PhasePlan:
    return PhasePlan(shape, acc, windows)


class PhasePlan:
    """Where x goes in the phase buffer (see the module docstring), the padding strips to zero, and every tap's
    phase combination and offset; `fill` copies an input in, `tap_views` reads the taps out."""

    __slots__ = ("acc", "out", "wide_shape", "wide_size", "buffer_shape", "copies", "zeros", "taps")

    def __init__(self, shape: tuple[int, ...], acc: np.dtype, windows: tuple[AxisWindow, ...]):
        n, c = shape[:2]
        # Only the phases some tap reads get a plane (at most min(kernel, stride) per axis): a stride far above the
        # kernel would otherwise make a plane per phase, most of them never read.
        used = [used_phases(window) for window in windows]
        planes = [{r: number for number, r in enumerate(phases)} for phases in used]
        extents = _phase_extents(windows)
        rows = (extents[0] + 1,) + extents[1:]
        self.acc = acc
        self.out = tuple(window.output for window in windows)
        self.wide_shape = wide_grid(windows)
        self.wide_size = math.prod(self.wide_shape)
        self.buffer_shape = (n, c, math.prod(len(phases) for phases in used)) + rows
        self.copies, self.zeros = [], []
        for phase in itertools.product(*used):
            number = _plane_number(phase, planes)
            ranges, sources = [], []
            for window, r, extent in zip(windows, phase, rows):
                lo, hi, source = phase_span(window, r, extent)
                ranges.append((lo, hi))
                sources.append(source)
            plane = (slice(None), slice(None), number)
            if all(hi > lo for lo, hi in ranges):
                self.copies.append((plane + tuple(slice(lo, hi) for lo, hi in ranges), (Ellipsis,) + tuple(sources)))
            self.zeros.extend(plane + strip for strip in padding_strips(rows, ranges))
        row_sizes = tuple(math.prod(extents[axis + 1:]) for axis in range(len(windows)))
        self.taps = []                     # (phase combination, flat offset) per tap, in weight order
        for taps in itertools.product(*(range(w.kernel) for w in windows)):
            shifts = [j * w.dilation for j, w in zip(taps, windows)]
            phase = [shift % w.stride for shift, w in zip(shifts, windows)]
            offset = sum(shift // w.stride * row for shift, w, row in zip(shifts, windows, row_sizes))
            self.taps.append((_plane_number(phase, planes), offset))

    def fill(self, x: np.ndarray) -> np.ndarray:
        """x copied into this thread's phase buffer (cast to the plan's dtype); returns it as [N, C, phases, flat]."""
        buffer = work_array(SLOT_CONV_PHASES, self.buffer_shape, self.acc)
        for target, source in self.copies:
            copy_strided(buffer[target], x, source)
        for strip in self.zeros:
            buffer[strip] = 0
        return buffer.reshape(self.buffer_shape[:3] + (-1,))

    def tap_views(self, flat: np.ndarray) -> list[np.ndarray]:
        """The [N, C, wide_size] view of `flat` (fill's result) that each tap multiplies, in weight order."""
        return [flat[:, :, number, offset: offset + self.wide_size] for number, offset in self.taps]

    def cropped(self, wide: np.ndarray) -> np.ndarray:
        """The [N, C, *out] view of the real outputs in a [N, C, wide_size] array."""
        n, c = wide.shape[:2]
        grid = wide.reshape((n, c) + self.wide_shape)
        return grid[(Ellipsis,) + tuple(slice(0, o) for o in self.out)]


def _phase_extents(windows: Sequence[AxisWindow]) -> tuple[int, ...]:
    """The length of every stride phase along each axis: the outputs plus the largest shift of a tap."""
    return tuple(w.output + (w.kernel - 1) * w.dilation // w.stride for w in windows)


def wide_grid(windows: Sequence[AxisWindow]) -> tuple[int, ...]:
    """The grid of outputs the taps' contiguous ranges cover: the real outputs along the first axis, the phase
    extents along the others (see the module docstring)."""
    return (windows[0].output,) + _phase_extents(windows)[1:]


def used_phases(window: AxisWindow) -> list[int]:
    """The stride phases of the padded axis that some tap reads, ascending: tap j reads phase (j * d) % s."""
    return sorted({(j * window.dilation) % window.stride for j in range(window.kernel)})


def _plane_number(phase: Sequence[int], planes: Sequence[dict[int, int]]) -> int:
    """The buffer plane of a phase combination: row-major over each axis's used phases."""
    number = 0
    for r, plane in zip(phase, planes):
        number = number * len(plane) + plane[r]
    return number


def phase_span(window: AxisWindow, r: int, extent: int) -> tuple[int, int, slice]:
    """Where the input lands in stride phase r of the zero-padded axis: phase position q holds padded position
    q * s + r, which is input q * s + r - pad_begin. Returns (lo, hi, source): positions lo .. hi - 1 (hi <= extent,
    the phase's length) hold real input, read by the slice `source` of the axis; lo == hi when none does."""
    s = window.stride
    lo = max(0, -((r - window.pad_begin) // s))
    hi = max(lo, min(extent, (window.length - 1 + window.pad_begin - r) // s + 1))
    start = lo * s + r - window.pad_begin
    return lo, hi, slice(start, start + (hi - lo - 1) * s + 1, s) if hi > lo else slice(0, 0)


def padding_strips(sizes: Sequence[int], ranges: Sequence[tuple[int, int]]) -> list[tuple[slice, ...]]:
    """Index tuples over the trailing axes of `sizes` that cover everything outside the box of `ranges`."""
    strips = []
    for axis, ((lo, hi), size) in enumerate(zip(ranges, sizes)):
        for strip in ((0, lo), (hi, size)):
            if strip[0] < strip[1]:
                index = [slice(None)] * len(sizes)
                index[axis] = slice(*strip)
                strips.append(tuple(index))
    return strips
