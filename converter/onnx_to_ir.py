"""ONNX pooling models -> IR whose meaning, *as OpenVINO executes it*, equals the ONNX meaning.

The ONNX side is read with the runtime's attribute table and normaliser (`runtime.onnx_ops`), so an
ONNX attribute has one reading in poolir. Window arithmetic is ir.geometry's. This module decides,
per node, the plainest IR that OpenVINO computes identically, or refuses with ConversionError.

OpenVINO's pooling semantics (CPU plugin, OpenVINO 2026.4), measured by building single layers with
`openvino.opset*` and running them; the cases are pinned in tests/converter/test_onnx_to_ir_semantics.py:

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
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import numpy as np
import onnx

from poolir.ir.builder import GraphBuilder
from poolir.ir.element_types import dtype_of
from poolir.ir.errors import (ConversionError, InvalidModelError, PoolirError, UnsupportedError, UsageError,
                       node_label)
from poolir.ir.geometry import AxisWindow, axis_window, effective_kernel, output_length
from poolir.ir.model import Model
from poolir.runtime import onnx_ops
from poolir.runtime.onnx_model import default_opset, refuse_unsupported

# ONNX TensorProto element types -> IR element types.
IR_ELEMENT_TYPES: dict[int, str] = {
    onnx.TensorProto.FLOAT: "f32", onnx.TensorProto.FLOAT16: "f16", onnx.TensorProto.BFLOAT16: "bf16",
    onnx.TensorProto.DOUBLE: "f64", onnx.TensorProto.INT8: "i8", onnx.TensorProto.UINT8: "u8",
    onnx.TensorProto.INT32: "i32", onnx.TensorProto.INT64: "i64", onnx.TensorProto.BOOL: "boolean",
}

SUPPORTED_OPS = (*onnx_ops.POOLING_OPS, "Identity")


def _converts(op_type: str, opset: int) -> bool:
    return op_type in SUPPORTED_OPS and onnx_ops.op_version(op_type, opset) is not None


@dataclass(frozen=True, slots=True)
class _Value:
    """A converted ONNX tensor: the IR output that carries it, its element type, its dims (None: dynamic)."""

    ref: Any  # ir.builder.OutputRef
    element_type: str
    shape: tuple[int | None, ...]


@dataclass(frozen=True, slots=True)
class _Axis:
    """One spatial axis as the IR pooling layer will see it, with the number of windows ONNX wants.

    drop_margin: ONNX drops a last window starting at or after length + pad_begin - drop_margin (in
    padded coordinates); 0 unless the input was padded explicitly by pad_end = drop_margin before.
    """

    length: int | None
    kernel: int
    stride: int
    dilation: int
    pad_begin: int
    pad_end: int
    target: int | None  # ONNX's number of windows; None when the length is dynamic
    drop_margin: int = 0

    @property
    def effective_kernel(self) -> int:
        return effective_kernel(self.kernel, self.dilation)

    def count(self, rounding: str, pad_end: int | None = None) -> int:
        pad_end = self.pad_end if pad_end is None else pad_end
        return output_length(self.length, self.kernel, self.stride, self.dilation, self.pad_begin, pad_end,
                             rounding)

    def overhang_possible(self) -> bool:
        """Can a wanted window reach past the padded input (ONNX ceil rounding)?"""
        if self.target is None:
            return self.stride > 1  # some length makes ceil round up
        return (self.target - 1) * self.stride + self.effective_kernel > self.length + self.pad_begin + self.pad_end

    def ceil_drops_possible(self, pad_end: int) -> bool:
        """For a dynamic length: can ONNX drop a window that rounding_type=ceil keeps?

        ceil's last window starts at most L + pb + pe - ek + s - 1 (padded coordinates); ONNX drops it
        when it starts at or after L + pb - drop_margin, possible iff pe + drop_margin > ek - s.
        """
        return pad_end + self.drop_margin > self.effective_kernel - self.stride


@dataclass(frozen=True, slots=True)
class _IrWindows:
    """The IR pooling layer's geometry, and an explicit zero Pad before it when one is needed."""

    pads_begin: tuple[int, ...]
    pads_end: tuple[int, ...]
    rounding: str
    auto_pad: str = "explicit"
    exclude_pad: bool = True  # AvgPool only
    pre_pad: tuple[tuple[int, ...], tuple[int, ...]] | None = None  # (begin, end) per spatial axis


