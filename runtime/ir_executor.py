"""Execute an `ir.Model` the way OpenVINO does: `IRProgram(model).execute(feeds)`.

The constructor validates the graph and plans it once: a topological order, one closure per layer
(attributes read, versions resolved and constants converted here, never per run), and a slot for
every tensor. `execute` only walks the plan. What depends on the input shape (pooling windows) is
cached by shape inside the pooling ops (runtime/ir_ops.py), so dynamic dims cost one resolution each.

Names: each Parameter is fed by the tensor name of its output port (the first of `names`, IR v11),
falling back to the layer name; each Result is returned under the tensor name of the port feeding it,
falling back to the Result layer's name.

Semantics are OpenVINO's (its operation specs, and its CPU plugin's behaviour where the specs are
silent); pooling rules are in runtime/ir_ops.py, the other layers are small adapters onto
runtime/tensor_ops.py below, one function per layer type, registered in `_BUILDERS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from poolir.ir.element_types import dtype_of
from poolir.ir.errors import InvalidModelError, PoolirError, UnsupportedError, UsageError, layer_label
from poolir.ir.infer import infer_with_inputs
from poolir.ir.model import Layer, Model
from poolir.runtime import tensor_ops
from poolir.ir.validate import topological_order, validate_graph
from poolir.runtime.ir_ops import AvgPoolOp, MaxPoolOp
from poolir.runtime.session import TensorSpec

# A layer's compiled form: input arrays (in input-port order) -> output arrays (in output-port order).
LayerFn = Callable[[Sequence[np.ndarray]], Sequence[np.ndarray]]


@dataclass(frozen=True, slots=True)
class _LayerInfo:
    """What a builder may know about a layer beyond its attributes."""

    layer: Layer
    used_outputs: frozenset[int]  # indices of output ports something consumes


@dataclass(frozen=True, slots=True)
class _Step:
    layer: Layer
    run: LayerFn
    inputs: tuple[int, ...]  # slots read
    outputs: tuple[int, ...]  # slots written


_BUILDERS: dict[str, Callable[[_LayerInfo], LayerFn]] = {}


def _builder(*layer_types: str):
    def register(function: Callable[[_LayerInfo], LayerFn]):
        for layer_type in layer_types:
            if layer_type in _BUILDERS:
                raise RuntimeError(f"duplicate IR builder for {layer_type}")  # a bug, caught at import
            _BUILDERS[layer_type] = function
        return function

    return register


def supported_layer_types() -> list[str]:
    return sorted([*_BUILDERS, "Parameter", "Const", "Result"])


class IRProgram:
    """An IR model, validated and planned once; `execute(feeds)` runs it."""

    def __init__(self, model: Model):
        self.model = model
        self.file = model.source
        self._check_supported(model.layers)  # every unsupported layer at once, before the first one fails
        # ir/validate.py: duplicate ids, dangling or doubled edges, unconnected ports, port counts, the schema
        # (op version, typed attributes, allowed values, defaults) and attribute ranges; then the order.
        validate_graph(model)
        order = topological_order(model)
        layers = {layer.id: layer for layer in model.layers}
        producers = {(edge.to_layer, edge.to_port): (edge.from_layer, edge.from_port) for edge in model.edges}

        slot_of: dict[tuple[int, int], int] = {}
        for layer in order:
            for port in layer.outputs:
                slot_of[(layer.id, port.id)] = len(slot_of)
        self._slot_count = len(slot_of)
        consumed = {(edge.from_layer, edge.from_port) for edge in model.edges}

        self._constants: dict[int, np.ndarray] = {}
        self._parameters: list[tuple[str, int]] = []  # (feed name, slot)
        self.inputs: list[TensorSpec] = []
        self.outputs: list[str] = []
        self._results: list[tuple[str, int]] = []
        self._steps: list[_Step] = []
        for layer in order:
            where = layer_label(layer.name, layer.id, layer.type)
            try:
                inputs = tuple(slot_of[producers[(layer.id, port.id)]] for port in layer.inputs)
                outputs = tuple(slot_of[(layer.id, port.id)] for port in layer.outputs)
                if layer.type == "Parameter":
                    self._plan_parameter(layer, outputs)
                elif layer.type == "Const":
                    self._plan_const(layer, outputs)
                elif layer.type == "Result":
                    self._plan_result(layer, producers[(layer.id, layer.inputs[0].id)], layers, inputs)
                else:
                    info = _LayerInfo(layer, frozenset(i for i, port in enumerate(layer.outputs)
                                                       if (layer.id, port.id) in consumed))
                    self._steps.append(_Step(layer, _BUILDERS[layer.type](info), inputs, outputs))
            except PoolirError as error:
                raise error.located(file=self.file, where=where) from None
        self._feed_slots = frozenset(slot for _, slot in self._parameters)
        if not self._results:
            raise InvalidModelError("the model has no Result layer", file=self.file)

    # ----------------------------------------------------------------------------------------------
    # Planning

    def _check_supported(self, layers: list[Layer]) -> None:
        unsupported = [layer for layer in layers if layer.type not in ("Parameter", "Const", "Result")
                       and layer.type not in _BUILDERS]
        if unsupported:
            listed = "; ".join(f"{layer_label(l.name, l.id, l.type)} {l.version}" for l in unsupported)
            raise UnsupportedError(f"unsupported layer types: {listed} (supported: "
                                   f"{', '.join(supported_layer_types())})", file=self.file)

    def _plan_parameter(self, layer: Layer, outputs: tuple[int, ...]) -> None:
        port = layer.outputs[0]
        name = port.names[0] if port.names else layer.name
        seen = self.__dict__.setdefault("_input_names", set())  # a set: a scan per Parameter was quadratic
        if name in seen:
            raise InvalidModelError(f"two Parameters have the input name '{name}'")
        seen.add(name)
        element_type = layer.attrs.get("element_type") or port.element_type
        if element_type is None:
            raise InvalidModelError("the Parameter has no element_type")
        shape = layer.attrs.get("shape", port.shape)
        if isinstance(shape, str):
            raise InvalidModelError(f"the Parameter's shape {shape!r} was not parsed")
        dims = tuple(dim.value for dim in shape)
        self.inputs.append(TensorSpec(name, dtype_of(str(element_type)), dims))
        self._parameters.append((name, outputs[0]))

    def _plan_const(self, layer: Layer, outputs: tuple[int, ...]) -> None:
        if layer.data is None:
            raise InvalidModelError("the Const layer has no data")
        data = np.asarray(layer.data)
        element_type = layer.attrs.get("element_type") or layer.outputs[0].element_type
        if element_type is not None:
            data = data.astype(dtype_of(str(element_type)), copy=False)
        data = np.ascontiguousarray(data)
        data.flags.writeable = False  # shared by every run: no layer may write into it
        self._constants[outputs[0]] = data

    def _plan_result(self, layer: Layer, source: tuple[int, int], layers: dict[int, Layer],
                     inputs: tuple[int, ...]) -> None:
        port = layers[source[0]].port(source[1])
        name = port.names[0] if port.names else layer.name
        seen = self.__dict__.setdefault("_output_names", set())  # a set: a scan per Result was quadratic
        if name in seen:
            raise InvalidModelError(f"two Results have the output name '{name}'")
        seen.add(name)
        self.outputs.append(name)
        self._results.append((name, inputs[0]))

    # ----------------------------------------------------------------------------------------------
    # Running

    def execute(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        dynamic = {s.name: tuple(np.shape(feeds[s.name])) for s in self.inputs if None in (s.shape or (None,))
                   and s.name in feeds}
        if dynamic and dynamic != getattr(self, "_checked_shapes", None):  # sizes against the budget, first
            infer_with_inputs(self.model, dynamic)
            self._checked_shapes = dynamic
        values: list[np.ndarray | None] = [None] * self._slot_count
        for slot, data in self._constants.items():
            values[slot] = data
        for name, slot in self._parameters:
            if name not in feeds:
                raise UsageError(f"missing input '{name}'", file=self.file)
            values[slot] = np.asarray(feeds[name])
        for step in self._steps:
            try:
                results = step.run([values[slot] for slot in step.inputs])
            except PoolirError as error:
                raise error.located(file=self.file, where=layer_label(step.layer.name, step.layer.id,
                                                                      step.layer.type)) from None
            except (ValueError, IndexError) as error:
                # numpy refusing a shape or an index at run time: the feeds' dims do not fit the graph.
                raise InvalidModelError(f"cannot execute with these input shapes: {error}", file=self.file,
                                        where=layer_label(step.layer.name, step.layer.id,
                                                          step.layer.type)) from None
            for slot, value in zip(step.outputs, results):
                values[slot] = value
        outputs = {}
        for name, slot in self._results:
            value = values[slot]
            # Results never alias a constant, a feed or a view of one: the caller owns what it gets.
            aliased = slot in self._constants or slot in self._feed_slots or not value.flags.owndata
            outputs[name] = value.copy() if aliased else value
        return outputs


# ==================================================================================================
# Layer builders. Each reads its attributes once and returns the closure that runs it.
# ==================================================================================================


# --- pooling ---------------------------------------------------------------------------------------

@_builder("AvgPool")
def _avg_pool(info: _LayerInfo) -> LayerFn:
    op = AvgPoolOp(info.layer)
    return lambda args: op(args[0])


@_builder("MaxPool")
def _max_pool(info: _LayerInfo) -> LayerFn:
    op = MaxPoolOp(info.layer, want_indices=1 in info.used_outputs)
    if op.has_indices and not op.want_indices:
        # The index output is not consumed: do not compute it, but keep the port filled with a
        # placeholder so the plan stays uniform.
        return lambda args: (*op(args[0]), None)
    return lambda args: op(args[0])


# --- elementwise -----------------------------------------------------------------------------------

def _broadcasting(info: _LayerInfo, function: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> LayerFn:
    mode = info.layer.attrs.get("auto_broadcast", "numpy")
    if mode not in ("numpy", "none"):
        raise UnsupportedError(f"auto_broadcast={mode!r} is not supported (numpy, none)")

    def run(args):
        a, b = args
        if a.dtype != b.dtype:
            raise InvalidModelError(f"input element types differ: {a.dtype} and {b.dtype}")
        if mode == "none" and a.shape != b.shape:
            raise InvalidModelError(f"auto_broadcast=none needs equal shapes, got {list(a.shape)} and "
                                    f"{list(b.shape)}")
        return (np.asarray(function(a, b)).astype(a.dtype, copy=False),)

    return run


def _in_work_precision(function):
    """Compute f16/bf16 in float32 and round once (as OpenVINO's CPU plugin does at f32 precision)."""
    def run(a, b):
        work = tensor_ops.accumulation_dtype(a.dtype)
        if work != a.dtype:
            return function(a.astype(work), b.astype(work)).astype(a.dtype)
        return function(a, b)
    return run


@_builder("Add")
def _add(info):
    return _broadcasting(info, _in_work_precision(np.add))


@_builder("Subtract")
def _subtract(info):
    return _broadcasting(info, _in_work_precision(np.subtract))


@_builder("Multiply")
def _multiply(info):
    return _broadcasting(info, _in_work_precision(np.multiply))


@_builder("Maximum")
def _maximum(info):
    return _broadcasting(info, np.maximum)


@_builder("Minimum")
def _minimum(info):
    return _broadcasting(info, np.minimum)


def _integer_power(a, b):
    # OpenVINO: i32 [2, 1, 2] ** [-1, -1, 2] -> [0, 1, 4]: a float power, truncated (numpy refuses
    # negative integer exponents).
    return np.trunc(np.power(a.astype(np.float64), b.astype(np.float64))).astype(a.dtype)


@_builder("Power")
def _power(info):
    return _broadcasting(info, lambda a, b: tensor_ops.power(a, b) if tensor_ops.is_float(a.dtype)
                         else _integer_power(a, b))


@_builder("Divide")
def _divide(info):
    # Integer division floors with m_pythondiv=true (the default) and truncates with false, as OpenVINO's
    # Divide-1 spec and its reference implementation say. OpenVINO is not consistent with itself here:
    # constant folding (the reference) floors, i32 [-7, 7] / [2, -2] -> [-4, -4], but the CPU plugin's
    # runtime kernel truncates, -> [-3, -3]. poolir follows the spec and the reference; the deviation is
    # pinned in tests/runtime/test_ir_executor.py. (poolir's own converter only divides non-negative indices.)
    floor = bool(info.layer.attrs.get("m_pythondiv", True))

    def divide(a, b):
        if tensor_ops.is_float(a.dtype):
            return _in_work_precision(np.divide)(a, b)
        return np.floor_divide(a, b) if floor else tensor_ops.divide(a, b)

    return _broadcasting(info, divide)


@_builder("FloorMod")
def _floor_mod(info):
    # FloorMod: the result has the sign of the divisor (Python's %), for integers and floats.
    return _broadcasting(info, lambda a, b: tensor_ops.modulo(a, b, fmod=False))


def _unary(function) -> Callable[[_LayerInfo], LayerFn]:
    return lambda info: (lambda args: (np.asarray(function(args[0])).astype(args[0].dtype, copy=False),))


def _abs(x):
    if x.dtype.kind == "i":
        # OpenVINO saturates: i8 abs(-128) -> 127 (numpy wraps to -128).
        return np.abs(x.astype(np.int64)).clip(max=np.iinfo(x.dtype).max)
    return np.abs(x)


_builder("Abs")(_unary(_abs))
_builder("Floor")(_unary(lambda x: np.floor(x) if tensor_ops.is_float(x.dtype) else x))
# Integer Sqrt rounds to nearest: OpenVINO i32 sqrt([2, 3, 26]) -> [1, 2, 5].
_builder("Sqrt")(_unary(lambda x: tensor_ops.unary_float(np.sqrt, x) if tensor_ops.is_float(x.dtype)
                        else np.rint(np.sqrt(x.astype(np.float64)))))


@_builder("Convert")
def _convert(info):
    dtype = dtype_of(info.layer.attrs.get("destination_type", ""))
    # float -> integer truncates toward zero (OpenVINO: [-1.7, 1.5, 2.5] -> [-1, 1, 2] for i32), as
    # numpy's astype does; to boolean: x != 0.
    if dtype == np.bool_:
        return lambda args: (args[0] != 0,)
    return lambda args: (args[0].astype(dtype),)


@_builder("ConvertLike")
def _convert_like(info):
    return lambda args: ((args[0] != 0) if args[1].dtype == np.bool_ else args[0].astype(args[1].dtype),)


# --- shapes and data movement ----------------------------------------------------------------------

def _int_list(array: np.ndarray, what: str) -> list[int]:
    if array.dtype.kind not in "iu":
        raise InvalidModelError(f"{what} must be integers, got element type {array.dtype}")
    return [int(v) for v in np.asarray(array).reshape(-1)]


def _axis(value: int, rank: int, what: str = "axis") -> int:
    if not -rank <= value < rank:
        raise InvalidModelError(f"{what} {value} is out of range for rank {rank}")
    return value % rank


@_builder("Reshape")
def _reshape(info):
    special_zero = info.layer.attrs.get("special_zero", False)

    def run(args):
        x, shape = args
        target = _int_list(shape, "the target shape")
        if special_zero:
            target = [x.shape[i] if v == 0 else v for i, v in enumerate(target)]
        if target.count(-1) > 1:
            raise InvalidModelError(f"target shape {target} has more than one -1")
        return (np.reshape(x, target),)

    return run


@_builder("Squeeze")
def _squeeze(info):
    allow_skip = info.layer.attrs.get("allow_axis_skip", False)

    def run(args):
        x = args[0]
        if len(args) < 2:
            return (np.reshape(x, [d for d in x.shape if d != 1]),)
        axes = sorted({_axis(a, x.ndim) for a in _int_list(args[1], "axes")})
        kept = [a for a in axes if x.shape[a] == 1]
        if len(kept) != len(axes) and not allow_skip:
            bad = [a for a in axes if x.shape[a] != 1]
            raise InvalidModelError(f"cannot squeeze axis {bad[0]} of size {x.shape[bad[0]]}")
        return (np.squeeze(x, axis=tuple(kept)),)

    return run


@_builder("Unsqueeze")
def _unsqueeze(info):
    def run(args):
        x = args[0]
        axes = _int_list(args[1], "axes")
        rank = x.ndim + len(axes)
        return (np.expand_dims(x, tuple(sorted(_axis(a, rank) for a in axes))),)

    return run


@_builder("Concat")
def _concat(info):
    axis = info.layer.attrs.get("axis", 0)
    return lambda args: (np.concatenate(args, axis=_axis(axis, args[0].ndim)),)


@_builder("Split")
def _split(info):
    parts = info.layer.attrs.get("num_splits", 1)

    def run(args):
        x = args[0]
        axis = _axis(_int_list(args[1], "axis")[0], x.ndim)
        if parts < 1 or x.shape[axis] % parts:
            raise InvalidModelError(f"axis {axis} of size {x.shape[axis]} cannot be split into {parts} equal parts")
        return tuple(np.split(x, parts, axis=axis))

    return run


@_builder("VariadicSplit")
def _variadic_split(info):
    def run(args):
        x = args[0]
        axis = _axis(_int_list(args[1], "axis")[0], x.ndim)
        lengths = _int_list(args[2], "split_lengths")
        if lengths.count(-1) == 1:
            lengths[lengths.index(-1)] = x.shape[axis] - (sum(lengths) + 1)
        if sum(lengths) != x.shape[axis] or min(lengths, default=0) < 0:
            raise InvalidModelError(f"split_lengths {lengths} do not add up to axis {axis} of size {x.shape[axis]}")
        return tuple(tensor_ops.split(x, axis, lengths))

    return run


@_builder("Transpose")
def _transpose(info):
    def run(args):
        x = args[0]
        order = _int_list(args[1], "the order")
        return (np.transpose(x, order if order else None),)  # an empty order reverses the axes

    return run


@_builder("Slice")
def _slice(info):
    def run(args):
        x = args[0]
        starts, stops, steps = (_int_list(a, n) for a, n in zip(args[1:4], ("start", "stop", "step")))
        axes = _int_list(args[4], "axes") if len(args) > 4 else list(range(len(starts)))
        if 0 in steps:
            raise InvalidModelError("step 0 is not allowed")
        index = [slice(None)] * x.ndim
        for axis, start, stop, step in zip(axes, starts, stops, steps):
            index[_axis(axis, x.ndim)] = slice(start, stop, step)  # Python slicing clamps like Slice-8
        return (x[tuple(index)],)

    return run


@_builder("StridedSlice")
def _strided_slice(info):
    layer = info.layer
    masks = {name: layer.attrs.get(name, ()) for name in
             ("begin_mask", "end_mask", "new_axis_mask", "shrink_axis_mask", "ellipsis_mask")}

    def flag(name: str, i: int) -> bool:
        values = masks[name]
        return i < len(values) and values[i] == 1

    def run(args):
        x = args[0]
        begins = _int_list(args[1], "begin")
        ends = _int_list(args[2], "end")
        strides = _int_list(args[3], "stride") if len(args) > 3 else [1] * len(begins)
        index: list = []
        for i, (begin, end, stride) in enumerate(zip(begins, ends, strides)):
            if flag("ellipsis_mask", i):
                index.append(Ellipsis)
            elif flag("new_axis_mask", i):
                index.append(np.newaxis)
            elif flag("shrink_axis_mask", i):
                index.append(begin)
            else:
                if stride == 0:
                    raise InvalidModelError("stride 0 is not allowed")
                # begin_mask / end_mask 1 means "ignore the value: from the start / to the end".
                index.append(slice(None if flag("begin_mask", i) else begin,
                                   None if flag("end_mask", i) else end, stride))
        return (np.asarray(x[tuple(index)]),)

    return run


@_builder("Gather")
def _gather(info):
    batch_dims = info.layer.attrs.get("batch_dims", 0)  # Gather-1 has none (ir/schema.py)

    def run(args):
        data, indices, axis_array = args
        axis = _axis(_int_list(axis_array, "axis")[0], data.ndim)
        batch = batch_dims % indices.ndim if batch_dims < 0 else batch_dims
        positions = indices.astype(np.int64)
        positions = np.where(positions < 0, positions + data.shape[axis], positions)  # negative counts back
        if batch == 0:
            return (np.take(data, positions, axis=axis),)
        # batch_dims > 0: gather independently in every batch element (one call per batch element).
        lead = data.shape[:batch]
        flat_data = data.reshape((-1,) + data.shape[batch:])
        flat_indices = positions.reshape((-1,) + positions.shape[batch:])
        parts = [np.take(d, i, axis=axis - batch) for d, i in zip(flat_data, flat_indices)]
        return (np.stack(parts).reshape(lead + parts[0].shape),)

    return run


@_builder("ShapeOf")
def _shape_of(info):
    dtype = np.dtype(np.int32) if info.layer.attrs.get("output_type", "i64") == "i32" else np.dtype(np.int64)
    return lambda args: (np.array(args[0].shape, dtype=dtype),)


@_builder("Broadcast")
def _broadcast(info):
    mode = info.layer.attrs.get("mode", "numpy")
    if mode not in ("numpy", "explicit", "bidirectional"):
        raise UnsupportedError(f"Broadcast mode {mode!r} is not supported (numpy, explicit, bidirectional)")

    def run(args):
        x = args[0]
        target = _int_list(args[1], "target_shape")
        if mode == "bidirectional":
            target = list(np.broadcast_shapes(x.shape, tuple(target)))
        elif mode == "explicit":
            axes = _int_list(args[2], "axes_mapping")
            shape = [1] * len(target)
            for source_axis, target_axis in enumerate(axes):
                shape[target_axis] = x.shape[source_axis]
            x = x.reshape(shape)
        return (np.broadcast_to(x, target).copy(),)

    return run


@_builder("Pad")
def _pad(info):
    mode = info.layer.attrs.get("pad_mode", "constant")
    numpy_mode = {"constant": "constant", "edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}.get(mode)
    if numpy_mode is None:
        raise InvalidModelError(f"pad_mode {mode!r} is not one of constant, edge, reflect, symmetric")

    def run(args):
        x = args[0]
        begins, ends = _int_list(args[1], "pads_begin"), _int_list(args[2], "pads_end")
        if len(begins) != x.ndim or len(ends) != x.ndim:
            raise InvalidModelError(f"pads have {len(begins)} and {len(ends)} values for an input of rank {x.ndim}")
        value = args[3].reshape(()) if len(args) > 3 and mode == "constant" else 0
        return (tensor_ops.pad(x, begins, ends, numpy_mode, value),)

    return run


_REDUCTIONS = {"ReduceMean": "mean", "ReduceMax": "max", "ReduceMin": "min", "ReduceSum": "sum",
               "ReduceProd": "prod", "ReduceL1": "l1", "ReduceL2": "l2"}


@_builder(*_REDUCTIONS)
def _reduce(info):
    kind = _REDUCTIONS[info.layer.type]
    keep_dims = info.layer.attrs.get("keep_dims", False)

    def run(args):
        x = args[0]
        axes = sorted({_axis(a, max(x.ndim, 1)) for a in _int_list(args[1], "axes")})
        if not axes:
            # OpenVINO: an empty axes list reduces nothing (unlike ONNX, where it reduces every axis).
            return (x.copy(),)
        return (np.asarray(tensor_ops.reduce(x, kind, axes, keep_dims)),)

    return run


__all__ = ["IRProgram", "supported_layer_types"]
