"""IR Convolution / GroupConvolution -> ONNX Conv.

- The geometry is the same on both sides (floor rounding; auto_pad resolved by ir.geometry.same_pads, see
  converter/onnx_to_ir/convolution.py). With static spatial dims poolir writes the resolved pads
  (auto_pad NOTSET), so the ONNX file does not depend on how a runtime reads SAME; with dynamic ones it
  writes auto_pad SAME_UPPER / SAME_LOWER / VALID.
- GroupConvolution weights [G, M/G, C/G, *k] become Conv weights [M, C/G, *k] by a Reshape node (onnxruntime
  folds it when the weights are constant) and group=G.
"""

from __future__ import annotations


from poolir.converter.ir_to_onnx.context import Context
from poolir.converter.ir_to_onnx.opsets import check_writes
from poolir.ir.errors import ConversionError, UsageError
from poolir.ir.model import Layer
from poolir.ir.ops.convolution import conv_weight_layout, conv_windows_of

_ONNX_AUTO_PADS = {"same_upper": "SAME_UPPER", "same_lower": "SAME_LOWER", "valid": "VALID"}


def static_weights_shape(context: Context, layer: Layer, op_type: str) -> list[int]:
    """The weights' (input 1) dims; ConversionError when one is dynamic (the ONNX op's group and kernel need them)."""
    shape = context.input_info(layer, 1).shape
    if not all(dim.is_static for dim in shape):
        raise ConversionError(f"weights of dynamic shape {[str(d) for d in shape]}: the ONNX {op_type}'s group and "
                              "kernel need a static weights shape")
    return [dim.min for dim in shape]


def convolution(context: Context, layer: Layer) -> None:
    x_info = context.input_info(layer, 0)
    check_writes(context, "Conv", x_info.element_type)
    w_shape = static_weights_shape(context, layer, "Conv")
    groups, first_kernel_axis = conv_weight_layout(layer.type, w_shape, x_info.shape[1])
    kernel = w_shape[first_kernel_axis:]
    rank = len(kernel)
    spatial = x_info.shape[2:]
    attrs: dict = {"kernel_shape": kernel, "strides": list(layer.attrs["strides"]),
                   "dilations": list(layer.attrs["dilations"])}
    if all(dim.is_static for dim in spatial):
        try:
            windows = conv_windows_of(layer, [dim.min for dim in spatial], kernel)
        except UsageError as error:
            raise ConversionError(error.problem) from None
        attrs["pads"] = [w.pad_begin for w in windows] + [w.pad_end for w in windows]
    elif layer.attrs["auto_pad"] == "explicit":
        attrs["pads"] = list(layer.attrs["pads_begin"]) + list(layer.attrs["pads_end"])
    else:
        attrs["auto_pad"] = _ONNX_AUTO_PADS[layer.attrs["auto_pad"]]
    weights = context.input(layer, 1)
    if layer.type == "GroupConvolution":
        target = [w_shape[0] * w_shape[1], w_shape[2], *kernel]
        weights = context.node("Reshape", [weights, context.int64s(target, f"{layer.name}/weights_shape")],
                               f"{layer.name}/weights")[0]
        attrs["group"] = groups
    del rank
    context.node_into("Conv", [context.input(layer, 0), weights], [context.name_output(layer, 0)], layer.name,
                      **attrs)


CONVERTERS = {"Convolution": convolution, "GroupConvolution": convolution}