def onnx_to_ir(onnx_model: onnx.ModelProto, *, input_shapes: Mapping[str, Sequence[int]] | None = None,
               ir_version: int = 11) -> Model:
    """Convert an ONNX pooling model to an IR model with the same meaning as OpenVINO computes it.

    input_shapes: NAME -> dims (-1 for dynamic) replacing the declared shape of a graph input.
    Raises UnsupportedError (ops outside the supported set, listed together), InvalidModelError,
    ConversionError (no exact IR exists, naming the node and why) or UsageError (a bad input_shapes).
    """
    if ir_version not in (10, 11):
        raise UsageError(f"IR version {ir_version} is not supported (10 or 11)")
    graph = onnx_model.graph
    _refuse_undecodable_names(graph)
    opset = default_opset(onnx_model)
    refuse_unsupported(onnx_model, opset, lambda op_type: _converts(op_type, opset), onnx_ops.first_opset,
                       doing="cannot convert to IR: ")
    builder = GraphBuilder(graph.name or "model")
    values: dict[str, _Value] = {}
    initializers = {init.name: init for init in graph.initializer}
    shapes = dict(input_shapes or {})
    for graph_input in graph.input:
        if graph_input.name in initializers:
            continue
        values[graph_input.name] = _parameter(builder, graph_input, shapes.pop(graph_input.name, None))
    if shapes:
        known = ", ".join(i.name for i in graph.input if i.name not in initializers)
        raise UsageError(f"--input-shape names {', '.join(sorted(shapes))}, which the model has no input "
                         f"called (inputs: {known})")
    for name, init in initializers.items():
        array = onnx.numpy_helper.to_array(init)
        values[name] = _Value(builder.const(array), _element_type(init.data_type, f"initializer '{name}'"),
                              tuple(array.shape))
    for index, node in enumerate(graph.node):
        label = node_label(node.name or f"#{index}", node.op_type)
        try:
            outputs = _convert_node(builder, node, index, opset, values)
        except PoolirError as error:
            raise error.located(where=label) from None
        for name, value in zip(node.output, outputs):
            if name:
                values[name] = value
    parameter_refs = {values[i.name].ref for i in graph.input if i.name not in initializers}
    named_refs: set = set()
    if not graph.output:  # the IR would have no Result, which no runtime runs (a garbled .onnx lost its outputs)
        raise InvalidModelError("the graph declares no outputs, so there is nothing to convert")
    for graph_output in graph.output:
        if graph_output.name not in values:
            raise InvalidModelError(f"graph output '{graph_output.name}' is produced by no node")
        value = values[graph_output.name]
        ref = value.ref
        if ref in parameter_refs or ref in named_refs:
            # One IR port has one tensor name: an output that is a graph input (through Identity) or a second
            # name of one tensor gets its own port, from a Convert to the same type (a copy).
            ref = builder.add("Convert", "opset1", [ref], attrs={"destination_type": value.element_type},
                              name=f"{graph_output.name}/copy")[0]
        named_refs.add(ref)
        builder.result(ref, name=graph_output.name)
    return builder.build(version=ir_version)


# ---------------------------------------------------------------------------------------------------
# Graph boundary


def _refuse_undecodable_names(graph: onnx.GraphProto) -> None:
    """protobuf returns a string field that is not valid UTF-8 as bytes; such a name cannot become an IR name
    (a garbled graph name b'\\xd3' reached onnx.helper on the way back to ONNX and raised UnicodeDecodeError)."""
    named = [("the graph name", graph.name)]
    named += [(f"node #{index}: {what}", value) for index, node in enumerate(graph.node)
              for what, value in (("name", node.name), ("op_type", node.op_type),
                                  *(("an input", v) for v in node.input), *(("an output", v) for v in node.output))]
    named += [("a graph input", v.name) for v in graph.input] + [("a graph output", v.name) for v in graph.output]
    named += [("an initializer", v.name) for v in graph.initializer]
    for what, value in named:
        if isinstance(value, bytes):
            raise InvalidModelError(f"{what} {value!r} is not valid UTF-8 text")


def _element_type(onnx_type: int, what: str) -> str:
    try:
        return IR_ELEMENT_TYPES[onnx_type]
    except KeyError:
        names = onnx.TensorProto.DataType
        name = names.Name(onnx_type) if onnx_type in names.values() else str(onnx_type)
        supported = ", ".join(names.Name(t) for t in IR_ELEMENT_TYPES)
        raise UnsupportedError(f"{what}: element type {name} has no IR equivalent (supported: {supported})") from None


