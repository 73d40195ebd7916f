"""Shape and element-type inference for every supported layer, and the declared-vs-inferred check.

`infer_model(model)` walks the graph in topological order and computes, for every output port, its
element type, its shape and (when it is a small constant known at build time) its value. Values
come from Const layers and fold through the shape arithmetic OpenVINO's ONNX frontend emits
(ShapeOf of a static shape, Gather, Concat, Convert, Squeeze/Unsqueeze, Reshape, integer binary ops),
so a Reshape whose target is computed from ShapeOf still gets static output dims. Where a needed
value is unknown, the affected dims become dynamic.

Declared port dims are claims: `check(model)` compares them with the inferred ones and returns a
`ShapeWarning` for each disagreement instead of raising. Impossible graphs (incompatible broadcast,
kernel larger than the padded input, a Reshape that changes the element count) raise
`InvalidModelError` located at the file and layer.

OpenVINO's pooling shape rules (the IR world), measured with OpenVINO 2026.4: first on every
combination of L in {1,4,5,7,8}, kernel 1..3, stride 1..3, dilation 1..2, pads (0..2, 0..1), the
three rounding types and the four auto_pad values for AvgPool-16 (exclude-pad=false) and MaxPool-14
(6354 cases, identical for both ops), then on the seeded 900-case grid of every op version, rank
1-3, dynamic dims and exclude-pad that tests/ir/test_infer_openvino.py pins:
  1. auto_pad same_upper / same_lower replaces pads_begin/pads_end by the SAME pads
     (total = max(0, (ceil(L/s) - 1) * s + ek - L), odd element at the end / at the beginning);
     auto_pad valid replaces them by zeros; explicit keeps them.
  2. rounding_type then applies to the resolved pads unchanged, also for same_* and valid. This
     differs from ONNX, where SAME always yields ceil(L/s): with same_upper, L=8, k=1, s=3
     OpenVINO gives floor 3, ceil 4, ceil_torch 3.
  3. The dilated kernel must fit the padded input: (k-1)*d+1 <= L + pads_begin + pads_end, else
     OpenVINO refuses the layer ("Kernel after dilation has size ... larger than the data shape
     after padding"), even where ceil rounding would give one output.
  4. ceil_torch is ceil minus a last window that would start at or after L + pads_begin.
  5. AvgPool with exclude-pad=true and auto_pad explicit is refused when pads_begin or pads_end
     >= the dilated kernel on a static axis ("Kernel after dilation is sometimes entirely in the
     padding area"): such a window would average nothing. Dynamic axes, exclude-pad=false, the
     auto_pad modes and MaxPool are exempt.
  6. A dynamic input dim with bounds [lo, hi] gives the output bounds [max(1, out(lo)), out(hi)]
     (hi unbounded stays unbounded) for explicit and valid; for same_* the output dim is fully dynamic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from poolir.ir.element_types import dtype_of
from poolir.ir.errors import (InvalidModelError, PoolirError, UnsupportedError, UsageError, as_model_error,
                       layer_label)
from poolir.ir.geometry import MAX_AXIS_VALUE, AxisWindow, axis_window, effective_kernel, output_length, resolve_pads
from poolir.ir.model import Dim, Layer, Model, Shape, shape_str, static_shape
from poolir.ir.schema import op_version

MAX_FOLDED_ELEMENTS = 4096  # values larger than this are not folded: shape arithmetic is small


@dataclass(frozen=True, slots=True)
class TensorInfo:
    """What inference knows about one output port."""

    element_type: str
    shape: Shape
    value: np.ndarray | None = field(default=None, compare=False)  # a known constant value


@dataclass(frozen=True, slots=True)
class ShapeWarning:
    """A declared port disagrees with inference. Not an error: the file's claim is simply wrong."""

    file: str | None
    layer: str  # layer_label(...)
    port: int
    declared: str  # e.g. "[1,3,32,32]" or "f16"
    inferred: str
    what: str = "dims"  # "dims" or "element type"

    def __str__(self) -> str:
        prefix = f"{self.file}: " if self.file else ""
        return (f"{prefix}{self.layer}: port {self.port}: {self.what} declared {self.declared}, "
                f"inferred {self.inferred}")


@dataclass(slots=True)
class Inference:
    """The result of shape inference over a whole model."""

    order: list[Layer]  # topological order
    outputs: dict[tuple[int, int], TensorInfo]  # (layer id, output port id) -> info
    inputs: dict[tuple[int, int], TensorInfo]  # (layer id, input port id) -> info of its producer
    warnings: list[ShapeWarning]

    def output(self, layer_id: int, port_id: int) -> TensorInfo:
        return self.outputs[(layer_id, port_id)]


