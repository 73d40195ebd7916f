"""AdaptiveAvgPool-8 and AdaptiveMaxPool-8 -> ONNX, exactly (ONNX has no adaptive pooling).

Along an axis of length L pooled into `out` bins, bin i is [floor(i*L/out), ceil((i+1)*L/out))
(runtime/kernels/adaptive_pool.py). Written as:
- every out == 1: GlobalAveragePool / GlobalMaxPool;
- every L % out == 0 (static L): one AveragePool / MaxPool with kernel = strides = L/out, the bins exactly;
- otherwise, one axis at a time, each bin a Slice and a ReduceMean / ReduceMax keeping the axis, the bins
  concatenated. A window is the product of its axes' bins, so the mean of the per-axis means is the window's
  mean (up to the rounding of the intermediate, computed in float32 for f16/bf16) and the max of maxima its max.
  With a dynamic L the bin bounds are computed from the run-time shape (Shape, Gather, Mul, Div: integer
  division of non-negative values floors, and ceil(a/b) = floor((a + b - 1)/b)), so dynamic dims convert too.
AdaptiveMaxPool's indices (per (n, c) slab, flattened over the spatial axes): in the MaxPool form, ONNX
MaxPool's indices count over the whole tensor, so their remainder modulo the slab size is OpenVINO's; in the
per-axis form (static dims), a tensor of slab positions is carried along: each bin's index is the smallest
position where the bin equals its maximum (Equal, Where, ReduceMin), which is the first maximum in row-major
order, OpenVINO's choice. Dynamic dims refuse them. NaN: ONNX MaxPool/ReduceMax follow onnxruntime's NaN rule, not
OpenVINO's (a NaN first in its window wins, others are skipped): NaN inputs are outside what is carried exactly.
"""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from poolir.converter.element_types import onnx_element_type
from poolir.converter.ir_to_onnx.context import Context
from poolir.converter.ir_to_onnx.opsets import first_opset_accepting, first_opset_where, has_attribute
from poolir.ir.errors import ConversionError
from poolir.ir.model import Layer
from poolir.runtime.onnx_ops import first_opset

_FORMS = {"AdaptiveAvgPool": ("GlobalAveragePool", "AveragePool", "ReduceMean"),
          "AdaptiveMaxPool": ("GlobalMaxPool", "MaxPool", "ReduceMax")}
_LOW_PRECISION = ("f16", "bf16")


def _output_sizes(context: Context, layer: Layer) -> list[int]:
    sizes = context.constant(layer, 1)
    if sizes is None:
        raise ConversionError(f"{layer.type} output shape computed at run time: the number of bins, and so the "
                              "ONNX graph, depends on it")
    return [int(v) for v in sizes.ravel()]