def _parameter(builder: GraphBuilder, graph_input: onnx.ValueInfoProto,
               override: Sequence[int] | None) -> _Value:
    what = f"input '{graph_input.name}'"
    tensor_type = graph_input.type.tensor_type
    if not graph_input.type.HasField("tensor_type"):
        raise UnsupportedError(f"{what} is not a tensor")
    element_type = _element_type(tensor_type.elem_type, what)
    declared = None
    if tensor_type.HasField("shape"):
        declared = tuple(int(d.dim_value) if d.HasField("dim_value") else -1 for d in tensor_type.shape.dim)
    if override is not None:
        dims = tuple(int(v) for v in override)
        if declared is not None and len(dims) != len(declared):
            raise UsageError(f"--input-shape for {what} has {len(dims)} dims but the model declares "
                             f"{len(declared)}")
        if any(v < -1 or v == 0 for v in dims):
            raise UsageError(f"--input-shape for {what}: every dim must be >= 1, or -1 for dynamic")
        for given, claimed in zip(dims, declared or dims):
            if claimed != -1 and given != claimed:
                raise UsageError(f"--input-shape for {what}: {list(dims)} contradicts the declared "
                                 f"static shape {list(declared)}")
        declared = dims
    if declared is None:
        raise UnsupportedError(f"{what} has no declared shape (give one with --input-shape)")
    ref = builder.parameter(graph_input.name, element_type, declared)
    return _Value(ref, element_type, tuple(None if v < 0 else v for v in declared))


# ---------------------------------------------------------------------------------------------------
# Nodes


def _convert_node(builder: GraphBuilder, node: onnx.NodeProto, index: int, opset: int,
                  values: dict[str, _Value]) -> list[_Value]:
    version = onnx_ops.op_version(node.op_type, opset)
    inputs = []
    for name in node.input:
        if name not in values:
            raise InvalidModelError(f"input '{name}' is produced by no earlier node, input or initializer")
        inputs.append(values[name])
    if len(inputs) != 1:
        raise InvalidModelError(f"{version.label} takes one input, got {len(inputs)}")
    x = inputs[0]
    if node.op_type == "Identity":
        return [x]
    try:
        attrs = onnx_ops.normalize_attributes(node, version)
    except UsageError as error:
        raise InvalidModelError(error.problem) from None
    if version.dtypes is not None and dtype_of(x.element_type) not in version.dtypes:
        raise UnsupportedError(f"element type {x.element_type} is not allowed for {version.label}")
    name = node.name or f"{node.op_type}_{index}"
    if node.op_type.startswith("Global"):
        return [_convert_global_pool(builder, node.op_type, version, attrs, x, name)]
    try:
        pool = onnx_ops.onnx_pool(version, attrs, len(node.output))
    except UsageError as error:
        raise InvalidModelError(error.problem) from None
    if len(node.output) >= 2 and not node.output[1]:
        pool = _without_indices(pool)
    return _convert_window_pool(builder, pool, x, name)


def _without_indices(pool: onnx_ops.OnnxPool) -> onnx_ops.OnnxPool:
    return replace(pool, with_indices=False)


def _convert_global_pool(builder: GraphBuilder, op_type: str, version, attrs: dict, x: _Value,
                         name: str) -> _Value:
    rank = len(x.shape)
    if rank < 3:
        raise InvalidModelError(f"input rank {rank} < 3: {op_type} needs N, C and at least one spatial dim")
    axes = builder.const(np.arange(2, rank, dtype=np.int64))
    out_shape = x.shape[:2] + (1,) * (rank - 2)
    reduce = {"GlobalAveragePool": "ReduceMean", "GlobalMaxPool": "ReduceMax"}.get(op_type)
    if reduce is not None:
        ref = builder.add(reduce, "opset1", [x.ref, axes], attrs={"keep_dims": True}, name=name)[0]
        return _Value(ref, x.element_type, out_shape)
    try:
        p = onnx_ops.global_p(version, attrs)
    except UsageError as error:
        raise InvalidModelError(error.problem) from None
    if p in (1.0, 2.0) and x.element_type not in _NARROW_FLOATS:
        # exactly OpenVINO's ReduceL1 / ReduceL2 (sum |x|, sqrt(sum x^2)) over the axes
        ref = builder.add(f"ReduceL{int(p)}", "opset4", [x.ref, axes], attrs={"keep_dims": True}, name=name)[0]
        return _Value(ref, x.element_type, out_shape)
    wide = _widened(builder, x, name)
    powered = _abs_power(builder, wide, p, name)
    summed = builder.add("ReduceSum", "opset1", [powered, axes], attrs={"keep_dims": True}, name=f"{name}/sum")[0]
    root = _power(builder, summed, 1.0 / p, wide.element_type, name if wide is x else f"{name}/root")
    return _Value(_narrowed(builder, root, x, name), x.element_type, out_shape)


