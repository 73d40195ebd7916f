"""An OpenVINO If-8 decided at run time -> an ONNX If whose branches are its bodies, each converted as a graph.

- A body's Parameters become the outer values feeding the If's input ports: an ONNX branch has no inputs and reads
  the scopes around it by name.
- Every other name of a branch (values, initializers, nodes, at any depth) is made fresh in the outer graph: ONNX
  requires names to be unique across scopes, and two bodies often share them.
- A branch output that a node of the branch does not compute (an outer value passed through, an initializer) is
  written by an Identity: onnxruntime refuses a branch output that is an outer value.
- Each body gives the If's outputs in the If's port order.

An If whose condition inference knows never gets here: ir.branches splices the body it takes.
"""

from __future__ import annotations

from typing import Callable

import onnx
from onnx import helper

from poolir.converter.ir_to_onnx.context import Context
from poolir.ir.branches import MAX_NESTING, body_depth, check_if_ports, fits, if_branch
from poolir.ir.errors import InvalidModelError, UnsupportedError
from poolir.ir.model import Layer
from poolir.runtime.onnx_subgraphs import subgraphs

GraphConverter = Callable[..., tuple[onnx.GraphProto, Context]]  # driver.convert_graph


def convert_if(context: Context, layer: Layer, convert_graph: GraphConverter) -> None:
    # input 0 is a boolean of one element, and port ids are positions
    check_if_ports(context.model, layer, context.input_info(layer, 0))
    if body_depth(layer) > MAX_NESTING:  # checked by the outermost If: the ONNX file could not be read back
        raise UnsupportedError(f"If bodies nested more than {MAX_NESTING} deep")
    branches = {}
    for branch in ("then", "else"):
        taken = if_branch(context.model, layer, branch, every_output=True)
        graph, body = convert_graph(taken.body, context.opset, in_body=True)
        feeding = {parameter: port for port, parameter in taken.inputs.items()}
        outer = {}
        for parameter, info in body.graph_inputs:
            index = feeding[parameter]
            declared = body.inference.output(parameter, taken.body.layer(parameter).outputs[0].id)
            given = context.input_info(layer, index)
            if not fits(given, declared):
                raise InvalidModelError(f"the {branch}_body's Parameter {parameter} takes {declared.text()}, and its "
                                        f"input port holds {given.text()}")
            outer[info.name] = context.input(layer, index)
        given = {result: info for result, info in body.graph_outputs}
        for index, port in enumerate(layer.outputs):
            result = taken.outputs[port.id]
            computed = body.inference.inputs[(result, taken.body.layer(result).inputs[0].id)]
            if not fits(computed, context.output_info(layer, index)):
                raise InvalidModelError(f"the {branch}_body computes output port {port.id} as {computed.text()}, and "
                                        f"the If declares {context.output_info(layer, index).text()}")
        outputs = [given[taken.outputs[port.id]] for port in layer.outputs]
        branches[f"{branch}_branch"] = _branch_graph(context, graph, outer, outputs, f"{layer.name}/{branch}")
    names = [context.name_output(layer, index) for index in range(len(layer.outputs))]
    context.node_into("If", [context.input(layer, 0)], names, layer.name, **branches)


def _branch_graph(context: Context, graph: onnx.GraphProto, outer: dict[str, str], outputs: list,
                  name: str) -> onnx.GraphProto:
    renamed = {**{defined: context.fresh(defined) for defined in _defined_names(graph) if defined not in outer},
               **outer}
    branch = onnx.GraphProto()
    branch.CopyFrom(graph)
    _rename(branch, renamed, context)
    del branch.input[:]
    computed = {output for node in branch.node for output in node.output}
    written = set()
    del branch.output[:]
    for info in outputs:
        value = renamed.get(info.name, info.name)
        if value not in computed or value in written:
            passed, value = value, context.fresh(f"{name}/{info.name}")
            branch.node.append(helper.make_node("Identity", [passed], [value], name=context.fresh(f"{name}/Identity")))
        written.add(value)
        output = branch.output.add()
        output.CopyFrom(info)
        output.name = value
    branch.name = name
    return branch


def _defined_names(graph: onnx.GraphProto) -> set[str]:
    """Every value name the graph and the graphs inside it define (inputs, initializers, node outputs)."""
    names = {value.name for value in graph.input} | {tensor.name for tensor in graph.initializer}
    for node in graph.node:
        names.update(output for output in node.output if output)
        for inner in subgraphs(node):
            names |= _defined_names(inner)
    return names


def _rename(graph: onnx.GraphProto, renamed: dict[str, str], context: Context) -> None:
    for tensor in graph.initializer:
        tensor.name = renamed.get(tensor.name, tensor.name)
    for value in (*graph.input, *graph.output, *graph.value_info):
        value.name = renamed.get(value.name, value.name)
    for node in graph.node:
        node.input[:] = [renamed.get(name, name) for name in node.input]
        node.output[:] = [renamed.get(name, name) for name in node.output]
        node.name = context.fresh(node.name or node.op_type)
        for inner in subgraphs(node):
            _rename(inner, renamed, context)


__all__ = ["convert_if"]
