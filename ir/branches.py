"""OpenVINO's If-8 with a condition inference knows: replaced, for running and converting, by the body it takes.

OpenVINO's ONNX frontend keeps an ONNX If as an If-8 layer with two bodies, even when the condition is computed
from static shapes (PyTorch's TorchScript export of nn.LocalResponseNorm from opset 11: ShapeOf, Gather, Equal).
The reader keeps such a layer as it stands (its bodies and port maps verbatim, written back unchanged); run and
convert read it through `with_constant_branches`, which splices the taken body into a copy of the graph:

- a body's Parameter `internal_layer_id` stands for the If's input port `external_port_id` (its port map), so
  the body reads what feeds that port;
- a body's Result stands for the If's output port of its `external_port_id`: what reads that port reads what
  feeds the Result instead, and the port's tensor names move to that producer's port;
- body layers get ids after the graph's own; the body is read with the reader's own checks (its Consts point
  into the model's .bin: ir.model.Model.weights).

The condition is known when inference knows its value; with a dynamic batch that includes a comparison of a static
dim (inference carries the known elements of a shape vector: ir.shapes.TensorInfo.elements). An If whose condition
is known only at run time stays: a run executes the body its condition takes (runtime.ir_if), and IR -> ONNX writes
an ONNX If (converter.ir_to_onnx.branches); both read its bodies through `if_branch`.
"""

from __future__ import annotations

import dataclasses
import math

from lxml import etree

from poolir.ir.errors import InvalidModelError, layer_label
from poolir.ir.infer import infer_model
from poolir.ir.model import Edge, Layer, Model, Port, shape_str
from poolir.ir.reader import parse_model
from poolir.ir.shapes import TensorInfo

# How deep If bodies may nest (a body holding an If holding a body: 2): the deepest ONNX If protobuf reads back
# (nodes, attributes and graphs are messages in messages; 32 levels exceed its depth limit), so every If-8 poolir runs
# converts to an ONNX file that can be read.
MAX_NESTING = 31


def is_if(layer: Layer) -> bool:
    """An OpenVINO If-8 with its bodies (kept by the reader as the layer's extra elements)."""
    return layer.type == "If" and layer.version == "opset8" and bool(layer.extra_elements)


@dataclasses.dataclass(frozen=True)
class Branch:
    """One body of an If-8, read with the reader's checks, and its port map, checked against the body."""

    body: Model
    inputs: dict[int, int]   # the If's input port -> the body's Parameter id
    outputs: dict[int, int]  # the If's output port -> the body's Result id


def with_constant_branches(model: Model) -> Model:
    """`model` itself when no If-8 has a condition inference knows, else a copy with each such If replaced by the
    body its condition takes (repeated: a body may hold an If of its own)."""
    for _ in range(64):  # a body inside a body: each round takes one level; a deeper nesting stays refused
        candidates = [layer for layer in model.layers if is_if(layer) and layer.inputs]
        if not candidates:
            return model
        inference = infer_model(model)
        taken = []
        for layer in candidates:
            producer = model.producer(layer.id, layer.inputs[0].id)
            condition = inference.output(producer.from_layer, producer.from_port) if producer else None
            check_if_ports(model, layer, condition)
            value = condition.value if condition is not None else None
            if value is not None and value.size == 1:
                taken.append((layer, "then" if bool(value.reshape(-1)[0]) else "else"))
        if not taken:
            return model
        for layer, branch in taken:
            model = _spliced(model, layer, branch)
    return model


def body_depth(layer: Layer) -> int:
    """How deep the If's bodies nest, itself included (a body holding an If holding a body: 2)."""
    depth = 0
    for _, text in layer.extra_elements:
        root = etree.fromstring(text)
        for body in root.iter("then_body", "else_body"):
            depth = max(depth, 1 + sum(1 for _ in body.iterancestors("then_body", "else_body")))
    return depth


