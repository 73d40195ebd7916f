"""IR Interpolate-4/11 -> ONNX Resize (from opset 11), in sizes mode, zero pads first as a Pad.

nearest, linear_onnx and cubic are Resize's nearest, linear and cubic; the coordinate transformation modes keep their
names. Interpolate reads an axis at the given scale (scales mode) or at output / padded input (sizes mode), which
is what Resize does with scales or sizes, but the worlds still differ in places (their length rules, align_corners,
same-length axes: runtime.kernels.resize): so every resized axis is worked out in both, Resize gets scales or sizes,
whichever samples alike, and the layer is refused where neither does. Nearest mode simple (ceil when shrinking, else
truncation) has no Resize-11 spelling: it becomes floor or ceil, whichever samples every axis alike. Scales or sizes
are written for the resized axes only (Resize's axes attribute, opset 18) or for every axis (sizes then need static
output dims). Sizes known only at run time are passed on as they are (_computed_sizes).
OpenVINO's own linear mode without antialias is linear_onnx (ir/ops/resize.py); the pillow modes and antialias have
no Resize equivalent.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from poolir.converter.element_types import onnx_element_type
from poolir.converter.ir_to_onnx.context import Context
from poolir.converter.ir_to_onnx.onnxruntime_gaps import onnxruntime_resizes
from poolir.converter.ir_to_onnx.opsets import check_writes, has_attribute
from poolir.converter.shape_elements import kept_whatever_length, own_dims_marked
from poolir.ir.element_types import OPENVINO_SATURATED_TYPES, dtype_of, is_integer
from poolir.ir.errors import ConversionError
from poolir.ir.model import Layer
from poolir.ir.ops.resize import coordinate_scales, pads, resized_axes
from poolir.runtime.kernels.resize import NEAREST_MODES, AxisResize, run_time_length_problem, same_sampling

_ONNX_MODES = {"nearest": "nearest", "linear_onnx": "linear", "linear": "linear", "cubic": "cubic"}  # ir/ops/resize.py


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
    scales_mode = attrs["shape_calculation_mode"] == "scales"
    if given is None and not scales_mode and (axes_value is not None or len(layer.inputs) <= axes_index):
        # OpenVINO's frontend keeps PyTorch's Concat(Slice(ShapeOf(x), 0, 2), [h, w]): x's own dims marked -1
        axes = list(range(rank)) if axes_value is None else [int(a) % rank for a in np.ravel(axes_value)]
        given = own_dims_marked(context, context.input_ref(layer, target), context.input_ref(layer, 0), axes)
        if given is None:
            _computed_sizes(context, layer, target, rank, axes)
            return
    if given is None or (len(layer.inputs) > axes_index and axes_value is None):
        raise ConversionError("Interpolate needs constant scales or sizes and axes (or sizes that are the input's own "
                              "dims on the axes it keeps)")
    axes = resized_axes(layer, rank, given if scales_mode else None, None if scales_mode else given, axes_value)
    listed = list(axes)  # the axes the sizes input lists, in its order
    begins, ends = pads(layer, rank)
    dynamic = {axis for axis in axes if data.shape[axis].value is None and not begins[axis] and not ends[axis]}
    kept = kept_whatever_length(axes, given, dynamic, scales_mode)
    if kept:
        given = np.array([value for axis, value in zip(axes, np.ravel(given)) if axis not in kept], given.dtype)
        axes = [axis for axis in axes if axis not in kept]
    out_dims = [d.value for d in context.output_info(layer, 0).shape]
    padded = [None if d.value is None else d.value + b + e for d, b, e in zip(data.shape, begins, ends)]
    lengths = [out_dims[axis] for axis in axes] if scales_mode else [int(v) for v in np.ravel(given)]
    if any(padded[axis] is None for axis in axes) or None in lengths:
        resized = [(axis, float(f)) for axis, f in zip(axes, np.ravel(given)) if f != 1] if scales_mode else []
        if resized and all(f in _EXACT_SCALES for _, f in resized) and not any(begins + ends):
            _integer_scales(context, layer, rank, resized)
            return
        if not scales_mode:  # constant sizes of a dynamic input (OpenVINO's IR of a module upsampled to 13x17)
            _computed_sizes(context, layer, target, rank, listed)
            return
        raise ConversionError("Interpolate needs static input and output lengths on the resized axes")
    if not axes:
        context.node_into("Identity", [context.input(layer, 0)], [context.name_output(layer, 0)], layer.name)
        return
    ir_axes = [_axis(attrs, padded[axis], out, scale, attrs["nearest_mode"])
               for axis, out, scale in zip(axes, lengths, coordinate_scales(padded, axes, lengths,
                                                                            given if scales_mode else None))]
    calc, nearest_mode = _onnx_reading(attrs, ir_axes, scales_mode)
    source = context.input(layer, 0)
    if any(begins) or any(ends):
        if any(p < 0 for p in begins + ends):
            raise ConversionError("Interpolate with negative pads (a crop) is not converted")
        (source,) = context.node("Pad", [source, context.int64s(begins + ends, f"{layer.name}/pads")],
                                 f"{layer.name}/padded", mode="constant")
    resize_attrs = _resize_attributes(attrs, nearest_mode)
    scaled = {axis: a.output >= a.length for axis, a in zip(axes, ir_axes)
              if (a.scale != 1 if calc == "scales" else a.output != a.length)}  # axis -> whether it grows
    perm = _onnxruntime_layout(resize_attrs["mode"], rank, list(scaled), all(scaled.values()))
    order = perm or list(range(rank))
    if has_attribute("Resize", context.opset, "axes"):
        resize_attrs["axes"] = [order.index(axis) for axis in axes]
        targets = [(ir_axis.scale, ir_axis.output) for ir_axis in ir_axes]
    elif calc == "sizes" and None in out_dims:
        raise ConversionError(f"Resize before opset 18 takes sizes for every axis, which needs static output dims, "
                              f"got {out_dims}")
    else:
        by_axis = {axis: (ir_axis.scale, ir_axis.output) for axis, ir_axis in zip(axes, ir_axes)}
        targets = [by_axis.get(axis, (1.0, out_dims[axis])) for axis in order]
    if calc == "scales":
        scales = context.initializer(np.array([scale for scale, _ in targets], np.float32), f"{layer.name}/scales")
        _write_resize(context, layer, source, resize_attrs, scales=scales, perm=perm)
    else:
        sizes = context.int64s([size for _, size in targets], f"{layer.name}/sizes")
        _write_resize(context, layer, source, resize_attrs, sizes=sizes, perm=perm)


def _resize_attributes(attrs: dict, nearest_mode: str) -> dict:
    """Resize's attributes for an Interpolate layer's `attrs`, with the nearest mode that samples alike."""
    return {"mode": _ONNX_MODES[attrs["mode"]],
            "coordinate_transformation_mode": attrs["coordinate_transformation_mode"],
            "nearest_mode": nearest_mode, "cubic_coeff_a": float(attrs["cube_coeff"])}


def _onnxruntime_layout(mode: str, rank: int, resized: list[int], upscaling: bool) -> list[int] | None:
    """None when onnxruntime's `mode` Resize takes the `resized` axes where they are; else the permutation that
    moves them last, where it takes them (an NHWC cubic resize: NCHW), each axis still resized alone."""
    if onnxruntime_resizes(mode, rank, resized, upscaling):
        return None
    perm = _moved_last(rank, resized)
    if onnxruntime_resizes(mode, rank, [perm.index(axis) for axis in resized], upscaling):
        return perm
    raise ConversionError(f"onnxruntime's {mode} Resize takes no rank-{rank} input resized on {len(resized)} axes "
                          "(onnxruntime_gaps.onnxruntime_resizes), in any order of the axes")


def _moved_last(rank: int, axes: list[int]) -> list[int]:
    return [axis for axis in range(rank) if axis not in axes] + sorted(axes)


def _write_resize(context: Context, layer: Layer, source: str, resize_attrs: dict, *, scales: str | None = None,
                  sizes: str | None = None, perm: list[int] | None = None) -> None:
    """The Resize node writing the layer's output: an empty roi, and scales or sizes; between Transposes by `perm`
    (scales, sizes and axes already in its order) when it is given."""
    empty = context.initializer(np.zeros(0, np.float32), f"{layer.name}/empty")
    output = context.name_output(layer, 0)
    element_type = context.input_info(layer, 0).element_type
    rounded = is_integer(element_type) and resize_attrs["mode"] != "nearest"
    if rounded and element_type not in OPENVINO_SATURATED_TYPES:
        raise ConversionError(f"{resize_attrs['mode']} Interpolate of {element_type} (poolir resamples integers as "
                              "OpenVINO does only for i8/u8)")
    if rounded:  # i8/u8 in float32, rounded half to even and saturated, as OpenVINO's CPU plugin resamples them
        (source,) = context.node("Cast", [source], f"{layer.name}/f32", to=TensorProto.FLOAT)
    if perm is not None:
        (source,) = context.node("Transpose", [source], f"{layer.name}/moved", perm=perm)
    last = [output if perm is None and not rounded else context.fresh(f"{layer.name}/resized")]
    inputs = [source, empty, scales] if sizes is None else [source, empty, empty, sizes]
    context.node_into("Resize", inputs, last, layer.name, **resize_attrs)
    if perm is not None:
        moved_back = [output if not rounded else context.fresh(f"{layer.name}/moved_back")]
        context.node_into("Transpose", last, moved_back, layer.name, perm=[perm.index(a) for a in range(len(perm))])
        last = moved_back
    if rounded:
        limits = np.iinfo(dtype_of(element_type))
        bounds = [context.initializer(np.array(v, np.float32), f"{layer.name}/{v}") for v in (limits.min, limits.max)]
        (whole,) = context.node("Round", last, f"{layer.name}/rounded")
        (whole,) = context.node("Clip", [whole, *bounds], f"{layer.name}/saturated")
        context.node_into("Cast", [whole], [output], layer.name, to=onnx_element_type(element_type))


def _computed_sizes(context: Context, layer: Layer, target: int, rank: int, axes: list[int]) -> None:
    """Sizes known only at run time: Resize with the same sizes samples alike (the rule of converter/onnx_to_ir/
    resize.py, _computed_sizes, and run_time_length_problem's exception), unpadded and without nearest mode simple,
    whose ceil-or-truncate choice depends on the lengths. Before opset 18 the other axes' sizes are the input's own."""
    attrs = layer.attrs
    begins, ends = pads(layer, rank)
    if any(begins) or any(ends):
        raise ConversionError("a padded Interpolate with sizes known only at run time")
    if attrs["nearest_mode"] == "simple" and attrs["mode"] == "nearest":
        raise ConversionError("nearest mode simple with sizes known only at run time: Resize's floor or ceil agrees "
                              "only for known lengths")
    _refuse_run_time_lengths(attrs)
    sizes = context.input(layer, target)
    if context.input_info(layer, target).element_type != "i64":
        (sizes,) = context.node("Cast", [sizes], f"{layer.name}/sizes", to=onnx_element_type("i64"))
    resize_attrs = _resize_attributes(attrs, attrs["nearest_mode"])
    # The lengths are not known: move the axes when onnxruntime would refuse them even as upscaled where they are,
    # and takes them moved (sizes of every axis, the outer ones their own, stay where they are).
    perm = None
    if not onnxruntime_resizes(resize_attrs["mode"], rank, axes, upscaling=True):
        moved = _moved_last(rank, axes)
        if onnxruntime_resizes(resize_attrs["mode"], rank, [moved.index(axis) for axis in axes], upscaling=False):
            perm = moved
    order = perm or list(range(rank))
    if has_attribute("Resize", context.opset, "axes"):
        resize_attrs["axes"] = [order.index(axis) for axis in axes]
    elif axes != list(range(rank)) or perm is not None:
        (shape,) = context.node("Shape", [context.input(layer, 0)], f"{layer.name}/shape")
        (sizes,) = context.node("ScatterElements", [shape, context.int64s(axes, f"{layer.name}/axes"), sizes],
                                f"{layer.name}/all_sizes", axis=0)
        if perm is not None:
            (sizes,) = context.node("Gather", [sizes, context.int64s(perm, f"{layer.name}/perm")],
                                    f"{layer.name}/moved_sizes", axis=0)
    _write_resize(context, layer, context.input(layer, 0), resize_attrs, sizes=sizes, perm=perm)


def _refuse_run_time_lengths(attrs: dict) -> None:
    problem = run_time_length_problem(_ONNX_MODES[attrs["mode"]], attrs["coordinate_transformation_mode"])
    if problem:
        raise ConversionError(problem)


# Integer scales Interpolate's scales mode turns into the lengths Resize gives (k * n) for every length below 786,432
# (OpenVINO truncates n * float32(k + 1e-6): k = 2 doubles 983,040 into one element more), found by trying every n.
_EXACT_SCALES = (2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0)
MAX_DYNAMIC_UPSAMPLED_LENGTH = 786_431


def _integer_scales(context: Context, layer: Layer, rank: int, resized: list[tuple[int, float]]) -> None:
    """Integer scales 2..8 on dynamic axes (OpenVINO's IR of nn.Upsample(scale_factor=2) exported with a dynamic
    height and width): Resize with the same scales reads every axis at k, as scales mode does, and makes it as long
    up to MAX_DYNAMIC_UPSAMPLED_LENGTH, a bound no image reaches. Nearest mode simple is floor when upsampling (its
    truncation differs only below 0, where both clamp to 0); nearest align_corners is refused (coordinates an ulp
    apart)."""
    attrs = layer.attrs
    _refuse_run_time_lengths(attrs)
    resize_attrs = _resize_attributes(attrs, "floor" if attrs["nearest_mode"] == "simple" else attrs["nearest_mode"])
    factors = dict(resized)
    perm = _onnxruntime_layout(resize_attrs["mode"], rank, list(factors), upscaling=True)
    order = perm or list(range(rank))
    if has_attribute("Resize", context.opset, "axes"):
        resize_attrs["axes"] = [order.index(axis) for axis in factors]
    else:
        factors = {axis: factors.get(axis, 1.0) for axis in order}
    scales = context.initializer(np.array(list(factors.values()), np.float32), f"{layer.name}/scales")
    _write_resize(context, layer, context.input(layer, 0), resize_attrs, scales=scales, perm=perm)


def _axis(attrs: dict, length: int, out: int, scale: float, nearest: str) -> AxisResize:
    return AxisResize(length, out, scale, attrs["coordinate_transformation_mode"], _ONNX_MODES[attrs["mode"]],
                      nearest, attrs["cube_coeff"])


def _onnx_reading(attrs: dict, ir_axes: list[AxisResize], scales_mode: bool) -> tuple[str, str]:
    """(scales or sizes, nearest mode) of a Resize that samples every axis as the layer does. Resize divides by the
    scales it is given, or by output / input for sizes; nearest mode simple (ceil when shrinking, else truncation)
    is whichever of Resize's modes picks the same sources."""
    mode = attrs["nearest_mode"]
    candidates = [m for m in NEAREST_MODES if m != "simple"] if mode == "simple" else [mode]
    for calc in ("scales", "sizes") if scales_mode else ("sizes",):
        for nearest in candidates:
            if all(_onnx_agrees(ir_axis, calc, nearest) for ir_axis in ir_axes):
                return calc, nearest
    raise ConversionError(f"Interpolate ({attrs['mode']}, {attrs['coordinate_transformation_mode']}, nearest mode "
                          f"{mode}) samples differently from every ONNX Resize on lengths "
                          f"{[(a.length, a.output) for a in ir_axes]}")


def _onnx_agrees(ir_axis: AxisResize, calc: str, nearest: str) -> bool:
    if ir_axis.length == 0:
        return False
    if calc == "scales":
        output, scale = int(np.float32(ir_axis.scale) * np.float32(ir_axis.length)), ir_axis.scale
    else:
        output, scale = ir_axis.output, float(np.float32(ir_axis.output) / np.float32(ir_axis.length))
    onnx_axis = AxisResize(ir_axis.length, output, scale, ir_axis.coordinate_mode, ir_axis.sampling, nearest,
                           ir_axis.cubic_a)
    return same_sampling(onnx_axis, ir_axis)


CONVERTERS = {"Interpolate": interpolate}
