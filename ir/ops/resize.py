"""Interpolate-4 and Interpolate-11 (OpenVINO's resize; ONNX Resize becomes Interpolate-11): schema and shape rule.

Interpolate-4 takes (data, sizes, scales[, axes]) and shape_calculation_mode says which of sizes and scales is
read; Interpolate-11 takes (data, scales_or_sizes[, axes]), scales when that input is floating. The data is first
zero-padded by pads_begin / pads_end (shorter than the rank: the rest are 0). Without axes every axis is resized.
An axis's output length is its size, or trunc(float32(padded length) * (float32(scale) + 1e-6)) (OpenVINO's shape
inference; the epsilon makes 3 * 0.3333333 one element, not zero). The coordinates divide by the given scale in
scales mode and by output / padded length in sizes mode (OpenVINO's CPU plugin: 2 elements by scale 1.7 are 3, read
at (o + 0.5) / 1.7 - 0.5, where sizes [3] read at (o + 0.5) / 1.5 - 0.5), and an axis whose length or scale the layer
keeps is read at o.

poolir executes modes nearest, linear_onnx, linear and cubic, with the coordinate transformation modes OpenVINO's
spec names. OpenVINO's own linear, a triangle filter whose taps outside the data drop out (weights renormalised), is
linear_onnx without antialias: both read the same one or two taps per axis with the same weights where the data
holds them, and an edge coordinate reads the edge element either way (OpenVINO's PrePostProcessor writes it for
RESIZE_LINEAR; its CPU plugin gives linear_onnx's bits on 4-D data, within an ulp on 5-D). The pillow modes and
antialias are refused at run time.
"""

from __future__ import annotations

import numpy as np

from poolir.ir.attributes import BOOL, FLOAT, INTS, STR, Attr, OpVersion
from poolir.ir.element_types import is_integer
from poolir.ir.errors import InvalidModelError
from poolir.ir.model import Dim, Layer, shape_str
from poolir.ir.registry import ShapeRules
from poolir.ir.shapes import TensorInfo

INTERPOLATE_MODES = ("nearest", "linear", "linear_onnx", "cubic", "bilinear_pillow", "bicubic_pillow")
EXECUTED_MODES = ("nearest", "linear_onnx", "linear", "cubic")
IR_COORDINATE_MODES = ("half_pixel", "pytorch_half_pixel", "asymmetric", "tf_half_pixel_for_nn", "align_corners")
IR_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")
SCALES_EPSILON = np.float32(1e-6)


def _attrs(modes: tuple[str, ...]) -> tuple[Attr, ...]:
    return (Attr("mode", STR, choices=modes), Attr("shape_calculation_mode", STR, choices=("sizes", "scales")),
            Attr("coordinate_transformation_mode", STR, "half_pixel", IR_COORDINATE_MODES),
            Attr("nearest_mode", STR, "round_prefer_floor", IR_NEAREST_MODES), Attr("antialias", BOOL, False),
            Attr("pads_begin", INTS, (0,)), Attr("pads_end", INTS, (0,)), Attr("cube_coeff", FLOAT, -0.75))


SCHEMA_ROWS: tuple[OpVersion, ...] = (
    OpVersion("Interpolate", 4, _attrs(INTERPOLATE_MODES[:4]), inputs=(3, 4)),
    OpVersion("Interpolate", 11, _attrs(INTERPOLATE_MODES), inputs=(2, 3)),
)

SHAPE_RULES = ShapeRules()


def operands(layer: Layer, inputs: list):
    """(scales or None, sizes or None, axes or None) among the layer's inputs, by its version and mode."""
    if layer.opset >= 11:
        target, axes = inputs[1], (inputs[2] if len(inputs) > 2 else None)
        scales_mode = layer.attrs["shape_calculation_mode"] == "scales"
        return (target, None, axes) if scales_mode else (None, target, axes)
    axes = inputs[3] if len(inputs) > 3 else None
    if layer.attrs["shape_calculation_mode"] == "scales":
        return inputs[2], None, axes
    return None, inputs[1], axes


def pads(layer: Layer, rank: int) -> tuple[list[int], list[int]]:
    """pads_begin and pads_end, one per axis (cut to the rank, or extended with 0)."""
    begins, ends = (list(layer.attrs[name])[:rank] for name in ("pads_begin", "pads_end"))
    return begins + [0] * (rank - len(begins)), ends + [0] * (rank - len(ends))


def padded_lengths(layer: Layer, dims: list[int | None]) -> list[int | None]:
    """The data dims after pads_begin and pads_end (None stays unknown); InvalidModelError if one goes negative."""
    begins, ends = pads(layer, len(dims))
    padded = [None if d is None else d + b + e for d, b, e in zip(dims, begins, ends)]
    if any(d is not None and d < 0 for d in padded):
        raise InvalidModelError(f"pads_begin {begins} and pads_end {ends} crop the data below zero")
    return padded


