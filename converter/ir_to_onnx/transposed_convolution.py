"""IR ConvolutionBackpropData / GroupConvolutionBackpropData -> ONNX ConvTranspose with explicit pads.

OpenVINO's geometry (ir.ops.transposed_convolution.backprop_geometry: where the output window begins over the
products' positions, and its length) is written as ONNX pads and output_padding, never as auto_pad or output_shape,
whose ONNX rules differ (converter/onnx_to_ir/transposed_convolution.py). With static spatial dims (and a constant
output_shape input, if any) the window is resolved; with dynamic ones only layers without output_shape convert, whose
window does not depend on the input's size (explicit: its pads and output_padding; valid and same_*: no pads).
A window beginning before the products (negative pads) or running past them by a stride or more (onnxruntime caps
output_padding below the stride) has no ONNX ConvTranspose: refused. GroupConvolutionBackpropData's weights
[G, C/G, M/G, *k] become ConvTranspose's [C, M/G, *k] by a Reshape node and group=G.
"""

from __future__ import annotations

import numpy as np

from poolir.converter.ir_to_onnx.context import Context
from poolir.converter.ir_to_onnx.convolution import static_weights_shape
from poolir.converter.ir_to_onnx.opsets import check_writes
from poolir.ir.errors import ConversionError, UsageError
from poolir.ir.model import Layer
from poolir.ir.ops.transposed_convolution import backprop_geometry, backprop_layout


def _pads(context: Context, layer: Layer, spatial: list, kernel: list) -> tuple[list[int], list[int], list[int]]:
    """(pads_begin, pads_end, output_padding) of the ONNX ConvTranspose."""
    attrs, rank = layer.attrs, len(kernel)
    padding = list(attrs.get("output_padding") or (0,) * rank)
    has_target = len(layer.inputs) > 2
    if None in spatial or (has_target and context.constant(layer, 2) is None):
        if has_target:
            raise ConversionError(f"{layer.type} with an output_shape input on dynamic spatial dims (or a computed "
                                  f"one): its pads depend on the sizes, and ONNX's rules for them are not OpenVINO's")
        if attrs["auto_pad"] in ("explicit", "notset"):
            return list(attrs["pads_begin"]), list(attrs["pads_end"]), padding
        return [0] * rank, [0] * rank, padding
    target = context.constant_ints(layer, 2, "output_shape") if has_target else None
    try:
        begin, out = backprop_geometry(attrs, spatial, kernel, target)
    except UsageError as error:
        raise ConversionError(error.problem) from None
    ends = [s * (length - 1) + d * (k - 1) + 1 - b - o
            for s, d, length, k, b, o in zip(attrs["strides"], attrs["dilations"], spatial, kernel, begin, out)]
    if any(b < 0 for b in begin) or any(-e >= s for e, s in zip(ends, attrs["strides"])):
        raise ConversionError(f"{layer.type}'s output window (begins {list(begin)}, {list(out)} long) starts before "
                              f"or ends a stride or more past its products: no ONNX ConvTranspose pads give it")
    return list(begin), [max(e, 0) for e in ends], [max(-e, 0) for e in ends]


def backprop(context: Context, layer: Layer) -> None:
    x_info = context.input_info(layer, 0)
    check_writes(context, "ConvTranspose", x_info.element_type)
    w_shape = static_weights_shape(context, layer, "ConvTranspose")
    groups, first, _ = backprop_layout(layer.type, w_shape)
    kernel = w_shape[first:]
    begin, end, padding = _pads(context, layer, [d.value for d in x_info.shape[2:]], kernel)
    weights = context.input(layer, 1)
    if groups > 1:
        target = np.array([w_shape[0] * w_shape[1], w_shape[2], *kernel], np.int64)
        weights = context.node("Reshape", [weights, context.int64s(target, f"{layer.name}/weights_shape")],
                               f"{layer.name}/weights")[0]
    context.node_into("ConvTranspose", [context.input(layer, 0), weights], [context.name_output(layer, 0)], layer.name,
                      kernel_shape=kernel, strides=list(layer.attrs["strides"]),
                      dilations=list(layer.attrs["dilations"]), pads=begin + end, output_padding=padding, group=groups)


CONVERTERS = {"ConvolutionBackpropData": backprop, "GroupConvolutionBackpropData": backprop}