def check_if_ports(model: Model, layer: Layer, condition: TensorInfo | None = None) -> None:
    """OpenVINO reads an If-8's ports by position, the condition first: refuse ports numbered otherwise (inputs
    0..n-1, then outputs n..), and a condition OpenVINO refuses: not boolean, of rank above 1 ("Rank of If condition
    input must be equal to 0 or 1"), or of static dims holding other than one element. The condition is its port's
    declaration, and `condition` (what inference says feeds it) when given."""
    where = layer_label(layer.name, layer.id, layer.type)
    ids = [port.id for port in (*layer.inputs, *layer.outputs)]
    if not layer.inputs or ids != list(range(len(ids))):
        raise InvalidModelError(f"the If's ports are numbered {ids}; OpenVINO reads them by position (the condition "
                                "0, the other inputs 1.., then the outputs)", file=model.source, where=where)
    declared = layer.inputs[0]
    for element_type, dims in ((declared.element_type, declared.shape),
                               *(((condition.element_type, condition.shape),) if condition is not None else ())):
        if (element_type not in (None, "boolean") or len(dims) > 1
                or (all(dim.is_static for dim in dims) and math.prod(dim.value for dim in dims) != 1)):
            raise InvalidModelError(f"the If's condition is {element_type} {shape_str(dims)}; it must be a boolean "
                                    "scalar or one-element vector", file=model.source, where=where)


def if_branch(model: Model, layer: Layer, branch: str, *, every_output: bool = False) -> Branch:
    """The `branch` ("then" or "else") body of the If-8 `layer` of `model`. Refused: a port map naming a port the
    layer does not have, or a body layer that is not a Parameter (inputs) or a Result (outputs); a Parameter no
    port feeds; the condition's port feeding a Parameter; with `every_output`, an output port the body gives no
    value for (a run and an ONNX If need them all; a splice only those read)."""
    where = layer_label(layer.name, layer.id, layer.type)
    parts = {etree.fromstring(text).tag: text for _, text in layer.extra_elements}
    if f"{branch}_body" not in parts or f"{branch}_port_map" not in parts:
        raise InvalidModelError(f"the If has no <{branch}_body> or <{branch}_port_map>", file=model.source,
                                where=where)
    body = _body(model, parts[f"{branch}_body"], f"{model.source}: {where}: {branch}_body")
    inputs, outputs = _port_map(parts[f"{branch}_port_map"], model.source, where)
    body_types = {body_layer.id: body_layer.type for body_layer in body.layers}
    if not set(inputs.values()) | set(outputs.values()) <= set(body_types):
        raise InvalidModelError(f"the {branch}_port_map names a layer its body does not have", file=model.source,
                                where=where)
    for entries, kind in ((inputs, "Parameter"), (outputs, "Result")):
        wrong = [internal for internal in entries.values() if body_types[internal] != kind]
        if wrong:
            raise InvalidModelError(f"the {branch}_port_map maps a port to layer {wrong[0]} of its body, which is a "
                                    f"{body_types[wrong[0]]}, not a {kind}", file=model.source, where=where)
    unfed = [body_layer.id for body_layer in body.layers
             if body_layer.type == "Parameter" and body_layer.id not in set(inputs.values())]
    if unfed:
        raise InvalidModelError(f"the {branch}_body's Parameter {unfed[0]} is fed by no input port of the If",
                                file=model.source, where=where)
    if 0 in inputs:
        raise InvalidModelError(f"the {branch}_port_map feeds a Parameter from port 0, the condition",
                                file=model.source, where=where)
    for entries, ports, kind in ((inputs, layer.inputs, "input"), (outputs, layer.outputs, "output")):
        missing = sorted(set(entries) - {port.id for port in ports})
        if missing:
            raise InvalidModelError(f"the {branch}_port_map maps {kind} port {missing[0]}, which the If does not "
                                    "have", file=model.source, where=where)
    ungiven = [port.id for port in layer.outputs if port.id not in outputs] if every_output else []
    if ungiven:
        raise InvalidModelError(f"the {branch}_body gives no value for output port {ungiven[0]} of the If",
                                file=model.source, where=where)
    return Branch(body, inputs, outputs)


def fits(given: TensorInfo, declared: TensorInfo) -> bool:
    """Whether a tensor fits a declaration of a body's Parameter or the If's output port: the same element type and
    rank, and each dim both know the same (what a body computes is what inference planned after the If)."""
    return (given.element_type == declared.element_type and len(given.shape) == len(declared.shape)
            and all(a == b for a, b in zip(given.shape, declared.shape) if a.is_static and b.is_static))


