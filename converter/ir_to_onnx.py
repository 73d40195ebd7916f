"""IR -> ONNX: an ONNX model whose meaning *as the ONNX specs define it* equals OpenVINO's result for the IR.

OpenVINO's pooling facts this relies on are measured and listed in converter/onnx_to_ir.py's docstring
(the same facts, read in the other direction); ir.infer.pool_windows_of gives OpenVINO's windows.

Pooling layers map to one ONNX node when its meaning is the same, to an exact rewrite otherwise, or
are refused with ConversionError naming the layer and the reason:
- rounding: OpenVINO's window count N per axis is matched by ceil_mode=0 (N = floor count), by
  ceil_mode=1 (N = ceil_torch count, opset >= 10), or, where only the padding values are inert (MaxPool,
  exclude-pad AvgPool, an Lp sum), by another pads_end chosen so that floor (or ceil_mode=1) gives N; among
  these, the first whose pads are all < kernel (onnxruntime refuses larger pads, the spec does not);
- AvgPool exclude-pad=false divides by prod(k) when any pad is non-zero: count_include_pad=1 when no
  window reaches past the padded input, else an explicit zero Pad that puts every window inside
  (count_include_pad=0 then divides by prod(k) too); with all pads zero it divides by the real taps:
  count_include_pad=0;
- a MaxPool window without any input element outputs OpenVINO's floor value (f32: its lowest finite
  value): an explicit Pad of that value, then a MaxPool without pads, reproduces it; with the indices
  used it is refused (the Pad would shift them), and so is an exclude-pad AvgPool window without an
  input element (0/0);
- MaxPool-8 `axis` > 0 becomes a Mod of ONNX's flat indices; index_element_type i32 a Cast.
OpenVINO's own LpPool decomposition (Abs -> Power p -> AvgPool -> Multiply prod(k) -> Power 1/p
[-> ConvertLike]) folds back into one LpPool node when it matches exactly and OpenVINO's AvgPool divides
by prod(k) in every window; Reduce{Mean,Max,L1,L2} over all spatial axes with keep_dims becomes the
Global pool. Every other layer maps to the ONNX op of the same meaning.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from poolir.ir.element_types import dtype_of
from poolir.ir.errors import ConversionError, InvalidModelError, PoolirError, UnsupportedError, UsageError, layer_label
from poolir.ir.geometry import AxisWindow, effective_kernel, output_length
from poolir.ir.infer import Inference, TensorInfo, infer_model, pool_windows_of
from poolir.ir.model import Layer, Model
from poolir.runtime.ir_ops import openvino_max_floor

MIN_OPSET, MAX_OPSET = 7, 22
NEWEST_WRITTEN_OPSET = MAX_OPSET
ONNX_IR_VERSION = 10  # every opset up to 22 is valid in ONNX IR version 10, which onnxruntime reads

ONNX_ELEMENT_TYPES: dict[str, int] = {
    "f32": TensorProto.FLOAT, "f16": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16,
    "f64": TensorProto.DOUBLE, "i8": TensorProto.INT8, "u8": TensorProto.UINT8, "i32": TensorProto.INT32,
    "i64": TensorProto.INT64, "boolean": TensorProto.BOOL,
}

# Element types of ONNX's pooling ops: (types, first opset). MaxPool takes int8/uint8 from 12, all take
# bfloat16 from 22.
_POOL_TYPES = ((("f16", "f32", "f64"), 1), (("bf16",), 22))
_MAX_POOL_TYPES = (*_POOL_TYPES, (("i8", "u8"), 12))


def ir_to_onnx(model: Model, opset: int = MAX_OPSET) -> onnx.ModelProto:
    """Convert an IR model to ONNX with the same meaning; raises ConversionError naming the layer."""
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise UsageError(f"opset {opset} is not supported (supported: {MIN_OPSET}..{MAX_OPSET})")
    inference = infer_model(model)
    context = _Context(model, inference, opset)
    for layer in inference.order:
        if layer.id in context.folded:
            continue
        convert = _CONVERTERS.get(layer.type)
        try:
            if convert is None:
                raise UnsupportedError(f"layer type {layer.type} has no ONNX conversion "
                                       f"(supported: {', '.join(sorted(_CONVERTERS))})")
            convert(context, layer)
        except PoolirError as error:
            raise error.located(file=model.source, where=layer_label(layer.name, layer.id, layer.type)) from None
    # Inputs and outputs in the order of the model's Parameter and Result layers, as the IR lists them.
    position = {layer.id: index for index, layer in enumerate(model.layers)}
    inputs = [info for _, info in sorted(context.graph_inputs, key=lambda item: position[item[0]])]
    outputs = [info for _, info in sorted(context.graph_outputs, key=lambda item: position[item[0]])]
    # Constants that only a folded pattern read (an LpPool's p, prod(k), 1/p) are dropped.
    read = {name for node in context.nodes for name in node.input} | {info.name for info in outputs}
    initializers = [tensor for tensor in context.initializers if tensor.name in read]
    graph = helper.make_graph(context.nodes, model.name or "model", inputs, outputs, initializer=initializers)
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                                   ir_version=ONNX_IR_VERSION, producer_name="poolir")
    return onnx_model


# ---------------------------------------------------------------------------------------------------
# The graph being written


@dataclass
class _Context:
    model: Model
    inference: Inference
    opset: int
    nodes: list = field(default_factory=list)
    initializers: list = field(default_factory=list)
    graph_inputs: list = field(default_factory=list)  # (Parameter layer id, ValueInfoProto)
    graph_outputs: list = field(default_factory=list)  # (Result layer id, ValueInfoProto)
    tensors: dict[tuple[int, int], str] = field(default_factory=dict)  # IR output port -> ONNX tensor
    used: set[str] = field(default_factory=set)  # ONNX names taken
    reserved: set[str] = field(default_factory=set)  # IR tensor names, kept for their own tensors
    folded: set[int] = field(default_factory=set)  # layers already written as part of a fused node
    producers: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)
    consumers: dict[tuple[int, int], list[tuple[int, int]]] = field(default_factory=dict)
    by_id: dict[int, Layer] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_id = {layer.id: layer for layer in self.model.layers}
        for edge in self.model.edges:
            self.producers[(edge.to_layer, edge.to_port)] = (edge.from_layer, edge.from_port)
            self.consumers.setdefault((edge.from_layer, edge.from_port), []).append((edge.to_layer, edge.to_port))
        # Reserve every IR tensor name (inputs, outputs, named ports), so no generated name takes one.
        for layer in self.model.layers:
            self.reserved.update(name for port in layer.outputs for name in port.names)
            if layer.type in ("Parameter", "Result"):
                self.reserved.add(layer.name)

    # -- names --------------------------------------------------------------------------------------

    def fresh(self, base: str) -> str:
        """A new ONNX name from `base`, avoiding taken and reserved names."""
        name, suffix = base, 1
        while name in self.used or name in self.reserved:
            name, suffix = f"{base}_{suffix}", suffix + 1
        self.used.add(name)
        return name

    def claim(self, name: str) -> str:
        """An IR tensor name for its own tensor; a fresh variant if it is taken already."""
        if name in self.used:
            return self.fresh(name)
        self.used.add(name)
        return name

    def input(self, layer: Layer, index: int) -> str:
        """The ONNX tensor feeding input `index` of `layer`."""
        return self.tensors[self.producers[(layer.id, layer.inputs[index].id)]]

    def input_info(self, layer: Layer, index: int) -> TensorInfo:
        return self.inference.inputs[(layer.id, layer.inputs[index].id)]

    def input_layer(self, layer: Layer, index: int) -> Layer:
        return self.by_id[self.producers[(layer.id, layer.inputs[index].id)][0]]

    def output_info(self, layer: Layer, index: int) -> TensorInfo:
        return self.inference.outputs[(layer.id, layer.outputs[index].id)]

    def is_used(self, layer: Layer, index: int) -> bool:
        return bool(self.consumers.get((layer.id, layer.outputs[index].id)))

    def single_consumer(self, layer: Layer) -> Layer | None:
        """The one layer reading `layer`'s only output, or None when there are several or none."""
        if len(layer.outputs) != 1:
            return None
        readers = self.consumers.get((layer.id, layer.outputs[0].id), [])
        return self.by_id[readers[0][0]] if len(readers) == 1 else None

    def constant(self, layer: Layer, index: int) -> np.ndarray | None:
        """The value of input `index` when inference knows it (a Const or folded shape arithmetic)."""
        return self.input_info(layer, index).value

    def name_output(self, layer: Layer, index: int) -> str:
        """A fresh ONNX tensor name for output `index` of `layer` (its IR tensor name when it has one)."""
        port = layer.outputs[index]
        tensor_name = _port_name(port)
        name = self.claim(tensor_name) if tensor_name else \
            self.fresh(layer.name if len(layer.outputs) == 1 else f"{layer.name}:{index}")
        self.tensors[(layer.id, port.id)] = name
        return name

    # -- nodes --------------------------------------------------------------------------------------

    def node(self, op_type: str, inputs: list[str], base: str, outputs: int = 1, **attrs) -> list[str]:
        names = [self.fresh(base if outputs == 1 else f"{base}:{i}") for i in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, names, name=self.fresh(f"{base}/{op_type}"), **attrs))
        return names

    def node_into(self, op_type: str, inputs: list[str], outputs: list[str], base: str, **attrs) -> None:
        self.nodes.append(helper.make_node(op_type, inputs, outputs, name=self.fresh(f"{base}/{op_type}"), **attrs))

    def initializer(self, array: np.ndarray, base: str) -> str:
        name = self.fresh(base)
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def int64s(self, values, base: str) -> str:
        return self.initializer(np.asarray(values, dtype=np.int64), base)


