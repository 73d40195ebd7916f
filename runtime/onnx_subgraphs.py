"""Graphs inside nodes (If's then_branch and else_branch): what a node reads through them, and their nodes.

A subgraph may read any value of the scopes around it by name, without listing it as an input of the node that
holds it. Those implicit inputs are inputs all the same: a node runs after the nodes that compute them, and a
value read by a subgraph stays alive until that node ran (and is not overwritten in place before).
"""

from __future__ import annotations

from typing import Iterator

import onnx

_GRAPH_KINDS = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)


def subgraphs(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    """The graphs held by the node's attributes."""
    graphs: list[onnx.GraphProto] = []
    for attribute in node.attribute:
        if attribute.type == onnx.AttributeProto.GRAPH:
            graphs.append(attribute.g)
        elif attribute.type == onnx.AttributeProto.GRAPHS:
            graphs.extend(attribute.graphs)
    return graphs


def implicit_inputs(node: onnx.NodeProto) -> list[str]:
    """The outer values the node's subgraphs read (their free names), in first-read order."""
    found: dict[str, None] = {}
    for graph in subgraphs(node):
        for name in free_names(graph):
            found.setdefault(name)
    return list(found)


def node_reads(node: onnx.NodeProto) -> list[str]:
    """Every value the node reads: its inputs, then its implicit inputs (only nodes holding graphs have any)."""
    if not any(attribute.type in _GRAPH_KINDS for attribute in node.attribute):
        return list(node.input)
    return [*node.input, *(name for name in implicit_inputs(node) if name not in node.input)]


def nested_nodes(graph: onnx.GraphProto) -> Iterator[onnx.NodeProto]:
    """The graph's nodes and, after each node that holds graphs, the nodes of those graphs (depth first)."""
    for node in graph.node:
        yield node
        for inner in subgraphs(node):
            yield from nested_nodes(inner)


def free_names(graph: onnx.GraphProto) -> list[str]:
    """The values of outer scopes the graph reads by name, in first-read order."""
    defined = {"", *(value.name for value in graph.input), *(init.name for init in graph.initializer)}
    free: dict[str, None] = {}
    for node in graph.node:
        for name in node_reads(node):
            if name not in defined:
                free.setdefault(name)
        defined.update(node.output)
    for value in graph.output:  # an output may be an outer value itself
        if value.name not in defined:
            free.setdefault(value.name)
    return list(free)
