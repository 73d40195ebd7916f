"""ONNX pooling nodes -> IR layers whose meaning, *as OpenVINO executes it*, equals the ONNX meaning.

The ONNX side is read with the runtime's attribute table and normaliser (`runtime.onnx_ops`), so an
ONNX attribute has one reading in poolir. The windows are planned in pool_windows.py (window arithmetic
is ir.geometry's); this module writes the layers: MaxPool / AvgPool, LpPool as OpenVINO's own
decomposition (Abs, Power, AvgPool, Multiply, Power), the global pools as Reduce* layers.

OpenVINO's pooling semantics (CPU plugin, OpenVINO 2026.4), measured by building single layers with
`openvino.opset*` and running them; the cases are pinned in tests/converter/test_onnx_to_ir_semantics.py.
ir_to_onnx/ relies on the same facts, read in the other direction.

1. rounding_type=ceil keeps a last window that starts in the right padding (L=6, k=2, s=2, pads (0,2):
   four windows, the last all padding); ceil_torch drops it (ir.geometry's definitions).
2. MaxPool: a window with no real element gives the type's lowest finite value (-3.4e38 for f32) and
   index 0; ONNX gives -inf (onnxruntime refuses such pads). Padding never wins a max and never
   appears as an index, so for MaxPool the pads only decide how many windows there are.
3. AvgPool exclude-pad=true divides by the real input taps (a window with none gives NaN, 0/0, as ONNX).
   So for it, as for MaxPool, pads only decide the number of windows.
4. AvgPool exclude-pad=false divides by the FULL kernel size prod(k) (taps past the padded input in a ceil
   overhang included: L=6, k=3, s=2, pads (1,1), ceil, last window [60, pad, past] -> 60/3 = 20) when
   ANY pad of the layer is non-zero, on every axis (2-D, pads only on W, overhang on H: the H divisor is
   still k). When all pads are zero it divides by the real taps (L=6, k=3, s=2, no pads, ceil: last
   window [50, 60, past] -> 55). ONNX count_include_pad=1 divides by the taps inside [-pb, L + pe).
   The two agree whenever no window reaches past L + pe; otherwise poolir pads explicitly (a zero Pad
   layer) and pools with exclude-pad=true, whose real taps are then exactly ONNX's padded taps. Such an
   AvgPool keeps a non-zero pad of its own: OpenVINO fuses Pad + AvgPool(exclude-pad=true, no pads) into
   AvgPool(exclude-pad=false, the Pad's pads), which divides by prod(k) again.
5. auto_pad same_upper / same_lower resolve pads like ONNX SAME, dilations included; rounding_type then
   still applies (ir/infer.py rule 2: L=8, k=1, s=3 gives 4 windows with ceil), so poolir pairs auto_pad
   with floor, which gives ceil(L/s). valid applies rounding_type too (ceil keeps an overhang), unlike ONNX
   VALID. poolir writes explicit pads whenever the spatial dims are static, auto_pad only for dynamic ones.
6. MaxPool-8 `axis` is where index flattening starts: axis=0 flattens over N, C and spatial like ONNX
   (axis=1 over C and spatial, axis=2 spatial only). Ties go to the first element in row-major order.
7. A dilated kernel longer than the padded input is refused (ir.geometry.kernel_fits), even where ceil
   rounding would give a window, which ONNX's ceil_mode allows; with a dynamic length OpenVINO cannot check
   it when it loads the IR, and at run time returns an empty tensor and then crashes (LpPool k=3, s=3,
   ceil_mode=1, no pads, a dynamic axis of length 1: shape (0, 2, 0, 0), then a segmentation fault).
"""

from __future__ import annotations

import math
from dataclasses import replace

from poolir.converter.onnx_to_ir.max_pool_indices import column_major_indices
from poolir.converter.onnx_to_ir.node import OnnxNode, Value
from poolir.converter.onnx_to_ir.pool_windows import check_kernel_fits_every_length, plan_windows
from poolir.ir.builder import OutputRef
from poolir.ir.errors import InvalidModelError, UsageError
from poolir.runtime import onnx_ops

