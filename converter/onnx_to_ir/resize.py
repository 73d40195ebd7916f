"""ONNX Resize and Upsample -> IR Interpolate-11 (ir/ops/resize.py), what OpenVINO's own frontend writes.

mode nearest, linear and cubic are Interpolate's nearest, linear_onnx and cubic; the coordinate transformation and
nearest modes keep their names (Resize-10 and Upsample: asymmetric, and nearest mode simple). The layer resizes the
resized axes only (an axes input), in scales mode with the model's scales where OpenVINO's length rule gives the
lengths onnxruntime's gives, else in sizes mode with the lengths poolir computes (runtime.onnx_ops.resize).

The two worlds compute lengths and coordinates differently (runtime.kernels.resize, ir/ops/resize.py): OpenVINO's
sizes mode divides by output / input where onnxruntime divides by the model's scale, its scales mode adds 1e-6 to
the scale before truncating a length, and align_corners and same-length axes differ too. So the converter works out
every resized axis in both worlds and refuses the node where they would sample differently
(a nearest source that moves, a coordinate beyond a few ulps): that needs static lengths on the resized axes and
known scales or sizes, except for sizes known only at run time (_computed_sizes). Not convertible:
tf_crop_and_resize and half_pixel_symmetric (Interpolate has no such mode), exclude_outside = 1 (Interpolate's cubic
always clamps).
"""

from __future__ import annotations

import numpy as np

from poolir.converter.onnx_to_ir.node import OnnxNode, Value
from poolir.converter.shape_elements import DimOf, kept_whatever_length, own_dims_marked, shape_elements
from poolir.ir.errors import ConversionError, InvalidModelError, UsageError
from poolir.ir.ops.resize import output_lengths
from poolir.runtime.kernels.resize import AxisResize, run_time_length_problem, same_sampling
from poolir.runtime.onnx_ops.resize import axis_plans, resize_settings

_IR_MODES = {"nearest": "nearest", "linear": "linear_onnx", "cubic": "cubic"}


