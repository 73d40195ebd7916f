"""ONNX If -> IR: the branch a constant condition takes, in its place; an If decided at run time, an OpenVINO If-8.

A constant condition is the TorchScript exporter's squeeze(dim) test, folded from static shapes: the IR gets the
branch it takes and no control flow. Otherwise the If becomes an If-8 (OpenVINO's ONNX frontend does the same):

- port 0 is the condition, a boolean scalar (a one-element condition of another rank is reshaped to one);
- each outer value a branch reads (an ONNX branch reads the scopes around it by name) is one input port, shared by
  both bodies when both read it, and a Parameter of each body that reads it; a constant a branch reads becomes a
  Const of that body instead;
- each branch is converted as a graph of its own (the driver's node conversion, with folding) into a body; its
  outputs are the body's Results, in the node's output order (an output that is a Parameter gets a copy);
- a body's Consts point into the model's .bin: the bodies' bytes are kept by the builder (GraphBuilder.keep_weights)
  and each body's Const offsets, nested bodies' included, shifted to where its bytes start;
- an output's element type is the branches' (they must agree: the ONNX If spec); a dim both give alike is static,
  another dynamic, and outputs of different ranks are refused (an IR port has one rank).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import onnx
from lxml import etree

from poolir.converter.onnx_to_ir.node import Value, layer_version, value_of
from poolir.ir.builder import GraphBuilder, OutputRef
from poolir.ir.errors import ConversionError, InvalidModelError
from poolir.ir.model import Dim, Model
from poolir.ir.shapes import TensorInfo
from poolir.ir.writer import serialize
from poolir.runtime.kernels.condition import condition_value
from poolir.runtime.onnx_ops.control_flow import check_branch
from poolir.runtime.onnx_subgraphs import free_names

# (builder, graph, values) -> the function that makes a constant a Const of that builder, after converting the
# graph's nodes into the builder (the driver's _convert_nodes); and the driver's clean-up of a built model.
ConvertGraph = Callable[[GraphBuilder, onnx.GraphProto, dict], Callable[[np.ndarray], Value]]
Finish = Callable[[Model], Model]


def if_outputs(builder: GraphBuilder, node: onnx.NodeProto, attrs: dict, values: dict, convert_graph: ConvertGraph,
               finish: Finish, ir_version: int) -> list[Value | np.ndarray]:
    """The node's outputs: the taken branch's values when the condition is a constant, else an If-8's."""
    condition = values.get(node.input[0]) if node.input and node.input[0] else None
    if condition is None:
        raise InvalidModelError("the If has no condition")
    if isinstance(condition, np.ndarray):
        branch = attrs["then_branch" if condition_value(condition) else "else_branch"]
        check_branch(branch, "the branch taken", len(node.output))
        for initializer in branch.initializer:
            values[initializer.name] = _array(initializer)
        convert_graph(builder, branch, values)
        if any(value.name not in values for value in branch.output):
            raise InvalidModelError("an output of the branch taken is produced by no node")
        return [values[value.name] for value in branch.output]
    if condition.element_type != "boolean":
        raise InvalidModelError(f"the condition of If is {condition.element_type}; it must be boolean")
    cond = condition.ref
    if condition.shape != ():
        if any(dim not in (1, None) for dim in condition.shape):
            raise InvalidModelError(f"the condition of If has shape {list(condition.shape)}; it must have one element")
        target = builder.const(np.zeros(0, np.int64))
        cond = builder.add("Reshape", "opset1", [cond, target], attrs={"special_zero": False},
                           name=f"{node.name or 'If'}/condition")[0]
    ports: dict[OutputRef, int] = {}  # outer value -> the If's input port reading it
    bodies = []
    for tag in ("then", "else"):
        bodies.append(_body(attrs[f"{tag}_branch"], tag, node, values, ports, convert_graph, finish, ir_version))
    infos = [_merged(node, index, then_info, else_info)
             for index, (then_info, else_info) in enumerate(zip(bodies[0][2], bodies[1][2]))]
    output_ports = {index: len(ports) + 1 + index for index in range(len(node.output))}
    extra = []
    for tag, (model, parameters, _, results) in zip(("then", "else"), bodies):
        xml, blob = serialize(model, ir_version)
        body = _shifted(etree.fromstring(xml), builder.keep_weights(blob))
        body.tag = f"{tag}_body"
        for key in list(body.attrib):
            del body.attrib[key]
        port_map = etree.Element(f"{tag}_port_map")
        for port, parameter in parameters.items():
            etree.SubElement(port_map, "input", external_port_id=str(port), internal_layer_id=str(parameter))
        for index, result in enumerate(results):
            etree.SubElement(port_map, "output", external_port_id=str(output_ports[index]),
                             internal_layer_id=str(result))
        extra.append((etree.tostring(port_map, encoding="unicode"), etree.tostring(body, encoding="unicode")))
    # OpenVINO's order of an If-8's children: the port maps, <input>, <output>, then the bodies.
    kept = [(0, extra[0][0]), (1, extra[1][0]), (4, extra[0][1]), (5, extra[1][1])]
    refs = builder.add_kept("If", "opset8", [cond, *sorted(ports, key=ports.get)], infos, kept, name=node.name or None)
    return [value_of(builder, ref) for ref in refs]


