"""The IR window geometry of an ONNX pooling node: pads and rounding that OpenVINO computes exactly as ONNX
does, or a refusal. The numbered OpenVINO facts are in pooling.py's docstring; the window arithmetic is
ir.geometry's (its converter queries)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from poolir.ir.errors import ConversionError, InvalidModelError, UsageError
from poolir.ir.geometry import (AxisSpec, AxisWindow, axis_specs, covering_pad_end, keeps_a_window_ceil_torch_drops,
                                kernel_fits, overhang_possible, overhangs, padding_window_possible,
                                shortest_length_with_a_window, smallest_pad_end, spec_of)
from poolir.runtime.onnx_ops import OnnxPool

# One spatial axis as ONNX wants it: with a static length, the AxisWindow of ONNX's windows (its output is
# the count the IR must reproduce); with a dynamic one, the AxisSpec alone.
WantedAxis = AxisWindow | AxisSpec


@dataclass(frozen=True, slots=True)
class IrWindows:
    """The IR pooling layer's geometry, and an explicit zero Pad before it when one is needed."""

    pads_begin: tuple[int, ...]
    pads_end: tuple[int, ...]
    rounding: str
    auto_pad: str = "explicit"
    exclude_pad: bool = True  # AvgPool only
    pre_pad: tuple[tuple[int, ...], tuple[int, ...]] | None = None  # (begin, end) per spatial axis
    # Keep only the windows that start before the input's end + this offset (per spatial axis, in the coordinates
    # of the pre-padded input): a Slice after the pooling layer, its ends computed from the input's shape.
    keep_starts_before: tuple[int, ...] | None = None


