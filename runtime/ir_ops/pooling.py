"""IR pooling layers (AvgPool, MaxPool) -> the pooling kernels: what OpenVINO computes for them.

The IR is OpenVINO's format, so an IR pooling layer means what OpenVINO 2026.4's CPU plugin computes
for it (run through tests/peers.py `openvino_run_xml`, f32 inference precision), not what the ONNX
operators mean. Every rule below was found by running OpenVINO and is pinned by
tests/runtime/test_ir_pooling_vs_openvino.py; the evidence (an input and OpenVINO's output) sits next
to the code that implements the rule. In short:

Geometry (implemented once, by `ir.ops.pooling.pool_windows_of`, which IR shape inference uses too):
  G1 explicit pads: out = floor/ceil((L + pb + pe - ek) / s) + 1; `ceil` keeps a last window that starts
     in (or past) the right padding, `ceil_torch` drops it.
  G2 same_upper / same_lower: pads from `ir.geometry.same_pads`, but the layer's rounding_type still
     applies: L=6, k=1, s=4, same_upper, ceil gives 3 outputs, not ceil(6/4) = 2.
  G3 valid: pads (0, 0) with the layer's rounding: L=6, k=1, s=4, ceil gives 3 outputs.
  G4 with auto_pad other than explicit the pads_begin/pads_end attributes are ignored.
  Evidence: x = 1..6, k=1, s=4 with same_upper, same_lower or valid (pads 1, 1 given): ceil -> [1, 5, 0]
  for AvgPool and [1, 5, -3.4e38] for MaxPool (3 outputs, the last window starts at 8), ceil_torch and
  floor -> 2 outputs; x = ones(6), k=3, s=2, valid, pads (1, 1), ceil -> [1, 1, 1] (pads ignored).
AvgPool divisor (`AvgPoolOp`):
  A1 exclude-pad=true: the number of real input taps.
  A2 exclude-pad=false and some resolved pad (any axis, begin or end) is non-zero: the full kernel
     volume, on every axis, even for taps past the padded extent (ceil overhang) and even on an axis
     whose own pads are zero.
  A3 exclude-pad=false and every resolved pad is zero: the number of real taps (a ceil overhang is
     not counted).
  A4 a window with no real tap gives 0 under A2 and 0/c under A1/A3, where c is OpenVINO's per-axis
     count product: a count of 0 (a window starting exactly at L, or dilated taps that skip the input)
     gives NaN, a negative count (a window starting past L: count (L - start) / dilation, truncated)
     gives -0.
  A5 exclude-pad=true with a pad >= the dilated kernel is refused (ir/infer.py rule 5, as OpenVINO does).
  A6 integer inputs: the average is computed in float32 and rounded half to even.
MaxPool (`MaxPoolOp`):
  M1 the running maximum starts at a floor value and a tap replaces it only when strictly greater:
     NaN never wins, -inf never wins, a tap equal to the floor never wins. The floor is float32's
     lowest finite value (f32, f64), -inf for f16, bfloat16's lowest finite for bf16, iinfo.min for
     i8 (so -128) and 0 for u8, int32's min for i32 and i64.
  M2 a window where no tap beat the floor outputs the floor, and its index is that of the first
     spatial element (all spatial coordinates 0) of its own (n, c) slab, in the `axis` layout.
  M3 indices are row-major flat positions over the axes from `axis` (negative counts from the end)
     to the last; ties go to the first tap in row-major scan order of the window.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import ml_dtypes
import numpy as np

from poolir.ir.errors import InvalidModelError, UnsupportedError, UsageError
from poolir.ir.geometry import AxisWindow
from poolir.ir.ops.pooling import pool_windows_of
from poolir.ir.model import Layer
from poolir.runtime.ir_ops.registry import LayerFn, LayerInfo, builder, int_list
from poolir.runtime.kernels.adaptive_pool import adaptive_avg_pool, adaptive_max_pool
from poolir.runtime.kernels.pooling import IndexLayout, avg_pool, max_pool
from poolir.runtime.kernels.precision import is_float

# --------------------------------------------------------------------------------------------------
# Attributes: the IR package's schema (ir/schema.py) selects the op version, types every attribute and
# checks its allowed values when the model is validated (runtime.ir_executor.IRProgram validates every
# model it runs), so this module reads them as they are.
# --------------------------------------------------------------------------------------------------

INDEX_TYPES = {"i32": np.dtype(np.int32), "i64": np.dtype(np.int64)}


class _WindowCache:
    """Windows depend only on the spatial input dims: resolve them once per distinct input shape.

    The windows are `ir.ops.pooling.pool_windows_of`, the one implementation of OpenVINO's geometry (rules
    G1-G4), shared with IR shape inference.
    """

    def __init__(self, layer: Layer):
        self.layer = layer
        self.rank = len(layer.attrs["kernel"])  # spatial axes
        self._cache: dict[tuple[int, ...], Any] = {}

    def get(self, spatial: tuple[int, ...], build: Callable[[tuple[AxisWindow, ...]], Any]):
        entry = self._cache.get(spatial)
        if entry is None:
            entry = build(pool_windows_of(self.layer, spatial))
            self._cache[spatial] = entry
        return entry


def _spatial_of(x: np.ndarray, rank: int) -> tuple[int, ...]:
    if x.ndim < rank + 2:
        raise UsageError(f"input of shape {list(x.shape)} has rank {x.ndim}; a {rank}-D pool needs rank "
                         f"{rank + 2} (batch, channels, {rank} spatial axes)")
    return tuple(x.shape[x.ndim - rank:])


# --------------------------------------------------------------------------------------------------
# AvgPool
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _AvgPlan:
    windows: tuple[AxisWindow, ...]
    divisor: str
    # A4: for windows without a real tap under a "real" divisor, the value OpenVINO writes there
    # (NaN, -0.0 or 0.0 over the spatial output grid) and where; None when every window has a real tap.
    empty_fill: np.ndarray | None
    empty_mask: np.ndarray | None


class AvgPoolOp:
    """AvgPool-1/14/16: one callable per layer, x -> (y,)."""

    def __init__(self, layer: Layer):
        self.exclude_pad = layer.attrs["exclude-pad"]
        self._cache = _WindowCache(layer)

    def _plan(self, windows: tuple[AxisWindow, ...]) -> _AvgPlan:
        any_pad = any(w.pad_begin or w.pad_end for w in windows)
        # A1/A2/A3. Evidence (ones input, 1/y shown = divisor / real taps):
        #   L=5, k=3, s=2, pads (0, 1), ceil, exclude-pad=false: [1, 1, 3]: the last window (taps 4, 5, 6)
        #   has 1 real tap and divisor 3 = kernel, though tap 6 is past the padded extent [0, 6).
        #   L=6, k=3, s=2, pads (0, 0), ceil: [1, 1, 1]: last window (taps 4, 5, 6) divided by 2 real taps.
        #   6x6, k=3x3, s=2x2, pads_begin (1, 0), pads_end (0, 0), ceil: corner [0, 2] gives 1/y = 2.25:
        #   4 real taps / 9: the full kernel on axis 1 too, whose own pads are zero.
        divisor = "kernel" if (not self.exclude_pad and any_pad) else "real"
        empty_fill = empty_mask = None
        if divisor == "real" and any((w.real_taps() == 0).any() for w in windows):
            empty_fill, empty_mask = _openvino_empty_average(windows)
        return _AvgPlan(windows, divisor, empty_fill, empty_mask)

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray]:
        plan = self._cache.get(_spatial_of(x, self._cache.rank), self._plan)
        if x.dtype.kind in "iu":
            # A6: u8 [2, 3] -> 2, [1, 2] -> 2, i8 [-2, -3] -> -2, [-1, -2] -> -2: float average, rounded
            # half to even.
            y = avg_pool(x.astype(np.float32), plan.windows, divisor=plan.divisor)
            if plan.empty_mask is not None:
                np.copyto(y, np.nan_to_num(plan.empty_fill), where=plan.empty_mask)
            return (np.rint(y).astype(x.dtype),)
        y = avg_pool(x, plan.windows, divisor=plan.divisor)
        if plan.empty_mask is not None:
            np.copyto(y, plan.empty_fill.astype(y.dtype), where=plan.empty_mask)
        return (y,)


def _openvino_empty_average(windows: tuple[AxisWindow, ...]) -> tuple[np.ndarray, np.ndarray]:
    """A4: the value of windows without a real tap when OpenVINO divides by its real-tap count.

    OpenVINO's count on an axis is the real-tap count, or `(L - start) / dilation` truncated toward zero for
    a window starting at or past L (0 or negative), and the divisor is the product over axes; the sum is 0, so
    the window is 0 / product: NaN, -0.0 or +0.0. Evidence: x = 1..4, k=2, s=2, pads (0, 1), ceil,
    exclude-pad=true -> [1.5, 3.5, nan] (start 4 = L); x = 1..6, k=1, s=4, valid, ceil -> [1, 5, -0.] (start 8,
    count -2; with dilation 2 count -1, -0.; with dilation 3 count 0, nan, AvgPool-16);
    the same in 2-D gives +0 in the corner ((-2) * (-2) = 4); x = [1], k=2, d=3, pads (2, 2),
    exclude-pad=true -> [nan, nan] (taps -2, 1 and -1, 2: count 0).
    """
    rank = len(windows)
    counts, empties = [], []
    for k, w in enumerate(windows):
        real = w.real_taps()
        starts = w.starts()
        # C++ integer division: (L - start) / d truncates toward zero
        past = np.trunc((w.length - starts) / w.dilation)
        count = np.where(real > 0, real, np.where(starts >= w.length, past, 0))
        shape = (-1,) + (1,) * (rank - 1 - k)
        counts.append(count.astype(np.float64).reshape(shape))
        empties.append((real == 0).reshape(shape))
    product = counts[0]
    mask = empties[0]
    for count, empty in zip(counts[1:], empties[1:]):
        product = product * count
        mask = mask | empty
    with np.errstate(divide="ignore", invalid="ignore"):
        fill = np.float64(0.0) / product
    out_shape = tuple(w.output for w in windows)
    return np.broadcast_to(fill, out_shape).copy(), np.broadcast_to(mask, out_shape).copy()


# --------------------------------------------------------------------------------------------------
# MaxPool
# --------------------------------------------------------------------------------------------------


def openvino_max_floor(dtype: np.dtype):
    """M1: the value OpenVINO's running maximum starts from (and outputs for a window nothing beat).

    Evidence: a window entirely in the padding gives -3.4028235e+38 for f32 and f64 inputs, -inf for
    f16, -3.3895314e+38 (bfloat16's lowest) for bf16, -128 for i8, 0 for u8, -2147483648 for i32 and
    for i64 (the CPU plugin runs i64 as i32).
    """
    dtype = np.dtype(dtype)
    if dtype == np.float16:
        return dtype.type(-np.inf)
    if dtype == np.dtype(ml_dtypes.bfloat16):
        return dtype.type(-float(ml_dtypes.finfo(ml_dtypes.bfloat16).max))
    if dtype.kind == "f":
        return dtype.type(np.finfo(np.float32).min)
    if dtype in (np.int8, np.uint8):
        return dtype.type(np.iinfo(dtype).min)
    if dtype.kind in "iu":
        return dtype.type(max(np.iinfo(dtype).min, np.iinfo(np.int32).min))
    raise UnsupportedError(f"MaxPool of element type {dtype} is not supported")


def openvino_min_ceiling(dtype: np.dtype):
    """The mirror of `openvino_max_floor`: what OpenVINO's running minimum starts from, and so what ReduceMin
    gives over an empty axis: 3.4028235e+38 for f32 and f64, inf for f16, bfloat16's largest for bf16, 127 for
    i8, 255 for u8, 2147483647 for i32 and for i64 (OpenVINO 2026.4 CPU, the same evidence as the floor)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return dtype.type(min(np.iinfo(dtype).max, np.iinfo(np.int32).max))
    return dtype.type(-openvino_max_floor(dtype))


class MaxPoolOp:
    """MaxPool-1/8/14: one callable per layer, x -> (y,) or (y, indices)."""

    def __init__(self, layer: Layer, *, want_indices: bool):
        # MaxPool-8 and later have a second output with the argmax indices, `axis` and `index_element_type`.
        self.has_indices = "index_element_type" in layer.attrs
        self.want_indices = want_indices and self.has_indices
        self.axis = layer.attrs.get("axis", 0)
        self.index_dtype = INDEX_TYPES[layer.attrs.get("index_element_type", "i64")]
        self._cache = _WindowCache(layer)

    def _flatten_from(self, rank: int) -> int:
        # M3: evidence: x of shape (2, 3, 3, 4): axis=0 -> indices over the whole tensor (n*36 + c*12 + ...),
        # axis=1 -> over (C, H, W), axis=2 or -2 -> over (H, W), axis=3 or -1 -> the W coordinate alone;
        # axis 4 or -5 is refused by OpenVINO ("is_axis_valid").
        if not -rank <= self.axis < rank:
            raise InvalidModelError(f"attribute 'axis' = {self.axis} is out of range for an input of rank {rank}")
        return self.axis % rank

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray, ...]:
        rank = self._cache.rank
        windows = self._cache.get(_spatial_of(x, rank), lambda w: w)
        floor = openvino_max_floor(x.dtype)
        layout = None
        if self.want_indices:
            layout = IndexLayout(dtype=self.index_dtype, flatten_from=self._flatten_from(x.ndim))
        result = max_pool(x, windows, indices=layout, empty_value=floor)
        y, idx = result if layout is not None else (result, None)
        if is_float(x.dtype):
            if np.isnan(y).any():
                # M1: NaN never wins: x = [nan, 1, nan, nan, 2], k=2, s=1 -> [1, 1, -3.4e38, 2] with indices
                # [1, 1, 0, 4]. Recompute with NaN replaced by the floor (rare: only when a NaN is present).
                cleaned = np.where(np.isnan(x), floor, x)
                result = max_pool(cleaned, windows, indices=layout, empty_value=floor)
                y, idx = result if layout is not None else (result, None)
            # M1: -inf (below the floor) never wins: x = [-inf, -inf, 1], k=2, pads (1, 0) -> [-3.4e38, -3.4e38, 1].
            np.maximum(y, floor, out=y)
        if idx is None:
            return (y,)
        at_floor = y == floor
        if at_floor.any():
            # M2: evidence: x = -(1..16) of shape (2, 2, 4), k=2, s=2, pads (0, 1), ceil: the all-padding
            # windows report [0, 4, 8, 12] with axis=0 (each slab's first element) and 0 with axis=2;
            # u8 zeros (equal to the floor 0) report the slab origin too, not their own position.
            np.copyto(idx, _slab_origins(x.shape, rank, self._flatten_from(x.ndim), idx.dtype), where=at_floor)
        return (y, idx)


