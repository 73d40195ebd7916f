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
# of starts() and the kernels (a stride near 2**63 would overflow it).
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


# ---------------------------------------------------------------------------------------------
# An IR pooling layer's window attributes, read once per axis

@dataclass(frozen=True, slots=True)
class PoolAxisAttrs:
    """One spatial axis of an IR AvgPool/MaxPool layer's attributes, as written: pads before auto_pad."""

    kernel: int
    stride: int
    dilation: int
    pad_begin: int
    pad_end: int

    @property
    def effective_kernel(self) -> int:
        return effective_kernel(self.kernel, self.dilation)

    def resolve_pads(self, length: int, auto_pad: str) -> tuple[int, int]:
        """(pad_begin, pad_end) on an axis of `length` under `auto_pad` (see `resolve_pads`)."""
        return resolve_pads(length, self.kernel, self.stride, self.dilation, self.pad_begin, self.pad_end, auto_pad)


def pool_axes(attrs: dict) -> tuple[PoolAxisAttrs, ...]:
    """kernel, strides, dilations, pads_begin and pads_end of an IR pooling layer, one entry per spatial axis.

    A version without `dilations` (AvgPool-1, MaxPool-1) has dilation 1. The lists must have one value per
    axis each (a ValueError otherwise: callers check the lengths first, naming the attribute).
    """
    kernel = attrs["kernel"]
    dilations = attrs.get("dilations") or (1,) * len(kernel)
    return tuple(PoolAxisAttrs(*values) for values in
                 zip(kernel, attrs["strides"], dilations, attrs["pads_begin"], attrs["pads_end"], strict=True))