# An Lp norm's |x|^p overflows float16 long before the norm does (|60|^3 > 65504): the decomposition
# computes in f32 and converts back, so the IR is exact under a strict reading of its element types too.
_NARROW_FLOATS = ("f16", "bf16")


def _widened(builder: GraphBuilder, x: _Value, name: str) -> _Value:
    if x.element_type not in _NARROW_FLOATS:
        return x
    ref = builder.add("Convert", "opset1", [x.ref], attrs={"destination_type": "f32"}, name=f"{name}/to_f32")[0]
    return _Value(ref, "f32", x.shape)


def _narrowed(builder: GraphBuilder, ref, x: _Value, name: str):
    if x.element_type not in _NARROW_FLOATS:
        return ref
    return builder.add("Convert", "opset1", [ref], attrs={"destination_type": x.element_type}, name=name)[0]


def _scalar(builder: GraphBuilder, value: float | int, element_type: str):
    return builder.const(np.asarray(value, dtype=dtype_of(element_type)))


def _power(builder: GraphBuilder, ref, exponent: float, element_type: str, name: str):
    return builder.add("Power", "opset1", [ref, _scalar(builder, exponent, element_type)],
                       attrs={"auto_broadcast": "numpy"}, name=name)[0]


def _abs_power(builder: GraphBuilder, x: _Value, p: float, name: str):
    """|x|^p, the summand of an Lp norm (p = 1 needs no Power)."""
    magnitude = builder.add("Abs", "opset1", [x.ref], name=f"{name}/abs")[0]
    return magnitude if p == 1.0 else _power(builder, magnitude, p, x.element_type, f"{name}/pow")


# ---------------------------------------------------------------------------------------------------
# Windowed pooling: the plan