# ---------------------------------------------------------------------------------------------
# The pooling geometry of an IR layer (the runtime's IR executor calls this too)

def pool_windows_of(layer: Layer, spatial: Sequence[int]) -> tuple[AxisWindow, ...]:
    """The resolved windows of an AvgPool/MaxPool layer over static spatial dims, by OpenVINO's rules
    (see the module docstring). Raises UsageError for values OpenVINO refuses; callers locate it."""
    _check_pool_attrs(layer.attrs, len(spatial))
    return tuple(_pool_axis(layer.attrs, axis, length) for axis, length in enumerate(spatial))


def _check_pool_attrs(attrs: dict, rank: int) -> None:
    for name in ("kernel", "strides", "dilations", "pads_begin", "pads_end"):
        values = attrs.get(name)
        if values is not None and len(values) != rank:
            raise UsageError(f"attribute {name!r} = {_ints(values)} has {len(values)} values for "
                             f"{rank} spatial axes")
    check_pool_ranges(attrs)
    if attrs.get("exclude-pad") and attrs.get("auto_pad", "explicit") == "explicit":
        # Rule 5: a window could lie entirely in the padding and average nothing. OpenVINO checks it from the
        # attributes alone, so it holds for a dynamic length too (its CPU plugin refuses that IR when compiling).
        for axis, (pad_begin, pad_end) in enumerate(zip(attrs["pads_begin"], attrs["pads_end"])):
            dilation = attrs["dilations"][axis] if attrs.get("dilations") else 1
            effective = effective_kernel(attrs["kernel"][axis], dilation)
            if max(pad_begin, pad_end) >= effective:
                raise UsageError(f"spatial axis {axis}: pads {pad_begin}, {pad_end} are not smaller than the dilated "
                                 f"kernel {effective}, so with exclude-pad a window can lie entirely in the padding; "
                                 "OpenVINO refuses such an AvgPool")


def _pool_axis(attrs: dict, axis: int, length: int) -> AxisWindow:
    """One spatial axis of OpenVINO's pooling: resolve pads by auto_pad, then round (rules 1-4)."""
    kernel, stride = attrs["kernel"][axis], attrs["strides"][axis]
    dilation = attrs["dilations"][axis] if attrs.get("dilations") else 1
    auto_pad = attrs.get("auto_pad", "explicit")
    pad_begin, pad_end = resolve_pads(length, kernel, stride, dilation, attrs["pads_begin"][axis],
                                      attrs["pads_end"][axis], auto_pad)
    effective = effective_kernel(kernel, dilation)
    if effective > length + pad_begin + pad_end:
        raise UsageError(f"spatial axis {axis}: the dilated kernel {effective} is larger than the padded "
                         f"input {length + pad_begin + pad_end} (input {length}, pads {pad_begin}, {pad_end}); "
                         "OpenVINO refuses it")
    try:
        # "explicit": OpenVINO applies rounding_type to the resolved pads, also for same_* (rule 2).
        return axis_window(length, kernel, stride, dilation, pad_begin, pad_end,
                           attrs.get("rounding_type", "floor"), "explicit")
    except UsageError as error:
        raise UsageError(f"spatial axis {axis}: {error.problem}") from None


def check_pool_ranges(attrs: dict) -> None:
    """kernel, strides, dilations >= 1 and pads >= 0 (shape-independent; validation calls it at read time)."""
    for name, minimum in (("kernel", 1), ("strides", 1), ("dilations", 1), ("pads_begin", 0), ("pads_end", 0)):
        for value in attrs.get(name) or ():
            if value < minimum:
                raise UsageError(f"attribute {name!r} = {_ints(attrs[name])}: every value must be >= {minimum}")
            # Checked here too, not only by ir.geometry, because dynamic dims skip the geometry until run time
            # (strides="9223372036854775808" with a dynamic length reached the ONNX writer, which overflowed).
            if value > MAX_AXIS_VALUE:
                raise UsageError(f"attribute {name!r} = {_ints(attrs[name])}: every value must be <= "
                                 f"{MAX_AXIS_VALUE} (2**31 - 1)")


def _ints(values) -> str:
    return ",".join(str(v) for v in values)


# ---------------------------------------------------------------------------------------------
# The driver