def plan_windows(pool: OnnxPool, spatial: Sequence[int | None]) -> tuple[IrWindows, tuple[int | None, ...]]:
    """The IR geometry that OpenVINO computes exactly as ONNX does, and the output spatial dims.

    Rules (the numbered OpenVINO facts are in pooling.py's docstring):
    - SAME: explicit resolved pads when the dims are static, auto_pad otherwise; every window lies in
      the padded input, so both divisors agree with ONNX (fact 4: prod(k), or real taps = k when no pad).
    - VALID and explicit floor: the same pads; floor windows never leave the padded input.
    - explicit ceil_mode=1 (ceil_torch): see fit_rounding; AveragePool count_include_pad=1 with pads
      and a possible overhang pads explicitly first (fact 4).
    """
    rank = pool.spatial_rank
    specs = axis_specs(pool.kernel, pool.strides, pool.dilations, pool.pads_begin, pool.pads_end)
    windows = [onnx_window(pool, spec, axis, length) for axis, (spec, length) in enumerate(zip(specs, spatial))]
    out_spatial = tuple(w.output if w is not None else None for w in windows)
    family = pool.family
    exclude_pad = family == "max" or (family == "avg" and pool.divisor == "real")
    # Any rounding: floor keeps a window wholly in the padding too when a pad is at least the kernel.
    if family == "max" and any(w is not None and not w.real_taps().all() for w in windows):
        raise ConversionError("a window holds no input element, only padding: ONNX gives -inf there and "
                              "OpenVINO the lowest finite value with index 0, so no exact IR exists")
    if family == "max" and any(w is None and padding_window_possible(spec, pool.rounding, pool.auto_pad)
                               for spec, w in zip(specs, windows)):
        raise ConversionError("with dynamic spatial dims, some input lengths give a window that holds no input "
                              "element, only padding (ONNX: -inf, OpenVINO: its lowest finite value); fix the "
                              "shape with --input-shape")
    if pool.auto_pad in ("same_upper", "same_lower"):
        if all(w is not None for w in windows):
            return IrWindows(tuple(w.pad_begin for w in windows), tuple(w.pad_end for w in windows), "floor",
                             exclude_pad=exclude_pad), out_spatial
        return IrWindows((0,) * rank, (0,) * rank, "floor", pool.auto_pad, exclude_pad), out_spatial
    if pool.auto_pad == "valid":
        return IrWindows((0,) * rank, (0,) * rank, "floor", exclude_pad=exclude_pad), out_spatial
    if pool.rounding == "floor":
        ends = _exclude_pad_ends(specs, windows) if family == "avg" and exclude_pad else pool.pads_end
        return IrWindows(pool.pads_begin, ends, "floor", exclude_pad=exclude_pad), out_spatial
    axes: list[WantedAxis] = [w if w is not None else spec for spec, w in zip(specs, windows)]
    if exclude_pad:
        return fit_rounding(axes, full_kernel_divisor=False, exclude_pad=True), out_spatial
    if family == "lp":
        return fit_rounding(axes, full_kernel_divisor=True, exclude_pad=False), out_spatial
    # AveragePool count_include_pad=1 with ceil_mode=1.
    if not any(pool.pads_begin) and not any(pool.pads_end):
        # No padding: the taps inside [-pb, L + pe) are the real taps, exactly what exclude-pad divides by.
        return fit_rounding(axes, full_kernel_divisor=False, exclude_pad=True), out_spatial
    if not any(_overhang_possible(axis) for axis in axes):
        # Every wanted window lies in the padded input, so ONNX divides by prod(k) like OpenVINO (fact 4),
        # and floor rounding gives the wanted windows, except that with pad_end >= the dilated kernel floor
        # also keeps a last window lying wholly in the right padding, which ONNX drops (L=1, k=1, pads (0, 1):
        # ONNX 1 window, floor 2). Shrinking pads_end to what the wanted windows reach removes it; no window
        # leaves the input, so the divisor is still k per axis.
        if any(isinstance(a, AxisSpec) and keeps_a_window_ceil_torch_drops(a, "floor") for a in axes):
            raise ConversionError(
                "count_include_pad=1 with ceil_mode=1, a pad_end at least the dilated kernel and dynamic spatial "
                "dims: whether ONNX drops a last window lying in the padding depends on the input length; fix "
                "the shape with --input-shape")
        ends = tuple(a.pad_end if isinstance(a, AxisSpec) else min(a.pad_end, covering_pad_end(a)) for a in axes)
        return IrWindows(pool.pads_begin, ends, "floor", exclude_pad=False), out_spatial
    # Pad with zeros explicitly; exclude-pad's real taps are then the taps inside ONNX's padded input.
    # The AvgPool must keep a non-zero pad: OpenVINO's PadFusion folds Pad + AvgPool(exclude-pad=true,
    # zero pads) into AvgPool(exclude-pad=false, the Pad's pads), whose divisor is prod(k) (fact 4)
    # (measured: L=8, k=4, s=3, pads (2,1), ceil: last window 8/4 instead of 8/2). With static dims the
    # fitted floor pads_end is non-zero exactly on the overhanging axes.
    if any(isinstance(a, AxisSpec) for a in axes):
        return _padded_windows_for_every_length(pool), out_spatial
    padded = [AxisWindow(a.length + a.pad_begin + a.pad_end, a.kernel, a.stride, a.dilation, 0, 0, a.output)
              for a in axes]
    # ONNX drops a last window starting at or after L + pb, which is pad_end before the end of the padded
    # input: ceil_torch on it would keep that window unless every pad_end is zero.
    fitted = fit_rounding(padded, full_kernel_divisor=False, exclude_pad=True, allow_zero_pads=False,
                          ceil_torch_is_onnx=not any(pool.pads_end))
    return IrWindows(fitted.pads_begin, fitted.pads_end, fitted.rounding, exclude_pad=True,
                     pre_pad=(pool.pads_begin, pool.pads_end)), out_spatial