def _plan(pool: onnx_ops.OnnxPool, spatial: tuple[int | None, ...]) -> tuple[_IrWindows, tuple[int | None, ...]]:
    """The IR geometry that OpenVINO computes exactly as ONNX does, and the output spatial dims.

    Rules (the numbered OpenVINO facts are in the module docstring):
    - SAME: explicit resolved pads when the dims are static, auto_pad otherwise; every window lies in
      the padded input, so both divisors agree with ONNX (fact 4: prod(k), or real taps = k when no pad).
    - VALID and explicit floor: the same pads; floor windows never leave the padded input.
    - explicit ceil_mode=1 (ceil_torch): see _fit_rounding; AveragePool count_include_pad=1 with pads
      and a possible overhang pads explicitly first (fact 4).
    """
    rank = pool.spatial_rank
    windows = [_onnx_axis(pool, axis, length) for axis, length in enumerate(spatial)]
    out_spatial = tuple(w.output if w is not None else None for w in windows)
    family = pool.family
    exclude_pad = family == "max" or (family == "avg" and pool.divisor == "real")
    # Any rounding: floor keeps a window wholly in the padding too when a pad is at least the kernel.
    if family == "max" and any(w is not None and not w.real_taps().all() for w in windows):
        raise ConversionError("a window holds no input element, only padding: ONNX gives -inf there and "
                              "OpenVINO the lowest finite value with index 0, so no exact IR exists")
    if family == "max" and any(w is None and _padding_window_possible(pool, axis) for axis, w in enumerate(windows)):
        raise ConversionError("with dynamic spatial dims, some input lengths give a window that holds no input "
                              "element, only padding (ONNX: -inf, OpenVINO: its lowest finite value); fix the "
                              "shape with --input-shape")
    if pool.auto_pad in ("same_upper", "same_lower"):
        if all(w is not None for w in windows):
            return _IrWindows(tuple(w.pad_begin for w in windows), tuple(w.pad_end for w in windows), "floor",
                              exclude_pad=exclude_pad), out_spatial
        return _IrWindows((0,) * rank, (0,) * rank, "floor", pool.auto_pad, exclude_pad), out_spatial
    if pool.auto_pad == "valid":
        return _IrWindows((0,) * rank, (0,) * rank, "floor", exclude_pad=exclude_pad), out_spatial
    if pool.rounding == "floor":
        return _IrWindows(pool.pads_begin, pool.pads_end, "floor", exclude_pad=exclude_pad), out_spatial
    axes = [_Axis(length, pool.kernel[i], pool.strides[i], pool.dilations[i], pool.pads_begin[i],
                  pool.pads_end[i], w.output if w is not None else None)
            for i, (length, w) in enumerate(zip(spatial, windows))]
    if exclude_pad:
        return _fit_rounding(axes, full_kernel_divisor=False, exclude_pad=True), out_spatial
    if family == "lp":
        return _fit_rounding(axes, full_kernel_divisor=True, exclude_pad=False), out_spatial
    # AveragePool count_include_pad=1 with ceil_mode=1.
    if not any(pool.pads_begin) and not any(pool.pads_end):
        # No padding: the taps inside [-pb, L + pe) are the real taps, exactly what exclude-pad divides by.
        return _fit_rounding(axes, full_kernel_divisor=False, exclude_pad=True), out_spatial
    if not any(axis.overhang_possible() for axis in axes):
        # Every wanted window lies in the padded input, so ONNX divides by prod(k) like OpenVINO (fact 4),
        # and floor rounding gives the wanted windows, except that with pad_end >= the dilated kernel floor
        # also keeps a last window lying wholly in the right padding, which ONNX drops (L=1, k=1, pads (0, 1):
        # ONNX 1 window, floor 2). Shrinking pads_end to what the wanted windows reach removes it; no window
        # leaves the input, so the divisor is still k per axis.
        if any(a.length is None and a.pad_end >= a.effective_kernel for a in axes):
            raise ConversionError(
                "count_include_pad=1 with ceil_mode=1, a pad_end at least the dilated kernel and dynamic spatial "
                "dims: whether ONNX drops a last window lying in the padding depends on the input length; fix "
                "the shape with --input-shape")
        ends = tuple(a.pad_end if a.length is None else
                     min(a.pad_end, max(0, (a.target - 1) * a.stride + a.effective_kernel - a.length - a.pad_begin))
                     for a in axes)
        return _IrWindows(pool.pads_begin, ends, "floor", exclude_pad=False), out_spatial
    # Pad with zeros explicitly; exclude-pad's real taps are then the taps inside ONNX's padded input.
    # The AvgPool must keep a non-zero pad: OpenVINO's PadFusion folds Pad + AvgPool(exclude-pad=true,
    # zero pads) into AvgPool(exclude-pad=false, the Pad's pads), whose divisor is prod(k) (fact 4)
    # (measured: L=8, k=4, s=3, pads (2,1), ceil: last window 8/4 instead of 8/2). With static dims the
    # fitted floor pads_end is non-zero exactly on the overhanging axes.
    if any(a.length is None for a in axes):
        raise ConversionError(
            "count_include_pad=1 with ceil_mode=1, pads and dynamic spatial dims: a window can reach past the "
            "padded input, where ONNX and OpenVINO count different divisors, and the exact rewrite needs "
            "static dims; fix the shape with --input-shape")
    padded = [_Axis(a.length + a.pad_begin + a.pad_end, a.kernel, a.stride, a.dilation, 0, 0, a.target,
                    drop_margin=a.pad_end) for a in axes]
    fitted = _fit_rounding(padded, full_kernel_divisor=False, exclude_pad=True, allow_zero_pads=False)
    return _IrWindows(fitted.pads_begin, fitted.pads_end, fitted.rounding, exclude_pad=True,
                      pre_pad=(pool.pads_begin, pool.pads_end)), out_spatial


