"""Shape and element-type inference over a whole model, and the declared-vs-inferred check.

`infer_model(model)` walks the graph in topological order and computes, for every output port, its
element type, its shape and (when it is a small constant known at build time) its value. Values
come from Const layers and fold through the shape arithmetic OpenVINO's ONNX frontend emits
(ShapeOf of a static shape, Gather, Concat, Convert, Squeeze/Unsqueeze, Reshape, integer binary ops),
so a Reshape whose target is computed from ShapeOf still gets static output dims. Where a needed
value is unknown, the affected dims become dynamic. Each layer type's rule lives with its operator
family (ir/ops/<family>.py); this module is the driver.

Declared port dims are claims: `check(model)` compares them with the inferred ones and returns a
`ShapeWarning` for each disagreement instead of raising. Impossible graphs (incompatible broadcast,
kernel larger than the padded input, a Reshape that changes the element count) raise
`InvalidModelError` located at the file and layer.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from poolir.ir.errors import InvalidModelError, PoolirError, as_model_error
from poolir.ir.limits import check_inferred_size
from poolir.ir.model import Layer, Model, Shape, shape_str, static_shape
from poolir.ir.ops import SHAPE_RULES
from poolir.ir.schema import is_known, op_version
from poolir.ir.shapes import TensorInfo
from poolir.ir.validate import topological_order

__all__ = ["Inference", "ShapeWarning", "TensorInfo", "check", "infer_layer", "infer_model", "infer_with_inputs",
           ]


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


def infer_model(model: Model) -> Inference:
    """Infer every output port; raise InvalidModelError/UnsupportedError located at file and layer."""
    order = topological_order(model)
    producers = {(e.to_layer, e.to_port): (e.from_layer, e.from_port) for e in model.edges}
    outputs: dict[tuple[int, int], TensorInfo] = {}
    inputs: dict[tuple[int, int], TensorInfo] = {}
    warnings: list[ShapeWarning] = []
    by_id = {layer.id: layer for layer in model.layers}
    for layer in order:
        where = layer.label
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
                check_inferred_size(info.shape, info.element_type)
        except PoolirError as error:
            raise as_model_error(error).located(file=model.source, where=where) from None
        for port, info in zip(layer.outputs, results):
            outputs[(layer.id, port.id)] = info
            warnings.extend(_compare(model, where, port.id, port.shape, port.element_type, info))
    return Inference(order, outputs, inputs, warnings)


def check(model: Model) -> list[ShapeWarning]:
    """Declared-vs-inferred disagreements of every port (raises for impossible graphs)."""
    return infer_model(model).warnings


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
    """Output infos of one layer from its input infos. Raises PoolirError (unlocated).

    A layer of a type (or version) poolir does not know (ir.schema.is_known) has no rule: its declared
    output ports are trusted, dims and precision, and inspect says so."""
    if not is_known(layer):
        missing = [port.id for port in layer.outputs if port.element_type is None]
        if missing:
            raise InvalidModelError(f"output port {missing[0]} of a layer of a type poolir does not know declares no "
                                    "precision, so its element type cannot be inferred")
        return [TensorInfo(port.element_type, port.shape) for port in layer.outputs]
    op_version(layer.type, layer.version).check_port_count("input", len(inputs))
    return SHAPE_RULES[layer.type](layer, inputs)


def infer_with_inputs(model: Model, shapes: Mapping[str, Sequence[int]]) -> Inference:
    """Inference again with the Parameters named in `shapes` (by input name: the port's first name, else the
    layer's) fixed to those static shapes: every output is checked against the memory budget on the way, so
    a run with dynamic inputs is refused before it allocates what the feeds' shapes would make it."""
    layers = []
    for layer in model.layers:
        if layer.type == "Parameter" and layer.outputs:
            name = layer.outputs[0].names[0] if layer.outputs[0].names else layer.name
            if name in shapes:
                layer = replace(layer, attrs=dict(layer.attrs, shape=static_shape(shapes[name])))
        layers.append(layer)
    return infer_model(Model(model.name, model.version, layers, list(model.edges), model.rt_info, model.source))