def _exclude_pad_ends(specs: Sequence[AxisSpec], windows: Sequence[AxisWindow | None]) -> tuple[int, ...]:
    """The pads_end of an exclude-pad AvgPool with floor rounding. OpenVINO refuses one whose pads reach the
    dilated kernel (ir.ops.pooling, rule 5), which PyTorch's TorchScript exporter writes below opset 10, where
    AveragePool has no ceil_mode: it emulates ceil_mode=True by a larger pad_end (AvgPool2d(3, 2, 1,
    ceil_mode=True) on L=24: pads (1, 3)). Exclude-pad divides by the real taps, so the pads only decide how
    many windows there are; the pad_end that just covers the last window keeps that count (the last window
    ends at L - 1 + pe) and is below the dilated kernel, because that window holds a real tap."""
    ends = []
    for axis, (spec, window) in enumerate(zip(specs, windows)):
        if max(spec.pad_begin, spec.pad_end) < spec.effective_kernel:
            ends.append(spec.pad_end)
        elif window is None:
            raise ConversionError(
                f"spatial axis {axis}: an exclude-pad AveragePool with pads {spec.pad_begin}, {spec.pad_end} not "
                f"smaller than the dilated kernel {spec.effective_kernel} on a dynamic axis: OpenVINO refuses "
                "those pads, and the smaller pad_end that gives ONNX's windows depends on the input length; fix "
                "the shape with --input-shape")
        elif not window.real_taps().all():
            raise ConversionError(
                f"spatial axis {axis}: a window lies entirely in the padding (pads {spec.pad_begin}, "
                f"{spec.pad_end}, dilated kernel {spec.effective_kernel}) and averages no input element; "
                "OpenVINO refuses such an exclude-pad AvgPool, so no exact IR exists")
        else:
            ends.append(covering_pad_end(window))
    return tuple(ends)


def _padded_windows_for_every_length(pool: OnnxPool) -> IrWindows:
    """AveragePool count_include_pad=1, ceil_mode=1 and pads on dynamic spatial dims: a zero Pad (pb, pe), an
    exclude-pad AvgPool with floor rounding and pads (0, e), e = min(s - 1, ek - 1), and a Slice keeping the
    windows that start before L + pb.

    ONNX keeps the windows of ceil rounding that start before L + pb (a last one starting in the right padding
    is dropped), ceil((L + pb) / s) of them at most. On the padded length P = L + pb + pe, floor over pads (0, e)
    keeps them all: with e = s - 1 it counts floor((P + s - 1 - ek) / s) + 1 = ceil((P - ek) / s) + 1 windows,
    ONNX's ceil count; with e = ek - 1 (s > ek) every window starting before P fits. The Slice's end
    ceil((L + pb) / s) drops the rest. Exclude-pad counts the taps inside [0, P), which are ONNX's
    count_include_pad taps inside [-pb, L + pe), and not those past it. OpenVINO accepts the layer: e < ek, and
    the padded extent P + e reaches ek at every length ONNX gives a window (fact 7). e >= 1 on an axis a window
    can overhang (s >= 2, ek >= 2), which keeps OpenVINO's PadFusion off (fact 4). Worked example: L=6, k=3,
    s=2, pads (1,1): P = 8, floor over (0, 1) gives starts 0, 2, 4, 6; ONNX keeps starts < 7, all four; the last
    window [x5, pad, past] is (x5 + 0) / 2, ONNX's divisor 2.
    """
    rank = pool.spatial_rank
    specs = axis_specs(pool.kernel, pool.strides, pool.dilations, pool.pads_begin, pool.pads_end)
    return IrWindows((0,) * rank, tuple(min(spec.stride, spec.effective_kernel) - 1 for spec in specs), "floor",
                     exclude_pad=True, pre_pad=(pool.pads_begin, pool.pads_end), keep_starts_before=pool.pads_begin)