def _port_name(port) -> str | None:
    return port.names[0] if port.names else None


def _onnx_type(element_type: str) -> int:
    try:
        return ONNX_ELEMENT_TYPES[element_type]
    except KeyError:
        raise UnsupportedError(f"element type {element_type} has no ONNX equivalent here "
                               f"(supported: {', '.join(ONNX_ELEMENT_TYPES)})") from None


def _value_info(name: str, info: TensorInfo, dim_prefix: str | None = None):
    dims = []
    for axis, dim in enumerate(info.shape):
        if dim.is_static:
            dims.append(dim.min)
        else:
            dims.append(f"{dim_prefix}_{axis}" if dim_prefix else None)
    return helper.make_tensor_value_info(name, _onnx_type(info.element_type), dims)


# ---------------------------------------------------------------------------------------------------
# Graph boundary and constants


def _parameter(context: _Context, layer: Layer) -> None:
    name = context.claim(_port_name(layer.outputs[0]) or layer.name)
    context.tensors[(layer.id, layer.outputs[0].id)] = name
    context.graph_inputs.append((layer.id, _value_info(name, context.output_info(layer, 0), dim_prefix=name)))


def _const(context: _Context, layer: Layer) -> None:
    name = context.name_output(layer, 0)
    data = layer.data if layer.data is not None else np.zeros(0)
    context.initializers.append(numpy_helper.from_array(np.asarray(data), name))