def _check_kernel_fits_every_length(pool: onnx_ops.OnnxPool, spatial: tuple[int | None, ...], plan: _IrWindows) -> None:
    """OpenVINO refuses a dilated kernel longer than the padded input (fact 7) even where ceil rounding gives a
    window; with a dynamic length it cannot check that when it loads the IR, and at run time it returns an
    empty tensor and then crashes (measured: LpPool k=3, s=3, ceil_mode=1, no pads on a dynamic axis of length
    1 gave shape (0, 2, 0, 0), and the next inference a segmentation fault). ONNX's ceil_mode accepts such
    lengths, so refuse when one of them is possible: the smallest length ONNX accepts is the one to check."""
    if plan.auto_pad != "explicit":
        return  # SAME pads always cover the dilated kernel
    for axis, length in enumerate(spatial):
        if length is not None:
            continue
        effective = effective_kernel(pool.kernel[axis], pool.dilations[axis])
        padded = plan.pads_begin[axis] + plan.pads_end[axis] + (sum(p[axis] for p in plan.pre_pad) if plan.pre_pad else 0)
        # ONNX's window count grows with the length, and under ceil_mode it is >= 1 exactly when
        # L + pads - ek > -stride: the shortest length it accepts is the one to compare with the kernel.
        shortest = max(1, effective - pool.strides[axis] - pool.pads_begin[axis] - pool.pads_end[axis] + 1)
        if shortest + padded >= effective:
            continue
        try:
            _onnx_axis(pool, axis, shortest)
        except InvalidModelError:
            continue  # ONNX has no window at this length either
        raise ConversionError(
            f"spatial axis {axis} is dynamic and ONNX's ceil_mode accepts a length of {shortest}, shorter than the "
            f"dilated kernel {effective} with pads {padded}, which OpenVINO cannot run; fix the shape with "
            "--input-shape")


# Beyond this many lengths to try, a dynamic axis with pads or dilation is assumed to allow a padding window.
_PADDING_WINDOW_SEARCH_LIMIT = 4096


def _padding_window_possible(pool: onnx_ops.OnnxPool, axis: int) -> bool:
    """Whether some input length L >= 1 gives a window along `axis` without any input element.

    Left-edge windows do not depend on L, right-edge windows only on L mod stride once L exceeds the
    span of the pads, the dilated kernel and a stride's worth of dilated taps (and small L, where dilated
    taps can skip the whole input, is tried one by one), so trying every L up to twice that span decides it.
    """
    kernel, stride, dilation = pool.kernel[axis], pool.strides[axis], pool.dilations[axis]
    pads = pool.pads_begin[axis] + pool.pads_end[axis]
    if pool.auto_pad == "valid" or (pads == 0 and dilation == 1 and pool.auto_pad == "explicit"):
        return False  # every window starts inside the input and its taps are contiguous
    limit = 2 * (effective_kernel(kernel, dilation) + pads + stride * dilation) + stride
    if limit > _PADDING_WINDOW_SEARCH_LIMIT:
        return True
    for length in range(1, limit + 1):
        try:
            window = _onnx_axis(pool, axis, length)
        except InvalidModelError:  # no window at all for this length: the model cannot run on it
            continue
        if not window.real_taps().all():
            return True
    return False


def _onnx_axis(pool: onnx_ops.OnnxPool, axis: int, length: int | None) -> AxisWindow | None:
    if length is None:
        return None
    try:
        return axis_window(length, pool.kernel[axis], pool.strides[axis], pool.dilations[axis],
                           pool.pads_begin[axis], pool.pads_end[axis], pool.rounding, pool.auto_pad)
    except UsageError as error:
        raise InvalidModelError(f"spatial axis {axis} (length {length}): {error.problem}") from None