def infer_model(model: Model) -> Inference:
    """Infer every output port; raise InvalidModelError/UnsupportedError located at file and layer."""
    from poolir.ir.validate import topological_order

    order = topological_order(model)
    producers = {(e.to_layer, e.to_port): (e.from_layer, e.from_port) for e in model.edges}
    outputs: dict[tuple[int, int], TensorInfo] = {}
    inputs: dict[tuple[int, int], TensorInfo] = {}
    warnings: list[ShapeWarning] = []
    by_id = {layer.id: layer for layer in model.layers}
    for layer in order:
        where = layer_label(layer.name, layer.id, layer.type)
        layer_inputs = []
        for port in layer.inputs:
            from_layer, from_port = producers[(layer.id, port.id)]
            info = outputs[(from_layer, from_port)]
            inputs[(layer.id, port.id)] = info
            layer_inputs.append(info)
            # An input port that repeats its producer's (wrong) declaration adds nothing: the
            # disagreement is reported once, at the producer's output port.
            producer_port = by_id[from_layer].port(from_port)
            warnings.extend(_compare(model, where, port.id,
                                     port.shape if port.shape != producer_port.shape else None,
                                     port.element_type if port.element_type != producer_port.element_type else None,
                                     info))
        try:
            results = infer_layer(layer, layer_inputs)
            if len(results) != len(layer.outputs):
                raise InvalidModelError(f"declares {len(layer.outputs)} output ports, "
                                        f"{layer.type} has {len(results)} here")
            for info in results:
                _check_allocatable(info.shape)
        except PoolirError as error:
            raise as_model_error(error).located(file=model.source, where=where) from None
        for port, info in zip(layer.outputs, results):
            outputs[(layer.id, port.id)] = info
            warnings.extend(_compare(model, where, port.id, port.shape, port.element_type, info))
    return Inference(order, outputs, inputs, warnings)


def check(model: Model) -> list[ShapeWarning]:
    """Declared-vs-inferred disagreements of every port (raises for impossible graphs)."""
    return infer_model(model).warnings


def _check_allocatable(shape: Shape) -> None:
    from poolir.ir.reader import MAX_ELEMENTS

    if math.prod(d.min for d in shape) > MAX_ELEMENTS:
        raise InvalidModelError(f"the inferred output {shape_str(shape)} has more than {MAX_ELEMENTS} elements "
                                "(2**31, the limit poolir allocates)")


def _compare(model: Model, where: str, port_id: int, declared: Shape | None, element_type: str | None,
             info: TensorInfo) -> list[ShapeWarning]:
    """Warnings for a port's declared dims and element type (None: nothing to compare)."""
    found = []
    if declared is not None and (len(declared) != len(info.shape) or any(
            a.is_static and b.is_static and a.min != b.min for a, b in zip(declared, info.shape))):
        found.append(ShapeWarning(model.source, where, port_id, shape_str(declared), shape_str(info.shape)))
    if element_type is not None and element_type != info.element_type:
        found.append(ShapeWarning(model.source, where, port_id, element_type, info.element_type, "element type"))
    return found