def _result(context: _Context, layer: Layer) -> None:
    producer = context.producers[(layer.id, layer.inputs[0].id)]
    source_port = context.by_id[producer[0]].port(producer[1])
    wanted = _port_name(source_port) or layer.name
    tensor = context.tensors[producer]
    outputs = {output.name for _, output in context.graph_outputs}
    if wanted == tensor and wanted not in outputs:
        name = tensor
    else:
        # Another name than the tensor's (a Result named apart, or a second Result of one tensor).
        name = context.claim(wanted if wanted not in outputs else layer.name)
        context.node_into("Identity", [tensor], [name], layer.name)
    context.graph_outputs.append((layer.id, _value_info(name, context.input_info(layer, 0))))


# ---------------------------------------------------------------------------------------------------
# Pooling


@dataclass(frozen=True, slots=True)
class _OnnxWindows:
    """ONNX pooling attributes reproducing OpenVINO's windows, plus an explicit zero Pad when needed."""

    pads_begin: tuple[int, ...]
    pads_end: tuple[int, ...]
    ceil_mode: int
    auto_pad: str = "NOTSET"
    count_include_pad: int = 0
    pre_pad_end: tuple[int, ...] | None = None  # Pad(begin = pads_begin, end = this), then no pool pads


def _pool_geometry(context: _Context, layer: Layer, *, inert_padding: bool, full_kernel_divisor: bool,
                   ceil_since: int = 10, fill_empty_windows: bool = False) -> _OnnxWindows:
    """ONNX windows for an AvgPool/MaxPool layer, by the rules in the module docstring.

    inert_padding: only the number of windows depends on the pads (MaxPool, exclude-pad AvgPool, and
    an Lp sum). full_kernel_divisor: the layer is an exclude-pad=false AvgPool (divides by prod(k) when
    a pad is non-zero). ceil_since: the op's first opset with ceil_mode (LpPool: 18).
    fill_empty_windows: a window wholly in the padding may be made exact with an explicit Pad of the
    value OpenVINO outputs there (MaxPool without indices); otherwise such a window is refused.
    """
    ceil_allowed = context.opset >= ceil_since
    attrs = layer.attrs
    shape = context.input_info(layer, 0).shape
    spatial = [dim.value for dim in shape[2:]]
    rank = len(spatial)
    kernel, strides = attrs["kernel"], attrs["strides"]
    dilations = attrs.get("dilations") or (1,) * rank
    rounding = attrs["rounding_type"]
    auto_pad = attrs["auto_pad"]  # the schema allows explicit, same_upper, same_lower, valid
    effective = [effective_kernel(k, d) for k, d in zip(kernel, dilations)]
    if all(length is not None for length in spatial):
        try:
            windows = pool_windows_of(layer, spatial)
        except UsageError as error:
            raise InvalidModelError(error.problem) from None
        return _static_geometry(windows, inert_padding, full_kernel_divisor, ceil_allowed, fill_empty_windows)
    # Dynamic spatial dims: the geometry must be right for every length.
    if auto_pad in ("same_upper", "same_lower"):
        # OpenVINO resolves SAME pads, then rounds (ir/infer.py rule 2); ceil can add a window only where
        # the pads are clamped at zero, impossible when every dilated kernel >= its stride.
        if rounding != "floor" and any(e < s for e, s in zip(effective, strides)):
            raise ConversionError("auto_pad same_* with rounding_type ceil, a kernel smaller than its stride and "
                                  "dynamic spatial dims: the window count differs from ONNX SAME for some lengths")
        # SAME windows lie inside the padded input: both divisors are prod(k) (fact 4 in onnx_to_ir).
        return _OnnxWindows((0,) * rank, (0,) * rank, 0, auto_pad.upper(), count_include_pad=int(full_kernel_divisor))
    pads_begin = (0,) * rank if auto_pad == "valid" else tuple(attrs["pads_begin"])
    pads_end = (0,) * rank if auto_pad == "valid" else tuple(attrs["pads_end"])
    padded = any(pads_begin) or any(pads_end)
    include = int(full_kernel_divisor and padded)
    if rounding == "floor":
        return _OnnxWindows(pads_begin, pads_end, 0, count_include_pad=include)
    if not ceil_allowed:
        raise ConversionError(f"rounding_type={rounding} with dynamic spatial dims needs ceil_mode, which this "
                              f"ONNX op has from opset {ceil_since} (requested opset {context.opset})")
    if include and any(s > 1 for s in strides):
        raise ConversionError("exclude-pad=false with pads, ceil rounding and dynamic spatial dims: a window can "
                              "reach past the padded input, where OpenVINO divides by the whole kernel and ONNX "
                              "by the taps inside; the exact rewrite needs static dims")
    if rounding == "ceil" and any(pe > e - s for pe, e, s in zip(pads_end, effective, strides)):
        raise ConversionError("rounding_type=ceil with dynamic spatial dims: for some lengths OpenVINO keeps a last "
                              "window that starts in the right padding, which ONNX ceil_mode drops")
    return _OnnxWindows(pads_begin, pads_end, 1, count_include_pad=include)


