"""Pooling IR layers -> ONNX: MaxPool and AvgPool; OpenVINO's LpPool decomposition folded back into LpPool;
a Reduce{Mean,Max,L1,L2} over every spatial axis with keep_dims written as the Global pool (kept a Reduce*
where onnxruntime has no kernel for that Global pool: onnxruntime_gaps.py).

The windows are planned in pool_windows.py. MaxPool-8 `axis` > 0 becomes a Mod of ONNX's flat indices (by
prod(shape[axis:]), read at run time when a dim is dynamic), index_element_type i32 a Cast; an explicit Pad
(pads >= kernel) has its indices mapped back to the unpadded tensor. The folds (FOLDS) are tried before a layer's own converter, at the layer
where the pattern starts; a fold that does not apply leaves the layers to their own converters, which are
exact too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from poolir.converter.element_types import onnx_element_type
from poolir.converter.ir_to_onnx.adaptive_pool import CONVERTERS as ADAPTIVE_CONVERTERS
from poolir.converter.ir_to_onnx.context import Context
from poolir.converter.ir_to_onnx.movement import pad_node
from poolir.converter.ir_to_onnx.onnxruntime_gaps import onnxruntime_lacks
from poolir.converter.ir_to_onnx.opsets import check_writes, first_opset_accepting, first_opset_where
from poolir.converter.ir_to_onnx.pool_windows import OnnxWindows, pool_attributes, pool_geometry
from poolir.converter.ir_to_onnx.reduction import reduction_axes
from poolir.ir.element_types import dtype_of
from poolir.ir.errors import ConversionError
from poolir.ir.geometry import axis_specs
from poolir.ir.ops.pooling import pool_windows_of
from poolir.ir.model import Layer
from poolir.runtime.ir_ops import openvino_max_floor
from poolir.runtime.onnx_ops import first_opset, first_opset_with

_GLOBAL_POOLS = {"ReduceMean": ("GlobalAveragePool", {}), "ReduceMax": ("GlobalMaxPool", {}),
                 "ReduceL1": ("GlobalLpPool", {"p": 1}), "ReduceL2": ("GlobalLpPool", {"p": 2})}


def _pre_pad(context: Context, source: str, geometry: OnnxWindows, element_type: str, base: str,
             value: float = 0, layer: Layer | None = None) -> str:
    if geometry.same_at_run_time is not None:
        pads = _same_pads_at_run_time(context, source, layer, geometry.same_at_run_time)
        fill = context.initializer(np.asarray(value, dtype_of(element_type)).reshape(()), f"{base}/value")
        return context.node("Pad", [source, pads, fill], f"{base}/padded", mode="constant")[0]
    if geometry.pre_pad_end is None:
        return source
    pads = [0, 0, *geometry.pads_begin, 0, 0, *geometry.pre_pad_end]
    return pad_node(context, source, pads, "constant", np.asarray(value, dtype_of(element_type)), base)


def _same_pads_at_run_time(context: Context, source: str, layer: Layer, auto_pad: str) -> str:
    """ONNX Pad's pads [0, 0, *begins, 0, 0, *ends] for auto_pad same_* by the spec, from the runtime lengths L:
    total = max(0, (ceil(L / s) - 1) * s + ek - L), the odd element at the end (same_upper) or the beginning.

    Worked example: L=7, k=2, d=3 (ek=4), s=1: total = 6 + 4 - 7 = 3; same_upper (1, 2), same_lower (2, 1).
    """
    attrs = layer.attrs
    specs = axis_specs(attrs["kernel"], attrs["strides"], attrs.get("dilations"))
    base = layer.name
    lengths = runtime_dims(context, source, range(2, 2 + len(specs)), base)
    strides = context.int64s([spec.stride for spec in specs], f"{base}/strides")
    less_one = context.int64s([spec.stride - 1 for spec in specs], f"{base}/stride_less_one")
    raised = context.node("Add", [lengths, less_one], f"{base}/raised")[0]
    windows = context.node("Div", [raised, strides], f"{base}/windows")[0]  # ceil(L / s), L >= 1
    spanned = context.node("Mul", [windows, strides], f"{base}/spanned")[0]
    reach = context.node("Add", [spanned, context.int64s([spec.effective_kernel - spec.stride for spec in specs],
                                                         f"{base}/kernel_less_stride")], f"{base}/reach")[0]
    missing = context.node("Sub", [reach, lengths], f"{base}/missing")[0]
    magnitude = context.node("Abs", [missing], f"{base}/magnitude")[0]
    doubled = context.node("Add", [missing, magnitude], f"{base}/doubled")[0]
    two = context.int64s(2, f"{base}/two")
    total = context.node("Div", [doubled, two], f"{base}/total")[0]  # max(missing, 0)
    small = context.node("Div", [total, two], f"{base}/small")[0]
    large = context.node("Sub", [total, small], f"{base}/large")[0]
    begin, end = (small, large) if auto_pad == "same_upper" else (large, small)
    zeros = context.int64s([0, 0], f"{base}/batch_channel_pads")
    return context.node("Concat", [zeros, begin, zeros, end], f"{base}/pads", axis=0)[0]


def runtime_dims(context: Context, source: str, axes, base: str) -> str:
    """A 1-D int64 tensor of `source`'s dims at `axes`, read at run time (Shape, Gather)."""
    shape = context.node("Shape", [source], f"{base}/shape")[0]
    return context.node("Gather", [shape, context.int64s(list(axes), f"{base}/axes")], f"{base}/dims", axis=0)[0]


