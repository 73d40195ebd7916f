"""Pooling IR layers -> ONNX: MaxPool and AvgPool; OpenVINO's LpPool decomposition folded back into LpPool;
a Reduce{Mean,Max,L1,L2} over every spatial axis with keep_dims written as the Global pool.

The windows are planned in pool_windows.py. MaxPool-8 `axis` > 0 becomes a Mod of ONNX's flat indices,
index_element_type i32 a Cast. The folds (FOLDS) are tried before a layer's own converter, at the layer
where the pattern starts; a fold that does not apply leaves the layers to their own converters, which are
exact too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from poolir.converter.element_types import onnx_element_type
from poolir.converter.ir_to_onnx import avg_pool_dynamic
from poolir.converter.ir_to_onnx.adaptive_pool import CONVERTERS as ADAPTIVE_CONVERTERS
from poolir.converter.ir_to_onnx.context import Context
from poolir.converter.ir_to_onnx.movement import pad_node
from poolir.converter.ir_to_onnx.opsets import first_opset_where
from poolir.converter.ir_to_onnx.pool_windows import (OnnxWindows, check_element_type, pool_attributes,
                                                      pool_geometry)
from poolir.converter.ir_to_onnx.reduction import reduction_axes
from poolir.ir.element_types import dtype_of
from poolir.ir.errors import ConversionError
from poolir.ir.ops.pooling import pool_windows_of
from poolir.ir.model import Layer
from poolir.runtime.ir_ops import openvino_max_floor
from poolir.runtime.onnx_ops import first_opset, first_opset_with

_GLOBAL_POOLS = {"ReduceMean": ("GlobalAveragePool", {}), "ReduceMax": ("GlobalMaxPool", {}),
                 "ReduceL1": ("GlobalLpPool", {"p": 1}), "ReduceL2": ("GlobalLpPool", {"p": 2})}


def _pre_pad(context: Context, source: str, geometry: OnnxWindows, element_type: str, base: str,
             value: float = 0) -> str:
    if geometry.pre_pad_end is None:
        return source
    pads = [0, 0, *geometry.pads_begin, 0, 0, *geometry.pre_pad_end]
    return pad_node(context, source, pads, "constant", np.asarray(value, dtype_of(element_type)), base)


def max_pool(context: Context, layer: Layer) -> None:
    info = context.input_info(layer, 0)
    check_element_type(context, "MaxPool", info.element_type)
    want_indices = len(layer.outputs) > 1 and context.is_used(layer, 1)
    # A window wholly in the padding outputs OpenVINO's floor value (runtime/ir_ops.py, rule M1): a Pad
    # of that value reproduces it, but would shift the indices, so only without them.
    geometry = pool_geometry(context, layer, "MaxPool", inert_padding=True, full_kernel_divisor=False,
                             fill_empty_windows=not want_indices)
    attrs = pool_attributes(context, layer, geometry, "MaxPool")
    values = context.name_output(layer, 0)
    if not want_indices:
        floor = openvino_max_floor(dtype_of(info.element_type))
        source = _pre_pad(context, context.input(layer, 0), geometry, info.element_type, layer.name, floor)
        context.node_into("MaxPool", [source], [values], layer.name, **attrs)
        return
    since = first_opset_where("MaxPool", lambda row: row.max_outputs >= 2)
    context.check_opset(since, f"the Indices output needs MaxPool-{since}")
    index_type = layer.attrs.get("index_element_type", "i64")
    axis = layer.attrs.get("axis", 0)
    rank = len(info.shape)
    axis = axis + rank if axis < 0 else axis
    final = context.name_output(layer, 1)
    indices = final if axis == 0 and index_type == "i64" else context.fresh(f"{layer.name}/flat_indices")
    context.node_into("MaxPool", [context.input(layer, 0)], [values, indices], layer.name, **attrs)
    if axis > 0:
        # OpenVINO flattens from `axis` (fact 6): its index is ONNX's flat index modulo prod(shape[axis:]).
        trailing = info.shape[axis:]
        if not all(dim.is_static for dim in trailing):
            raise ConversionError(f"MaxPool axis={layer.attrs['axis']} with dynamic dims from that axis on: the "
                                  "index rewrite needs their product")
        since = first_opset("Mod")
        context.check_opset(since, f"MaxPool axis={layer.attrs['axis']} needs Mod, from opset {since}")
        modulus = context.int64s(math.prod(dim.min for dim in trailing), f"{layer.name}/index_modulus")
        target = final if index_type == "i64" else context.fresh(f"{layer.name}/indices_i64")
        context.node_into("Mod", [indices, modulus], [target], layer.name, fmod=0)
        indices = target
    if index_type != "i64":
        context.node_into("Cast", [indices], [final], layer.name, to=onnx_element_type(index_type))


def avg_pool(context: Context, layer: Layer) -> None:
    info = context.input_info(layer, 0)
    check_element_type(context, "AveragePool", info.element_type)
    if avg_pool_dynamic.applies(context, layer):
        avg_pool_dynamic.avg_pool_padded(context, layer)
        return
    exclude = layer.attrs["exclude-pad"]
    geometry = pool_geometry(context, layer, "AveragePool", inert_padding=exclude, full_kernel_divisor=not exclude)
    attrs = pool_attributes(context, layer, geometry, "AveragePool")
    if geometry.count_include_pad:
        since = first_opset_with("AveragePool", "count_include_pad")
        context.check_opset(since, f"count_include_pad needs AveragePool-{since}")
        attrs["count_include_pad"] = 1
    source = _pre_pad(context, context.input(layer, 0), geometry, info.element_type, layer.name)
    context.node_into("AveragePool", [source], [context.name_output(layer, 0)], layer.name, **attrs)


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
    check_element_type(context, "LpPool", context.input_info(abs_layer, 0).element_type)
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
    context.node_into(op_type, [context.input(layer, 0)], [context.name_output(layer, 0)], layer.name, **attrs)
    return True


FOLDS = {"Abs": fold_lp_pool, **dict.fromkeys(_GLOBAL_POOLS, fold_global_pool)}
