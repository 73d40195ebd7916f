"""Per-axis plans of a pooling window: which taps read real input, for which outputs, and the edge outputs.

A plan depends only on the `ir.geometry.AxisWindow`, so it is computed once per geometry (cached) and
shared by every kernel call with that window (runtime.kernels.separable runs the passes it describes,
runtime.kernels.argmax searches its taps).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from poolir.ir.geometry import AxisWindow


@dataclass(frozen=True, slots=True)
class Tap:
    """One tap j of one axis: outputs [out_lo, out_hi) read real input starting at in_start."""

    j: int
    out_lo: int
    out_hi: int
    in_start: int


@dataclass(frozen=True)
class AxisPlan:
    """How one spatial axis is reduced: its real taps, the interior where every tap is real, the edges."""

    window: AxisWindow
    taps: tuple[Tap, ...]            # only taps that read real input for at least one output
    interior: tuple[int, int]        # outputs where every one of the kernel's taps is real (may be empty)
    empty: np.ndarray                # output positions with no real tap at all
    edges: tuple[tuple[int, tuple[int, ...]], ...]   # (output outside the interior, its real input rows)

    def input_slice(self, tap: Tap, lo: int, hi: int) -> slice:
        """Input positions read by `tap` for outputs [lo, hi) (a subrange of [tap.out_lo, tap.out_hi))."""
        stride = self.window.stride
        start = tap.in_start + (lo - tap.out_lo) * stride
        return slice(start, start + (hi - lo - 1) * stride + 1, stride)

    @property
    def is_identity(self) -> bool:
        w = self.window
        return w.kernel == 1 and w.stride == 1 and w.pad_begin == 0 and w.output == w.length


@functools.lru_cache(maxsize=256)
def axis_plan(window: AxisWindow) -> AxisPlan:
    """The plan of one axis (cached per window)."""

    def tap_range(j: int) -> tuple[int, int, int]:
        offset = j * window.dilation - window.pad_begin       # input position of output 0's tap j
        lo = max(0, -(offset // window.stride))     # ceil(-offset / s): first output reading i >= 0
        hi = min(window.output, (window.length - 1 - offset) // window.stride + 1)
        return lo, hi, offset

    taps = []
    for j in _taps_reading_input(window):
        lo, hi, offset = tap_range(j)
        if lo < hi:
            taps.append(Tap(j, lo, hi, lo * window.stride + offset))
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
    return AxisPlan(window, tuple(taps), interior, empty, edges)


_TAP_SCAN_LIMIT = 4096


def _taps_reading_input(window: AxisWindow):
    """The tap numbers j that read real input for at least one output, as ranges.

    For output o those are j in [ceil((pb - o*s) / d), floor((L - 1 + pb - o*s) / d)], clipped to [0, k);
    both ends fall as o grows, so the union is a few merged intervals. A kernel of 10**9 taps that lie
    nearly all in a huge padding is planned at the cost of its real taps (a scan of every tap costs
    33 s for a kernel of 10**7 on an input of 5); kernels up to _TAP_SCAN_LIMIT taps are scanned whole.
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


def on_tap_grid(window: AxisWindow) -> tuple[slice, AxisWindow] | None:
    """(phase slice, stride-1 window) when every tap of the axis reads the same input phase; else None.

    Tap j of output o reads i = o * s - pb + j * d. When the stride s > 1 divides the dilation d, every such
    i is congruent to -pb modulo s: writing -pb = s * q + r (0 <= r < s), i = s * (o + q + j * d / s) + r.
    So the axis pools the same values as x[r::s] does with stride 1, dilation d / s and pad_begin -q, and
    the input positions of other phases are never read. Subsampling once (one strided copy) and pooling
    with stride 1 replaces every strided pass over the axis (MaxPool 2x2 s2 d2, W7: 0.10 -> 0.04 ms).
    """
    s, d = window.stride, window.dilation
    if s == 1 or d % s:
        return None
    q, r = divmod(-window.pad_begin, s)
    length = (window.length - r + s - 1) // s
    if length < 1:
        return None
    dilation, pad_begin = d // s, -q
    reach = (window.output - 1) + (window.kernel - 1) * dilation - pad_begin - length + 1
    return (slice(r, None, s),
            AxisWindow(length=length, kernel=window.kernel, stride=1, dilation=dilation, pad_begin=pad_begin,
                       pad_end=max(0, reach), output=window.output))


def axis_plans(windows: Sequence[AxisWindow]) -> tuple[AxisPlan, ...]:
    """The (cached) plan of every spatial axis."""
    return tuple(axis_plan(w) for w in windows)


__all__ = ["AxisPlan", "Tap", "axis_plan", "axis_plans", "on_tap_grid"]