def _pool_into(context: Context, op_type: str, source: str, geometry: OnnxWindows, layer: Layer, output: str,
               **attrs) -> None:
    """The pooling node into `output`; with trim_ceil_torch, into a tensor then Sliced to ceil((L + pb) / s)
    windows per spatial axis, L read at run time (pool_windows._dynamic_cover)."""
    if not geometry.trim_ceil_torch:
        context.node_into(op_type, [source], [output], layer.name, **attrs)
        return
    since = first_opset_where("Slice", lambda row: "starts" not in row.attributes)
    context.check_opset(since, f"rounding_type=ceil_torch with dynamic spatial dims needs Slice-{since}")
    pooled = context.fresh(f"{layer.name}/untrimmed")
    context.node_into(op_type, [source], [pooled], layer.name, **attrs)
    rank = len(geometry.pads_begin)
    axes = list(range(2, 2 + rank))
    strides = list(layer.attrs["strides"])
    lengths = runtime_dims(context, context.input(layer, 0), axes, layer.name)
    offsets = context.int64s([b + s - 1 for b, s in zip(geometry.pads_begin, strides)], f"{layer.name}/offsets")
    reach = context.node("Add", [lengths, offsets], f"{layer.name}/reach")[0]
    ends = context.node("Div", [reach, context.int64s(strides, f"{layer.name}/strides")], f"{layer.name}/windows")[0]
    context.node_into("Slice", [pooled, context.int64s([0] * rank, f"{layer.name}/starts"), ends,
                                context.int64s(axes, f"{layer.name}/slice_axes")], [output], layer.name)