def resize(node: OnnxNode) -> list[Value]:
    attrs = node.attributes()
    modern = node.version.op_type == "Resize" and node.version.since >= 11
    if modern:
        x, roi, scales, sizes = node.checked_inputs(1, 4, optional=(1, 2, 3))
    elif node.version.since >= 9:
        (x, scales), roi, sizes = node.checked_inputs(2, 2), None, None
    else:
        x, roi, scales, sizes = node.single_input(), None, None, None
    try:
        settings = resize_settings(node.version, attrs)
    except UsageError as error:
        raise InvalidModelError(error.problem) from None
    if settings.coordinate_mode in ("tf_crop_and_resize", "half_pixel_symmetric"):
        raise ConversionError(f"coordinate_transformation_mode {settings.coordinate_mode} has no Interpolate mode")
    if settings.exclude_outside:
        raise ConversionError("exclude_outside = 1 has no Interpolate attribute (its cubic clamps the taps)")
    values = [None if value is None else node.builder.info(value.ref).value for value in (roi, scales, sizes)]
    if not modern and node.version.since < 9:
        values[1] = np.asarray(attrs["scales"], dtype=np.float32)
    shape = x.shape
    axes = list(range(len(shape))) if settings.axes is None else settings.axes
    if sizes is not None and values[2] is None:
        # PyTorch's sizes on a dynamic batch, Concat(Slice(Shape(x), 0, 2), [h, w]): x's own dims marked -1
        rank = len(shape)
        values[2] = own_dims_marked(node.builder, sizes.ref, x.ref, [axis % rank for axis in axes])
    if sizes is not None and values[2] is None and values[1] is None:
        return _computed_sizes(node, settings, x, sizes, axes)
    for value, given in zip(values[1:], (scales, sizes)):
        if given is not None and value is None:
            raise ConversionError("the scales and sizes of a Resize must be constants (or fold to constants, or be "
                                  "the input's own dims on the axes it keeps); --input-shape can fix the shape")
    by_scales = values[1] is not None and np.size(values[1]) > 0
    dynamic = {axis for axis in axes if -len(shape) <= axis < len(shape) and shape[axis] is None}
    # keep_aspect_ratio_policy other than stretch makes every axis's scale depend on the others' lengths
    kept = set() if not by_scales and settings.policy != "stretch" else \
        kept_whatever_length(axes, values[1] if by_scales else values[2], dynamic, by_scales)
    if any(shape[axis] is None and axis not in kept for axis in axes if -len(shape) <= axis < len(shape)):
        if by_scales and len(np.ravel(values[1])) == len(axes):
            resized = [(axis % len(shape), float(f)) for axis, f in zip(axes, np.ravel(values[1])) if f != 1]
            if all(f.is_integer() and f >= 2 for _, f in resized):
                return _integer_scales(node, settings, x, [(axis, int(f)) for axis, f in resized])
        raise ConversionError(f"Resize needs static lengths on the resized axes, got input dims {list(shape)}")
    static = tuple(n if n is not None else 1 for n in shape)  # see kept_whatever_length: any length will do
    if values[2] is not None and kept:
        values[2] = np.array([1 if axis in kept else size for axis, size in zip(axes, values[2])], np.int64)
    try:
        plans = axis_plans(settings, static, *values)
    except UsageError as error:
        raise InvalidModelError(error.problem) from None
    if all(plan.output == plan.length for _, plan in plans):
        return [x]      # onnxruntime copies an input whose shape the Resize keeps (runtime.kernels.resize)
    plans = [(axis, plan) for axis, plan in plans if shape[axis] is not None]
    ir_calc = _ir_calculation(plans, by_scales)
    ir_attrs = {"mode": _IR_MODES[settings.sampling], "shape_calculation_mode": ir_calc,
                "coordinate_transformation_mode": settings.coordinate_mode, "nearest_mode": settings.nearest_mode,
                "antialias": False, "pads_begin": (0,) * len(shape), "pads_end": (0,) * len(shape),
                "cube_coeff": settings.cubic_a}
    if ir_calc == "scales":
        target = Value(node.const(np.array([plan.scale for _, plan in plans], np.float32)), "f32", (len(plans),))
    else:
        target = Value(node.const(np.array([plan.output for _, plan in plans], np.int64)), "i64", (len(plans),))
    axes_ref = Value(node.const(np.array([axis for axis, _ in plans], np.int64)), "i64", (len(plans),))
    return node.layer("Interpolate", [x, target, axes_ref], ir_attrs, name=node.name, newest=True)


def _computed_sizes(node: OnnxNode, settings, x: Value, sizes: Value, axes: list[int]) -> list[Value]:
    """Sizes only known at run time (a segmentation head upsampled to the image's dynamic height and width): both
    engines read an axis at float32(output) / float32(input) with the same coordinate formula and copy an axis whose
    length stays, so Interpolate in sizes mode samples as Resize does, except for keep_aspect_ratio_policy, whose
    scales depend on every axis's length, and where runtime.kernels.resize.run_time_length_problem says."""
    if settings.policy != "stretch":
        raise ConversionError(f"keep_aspect_ratio_policy {settings.policy} with sizes known only at run time")
    rank = len(x.shape)
    if sizes.element_type != "i64":
        raise InvalidModelError(f"the sizes of a Resize must be int64, got {sizes.element_type}")
    if len(sizes.shape) != 1 or sizes.shape[0] != len(axes):
        raise ConversionError(f"sizes of shape {list(sizes.shape)} for {len(axes)} axes")
    axes = [axis % rank for axis in axes]
    # Leave out the axes whose size is known to be the input's own length (copied by both engines), so that shape
    # inference keeps their dims ([?, C, ?, ?] for PyTorch's Concat(Slice(Shape(p), 0, 2), Slice(Shape(x), 2, 4)))
    elements = shape_elements(node.builder, sizes.ref) or [None] * len(axes)
    resized = [i for i, (axis, element) in enumerate(zip(axes, elements))
               if element != DimOf(x.ref, axis) and (x.shape[axis] is None or element != x.shape[axis])]
    if not resized:
        return [x]
    if len(resized) < len(axes):
        positions = Value(node.const(np.array(resized, np.int64)), "i64", (len(resized),))
        sizes = node.layer("Gather", [sizes, positions, Value(node.const(np.array(0, np.int64)), "i64", ())],
                           {"batch_dims": 0}, name=f"{node.name}/resized_sizes", newest=True)[0]
        axes = [axes[i] for i in resized]
    return _interpolate_sizes(node, settings, x, sizes, axes)