def infer_layer(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    """Output infos of one layer from its input infos. Raises PoolirError (unlocated)."""
    schema = op_version(layer.type, layer.version)
    low, high = schema.inputs
    if len(inputs) < low or (high is not None and len(inputs) > high):
        expected = f"{low}" if low == high else f"{low} to {high if high is not None else 'any number of'}"
        raise InvalidModelError(f"has {len(inputs)} input ports, {schema.label} takes {expected}")
    return _RULES[layer.type](layer, inputs)


# ---------------------------------------------------------------------------------------------
# Dimension helpers

def _dynamic(rank: int) -> Shape:
    return tuple(Dim.dynamic() for _ in range(rank))


def _static_values(shape: Shape) -> tuple[int, ...] | None:
    return tuple(d.min for d in shape) if all(d.is_static for d in shape) else None


def broadcast_shapes(a: Shape, b: Shape) -> Shape:
    """numpy broadcasting of two shapes with dynamic dims; raises InvalidModelError when incompatible."""
    rank = max(len(a), len(b))
    a = (Dim.static(1),) * (rank - len(a)) + tuple(a)
    b = (Dim.static(1),) * (rank - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x.is_static and x.min == 1:
            out.append(y)
        elif y.is_static and y.min == 1:
            out.append(x)
        elif x.is_static and y.is_static:
            if x.min != y.min:
                raise InvalidModelError(f"shapes {shape_str(a)} and {shape_str(b)} do not broadcast")
            out.append(x)
        elif x.is_static or y.is_static:
            out.append(x if x.is_static else y)
        else:
            out.append(Dim.dynamic())
    return tuple(out)


def _axis(axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < max(rank, 1):
        raise InvalidModelError(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def _scalar_int(info: TensorInfo, what: str) -> int:
    """The one integer of a constant axis input (a Const of shape [] or [1]); raises InvalidModelError.

    An empty i64 Const as the Gather axis raised IndexError here; an f32 one was silently truncated."""
    if not np.issubdtype(dtype_of(info.element_type), np.integer):
        raise InvalidModelError(f"{what} must be an integer, got element type {info.element_type}")
    values = np.ravel(info.value)
    if values.size != 1:
        raise InvalidModelError(f"{what} must be one integer, got {values.size} values")
    return int(values[0])


def _folded(element_type: str, shape: Shape, value) -> TensorInfo:
    value = np.asarray(value)
    keep = value.size <= MAX_FOLDED_ELEMENTS
    return TensorInfo(element_type, shape, value.astype(dtype_of(element_type)) if keep else None)


def _info_of_value(element_type: str, value: np.ndarray | None, shape: Shape) -> TensorInfo:
    if value is None:
        return TensorInfo(element_type, shape)
    return _folded(element_type, static_shape(np.shape(value)), value)


# ---------------------------------------------------------------------------------------------
# Rules, one per layer type

def _parameter(layer, inputs):
    return [TensorInfo(layer.attrs["element_type"], tuple(layer.attrs["shape"]))]


def _const(layer, inputs):
    data = layer.data
    value = data if data is not None and data.size <= MAX_FOLDED_ELEMENTS else None
    return [TensorInfo(layer.attrs["element_type"], tuple(layer.attrs["shape"]), value)]


def _result(layer, inputs):
    return []


def _pool_interval(attrs: dict, axis: int, dim: Dim) -> Dim:
    """Output bounds for a dynamic input dim: the output length grows with the input length, so the
    bounds are the outputs of the bounds; OpenVINO clamps the lower one to 1, and with same_* pads
    it gives no bounds at all (rule 6)."""
    if attrs.get("auto_pad", "explicit") in ("same_upper", "same_lower"):
        return Dim.dynamic()

    def length(value: int) -> int:
        kernel, stride = attrs["kernel"][axis], attrs["strides"][axis]
        dilation = attrs["dilations"][axis] if attrs.get("dilations") else 1
        pads = resolve_pads(value, kernel, stride, dilation, attrs["pads_begin"][axis], attrs["pads_end"][axis],
                            attrs.get("auto_pad", "explicit"))
        return output_length(value, kernel, stride, dilation, *pads, attrs.get("rounding_type", "floor"))

    return Dim(max(1, length(dim.min)), None if dim.max is None else max(1, length(dim.max)))


def _pool(layer, inputs):
    (data,) = inputs
    if len(data.shape) < 3:
        raise InvalidModelError(f"input {shape_str(data.shape)} must have rank >= 3 (batch, channels, spatial)")
    spatial = data.shape[2:]
    _check_pool_attrs(layer.attrs, len(spatial))
    out = list(data.shape[:2])
    for axis, dim in enumerate(spatial):
        out.append(Dim.static(_pool_axis(layer.attrs, axis, dim.min).output) if dim.is_static else
                   _pool_interval(layer.attrs, axis, dim))
    outputs = [TensorInfo(data.element_type, tuple(out))]
    if layer.type == "MaxPool" and "index_element_type" in layer.attrs:
        outputs.append(TensorInfo(layer.attrs["index_element_type"], tuple(out)))
    return outputs


def _unary(layer, inputs):
    (data,) = inputs
    return [TensorInfo(data.element_type, data.shape)]


_FOLDABLE_BINARY: dict[str, Callable] = {
    "Add": np.add, "Subtract": np.subtract, "Multiply": np.multiply, "Maximum": np.maximum,
    "Minimum": np.minimum,
}


def _binary(layer, inputs):
    a, b = inputs
    if a.element_type != b.element_type:
        raise InvalidModelError(f"input element types differ ({a.element_type}, {b.element_type})")
    if layer.attrs.get("auto_broadcast") == "none":
        if a.shape != b.shape and _static_values(a.shape) != _static_values(b.shape):
            raise InvalidModelError(f"auto_broadcast none needs equal shapes, got {shape_str(a.shape)} "
                                    f"and {shape_str(b.shape)}")
    shape = broadcast_shapes(a.shape, b.shape)
    fold = _FOLDABLE_BINARY.get(layer.type)
    integral = np.issubdtype(dtype_of(a.element_type), np.integer)
    if a.value is not None and b.value is not None and integral:
        if fold is not None:
            return [_folded(a.element_type, shape, fold(a.value, b.value))]
        if layer.type == "Divide" and not np.any(b.value == 0):
            quotient = (np.floor_divide(a.value, b.value) if layer.attrs.get("m_pythondiv", True)
                        else np.trunc(a.value / b.value))
            return [_folded(a.element_type, shape, quotient)]
    return [TensorInfo(a.element_type, shape)]


def _convert(layer, inputs):
    (data,) = inputs
    target = layer.attrs["destination_type"]
    if data.value is not None:
        return [_folded(target, data.shape, data.value)]
    return [TensorInfo(target, data.shape)]


def _convert_like(layer, inputs):
    data, like = inputs
    return [TensorInfo(like.element_type, data.shape)]


def _reshape(layer, inputs):
    data, target = inputs
    if len(target.shape) > 1:
        raise InvalidModelError(f"the target shape input must be 1-D, got {shape_str(target.shape)}")
    if target.value is None:
        rank = target.shape[0].value if target.shape else 0
        if rank is None:
            raise UnsupportedError("the output rank is unknown (a dynamic-length target shape)")
        return [TensorInfo(data.element_type, _dynamic(rank))]
    requested = [int(v) for v in np.ravel(target.value)]
    dims: list[Dim | None] = []
    for index, value in enumerate(requested):
        if value == 0 and layer.attrs["special_zero"]:
            if index >= len(data.shape):
                raise InvalidModelError(f"special_zero copies dim {index}, the input has rank {len(data.shape)}")
            dims.append(data.shape[index])
        elif value == -1:
            dims.append(None)
        elif value < -1:
            raise InvalidModelError(f"target shape value {value} is negative")
        else:
            dims.append(Dim.static(value))
    if dims.count(None) > 1:
        raise InvalidModelError(f"target shape {requested} has more than one -1")
    total = _static_values(data.shape)
    if None in dims:
        # The -1 dim is (input elements) / (other output elements). Dims copied by special_zero
        # appear on both sides and cancel, so a copied dynamic batch still gives a static -1.
        copied = {i for i, v in enumerate(requested) if v == 0 and layer.attrs["special_zero"]}
        numerator = [d for i, d in enumerate(data.shape) if i not in copied]
        denominator = [d for i, d in enumerate(dims) if d is not None and i not in copied]
        if all(d.is_static for d in (*numerator, *denominator)):
            whole, rest = math.prod(d.min for d in numerator), math.prod(d.min for d in denominator)
            if rest == 0 or whole % rest:
                raise InvalidModelError(f"cannot reshape {shape_str(data.shape)} to {requested}")
            dims[dims.index(None)] = Dim.static(whole // rest)
        else:
            dims[dims.index(None)] = Dim.dynamic()
    shape = tuple(dims)
    out_values = _static_values(shape)
    if total is not None and out_values is not None and math.prod(total) != math.prod(out_values):
        raise InvalidModelError(f"cannot reshape {shape_str(data.shape)} ({math.prod(total)} elements) "
                                f"to {shape_str(shape)} ({math.prod(out_values)} elements)")
    value = data.value.reshape(out_values) if data.value is not None and out_values is not None else None
    return [_info_of_value(data.element_type, value, shape)]


def _axes_of(info: TensorInfo, rank: int, what: str = "axes") -> list[int] | None:
    if info.value is None:
        return None
    return sorted({_axis(int(a), rank, what) for a in np.ravel(info.value)})


def _squeeze(layer, inputs):
    data = inputs[0]
    rank = len(data.shape)
    if len(inputs) == 1:
        if not all(d.is_static for d in data.shape):
            raise UnsupportedError("Squeeze without axes on a dynamic shape has a dynamic rank")
        axes = [i for i, d in enumerate(data.shape) if d.min == 1]
    else:
        axes = _axes_of(inputs[1], rank)
        if axes is None:
            raise UnsupportedError("Squeeze axes must be constant (the output rank depends on them)")
    for axis in axes:
        dim = data.shape[axis]
        if dim.is_static and dim.min != 1 and not layer.attrs.get("allow_axis_skip", False):
            raise InvalidModelError(f"cannot squeeze axis {axis} of size {dim.min}")
    keep = [i for i in range(rank) if i not in axes or (data.shape[i].is_static and data.shape[i].min != 1)]
    shape = tuple(data.shape[i] for i in keep)
    value = data.value.reshape([data.value.shape[i] for i in keep]) if data.value is not None else None
    return [_info_of_value(data.element_type, value, shape)]


def _unsqueeze(layer, inputs):
    data, axes_info = inputs
    if axes_info.value is None:
        raise UnsupportedError("Unsqueeze axes must be constant (the output rank depends on them)")
    raw = [int(a) for a in np.ravel(axes_info.value)]
    rank = len(data.shape) + len(raw)
    axes = sorted({_axis(a, rank) for a in raw})
    if len(axes) != len(raw):
        raise InvalidModelError(f"repeated Unsqueeze axes {raw}")
    dims = iter(data.shape)
    shape = tuple(Dim.static(1) if i in axes else next(dims) for i in range(rank))
    value = np.expand_dims(data.value, tuple(axes)) if data.value is not None else None
    return [_info_of_value(data.element_type, value, shape)]


def _concat(layer, inputs):
    first = inputs[0]
    rank = len(first.shape)
    axis = _axis(layer.attrs["axis"], rank)
    dims = list(first.shape)
    for other in inputs[1:]:
        if len(other.shape) != rank or other.element_type != first.element_type:
            raise InvalidModelError(f"inputs {shape_str(first.shape)} {first.element_type} and "
                                    f"{shape_str(other.shape)} {other.element_type} cannot be concatenated")
        for i, (a, b) in enumerate(zip(dims, other.shape)):
            if i == axis:
                dims[i] = Dim.static(a.min + b.min) if a.is_static and b.is_static else Dim.dynamic()
            elif a.is_static and b.is_static and a.min != b.min:
                raise InvalidModelError(f"inputs {shape_str(first.shape)} and {shape_str(other.shape)} differ "
                                        f"on axis {i}")
            elif not a.is_static:
                dims[i] = b
    value = None
    if all(i.value is not None for i in inputs):
        value = np.concatenate([i.value for i in inputs], axis=axis)
    return [_info_of_value(first.element_type, value, tuple(dims))]


def _split_lengths(layer, inputs) -> tuple[int, list[int | None]]:
    data = inputs[0]
    axis_info = inputs[1]
    if axis_info.value is None:
        raise UnsupportedError("the split axis must be constant")
    axis = _axis(_scalar_int(axis_info, "the split axis"), len(data.shape))
    dim = data.shape[axis]
    if layer.type == "Split":
        parts = layer.attrs["num_splits"]
        if parts < 1:
            raise InvalidModelError(f"num_splits {parts} must be >= 1")
        if dim.is_static and dim.min % parts:
            raise InvalidModelError(f"axis {axis} of size {dim.min} does not split into {parts} equal parts")
        return axis, [dim.min // parts if dim.is_static else None] * parts
    if inputs[2].value is None:
        raise UnsupportedError("VariadicSplit split_lengths must be constant")
    lengths = [int(v) for v in np.ravel(inputs[2].value)]
    if lengths.count(-1) > 1 or any(v < -1 for v in lengths):
        raise InvalidModelError(f"split_lengths {lengths} may hold one -1 and no other negative value")
    if -1 in lengths:
        if dim.is_static:
            rest = dim.min - sum(v for v in lengths if v != -1)
            if rest < 0:
                raise InvalidModelError(f"split_lengths {lengths} exceed axis {axis} of size {dim.min}")
            lengths[lengths.index(-1)] = rest
        else:
            return axis, [None if v == -1 else v for v in lengths]
    if dim.is_static and sum(lengths) != dim.min:
        raise InvalidModelError(f"split_lengths {lengths} do not add up to axis {axis} of size {dim.min}")
    return axis, list(lengths)


def _split(layer, inputs):
    data = inputs[0]
    axis, lengths = _split_lengths(layer, inputs)
    outputs = []
    offset = 0
    for length in lengths:
        shape = tuple(Dim.static(length) if i == axis and length is not None else
                      (Dim.dynamic() if i == axis else d) for i, d in enumerate(data.shape))
        value = None
        if data.value is not None and length is not None:
            value = np.take(data.value, range(offset, offset + length), axis=axis)
        offset += length or 0
        outputs.append(_info_of_value(data.element_type, value, shape))
    return outputs


def _transpose(layer, inputs):
    data, order_info = inputs
    rank = len(data.shape)
    if order_info.value is None:
        return [TensorInfo(data.element_type, _dynamic(rank))]
    order = [int(v) for v in np.ravel(order_info.value)]
    if not order:
        order = list(range(rank))[::-1]
    if sorted(_axis(v, rank, "order value") for v in order) != list(range(rank)):
        raise InvalidModelError(f"order {order} is not a permutation of the {rank} axes")
    shape = tuple(data.shape[v] for v in order)
    value = np.transpose(data.value, order) if data.value is not None else None
    return [_info_of_value(data.element_type, value, shape)]


def _indexed_shape(data: TensorInfo, index) -> Shape | None:
    """The shape numpy gives for `index` on a static shape, without allocating (a zero-stride view)."""
    values = _static_values(data.shape)
    if values is None:
        return None
    try:
        return static_shape(np.broadcast_to(np.zeros((), np.int8), values)[index].shape)
    except IndexError as error:
        raise InvalidModelError(f"slice out of range of {shape_str(data.shape)}: {error}") from None


def _slice(layer, inputs):
    data = inputs[0]
    rank = len(data.shape)
    start, stop, step = (inputs[i].value for i in (1, 2, 3))
    axes = inputs[4].value if len(inputs) == 5 else np.arange(0 if start is None else np.size(start))
    if any(v is None for v in (start, stop, step, axes)):
        return [TensorInfo(data.element_type, _dynamic(rank))]
    index = [slice(None)] * rank
    for begin, end, stride, axis in zip(*(np.ravel(v).tolist() for v in (start, stop, step, axes))):
        if stride == 0:
            raise InvalidModelError("a Slice step is 0")
        index[_axis(axis, rank)] = slice(begin, end, stride)
    shape = _indexed_shape(data, tuple(index))
    if shape is None:
        dims = list(data.shape)
        for begin, end, stride, axis in zip(*(np.ravel(v).tolist() for v in (start, stop, step, axes))):
            dim = dims[_axis(axis, rank)]
            dims[_axis(axis, rank)] = (Dim.static(len(range(*slice(begin, end, stride).indices(dim.min))))
                                       if dim.is_static else Dim.dynamic())
        shape = tuple(dims)
    value = data.value[tuple(index)] if data.value is not None else None
    return [_info_of_value(data.element_type, value, shape)]


def _strided_slice(layer, inputs):
    data = inputs[0]
    begin, end = inputs[1].value, inputs[2].value
    stride = inputs[3].value if len(inputs) == 4 else (None if begin is None else np.ones_like(begin))
    if begin is None or end is None or stride is None:
        raise UnsupportedError("StridedSlice begin, end and stride must be constant")
    begin, end, stride = (np.ravel(v).tolist() for v in (begin, end, stride))
    masks = {name: list(layer.attrs[name]) for name in
             ("begin_mask", "end_mask", "new_axis_mask", "shrink_axis_mask", "ellipsis_mask")}

    def bit(name: str, i: int) -> bool:
        return i < len(masks[name]) and masks[name][i] == 1

    index = []
    for i in range(len(begin)):
        if bit("ellipsis_mask", i):
            index.append(Ellipsis)
        elif bit("new_axis_mask", i):
            index.append(None)
        elif bit("shrink_axis_mask", i):
            index.append(int(begin[i]))
        else:
            if stride[i] == 0:
                raise InvalidModelError("a StridedSlice stride is 0")
            # A mask bit of 1 means: ignore this begin/end and take the whole extent.
            index.append(slice(None if bit("begin_mask", i) else begin[i],
                               None if bit("end_mask", i) else end[i], stride[i]))
    shape = _indexed_shape(data, tuple(index))
    if shape is None:
        raise UnsupportedError("StridedSlice shape inference needs a static input shape")
    value = data.value[tuple(index)] if data.value is not None else None
    return [_info_of_value(data.element_type, value, shape)]


def _gather(layer, inputs):
    data, indices, axis_info = inputs
    if axis_info.value is None:
        raise UnsupportedError("the Gather axis must be constant")
    rank = len(data.shape)
    axis = _axis(_scalar_int(axis_info, "the Gather axis"), rank)
    if not np.issubdtype(dtype_of(indices.element_type), np.integer):
        raise InvalidModelError(f"Gather indices must be integers, got element type {indices.element_type}")
    batch_dims = layer.attrs.get("batch_dims", 0)
    batch_dims = batch_dims % len(indices.shape) if batch_dims < 0 else batch_dims
    if batch_dims > axis:
        raise InvalidModelError(f"batch_dims {batch_dims} is greater than axis {axis}")
    shape = data.shape[:axis] + indices.shape[batch_dims:] + data.shape[axis + 1:]
    value = None
    if data.value is not None and indices.value is not None and batch_dims == 0:
        size = data.value.shape[axis]
        if np.any(indices.value >= size) or np.any(indices.value < -size):
            raise InvalidModelError(f"Gather indices {indices.value.tolist()} are out of range for size {size}")
        value = np.take(data.value, indices.value, axis=axis)
    return [_info_of_value(data.element_type, value, shape)]


def _shape_of(layer, inputs):
    (data,) = inputs
    output_type = layer.attrs.get("output_type", "i64")
    shape = (Dim.static(len(data.shape)),)
    values = _static_values(data.shape)
    if values is not None:
        return [_folded(output_type, shape, np.asarray(values, dtype=np.int64))]
    return [TensorInfo(output_type, shape)]


def _broadcast(layer, inputs):
    """numpy: the output is the target shape and the input must broadcast to it; bidirectional: numpy
    broadcasting of both; explicit: the target shape (axes_mapping places the input's axes)."""
    data, target = inputs[0], inputs[1]
    mode = layer.attrs["mode"]
    if target.value is None:
        rank = target.shape[0].value if target.shape else 0
        if rank is None:
            raise UnsupportedError("the Broadcast target shape has a dynamic length")
        return [TensorInfo(data.element_type, _dynamic(max(rank, len(data.shape)) if mode == "bidirectional" else rank))]
    requested = static_shape(np.ravel(target.value))
    if mode == "bidirectional":
        return [TensorInfo(data.element_type, broadcast_shapes(data.shape, requested))]
    if mode == "numpy":
        if len(data.shape) > len(requested) or broadcast_shapes(data.shape, requested) != requested:
            raise InvalidModelError(f"{shape_str(data.shape)} does not broadcast to {shape_str(requested)}")
    elif len(inputs) != 3:
        raise InvalidModelError("Broadcast mode explicit needs the axes_mapping input")
    return [TensorInfo(data.element_type, requested)]


def _reduce(layer, inputs):
    data, axes_info = inputs
    rank = len(data.shape)
    keep = layer.attrs["keep_dims"]
    axes = _axes_of(axes_info, rank) if rank else []
    if axes is None:
        if keep:
            return [TensorInfo(data.element_type, _dynamic(rank))]
        count = _static_values(axes_info.shape)
        if count is None:
            raise UnsupportedError("Reduce axes of unknown length without keep_dims: dynamic output rank")
        return [TensorInfo(data.element_type, _dynamic(rank - math.prod(count)))]
    shape = tuple(Dim.static(1) if i in axes else d for i, d in enumerate(data.shape) if keep or i not in axes)
    return [TensorInfo(data.element_type, shape)]


def _pad(layer, inputs):
    data, begin_info, end_info = inputs[:3]
    rank = len(data.shape)
    # OpenVINO's serializer gives Pad a pad_value input in every mode; outside constant it is ignored.
    if len(inputs) == 4 and inputs[3].element_type != data.element_type:
        raise InvalidModelError(f"pad_value has element type {inputs[3].element_type}, data {data.element_type}")
    if len(inputs) == 4 and (_static_values(inputs[3].shape) is None or math.prod(_static_values(inputs[3].shape)) != 1):
        # an empty f32 Const as pad_value ran and then broke the ONNX writer's reshape to a scalar
        raise InvalidModelError(f"pad_value must be a scalar, got shape {shape_str(inputs[3].shape)}")
    for info, what in ((begin_info, "pads_begin"), (end_info, "pads_end")):
        if not np.issubdtype(dtype_of(info.element_type), np.integer):
            raise InvalidModelError(f"{what} must be integers, got element type {info.element_type}")
    if begin_info.value is None or end_info.value is None:
        return [TensorInfo(data.element_type, _dynamic(rank))]
    begin, end = np.ravel(begin_info.value).tolist(), np.ravel(end_info.value).tolist()
    if len(begin) != rank or len(end) != rank:
        raise InvalidModelError(f"pads_begin {begin} / pads_end {end} must have {rank} values")
    if layer.opset < 12 and min(begin + end) < 0:
        raise InvalidModelError(f"negative pads {begin} / {end} need Pad-12 (version opset12)")
    dims = []
    for dim, b, e in zip(data.shape, begin, end):
        if dim.is_static:
            size = dim.min + b + e
            if size < 0:
                raise InvalidModelError(f"pads {b}, {e} crop a dim of size {dim.min} below zero")
            dims.append(Dim.static(size))
        else:
            dims.append(Dim.dynamic())
    return [TensorInfo(data.element_type, tuple(dims))]


_RULES: dict[str, Callable[[Layer, list[TensorInfo]], list[TensorInfo]]] = {
    "Parameter": _parameter, "Const": _const, "Result": _result,
    "AvgPool": _pool, "MaxPool": _pool, "Pad": _pad,
    **{name: _binary for name in ("Add", "Subtract", "Multiply", "Divide", "FloorMod", "Maximum", "Minimum",
                                  "Power")},
    **{name: _unary for name in ("Abs", "Sqrt", "Floor")},
    "Convert": _convert, "ConvertLike": _convert_like, "Reshape": _reshape, "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze, "Concat": _concat, "Split": _split, "VariadicSplit": _split,
    "Transpose": _transpose, "Slice": _slice, "StridedSlice": _strided_slice, "Gather": _gather,
    "ShapeOf": _shape_of, "Broadcast": _broadcast,
    **{name: _reduce for name in ("ReduceMean", "ReduceMax", "ReduceMin", "ReduceSum", "ReduceProd",
                                  "ReduceL1", "ReduceL2")},
}


def _check_rules_cover_schemas() -> None:
    from poolir.ir.schema import SCHEMAS

    missing = set(SCHEMAS) - set(_RULES)
    if missing:
        raise RuntimeError(f"no shape rule for {sorted(missing)}")  # a bug in this module, at import


_check_rules_cover_schemas()