def max_pool(context: Context, layer: Layer) -> None:
    info = context.input_info(layer, 0)
    check_writes(context, "MaxPool", info.element_type)
    want_indices = len(layer.outputs) > 1 and context.is_used(layer, 1)
    # A window wholly in the padding outputs OpenVINO's floor value (runtime/ir_ops.py, rule M1): a Pad
    # of that value reproduces it, but would shift the indices, so only without them.
    geometry = pool_geometry(context, layer, "MaxPool", inert_padding=True, full_kernel_divisor=False,
                             fill_empty_windows=not want_indices)
    attrs = pool_attributes(context, layer, geometry, "MaxPool")
    values = context.name_output(layer, 0)
    if not want_indices:
        floor = openvino_max_floor(dtype_of(info.element_type))
        source = _pre_pad(context, context.input(layer, 0), geometry, info.element_type, layer.name, floor, layer)
        _pool_into(context, "MaxPool", source, geometry, layer, values, **attrs)
        return
    since = first_opset_where("MaxPool", lambda row: row.max_outputs >= 2)
    context.check_opset(since, f"the Indices output needs MaxPool-{since}")
    index_type = layer.attrs.get("index_element_type", "i64")
    axis = layer.attrs.get("axis", 0)
    rank = len(info.shape)
    axis = axis + rank if axis < 0 else axis
    final = context.name_output(layer, 1)
    padded = geometry.pre_pad_end is not None
    indices = final if axis == 0 and index_type == "i64" and not padded else context.fresh(f"{layer.name}/flat_indices")
    if padded:
        _padded_max_pool_with_indices(context, layer, geometry, values, indices, attrs)
        indices = _unpadded_indices(context, indices, geometry, [dim.min for dim in info.shape[2:]], layer.name,
                                    final if axis == 0 and index_type == "i64" else None)
    else:
        context.node_into("MaxPool", [context.input(layer, 0)], [values, indices], layer.name, **attrs)
    if axis > 0:
        # OpenVINO flattens from `axis` (fact 6): its index is ONNX's flat index modulo prod(shape[axis:]),
        # a constant for static dims, else the product of the runtime dims (Shape, Gather, ReduceProd).
        since = first_opset("Mod")
        context.check_opset(since, f"MaxPool axis={layer.attrs['axis']} needs Mod, from opset {since}")
        trailing = info.shape[axis:]
        if all(dim.is_static for dim in trailing):
            modulus = context.int64s(math.prod(dim.min for dim in trailing), f"{layer.name}/index_modulus")
        else:
            dims = runtime_dims(context, context.input(layer, 0), range(axis, rank), layer.name)
            modulus = context.node("ReduceProd", [dims], f"{layer.name}/index_modulus", keepdims=0)[0]
        target = final if index_type == "i64" else context.fresh(f"{layer.name}/indices_i64")
        context.node_into("Mod", [indices, modulus], [target], layer.name, fmod=0)
        indices = target
    if index_type != "i64":
        context.node_into("Cast", [indices], [final], layer.name, to=onnx_element_type(index_type))


def _padded_max_pool_with_indices(context: Context, layer: Layer, geometry: OnnxWindows, values: str, indices: str,
                                  attrs: dict) -> None:
    """MaxPool over an explicit Pad of -inf (pads >= kernel, which onnxruntime refuses as pool pads). No window is
    empty here (pool_windows), so padding wins no window unless its real elements are all -inf. 8-bit integers
    are pooled as float32, which holds them exactly, so that the padding is below every one of them."""
    element_type = context.input_info(layer, 0).element_type
    source = context.input(layer, 0)
    integer = dtype_of(element_type).kind in "iu"
    if integer:
        source = context.node("Cast", [source], f"{layer.name}/as_float", to=onnx_element_type("f32"))[0]
    pad_type = "f32" if integer else element_type
    source = _pre_pad(context, source, geometry, pad_type, layer.name, -np.inf)
    pooled = context.fresh(f"{layer.name}/float_values") if integer else values
    context.node_into("MaxPool", [source], [pooled, indices], layer.name, **attrs)
    if integer:
        context.node_into("Cast", [pooled], [values], layer.name, to=onnx_element_type(element_type))


def _unpadded_indices(context: Context, indices: str, geometry: OnnxWindows, spatial: list[int], base: str,
                      output: str | None) -> str:
    """ONNX's flat indices over the padded (N, C, *padded) tensor -> flat over (N, C, *spatial): per spatial axis
    from the last, coordinate = rest mod padded length, minus pads_begin; the (n, c) slab is index // padded volume.

    Worked example: spatial (3,), pads (2, 2): padded length 7; padded index 9 = slab 1, coordinate 2 -> 1 * 3 + 0.
    """
    since = first_opset("Mod")
    context.check_opset(since, f"pads >= kernel with the indices used need Mod, from opset {since}")
    padded = [length + begin + end for length, begin, end in zip(spatial, geometry.pads_begin, geometry.pre_pad_end)]
    padded_volume = context.int64s(math.prod(padded), f"{base}/padded_volume")
    slab = context.node("Div", [indices, padded_volume], f"{base}/slab")[0]
    rest = context.node("Mod", [indices, padded_volume], f"{base}/rest", fmod=0)[0]
    total = context.node("Mul", [slab, context.int64s(math.prod(spatial), f"{base}/volume")], f"{base}/slab_start")[0]
    for axis in reversed(range(len(spatial))):
        length = context.int64s(padded[axis], f"{base}/padded_length")
        coordinate = context.node("Mod", [rest, length], f"{base}/coordinate", fmod=0)[0]
        rest = context.node("Div", [rest, length], f"{base}/rest")[0] if axis else rest
        real = context.node("Sub", [coordinate, context.int64s(geometry.pads_begin[axis], f"{base}/pad_begin")],
                            f"{base}/real_coordinate")[0]
        step = math.prod(spatial[axis + 1:])
        if step != 1:
            real = context.node("Mul", [real, context.int64s(step, f"{base}/step")], f"{base}/offset")[0]
        summed = (output or context.fresh(f"{base}/index")) if axis == 0 else context.fresh(f"{base}/index")
        context.node_into("Add", [total, real], [summed], base)
        total = summed
    return total


