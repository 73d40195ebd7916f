"""ONNX Conv -> IR Convolution (group 1) or GroupConvolution, plus an Add for the bias.

- The geometry carries over one to one: OpenVINO's Convolution rounds down like ONNX Conv, and its
  auto_pad same_upper / same_lower / valid resolve pads by the same rule as ONNX SAME_UPPER / SAME_LOWER /
  VALID (ir.geometry.same_pads, dilation included: both ir/ops/convolution.py and
  runtime/onnx_ops/convolution.py call it); NOTSET is explicit with ONNX's pads split into begins and ends.
  OpenVINO's own ONNX frontend writes the same mapping (auto_pad="same_upper" with pads "0, 0").
- group > 1: GroupConvolution with weights [G, M/G, C/G, *k]. Constant weights are reshaped into a new
  Const (what OpenVINO's frontend writes); weights computed in the graph get a Reshape layer.
- B: Add with B as [1, M, 1, ...] (a reshaped Const, or a Reshape layer), as OpenVINO writes it.
- float16 / bfloat16 with a bias: ONNX adds the bias to the float32 sum and rounds once (onnxruntime's Conv
  and poolir's kernel); Convolution then Add in f16 would round twice. So the convolution and the Add run in
  f32 (Convert layers around them) and the sum is rounded once, at the end.
"""

from __future__ import annotations

import numpy as np

from poolir.converter.onnx_to_ir.node import OnnxNode, Value
from poolir.ir.builder import OutputRef
from poolir.ir.errors import InvalidModelError, UnsupportedError, UsageError
from poolir.ir.geometry import pool_windows
from poolir.runtime.onnx_ops.convolution import onnx_conv

_NARROW_FLOATS = ("f16", "bf16")


def reshaped(node: OnnxNode, value: Value, shape: tuple[int, ...], name: str) -> OutputRef:
    """`value` with a new static shape: a new Const when it is constant, else a Reshape layer."""
    data = node.builder.constant_value(value.ref)
    if data is not None:
        return node.const(np.asarray(data).reshape(shape))
    target = node.const(np.asarray(shape, dtype=np.int64))
    return node.add("Reshape", [value.ref, target], {"special_zero": False}, name)[0]


def convert_to(node: OnnxNode, ref: OutputRef, element_type: str, name: str) -> OutputRef:
    return node.add("Convert", [ref], {"destination_type": element_type}, name)[0]


def conv(node: OnnxNode) -> list[Value]:
    if not 2 <= len(node.inputs) <= 3:
        raise InvalidModelError(f"{node.version.label} takes 2 or 3 inputs (X, W, optional B), got {len(node.inputs)}")
    x, w = node.inputs[0], node.inputs[1]
    has_bias = len(node.inputs) == 3 and bool(node.node.input[2])
    attrs = node.attributes()
    node.check_element_type(x)
    node.check_same_element_type(x, "X", [("W", w), ("B", node.inputs[2] if has_bias else None)])
    try:
        spec = onnx_conv(attrs)
        if any(d is None for d in w.shape):
            raise UnsupportedError(f"weights W of shape {list(w.shape)}: poolir converts a Conv only when W's "
                                   "shape is static (the IR layer type and kernel rank depend on it)")
        geometry = spec.geometry(w.shape)
    except UsageError as error:
        raise InvalidModelError(error.problem) from None
    rank = len(geometry["kernel"])
    if len(x.shape) != rank + 2:
        raise InvalidModelError(f"input X of rank {len(x.shape)} does not match weights W {list(w.shape)} "
                                f"(expected rank {rank + 2})")
    filters, per_group = w.shape[0], w.shape[1]
    group = spec.group
    if filters % group or (x.shape[1] is not None and per_group * group != x.shape[1]):
        raise InvalidModelError(f"weights W {list(w.shape)} with group {group} do not fit input X {list(x.shape)}")
    if has_bias and tuple(node.inputs[2].shape) != (filters,):
        raise InvalidModelError(f"bias B of shape {list(node.inputs[2].shape)} must be [{filters}]")
    out_spatial = []
    for axis, length in enumerate(x.shape[2:]):
        if length is None:
            out_spatial.append(None)
            continue
        try:
            (window,) = pool_windows((length,), geometry["kernel"][axis:axis + 1], geometry["strides"][axis:axis + 1],
                                     geometry["dilations"][axis:axis + 1], geometry["pads_begin"][axis:axis + 1],
                                     geometry["pads_end"][axis:axis + 1], "floor", spec.auto_pad)
        except UsageError as error:
            raise InvalidModelError(f"spatial axis {axis}: {error.problem}") from None
        out_spatial.append(window.output)
    out_shape = (x.shape[0], filters, *out_spatial)
    layer_attrs = {"strides": geometry["strides"], "dilations": geometry["dilations"],
                   "pads_begin": geometry["pads_begin"] if spec.auto_pad == "explicit" else (0,) * rank,
                   "pads_end": geometry["pads_end"] if spec.auto_pad == "explicit" else (0,) * rank,
                   "auto_pad": spec.auto_pad}
    name = node.name
    widen = has_bias and x.element_type in _NARROW_FLOATS
    x_ref, w_ref = x.ref, w.ref
    if widen:
        x_ref = convert_to(node, x_ref, "f32", f"{name}/x_f32")
        w_ref = convert_to(node, w_ref, "f32", f"{name}/w_f32")
    if group > 1:
        w_ref = reshaped(node, Value(w_ref, w.element_type, w.shape),
                         (group, filters // group, per_group, *geometry["kernel"]), f"{name}/weights")
        layer_type = "GroupConvolution"
    else:
        layer_type = "Convolution"
    last = name if not has_bias else f"{name}/WithoutBiases"
    y = node.add(layer_type, [x_ref, w_ref], layer_attrs, last)[0]
    if has_bias:
        b = node.inputs[2]
        b_ref = convert_to(node, b.ref, "f32", f"{name}/b_f32") if widen else b.ref
        bias = reshaped(node, Value(b_ref, b.element_type, b.shape), (1, filters) + (1,) * rank, f"{name}/bias")
        y = node.add("Add", [y, bias], {"auto_broadcast": "numpy"}, name if not widen else f"{name}/sum")[0]
        if widen:
            y = convert_to(node, y, x.element_type, name)
    return [Value(y, x.element_type, out_shape)]


CONVERTERS = {"Conv": conv}
