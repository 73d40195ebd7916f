"""The ONNX pooling attributes that reproduce OpenVINO's windows for an AvgPool/MaxPool layer, or a refusal.

OpenVINO's windows come from ir.ops.pooling.pool_windows_of; the facts about how OpenVINO pools are listed in
onnx_to_ir/pooling.py (the same facts, read in the other direction). The rules:
- rounding: OpenVINO's window count N per axis is matched by ceil_mode=0 (N = floor count), by
  ceil_mode=1 (N = ceil_torch count, from the opset with ceil_mode), or, where only the padding values are
  inert (MaxPool, exclude-pad AvgPool, an Lp sum), by another pads_end chosen so that floor (or
  ceil_mode=1) gives N; among these, the first whose pads are all < kernel (onnxruntime refuses larger
  pads, the spec does not);
- AvgPool exclude-pad=false divides by prod(k) when any pad is non-zero: count_include_pad=1 when no
  window reaches past the padded input, else an explicit zero Pad that puts every window inside
  (count_include_pad=0 then divides by prod(k) too); with all pads zero it divides by the real taps:
  count_include_pad=0;
- a MaxPool window without any input element outputs OpenVINO's floor value (f32: its lowest finite
  value): an explicit Pad of that value, then a MaxPool without pads, reproduces it; with the indices
  used it is refused (the Pad would shift them), and so is an exclude-pad AvgPool window without an
  input element (0/0);
- pads >= kernel that no candidate avoids (dilated taps make them possible without an empty window):
  an explicit Pad, then a pool without pads: zeros for exclude-pad=false, zeros and a constant
  prod(k) / real-taps factor for exclude-pad AvgPool (real_taps), -inf for MaxPool with indices (the
  converter maps the padded flat indices back), MaxPool's floor value without them;
- dynamic spatial dims, where the padding values are the pool's own (exclude-pad=false zeros, MaxPool's
  floor without indices) and ONNX pads cannot hold OpenVINO's windows (a ceil overhang, a kept window of
  padding, pads >= kernel): _dynamic_cover, an explicit Pad valid for every length.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from poolir.converter.ir_to_onnx.context import Context
from poolir.converter.ir_to_onnx.opsets import first_opset_where
from poolir.ir.errors import ConversionError, InvalidModelError, UsageError
from poolir.ir.geometry import (AxisWindow, axis_specs, covering_pad_end, keeps_a_window_ceil_torch_drops,
                                overhang_possible, overhangs, rounding_matters_with_same_pads, smallest_pad_end,
                                spec_of)
from poolir.ir.ops.pooling import pool_windows_of
from poolir.ir.model import Layer
from poolir.runtime.onnx_ops import first_opset_with


@dataclass(frozen=True, slots=True)
class OnnxWindows:
    """ONNX pooling attributes reproducing OpenVINO's windows, plus an explicit zero Pad when needed."""

    pads_begin: tuple[int, ...]
    pads_end: tuple[int, ...]
    ceil_mode: int
    auto_pad: str = "NOTSET"
    count_include_pad: int = 0
    pre_pad_end: tuple[int, ...] | None = None  # Pad(begin = pads_begin, end = this), then no pool pads
    # with pre_pad_end, an AveragePool whose divisor is the real taps: per spatial axis, the count per output
    # position (their product is the window's), to turn the padded pool's prod(k) divisor into it
    real_taps: tuple[np.ndarray, ...] | None = field(default=None, compare=False)
    same_at_run_time: str | None = None  # same_upper/same_lower: Pad by the SAME pads of the runtime lengths
    trim_ceil_torch: bool = False  # then Slice each spatial axis to ceil((L + pb) / s) windows (dynamic L)