def onnx_window(pool: OnnxPool, spec: AxisSpec, axis: int, length: int | None) -> AxisWindow | None:
    """ONNX's windows along `axis` for a static length (None for a dynamic one); none at all is the model's fault."""
    if length is None:
        return None
    try:
        return spec.window(length, pool.rounding, pool.auto_pad)
    except UsageError as error:
        raise InvalidModelError(f"spatial axis {axis} (length {length}): {error.problem}") from None


def _overhang_possible(axis: WantedAxis) -> bool:
    """Can a wanted window reach past the padded input (ONNX ceil rounding)?"""
    return overhangs(axis) if isinstance(axis, AxisWindow) else overhang_possible(axis)


def fit_rounding(axes: list[WantedAxis], *, full_kernel_divisor: bool, exclude_pad: bool,
                 allow_zero_pads: bool = True, ceil_torch_is_onnx: bool = True) -> IrWindows:
    """IR pads and rounding giving ONNX's ceil_mode=1 windows, for layers whose padding values are inert.

    Inert: MaxPool and exclude-pad AvgPool never read padding (facts 2, 3), and an Lp sum of |x|^p
    gets 0 from it; so the pads only decide how many windows there are. Candidates, plainest first:
    1. rounding_type=ceil with the same pads, when it yields ONNX's count (static: compare counts;
       dynamic: when no length makes ceil keep a window ONNX drops);
    2. static dims: floor with the smallest pads_end giving ONNX's count (still opset1);
    3. rounding_type=ceil_torch (opset14), ONNX's own rule, when ceil_torch_is_onnx (no explicit Pad moved
       where ONNX drops a window).
    OpenVINO refuses a kernel longer than the padded input (fact 7); then only a larger pads_end (candidate
    2) can express the window. full_kernel_divisor (Lp: the AvgPool's divisor is multiplied back by
    prod(k)): additionally needs OpenVINO to divide by prod(k) in every window, true when any pad is
    non-zero or no window leaves the input (fact 4). allow_zero_pads=False skips candidates whose pads are
    all zero.
    """
    begins = tuple(a.pad_begin for a in axes)
    ends = tuple(a.pad_end for a in axes)
    static = [a for a in axes if isinstance(a, AxisWindow)]

    def divisor_ok(pads_end: tuple[int, ...]) -> bool:
        if not full_kernel_divisor or any(begins) or any(pads_end):
            return True
        return not any(_overhang_possible(a) for a in axes)

    kernel_fits_all = all(kernel_fits(spec_of(a), a.length) for a in static)
    ceil_fits = all(spec_of(a).count(a.length, "ceil") == a.output if isinstance(a, AxisWindow)
                    else not keeps_a_window_ceil_torch_drops(a, "ceil") for a in axes)
    pads_ok = allow_zero_pads or any(begins) or any(ends)
    if ceil_fits and kernel_fits_all and divisor_ok(ends) and pads_ok:
        return _fitting_every_length(IrWindows(begins, ends, "ceil", exclude_pad=exclude_pad), axes, divisor_ok)
    if len(static) == len(axes):
        fitted_ends = tuple(smallest_pad_end(spec_of(a), a.length, a.output, "floor") for a in static)
        if None not in fitted_ends:
            # divisor_ok holds: with these pads no window leaves the (extended) padded input.
            return IrWindows(begins, fitted_ends, "floor", exclude_pad=exclude_pad)
    if ceil_torch_is_onnx and kernel_fits_all and divisor_ok(ends) and pads_ok:
        return _fitting_every_length(IrWindows(begins, ends, "ceil_torch", exclude_pad=exclude_pad), axes,
                                     divisor_ok)
    if not divisor_ok(ends):
        raise ConversionError(
            "LpPool with ceil_mode=1, no pads and dynamic spatial dims: OpenVINO's AvgPool divides a window that "
            "reaches past the input by its real taps (fact 4), so the decomposition's sum is exact only for "
            "known lengths; fix the shape with --input-shape")
    raise ConversionError(
        "ceil_mode=1 with dynamic spatial dims: whether ONNX drops the last window depends on the input "
        "length, and no single IR pooling layer follows that for every length; fix the shape with "
        "--input-shape")