def _static_geometry(windows: tuple[AxisWindow, ...], inert_padding: bool, full_kernel_divisor: bool,
                     ceil_allowed: bool, fill_empty_windows: bool) -> _OnnxWindows:
    begins = tuple(w.pad_begin for w in windows)
    ends = tuple(w.pad_end for w in windows)
    padded = any(begins) or any(ends)
    empty_windows = any(not w.real_taps().all() for w in windows)
    if fill_empty_windows and empty_windows:
        # Pad explicitly as far as the windows reach, with the value OpenVINO outputs for a window nothing
        # beats; then every window is a whole ONNX window, and one of padding gives exactly that value.
        reach = tuple(max(0, w.end_reach) for w in windows)
        return _OnnxWindows(begins, reach, 0, pre_pad_end=reach)
    if (inert_padding or full_kernel_divisor and not padded) and empty_windows:
        raise ConversionError("a window holds no input element, only padding: OpenVINO gives the lowest value "
                              "(MaxPool) or 0/0 (AvgPool) there, which no ONNX pooling node reproduces")
    if full_kernel_divisor and padded:
        overhang = any(w.end_reach > w.pad_end for w in windows)
        if overhang:
            # OpenVINO divides by prod(k) even past the padded input: pad with zeros so far that every
            # window lies inside, then every ONNX divisor is prod(k) too.
            reach = tuple(w.end_reach for w in windows)
            return _OnnxWindows(begins, ends, 0, pre_pad_end=reach)
        # No window leaves the padded input, so ONNX counts prod(k) too; floor gives OpenVINO's count once
        # pads_end is trimmed to what the windows reach (a pad_end >= the kernel lets floor keep a window wholly
        # in the right padding that ceil_torch drops: L=1, k=1, pads (0, 1), ceil_torch -> 1 window, floor 2).
        reach = tuple(max(0, w.end_reach) for w in windows)
        return _OnnxWindows(begins, reach, 0, count_include_pad=1)
    # The padding is inert from here on (include-pad layers with pads returned above; without pads
    # OpenVINO's exclude-pad=false divides by the real taps, like count_include_pad=0).
    floors = [output_length(w.length, w.kernel, w.stride, w.dilation, w.pad_begin, w.pad_end, "floor")
              for w in windows]
    torches = [output_length(w.length, w.kernel, w.stride, w.dilation, w.pad_begin, w.pad_end, "ceil_torch")
               for w in windows]
    # The smallest pads_end giving OpenVINO's count with floor (never more than the layer's own when
    # floor already matches): inert padding only decides the count.
    trimmed = tuple(max(0, w.end_reach)
                    for w in windows)
    candidates = []
    if all(w.output == f for w, f in zip(windows, floors)):
        candidates.append(_OnnxWindows(begins, ends, 0))
    if ceil_allowed and all(w.output == t for w, t in zip(windows, torches)):
        candidates.append(_OnnxWindows(begins, ends, 1))
    candidates.append(_OnnxWindows(begins, trimmed, 0))
    # ... and the smallest pads_end giving it with ceil_mode=1, when every axis has one.
    # The ceil_torch count never falls as pads_end grows, so a binary search finds the smallest (scanning
    # every pads_end up to the layer's own hung on pads_end = 1999999999).
    smallest = []
    for w in windows:
        def torch_count(end: int, w: AxisWindow = w) -> int:
            return output_length(w.length, w.kernel, w.stride, w.dilation, w.pad_begin, end, "ceil_torch")

        low, high = 0, max(w.pad_end, trimmed[len(smallest)])
        while low < high:
            middle = (low + high) // 2
            low, high = (low, middle) if torch_count(middle) >= w.output else (middle + 1, high)
        smallest.append(low if torch_count(low) == w.output else None)
    if ceil_allowed and None not in smallest:
        candidates.append(_OnnxWindows(begins, tuple(smallest), 1))
    # onnxruntime refuses pads >= kernel ("Pad should be smaller than kernel"), which the spec allows:
    # prefer a candidate it runs.
    kernels = [w.kernel for w in windows]
    for candidate in candidates:
        if all(b < k and e < k for b, e, k in zip(candidate.pads_begin, candidate.pads_end, kernels)):
            return candidate
    return candidates[0]


def _pool_attributes(context: _Context, layer: Layer, geometry: _OnnxWindows, what: str,
                     dilation_since: int) -> dict:
    attrs = layer.attrs
    rank = len(attrs["kernel"])
    dilations = tuple(attrs.get("dilations") or (1,) * rank)
    onnx_attrs: dict = {"kernel_shape": list(attrs["kernel"]), "strides": list(attrs["strides"])}
    if geometry.auto_pad != "NOTSET":
        onnx_attrs["auto_pad"] = geometry.auto_pad
    elif geometry.pre_pad_end is None and (any(geometry.pads_begin) or any(geometry.pads_end)):
        onnx_attrs["pads"] = [*geometry.pads_begin, *geometry.pads_end]
    if geometry.ceil_mode:
        if context.opset < 10:
            raise ConversionError(f"OpenVINO's window count needs ceil_mode, which {what} has from opset 10 "
                                  f"(requested opset {context.opset})")
        onnx_attrs["ceil_mode"] = 1
    if any(d != 1 for d in dilations):
        if context.opset < dilation_since:
            raise ConversionError(f"dilations {list(dilations)}: {what} has dilations from opset {dilation_since} "
                                  f"(requested opset {context.opset})")
        onnx_attrs["dilations"] = list(dilations)
    return onnx_attrs


