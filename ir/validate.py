"""Structural validation of an IR graph: edges, ports, port counts, cycles, attribute values.

Shape-dependent checks (output size >= 1, broadcast compatibility) live in the shape rules (ir/ops),
which ir/infer.py runs; together they establish the invariants documented in ir/model.py. Every
problem raises InvalidModelError or UnsupportedError naming the file and the layer.
"""

from __future__ import annotations

from collections import deque

from poolir.ir.errors import InvalidModelError, PoolirError, as_model_error
from poolir.ir.model import Layer, Model
from poolir.ir.schema import is_known, normalize_attrs, op_version


def validate_graph(model: Model) -> None:
    """Raise for any structural problem; return None when the graph is sound."""
    source = model.source
    by_id: dict[int, Layer] = {}
    for layer in model.layers:
        if layer.id in by_id:
            raise InvalidModelError(f"duplicate layer id {layer.id} (also used by {by_id[layer.id].label})",
                                    file=source, where=layer.label)
        by_id[layer.id] = layer
        if not is_known(layer):
            # Kept as read (ir.schema.is_known): raw string attributes, ports as declared; edges are checked below.
            if not all(isinstance(k, str) and isinstance(v, str) for k, v in layer.attrs.items()):
                raise InvalidModelError("the attributes of a layer of an unknown type must be strings",
                                        file=source, where=layer.label)
            continue
        try:
            schema = op_version(layer.type, layer.version)
            layer.attrs = normalize_attrs(schema, layer.attrs)
            schema.check_port_count("output", len(layer.outputs))
            schema.check_port_count("input", len(layer.inputs))
        except PoolirError as error:
            raise as_model_error(error).located(file=source, where=layer.label) from None
        if layer.type == "Const" and layer.data is None:
            raise InvalidModelError("the Const has no data", file=source, where=layer.label)

    fed: dict[tuple[int, int], object] = {}
    # Port ids per layer, once: a scan of the ports per edge made a Concat of n inputs quadratic.
    output_ids = {layer.id: {port.id for port in layer.outputs} for layer in model.layers}
    input_ids = {layer.id: {port.id for port in layer.inputs} for layer in model.layers}
    for edge in model.edges:
        text = (f"edge from layer {edge.from_layer} port {edge.from_port} "
                f"to layer {edge.to_layer} port {edge.to_port}")
        source_layer = by_id.get(edge.from_layer)
        target_layer = by_id.get(edge.to_layer)
        if source_layer is None or target_layer is None:
            missing = edge.from_layer if source_layer is None else edge.to_layer
            raise InvalidModelError(f"{text}: there is no layer with id {missing} (a dangling edge)", file=source)
        if edge.from_port not in output_ids[edge.from_layer]:
            raise InvalidModelError(f"{text}: port {edge.from_port} is not an output port of this layer "
                                    "(a dangling edge)", file=source, where=source_layer.label)
        if edge.to_port not in input_ids[edge.to_layer]:
            raise InvalidModelError(f"{text}: port {edge.to_port} is not an input port of this layer "
                                    "(a dangling edge)", file=source, where=target_layer.label)
        if (edge.to_layer, edge.to_port) in fed:
            raise InvalidModelError(f"{text}: input port {edge.to_port} already has an edge "
                                    "(two edges into one port)", file=source, where=target_layer.label)
        fed[(edge.to_layer, edge.to_port)] = edge
    for layer in model.layers:
        for port in layer.inputs:
            if (layer.id, port.id) not in fed:
                raise InvalidModelError(f"input port {port.id} is not connected", file=source, where=layer.label)
    check_names(model)
    topological_order(model)


def check_names(model: Model) -> None:
    """One reading of the graph's names for every command (run, convert, verify): a tensor name belongs to one
    output port, and each Parameter has its own input name (its port's first name, else its layer name)."""
    owners: dict[str, Layer] = {}
    for layer in model.layers:
        for port in layer.outputs:
            for name in port.names:
                owner = owners.setdefault(name, layer)
                if owner is not layer:
                    raise InvalidModelError(f"the tensor name '{name}' is also the name of an output of {owner.label}",
                                            file=model.source, where=layer.label)
    inputs: dict[str, Layer] = {}
    for layer in model.layers:
        if layer.type == "Parameter" and layer.outputs:
            name = layer.outputs[0].names[0] if layer.outputs[0].names else layer.name
            if inputs.setdefault(name, layer) is not layer:
                raise InvalidModelError(f"two Parameters have the input name '{name}'", file=model.source,
                                        where=layer.label)
    # Each Result's output name: the first name of the port feeding it, else the Result layer's name. OpenVINO
    # 2026.4 runs two Results on one named tensor, but gives both outputs the same names ({'y'} and {'y'}): no
    # name-keyed consumer (run's outputs, an .npz, ONNX graph outputs) can tell them apart, so every command
    # refuses the second, rather than convert renaming it and run refusing it.
    by_id = {layer.id: layer for layer in model.layers}
    feeding = {(edge.to_layer, edge.to_port): (edge.from_layer, edge.from_port) for edge in model.edges}
    outputs: dict[str, Layer] = {}
    for layer in model.layers:
        if layer.type == "Result" and layer.inputs and (layer.id, layer.inputs[0].id) in feeding:
            producer, port_id = feeding[(layer.id, layer.inputs[0].id)]
            port = next((p for p in by_id[producer].outputs if p.id == port_id), None)
            name = port.names[0] if port is not None and port.names else layer.name
            if outputs.setdefault(name, layer) is not layer:
                raise InvalidModelError(f"two Results have the output name '{name}'", file=model.source,
                                        where=layer.label)


def topological_order(model: Model) -> list[Layer]:
    """Layers so that every producer precedes its consumers (ties keep file order); raises on a cycle."""
    by_id = {layer.id: layer for layer in model.layers}
    pending = {layer.id: 0 for layer in model.layers}
    consumers: dict[int, list[int]] = {layer.id: [] for layer in model.layers}
    for edge in model.edges:
        pending[edge.to_layer] += 1
        consumers[edge.from_layer].append(edge.to_layer)
    position = {layer.id: index for index, layer in enumerate(model.layers)}
    ready = deque(layer.id for layer in model.layers if pending[layer.id] == 0)
    order: list[Layer] = []
    while ready:
        layer_id = ready.popleft()
        order.append(by_id[layer_id])
        for consumer in sorted(consumers[layer_id], key=position.__getitem__):
            pending[consumer] -= 1
            if pending[consumer] == 0:
                ready.append(consumer)
    if len(order) != len(model.layers):
        stuck = [layer for layer in model.layers if pending[layer.id] > 0]
        raise InvalidModelError(f"the graph has a cycle through {len(stuck)} layers",
                                file=model.source, where=stuck[0].label)
    return order
