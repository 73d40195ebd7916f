"""ONNX Resize (10, 11, 13, 18, 19) and Upsample (7, 9): version rows and the adapter onto runtime.kernels.resize.

The output size and the scale every coordinate divides by are computed as onnxruntime computes them, in float32:
- scales given: output = trunc(float32(scale) * float32(input)), and the coordinates divide by that scale (not by
  output / input: a scale of 2.5 on 3 elements makes 7 outputs read at o / 2.5, not o / (7 / 3));
- sizes given: the scale is float32(output) / float32(input); keep_aspect_ratio_policy (18) replaces the scales of
  the resized axes by their smallest (not_larger) or largest (not_smaller) and rounds output = round(scale * input).
Resize-10 and Upsample map coordinates asymmetrically (o / scale) and pick nearest sources by truncation, or by ceil
when an axis shrinks (onnxruntime's "simple" rounding); the coordinate transformation and nearest modes are
attributes from 11, half_pixel_symmetric from 19; axes, keep_aspect_ratio_policy and antialias from 18. Anti-aliased
resizing (a filter widened by the shrink factor) is not supported. Upsample's scales must be >= 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from poolir.ir.errors import UnsupportedError, UsageError
from poolir.ir.shapes import checked_axes
from poolir.runtime.kernels import resize as kernels
from poolir.runtime.onnx_ops.registry import (FLOAT, FLOATS, INT, INTS, REMOVED, STRING, Attribute, NodeContext,
                                              OnnxOpVersion, Step, adapter, define, int_values)

define("Upsample", [(7, {"mode": Attribute(STRING, "nearest"), "scales": Attribute(FLOATS, required=True)}),
                    (9, {"scales": REMOVED})])
define("Resize", [
    (10, {"mode": Attribute(STRING, "nearest")}),
    (11, {"coordinate_transformation_mode": Attribute(STRING, "half_pixel"), "cubic_coeff_a": Attribute(FLOAT, -0.75),
          "exclude_outside": Attribute(INT, 0), "extrapolation_value": Attribute(FLOAT, 0.0),
          "nearest_mode": Attribute(STRING, "round_prefer_floor")}),
    (13, {}),                 # roi and scales become optional; tf_half_pixel_for_nn is deprecated (still run)
    (18, {"antialias": Attribute(INT, 0), "axes": Attribute(INTS),
          "keep_aspect_ratio_policy": Attribute(STRING, "stretch")}),
    (19, {}),                 # adds coordinate_transformation_mode half_pixel_symmetric
])
ASPECT_POLICIES = ("stretch", "not_larger", "not_smaller")


@dataclass(frozen=True)
class ResizeSettings:
    """A Resize or Upsample node's attributes, checked, as the kernel reads them (one reading for the runtime and
    the converter)."""

    sampling: str
    coordinate_mode: str
    nearest_mode: str
    cubic_a: float
    exclude_outside: bool
    extrapolation: float
    policy: str
    axes: tuple[int, ...] | None
    resize_op: bool           # Resize (scales > 0) or Upsample (scales >= 1)


def resize_settings(version: OnnxOpVersion, attrs: dict) -> ResizeSettings:
    """The checked settings of a node of `version` (UsageError for a value the version does not allow)."""
    label, since, resize_op = version.label, version.since, version.op_type == "Resize"
    modern = resize_op and since >= 11
    mode = attrs["mode"]
    if mode not in (kernels.SAMPLINGS if modern else ("nearest", "linear")):
        raise UsageError(f"attribute 'mode' = {mode!r} is not a mode of {label}")
    coordinate_mode = attrs.get("coordinate_transformation_mode", "asymmetric")
    allowed = kernels.COORDINATE_MODES if since >= 19 else tuple(m for m in kernels.COORDINATE_MODES
                                                                  if m != "half_pixel_symmetric")
    if coordinate_mode not in allowed:
        raise UsageError(f"attribute 'coordinate_transformation_mode' = {coordinate_mode!r} is not one of "
                         f"{', '.join(allowed)} in {label}")
    nearest_mode = attrs.get("nearest_mode", "simple")
    if nearest_mode not in kernels.NEAREST_MODES or (modern and nearest_mode == "simple"):
        raise UsageError(f"attribute 'nearest_mode' = {nearest_mode!r} is not one of "
                         f"{', '.join(kernels.NEAREST_MODES[:-1])}")
    exclude_outside = bool(attrs.get("exclude_outside", 0))
    if exclude_outside and mode != "cubic":
        raise UsageError("attribute 'exclude_outside' = 1 applies to mode cubic only (onnxruntime refuses it too)")
    if attrs.get("antialias", 0):
        raise UnsupportedError("anti-aliased resizing (antialias = 1) is not supported")
    policy = attrs.get("keep_aspect_ratio_policy", "stretch")
    if policy not in ASPECT_POLICIES:
        raise UsageError(f"attribute 'keep_aspect_ratio_policy' = {policy!r} is not one of "
                         f"{', '.join(ASPECT_POLICIES)}")
    axes = attrs.get("axes")
    return ResizeSettings(mode, coordinate_mode, nearest_mode, attrs.get("cubic_coeff_a", -0.75), exclude_outside,
                          attrs.get("extrapolation_value", 0.0), policy, None if axes is None else tuple(axes),
                          resize_op)


def axis_plans(settings: ResizeSettings, shape: tuple[int, ...], roi, scales, sizes):
    """(axis, kernels.AxisResize) of every resized axis of an input of `shape`, from the node's roi, scales and
    sizes inputs (numpy arrays or None)."""
    rank = len(shape)
    axes = list(range(rank)) if settings.axes is None else checked_axes(settings.axes, rank)
    lengths = [shape[axis] for axis in axes]
    outputs, factors = _sizes_and_scales(lengths, scales, sizes, settings.policy, settings.resize_op)
    if settings.coordinate_mode == "tf_crop_and_resize":
        bounds = _roi(roi, axes, rank)
    else:
        bounds = [(0.0, 1.0)] * len(axes)
    return [(axis, kernels.AxisResize(length, output, scale, settings.coordinate_mode, settings.sampling,
                                      settings.nearest_mode, settings.cubic_a, settings.exclude_outside, bound))
            for axis, length, output, scale, bound in zip(axes, lengths, outputs, factors, bounds)]


@adapter("Resize", "Upsample")
def plan_resize(ctx: NodeContext) -> Step:
    settings = resize_settings(ctx.version, ctx.attrs)

    def run(x, roi=None, scales=None, sizes=None):
        plans = axis_plans(settings, x.shape, roi, scales, sizes)
        return (kernels.resize(x, plans, "onnx", settings.extrapolation),)
    if settings.resize_op and ctx.version.since >= 11:
        return run
    if ctx.version.since >= 9:              # Resize-10 and Upsample-9: (X, scales)
        return lambda x, scales: run(x, scales=scales)
    scales_attribute = np.asarray(ctx.attrs["scales"], dtype=np.float32)
    return lambda x: run(x, scales=scales_attribute)


def _sizes_and_scales(lengths: list[int], scales, sizes, policy: str, resize_op: bool):
    """(output lengths, float32 scales) of the resized axes (module docstring)."""
    given_scales = scales is not None and scales.size > 0
    given_sizes = sizes is not None and sizes.size > 0
    if given_scales == given_sizes:
        raise UsageError("exactly one of the inputs 'scales' and 'sizes' must be given (and not empty)")
    if given_scales:
        if scales.dtype.kind != "f":
            raise UsageError(f"scales must be a float tensor, got {scales.dtype}")
        factors = [np.float32(s) for s in np.ravel(scales)]
        if len(factors) != len(lengths):
            raise UsageError(f"scales has {len(factors)} values for {len(lengths)} axes")
        if any(not np.isfinite(s) or (s <= 0 if resize_op else s < 1) for s in factors):
            raise UsageError(f"scales {[float(s) for s in factors][:8]} must be finite and "
                             f"{'> 0' if resize_op else '>= 1'}")
        outputs = [int(np.float32(s) * np.float32(n)) for s, n in zip(factors, lengths)]
        return outputs, [float(s) for s in factors]
    outputs = int_values(sizes)
    if len(outputs) != len(lengths):
        raise UsageError(f"sizes has {len(outputs)} values for {len(lengths)} axes")
    if any(n < 0 for n in outputs):
        raise UsageError(f"sizes {outputs[:8]} must not be negative")
    factors = []
    for n, out in zip(lengths, outputs):
        if n == 0 and out != 0:
            raise UsageError(f"an axis of length 0 cannot be resized to {out}")
        factors.append(np.float32(1) if n == 0 else np.float32(out) / np.float32(n))
    if policy != "stretch":
        chosen = min(factors) if policy == "not_larger" else max(factors)
        factors = [chosen] * len(factors)
        outputs = [int(np.round(np.float32(chosen * np.float32(n)))) for n in lengths]
    return outputs, [float(s) for s in factors]


def _roi(roi, axes: list[int], rank: int) -> list[tuple[float, float]]:
    """The (start, end) of every resized axis from the roi input: starts then ends, one per axis of `axes` (from 18)
    or one per input axis."""
    if roi is None or roi.size == 0:
        raise UsageError("coordinate_transformation_mode tf_crop_and_resize needs the input 'roi'")
    values = [float(v) for v in np.ravel(roi).astype(np.float32)]
    count = len(values) // 2
    if len(values) % 2 or count not in (len(axes), rank):
        raise UsageError(f"roi has {len(values)} values, expected {2 * len(axes)} (starts, then ends)")
    starts, ends = values[:count], values[count:]
    if count == rank and count != len(axes):
        return [(starts[axis], ends[axis]) for axis in axes]
    return list(zip(starts, ends))


__all__ = ["ASPECT_POLICIES", "ResizeSettings", "axis_plans", "plan_resize", "resize_settings"]