def pool_geometry(context: Context, layer: Layer, op_type: str, *, inert_padding: bool, full_kernel_divisor: bool,
                  fill_empty_windows: bool = False) -> OnnxWindows:
    """ONNX windows for an AvgPool/MaxPool layer written as the ONNX `op_type`, by the rules above.

    inert_padding: only the number of windows depends on the pads (MaxPool, exclude-pad AvgPool, and
    an Lp sum). full_kernel_divisor: the layer is an exclude-pad=false AvgPool (divides by prod(k) when
    a pad is non-zero). fill_empty_windows: a window wholly in the padding may be made exact with an
    explicit Pad of the value OpenVINO outputs there (MaxPool without indices); otherwise such a window
    is refused.
    """
    ceil_since = first_opset_with(op_type, "ceil_mode")
    ceil_allowed = ceil_since is not None and context.opset >= ceil_since
    attrs = layer.attrs
    spatial = [dim.value for dim in context.input_info(layer, 0).shape[2:]]
    rank = len(spatial)
    if all(length is not None for length in spatial):
        try:
            windows = pool_windows_of(layer, spatial)
        except UsageError as error:
            raise InvalidModelError(error.problem) from None
        return _static_geometry(windows, inert_padding, full_kernel_divisor, ceil_allowed, fill_empty_windows,
                                op_type == "AveragePool")
    # Dynamic spatial dims: the geometry must be right for every length.
    rounding = attrs["rounding_type"]
    auto_pad = attrs["auto_pad"]  # the schema allows explicit, same_upper, same_lower, valid
    if auto_pad in ("same_upper", "same_lower"):
        # OpenVINO resolves SAME pads, then rounds (ir/infer.py rule 2), which ONNX SAME does not.
        specs = axis_specs(attrs["kernel"], attrs["strides"], attrs.get("dilations"))
        if rounding != "floor" and any(rounding_matters_with_same_pads(spec) for spec in specs):
            raise ConversionError("auto_pad same_* with rounding_type ceil, a kernel smaller than its stride and "
                                  "dynamic spatial dims: the window count differs from ONNX SAME for some lengths")
        # SAME windows lie inside the padded input: both divisors are prod(k) (fact 4 in onnx_to_ir/pooling.py).
        pad_since = first_opset_where("Pad", lambda row: "pads" not in row.attributes)
        if (full_kernel_divisor or fill_empty_windows) and any(spec.dilation != 1 for spec in specs) and \
                context.opset >= pad_since:
            # onnxruntime computes SAME pads without the dilation (onnxruntime_gaps.py): where the padding values
            # are the pool's own, the spec's pads from the runtime lengths as an explicit Pad hold for every runtime.
            return OnnxWindows((0,) * rank, (0,) * rank, 0, same_at_run_time=auto_pad)
        return OnnxWindows((0,) * rank, (0,) * rank, 0, auto_pad.upper(), count_include_pad=int(full_kernel_divisor))
    explicit = auto_pad != "valid"
    specs = axis_specs(attrs["kernel"], attrs["strides"], attrs.get("dilations"),
                       attrs["pads_begin"] if explicit else None, attrs["pads_end"] if explicit else None)
    pads_begin = tuple(spec.pad_begin for spec in specs)
    pads_end = tuple(spec.pad_end for spec in specs)
    padded = any(pads_begin) or any(pads_end)
    include = int(full_kernel_divisor and padded)
    # Where the padding values are the pool's own (include-pad zeros, MaxPool's floor), an explicit Pad covers
    # what ONNX pads cannot: a ceil overhang (OpenVINO divides by prod(k) there), a kept window of padding,
    # and pads >= kernel (onnxruntime refuses those, the spec does not).
    big_pads = any(b >= spec.kernel or e >= spec.kernel for b, e, spec in zip(pads_begin, pads_end, specs))
    if include and (big_pads or rounding != "floor" and any(
            overhang_possible(spec) or keeps_a_window_ceil_torch_drops(spec, rounding) for spec in specs)):
        return _dynamic_cover(specs, rounding)
    if fill_empty_windows and (big_pads or any(keeps_a_window_ceil_torch_drops(spec, rounding) for spec in specs)):
        return _dynamic_cover(specs, rounding)
    if big_pads:
        # Not covered by a Pad (MaxPool's indices count real elements only): ONNX pads this large leave windows
        # of padding alone for some lengths, which OpenVINO fills with its own value (and index), and
        # onnxruntime refuses them.
        raise ConversionError(f"pads_begin {list(pads_begin)} / pads_end {list(pads_end)} not smaller than the "
                              f"kernel {[spec.kernel for spec in specs]} with dynamic spatial dims: some windows may "
                              f"hold only padding, which ONNX pads cannot express exactly")
    if rounding == "floor":
        return OnnxWindows(pads_begin, pads_end, 0, count_include_pad=include)
    if not ceil_allowed and rounding != "floor":
        raise ConversionError(f"rounding_type={rounding} with dynamic spatial dims needs ceil_mode, which this "
                              f"ONNX op has from opset {ceil_since} (requested opset {context.opset})")
    if any(keeps_a_window_ceil_torch_drops(spec, rounding) for spec in specs):
        raise ConversionError("rounding_type=ceil with dynamic spatial dims: for some lengths OpenVINO keeps a last "
                              "window that starts in the right padding, which ONNX ceil_mode drops")
    return OnnxWindows(pads_begin, pads_end, 1, count_include_pad=include)