def _fitting_every_length(plan: IrWindows, axes: list[WantedAxis], divisor_ok) -> IrWindows:
    """`plan`, or, when on a dynamic axis ONNX's ceil_mode gives a window at a length shorter than the plan's
    padded kernel (fact 7: OpenVINO cannot run it; SqueezeNet's 3x3/2 MaxPools at L = 2), floor rounding with
    pads_end + s - 1 on the dynamic axes (static axes: the smallest floor pads_end giving ONNX's count).

    Floor over pe + s - 1 counts floor((L + pb + pe + s - 1 - ek) / s) + 1 = ceil((L + pb + pe - ek) / s) + 1
    windows, ONNX's ceil count for every L, and its padded extent L + pb + pe + s - 1 reaches the dilated kernel
    at every length ONNX gives a window (L + pb + pe - ek > -s). It is exact while ONNX drops no window, that
    is while ceil keeps none that ceil_torch drops (pe + s - 1 < ek); the extra padding is read by no layer
    fit_rounding serves (inert padding). Worked example: k=3, s=2, no pads, L=2: ONNX 1 window [0, 3) holding
    two elements; floor over pads (0, 1) 1 window, the same.
    """
    dynamic = [(a, AxisSpec(a.kernel, a.stride, a.dilation, begin, end))
               for a, begin, end in zip(axes, plan.pads_begin, plan.pads_end) if isinstance(a, AxisSpec)]
    if all(kernel_fits(ir_axis, shortest_length_with_a_window(a, "ceil")) for a, ir_axis in dynamic):
        return plan
    if any(isinstance(a, AxisSpec) and keeps_a_window_ceil_torch_drops(a, "ceil") for a in axes):
        return plan
    ends = tuple(a.pad_end + a.stride - 1 if isinstance(a, AxisSpec)
                 else smallest_pad_end(spec_of(a), a.length, a.output, "floor") for a in axes)
    if None in ends or not divisor_ok(ends):
        return plan
    return IrWindows(plan.pads_begin, ends, "floor", exclude_pad=plan.exclude_pad)


def check_kernel_fits_every_length(pool: OnnxPool, spatial: Sequence[int | None], plan: IrWindows) -> None:
    """Refuse a dynamic axis on which ONNX accepts a length whose padded extent in the IR is shorter than the
    dilated kernel (fact 7). ONNX's window count grows with the length, so the shortest length it accepts
    with a window is the one to check; an explicit pre_pad lengthens the IR layer's input by its pads."""
    if plan.auto_pad != "explicit":
        return  # SAME pads always cover the dilated kernel
    specs = axis_specs(pool.kernel, pool.strides, pool.dilations, pool.pads_begin, pool.pads_end)
    pre_begin, pre_end = plan.pre_pad or ((0,) * pool.spatial_rank,) * 2
    for axis, (spec, length) in enumerate(zip(specs, spatial)):
        if length is not None:
            continue
        ir_axis = AxisSpec(spec.kernel, spec.stride, spec.dilation, plan.pads_begin[axis] + pre_begin[axis],
                           plan.pads_end[axis] + pre_end[axis])
        shortest = shortest_length_with_a_window(spec, pool.rounding)
        if kernel_fits(ir_axis, shortest):
            continue
        try:
            onnx_window(pool, spec, axis, shortest)
        except InvalidModelError:
            continue  # ONNX has no window at this length either
        raise ConversionError(
            f"spatial axis {axis} is dynamic and ONNX's ceil_mode accepts a length of {shortest}, shorter than the "
            f"dilated kernel {spec.effective_kernel} with pads {ir_axis.pad_begin + ir_axis.pad_end}, which "
            "OpenVINO cannot run; fix the shape with --input-shape")