# An Lp norm's |x|^p overflows float16 long before the norm does (|60|^3 > 65504): the decomposition
# computes in f32 and converts back, so the IR is exact under a strict reading of its element types too.
_NARROW_FLOATS = ("f16", "bf16")
_GLOBAL_REDUCTIONS = {"GlobalAveragePool": "ReduceMean", "GlobalMaxPool": "ReduceMax"}


def window_pool(node: OnnxNode) -> list[Value]:
    """AveragePool, MaxPool (with its Indices output) and LpPool."""
    x, attrs = node.checked_single_input()
    try:
        pool = onnx_ops.onnx_pool(node.version, attrs, len(node.node.output))
    except UsageError as error:
        raise InvalidModelError(error.problem) from None
    if len(node.node.output) >= 2 and not node.node.output[1]:
        pool = replace(pool, with_indices=False)
    if len(x.shape) != pool.spatial_rank + 2:
        raise InvalidModelError(f"input rank {len(x.shape)} does not match kernel_shape with "
                                f"{pool.spatial_rank} axes (expected N, C and {pool.spatial_rank} spatial dims)")
    plan, out_spatial = plan_windows(pool, x.shape[2:])
    check_kernel_fits_every_length(pool, x.shape[2:], plan)
    out_shape = x.shape[:2] + out_spatial
    source = x.ref if plan.pre_pad is None else _zero_pad(node, x, plan.pre_pad)
    geometry = {"kernel": pool.kernel, "strides": pool.strides, "pads_begin": plan.pads_begin,
                "pads_end": plan.pads_end, "rounding_type": plan.rounding, "auto_pad": plan.auto_pad}
    if any(d != 1 for d in pool.dilations):
        geometry["dilations"] = pool.dilations
    name = node.name
    if pool.family == "max":
        if pool.with_indices:
            geometry.update(index_element_type="i64", axis=0)  # ONNX's indices: i64, flattened from N (fact 6)
        outs = node.add("MaxPool", [source], geometry, name if not pool.column_major_indices else f"{name}/pool")
        values = [Value(outs[0], x.element_type, out_shape)]
        if pool.with_indices:
            indices = column_major_indices(node, outs[1], x) if pool.column_major_indices else outs[1]
            values.append(Value(indices, "i64", out_shape))
        return values
    geometry["exclude-pad"] = plan.exclude_pad
    if pool.family == "avg":
        if plan.keep_starts_before is None:
            return [Value(node.add("AvgPool", [source], geometry, name)[0], x.element_type, out_shape)]
        pooled = node.add("AvgPool", [source], geometry, f"{name}/pool")[0]
        return [Value(_windows_starting_before(node, pooled, x, pool.strides, plan.keep_starts_before),
                      x.element_type, out_shape)]
    # LpPool: (sum |x|^p)^(1/p) = (AvgPool(|x|^p) * prod(k))^(1/p), where the AvgPool divides by prod(k)
    # in every window (pool_windows.fit_rounding's full_kernel_divisor; floor and SAME windows never leave
    # the padded input, so there the divisor is prod(k) either way).
    wide = _widened(node, Value(source, x.element_type, x.shape))
    last = name if wide.element_type == x.element_type else f"{name}/root"
    powered = _abs_power(node, wide, pool.p)
    averaged = node.add("AvgPool", [powered], geometry, f"{name}/avg")[0]
    volume = node.const(math.prod(pool.kernel), wide.element_type)
    summed = node.add("Multiply", [averaged, volume], {"auto_broadcast": "numpy"},
                      f"{name}/sum" if pool.p != 1.0 else last)[0]
    ref = summed if pool.p == 1.0 else _power(node, summed, 1.0 / pool.p, wide.element_type, last)
    return [Value(_narrowed(node, ref, x), x.element_type, out_shape)]