def avg_pool(context: Context, layer: Layer) -> None:
    info = context.input_info(layer, 0)
    check_writes(context, "AveragePool", info.element_type)
    exclude = layer.attrs["exclude-pad"]
    geometry = pool_geometry(context, layer, "AveragePool", inert_padding=exclude, full_kernel_divisor=not exclude)
    attrs = pool_attributes(context, layer, geometry, "AveragePool")
    if geometry.count_include_pad:
        since = first_opset_with("AveragePool", "count_include_pad")
        context.check_opset(since, f"count_include_pad needs AveragePool-{since}")
        attrs["count_include_pad"] = 1
    source = _pre_pad(context, context.input(layer, 0), geometry, info.element_type, layer.name, layer=layer)
    output = context.name_output(layer, 0)
    if geometry.real_taps is None:
        _pool_into(context, "AveragePool", source, geometry, layer, output, **attrs)
        return
    # Zeros padded explicitly (pads >= kernel): the pool divides by prod(k), OpenVINO by the real taps, a
    # product over the axes; so multiply by k / real taps along each axis (constants of out_a values each).
    scaled = context.fresh(f"{layer.name}/over_kernel")
    _pool_into(context, "AveragePool", source, geometry, layer, scaled, **attrs)
    rank = len(geometry.real_taps)
    for axis, (kernel, taps) in enumerate(zip(layer.attrs["kernel"], geometry.real_taps)):
        factor = (kernel / taps.astype(np.float64)).reshape([1, 1] + [-1 if a == axis else 1 for a in range(rank)])
        target = output if axis == rank - 1 else context.fresh(f"{layer.name}/over_kernel")
        context.node_into("Mul", [scaled, context.initializer(factor.astype(dtype_of(info.element_type)),
                                                              f"{layer.name}/kernel_over_real_taps")],
                          [target], layer.name)
        scaled = target


CONVERTERS = {"MaxPool": max_pool, "AvgPool": avg_pool, **ADAPTIVE_CONVERTERS}


# ---------------------------------------------------------------------------------------------------
# OpenVINO's LpPool decomposition, folded back


@dataclass(frozen=True, slots=True)
class _LpPattern:
    layers: tuple[Layer, ...]  # Abs, Power, AvgPool, Multiply, Power[, ConvertLike]
    pool: Layer
    p: int


def _uniform(value: np.ndarray | None) -> float | None:
    if value is None or value.size == 0:
        return None
    flat = np.ravel(value).astype(np.float64)
    return float(flat[0]) if np.all(flat == flat[0]) else None