def _spliced(model: Model, layer: Layer, branch: str) -> Model:
    where = layer_label(layer.name, layer.id, layer.type)
    if_branch(model, layer, "else" if branch == "then" else "then")  # not taken, but read with the same checks
    taken = if_branch(model, layer, branch)
    body, inputs, outputs = taken.body, taken.inputs, taken.outputs
    base = max(existing.id for existing in model.layers) + 1
    outer = {port: model.producer(layer.id, port) for port in inputs}
    # What the body's Parameters stand for (the outer producers), and what its Results stand for (their producers).
    sources: dict[tuple[int, int], tuple[int, int]] = {}
    for port, parameter in inputs.items():
        edge = outer[port]
        if edge is None:
            raise InvalidModelError(f"input port {port} of the If is not connected", file=model.source, where=where)
        sources[(parameter, body.layer(parameter).outputs[0].id)] = (edge.from_layer, edge.from_port)

    def source(body_layer: int, body_port: int) -> tuple[int, int]:
        return sources.get((body_layer, body_port), (base + body_layer, body_port))

    results = {}
    for port, result in outputs.items():
        edge = body.producer(result, body.layer(result).inputs[0].id)
        results[port] = source(edge.from_layer, edge.from_port)
    kept = [body_layer for body_layer in body.layers if body_layer.type not in ("Parameter", "Result")]
    layers = [existing for existing in model.layers if existing.id != layer.id]
    copies = {}
    for body_layer in kept:
        copy = dataclasses.replace(body_layer, id=base + body_layer.id, outputs=[dataclasses.replace(port) for port
                                                                                 in body_layer.outputs])
        copies[copy.id] = copy
        layers.append(copy)
    edges = [edge for edge in model.edges if edge.to_layer != layer.id and edge.from_layer != layer.id]
    for edge in body.edges:
        if body.layer(edge.to_layer).type == "Result":
            continue
        from_layer, from_port = source(edge.from_layer, edge.from_port)
        edges.append(Edge(from_layer, from_port, base + edge.to_layer, edge.to_port))
    # The If's tensor names move to what computes each output, first (OpenVINO names the output by them); a value
    # the body passes through from outside it gets a copy to carry them, or the output would take that value's name.
    next_id = base + max(body_layer.id for body_layer in body.layers) + 1
    for port, (from_layer, from_port) in list(results.items()):
        declared = layer.port(port)
        if not declared.names:
            continue
        if from_layer in copies:
            target = copies[from_layer].port(from_port)
            target.names = tuple(dict.fromkeys((*declared.names, *target.names)))
        elif declared.element_type is not None:
            copy = Layer(next_id, f"{layer.name}:{port}", "Convert", "opset1",
                         {"destination_type": declared.element_type},
                         inputs=[Port(0, declared.element_type, declared.shape)],
                         outputs=[Port(1, declared.element_type, declared.shape, declared.names)])
            layers.append(copy)
            edges.append(Edge(from_layer, from_port, next_id, 0))
            results[port] = (next_id, 1)
            next_id += 1
    for edge in model.edges:
        if edge.from_layer == layer.id:
            if edge.from_port not in results:
                raise InvalidModelError(f"output port {edge.from_port} of the If is read, but the {branch} body does "
                                        "not compute it", file=model.source, where=where)
            from_layer, from_port = results[edge.from_port]
            edges.append(Edge(from_layer, from_port, edge.to_layer, edge.to_port))
    return dataclasses.replace(model, layers=layers, edges=edges)


def _body(model: Model, text: str, source: str) -> Model:
    element = etree.fromstring(text)
    element.tag = "net"
    element.set("version", str(model.version))
    return parse_model(etree.tostring(element), model.weights, source=source)


def _port_map(text: str, source, where: str) -> tuple[dict[int, int], dict[int, int]]:
    """(external input port -> internal Parameter id, external output port -> internal Result id)."""
    inputs, outputs = {}, {}
    for entry in etree.fromstring(text):
        try:
            external, internal = int(entry.get("external_port_id")), int(entry.get("internal_layer_id"))
        except (TypeError, ValueError):
            raise InvalidModelError("a port map entry without integer external_port_id and internal_layer_id",
                                    file=source, where=where) from None
        (inputs if entry.tag == "input" else outputs)[external] = internal
    return inputs, outputs


__all__ = ["MAX_NESTING", "Branch", "body_depth", "check_if_ports", "fits", "if_branch", "is_if",
           "with_constant_branches"]