def _slab_origins(dims: tuple[int, ...], spatial_rank: int, flatten_from: int, dtype: np.dtype) -> np.ndarray:
    """Flat index (in the `flatten_from` layout) of element (n, c, 0, ..., 0) for every leading position,
    shaped to broadcast against the output."""
    leading = dims[: len(dims) - spatial_rank]
    origin = np.zeros(leading, dtype=np.int64)
    stride = 1
    for axis in range(len(dims) - 1, -1, -1):  # over the axes, last first
        if axis < len(leading) and axis >= flatten_from:
            coords = np.arange(dims[axis], dtype=np.int64).reshape((-1,) + (1,) * (len(leading) - 1 - axis))
            origin = origin + coords * stride
        stride *= dims[axis]
    return origin.reshape(leading + (1,) * spatial_rank).astype(dtype)


# --------------------------------------------------------------------------------------------------
# Builders
# --------------------------------------------------------------------------------------------------

@builder("AvgPool")
def _avg_pool(info: LayerInfo) -> LayerFn:
    op = AvgPoolOp(info.layer)
    return lambda args: op(args[0])


@builder("MaxPool")
def _max_pool(info: LayerInfo) -> LayerFn:
    op = MaxPoolOp(info.layer, want_indices=1 in info.used_outputs)
    if op.has_indices and not op.want_indices:
        # The index output is not consumed: do not compute it, but keep the port filled with a
        # placeholder so the plan stays uniform.
        return lambda args: (*op(args[0]), None)
    return lambda args: op(args[0])


@builder("AdaptiveAvgPool")
def _adaptive_avg_pool(info: LayerInfo) -> LayerFn:
    return lambda args: (adaptive_avg_pool(args[0], int_list(args[1], "the output shape")),)


@builder("AdaptiveMaxPool")
def _adaptive_max_pool(info: LayerInfo) -> LayerFn:
    # Indices count positions in each (n, c) slab, flattened over the spatial axes (kernels.adaptive_pool).
    index_dtype = INDEX_TYPES[info.layer.attrs["index_element_type"]]
    return lambda args: adaptive_max_pool(args[0], int_list(args[1], "the output shape"), index_dtype)


__all__ = ["AvgPoolOp", "MaxPoolOp", "openvino_max_floor", "openvino_min_ceiling"]
