"""IR Convolution-1 and GroupConvolution-1 onto runtime.kernels.convolution.conv.

Geometry is `ir.ops.convolution.conv_windows_of` (floor rounding, auto_pad resolved as OpenVINO does), the
same function IR shape inference uses; it is resolved once per (input spatial dims, kernel) and cached.
GroupConvolution's weights [G, M/G, C/G, *k] are the kernel's [M, C/G, *k] through `group_weights` (a view).
"""

from __future__ import annotations


from poolir.ir.errors import InvalidModelError, UsageError
from poolir.ir.ops.convolution import conv_weight_layout, conv_windows_of
from poolir.runtime.ir_ops.registry import LayerFn, LayerInfo, builder
from poolir.runtime.kernels.convolution import conv, group_weights


@builder("Convolution", "GroupConvolution")
def _convolution(info: LayerInfo) -> LayerFn:
    layer = info.layer
    grouped = layer.type == "GroupConvolution"
    cache: dict[tuple, tuple] = {}

    def run(args):
        x, w = args
        if x.dtype != w.dtype:
            raise InvalidModelError(f"input element types differ: data {x.dtype}, weights {w.dtype}")
        groups, first_kernel_axis = conv_weight_layout(layer.type, w.shape, x.shape[1] if x.ndim > 1 else 0)
        if x.ndim != w.ndim - first_kernel_axis + 2:
            raise InvalidModelError(f"input shape {list(x.shape)} does not fit weights {list(w.shape)}")
        key = (x.shape[2:], w.shape[first_kernel_axis:])
        windows = cache.get(key)
        if windows is None:
            try:
                windows = cache[key] = conv_windows_of(layer, x.shape[2:], w.shape[first_kernel_axis:])
            except UsageError as error:
                raise InvalidModelError(error.problem) from None
        if grouped:
            w, groups = group_weights(w)
        return (conv(x, w, windows=windows, groups=groups),)

    return run
