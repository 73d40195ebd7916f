"""ONNX BatchNormalization, LayerNormalization, InstanceNormalization, GroupNormalization, LRN and Dropout -> IR
layers whose meaning, as OpenVINO executes it, is the ONNX one.

The differences this bridges (OpenVINO's side: runtime/ir_ops/normalization.py; ONNX's side:
runtime/onnx_ops/normalization.py):

- BatchNormalization (spatial=1, every version): one BatchNormInference in its newest version, whose inputs
  are data, gamma, beta, mean, variance (version 1 orders them gamma, beta, data, ...). Statistics of
  another float type than X (BatchNormalization-15's T1, T2) are converted to X's type first. spatial=0
  (statistics of shape C x D1 .. Dn) becomes Subtract, Add, Sqrt, Divide, Multiply, Add with numpy
  broadcasting, and so does an epsilon OpenVINO's BatchNormInference refuses (negative, NaN, above the
  largest f32), with the statistics reshaped to C x 1 .. 1. Training-mode nodes and their extra outputs are
  refused (runtime.onnx_ops.inference_problem).
- LayerNormalization: MVN-6 over the axes [axis, rank) with normalize_variance, eps_mode inside_sqrt (what
  OpenVINO's own frontend writes too), then Multiply by Scale and Add B (numpy broadcasting). MVN computes in
  f32 for f16/bf16 and rounds Normalized once, as stash_type 1 does; a float64 X, which stash_type 1
  normalises in float32, is converted to f32 around the MVN. The optional Mean and InvStdDev outputs are
  refused (no model poolir has seen asks for them in inference).
- InstanceNormalization: MVN-6 over the spatial axes (inside_sqrt), then Multiply by scale and Add B reshaped to
  [C, 1, ...] (what OpenVINO's own frontend writes).
- GroupNormalization: GroupNormalization-12 with per-channel scale and bias; version 18's per-group scale and bias
  become per-channel constants (each repeated C / num_groups times: they must be constant, C static). float64 is
  refused: stash_type 1 normalises it in float32, the IR layer in float64.
- LRN: OpenVINO's LRN over axes [1] scales alpha by 1/size like ONNX, but its window is symmetric,
  [c - floor((size-1)/2), c + floor((size-1)/2)]: an even ONNX size (extra element after c) has no LRN
  equivalent and is refused. OpenVINO's CPU plugin truncates bias to an integer, so a non-integer bias
  b > 0 is written as LRN(alpha / b, bias 1) * b^-beta (x / (b + a S)^beta = b^-beta x / (1 + (a/b) S)^beta);
  a non-integer bias <= 0 is refused.
- Dropout (inference): no layer; its output is its input's tensor (the driver copies it when it is also a
  graph input or output under another name), and a requested mask is a constant all-true tensor (ones of
  X's type before opset 10) of X's static shape.
"""

from __future__ import annotations

import numpy as np

from poolir.converter.onnx_to_ir.node import OnnxNode, Value
from poolir.ir.element_types import dtype_of
from poolir.ir.errors import InvalidModelError, UnsupportedError
from poolir.ir.ops.normalization import batch_norm_epsilon_ok
from poolir.runtime.onnx_ops.normalization import (STASH_TYPES, dropout_mask_dtype, inference_problem,
                                                   layer_norm_axes, lrn_window, training_mode_problem)


def batch_norm(node: OnnxNode) -> list[Value]:
    x, scale, bias, mean, var = node.checked_inputs(5, 5)
    attrs = node.attributes()
    node.check_element_type(x)
    problem = inference_problem(node.version, attrs, list(node.node.output))
    if problem:
        raise UnsupportedError(problem)
    rank = len(x.shape)
    if rank < 2:
        raise InvalidModelError(f"X has rank {rank}; {node.version.label} needs N x C x D1 .. Dn (rank >= 2)")
    per_channel = attrs.get("spatial", 1) != 0
    want = x.shape[1:2] if per_channel else x.shape[1:]
    stats = []
    for what, value in (("scale", scale), ("B", bias), ("mean", mean), ("var", var)):
        if len(value.shape) != len(want) or any(a is not None and b is not None and a != b
                                               for a, b in zip(value.shape, want)):
            raise InvalidModelError(f"{what} has shape {list(value.shape)}, expected {list(want)}")
        ref = value.ref
        if value.element_type != x.element_type:
            ref = node.add("Convert", [ref], {"destination_type": x.element_type}, f"{node.name}/{what}")[0]
        stats.append(ref)
    epsilon = attrs["epsilon"]
    if per_channel and batch_norm_epsilon_ok(epsilon):
        ref = node.add("BatchNormInference", [x.ref, *stats], {"epsilon": epsilon}, node.name, newest=True)[0]
        return [Value(ref, x.element_type, x.shape)]
    if per_channel:
        # An epsilon BatchNormInference refuses (negative, NaN, past f32): the formula's own layers, with the
        # statistics as [C, 1, .., 1] so that they broadcast along axis 1, keep ONNX's meaning (NaN where
        # var + epsilon < 0).
        target = node.const([-1] + [1] * (rank - 2), "i64")
        stats = [node.add("Reshape", [ref, target], {"special_zero": False}, f"{node.name}/{what}_per_channel")[0]
                 for ref, what in zip(stats, ("scale", "B", "mean", "var"))]
    scale_ref, bias_ref, mean_ref, var_ref = stats
    numpy = {"auto_broadcast": "numpy"}
    centred = node.add("Subtract", [x.ref, mean_ref], numpy, f"{node.name}/centred")[0]
    padded = node.add("Add", [var_ref, node.const(epsilon, x.element_type)], numpy, f"{node.name}/var_eps")[0]
    deviation = node.add("Sqrt", [padded], name=f"{node.name}/std")[0]
    normal = node.add("Divide", [centred, deviation], {**numpy, "m_pythondiv": True}, f"{node.name}/normal")[0]
    scaled = node.add("Multiply", [normal, scale_ref], numpy, f"{node.name}/scaled")[0]
    return [Value(node.add("Add", [scaled, bias_ref], numpy, node.name)[0], x.element_type, x.shape)]