def _fit_rounding(axes: list[_Axis], *, full_kernel_divisor: bool, exclude_pad: bool,
                  allow_zero_pads: bool = True) -> _IrWindows:
    """IR pads and rounding giving ONNX's ceil_mode=1 windows, for layers whose padding values are inert.

    Inert: MaxPool and exclude-pad AvgPool never read padding (facts 2, 3), and an Lp sum of |x|^p
    gets 0 from it; so the pads only decide how many windows there are. Candidates, plainest first:
    1. rounding_type=ceil with the same pads, when it yields ONNX's count (static: compare counts;
       dynamic: when ONNX can never drop a window ceil keeps, see _Axis.ceil_drops_possible);
    2. static dims: floor with pads_end chosen so that floor yields ONNX's count (still opset1);
    3. rounding_type=ceil_torch (opset14), ONNX's own rule, when no explicit Pad moved the threshold.
    full_kernel_divisor (Lp: the AvgPool's divisor is multiplied back by prod(k)): additionally needs
    OpenVINO to divide by prod(k) in every window, true when any pad is non-zero or no window leaves
    the input (fact 4). allow_zero_pads=False skips candidates whose pads are all zero.
    """
    begins = tuple(a.pad_begin for a in axes)
    ends = tuple(a.pad_end for a in axes)
    static = all(a.length is not None for a in axes)

    def divisor_ok(pads_end: tuple[int, ...]) -> bool:
        if not full_kernel_divisor or any(begins) or any(pads_end):
            return True
        return not any(a.overhang_possible() for a in axes)

    # OpenVINO refuses a kernel extent larger than the padded input even where ceil rounding would make
    # one window (ONNX allows it); then only larger pads_end (candidate 2) can express it.
    kernel_fits = all(a.length is None or a.effective_kernel <= a.length + a.pad_begin + a.pad_end for a in axes)
    ceil_fits = all(a.count("ceil") == a.target if a.length is not None else not a.ceil_drops_possible(a.pad_end)
                    for a in axes)
    pads_ok = allow_zero_pads or any(begins) or any(ends)
    if ceil_fits and kernel_fits and divisor_ok(ends) and pads_ok:
        return _IrWindows(begins, ends, "ceil", exclude_pad=exclude_pad)
    if static:
        fitted_ends = tuple(max(0, (a.target - 1) * a.stride + a.effective_kernel - a.length - a.pad_begin)
                            for a in axes)
        if all(a.count("floor", end) == a.target for a, end in zip(axes, fitted_ends)):
            # divisor_ok holds: with these pads no window leaves the (extended) padded input.
            return _IrWindows(begins, fitted_ends, "floor", exclude_pad=exclude_pad)
    if all(a.drop_margin == 0 for a in axes) and kernel_fits and divisor_ok(ends) and pads_ok:
        return _IrWindows(begins, ends, "ceil_torch", exclude_pad=exclude_pad)
    if not divisor_ok(ends):
        raise ConversionError(
            "LpPool with ceil_mode=1, no pads and dynamic spatial dims: OpenVINO's AvgPool divides a window that "
            "reaches past the input by its real taps (fact 4), so the decomposition's sum is exact only for "
            "known lengths; fix the shape with --input-shape")
    raise ConversionError(
        "ceil_mode=1 with dynamic spatial dims: whether ONNX drops the last window depends on the input "
        "length, and no single IR pooling layer follows that for every length; fix the shape with "
        "--input-shape")


# ---------------------------------------------------------------------------------------------------
# Windowed pooling: the layers


def _convert_window_pool(builder: GraphBuilder, pool: onnx_ops.OnnxPool, x: _Value, name: str) -> list[_Value]:
    if len(x.shape) != pool.spatial_rank + 2:
        raise InvalidModelError(f"input rank {len(x.shape)} does not match kernel_shape with "
                                f"{pool.spatial_rank} axes (expected N, C and {pool.spatial_rank} spatial dims)")
    plan, out_spatial = _plan(pool, x.shape[2:])
    _check_kernel_fits_every_length(pool, x.shape[2:], plan)
    out_shape = x.shape[:2] + out_spatial
    source = x.ref
    if plan.pre_pad is not None:
        source = _zero_pad(builder, x, plan.pre_pad, f"{name}/pad")
    dilated = any(d != 1 for d in pool.dilations)
    geometry = {"kernel": pool.kernel, "strides": pool.strides, "pads_begin": plan.pads_begin,
                "pads_end": plan.pads_end, "rounding_type": plan.rounding, "auto_pad": plan.auto_pad}
    torch_rounding = plan.rounding == "ceil_torch"
    if pool.family == "max":
        indexed = pool.with_indices or dilated or torch_rounding
        opset = 14 if torch_rounding else 8 if indexed else 1
        if indexed:
            geometry.update(dilations=pool.dilations, index_element_type="i64", axis=0)
        outs = builder.add("MaxPool", f"opset{opset}", [source], attrs=geometry,
                           name=name if not pool.column_major_indices else f"{name}/pool")
        values = [_Value(outs[0], x.element_type, out_shape)]
        if pool.with_indices:
            indices = outs[1]
            if pool.column_major_indices:
                indices = _column_major_indices(builder, indices, x, name)
            values.append(_Value(indices, "i64", out_shape))
        return values
    geometry["exclude-pad"] = plan.exclude_pad
    opset = 16 if dilated else 14 if torch_rounding else 1
    if dilated:
        geometry["dilations"] = pool.dilations
    if pool.family == "avg":
        ref = builder.add("AvgPool", f"opset{opset}", [source], attrs=geometry, name=name)[0]
        return [_Value(ref, x.element_type, out_shape)]
    # LpPool: (sum |x|^p)^(1/p) = (AvgPool(|x|^p) * prod(k))^(1/p), where the AvgPool divides by prod(k)
    # in every window (_fit_rounding's full_kernel_divisor; floor and SAME windows never leave the padded
    # input, so there the divisor is prod(k) either way).
    wide = _widened(builder, _Value(source, x.element_type, x.shape), name)
    last = name if wide.element_type == x.element_type else f"{name}/root"
    powered = _abs_power(builder, wide, pool.p, name)
    averaged = builder.add("AvgPool", f"opset{opset}", [powered], attrs=geometry, name=f"{name}/avg")[0]
    volume = _scalar(builder, math.prod(pool.kernel), wide.element_type)
    summed = builder.add("Multiply", "opset1", [averaged, volume], attrs={"auto_broadcast": "numpy"},
                         name=f"{name}/sum" if pool.p != 1.0 else last)[0]
    ref = summed if pool.p == 1.0 else _power(builder, summed, 1.0 / pool.p, wide.element_type, last)
    return [_Value(_narrowed(builder, ref, x, name), x.element_type, out_shape)]