def global_pool(node: OnnxNode) -> list[Value]:
    """GlobalAveragePool, GlobalMaxPool and GlobalLpPool: a reduction over every spatial axis, dims kept."""
    x, attrs = node.checked_single_input()
    op_type, name = node.node.op_type, node.name
    rank = len(x.shape)
    if rank < 3:
        raise InvalidModelError(f"input rank {rank} < 3: {op_type} needs N, C and at least one spatial dim")
    axes = node.const(range(2, rank), "i64")
    out_shape = x.shape[:2] + (1,) * (rank - 2)
    keep = {"keep_dims": True}
    if op_type in _GLOBAL_REDUCTIONS:
        return [Value(node.add(_GLOBAL_REDUCTIONS[op_type], [x.ref, axes], keep, name)[0], x.element_type,
                      out_shape)]
    try:
        p = onnx_ops.global_p(node.version, attrs)
    except UsageError as error:
        raise InvalidModelError(error.problem) from None
    if p in (1.0, 2.0) and x.element_type not in _NARROW_FLOATS:
        # exactly OpenVINO's ReduceL1 / ReduceL2 (sum |x|, sqrt(sum x^2)) over the axes
        return [Value(node.add(f"ReduceL{int(p)}", [x.ref, axes], keep, name)[0], x.element_type, out_shape)]
    wide = _widened(node, x)
    powered = _abs_power(node, wide, p)
    summed = node.add("ReduceSum", [powered, axes], keep, f"{name}/sum")[0]
    root = _power(node, summed, 1.0 / p, wide.element_type, name if wide is x else f"{name}/root")
    return [Value(_narrowed(node, root, x), x.element_type, out_shape)]


CONVERTERS = {
    "AveragePool": window_pool, "MaxPool": window_pool, "LpPool": window_pool,
    "GlobalAveragePool": global_pool, "GlobalMaxPool": global_pool, "GlobalLpPool": global_pool,
}


def _zero_pad(node: OnnxNode, x: Value, pads: tuple[tuple[int, ...], tuple[int, ...]]) -> OutputRef:
    begin, end = pads
    return node.add("Pad", [x.ref, node.const((0, 0, *begin), "i64"), node.const((0, 0, *end), "i64"),
                            node.const(0, x.element_type)], {"pad_mode": "constant"}, f"{node.name}/pad")[0]


def _windows_starting_before(node: OnnxNode, pooled: OutputRef, x: Value, strides: tuple[int, ...],
                             offsets: tuple[int, ...]) -> OutputRef:
    """The pooled windows that start before L + offset on each spatial axis: the first ceil((L + offset) / s),
    computed from ShapeOf(x) (Slice clamps an end past the pooled length). OpenVINO's CPU plugin divides
    integers in float32, exact for the spatial lengths any tensor poolir accepts has (below 2**22)."""
    name = node.name
    spatial_axes = list(range(2, len(x.shape)))
    shape = node.add("ShapeOf", [x.ref], {"output_type": "i64"}, f"{name}/shape")[0]
    lengths = node.add("Gather", [shape, node.const(spatial_axes, "i64"), node.const(0, "i64")],
                       name=f"{name}/lengths", newest=True)[0]
    raised = node.add("Add", [lengths, node.const([o + s - 1 for o, s in zip(offsets, strides)], "i64")],
                      {"auto_broadcast": "numpy"}, f"{name}/raised")[0]
    ends = node.add("Divide", [raised, node.const(strides, "i64")], {"auto_broadcast": "numpy"}, f"{name}/ends")[0]
    rank = len(spatial_axes)
    return node.add("Slice", [pooled, node.const([0] * rank, "i64"), ends, node.const([1] * rank, "i64"),
                              node.const(spatial_axes, "i64")], name=name)[0]


def _widened(node: OnnxNode, x: Value) -> Value:
    if x.element_type not in _NARROW_FLOATS:
        return x
    ref = node.add("Convert", [x.ref], {"destination_type": "f32"}, f"{node.name}/to_f32")[0]
    return Value(ref, "f32", x.shape)


def _narrowed(node: OnnxNode, ref: OutputRef, x: Value) -> OutputRef:
    if x.element_type not in _NARROW_FLOATS:
        return ref
    return node.add("Convert", [ref], {"destination_type": x.element_type}, node.name)[0]


def _power(node: OnnxNode, ref: OutputRef, exponent: float, element_type: str, name: str) -> OutputRef:
    return node.add("Power", [ref, node.const(exponent, element_type)], {"auto_broadcast": "numpy"}, name)[0]


def _abs_power(node: OnnxNode, x: Value, p: float) -> OutputRef:
    """|x|^p, the summand of an Lp norm (p = 1 needs no Power)."""
    magnitude = node.add("Abs", [x.ref], name=f"{node.name}/abs")[0]
    return magnitude if p == 1.0 else _power(node, magnitude, p, x.element_type, f"{node.name}/pow")