def _check_pool_type(context: _Context, element_type: str, what: str) -> None:
    for types, since in _MAX_POOL_TYPES if what == "MaxPool" else _POOL_TYPES:
        if element_type in types:
            if context.opset < since:
                raise ConversionError(f"element type {element_type}: {what} accepts it from opset {since} "
                                      f"(requested opset {context.opset})")
            return
    raise ConversionError(f"element type {element_type}: ONNX {what} does not accept it")


def _pre_pad(context: _Context, source: str, geometry: _OnnxWindows, element_type: str, base: str,
             value: float = 0) -> str:
    if geometry.pre_pad_end is None:
        return source
    pads = [0, 0, *geometry.pads_begin, 0, 0, *geometry.pre_pad_end]
    return _pad_node(context, source, pads, "constant", np.asarray(value, dtype_of(element_type)), base)


def _pad_node(context: _Context, source: str, pads: list[int], mode: str, value: np.ndarray | None, base: str,
              output: str | None = None) -> str:
    output = output or context.fresh(f"{base}/padded")
    if context.opset >= 11:
        inputs = [source, context.int64s(pads, f"{base}/pads")]
        if value is not None:
            inputs.append(context.initializer(np.asarray(value).reshape(()), f"{base}/value"))
        context.node_into("Pad", inputs, [output], base, mode=mode)
    else:
        extra = {"value": float(value)} if value is not None else {}
        context.node_into("Pad", [source], [output], base, mode=mode, pads=pads, **extra)
    return output


def _max_pool(context: _Context, layer: Layer) -> None:
    info = context.input_info(layer, 0)
    _check_pool_type(context, info.element_type, "MaxPool")
    want_indices = len(layer.outputs) > 1 and context.is_used(layer, 1)
    # A window wholly in the padding outputs OpenVINO's floor value (runtime/ir_ops.py, rule M1): a Pad
    # of that value reproduces it, but would shift the indices, so only without them.
    geometry = _pool_geometry(context, layer, inert_padding=True, full_kernel_divisor=False,
                              fill_empty_windows=not want_indices)
    attrs = _pool_attributes(context, layer, geometry, "MaxPool", dilation_since=10)
    values = context.name_output(layer, 0)
    if not want_indices:
        floor = openvino_max_floor(dtype_of(info.element_type))
        source = _pre_pad(context, context.input(layer, 0), geometry, info.element_type, layer.name, floor)
        context.node_into("MaxPool", [source], [values], layer.name, **attrs)
        return
    if context.opset < 8:
        raise ConversionError(f"the Indices output needs MaxPool-8 (requested opset {context.opset})")
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
        if context.opset < 10:
            raise ConversionError(f"MaxPool axis={layer.attrs['axis']} needs Mod, from opset 10 "
                                  f"(requested opset {context.opset})")
        modulus = context.int64s(math.prod(dim.min for dim in trailing), f"{layer.name}/index_modulus")
        target = final if index_type == "i64" else context.fresh(f"{layer.name}/indices_i64")
        context.node_into("Mod", [indices, modulus], [target], layer.name, fmod=0)
        indices = target
    if index_type != "i64":
        context.node_into("Cast", [indices], [final], layer.name, to=_onnx_type(index_type))


def _avg_pool(context: _Context, layer: Layer) -> None:
    info = context.input_info(layer, 0)
    _check_pool_type(context, info.element_type, "AveragePool")
    exclude = layer.attrs["exclude-pad"]
    geometry = _pool_geometry(context, layer, inert_padding=exclude, full_kernel_divisor=not exclude)
    attrs = _pool_attributes(context, layer, geometry, "AveragePool", dilation_since=19)
    if geometry.count_include_pad:
        if context.opset < 7:
            raise ConversionError(f"count_include_pad needs AveragePool-7 (requested opset {context.opset})")
        attrs["count_include_pad"] = 1
    source = _pre_pad(context, context.input(layer, 0), geometry, info.element_type, layer.name)
    context.node_into("AveragePool", [source], [context.name_output(layer, 0)], layer.name, **attrs)


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


def _match_lp_pool(context: _Context, abs_layer: Layer) -> _LpPattern | None:
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


def _lp_divisor_is_kernel(context: _Context, pool: Layer) -> bool:
    """Does OpenVINO's AvgPool divide by prod(k) in every window (so that * prod(k) gives the sum)?"""
    attrs = pool.attrs
    spatial = [dim.value for dim in context.input_info(pool, 0).shape[2:]]
    if any(length is None for length in spatial):
        explicit = attrs["auto_pad"] in ("explicit", "notset")
        return not attrs["exclude-pad"] and explicit and (any(attrs["pads_begin"]) or any(attrs["pads_end"]))
    windows = pool_windows_of(pool, spatial)
    if not attrs["exclude-pad"] and any(w.pad_begin or w.pad_end for w in windows):
        return True
    return all((w.real_taps() == w.kernel).all() for w in windows)


def _abs(context: _Context, layer: Layer) -> None:
    pattern = _match_lp_pool(context, layer)
    if pattern is not None:
        try:
            folded = _lp_pool(context, pattern, layer)
        except ConversionError:
            folded = False  # the layers are converted one by one below, which is exact too
        if folded:
            return
    context.node_into("Abs", [context.input(layer, 0)], [context.name_output(layer, 0)], layer.name)