def layer_norm(node: OnnxNode) -> list[Value]:
    x, scale, bias = node.checked_inputs(2, 3, optional=(2,))
    attrs = node.attributes()
    node.check_element_type(x)
    node.check_same_element_type(x, "X", [("Scale", scale), ("B", bias)])
    if any(node.node.output[1:]):
        raise UnsupportedError("the Mean and InvStdDev outputs of LayerNormalization: poolir converts Y only")
    if attrs["stash_type"] not in STASH_TYPES:
        raise UnsupportedError(f"stash_type {attrs['stash_type']}: poolir converts stash_type 1 (float32) only")
    if not x.shape:
        raise InvalidModelError(f"X is a scalar; {node.version.label} needs rank >= 1")
    axes = node.const(list(layer_norm_axes(attrs["axis"], len(x.shape))), "i64")
    source = x.ref
    stash = x.element_type == "f64"  # stash_type 1 normalises a float64 X in float32 (the spec's Cast)
    if stash:
        source = node.add("Convert", [source], {"destination_type": "f32"}, f"{node.name}/to_stash")[0]
    mvn_attrs = {"normalize_variance": True, "eps": attrs["epsilon"], "eps_mode": "inside_sqrt"}
    ref = node.add("MVN", [source, axes], mvn_attrs, f"{node.name}/mvn", newest=True)[0]
    if stash:
        ref = node.add("Convert", [ref], {"destination_type": "f64"}, f"{node.name}/from_stash")[0]
    numpy = {"auto_broadcast": "numpy"}
    ref = node.add("Multiply", [ref, scale.ref], numpy, node.name if bias is None else f"{node.name}/scaled")[0]
    if bias is not None:
        ref = node.add("Add", [ref, bias.ref], numpy, node.name)[0]
    return [Value(ref, x.element_type, x.shape)]


def instance_norm(node: OnnxNode) -> list[Value]:
    x, scale, bias = node.checked_inputs(3, 3)
    attrs = node.attributes()
    node.check_element_type(x)
    node.check_same_element_type(x, "the input", [("scale", scale), ("B", bias)])
    rank = len(x.shape)
    if rank < 3:
        raise InvalidModelError(f"input of rank {rank}: {node.version.label} needs N x C x D1 ... (rank >= 3)")
    channels = x.shape[1]
    for name, operand in (("scale", scale), ("B", bias)):
        length = operand.shape[0] if len(operand.shape) == 1 else -1
        if length == -1 or (None not in (length, channels) and length != channels):
            raise InvalidModelError(f"{name} has shape {list(operand.shape)}, expected [{channels}] (one per channel)")
    mvn_attrs = {"eps": attrs["epsilon"], "normalize_variance": True, "eps_mode": "inside_sqrt"}
    ref = node.add("MVN", [x.ref, node.const(list(range(2, rank)), "i64")], mvn_attrs, f"{node.name}/mvn",
                   newest=True)[0]
    channel_shape = node.const([-1] + [1] * (rank - 2), "i64")
    numpy = {"auto_broadcast": "numpy"}
    for layer_type, operand, name in (("Multiply", scale, f"{node.name}/scaled"), ("Add", bias, node.name)):
        shaped = node.add("Reshape", [operand.ref, channel_shape], {"special_zero": False},
                          f"{node.name}/{layer_type.lower()}_operand")[0]
        ref = node.add(layer_type, [ref, shaped], numpy, name)[0]
    return [Value(ref, x.element_type, x.shape)]