def _body(graph: onnx.GraphProto, tag: str, node: onnx.NodeProto, values: dict, ports: dict[OutputRef, int],
          convert_graph: ConvertGraph, finish: Finish, ir_version: int):
    """(body model, {If input port: Parameter id}, output infos, Result ids in output order) of one branch."""
    check_branch(graph, f"{tag}_branch", len(node.output))
    body = GraphBuilder(f"{tag}_body")
    body_values: dict = {}
    parameters: dict[int, int] = {}
    for name in free_names(graph):
        value = values.get(name)
        if value is None:
            raise InvalidModelError(f"the {tag}_branch reads '{name}', which no earlier node, input or initializer "
                                    "gives")
        if isinstance(value, np.ndarray):
            body_values[name] = value
            continue
        port = ports.setdefault(value.ref, len(ports) + 1)
        if port not in parameters:
            ref = body.parameter(f"{tag}_input_{port}", value.element_type, value.shape)
            parameters[port] = ref.layer_id
        body_values[name] = value_of(body, OutputRef(parameters[port], 0))
    for initializer in graph.initializer:
        body_values[initializer.name] = _array(initializer)
    constant = convert_graph(body, graph, body_values)
    results, infos, seen = [], [], set()
    parameter_ids = set(parameters.values())
    for output in graph.output:
        if output.name not in body_values:
            raise InvalidModelError(f"output '{output.name}' of the {tag}_branch is produced by no node")
        value = body_values[output.name]
        value = constant(value) if isinstance(value, np.ndarray) else value
        ref = value.ref
        if ref.layer_id in parameter_ids or ref in seen:  # a Result of its own needs a port of its own
            copy = {"destination_type": value.element_type}
            ref = body.add("Convert", layer_version("Convert", copy), [ref], attrs=copy)[0]
        seen.add(ref)
        results.append(body.result(ref))
        infos.append(body.info(ref))
    return finish(body.build(version=ir_version)), parameters, infos, results


def _merged(node: onnx.NodeProto, index: int, then_info: TensorInfo, else_info: TensorInfo) -> TensorInfo:
    name = node.output[index]
    if then_info.element_type != else_info.element_type:
        raise InvalidModelError(f"the branches give output '{name}' as {then_info.element_type} and "
                                f"{else_info.element_type}; ONNX requires one type")
    if len(then_info.shape) != len(else_info.shape):
        raise ConversionError(f"the branches give output '{name}' with ranks {len(then_info.shape)} and "
                              f"{len(else_info.shape)}; an IR port has one rank")
    dims = tuple(a if a.is_static and a == b else Dim.dynamic() for a, b in zip(then_info.shape, else_info.shape))
    return TensorInfo(then_info.element_type, dims)


def _shifted(body: etree._Element, base: int) -> etree._Element:
    """`body` with every Const's offset (in nested bodies too) moved `base` bytes on."""
    if base:
        for layer in body.iter("layer"):
            data = layer.find("data")
            if layer.get("type") == "Const" and data is not None and data.get("offset") is not None:
                data.set("offset", str(int(data.get("offset")) + base))
    return body


def _array(initializer: onnx.TensorProto) -> np.ndarray:
    try:
        return onnx.numpy_helper.to_array(initializer)
    except Exception as error:  # onnx raises what numpy raises: dims that do not match the data, ...
        raise InvalidModelError(f"initializer '{initializer.name}' cannot be read: {error}") from None


__all__ = ["if_outputs"]