def _lp_pool(context: _Context, pattern: _LpPattern, abs_layer: Layer) -> bool:
    pool = pattern.pool
    if not _lp_divisor_is_kernel(context, pool):
        return False
    _check_pool_type(context, context.input_info(abs_layer, 0).element_type, "LpPool")
    geometry = _pool_geometry(context, pool, inert_padding=True, full_kernel_divisor=False, ceil_since=18)
    if geometry.pre_pad_end is not None:
        return False
    attrs = _pool_attributes(context, pool, geometry, "LpPool", dilation_since=18)
    last = pattern.layers[-1]
    context.node_into("LpPool", [context.input(abs_layer, 0)], [context.name_output(last, 0)], pool.name,
                      p=pattern.p, **attrs)
    context.folded.update(layer.id for layer in pattern.layers[1:])
    return True


# ---------------------------------------------------------------------------------------------------
# Reductions: Global pools when they are one


_GLOBAL_POOLS = {"ReduceMean": ("GlobalAveragePool", {}), "ReduceMax": ("GlobalMaxPool", {}),
                 "ReduceL1": ("GlobalLpPool", {"p": 1}), "ReduceL2": ("GlobalLpPool", {"p": 2})}
_REDUCE_OPS = {"ReduceMean": "ReduceMean", "ReduceMax": "ReduceMax", "ReduceMin": "ReduceMin",
               "ReduceSum": "ReduceSum", "ReduceProd": "ReduceProd", "ReduceL1": "ReduceL1", "ReduceL2": "ReduceL2"}


def _reduce(context: _Context, layer: Layer) -> None:
    info = context.input_info(layer, 0)
    rank = len(info.shape)
    axes_value = context.constant(layer, 1)
    if axes_value is None:
        raise ConversionError("the reduction axes are not constant")
    axes = sorted({int(a) + rank if int(a) < 0 else int(a) for a in np.ravel(axes_value)})
    keep = bool(layer.attrs["keep_dims"])
    output = context.name_output(layer, 0)
    source = context.input(layer, 0)
    if not axes:  # OpenVINO reduces nothing; ONNX would reduce everything
        context.node_into("Identity", [source], [output], layer.name)
        return
    if keep and rank >= 3 and axes == list(range(2, rank)) and layer.type in _GLOBAL_POOLS:
        op_type, attrs = _GLOBAL_POOLS[layer.type]
        context.node_into(op_type, [source], [output], layer.name, **attrs)
        return
    op_type = _REDUCE_OPS[layer.type]
    axes_as_input = context.opset >= 18 or (op_type == "ReduceSum" and context.opset >= 13)
    if axes_as_input:
        context.node_into(op_type, [source, context.int64s(axes, f"{layer.name}/axes")], [output], layer.name,
                          keepdims=int(keep))
    else:
        context.node_into(op_type, [source], [output], layer.name, axes=axes, keepdims=int(keep))


# ---------------------------------------------------------------------------------------------------
# Element-wise and shape layers


def _unary(op_type: str) -> Callable[[_Context, Layer], None]:
    def convert(context: _Context, layer: Layer) -> None:
        context.node_into(op_type, [context.input(layer, 0)], [context.name_output(layer, 0)], layer.name)
    return convert


def _binary(op_type: str) -> Callable[[_Context, Layer], None]:
    # auto_broadcast numpy is ONNX's multidirectional broadcasting; "none" needs equal shapes, a special case.
    def convert(context: _Context, layer: Layer) -> None:
        context.node_into(op_type, [context.input(layer, 0), context.input(layer, 1)], [context.name_output(layer, 0)],
                          layer.name)
    return convert


def _is_integer(element_type: str) -> bool:
    return np.issubdtype(dtype_of(element_type), np.integer)


def _divide(context: _Context, layer: Layer) -> None:
    a, b = context.input(layer, 0), context.input(layer, 1)
    output = context.name_output(layer, 0)
    if _is_integer(context.input_info(layer, 0).element_type) and layer.attrs.get("m_pythondiv", True):
        # m_pythondiv=true floors an integer quotient (OpenVINO's spec and its reference implementation,
        # which constant folding uses; see runtime/ir_executor.py for the CPU plugin's deviation), ONNX
        # Div truncates: floor(a / b) = (a - mod(a, b)) / b with Mod's fmod=0 taking the divisor's sign.
        if context.opset < 10:
            raise ConversionError(f"integer floor division needs Mod, from opset 10 (requested opset {context.opset})")
        remainder = context.node("Mod", [a, b], f"{layer.name}/remainder", fmod=0)[0]
        exact = context.node("Sub", [a, remainder], f"{layer.name}/multiple")[0]
        context.node_into("Div", [exact, b], [output], layer.name)
        return
    context.node_into("Div", [a, b], [output], layer.name)


def _floor_mod(context: _Context, layer: Layer) -> None:
    a, b = context.input(layer, 0), context.input(layer, 1)
    output = context.name_output(layer, 0)
    if _is_integer(context.input_info(layer, 0).element_type):
        if context.opset < 10:
            raise ConversionError(f"FloorMod needs Mod, from opset 10 (requested opset {context.opset})")
        context.node_into("Mod", [a, b], [output], layer.name, fmod=0)  # the divisor's sign, like FloorMod
        return
    quotient = context.node("Div", [a, b], f"{layer.name}/quotient")[0]
    floored = context.node("Floor", [quotient], f"{layer.name}/floor")[0]
    product = context.node("Mul", [floored, b], f"{layer.name}/product")[0]
    context.node_into("Sub", [a, product], [output], layer.name)


