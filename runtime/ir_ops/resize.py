"""IR Interpolate-4 and Interpolate-11 (ir/ops/resize.py) onto runtime.kernels.resize, OpenVINO's CPU plugin's
formulas (world "ir"): the data is zero-padded first, then every resized axis is read at the given scale (scales
mode) or at output / padded length (sizes mode)."""

from __future__ import annotations

import numpy as np

from poolir.ir.element_types import SATURATED_DTYPES
from poolir.ir.errors import InvalidModelError, UnsupportedError
from poolir.ir.ops.resize import (EXECUTED_MODES, coordinate_scales, operands, output_lengths, padded_lengths, pads,
                                  resized_axes)
from poolir.runtime.ir_ops.registry import LayerFn, LayerInfo, builder
from poolir.runtime.kernels import movement, resize

_SAMPLING = {"nearest": "nearest", "linear_onnx": "linear", "linear": "linear", "cubic": "cubic"}  # ir/ops/resize.py


@builder("Interpolate")
def _interpolate(info: LayerInfo) -> LayerFn:
    layer = info.layer
    attrs = layer.attrs
    if attrs["mode"] not in EXECUTED_MODES:
        raise UnsupportedError(f"Interpolate mode {attrs['mode']!r} is not supported (poolir runs "
                               f"{', '.join(EXECUTED_MODES)})")
    if attrs["antialias"]:
        raise UnsupportedError("anti-aliased Interpolate (antialias = true) is not supported")

    def run(args):
        x = args[0]
        scales, sizes, axes = operands(layer, list(args))
        if scales is not None and scales.dtype.kind != "f" or sizes is not None and sizes.dtype.kind not in "iu":
            raise InvalidModelError("the scales must be floating and the sizes integers")
        chosen = resized_axes(layer, x.ndim, scales, sizes, axes)
        padded = padded_lengths(layer, list(x.shape))
        if padded != list(x.shape):
            x = movement.pad(x, *pads(layer, x.ndim), "constant", 0)
        lengths = output_lengths(padded, chosen, scales, sizes)
        plans = []
        for axis, out, scale in zip(chosen, lengths, coordinate_scales(padded, chosen, lengths, scales)):
            length = x.shape[axis]
            if length == 0 and out != 0:
                raise InvalidModelError(f"an axis of length 0 cannot be resized to {out}")
            plans.append((axis, resize.AxisResize(length, out, scale, attrs["coordinate_transformation_mode"],
                                                  _SAMPLING[attrs["mode"]], attrs["nearest_mode"],
                                                  attrs["cube_coeff"])))
        if x.dtype in SATURATED_DTYPES and attrs["mode"] != "nearest":
            # OpenVINO's CPU plugin resamples i8/u8 in float32, then rounds half to even and saturates (cubic
            # overshoots: u8 264.3 -> 255), measured against its float32 result
            limits = np.iinfo(x.dtype)
            resampled = resize.resize(x.astype(np.float32), plans, "ir")
            return (np.clip(np.rint(resampled), limits.min, limits.max).astype(x.dtype),)
        return (resize.resize(x, plans, "ir"),)
    return run
