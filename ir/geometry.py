"""Pooling window geometry: the one place where output sizes, auto padding and real taps are computed.

Everything here is per spatial axis. For an axis of input length L, kernel k, stride s, dilation d
and pads (pb, pe), the effective kernel is ek = (k - 1) * d + 1. Output position o reads the taps

    i(o, j) = o * s - pb + j * d,  j = 0 .. k-1      (input coordinates; real input is 0 <= i < L)

and the number of outputs depends on the rounding rule:

    floor:       out = floor((L + pb + pe - ek) / s) + 1
    ceil:        out = ceil((L + pb + pe - ek) / s) + 1
    ceil_torch:  as ceil, minus the last window if it would start at or after L + pb in padded
                 coordinates, i.e. in the right padding: (out - 1) * s >= L + pb

`ceil` is OpenVINO's rounding_type=ceil, which keeps a last window that starts in the right padding;
`ceil_torch` is OpenVINO's rounding_type=ceil_torch, PyTorch's ceil_mode, and ONNX's ceil_mode=1
("sliding windows that would start in the right padded region are ignored").

Worked example: L=4, k=2, s=2, d=1, pads (0, 1). Padded length 5, ek = 2.
    floor:      floor(3 / 2) + 1 = 2    windows start at 0, 2
    ceil:       ceil(3 / 2) + 1 = 3     windows start at 0, 2, 4 (the last is all padding)
    ceil_torch: 3 - 1 = 2               because (3 - 1) * 2 = 4 >= L + pb = 4

Auto padding (same_upper / same_lower) pads so that out = ceil(L / s):

    total = max(0, (ceil(L / s) - 1) * s + ek - L)
    same_upper: pb = total // 2, pe = total - pb      (odd element at the end)
    same_lower: pe = total // 2, pb = total - pe      (odd element at the beginning)

With these pads the floor formula gives exactly ceil(L / s), so auto-padded axes are always
computed with floor rounding. `valid` means pads (0, 0) with the caller's rounding; each adapter
(ONNX or OpenVINO) decides which rounding applies to valid, next to the code that reads the attribute.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np

from poolir.ir.errors import UsageError

Rounding = Literal["floor", "ceil", "ceil_torch"]
AutoPad = Literal["explicit", "same_upper", "same_lower", "valid"]

ROUNDINGS: tuple[str, ...] = ("floor", "ceil", "ceil_torch")
AUTO_PADS: tuple[str, ...] = ("explicit", "same_upper", "same_lower", "valid")
# Largest kernel, stride, dilation, pad or input length accepted. Far beyond any real model (tensors are
# capped at 2**31 elements), and small enough that every window coordinate fits the int64 arithmetic
# of starts() and the kernels: a stride of 2**63 from a hostile file overflowed numpy.
MAX_AXIS_VALUE = 2**31 - 1


@dataclass(frozen=True, slots=True)
class AxisWindow:
    """The resolved geometry of one spatial axis. Invariant: every field >= its minimum, output >= 1."""

    length: int
    kernel: int
    stride: int
    dilation: int
    pad_begin: int
    pad_end: int
    output: int

    @property
    def effective_kernel(self) -> int:
        return effective_kernel(self.kernel, self.dilation)

    @property
    def end_reach(self) -> int:
        """How far the last window reaches past the input's end (negative: it ends inside the input).

        Compare with pad_end: a reach beyond it is a ceil overhang past the padded tensor.
        """
        return (self.output - 1) * self.stride + self.effective_kernel - self.length - self.pad_begin

    def starts(self) -> np.ndarray:
        """Input coordinate of the first tap of every output window (may be negative: in the padding)."""
        return np.arange(self.output, dtype=np.int64) * self.stride - self.pad_begin

    def taps_within(self, low: int, high: int) -> np.ndarray:
        """For each output window, how many of its k taps fall in input coordinates [low, high).

        taps_within(0, L) counts real input elements; taps_within(-pb, L + pe) counts taps inside
        the padded tensor; taps that fall past it (a ceil overhang) are in neither.
        """
        starts = self.starts()
        first = np.maximum(0, -((starts - low) // self.dilation))  # ceil((low - start) / d), at least 0
        last = np.minimum(self.kernel - 1, (high - 1 - starts) // self.dilation)
        return np.maximum(0, last - first + 1)

    def real_taps(self) -> np.ndarray:
        """For each output window, how many taps read real input."""
        return self.taps_within(0, self.length)

    def padded_taps(self) -> np.ndarray:
        """For each output window, how many taps lie inside the padded extent [-pb, L + pe)."""
        return self.taps_within(-self.pad_begin, self.length + self.pad_end)


def effective_kernel(kernel: int, dilation: int) -> int:
    """The extent of a dilated kernel: ek = (k - 1) * d + 1."""
    return (kernel - 1) * dilation + 1


def resolve_pads(length: int, kernel: int, stride: int, dilation: int, pad_begin: int, pad_end: int,
                 auto_pad: str) -> tuple[int, int]:
    """(pad_begin, pad_end) that an auto_pad mode means on one axis: SAME pads, zeros for valid, else as given."""
    if auto_pad in ("same_upper", "same_lower"):
        return same_pads(length, kernel, stride, dilation, auto_pad)
    if auto_pad == "valid":
        return 0, 0
    return pad_begin, pad_end


def same_pads(length: int, kernel: int, stride: int, dilation: int, auto_pad: str) -> tuple[int, int]:
    """(pad_begin, pad_end) for same_upper / same_lower; see the module docstring."""
    effective = effective_kernel(kernel, dilation)
    total = max(0, (-(-length // stride) - 1) * stride + effective - length)
    small, large = total // 2, total - total // 2
    return (small, large) if auto_pad == "same_upper" else (large, small)


def output_length(length: int, kernel: int, stride: int, dilation: int, pad_begin: int, pad_end: int,
                  rounding: str) -> int:
    """Number of windows along one axis for explicit pads; may be < 1 (the caller rejects that)."""
    span = length + pad_begin + pad_end - effective_kernel(kernel, dilation)
    if rounding == "floor":
        return span // stride + 1
    out = -(-span // stride) + 1
    if rounding == "ceil_torch" and out >= 1 and (out - 1) * stride >= length + pad_begin:
        out -= 1
    return out


def axis_window(length: int, kernel: int, stride: int = 1, dilation: int = 1, pad_begin: int = 0,
                pad_end: int = 0, rounding: str = "floor", auto_pad: str = "explicit") -> AxisWindow:
    """Resolve one axis. Raises UsageError for out-of-range values, naming the value and the rule.

    Callers (IR shape inference, the runtime adapters, the converter) catch UsageError and
    re-raise it located at their layer or node, so this function stays free of file context.
    """
    _check_at_least("input length", length, 0)
    _check_at_least("kernel", kernel, 1)
    _check_at_least("stride", stride, 1)
    _check_at_least("dilation", dilation, 1)
    if rounding not in ROUNDINGS:
        raise UsageError(f"rounding {rounding!r} is not one of {', '.join(ROUNDINGS)}")
    if auto_pad not in AUTO_PADS:
        raise UsageError(f"auto_pad {auto_pad!r} is not one of {', '.join(AUTO_PADS)}")
    pad_begin, pad_end = resolve_pads(length, kernel, stride, dilation, pad_begin, pad_end, auto_pad)
    if auto_pad in ("same_upper", "same_lower"):
        rounding = "floor"  # SAME pads make floor give exactly ceil(L / s), whatever the caller's rounding
    _check_at_least("pad_begin", pad_begin, 0)
    _check_at_least("pad_end", pad_end, 0)
    out = output_length(length, kernel, stride, dilation, pad_begin, pad_end, rounding)
    if out < 1:
        raise UsageError(
            f"output length {out} < 1: input {length} + pads ({pad_begin}, {pad_end}) is shorter than the "
            f"effective kernel {effective_kernel(kernel, dilation)} (kernel {kernel}, dilation {dilation})"
        )
    return AxisWindow(length, kernel, stride, dilation, pad_begin, pad_end, out)


def pool_windows(spatial: Sequence[int], kernel: Sequence[int], strides: Sequence[int] | None = None,
                 dilations: Sequence[int] | None = None, pads_begin: Sequence[int] | None = None,
                 pads_end: Sequence[int] | None = None, rounding: str = "floor",
                 auto_pad: str = "explicit") -> tuple[AxisWindow, ...]:
    """Resolve every spatial axis. Omitted strides/dilations default to 1, omitted pads to 0."""
    rank = len(spatial)
    values = {
        "kernel": kernel,
        "strides": strides if strides is not None else [1] * rank,
        "dilations": dilations if dilations is not None else [1] * rank,
        "pads_begin": pads_begin if pads_begin is not None else [0] * rank,
        "pads_end": pads_end if pads_end is not None else [0] * rank,
    }
    for name, value in values.items():
        if len(value) != rank:
            raise UsageError(f"{name} has {len(value)} values for {rank} spatial axes")
    windows = []
    for axis in range(rank):
        try:
            windows.append(axis_window(spatial[axis], values["kernel"][axis], values["strides"][axis],
                                       values["dilations"][axis], values["pads_begin"][axis],
                                       values["pads_end"][axis], rounding, auto_pad))
        except UsageError as error:
            raise UsageError(f"spatial axis {axis}: {error.problem}") from None
    return tuple(windows)


def _check_at_least(name: str, value: int, minimum: int) -> None:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise UsageError(f"{name} {value!r} is not an integer")
    if value < minimum:
        raise UsageError(f"{name} {value} must be >= {minimum}")
    if value > MAX_AXIS_VALUE:
        raise UsageError(f"{name} {value} must be <= {MAX_AXIS_VALUE} (2**31 - 1)")


# =====================================================================================================
# Window queries for the converters.
#
# Appended section (the code above is unchanged): the converters ask these named questions instead of
# doing window arithmetic themselves. An AxisSpec is one axis of a pooling layer before its input length
# is known; an AxisWindow (above) is a run of windows over a known length.

# Beyond this many input lengths to try, padding_window_possible assumes a window of padding only exists.
PADDING_WINDOW_SEARCH_LIMIT = 4096


@dataclass(frozen=True, slots=True)
class AxisSpec:
    """One spatial axis of a pooling layer before its input length is known: kernel, stride, dilation, pads.

    Worked example: AxisSpec(kernel=3, stride=2, dilation=2, pad_begin=1, pad_end=1) has the effective
    kernel (3 - 1) * 2 + 1 = 5, and over a length of 8, count(8, "floor") = floor((8 + 2 - 5) / 2) + 1 = 3.
    """

    kernel: int
    stride: int = 1
    dilation: int = 1
    pad_begin: int = 0
    pad_end: int = 0

    @property
    def effective_kernel(self) -> int:
        return effective_kernel(self.kernel, self.dilation)

    def count(self, length: int, rounding: str) -> int:
        """The number of windows over `length` with these pads (may be < 1); see output_length."""
        return output_length(length, self.kernel, self.stride, self.dilation, self.pad_begin, self.pad_end,
                             rounding)

    def resolve_pads(self, length: int, auto_pad: str) -> tuple[int, int]:
        """(pad_begin, pad_end) on an axis of `length` under `auto_pad` (see `resolve_pads`)."""
        return resolve_pads(length, self.kernel, self.stride, self.dilation, self.pad_begin, self.pad_end, auto_pad)

    def window(self, length: int, rounding: str = "floor", auto_pad: str = "explicit") -> AxisWindow:
        """The axis resolved over `length`; raises UsageError as axis_window does."""
        return axis_window(length, self.kernel, self.stride, self.dilation, self.pad_begin, self.pad_end,
                           rounding, auto_pad)


def axis_specs(kernel: Sequence[int], strides: Sequence[int] | None = None,
               dilations: Sequence[int] | None = None, pads_begin: Sequence[int] | None = None,
               pads_end: Sequence[int] | None = None) -> tuple[AxisSpec, ...]:
    """One AxisSpec per spatial axis from per-axis lists; a list that is omitted (None or empty) means
    strides and dilations of 1 and pads of 0 (IR AvgPool-1 and MaxPool-1 have no dilations).

    Worked example: axis_specs((2, 3), (2, 1)) -> (AxisSpec(2, 2, 1, 0, 0), AxisSpec(3, 1, 1, 0, 0)).
    """
    rank = len(kernel)
    return tuple(AxisSpec(*values) for values in zip(kernel, strides or (1,) * rank, dilations or (1,) * rank,
                                                     pads_begin or (0,) * rank, pads_end or (0,) * rank))


def pool_axes(attrs: dict) -> tuple[AxisSpec, ...]:
    """kernel, strides, dilations, pads_begin and pads_end of an IR pooling layer, one AxisSpec per spatial axis.

    A version without `dilations` (AvgPool-1, MaxPool-1) has dilation 1. The lists must have one value per
    axis each (a ValueError otherwise: callers check the lengths first, naming the attribute).
    """
    kernel = attrs["kernel"]
    dilations = attrs.get("dilations") or (1,) * len(kernel)
    return tuple(AxisSpec(*values) for values in
                 zip(kernel, attrs["strides"], dilations, attrs["pads_begin"], attrs["pads_end"], strict=True))


def spec_of(window: AxisWindow) -> AxisSpec:
    """The AxisSpec of a resolved axis: its kernel, stride, dilation and (resolved) pads."""
    return AxisSpec(window.kernel, window.stride, window.dilation, window.pad_begin, window.pad_end)


def covering_pad_end(window: AxisWindow) -> int:
    """The pads_end that just covers the last window: max(0, end_reach).

    Worked example: L=5, k=2, s=2, no pads. With 3 windows (ceil) the last covers [4, 6), one past the
    input: 1. With 2 windows (floor) the last covers [2, 4), inside the input: 0.
    """
    return max(0, window.end_reach)


def overhangs(window: AxisWindow) -> bool:
    """Whether the last window reaches past the padded input (end_reach > pad_end): a ceil overhang, whose
    taps past L + pe are neither input nor padding.

    Worked example: L=6, k=3, s=2, pads (1, 1). ceil gives 4 windows, the last covering [5, 8) in input
    coordinates, end_reach 2 > pad_end 1: it overhangs. floor gives 3, end_reach 0: it does not.
    """
    return window.end_reach > window.pad_end


def kernel_fits(spec: AxisSpec, length: int) -> bool:
    """Whether the dilated kernel fits in the padded input, ek <= L + pb + pe. (OpenVINO refuses a pooling
    layer where it does not, even when ceil rounding would give a window; ONNX's ceil_mode allows it.)

    Worked example: k=3, s=3, no pads: L=3 fits; L=1 does not, though ceil rounding gives it one window.
    """
    return spec.effective_kernel <= length + spec.pad_begin + spec.pad_end


def smallest_pad_end(spec: AxisSpec, length: int, windows: int, rounding: str) -> int | None:
    """The smallest pads_end >= 0 (spec's pad_begin kept, its pad_end ignored) with which `rounding` gives
    exactly `windows` windows over `length`; None when even pads_end = 0 gives more.

    The count never falls as pads_end grows, and grows by at most one per step: floor and ceil add a window
    per stride of padding, and ceil_torch drops at most ceil's last window, depending on ceil's count alone.
    So the smallest pads_end that reaches `windows` gives it exactly. For floor that is
    max(0, (windows - 1) * s + ek - L - pb); in general a binary search, bounded by the pads_end where floor
    gives windows + 1, windows * s + ek - L - pb (pads reach 2**31 - 1: too many to try one by one).

    Worked example: L=5, k=2, s=2, pb=0, 3 windows. floor needs (3 - 1) * 2 + 2 - 5 = 1; ceil_torch needs 0
    (ceil(3 / 2) + 1 = 3 windows, the last starting at 4 < L + pb = 5, so kept).
    """
    def count(pad_end: int) -> int:
        return output_length(length, spec.kernel, spec.stride, spec.dilation, spec.pad_begin, pad_end, rounding)

    if count(0) > windows:
        return None
    low, high = 0, max(0, windows * spec.stride + spec.effective_kernel - length - spec.pad_begin)
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if count(middle) >= windows else (middle + 1, high)
    return low


def overhang_possible(spec: AxisSpec) -> bool:
    """With ceil rounding (ceil or ceil_torch), does some input length give a last window that reaches past
    the padded input? Exactly when the stride is > 1: the overhang is ceil(span / s) * s - span with
    span = L + pb + pe - ek, positive for some L iff s > 1.

    Worked example: k=2, s=2, no pads: L=5 gives ceil(3 / 2) + 1 = 3 windows, the last covering [4, 6).
    """
    return spec.stride > 1


def keeps_a_window_ceil_torch_drops(spec: AxisSpec, rounding: str) -> bool:
    """Does some input length make `rounding` keep a last window that ceil_torch drops, one starting at or
    after L + pb (in the right padding)? With span = L + pb + pe - ek, the last window starts (padded
    coordinates) at floor(span / s) * s for floor and ceil(span / s) * s for ceil: at most at span (reached
    when span mod s = 0), respectively span + s - 1 (span mod s = 1). So floor can iff pe >= ek, ceil iff
    pe > ek - s; ceil_torch never.

    Worked examples (the module docstring's): k=2, s=2, pads (0, 1): ceil can, 1 > 0 (L=4 keeps the window
    starting at 4 = L + pb); floor cannot, 1 < 2. k=1, s=1, pads (0, 1): floor can (L=1: 2 windows, one of padding).
    """
    if rounding == "ceil_torch":
        return False
    reach = spec.stride - 1 if rounding == "ceil" else 0
    return spec.pad_end + reach >= spec.effective_kernel


def rounding_matters_with_same_pads(spec: AxisSpec) -> bool:
    """With same_upper / same_lower pads, can the rounding type change the number of windows for some length?

    SAME pads total max(0, (ceil(L / s) - 1) * s + ek - L). Unclamped, the padded span is a multiple of s
    and every rounding agrees. The total is clamped at 0 for some L exactly when ek < s (L = ek + 1 <= s
    makes it -1), and then the span L - ek = 1 is not a multiple of s.

    Worked example: k=1, s=3, L=2: pads (0, 0), floor 1 window, ceil 2 (the second starting past the input).
    """
    return spec.effective_kernel < spec.stride


def shortest_length_with_a_window(spec: AxisSpec, rounding: str) -> int:
    """The shortest input length >= 1 that gives at least one window with these pads: floor needs
    L + pb + pe >= ek; ceil and ceil_torch need L + pb + pe - ek > -s (ceil_torch never drops the first
    window, which starts at 0 < L + pb).

    Worked example: k=3, s=3, no pads: floor 3; ceil 1 (ceil((1 - 3) / 3) + 1 = 1 window, 2 taps past the input).
    """
    slack = 0 if rounding == "floor" else spec.stride - 1
    return max(1, spec.effective_kernel - slack - spec.pad_begin - spec.pad_end)


def padding_window_possible(spec: AxisSpec, rounding: str, auto_pad: str) -> bool:
    """Whether some input length L >= 1 gives a window without any input element (only padding, or dilated
    taps that skip the whole input).

    Left-edge windows do not depend on L, right-edge windows only on L mod s once L exceeds the span of the
    pads, the dilated kernel and a stride's worth of dilated taps (and small L, where dilated taps can skip
    the whole input, is tried one by one), so trying every L up to twice that span decides it; past
    PADDING_WINDOW_SEARCH_LIMIT lengths it answers yes. Lengths without any window are skipped.

    Worked examples: k=2, s=2, pads (0, 2), floor: L=2 gives windows [0, 2) and [2, 4), the second all
    padding. k=1, s=2, no pads, ceil: L=2 gives windows at 0 and 2, the second past the input.
    """
    pads = spec.pad_begin + spec.pad_end
    unpadded = auto_pad == "valid" or (pads == 0 and auto_pad == "explicit")
    if unpadded and rounding != "ceil" and (spec.dilation == 1 or auto_pad == "valid"):
        # Every window starts inside the input (only rounding ceil keeps one starting past it), and its first
        # tap is an input element: its taps are contiguous, or (valid, floor) it ends inside the input.
        return False
    limit = 2 * (spec.effective_kernel + pads + spec.stride * spec.dilation) + spec.stride
    if limit > PADDING_WINDOW_SEARCH_LIMIT:
        return True
    for length in range(1, limit + 1):
        try:
            window = spec.window(length, rounding, auto_pad)
        except UsageError:  # no window at all for this length
            continue
        if not window.real_taps().all():
            return True
    return False