def _convert(context: _Context, layer: Layer, target: str | None = None) -> None:
    source_type = context.input_info(layer, 0).element_type
    target = target or layer.attrs["destination_type"]
    output = context.name_output(layer, 0)
    if target == source_type:
        context.node_into("Identity", [context.input(layer, 0)], [output], layer.name)
        return
    if not _is_integer(source_type) and _is_integer(target):
        raise ConversionError(f"conversion {source_type} -> {target}: OpenVINO's float-to-integer rounding is not "
                              "pinned against ONNX Cast's")
    context.node_into("Cast", [context.input(layer, 0)], [output], layer.name, to=_onnx_type(target))


def _convert_like(context: _Context, layer: Layer) -> None:
    _convert(context, layer, context.input_info(layer, 1).element_type)


def _reshape(context: _Context, layer: Layer) -> None:
    target = context.constant(layer, 1)
    output = context.name_output(layer, 0)
    shape = context.int64s(np.ravel(target), f"{layer.name}/shape") if target is not None else \
        _as_int64(context, context.input(layer, 1), context.input_info(layer, 1), layer.name)
    extra = {}
    if not layer.attrs["special_zero"] and (target is None or 0 in np.ravel(target)):
        # OpenVINO special_zero=false takes a 0 literally; ONNX needs allowzero=1 for that.
        if context.opset < 14:
            raise ConversionError("Reshape with special_zero=false and a 0 (or unknown) target dim needs allowzero, "
                                  f"from opset 14 (requested opset {context.opset})")
        extra["allowzero"] = 1
    context.node_into("Reshape", [context.input(layer, 0), shape], [output], layer.name, **extra)


def _as_int64(context: _Context, tensor: str, info: TensorInfo, base: str) -> str:
    if info.element_type == "i64":
        return tensor
    return context.node("Cast", [tensor], f"{base}/i64", to=TensorProto.INT64)[0]


def _axes_input(context: _Context, layer: Layer, index: int, what: str) -> list[int]:
    value = context.constant(layer, index)
    if value is None:
        raise ConversionError(f"the {what} are not constant")
    return [int(v) for v in np.ravel(value)]


def _concat(context: _Context, layer: Layer) -> None:
    rank = len(context.output_info(layer, 0).shape)
    axis = layer.attrs["axis"]
    inputs = [context.input(layer, i) for i in range(len(layer.inputs))]
    context.node_into("Concat", inputs, [context.name_output(layer, 0)], layer.name,
                      axis=axis + rank if axis < 0 else axis)


def _split(context: _Context, layer: Layer) -> None:
    rank = len(context.input_info(layer, 0).shape)
    (axis,) = _axes_input(context, layer, 1, "split axis")
    axis = axis + rank if axis < 0 else axis
    outputs = [context.name_output(layer, i) for i in range(len(layer.outputs))]
    lengths = [context.output_info(layer, i).shape[axis].value for i in range(len(layer.outputs))]
    inputs = [context.input(layer, 0)]
    attrs: dict = {"axis": axis}
    if layer.type == "VariadicSplit":
        if any(length is None for length in lengths):
            raise ConversionError("VariadicSplit lengths must be known")
        if context.opset >= 13:
            inputs.append(context.int64s(lengths, f"{layer.name}/split"))
        else:
            attrs["split"] = lengths
    elif context.opset >= 18:
        attrs["num_outputs"] = len(outputs)
    context.node_into("Split", inputs, outputs, layer.name, **attrs)


def _transpose(context: _Context, layer: Layer) -> None:
    order = _axes_input(context, layer, 1, "transpose order")
    attrs = {"perm": order} if order else {}
    context.node_into("Transpose", [context.input(layer, 0)], [context.name_output(layer, 0)], layer.name, **attrs)


def _squeeze_like(op_type: str) -> Callable[[_Context, Layer], None]:
    def convert(context: _Context, layer: Layer) -> None:
        inputs = [context.input(layer, 0)]
        attrs = {}
        if len(layer.inputs) > 1:
            axes = _axes_input(context, layer, 1, "axes")
            if context.opset >= 13:
                inputs.append(context.int64s(axes, f"{layer.name}/axes"))
            else:
                attrs["axes"] = axes
        context.node_into(op_type, inputs, [context.name_output(layer, 0)], layer.name, **attrs)
    return convert


def _pad(context: _Context, layer: Layer) -> None:
    mode = layer.attrs["pad_mode"]
    if mode == "symmetric":
        raise ConversionError("pad_mode symmetric has no ONNX Pad mode")
    begin = _axes_input(context, layer, 1, "pads_begin")
    end = _axes_input(context, layer, 2, "pads_end")
    value = None
    if mode == "constant":
        value = context.constant(layer, 3) if len(layer.inputs) > 3 else \
            np.zeros((), dtype_of(context.input_info(layer, 0).element_type))
        if value is None:
            raise ConversionError("the pad value is not constant")
    if context.opset < 11 and min(begin + end) < 0:
        raise ConversionError(f"negative pads need ONNX Pad-11 (requested opset {context.opset})")
    _pad_node(context, context.input(layer, 0), begin + end, mode, value, layer.name, context.name_output(layer, 0))


def _shape_of(context: _Context, layer: Layer) -> None:
    output = context.name_output(layer, 0)
    output_type = layer.attrs.get("output_type", "i64")
    shape = output if output_type == "i64" else context.fresh(f"{layer.name}/i64")
    context.node_into("Shape", [context.input(layer, 0)], [shape], layer.name)
    if output_type != "i64":
        context.node_into("Cast", [shape], [output], layer.name, to=_onnx_type(output_type))


