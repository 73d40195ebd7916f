"""ONNX model -> IR model: the graph boundary (inputs, initializers, outputs) and one converter per node.

The node converters live in the family modules and are found through registry.CONVERTERS; what each
op becomes, and why OpenVINO computes it as ONNX does, is written next to its converter.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import replace
from typing import Callable, Mapping, Sequence

import numpy as np
import onnx

from poolir.converter.element_types import ir_element_type
from poolir.converter.onnx_to_ir.branches import if_outputs
from poolir.converter.onnx_to_ir.node import OnnxNode, Value, layer_version
from poolir.converter.onnx_to_ir.registry import BY_THE_DRIVER, CONVERTERS
from poolir.ir.builder import GraphBuilder, OutputRef
from poolir.ir.element_types import dtype_of, element_type_of
from poolir.ir.errors import InvalidModelError, PoolirError, UnsupportedError, UsageError, node_label
from poolir.ir.model import Layer, Model, shape_str
from poolir.runtime import onnx_ops
from poolir.runtime.onnx_external_data import refuse_external_data
from poolir.runtime.onnx_functions import inline_functions
from poolir.runtime.onnx_model import declared_output_types, default_opset, order_nodes, refuse_unsupported


# Constant folding computes a node whose inputs are all constant with the runtime's own ONNX adapters, when
# its output is at most this many elements (checked before computing, so a hostile graph cannot make the
# converter allocate a huge tensor); larger ones stay layers.
FOLD_LIMIT = 1_000_000
_FOLDABLE = frozenset(("Abs", "Neg", "Floor", "Ceil", "Sqrt", "Reciprocal", "Add", "Sub", "Mul", "Div", "Pow",
                       "Mod", "Max", "Min", "Sum", "Mean", "Cast", "CastLike", "Identity", "Transpose", "Reshape",
                       "Concat", "Split", "Slice", "Squeeze", "Unsqueeze", "Gather", "Shape", "Expand", "Constant",
                       "ConstantOfShape", "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                       # comparisons and logic: an If's condition from static shapes (Shape, Gather, Equal)
                       "Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "Not", "And", "Or", "Xor"))
# Ops whose folded output is a view of their constant input (numpy reshapes a contiguous array without copying):
# folding them allocates nothing, so FOLD_LIMIT does not apply (GoogLeNet's 1000x1024 classifier weight is
# reshaped before its Gemm; folded, the IR holds the weight once and no Reshape layer).
_VIEWS = frozenset(("Identity", "Reshape", "Squeeze", "Unsqueeze"))
_BROADCASTING = frozenset(("Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Sum", "Mean", "Equal", "Greater",
                           "Less", "GreaterOrEqual", "LessOrEqual", "And", "Or", "Xor"))


def onnx_to_ir(onnx_model: onnx.ModelProto, *, input_shapes: Mapping[str, Sequence[int]] | None = None,
               ir_version: int = 11, progress: Callable[[int, int], None] | None = None) -> Model:
    """Convert an ONNX model to an IR model with the same meaning as OpenVINO computes it.

    input_shapes: NAME -> dims (-1 for dynamic) replacing the declared shape of a graph input.
    Raises UnsupportedError (ops without a converter, listed together), InvalidModelError,
    ConversionError (no exact IR exists, naming the node and why) or UsageError (a bad input_shapes).
    progress(done, total) is called after each node (the command line shows it on stderr for a long run).

    Initializers become Consts, one per distinct content (identical bytes, type and dims share one Const);
    a graph input that also has an initializer (IR version 3 files list weights among the inputs) is that
    constant, not a Parameter. Nodes whose inputs are all constant are folded (FOLD_LIMIT), and Shape of
    a static shape is a Const.
    """
    if ir_version not in (10, 11):
        raise UsageError(f"IR version {ir_version} is not supported (10 or 11)")
    refuse_external_data(onnx_model)  # never resolved against the current folder (load_onnx loads it safely)
    onnx_model = inline_functions(onnx_model)
    graph = onnx_model.graph
    _refuse_undecodable_names(graph)
    opset = default_opset(onnx_model)
    refuse_unsupported(onnx_model, opset, lambda op_type: converts(op_type, opset), onnx_ops.first_opset,
                       doing="cannot convert to IR: ")
    builder = GraphBuilder(graph.name or "model")
    values: dict[str, Value | np.ndarray] = {}  # ONNX tensor name -> IR value, or a constant's array
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
    constants = _Constants(builder)
    for name, init in initializers.items():
        ir_element_type(init.data_type, f"initializer '{name}'")
        try:
            array = onnx.numpy_helper.to_array(init)
        except Exception as error:  # onnx raises what numpy raises: dims that do not match the data, ...
            raise InvalidModelError(f"initializer '{name}' cannot be read: {error}") from None
        values[name] = array  # a Const only where a layer or an output uses it (constants.value)
    _convert_nodes(builder, graph, opset, values, constants, ir_version, progress)
    parameter_refs = {values[i.name].ref for i in graph.input if i.name not in initializers}
    if not graph.output:  # the IR would have no Result, and no runtime runs a graph without one
        raise InvalidModelError("the graph declares no outputs, so there is nothing to convert")
    resolved = []
    declared = declared_output_types(graph)
    for graph_output in graph.output:
        if graph_output.name not in values:
            raise InvalidModelError(f"graph output '{graph_output.name}' is produced by no node")
        value = values[graph_output.name]
        value = constants.value(value) if isinstance(value, np.ndarray) else value
        dtype = declared.get(graph_output.name)
        if dtype is not None and dtype_of(value.element_type) != dtype:  # as a run refuses it
            raise InvalidModelError(f"graph output '{graph_output.name}' is declared {dtype}, and the graph computes "
                                    f"{dtype_of(value.element_type)}")
        resolved.append((graph_output.name, value))
    # One IR port, one tensor: of the outputs that are one tensor under several names (Identity), the port keeps
    # the output named after the tensor it already carries, else the first; the others get copies.
    keeper: dict = {}
    for name, value in resolved:
        if name in builder.tensor_names(value.ref):
            keeper[value.ref] = name
        else:
            keeper.setdefault(value.ref, name)
    for name, value in resolved:
        ref = value.ref
        if ref in parameter_refs or keeper[ref] != name:
            # An output that is a graph input (through Identity) or a second name of one tensor gets its own
            # port, from a Convert to the same type (a copy).
            copy = {"destination_type": value.element_type}
            ref = builder.add("Convert", layer_version("Convert", copy), [ref], attrs=copy, name=f"{name}/copy")[0]
        builder.result(ref, name=name)
    return _finished(builder.build(version=ir_version))


def _finished(model: Model) -> Model:
    return _without_dead_layers(_constants_shared(model))


def _constants_shared(model: Model) -> Model:
    """One Const per content: a family converter's own Consts (a bias reshaped to [1,C,1,1], an axes list) that
    equal another Const in element type, shape and bytes are read from that one instead (the writer already
    stores identical bytes once in the .bin; this keeps the graph to one layer per weight). A Const whose port
    carries a tensor name (a graph output) keeps its own layer."""
    candidates: dict[tuple, list[Layer]] = {}
    for layer in model.layers:
        if layer.type == "Const" and layer.data is not None and not layer.outputs[0].names:
            key = (layer.attrs["element_type"], layer.data.shape, layer.data.nbytes)
            candidates.setdefault(key, []).append(layer)
    replaced: dict[int, int] = {}  # duplicate Const id -> the id of the first Const with its content
    for group in candidates.values():
        if len(group) < 2:
            continue
        first: dict[bytes, int] = {}
        for layer in group:
            digest = hashlib.sha256(np.ascontiguousarray(layer.data).reshape(-1).view(np.uint8)).digest()
            kept = first.setdefault(digest, layer.id)
            if kept != layer.id:
                replaced[layer.id] = kept
    if replaced:
        model.edges = [replace(edge, from_layer=replaced.get(edge.from_layer, edge.from_layer))
                       for edge in model.edges]
    return model  # the duplicates are now unread: _without_dead_layers drops them


def _without_dead_layers(model: Model) -> Model:
    """The model without the layers no Result depends on (Parameters stay: they are the model's inputs).

    Every constant a node reads becomes a Const before its converter runs, and a converter that uses the
    array itself (a bias reshaped to [1,C,1,1], a Reshape target, a Pad's pads) leaves that Const unread;
    OpenVINO drops such layers when it reads the file, and so does this, so the IR holds what it computes."""
    inputs_of: dict[int, list[int]] = {}
    for edge in model.edges:
        inputs_of.setdefault(edge.to_layer, []).append(edge.from_layer)
    live = {layer.id for layer in model.layers if layer.type in ("Result", "Parameter")}
    stack = list(live)
    while stack:
        for source in inputs_of.get(stack.pop(), ()):
            if source not in live:
                live.add(source)
                stack.append(source)
    if len(live) == len(model.layers):
        return model
    model.layers = [layer for layer in model.layers if layer.id in live]
    model.edges = [edge for edge in model.edges if edge.from_layer in live and edge.to_layer in live]
    return model


class _Constants:
    """Const layers by content: the same bytes, element type and dims give one Const."""

    def __init__(self, builder: GraphBuilder) -> None:
        self.builder = builder
        self.refs: dict[tuple, OutputRef] = {}

    def value(self, array: np.ndarray) -> Value:
        array = np.require(array, requirements="C")
        key = (array.dtype.str, array.shape, hashlib.sha256(array.reshape(-1).view(np.uint8)).digest())
        ref = self.refs.get(key)
        if ref is None:
            ref = self.refs[key] = self.builder.const(array)
        return Value(ref, element_type_of(array.dtype), tuple(array.shape))


def _fold(node: onnx.NodeProto, opset: int, values: dict[str, Value | np.ndarray],
          constants: _Constants) -> list[np.ndarray] | None:
    """The node's outputs as Consts, computed by the runtime's ONNX adapter, when every input is constant and
    the output is small (FOLD_LIMIT); None: convert it to layers instead."""
    op_type = node.op_type
    if op_type not in _FOLDABLE or any(name not in values for name in node.input):
        return None
    version = onnx_ops.op_version(op_type, opset)
    arrays = [values[name] if isinstance(values[name], np.ndarray) else None for name in node.input]
    if op_type == "Shape":
        source = values[node.input[0]] if len(node.input) == 1 else None
        dims = source.shape if source is not None else (None,)
        if any(d is None for d in dims):
            return None
        arrays = [np.broadcast_to(np.zeros((), np.int8), dims)]  # Shape reads only the dims: a view, no memory
    elif any(a is None and name for a, name in zip(arrays, node.input)):
        return None
    try:
        attrs = onnx_ops.normalize_attributes(node, version)
        if op_type not in _VIEWS and _output_bound(op_type, attrs, arrays) > FOLD_LIMIT:
            return None
        context = onnx_ops.NodeContext(node, version, attrs, node.name, [a.dtype if a is not None else None
                                       for a in arrays], [a.shape if a is not None else None for a in arrays],
                                       arrays, len(node.output))
        step = onnx_ops.ADAPTERS[op_type](context)
        outputs = step(*(a for a in arrays if a is not None)) if all(n for n in node.input) else None
        if outputs is None:
            return None
        results = [np.asarray(out) for out in outputs]
        for out in results:
            element_type_of(out.dtype)  # a type IR cannot hold (a string Constant) is the converter's to refuse
    except (PoolirError, ValueError, TypeError, IndexError, ZeroDivisionError, OverflowError, KeyError):
        return None  # not foldable as given; the converter reports what is wrong with it
    return results


def _output_bound(op_type: str, attrs: dict, arrays: list[np.ndarray | None]) -> int:
    """An upper bound of the folded output's element count, computed without computing it."""
    present = [a for a in arrays if a is not None]
    largest = max((a.size for a in present), default=1)
    if op_type in _BROADCASTING:
        return math.prod(np.broadcast_shapes(*(a.shape for a in present)))
    if op_type == "Shape":
        return present[0].ndim
    if op_type == "ConstantOfShape":
        dims = [int(v) for v in present[0].reshape(-1)]
        return math.prod(dims) if all(d >= 0 for d in dims) else FOLD_LIMIT + 1
    if op_type == "Expand":
        return math.prod(np.broadcast_shapes(present[0].shape, tuple(int(v) for v in present[1].reshape(-1))))
    if op_type == "Gather":
        data, indices = present
        axis = attrs.get("axis", 0) % max(data.ndim, 1)
        return indices.size * (data.size // max(data.shape[axis], 1)) if data.ndim else FOLD_LIMIT + 1
    if op_type == "Concat":
        return sum(a.size for a in present)
    return largest  # the other foldable ops never produce more elements than their largest input


def converts(op_type: str, opset: int) -> bool:
    """Whether a node of `op_type` in a model importing `opset` has an IR converter (If: see _taken_branch)."""
    return (op_type in CONVERTERS or op_type in BY_THE_DRIVER) and onnx_ops.op_version(op_type, opset) is not None


def _convert_nodes(builder: GraphBuilder, graph: onnx.GraphProto, opset: int, values: dict[str, Value | np.ndarray],
                   constants: "_Constants", ir_version: int,
                   progress: Callable[[int, int], None] | None = None) -> None:
    """Convert (or fold) the graph's nodes in dependency order, adding their outputs to `values`."""
    available = {"", *values, *(value.name for value in graph.input)}

    def convert_graph(target: GraphBuilder, inner: onnx.GraphProto, inner_values: dict) -> Callable:
        """An If's branch: in place when its condition is a constant, else into a body of its own."""
        target_constants = constants if target is builder else _Constants(target)
        _convert_nodes(target, inner, opset, inner_values, target_constants, ir_version)
        return target_constants.value

    for done, (index, node) in enumerate(order_nodes(graph, available), start=1):  # any file order, as in run
        try:
            if node.op_type == "If":
                attrs = onnx_ops.normalize_attributes(node, onnx_ops.op_version("If", opset))
                outputs = if_outputs(builder, node, attrs, values, convert_graph, _finished, ir_version)
            else:
                outputs = _fold(node, opset, values, constants)
                if outputs is None:
                    outputs = _convert_node(builder, node, index, opset, values, constants)
        except PoolirError as error:
            raise error.located(where=node_label(node.name or f"#{index}", node.op_type)) from None
        for name, value in zip(node.output, outputs):
            if name:
                values[name] = value
                if not isinstance(value, np.ndarray):  # the IR port keeps the ONNX tensor name (verify matches by it)
                    builder.name_tensor(value.ref, name)
        if progress is not None:
            progress(done, len(graph.node))


def _convert_node(builder: GraphBuilder, node: onnx.NodeProto, index: int, opset: int,
                  values: dict[str, Value | np.ndarray], constants: "_Constants") -> list[Value]:
    inputs: list[Value | None] = []  # None: an optional input left out (an empty name)
    for name in node.input:
        if not name:  # an omitted optional input (Clip's min, Dropout's ratio): None in its position
            inputs.append(None)
            continue
        if name not in values:
            raise InvalidModelError(f"input '{name}' is produced by no earlier node, input or initializer")
        value = values[name]
        inputs.append(constants.value(value) if isinstance(value, np.ndarray) else value)
    version = onnx_ops.op_version(node.op_type, opset)
    _refuse_required_left_out(node, opset, version.label)
    while inputs and inputs[-1] is None:  # trailing optional inputs left out are just absent
        inputs.pop()
    converter = CONVERTERS[node.op_type]
    return converter(OnnxNode(node, version, inputs, node.name or f"{node.op_type}_{index}", builder))


def _refuse_required_left_out(node: onnx.NodeProto, opset: int, label: str) -> None:
    """An input the op's schema requires, given as an empty name: onnx's checker refuses it in a graph, but not in
    a model-local function's body, which the converter meets inlined (a Conv without its weight)."""
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, node.domain)
    except onnx.defs.SchemaError:
        return
    single = onnx.defs.OpSchema.FormalParameterOption.Single
    for position, name in enumerate(node.input):
        if not name and position < len(schema.inputs) and schema.inputs[position].option == single:
            raise InvalidModelError(f"input {position} of {label} is required but left out")


def _refuse_undecodable_names(graph: onnx.GraphProto) -> None:
    """protobuf returns a string field that is not valid UTF-8 as bytes; such a name can become neither an IR
    name nor, on the way back, an ONNX one."""
    named = [("the graph name", graph.name)]
    named += [(f"node #{index}: {what}", value) for index, node in enumerate(graph.node)
              for what, value in (("name", node.name), ("op_type", node.op_type),
                                  *(("an input", v) for v in node.input), *(("an output", v) for v in node.output))]
    named += [("a graph input", v.name) for v in graph.input] + [("a graph output", v.name) for v in graph.output]
    named += [("an initializer", v.name) for v in graph.initializer]
    for what, value in named:
        if isinstance(value, bytes):
            raise InvalidModelError(f"{what} {value!r} is not valid UTF-8 text")


def _parameter(builder: GraphBuilder, graph_input: onnx.ValueInfoProto,
               override: Sequence[int] | None) -> Value:
    what = f"input '{graph_input.name}'"
    tensor_type = graph_input.type.tensor_type
    if not graph_input.type.HasField("tensor_type"):
        raise UnsupportedError(f"{what} is not a tensor")
    element_type = ir_element_type(tensor_type.elem_type, what)
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
                raise UsageError(f"--input-shape for {what}: {shape_str(dims)} contradicts the declared "
                                 f"static shape {shape_str(declared)}")
        declared = dims
    if declared is None:
        raise UnsupportedError(f"{what} has no declared shape (give one with --input-shape)")
    ref = builder.parameter(graph_input.name, element_type, declared)
    return Value(ref, element_type, tuple(None if v < 0 else v for v in declared))