def adaptive_pool(context: Context, layer: Layer) -> None:
    info = context.input_info(layer, 0)
    out = _output_sizes(context, layer)
    lengths = [dim.value for dim in info.shape[2:]]
    global_op, window_op, reduce_op = _FORMS[layer.type]
    want_indices = layer.type == "AdaptiveMaxPool" and context.is_used(layer, 1)
    source, values = context.input(layer, 0), context.name_output(layer, 0)
    if all(v == 1 for v in out) and not want_indices:
        context.node_into(global_op, [source], [values], layer.name)
        return
    if all(length is not None and length % size == 0 for length, size in zip(lengths, out)):
        kernel = [length // size for length, size in zip(lengths, out)]
        if not want_indices:
            context.node_into(window_op, [source], [values], layer.name, kernel_shape=kernel, strides=kernel)
            return
        _max_pool_with_indices(context, layer, values, kernel, math.prod(lengths))
        return
    if want_indices and any(length is None for length in lengths):
        raise ConversionError("AdaptiveMaxPool indices with dynamic spatial dims are not converted: the per-bin "
                              "ArgMax rewrite needs the slab's positions as a constant")
    _per_axis(context, layer, source, values, lengths, out, reduce_op, info.element_type, want_indices)


def _max_pool_with_indices(context: Context, layer: Layer, values: str, kernel: list[int], slab: int) -> None:
    """`values`: the ONNX name already given to output 0 (naming it again would claim a second name, and the
    graph output would lose the IR tensor's name)."""
    since = first_opset_where("MaxPool", lambda row: row.max_outputs >= 2)
    context.check_opset(since, f"the indices output needs MaxPool-{since}")
    mod_since = first_opset("Mod")
    context.check_opset(mod_since, f"the per-slab indices need Mod, from opset {mod_since}")
    flat = context.fresh(f"{layer.name}/flat_indices")
    context.node_into("MaxPool", [context.input(layer, 0)], [values, flat], layer.name,
                      kernel_shape=kernel, strides=kernel)
    index_type = layer.attrs["index_element_type"]
    final = context.name_output(layer, 1)
    target = final if index_type == "i64" else context.fresh(f"{layer.name}/indices_i64")
    context.node_into("Mod", [flat, context.int64s(slab, f"{layer.name}/slab_size")], [target], layer.name, fmod=0)
    if index_type != "i64":
        context.node_into("Cast", [target], [final], layer.name, to=onnx_element_type(index_type))


def _per_axis(context: Context, layer: Layer, source: str, values: str, lengths: list[int | None], out: list[int],
              reduce_op: str, element_type: str, want_indices: bool) -> None:
    since = max(first_opset_where("Slice", lambda row: "starts" not in row.attributes) or 10, 10)
    if want_indices:  # Where
        since = max(since, first_opset("Where"))
    context.check_opset(since, f"{layer.type} with bins that are not a regular window needs Slice with inputs, "
                        f"from opset {since}")
    if want_indices:  # the values (f32 or f64) compared with their bin's maximum
        equal_since = first_opset_accepting("Equal", np.float32)
        context.check_opset(equal_since, f"{layer.type} indices of bins that are not a regular window need Equal "
                                         f"on floats, from opset {equal_since}")
    current = source
    if element_type in _LOW_PRECISION:
        current = context.node("Cast", [current], f"{layer.name}/f32", to=TensorProto.FLOAT)[0]
    shape = (context.node("Shape", [source], f"{layer.name}/shape")[0]
             if want_indices or any(length is None for length in lengths) else None)
    positions = None
    if want_indices:  # each element's position in its (n, c) slab, carried along by the ArgMax picks
        grid = np.arange(math.prod(lengths), dtype=np.int64).reshape((1, 1, *lengths))
        positions = context.node("Expand", [context.initializer(grid, f"{layer.name}/positions"), shape],
                                 f"{layer.name}/positions_full")[0]
        # One past the last position, not the largest int64: OpenVINO's CPU plugin computes int64 tensors in
        # int32, so it reads this ONNX's int64.max as -2^31 and picks that as the "first" maximum.
        last = context.int64s(math.prod(lengths), f"{layer.name}/not_a_maximum")
    for k in range(len(out)):
        length, size, axis = lengths[k], out[k], 2 + k
        base = f"{layer.name}/axis{axis}"
        axes = context.int64s([axis], f"{base}/axes")
        parts, index_parts = [], []
        for i in range(size):
            start, end = _bin_bounds(context, shape, axis, length, size, i, f"{base}/bin{i}")
            window = context.node("Slice", [current, start, end, axes], f"{base}/bin{i}/slice")[0]
            if positions is None:
                parts.append(_reduce(context, reduce_op, window, axis, f"{base}/bin{i}/reduce"))
                continue
            # The first maximum in row-major order has the smallest slab position among the maxima.
            top = _reduce(context, reduce_op, window, axis, f"{base}/bin{i}/reduce")
            parts.append(top)
            where = context.node("Slice", [positions, start, end, axes], f"{base}/bin{i}/positions")[0]
            is_top = context.node("Equal", [window, top], f"{base}/bin{i}/is_max")[0]
            candidates = context.node("Where", [is_top, where, last], f"{base}/bin{i}/candidates")[0]
            index_parts.append(_reduce(context, "ReduceMin", candidates, axis, f"{base}/bin{i}/index"))
        current = context.node("Concat", parts, f"{base}/bins", axis=axis)[0] if len(parts) > 1 else parts[0]
        if positions is not None:
            positions = (context.node("Concat", index_parts, f"{base}/indices", axis=axis)[0]
                         if len(index_parts) > 1 else index_parts[0])
    if positions is not None:
        index_type = layer.attrs["index_element_type"]
        if index_type == "i64":
            context.node_into("Identity", [positions], [context.name_output(layer, 1)], layer.name)
        else:
            context.node_into("Cast", [positions], [context.name_output(layer, 1)], layer.name,
                              to=onnx_element_type(index_type))
    if element_type in _LOW_PRECISION:
        context.node_into("Cast", [current], [values], layer.name, to=onnx_element_type(element_type))
    else:
        context.node_into("Identity", [current], [values], layer.name)


def _bin_bounds(context: Context, shape: str | None, axis: int, length: int | None, size: int, i: int,
                base: str) -> tuple[str, str]:
    """Bin i's [start, end) as 1-element int64 tensors: constants for a static length, else computed."""
    if length is not None:
        return (context.int64s([i * length // size], f"{base}/start"),
                context.int64s([-(-(i + 1) * length // size)], f"{base}/end"))
    dim = context.node("Gather", [shape, context.int64s([axis], f"{base}/axis")], f"{base}/length")[0]
    divisor = context.int64s([size], f"{base}/size")
    start = context.node("Div", [context.node("Mul", [dim, context.int64s([i], f"{base}/i")], f"{base}/i_L")[0],
                                 divisor], f"{base}/start")[0]
    upper = context.node("Mul", [dim, context.int64s([i + 1], f"{base}/i1")], f"{base}/i1_L")[0]
    upper = context.node("Add", [upper, context.int64s([size - 1], f"{base}/size_1")], f"{base}/ceil_num")[0]
    return start, context.node("Div", [upper, divisor], f"{base}/end")[0]


def _reduce(context: Context, op_type: str, window: str, axis: int, base: str) -> str:
    if has_attribute(op_type, context.opset, "axes"):
        return context.node(op_type, [window], base, axes=[axis], keepdims=1)[0]
    return context.node(op_type, [window, context.int64s([axis], f"{base}/axes")], base, keepdims=1)[0]


CONVERTERS = {"AdaptiveAvgPool": adaptive_pool, "AdaptiveMaxPool": adaptive_pool}