def _gather(context: _Context, layer: Layer) -> None:
    rank = len(context.input_info(layer, 0).shape)
    (axis,) = _axes_input(context, layer, 2, "gather axis")
    if layer.attrs.get("batch_dims", 0) != 0:
        raise ConversionError(f"batch_dims={layer.attrs['batch_dims']}: ONNX Gather has no batch dims")
    if layer.opset < 8:
        # Gather-1 and Gather-7 leave negative indices undefined; ONNX counts them from the end.
        indices = context.constant(layer, 1)
        if indices is None or np.any(indices < 0):
            raise ConversionError(f"{layer.type}-{layer.opset} indices must be constant and non-negative "
                                  "(negative ones are undefined there)")
    context.node_into("Gather", [context.input(layer, 0), context.input(layer, 1)], [context.name_output(layer, 0)],
                      layer.name, axis=axis + rank if axis < 0 else axis)


def _slice(context: _Context, layer: Layer) -> None:
    if context.opset < 10:
        raise ConversionError(f"Slice with inputs needs ONNX Slice-10 (requested opset {context.opset})")
    # Slice-8: (data, start, stop, step[, axes]) -> ONNX (data, starts, ends, axes, steps), same clamping.
    inputs = [_as_int64(context, context.input(layer, i), context.input_info(layer, i), f"{layer.name}/{i}")
              for i in range(1, len(layer.inputs))]
    start, stop, step = inputs[:3]
    axes = inputs[3] if len(inputs) > 3 else ""  # both default to the first len(start) axes
    context.node_into("Slice", [context.input(layer, 0), start, stop, axes, step], [context.name_output(layer, 0)],
                      layer.name)


_INT64_MAX, _INT64_MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min


def _strided_slice(context: _Context, layer: Layer) -> None:
    if context.opset < 10:
        raise ConversionError(f"StridedSlice needs ONNX Slice-10 (requested opset {context.opset})")
    begin = _axes_input(context, layer, 1, "StridedSlice begin")
    end = _axes_input(context, layer, 2, "StridedSlice end")
    stride = _axes_input(context, layer, 3, "StridedSlice strides") if len(layer.inputs) > 3 else [1] * len(begin)
    attrs = layer.attrs
    for name in ("new_axis_mask", "shrink_axis_mask", "ellipsis_mask"):
        if any(attrs.get(name, ())):
            raise ConversionError(f"StridedSlice {name} is not converted (only plain strided ranges map to Slice)")

    def bit(name: str, i: int) -> bool:
        mask = attrs.get(name, ())
        return i < len(mask) and mask[i] == 1

    # A mask bit of 1 ignores that begin/end: the whole extent in the stride's direction.
    starts = [(0 if s > 0 else _INT64_MAX) if bit("begin_mask", i) else b
              for i, (b, s) in enumerate(zip(begin, stride))]
    ends = [(_INT64_MAX if s > 0 else _INT64_MIN) if bit("end_mask", i) else e
            for i, (e, s) in enumerate(zip(end, stride))]
    base = layer.name
    context.node_into("Slice", [context.input(layer, 0), context.int64s(starts, f"{base}/starts"),
                                context.int64s(ends, f"{base}/ends"), context.int64s(range(len(begin)), f"{base}/axes"),
                                context.int64s(stride, f"{base}/steps")], [context.name_output(layer, 0)], base)


def _broadcast(context: _Context, layer: Layer) -> None:
    if layer.attrs.get("mode", "numpy") == "explicit":
        raise ConversionError("Broadcast mode explicit (with axes_mapping) is not converted")
    if context.opset < 8:
        raise ConversionError(f"Broadcast needs ONNX Expand, from opset 8 (requested opset {context.opset})")
    # numpy: the data broadcasts to the target shape; bidirectional: to both. ONNX Expand is the latter,
    # which equals the former whenever the former is valid.
    target = _as_int64(context, context.input(layer, 1), context.input_info(layer, 1), layer.name)
    context.node_into("Expand", [context.input(layer, 0), target], [context.name_output(layer, 0)], layer.name)


_CONVERTERS: dict[str, Callable[[_Context, Layer], None]] = {
    "Parameter": _parameter, "Const": _const, "Result": _result,
    "MaxPool": _max_pool, "AvgPool": _avg_pool,
    "ReduceMean": _reduce, "ReduceMax": _reduce, "ReduceMin": _reduce, "ReduceSum": _reduce,
    "ReduceProd": _reduce, "ReduceL1": _reduce, "ReduceL2": _reduce,
    "Abs": _abs, "Sqrt": _unary("Sqrt"), "Floor": _unary("Floor"),
    "Add": _binary("Add"), "Subtract": _binary("Sub"), "Multiply": _binary("Mul"), "Maximum": _binary("Max"),
    "Minimum": _binary("Min"), "Power": _binary("Pow"), "Divide": _divide, "FloorMod": _floor_mod,
    "Convert": _convert, "ConvertLike": _convert_like, "Reshape": _reshape, "Concat": _concat,
    "Split": _split, "VariadicSplit": _split, "Transpose": _transpose,
    "Squeeze": _squeeze_like("Squeeze"), "Unsqueeze": _squeeze_like("Unsqueeze"), "Pad": _pad,
    "ShapeOf": _shape_of, "Gather": _gather, "Slice": _slice, "StridedSlice": _strided_slice, "Broadcast": _broadcast,
}