def resized_axes(layer: Layer, rank: int, scales, sizes, axes) -> list[int]:
    """The resized axes, normalised; without an axes input, every axis (one scale or size each)."""
    count = len(np.ravel(scales if scales is not None else sizes))
    if axes is None:
        if count != rank:
            raise InvalidModelError(f"{count} {'scales' if scales is not None else 'sizes'} for data of rank {rank} "
                                    "and no axes input")
        return list(range(rank))
    chosen = [int(a) for a in np.ravel(axes)]
    if any(not 0 <= a < rank for a in chosen):      # OpenVINO takes no negative axis here
        raise InvalidModelError(f"axes {chosen} must lie in 0..{rank - 1}")
    if len(chosen) != count or len(set(chosen)) != len(chosen):
        raise InvalidModelError(f"axes {chosen} must be distinct, one per scale or size ({count})")
    return chosen


def output_lengths(padded: list[int | None], axes: list[int], scales, sizes) -> list[int | None]:
    """The output length of every resized axis (module docstring)."""
    if sizes is not None:
        values = [int(v) for v in np.ravel(sizes)]
        if any(v < 0 for v in values):
            raise InvalidModelError(f"sizes {values[:8]} must not be negative")
        return values
    factors = [np.float32(v) for v in np.ravel(scales)]
    if any(not np.isfinite(f) or f <= 0 for f in factors):
        raise InvalidModelError(f"scales {[float(f) for f in factors][:8]} must be finite and > 0")
    return [None if padded[axis] is None else (padded[axis] if f == 1 else
                                               int(np.float32(padded[axis]) * (f + SCALES_EPSILON)))
            for axis, f in zip(axes, factors)]


@SHAPE_RULES.register("Interpolate")
def infer_interpolate(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    data = inputs[0]
    scales, sizes, axes = operands(layer, inputs)
    given = scales if scales is not None else sizes
    if scales is not None and scales.element_type not in ("f16", "bf16", "f32", "f64"):
        raise InvalidModelError(f"the scales are {scales.element_type}, expected a floating type")
    if sizes is not None and not is_integer(sizes.element_type):
        raise InvalidModelError(f"the sizes are {sizes.element_type}, expected an integer type")
    if axes is not None and not is_integer(axes.element_type):
        raise InvalidModelError(f"the axes are {axes.element_type}, expected an integer type")
    rank = len(data.shape)
    if given.value is None or (axes is not None and axes.value is None):
        count = given.shape[0].value if len(given.shape) == 1 else None
        if axes is None and count is not None and count != rank:
            raise InvalidModelError(f"{count} scales or sizes for data {shape_str(data.shape)}")
        # Without axes there is one scale or size per axis (checked when the run knows them); OpenVINO's ONNX
        # frontend writes such sizes for a dynamic batch (Concat(Slice(ShapeOf(x), 0, 2), [h, w]) with a computed
        # step), and so does any exporter that slices a shape with run-time bounds.
        if axes is None or axes.value is None:
            return [TensorInfo(data.element_type, tuple(Dim.dynamic() for _ in data.shape))]
        # Known axes (sizes computed at run time, converter/onnx_to_ir/resize.py): the other axes keep their lengths
        placeholder = np.zeros(np.size(axes.value) if count is None else count)
        chosen = resized_axes(layer, rank, placeholder if scales is not None else None,
                              placeholder if sizes is not None else None, axes.value)
        return [TensorInfo(data.element_type, _output_dims(layer, data, chosen, [None] * len(chosen)))]
    chosen = resized_axes(layer, rank, None if scales is None else scales.value, None if sizes is None else sizes.value,
                          None if axes is None else axes.value)
    padded = padded_lengths(layer, [d.value for d in data.shape])
    lengths = output_lengths(padded, chosen, None if scales is None else scales.value,
                             None if sizes is None else sizes.value)
    return [TensorInfo(data.element_type, _output_dims(layer, data, chosen, lengths))]


def _output_dims(layer: Layer, data: TensorInfo, chosen: list[int], lengths: list[int | None]) -> tuple[Dim, ...]:
    """The data's dims after the pads, with `lengths` (None: unknown) on the resized axes `chosen`."""
    padded = padded_lengths(layer, [d.value for d in data.shape])
    dims = [d if n == d.value else (Dim.static(n) if n is not None else Dim.dynamic())
            for d, n in zip(data.shape, padded)]
    for axis, n in zip(chosen, lengths):
        dims[axis] = Dim.static(n) if n is not None else Dim.dynamic()
    return tuple(dims)


def coordinate_scales(padded: list[int], axes: list[int], lengths: list[int], scales) -> list[float]:
    """The float32 scale every resized axis's coordinates divide by (module docstring)."""
    if scales is not None:
        return [float(np.float32(f)) for f in np.ravel(scales)]
    return [float(np.float32(out) / np.float32(padded[axis])) if padded[axis] else 1.0
            for axis, out in zip(axes, lengths)]


__all__ = ["EXECUTED_MODES", "INTERPOLATE_MODES", "IR_COORDINATE_MODES", "IR_NEAREST_MODES", "SCHEMA_ROWS",
           "SHAPE_RULES", "coordinate_scales", "operands", "output_lengths", "padded_lengths", "pads", "resized_axes"]