def group_norm(node: OnnxNode) -> list[Value]:
    x, scale, bias = node.checked_inputs(3, 3)
    attrs = node.attributes()
    node.check_element_type(x)
    node.check_same_element_type(x, "X", [("scale", scale), ("bias", bias)])
    if x.element_type == "f64":
        raise UnsupportedError("float64 GroupNormalization: ONNX normalises it in float32 (stash_type), OpenVINO's "
                               "GroupNormalization in float64, so no exact IR exists")
    per_channel = "stash_type" in node.version.attributes
    if per_channel and attrs["stash_type"] not in STASH_TYPES:
        raise UnsupportedError(f"stash_type {attrs['stash_type']}: poolir converts stash_type 1 (float32) only")
    groups, refs = attrs["num_groups"], [scale.ref, bias.ref]
    if not per_channel:  # version 18: one scale and bias per group, repeated over its channels
        channels = x.shape[1] if len(x.shape) >= 2 else None
        values = [node.builder.info(operand.ref).value for operand in (scale, bias)]
        if channels is None or any(value is None for value in values) or groups < 1 or channels % groups:
            raise UnsupportedError(f"{node.version.label} scales per group: poolir converts it with constant scale "
                                   f"and bias and a static channel count that num_groups divides")
        refs = [node.const(np.repeat(value, channels // groups), x.element_type) for value in values]
    ref = node.add("GroupNormalization", [x.ref, *refs], {"num_groups": groups, "epsilon": attrs["epsilon"]},
                   node.name)[0]
    return [Value(ref, x.element_type, x.shape)]


def lrn(node: OnnxNode) -> list[Value]:
    x, attrs = node.checked_single_input()
    size = attrs["size"]
    if size < 1:
        raise InvalidModelError(f"attribute 'size' = {size}: must be >= 1")
    before, after = lrn_window(size)
    if before != after:
        raise UnsupportedError(f"size {size} is even: ONNX's window [c - {before}, c + {after}] is not symmetric, "
                               "and OpenVINO's LRN window always is ([c - floor((size-1)/2), c + floor((size-1)/2)])")
    if len(x.shape) < 2:
        raise InvalidModelError(f"X has rank {len(x.shape)}; {node.version.label} needs rank >= 2")
    alpha, beta, bias = attrs["alpha"], attrs["beta"], attrs["bias"]
    axes = node.const([1], "i64")
    if float(bias).is_integer():
        ref = node.add("LRN", [x.ref, axes], {"alpha": alpha, "beta": beta, "bias": bias, "size": size}, node.name)[0]
        return [Value(ref, x.element_type, x.shape)]
    if bias <= 0:
        raise UnsupportedError(f"bias {bias} is not an integer and not > 0: OpenVINO's CPU plugin truncates LRN's "
                               "bias to an integer, and only a positive bias can be factored out exactly")
    attrs_ir = {"alpha": alpha / bias, "beta": beta, "bias": 1.0, "size": size}
    normalised = node.add("LRN", [x.ref, axes], attrs_ir, f"{node.name}/unit_bias")[0]
    factor = node.const(np.float64(bias) ** -np.float64(beta), x.element_type)
    ref = node.add("Multiply", [normalised, factor], {"auto_broadcast": "numpy"}, node.name)[0]
    return [Value(ref, x.element_type, x.shape)]


def dropout(node: OnnxNode) -> list[Value]:
    # Dropout-1 to -10: ratio is an attribute; 12+: data, then the optional ratio and training_mode inputs.
    x, *_ = node.checked_inputs(1, 1 if "ratio" in node.version.attributes else 3, optional=(1, 2))
    attrs = node.attributes()
    node.check_element_type(x)
    problem = inference_problem(node.version, attrs, list(node.node.output))
    if problem:
        raise UnsupportedError(problem)
    extra = node.node.input[1:]
    values = {}
    for index, name in enumerate(extra, start=1):
        if name:
            values[index] = node.builder.info(node.inputs[index].ref).value
    _check_training_mode(node, values)
    outputs = [x]
    if len(node.node.output) >= 2 and node.node.output[1]:
        dtype = dropout_mask_dtype(node.version, dtype_of(x.element_type))
        element_type = "boolean" if dtype == np.bool_ else x.element_type
        if all(d is not None for d in x.shape):
            outputs.append(Value(node.const(np.ones(x.shape, dtype)), element_type, x.shape))
        else:   # every element kept: a one broadcast to x's shape, known only at run time
            (shape,) = node.add("ShapeOf", [x.ref], {"output_type": "i64"}, name=f"{node.name}/shape")
            (mask,) = node.add("Broadcast", [node.const(np.ones((), dtype)), shape], {"mode": "numpy"},
                               name=f"{node.name}/mask")
            outputs.append(Value(mask, element_type, x.shape))
    return outputs


def _check_training_mode(node: OnnxNode, values: dict) -> None:
    """Dropout-12+: a training_mode input must be a constant false (or come with a ratio of 0)."""
    if 2 not in values:
        return
    training, ratio = values[2], values.get(1)
    if training is None or (1 in values and ratio is None):
        raise UnsupportedError("training_mode (or ratio) is not a constant: poolir converts inference only and "
                               "must know that training_mode is false")
    problem = training_mode_problem(ratio, training)
    if problem:
        raise UnsupportedError(problem)


CONVERTERS = {"BatchNormalization": batch_norm, "LayerNormalization": layer_norm, "LRN": lrn, "Dropout": dropout,
              "InstanceNormalization": instance_norm, "GroupNormalization": group_norm}
