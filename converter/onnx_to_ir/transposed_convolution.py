"""ONNX ConvTranspose -> IR ConvolutionBackpropData (group 1) or GroupConvolutionBackpropData, plus an Add for B.

- The geometry is resolved with ONNX's rules (runtime.onnx_ops.transposed_convolution.conv_transpose_geometry) and
  written explicit: pads_begin where the window begins, and the window's end as pads_end when it cuts products,
  or as output_padding when it runs past them. OpenVINO's own rules differ (its same_upper puts the odd pad in
  front, and without output_shape its same_* adds no pads), so auto_pad and output_shape are never carried over.
  That needs the input's spatial dims static, except for NOTSET and VALID without output_shape, whose pads and
  output_padding carry over one to one.
- group > 1: weights [C, M/G, *k] become [G, C/G, M/G, *k] (a reshaped Const, or a Reshape layer).
- B: Add with B as [1, M, 1, ...]; float16 / bfloat16 with a bias run in f32 and round once, as for Conv
  (converter/onnx_to_ir/convolution.py).
"""

from __future__ import annotations

from poolir.converter.onnx_to_ir.convolution import convert_to, reshaped
from poolir.converter.onnx_to_ir.node import OnnxNode, Value
from poolir.ir.errors import InvalidModelError, UnsupportedError, UsageError
from poolir.runtime.onnx_ops.transposed_convolution import conv_transpose_geometry, transpose_attributes


def _explicit_attrs(node: OnnxNode, attrs: dict, x: Value, kernel: tuple) -> tuple[dict, list]:
    spatial = x.shape[2:]
    if None not in spatial:
        geometry = conv_transpose_geometry(attrs, spatial, kernel)
        return {"strides": geometry.strides, "dilations": geometry.dilations, "pads_begin": geometry.begin,
                "pads_end": tuple(max(e, 0) for e in geometry.end), "auto_pad": "explicit",
                "output_padding": tuple(max(-e, 0) for e in geometry.end)}, list(geometry.out)
    rank = len(kernel)
    checked = transpose_attributes(attrs, rank, kernel)
    if checked.mode not in ("NOTSET", "VALID") or checked.target is not None:
        raise UnsupportedError(f"{node.version.label} with auto_pad {checked.mode} or output_shape on dynamic spatial "
                               f"dims {list(x.shape)}: its pads depend on the input's size, and OpenVINO's rules "
                               f"for them are not ONNX's")
    begin, end = checked.pads[:rank], checked.pads[rank:]
    out = [None if d is None else s * (d - 1) + dl * (k - 1) + 1 + p - b - e
           for d, s, dl, k, p, b, e in zip(spatial, checked.strides, checked.dilations, kernel, checked.padding, begin,
                                          end)]
    return {"strides": checked.strides, "dilations": checked.dilations, "pads_begin": begin, "pads_end": end,
            "auto_pad": "explicit", "output_padding": checked.padding}, out


def conv_transpose(node: OnnxNode) -> list[Value]:
    x, w, bias = node.checked_inputs(2, 3, optional=(2,))
    attrs = node.attributes()
    node.check_element_type(x)
    node.check_same_element_type(x, "X", [("W", w), ("B", bias)])
    if None in w.shape or len(w.shape) < 3 or len(x.shape) != len(w.shape):
        raise UnsupportedError(f"weights W of shape {list(w.shape)} for X {list(x.shape)}: poolir converts a "
                               f"ConvTranspose with static weights of X's rank")
    group = attrs["group"]
    channels, per_group, kernel = w.shape[0], w.shape[1], tuple(w.shape[2:])
    if group < 1 or channels % group or x.shape[1] not in (None, channels):
        raise InvalidModelError(f"weights W {list(w.shape)} with group {group} do not fit X {list(x.shape)}")
    filters = group * per_group
    if bias is not None and tuple(bias.shape) != (filters,):
        raise InvalidModelError(f"bias B of shape {list(bias.shape)} must be [{filters}]")
    try:
        layer_attrs, out = _explicit_attrs(node, attrs, x, kernel)
    except UsageError as error:
        raise InvalidModelError(error.problem) from None
    name, rank = node.name, len(kernel)
    widen = bias is not None and x.element_type in ("f16", "bf16")
    x_ref, w_ref = x.ref, w.ref
    if widen:
        x_ref = convert_to(node, x_ref, "f32", f"{name}/x_f32")
        w_ref = convert_to(node, w_ref, "f32", f"{name}/w_f32")
    layer_type = "ConvolutionBackpropData"
    if group > 1:
        w_ref = reshaped(node, Value(w_ref, w.element_type, w.shape), (group, channels // group, per_group, *kernel),
                         f"{name}/weights")
        layer_type = "GroupConvolutionBackpropData"
    y = node.add(layer_type, [x_ref, w_ref], layer_attrs, name if bias is None else f"{name}/WithoutBiases")[0]
    if bias is not None:
        b_ref = convert_to(node, bias.ref, "f32", f"{name}/b_f32") if widen else bias.ref
        shaped = reshaped(node, Value(b_ref, bias.element_type, bias.shape), (1, filters) + (1,) * rank,
                          f"{name}/bias")
        y = node.add("Add", [y, shaped], {"auto_broadcast": "numpy"}, f"{name}/sum" if widen else name)[0]
        if widen:
            y = convert_to(node, y, x.element_type, name)
    return [Value(y, x.element_type, (x.shape[0], filters, *out))]


CONVERTERS = {"ConvTranspose": conv_transpose}
