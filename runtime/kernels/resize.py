"""Resizing (ONNX Resize and Upsample, OpenVINO Interpolate): nearest, n-linear and cubic sampling, one axis at a time.

Every resized axis maps output position o to a source coordinate x(o) by its coordinate transformation mode, then
reads taps around x(o) with weights. Nearest reads one tap, linear two, cubic four; the weights of n-linear and
n-cubic sampling are products of per-axis weights, so the kernel runs one 1-D pass per resized axis.

The coordinates and weights are computed in float32 with the very formulas of the engine whose world the caller
is in (`world`: "onnx" follows onnxruntime's upsamplebase.h, "ir" follows OpenVINO's CPU plugin), because they
differ where it matters: a nearest source index is a rounding of x(o), and one ulp of x(o) on a .5 or an integer
flips it. The two worlds differ in
- align_corners: onnxruntime computes o * (in - 1) / (out - 1), OpenVINO o * ((in - 1) / (out - 1));
- an axis kept as it is: OpenVINO maps o to o when the scale is 1 or the length stays, onnxruntime when the scale
  is exactly 1 (tf_half_pixel_for_nn would read channel c at c + 0.5), and it copies the input when the whole
  output shape is the input's (2 elements by scale 1.3 stay [5, 7], where the formula reads sources 0, 0).
Values are combined in float32 (float64 for float64 input), so linear and cubic results agree with both engines to
the few ulps their own summation order explains; nearest copies elements and is exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from poolir.ir.budget import check_allocation
from poolir.ir.errors import UsageError

COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                    "tf_half_pixel_for_nn", "tf_crop_and_resize")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")
SAMPLINGS = ("nearest", "linear", "cubic")

_F32 = np.float32


@dataclass(frozen=True)
class AxisResize:
    """How one axis of length `length` becomes `output` long: the float32 scale (output / input, or the scale the
    model gives), the region of interest (tf_crop_and_resize only) and the modes."""

    length: int
    output: int
    scale: float
    coordinate_mode: str
    sampling: str
    nearest_mode: str = "round_prefer_floor"
    cubic_a: float = -0.75
    exclude_outside: bool = False
    roi: tuple[float, float] = (0.0, 1.0)


def source_coordinates(axis: AxisResize, world: str) -> np.ndarray:
    """x(o) for every output position o, float32, as the engine of `world` computes it (module docstring)."""
    o = np.arange(axis.output, dtype=_F32)
    scale, length, out = _F32(axis.scale), _F32(axis.length), _F32(axis.output)
    mode = axis.coordinate_mode
    if world == "ir" and (axis.scale == 1.0 or axis.length == axis.output):
        return o
    if world == "onnx" and axis.scale == 1.0:
        return o
    half = _F32(0.5)
    if mode == "asymmetric":
        return o / scale
    if mode == "half_pixel":
        return (o + half) / scale - half
    if mode == "pytorch_half_pixel":
        return (o + half) / scale - half if axis.output > 1 else np.zeros_like(o)
    if mode == "tf_half_pixel_for_nn":
        return (o + half) / scale
    if mode == "align_corners":
        if axis.output == 1:
            return np.zeros_like(o)
        if world == "ir":
            return o * (_F32(length - 1) / _F32(out - 1))
        return o * (length - 1) / (out - 1)
    if mode == "half_pixel_symmetric":   # onnxruntime mixes float and double here: (o + 0.5) is a double
        adjustment = out / (scale * length)
        offset = length / 2 * (1 - adjustment)
        return (offset + (o.astype(np.float64) + 0.5) / np.float64(scale) - 0.5).astype(_F32)
    if mode == "tf_crop_and_resize":
        start, end = _F32(axis.roi[0]), _F32(axis.roi[1])
        if axis.output == 1:
            return np.full(1, 0.5 * (np.float64(start) + np.float64(end)) * np.float64(length - 1), dtype=_F32)
        return start * (length - 1) + (o * (end - start) * (length - 1)) / (out - 1)
    raise UsageError(f"coordinate transformation mode {mode!r} is not one of {', '.join(COORDINATE_MODES)}")


def nearest_sources(x: np.ndarray, mode: str, downsampling: bool, length: int) -> np.ndarray:
    """The source index of every coordinate x (float32) by `mode`, clamped into [0, length)."""
    if mode == "round_prefer_floor":    # halves go down; otherwise C's round (halves away from zero)
        halves = x == np.trunc(x) + _F32(0.5)
        index = np.where(halves, np.floor(x), _round_half_away(x))
    elif mode == "round_prefer_ceil":
        index = _round_half_away(x)
    elif mode == "floor":
        index = np.floor(x)
    elif mode == "ceil":
        index = np.ceil(x)
    elif mode == "simple":              # Resize-10 and Upsample: ceil when downsampling, else truncation
        index = np.ceil(x) if downsampling else np.trunc(x)
    else:
        raise UsageError(f"nearest mode {mode!r} is not one of {', '.join(NEAREST_MODES)}")
    return np.clip(index, 0, length - 1).astype(np.int64)


def _round_half_away(x: np.ndarray) -> np.ndarray:
    return np.copysign(np.floor(np.abs(x) + _F32(0.5)), x)


def axis_taps(axis: AxisResize, world: str) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """(indices [output, taps], float32 weights [output, taps] or None for nearest, outside [output] bool: x(o)
    lies outside [0, length - 1], where tf_crop_and_resize writes its extrapolation value)."""
    x = source_coordinates(axis, world)
    outside = (x < 0) | (x > axis.length - 1)
    if axis.sampling == "nearest":
        return nearest_sources(x, axis.nearest_mode, axis.scale < 1, axis.length)[:, None], None, outside
    if axis.sampling == "linear":
        clamped = np.clip(x, _F32(0), _F32(axis.length - 1))
        first = np.minimum(clamped.astype(np.int64), axis.length - 1)
        second = np.minimum(first + 1, axis.length - 1)
        w_second = np.abs(clamped - first.astype(_F32))
        w_first = np.abs(clamped - second.astype(_F32))
        same = first == second           # both engines weigh a clamped tap 0.5 twice
        w_first[same], w_second[same] = 0.5, 0.5
        return np.stack([first, second], 1), np.stack([w_first, w_second], 1).astype(_F32), outside
    if axis.sampling == "cubic":
        base = np.floor(x)
        weights = _cubic_weights((x - base).astype(np.float64), axis.cubic_a)
        taps = base.astype(np.int64)[:, None] + np.arange(-1, 3)
        if axis.exclude_outside:         # the weights of taps outside the input are dropped and the rest renormalised
            weights = np.where((taps >= 0) & (taps < axis.length), weights, 0.0)
            weights = weights / weights.sum(axis=1, keepdims=True)
        return np.clip(taps, 0, axis.length - 1), weights.astype(_F32), outside
    raise UsageError(f"mode {axis.sampling!r} is not one of {', '.join(SAMPLINGS)}")


def _cubic_weights(s: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution weights of the taps at distances 1 + s, s, 1 - s, 2 - s (s in [0, 1))."""
    def near(d):
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d):
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.stack([far(s + 1), near(s), near(1 - s), far(2 - s)], 1)


