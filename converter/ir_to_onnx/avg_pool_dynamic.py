"""AvgPool with exclude-pad=false, pads, ceil or ceil_torch rounding and dynamic spatial dims -> ONNX, exactly.

OpenVINO divides every window by the whole kernel volume K once any pad is non-zero, also a last window that
reaches past the padded input; ONNX count_include_pad divides that window by the taps inside the padded
extent. With static dims pool_windows.py plans it; with dynamic dims whether the last window overhangs depends
on the length, so the rewrite covers every length:
- Pad zeros: pads_begin before, pads_end + stride - 1 after, so every window OpenVINO keeps lies inside;
- AveragePool with no pads, floor rounding: each window's sum / K, and floor((L + pb + pe + s - 1 - ek) / s) + 1
  = ceil((L + pb + pe - ek) / s) + 1 windows, OpenVINO's `ceil` count;
- for ceil_torch, a Slice to n - [ (n - 1) * s >= L + pb ] windows (the last one dropped when it would start in
  the right padding: ir/ops/pooling.py rule 4), n computed from the run-time shape.
Worked example: L=6, k=3, s=2, p=1/1, ceil_torch: the padded length is 6 + 1 + 1 + 1 = 9, floor((9 - 3) / 2) + 1
= 4 windows; (4 - 1) * 2 = 6 < 6 + 1, so all 4 stay, the last one [6, 9) divided by 9 taps, as OpenVINO does.
"""

from __future__ import annotations

import numpy as np

from poolir.converter.ir_to_onnx.context import Context
from poolir.converter.ir_to_onnx.movement import pad_node
from poolir.ir.element_types import dtype_of
from poolir.ir.geometry import axis_specs
from poolir.ir.model import Layer


def applies(context: Context, layer: Layer) -> bool:
    """Whether this is the case the module docstring rewrites (and the window plan refuses)."""
    attrs = layer.attrs
    spatial = context.input_info(layer, 0).shape[2:]
    return (not attrs["exclude-pad"] and attrs["auto_pad"] == "explicit"
            and attrs["rounding_type"] in ("ceil", "ceil_torch") and any(not d.is_static for d in spatial)
            and (any(attrs["pads_begin"]) or any(attrs["pads_end"])) and all(d == 1 for d in attrs.get("dilations")
                                                                             or (1,)))


def avg_pool_padded(context: Context, layer: Layer) -> None:
    attrs = layer.attrs
    info = context.input_info(layer, 0)
    specs = axis_specs(attrs["kernel"], attrs["strides"], None, attrs["pads_begin"], attrs["pads_end"])
    rank = len(specs)
    pads = [0, 0, *(s.pad_begin for s in specs), 0, 0, *(s.pad_end + s.stride - 1 for s in specs)]
    source = pad_node(context, context.input(layer, 0), pads, "constant", np.asarray(0, dtype_of(info.element_type)),
                      layer.name)
    kernel = [s.kernel for s in specs]
    strides = [s.stride for s in specs]
    output = context.name_output(layer, 0)
    if attrs["rounding_type"] == "ceil":
        context.node_into("AveragePool", [source], [output], layer.name, kernel_shape=kernel, strides=strides)
        return
    context.check_opset(10, "AvgPool ceil_torch with dynamic spatial dims needs Slice with inputs, from opset 10")
    pooled = context.node("AveragePool", [source], f"{layer.name}/windows", kernel_shape=kernel, strides=strides)[0]
    base = f"{layer.name}/ceil_torch"
    shape = context.node("Shape", [context.input(layer, 0)], f"{base}/shape")[0]
    lengths = context.node("Gather", [shape, context.int64s(list(range(2, 2 + rank)), f"{base}/spatial")],
                           f"{base}/lengths")[0]
    begins = context.int64s([s.pad_begin for s in specs], f"{base}/pads_begin")
    stride = context.int64s(strides, f"{base}/strides")
    # n = floor((L + pb + pe + s - 1 - k) / s) + 1 (non-negative numerator: the kernel fits the padded input)
    numerator = context.node("Add", [lengths, context.int64s(
        [s.pad_begin + s.pad_end + s.stride - 1 - s.kernel for s in specs], f"{base}/offset")], f"{base}/numerator")[0]
    count = context.node("Add", [context.node("Div", [numerator, stride], f"{base}/quotient")[0],
                                 context.int64s([1] * rank, f"{base}/ones")], f"{base}/count")[0]
    last_start = context.node("Mul", [context.node("Sub", [count, context.int64s([1] * rank, f"{base}/one")],
                                                   f"{base}/last")[0], stride], f"{base}/last_start")[0]
    limit = context.node("Add", [lengths, begins], f"{base}/limit")[0]
    in_padding = context.node("Not", [context.node("Less", [last_start, limit], f"{base}/starts_inside")[0]],
                              f"{base}/starts_in_padding")[0]
    drop = context.node("Cast", [in_padding], f"{base}/drop", to=7)[0]  # INT64
    ends = context.node("Sub", [count, drop], f"{base}/ends")[0]
    context.node_into("Slice", [pooled, context.int64s([0] * rank, f"{base}/starts"), ends,
                                context.int64s(list(range(2, 2 + rank)), f"{base}/axes")], [output], layer.name)