def _zero_pad(builder: GraphBuilder, x: _Value, pads: tuple[tuple[int, ...], tuple[int, ...]], name: str):
    begin, end = pads
    pads_begin = builder.const(np.asarray((0, 0, *begin), dtype=np.int64))
    pads_end = builder.const(np.asarray((0, 0, *end), dtype=np.int64))
    return builder.add("Pad", "opset1", [x.ref, pads_begin, pads_end, _scalar(builder, 0, x.element_type)],
                       attrs={"pad_mode": "constant"}, name=name)[0]


def _column_major_indices(builder: GraphBuilder, indices, x: _Value, name: str):
    """ONNX storage_order=1 indices from OpenVINO's row-major ones (axis=0), by index arithmetic.

    i = base + r with r the row-major spatial offset; r's coordinates c_j = r // row_j % dim_j are
    recombined with column-major strides (the first spatial axis fastest): base + sum c_j * col_j.
    Products of static dims are constants; a product involving a dynamic dim is computed from ShapeOf.
    """
    spatial = x.shape[2:]
    shape_of = []  # built once, on first need
    products: dict[tuple[int, int], Any] = {}

    def const(value: int):
        return builder.const(np.asarray(value, dtype=np.int64))

    def dims_product(first: int, stop: int):
        """prod(spatial[first:stop]) as an int when static, else as a one-element i64 tensor."""
        dims = spatial[first:stop]
        if all(d is not None for d in dims):
            return math.prod(dims)
        if (first, stop) not in products:
            if not shape_of:
                shape_of.append(builder.add("ShapeOf", "opset3", [x.ref], attrs={"output_type": "i64"},
                                            name=f"{name}/shape")[0])
            picked = builder.add("Gather", "opset8", [shape_of[0], const(list(range(2 + first, 2 + stop))),
                                                      const(0)], name=f"{name}/dims{first}_{stop}")[0]
            products[(first, stop)] = builder.add("ReduceProd", "opset1", [picked, const([0])],
                                                  attrs={"keep_dims": True}, name=f"{name}/prod{first}_{stop}")[0]
        return products[(first, stop)]

    def operand(value):
        return const(value) if isinstance(value, int) else value

    def binary(kind: str, left, right, suffix: str):
        return builder.add(kind, "opset1", [left, operand(right)], attrs={"auto_broadcast": "numpy"},
                           name=f"{name}/{suffix}")[0]

    rank = len(spatial)
    offset = binary("FloorMod", indices, dims_product(0, rank), "spatial_offset")
    result = binary("Subtract", indices, offset, "base")
    for axis in range(rank):
        row_stride, col_stride = dims_product(axis + 1, rank), dims_product(0, axis)
        coordinate = offset
        if row_stride != 1:
            coordinate = binary("Divide", coordinate, row_stride, f"row{axis}")
        if axis > 0:
            coordinate = binary("FloorMod", coordinate, dims_product(axis, axis + 1), f"coord{axis}")
        if col_stride != 1:
            coordinate = binary("Multiply", coordinate, col_stride, f"col{axis}")
        last = axis == rank - 1
        result = builder.add("Add", "opset1", [result, coordinate], attrs={"auto_broadcast": "numpy"},
                             name=name if last else f"{name}/sum{axis}")[0]
    return result