def _dynamic_cover(specs, rounding: str) -> OnnxWindows:
    """Windows for dynamic lengths where the padding values are the pool's own (zeros that OpenVINO divides by
    prod(k), or MaxPool's floor value): Pad by (pb, pe + s - 1), then floor without pads. floor over
    L + pb + pe + s - 1 gives ceil((L + pb + pe - ek) / s) + 1 windows, OpenVINO's `ceil` count, each inside the
    padded tensor; ceil_torch then drops a last window starting at or past L + pb: Slice to
    ends = ceil((L + pb) / s) windows, the count of starts before L + pb (trim_ceil_torch). That slice drops at
    most that one window when pe <= ek: the one before it starts below span = L + pb + pe - ek <= L + pb.

    Worked example: k=3, s=2, pads (1, 1), L=6, ceil_torch: Pad to 1 + 6 + 2 = 9, floor gives 4 windows
    (starts 0, 2, 4, 6 padded), ceil((6 + 1) / 2) = 4 kept; L=5: Pad to 8, 3 windows, ceil(6 / 2) = 3 kept.
    """
    if rounding == "ceil_torch" and any(spec.pad_end > spec.effective_kernel for spec in specs):
        raise ConversionError("rounding_type=ceil_torch with pads_end larger than the dilated kernel and dynamic "
                              "spatial dims: not converted (OpenVINO then keeps windows of padding alone, which "
                              "needs a runtime window count this converter does not write)")
    ceil = rounding != "floor"
    return OnnxWindows(tuple(spec.pad_begin for spec in specs), tuple(spec.pad_end for spec in specs), 0,
                       pre_pad_end=tuple(spec.pad_end + (spec.stride - 1 if ceil else 0) for spec in specs),
                       trim_ceil_torch=rounding == "ceil_torch")


