"""IR BatchNormInference, LRN, MVN and GroupNormalization -> ONNX nodes with the meaning OpenVINO gives them.

- BatchNormInference (version 1: gamma, beta, data, mean, variance; version 5: data, gamma, beta, mean,
  variance; ir.ops.normalization.BN_PORTS) -> BatchNormalization with X, scale, B, mean, var and epsilon
  (spatial keeps its default 1 in opsets 7 and 8; every written opset is >= 7, so there is no is_test).
- LRN over axes [1] -> ONNX LRN. OpenVINO's window is [c - h, c + h] with h = floor((size-1)/2), alpha
  divided by size (one axis), and a bias truncated to an integer by its CPU plugin
  (runtime/ir_ops/normalization.py). ONNX's window for an odd size s' is [c - (s'-1)/2, c + (s'-1)/2], its
  alpha divided by s': so s' = 2h + 1, alpha' = alpha * s' / size and bias' = int(bias) carry it exactly
  (an even size becomes the next lower odd one). LRN over spatial axes has no ONNX LRN (which always
  normalises across channels): refused.
- MVN (1 and 6) -> LayerNormalization (Scale all ones, no B) from opset 17 when it normalises the trailing
  axes [k, rank) with normalize_variance, eps inside the sqrt, of f32/f16/bf16 data with static normalised
  dims: LayerNormalization's stash_type 1 computes in float32 and rounds Normalized once, as MVN does.
  Otherwise (another opset, other axes, outside_sqrt, no variance, f64 data, which MVN normalises in f64
  and stash_type 1 in f32) the formula's nodes in float32 (f16/bf16 cast to f32 and back): ReduceMean,
  Sub, Mul, ReduceMean, Add, Sqrt, Reciprocal, Mul, as poolir's runtime computes it
  (runtime/kernels/normalization.standardize).
- GroupNormalization-12 -> GroupNormalization-21 (stash_type 1) from opset 21; before it, what PyTorch's
  TorchScript exporter writes for GroupNorm: Reshape to [N, num_groups, -1], InstanceNormalization with unit
  scale and zero B, Reshape back to Shape(x), Mul by scale and Add bias as [C, 1, ...]. float64 is refused
  (OpenVINO normalises it in float64, stash_type 1 in float32, and onnxruntime has no float64
  InstanceNormalization).
- MVN followed by Multiply by a constant and Add of a constant (what OpenVINO writes for LayerNormalization and
  torch's LayerNorm), each read only by the next, folds into one LayerNormalization with that Scale and B when
  the MVN itself would be one and the constants do not widen the shape (`fold_layer_norm`).
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from poolir.converter.element_types import onnx_element_type
from poolir.converter.ir_to_onnx.context import Context
from poolir.converter.ir_to_onnx.opsets import check_writes, has_attribute
from poolir.ir.element_types import dtype_of
from poolir.ir.errors import ConversionError
from poolir.ir.model import Layer
from poolir.ir.ops.normalization import bn_ports, mvn1_axes
from poolir.runtime.onnx_ops import first_opset, op_version
from poolir.runtime.ir_ops.normalization import openvino_lrn_axes_problem, openvino_lrn_window


def batch_norm(context: Context, layer: Layer) -> None:
    ports = bn_ports(layer)
    check_writes(context, "BatchNormalization", context.input_info(layer, ports[0]).element_type)
    inputs = [context.input(layer, port) for port in ports]
    context.node_into("BatchNormalization", inputs, [context.name_output(layer, 0)], layer.name,
                      epsilon=float(layer.attrs["epsilon"]))


def lrn(context: Context, layer: Layer) -> None:
    rank = len(context.input_info(layer, 0).shape)
    axes = list(context.constant_ints(layer, 1, "LRN axes"))
    problem = openvino_lrn_axes_problem(axes, rank)
    if problem:
        raise ConversionError(problem)
    axes = sorted(axes)
    if axes != [1]:
        raise ConversionError(f"LRN over the spatial axes {axes}: ONNX LRN normalises across channels (axis 1) only")
    check_writes(context, "LRN", context.input_info(layer, 0).element_type)
    size = layer.attrs["size"]
    onnx_size = 2 * openvino_lrn_window(size) + 1
    context.node_into("LRN", [context.input(layer, 0)], [context.name_output(layer, 0)], layer.name,
                      size=onnx_size, alpha=float(layer.attrs["alpha"]) * onnx_size / size,
                      beta=float(layer.attrs["beta"]), bias=float(int(layer.attrs["bias"])))


def group_norm(context: Context, layer: Layer) -> None:
    info = context.input_info(layer, 0)
    if info.element_type == "f64":
        raise ConversionError("float64 GroupNormalization: OpenVINO normalises it in float64, ONNX's stash_type in "
                              "float32, so no exact ONNX exists")
    groups, epsilon = layer.attrs["num_groups"], float(np.float32(layer.attrs["epsilon"]))
    x, scale, bias = (context.input(layer, port) for port in range(3))
    output = context.name_output(layer, 0)
    row = op_version("GroupNormalization", context.opset)
    if row is not None and "stash_type" in row.attributes:  # per-channel scale and bias (version 21)
        check_writes(context, "GroupNormalization", info.element_type)
        context.node_into("GroupNormalization", [x, scale, bias], [output], layer.name, num_groups=groups,
                          epsilon=epsilon, stash_type=1)
        return
    check_writes(context, "InstanceNormalization", info.element_type, f"{layer.type} (as PyTorch writes it)")
    dtype, rank = dtype_of(info.element_type), len(info.shape)

    def constant(value, suffix: str) -> str:
        return context.initializer(np.asarray(value), f"{layer.name}/{suffix}")
    grouped = context.node("Reshape", [x, constant(np.array([0, groups, -1], np.int64), "grouped_shape")],
                           f"{layer.name}/grouped")[0]
    normalised = context.node("InstanceNormalization", [grouped, constant(np.ones(groups, dtype), "unit_scale"),
                                                        constant(np.zeros(groups, dtype), "zero_bias")],
                              f"{layer.name}/normalised", epsilon=epsilon)[0]
    shape = context.node("Shape", [x], f"{layer.name}/shape")[0]
    restored = context.node("Reshape", [normalised, shape], f"{layer.name}/restored")[0]
    channel_shape = constant(np.array([-1] + [1] * (rank - 2), np.int64), "channel_shape")
    scaled = context.node("Mul", [restored, context.node("Reshape", [scale, channel_shape], f"{layer.name}/scale")[0]],
                          f"{layer.name}/scaled")[0]
    context.node_into("Add", [scaled, context.node("Reshape", [bias, channel_shape], f"{layer.name}/bias")[0]],
                      [output], layer.name)


def _mvn_axes(context: Context, layer: Layer, rank: int) -> list[int]:
    written = (mvn1_axes(layer.attrs, rank) if "eps_mode" not in layer.attrs
               else context.constant_ints(layer, 1, "MVN axes"))
    axes = sorted(a + rank if a < 0 else a for a in written)
    if not axes or len(set(axes)) != len(axes) or not all(0 <= a < rank for a in axes):
        raise ConversionError(f"MVN axes {list(written)} for rank {rank}: poolir converts distinct axes, at least one")
    return axes


def mvn(context: Context, layer: Layer) -> None:
    info = context.input_info(layer, 0)
    eps = float(np.float32(layer.attrs["eps"]))
    axis = _as_layer_norm(context, layer)
    if axis is not None:
        check_writes(context, "LayerNormalization", info.element_type)
        ones = np.ones([d.min for d in info.shape[axis:]], dtype_of(info.element_type))
        scale = context.initializer(ones, f"{layer.name}/scale")
        context.node_into("LayerNormalization", [context.input(layer, 0), scale], [context.name_output(layer, 0)],
                          layer.name, axis=axis, epsilon=eps)
        return
    inside = layer.attrs.get("eps_mode", "inside_sqrt") == "inside_sqrt"
    _mvn_formula(context, layer, info.element_type, _mvn_axes(context, layer, len(info.shape)),
                 bool(layer.attrs["normalize_variance"]), inside, eps)


def _as_layer_norm(context: Context, layer: Layer) -> int | None:
    """The axis of the LayerNormalization this MVN is exactly, in the requested opset, or None."""
    info = context.input_info(layer, 0)
    rank = len(info.shape)
    since = first_opset("LayerNormalization")
    if since is None or context.opset < since or not layer.attrs["normalize_variance"] or info.element_type == "f64":
        return None
    if layer.attrs.get("eps_mode", "inside_sqrt") != "inside_sqrt":
        return None
    axes = _mvn_axes(context, layer, rank)
    if axes != list(range(axes[0], rank)) or not all(d.is_static for d in info.shape[axes[0]:]):
        return None
    return axes[0]


def _constant_operand(context: Context, layer: Layer | None, source: Layer, kind: str, data: Layer,
                      axis: int) -> str | None:
    """The ONNX name of `layer`'s constant operand when `layer` is `kind`(source's output, constant) or
    `kind`(constant, source's output) with numpy broadcasting, in the element type of `data`'s input, spanning
    only the normalised axes [axis, rank) and not widening them (ONNX's Scale and B broadcast to X one way, and
    onnxruntime takes them over the normalised axes); else None."""
    if layer is None or layer.type != kind or layer.attrs.get("auto_broadcast") != "numpy":
        return None
    producers = [context.producers[(layer.id, port.id)][0] for port in layer.inputs]
    if producers.count(source.id) != 1:
        return None
    index = 1 - producers.index(source.id)
    value = context.constant(layer, index)
    info = context.input_info(data, 0)
    shape = [d.min for d in info.shape]
    if value is None or context.input_info(layer, index).element_type != info.element_type:
        return None
    leading = next((i for i, v in enumerate(value.shape) if v != 1), value.ndim)  # OpenVINO pads [C] to [1, 1, C]
    trimmed = value.shape[leading:]
    if len(trimmed) > len(shape) - axis or any(v not in (1, d) for v, d in zip(trimmed[::-1], shape[::-1])):
        return None
    if trimmed == value.shape:
        return context.input(layer, index)
    return context.initializer(value.reshape(trimmed).astype(dtype_of(info.element_type)), f"{layer.name}/{kind}")


def fold_layer_norm(context: Context, layer: Layer) -> bool:
    axis = _as_layer_norm(context, layer)
    if axis is None:
        return False
    multiply = context.single_consumer(layer)
    scale = _constant_operand(context, multiply, layer, "Multiply", layer, axis)
    if scale is None:
        return False
    add = context.single_consumer(multiply)
    bias = _constant_operand(context, add, multiply, "Add", layer, axis)
    last = multiply if bias is None else add
    check_writes(context, "LayerNormalization", context.input_info(layer, 0).element_type)
    inputs = [context.input(layer, 0), scale] + ([] if bias is None else [bias])
    context.node_into("LayerNormalization", inputs, [context.name_output(last, 0)], last.name, axis=axis,
                      epsilon=float(np.float32(layer.attrs["eps"])))
    context.folded.update({multiply.id} if bias is None else {multiply.id, add.id})
    return True


def _mvn_formula(context: Context, layer: Layer, element_type: str, axes: list[int], variance: bool, inside: bool,
                 eps: float) -> None:
    low = element_type in ("f16", "bf16")
    check_writes(context, "ReduceMean", "f32" if low else element_type, f"{layer.type} (its formula)")
    source, output = context.input(layer, 0), context.name_output(layer, 0)
    if low:
        check_writes(context, "Cast", element_type, f"{layer.type} on {element_type} (computed in float32)")
        source = context.node("Cast", [source], f"{layer.name}/to_f32", to=TensorProto.FLOAT)[0]
    dtype = np.float32 if low else dtype_of(element_type)

    def node(op_type: str, inputs: list[str], what: str, **attrs) -> str:
        return context.node(op_type, inputs, f"{layer.name}/{what}", **attrs)[0]

    def mean(tensor: str, what: str) -> str:
        if has_attribute("ReduceMean", context.opset, "axes"):
            return node("ReduceMean", [tensor], what, axes=axes, keepdims=1)
        return node("ReduceMean", [tensor, context.int64s(axes, f"{layer.name}/axes")], what, keepdims=1)

    def last(op_type: str, inputs: list[str]) -> None:  # the final node writes the layer's output (f32: no Cast)
        if low:
            inputs = [node(op_type, inputs, "f32")]
            op_type, attrs = "Cast", {"to": onnx_element_type(element_type)}
        else:
            attrs = {}
        context.node_into(op_type, inputs, [output], layer.name, **attrs)

    centred_inputs = [source, mean(source, "mean")]
    if not variance:
        last("Sub", centred_inputs)
        return
    centred = node("Sub", centred_inputs, "centred")
    var = mean(node("Mul", [centred, centred], "squared"), "variance")
    epsilon = context.initializer(np.asarray(eps, dtype), f"{layer.name}/eps")
    divisor = (node("Sqrt", [node("Add", [var, epsilon], "var_eps")], "std") if inside
               else node("Add", [node("Sqrt", [var], "std"), epsilon], "std_eps"))
    last("Mul", [centred, node("Reciprocal", [divisor], "inverse")])


CONVERTERS = {"BatchNormInference": batch_norm, "LRN": lrn, "MVN": mvn, "GroupNormalization": group_norm}
FOLDS = {"MVN": fold_layer_norm}