def resize(x: np.ndarray, axes: Sequence[tuple[int, AxisResize]], world: str, extrapolation: float = 0.0) -> np.ndarray:
    """x resampled along each (axis, AxisResize); other axes are kept. Linear and cubic need a floating input."""
    shape = list(x.shape)
    for axis, plan in axes:
        shape[axis] = plan.output
    check_allocation(shape, x.itemsize, "the resized output")
    if world == "onnx" and list(x.shape) == shape:
        return x.copy()
    acc = np.float64 if x.dtype == np.float64 else _F32
    sampled = any(plan.sampling != "nearest" for _, plan in axes)
    if sampled and x.dtype.kind not in "fV":   # bfloat16 is kind V in numpy
        raise UsageError(f"{'/'.join(sorted({p.sampling for _, p in axes} - {'nearest'}))} resizing needs a floating "
                         f"input, got {x.dtype}")
    y = x.astype(acc) if sampled else x
    masks = []
    for axis, plan in axes:
        indices, weights, outside = axis_taps(plan, world)
        if weights is None and not outside.any() and np.array_equal(indices[:, 0], np.arange(plan.length)):
            continue        # a nearest axis read at o: no copy. Linear and cubic axes never skip: 0 * inf is NaN.
        if plan.coordinate_mode == "tf_crop_and_resize" and outside.any():
            masks.append((axis, outside))
        if weights is None:
            y = np.take(y, indices[:, 0], axis=axis)
            continue
        along_axis = (1,) * axis + (plan.output,) + (1,) * (y.ndim - axis - 1)
        total = None
        taps = indices.shape[1]                  # 2 (linear) or 4 (cubic)
        for tap in range(taps):
            term = np.take(y, indices[:, tap], axis=axis)
            term *= weights[:, tap].astype(acc).reshape(along_axis)
            total = term if total is None else np.add(total, term, out=total)
        y = total
    if y is x:
        return x.copy()     # every axis skipped: the result is still a tensor of its own
    y = y if y.dtype == x.dtype else y.astype(x.dtype)
    for axis, outside in masks:     # y is a fresh array here
        y[(slice(None),) * axis + (outside,)] = extrapolation
    return y


def same_sampling(onnx_axis: AxisResize, ir_axis: AxisResize) -> bool:
    """Whether an axis samples alike in both worlds (what a conversion must keep): the same output length and taps;
    nearest sources exactly, linear and cubic coordinates within a few float32 ulps (their weights then differ by
    as much, which is the summation-order agreement the engines have between themselves)."""
    if onnx_axis.output != ir_axis.output or onnx_axis.sampling != ir_axis.sampling:
        return False
    if onnx_axis.sampling == "nearest":
        return np.array_equal(axis_taps(onnx_axis, "onnx")[0], axis_taps(ir_axis, "ir")[0])
    if (onnx_axis.sampling == "linear" and onnx_axis.length == ir_axis.length == 1
            and "tf_crop_and_resize" not in (onnx_axis.coordinate_mode, ir_axis.coordinate_mode)):
        return True  # both taps are the one element, whatever the coordinate (an image of height 1 at 1.5x)
    onnx_x, ir_x = source_coordinates(onnx_axis, "onnx"), source_coordinates(ir_axis, "ir")
    return bool(np.allclose(onnx_x, ir_x, rtol=4e-7, atol=4e-7 * max(1, onnx_axis.length)))


def run_time_length_problem(sampling: str, coordinate_mode: str) -> str | None:
    """Why an axis whose lengths are known only at run time may sample differently in the two worlds, or None. Both
    read such an axis at the same scale (k, or output / input) with one coordinate formula, except align_corners:
    o * (in - 1) / (out - 1) against o * ((in - 1) / (out - 1)), an ulp apart, which can move a nearest source
    (linear and cubic weights move by as much, the agreement same_sampling accepts)."""
    if sampling == "nearest" and coordinate_mode == "align_corners":
        return ("nearest align_corners with lengths known only at run time: the two worlds' coordinates are ulps "
                "apart, which can move a source; --input-shape can fix the shape")
    return None


__all__ = ["AxisResize", "COORDINATE_MODES", "NEAREST_MODES", "SAMPLINGS", "axis_taps", "nearest_sources", "resize",
           "run_time_length_problem", "same_sampling", "source_coordinates"]
