"""IR Interpolate-4/11 -> ONNX Resize (from opset 11), in sizes mode, zero pads first as a Pad.

nearest, linear_onnx and cubic are Resize's nearest, linear and cubic; the coordinate transformation modes keep their
names. Interpolate reads every axis at scale = output / padded input, which is what Resize computes from sizes, but
the worlds still differ in places (runtime.kernels.resize): so every resized axis is worked out in both and the layer
is refused where they would sample differently. Nearest mode simple (ceil when shrinking, else truncation) has no
Resize-11 spelling: it becomes floor or ceil, whichever samples every axis alike. The sizes are written for the
resized axes only (Resize's axes attribute, opset 18) or for every axis, which then needs static output dims.
OpenVINO's own linear mode, the pillow modes and antialias have no Resize equivalent.
"""

from __future__ import annotations

import numpy as np

from poolir.converter.ir_to_onnx.context import Context
from poolir.converter.ir_to_onnx.opsets import check_writes, has_attribute
from poolir.ir.errors import ConversionError
from poolir.ir.model import Layer
from poolir.ir.ops.resize import pads, resized_axes
from poolir.runtime.kernels.resize import NEAREST_MODES, AxisResize, same_sampling

_ONNX_MODES = {"nearest": "nearest", "linear_onnx": "linear", "cubic": "cubic"}


def interpolate(context: Context, layer: Layer) -> None:
    attrs = layer.attrs
    if attrs["mode"] not in _ONNX_MODES:
        raise ConversionError(f"Interpolate mode {attrs['mode']} has no ONNX Resize mode")
    if attrs["antialias"]:
        raise ConversionError("anti-aliased Interpolate has no ONNX Resize equivalent poolir writes")
    data = context.input_info(layer, 0)
    check_writes(context, "Resize", data.element_type, "Interpolate")
    context.check_opset(11, "Interpolate needs ONNX Resize with coordinate modes, from opset 11")
    rank = len(data.shape)
    target = 1 if layer.opset >= 11 or attrs["shape_calculation_mode"] == "sizes" else 2
    axes_index = 2 if layer.opset >= 11 else 3
    given = context.constant(layer, target)
    axes_value = context.constant(layer, axes_index) if len(layer.inputs) > axes_index else None
    if given is None or (len(layer.inputs) > axes_index and axes_value is None):
        raise ConversionError("Interpolate needs constant scales or sizes and axes")
    axes = resized_axes(layer, rank, given if attrs["shape_calculation_mode"] == "scales" else None,
                        given if attrs["shape_calculation_mode"] == "sizes" else None, axes_value)
    begins, ends = pads(layer, rank)
    out_dims = [d.value for d in context.output_info(layer, 0).shape]
    padded = [None if d.value is None else d.value + b + e for d, b, e in zip(data.shape, begins, ends)]
    if any(padded[axis] is None or out_dims[axis] is None for axis in axes):
        raise ConversionError("Interpolate needs static input and output lengths on the resized axes")
    nearest_mode = _nearest_mode(attrs, [(padded[axis], out_dims[axis]) for axis in axes])
    source = context.input(layer, 0)
    if any(begins) or any(ends):
        if any(p < 0 for p in begins + ends):
            raise ConversionError("Interpolate with negative pads (a crop) is not converted")
        (source,) = context.node("Pad", [source, context.int64s(begins + ends, f"{layer.name}/pads")],
                                 f"{layer.name}/padded", mode="constant")
    resize_attrs = {"mode": _ONNX_MODES[attrs["mode"]],
                    "coordinate_transformation_mode": attrs["coordinate_transformation_mode"],
                    "nearest_mode": nearest_mode, "cubic_coeff_a": float(attrs["cube_coeff"])}
    if has_attribute("Resize", context.opset, "axes"):
        resize_attrs["axes"] = list(axes)
        sizes = [out_dims[axis] for axis in axes]
    elif None in out_dims:
        raise ConversionError(f"Resize before opset 18 takes sizes for every axis, which needs static output dims, "
                              f"got {out_dims}")
    else:
        sizes = out_dims
    empty = context.initializer(np.zeros(0, np.float32), f"{layer.name}/empty")
    inputs = [source, empty, empty, context.int64s(sizes, f"{layer.name}/sizes")]
    context.node_into("Resize", inputs, [context.name_output(layer, 0)], layer.name, **resize_attrs)


def _nearest_mode(attrs: dict, lengths: list[tuple[int, int]]) -> str:
    """The Resize nearest mode that samples every resized axis as the layer does (simple: floor or ceil)."""
    mode = attrs["nearest_mode"]
    candidates = [m for m in NEAREST_MODES if m != "simple"] if mode == "simple" else [mode]
    for candidate in candidates:
        if all(_axis_agrees(attrs, mode, candidate, length, out) for length, out in lengths):
            return candidate
    raise ConversionError(f"Interpolate ({attrs['mode']}, {attrs['coordinate_transformation_mode']}, nearest mode "
                          f"{mode}) samples differently from every ONNX Resize on lengths {lengths}")


def _axis_agrees(attrs: dict, ir_nearest: str, onnx_nearest: str, length: int, out: int) -> bool:
    sampling = _ONNX_MODES[attrs["mode"]]     # Resize's mode names are the kernel's sampling names
    scale = float(np.float32(out) / np.float32(length)) if length else 1.0
    common = (length, out, scale, attrs["coordinate_transformation_mode"], sampling)
    return length > 0 and same_sampling(AxisResize(*common, onnx_nearest, attrs["cube_coeff"]),
                                        AxisResize(*common, ir_nearest, attrs["cube_coeff"]))


CONVERTERS = {"Interpolate": interpolate}