def _match_lp_pool(context: Context, abs_layer: Layer) -> _LpPattern | None:
    """Abs -> Power(p) -> AvgPool -> Multiply(prod(k)) -> Power(1/p) [-> ConvertLike], each read once."""
    chain = [abs_layer]
    for expected in ("Power", "AvgPool", "Multiply", "Power"):
        following = context.single_consumer(chain[-1])
        if following is None or following.type != expected:
            return None
        chain.append(following)
    _, power, pool, multiply, root = chain
    if context.producers[(power.id, power.inputs[0].id)][0] != abs_layer.id:
        return None
    if context.producers[(root.id, root.inputs[0].id)][0] != multiply.id:
        return None
    p = _uniform(context.constant(power, 1))
    factor_index = 1 if context.producers[(multiply.id, multiply.inputs[0].id)][0] == pool.id else 0
    factor = _uniform(context.constant(multiply, factor_index))
    inverse = _uniform(context.constant(root, 1))
    if p is None or factor is None or inverse is None or p != round(p) or p < 1:
        return None
    if factor != math.prod(pool.attrs["kernel"]) or abs(inverse * p - 1.0) > 1e-6:
        return None
    convert = context.single_consumer(root)
    if convert is not None and convert.type == "ConvertLike" and \
            context.output_info(convert, 0).element_type == context.output_info(root, 0).element_type and \
            context.producers[(convert.id, convert.inputs[0].id)][0] == root.id:
        chain.append(convert)
    return _LpPattern(tuple(chain), pool, int(p))


def _lp_divisor_is_kernel(context: Context, pool: Layer) -> bool:
    """Does OpenVINO's AvgPool divide by prod(k) in every window (so that * prod(k) gives the sum)?"""
    attrs = pool.attrs
    spatial = [dim.value for dim in context.input_info(pool, 0).shape[2:]]
    if any(length is None for length in spatial):
        explicit = attrs["auto_pad"] == "explicit"
        return not attrs["exclude-pad"] and explicit and (any(attrs["pads_begin"]) or any(attrs["pads_end"]))
    windows = pool_windows_of(pool, spatial)
    if not attrs["exclude-pad"] and any(w.pad_begin or w.pad_end for w in windows):
        return True
    return all((w.real_taps() == w.kernel).all() for w in windows)


def fold_lp_pool(context: Context, abs_layer: Layer) -> bool:
    """Write OpenVINO's LpPool decomposition starting at `abs_layer` as one LpPool node, when it is one."""
    pattern = _match_lp_pool(context, abs_layer)
    if pattern is None:
        return False
    try:
        return _lp_pool(context, pattern, abs_layer)
    except ConversionError:
        return False  # the layers are converted one by one, which is exact too


def _lp_pool(context: Context, pattern: _LpPattern, abs_layer: Layer) -> bool:
    pool = pattern.pool
    if not _lp_divisor_is_kernel(context, pool):
        return False
    check_writes(context, "LpPool", context.input_info(abs_layer, 0).element_type)
    geometry = pool_geometry(context, pool, "LpPool", inert_padding=True, full_kernel_divisor=False)
    if geometry.pre_pad_end is not None:
        return False
    attrs = pool_attributes(context, pool, geometry, "LpPool")
    last = pattern.layers[-1]
    context.node_into("LpPool", [context.input(abs_layer, 0)], [context.name_output(last, 0)], pool.name,
                      p=pattern.p, **attrs)
    context.folded.update(layer.id for layer in pattern.layers[1:])
    return True


# ---------------------------------------------------------------------------------------------------
# Reductions over every spatial axis: the Global pools


def fold_global_pool(context: Context, layer: Layer) -> bool:
    """Write a Reduce{Mean,Max,L1,L2} over every spatial axis (N, C, spatial...), dims kept, as a Global pool."""
    rank = len(context.input_info(layer, 0).shape)
    if context.constant(layer, 1) is None or not layer.attrs["keep_dims"] or rank < 3:
        return False
    if reduction_axes(context, layer) != list(range(2, rank)):
        return False
    op_type, attrs = _GLOBAL_POOLS[layer.type]
    accepting = first_opset_accepting(op_type, dtype_of(context.input_info(layer, 0).element_type))
    if accepting is None or accepting > context.opset:
        return False  # an integer ReduceMax: ONNX's Global pools take floats only, Reduce* takes it
    if onnxruntime_lacks(op_type, context.opset, onnx_element_type(context.input_info(layer, 0).element_type)):
        return False  # the Reduce* itself means the same, and onnxruntime runs it (onnxruntime_gaps.py)
    context.node_into(op_type, [context.input(layer, 0)], [context.name_output(layer, 0)], layer.name, **attrs)
    return True


FOLDS = {"Abs": fold_lp_pool, **dict.fromkeys(_GLOBAL_POOLS, fold_global_pool)}
