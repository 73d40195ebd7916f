"""IR ConvolutionBackpropData-1 and GroupConvolutionBackpropData-1 onto runtime.kernels.transposed_convolution.

The geometry is `ir.ops.transposed_convolution.backprop_geometry` (OpenVINO's, measured: pads_begin, auto_pad and the
optional output_shape input decide where the output window starts and how long it is), the same function shape
inference uses. GroupConvolutionBackpropData's weights [G, C/G, M/G, *k] are the kernel's [C, M/G, *k] (a view).
Floating types only: OpenVINO's CPU plugin results for integers are not pinned.
"""

from __future__ import annotations

from poolir.ir.errors import InvalidModelError, UnsupportedError, UsageError
from poolir.ir.ops.transposed_convolution import backprop_geometry, backprop_layout
from poolir.runtime.ir_ops.registry import LayerFn, LayerInfo, builder, int_list
from poolir.runtime.kernels.precision import is_float
from poolir.runtime.kernels.transposed_convolution import conv_transpose


@builder("ConvolutionBackpropData", "GroupConvolutionBackpropData")
def _backprop(info: LayerInfo) -> LayerFn:
    layer = info.layer
    attrs = layer.attrs

    def run(args):
        x, w, *rest = args
        if x.dtype != w.dtype:
            raise InvalidModelError(f"input element types differ: data {x.dtype}, weights {w.dtype}")
        if not is_float(x.dtype):
            raise UnsupportedError(f"{layer.type} on element type {x.dtype} is not supported (floating types only)")
        groups, first, _ = backprop_layout(layer.type, w.shape)
        if x.ndim != w.ndim - first + 2 or x.shape[1] != groups * w.shape[first - 2]:
            raise InvalidModelError(f"input shape {list(x.shape)} does not fit weights {list(w.shape)}")
        kernel = w.shape[first:]
        target = int_list(rest[0], "output_shape") if rest else None
        try:
            begin, out = backprop_geometry(attrs, x.shape[2:], kernel, target)
        except UsageError as error:
            raise InvalidModelError(error.problem) from None
        if groups > 1:
            w = w.reshape(x.shape[1], w.shape[2], *kernel)
        return (conv_transpose(x, w, None, strides=attrs["strides"], dilations=attrs["dilations"], pads_begin=begin,
                               output=out, groups=groups),)
    return run