def _static_geometry(windows: tuple[AxisWindow, ...], inert_padding: bool, full_kernel_divisor: bool,
                     ceil_allowed: bool, fill_empty_windows: bool, average: bool) -> OnnxWindows:
    begins = tuple(w.pad_begin for w in windows)
    ends = tuple(w.pad_end for w in windows)
    padded = any(begins) or any(ends)
    empty_windows = any(not w.real_taps().all() for w in windows)
    # The smallest pads_end giving OpenVINO's count with floor when the last window ends in the input or
    # its padding; inert padding only decides the count.
    covering = tuple(covering_pad_end(w) for w in windows)
    if fill_empty_windows and empty_windows:
        # Pad explicitly as far as the windows reach, with the value OpenVINO outputs for a window nothing
        # beats; then every window is a whole ONNX window, and one of padding gives exactly that value.
        return OnnxWindows(begins, covering, 0, pre_pad_end=covering)
    if (inert_padding or full_kernel_divisor and not padded) and empty_windows:
        raise ConversionError("a window holds no input element, only padding: OpenVINO gives the lowest value "
                              "(MaxPool) or 0/0 (AvgPool) there, which no ONNX pooling node reproduces")
    if full_kernel_divisor and padded:
        if any(overhangs(w) for w in windows):
            # OpenVINO divides by prod(k) even past the padded input: pad with zeros so far that every
            # window lies inside, then every ONNX divisor is prod(k) too.
            return OnnxWindows(begins, ends, 0, pre_pad_end=tuple(w.end_reach for w in windows))
        # No window leaves the padded input, so ONNX counts prod(k) too; floor gives OpenVINO's count once
        # pads_end is trimmed to what the windows reach (a pad_end >= the kernel lets floor keep a window wholly
        # in the right padding that ceil_torch drops: L=1, k=1, pads (0, 1), ceil_torch -> 1 window, floor 2).
        if _runs_on_onnxruntime(windows, begins, covering):
            return OnnxWindows(begins, covering, 0, count_include_pad=1)
        # onnxruntime refuses pads >= kernel: the same zeros as an explicit Pad, every window inside it.
        return OnnxWindows(begins, covering, 0, pre_pad_end=covering)
    # The padding is inert from here on (include-pad layers with pads returned above; without pads
    # OpenVINO's exclude-pad=false divides by the real taps, like count_include_pad=0).
    candidates = []
    if all(spec_of(w).count(w.length, "floor") == w.output for w in windows):
        candidates.append(OnnxWindows(begins, ends, 0))
    if ceil_allowed and all(spec_of(w).count(w.length, "ceil_torch") == w.output for w in windows):
        candidates.append(OnnxWindows(begins, ends, 1))
    candidates.append(OnnxWindows(begins, covering, 0))
    # ... and the smallest pads_end giving it with ceil_mode=1, when every axis has one.
    smallest = tuple(smallest_pad_end(spec_of(w), w.length, w.output, "ceil_torch") for w in windows)
    if ceil_allowed and None not in smallest:
        candidates.append(OnnxWindows(begins, smallest, 1))
    # onnxruntime refuses pads >= kernel ("Pad should be smaller than kernel"), which the spec allows:
    # prefer a candidate it runs.
    for candidate in candidates:
        if _runs_on_onnxruntime(windows, candidate.pads_begin, candidate.pads_end):
            return candidate
    # None does: pad explicitly (with a value no window's result can come from: MaxPool's floor, or zeros
    # for the sums of AveragePool, whose divisor the converter then corrects from prod(k) to the real taps).
    real_taps = tuple(w.real_taps() for w in windows) if average else None
    return OnnxWindows(begins, covering, 0, pre_pad_end=covering, real_taps=real_taps)


def _runs_on_onnxruntime(windows: tuple[AxisWindow, ...], begins, ends) -> bool:
    """onnxruntime refuses a pool pad >= kernel_shape ("Pad should be smaller than kernel"); the spec does not."""
    return all(b < w.kernel and e < w.kernel for b, e, w in zip(begins, ends, windows))


def pool_attributes(context: Context, layer: Layer, geometry: OnnxWindows, op_type: str) -> dict:
    """The ONNX attributes of the pooling node, refused when the requested opset cannot hold them."""
    attrs = layer.attrs
    dilations = tuple(spec.dilation for spec in axis_specs(attrs["kernel"], attrs["strides"], attrs.get("dilations")))
    onnx_attrs: dict = {"kernel_shape": list(attrs["kernel"]), "strides": list(attrs["strides"])}
    if geometry.auto_pad != "NOTSET":
        onnx_attrs["auto_pad"] = geometry.auto_pad
    elif geometry.pre_pad_end is not None or geometry.same_at_run_time is not None:
        # After an explicit Pad the pool has no pads and floor rounding, which VALID states. Written as VALID, not
        # as absent pads: onnxruntime's PadFusion (graph optimisation level 1, on by default) folds a zero Pad into
        # a following pool with explicit padding, without checking that the pads stay below the kernel (then it
        # refuses the model) or that count_include_pad counts them (then it changes the divisor); it leaves a pool
        # with auto_pad other than NOTSET alone (onnxruntime/core/optimizer/pad_fusion.cc).
        onnx_attrs["auto_pad"] = "VALID"
    elif any(geometry.pads_begin) or any(geometry.pads_end):
        onnx_attrs["pads"] = [*geometry.pads_begin, *geometry.pads_end]
    if geometry.ceil_mode:
        since = first_opset_with(op_type, "ceil_mode")
        context.check_opset(since, f"OpenVINO's window count needs ceil_mode, which {op_type} has from opset {since}")
        onnx_attrs["ceil_mode"] = 1
    if any(d != 1 for d in dilations):
        since = first_opset_with(op_type, "dilations")
        context.check_opset(since, f"dilations {list(dilations)}: {op_type} has dilations from opset {since}")
        onnx_attrs["dilations"] = list(dilations)
    return onnx_attrs
