"""ONNX model -> IR model: the graph boundary (inputs, initializers, outputs) and one converter per node.

The node converters live in the family modules and are found through registry.CONVERTERS; what each
op becomes, and why OpenVINO computes it as ONNX does, is written next to its converter.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import onnx

from poolir.converter.element_types import ir_element_type
from poolir.converter.onnx_to_ir.node import OnnxNode, Value, layer_version
from poolir.converter.onnx_to_ir.registry import CONVERTERS
from poolir.ir.builder import GraphBuilder
from poolir.ir.errors import InvalidModelError, PoolirError, UnsupportedError, UsageError, node_label
from poolir.ir.model import Model
from poolir.runtime import onnx_ops
from poolir.runtime.onnx_model import default_opset, refuse_unsupported


def onnx_to_ir(onnx_model: onnx.ModelProto, *, input_shapes: Mapping[str, Sequence[int]] | None = None,
               ir_version: int = 11) -> Model:
    """Convert an ONNX model to an IR model with the same meaning as OpenVINO computes it.

    input_shapes: NAME -> dims (-1 for dynamic) replacing the declared shape of a graph input.
    Raises UnsupportedError (ops without a converter, listed together), InvalidModelError,
    ConversionError (no exact IR exists, naming the node and why) or UsageError (a bad input_shapes).
    """
    if ir_version not in (10, 11):
        raise UsageError(f"IR version {ir_version} is not supported (10 or 11)")
    graph = onnx_model.graph
    _refuse_undecodable_names(graph)
    opset = default_opset(onnx_model)
    refuse_unsupported(onnx_model, opset, lambda op_type: converts(op_type, opset), onnx_ops.first_opset,
                       doing="cannot convert to IR: ")
    builder = GraphBuilder(graph.name or "model")
    values: dict[str, Value] = {}
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
        values[name] = Value(builder.const(array), ir_element_type(init.data_type, f"initializer '{name}'"),
                             tuple(array.shape))
    for index, node in enumerate(graph.node):
        try:
            outputs = _convert_node(builder, node, index, opset, values)
        except PoolirError as error:
            raise error.located(where=node_label(node.name or f"#{index}", node.op_type)) from None
        for name, value in zip(node.output, outputs):
            if name:
                values[name] = value
    parameter_refs = {values[i.name].ref for i in graph.input if i.name not in initializers}
    named_refs: set = set()
    if not graph.output:  # the IR would have no Result, and no runtime runs a graph without one
        raise InvalidModelError("the graph declares no outputs, so there is nothing to convert")
    for graph_output in graph.output:
        if graph_output.name not in values:
            raise InvalidModelError(f"graph output '{graph_output.name}' is produced by no node")
        value = values[graph_output.name]
        ref = value.ref
        if ref in parameter_refs or ref in named_refs:
            # One IR port has one tensor name: an output that is a graph input (through Identity) or a second
            # name of one tensor gets its own port, from a Convert to the same type (a copy).
            copy = {"destination_type": value.element_type}
            ref = builder.add("Convert", layer_version("Convert", copy), [ref], attrs=copy,
                              name=f"{graph_output.name}/copy")[0]
        named_refs.add(ref)
        builder.result(ref, name=graph_output.name)
    return builder.build(version=ir_version)


def converts(op_type: str, opset: int) -> bool:
    """Whether a node of `op_type` in a model importing `opset` has an IR converter."""
    return op_type in CONVERTERS and onnx_ops.op_version(op_type, opset) is not None


def _convert_node(builder: GraphBuilder, node: onnx.NodeProto, index: int, opset: int,
                  values: dict[str, Value]) -> list[Value]:
    inputs = []
    for name in node.input:
        if not name:  # an omitted optional input (Clip's min): None in its position
            inputs.append(None)
            continue
        if name not in values:
            raise InvalidModelError(f"input '{name}' is produced by no earlier node, input or initializer")
        inputs.append(values[name])
    converter = CONVERTERS[node.op_type]
    return converter(OnnxNode(node, onnx_ops.op_version(node.op_type, opset), inputs,
                              node.name or f"{node.op_type}_{index}", builder))


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
                raise UsageError(f"--input-shape for {what}: {list(dims)} contradicts the declared "
                                 f"static shape {list(declared)}")
        declared = dims
    if declared is None:
        raise UnsupportedError(f"{what} has no declared shape (give one with --input-shape)")
    ref = builder.parameter(graph_input.name, element_type, declared)
    return Value(ref, element_type, tuple(None if v < 0 else v for v in declared))