def _integer_scales(node: OnnxNode, settings, x: Value, resized: list[tuple[int, int]]) -> list[Value]:
    """Integer scales k >= 2 on dynamic axes (nn.Upsample(scale_factor=2) in a network exported with a dynamic height
    and width). Resize reads such an axis at k and makes it trunc(k * n) long; Interpolate in sizes mode with sizes
    n * k computed in the graph (ShapeOf, Gather, Multiply) reads it at float32(k * n) / float32(n), which is k, and
    makes it k * n long: the same while k * n is exact in float32 (below 2^24, what onnxruntime's float32 product
    needs itself). Scales mode would not do: OpenVINO truncates n * (k + 1e-6), one more element for n near 10^6."""
    axes = np.array([axis for axis, _ in resized], np.int64)
    shape = node.layer("ShapeOf", [x], {"output_type": "i64"}, name=f"{node.name}/shape")[0]
    picked = node.layer("Gather", [shape, Value(node.const(axes), "i64", (len(axes),)),
                                   Value(node.const(np.array(0, np.int64)), "i64", ())],
                        {"batch_dims": 0}, name=f"{node.name}/lengths", newest=True)[0]
    factors = Value(node.const(np.array([k for _, k in resized], np.int64)), "i64", (len(axes),))
    sizes = node.layer("Multiply", [picked, factors], {"auto_broadcast": "numpy"}, name=f"{node.name}/sizes")[0]
    return _interpolate_sizes(node, settings, x, sizes, [int(axis) for axis in axes])


def _interpolate_sizes(node: OnnxNode, settings, x: Value, sizes: Value, axes: list[int]) -> list[Value]:
    """Interpolate-11 in sizes mode with sizes computed in the graph, for `axes` (run_time_length_problem refuses)."""
    problem = run_time_length_problem(settings.sampling, settings.coordinate_mode)
    if problem:
        raise ConversionError(problem)
    rank = len(x.shape)
    ir_attrs = {"mode": _IR_MODES[settings.sampling], "shape_calculation_mode": "sizes",
                "coordinate_transformation_mode": settings.coordinate_mode, "nearest_mode": settings.nearest_mode,
                "antialias": False, "pads_begin": (0,) * rank, "pads_end": (0,) * rank, "cube_coeff": settings.cubic_a}
    axes_ref = Value(node.const(np.array(axes, np.int64)), "i64", (len(axes),))
    return node.layer("Interpolate", [x, sizes, axes_ref], ir_attrs, name=node.name, newest=True)


def _ir_calculation(plans, by_scales: bool) -> str:
    """Interpolate's shape_calculation_mode that samples every axis as the node does: scales (read at the model's
    scale, when it gave scales and OpenVINO's length rule gives the same lengths), else sizes (read at
    output / input); ConversionError naming the axis when neither does."""
    for calc in ("scales", "sizes") if by_scales else ("sizes",):
        if all(_samples_alike(plan, calc) for _, plan in plans):
            return calc
    axis, plan = next((axis, plan) for axis, plan in plans if not _samples_alike(plan, "sizes"))
    raise ConversionError(f"axis {axis} ({plan.length} -> {plan.output}, {plan.coordinate_mode}) samples differently "
                          "in OpenVINO's Interpolate (its coordinate and length rules differ from onnxruntime's)")


def _samples_alike(plan: AxisResize, calc: str) -> bool:
    if plan.length == 0:
        return False
    if calc == "scales":
        (output,) = output_lengths([plan.length], [0], [plan.scale], None)
        scale = plan.scale
    else:
        output, scale = plan.output, float(np.float32(plan.output) / np.float32(plan.length))
    ir_plan = AxisResize(plan.length, output, scale, plan.coordinate_mode, plan.sampling, plan.nearest_mode,
                         plan.cubic_a)
    return same_sampling(plan, ir_plan)


CONVERTERS = {"Resize": resize, "Upsample": resize}
