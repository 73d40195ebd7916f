"""An IR model described: inferred dims from ir.infer (OpenVINO's shape rules), declared dims from the file."""

from __future__ import annotations

from typing import Any

from poolir import ir
from poolir.converter.describe.description import (LayerDescription, ModelDescription, PortDescription,
                                                   TensorDescription)
from poolir.ir.branches import is_if
from poolir.ir.model import Dim, Model, Shape, shape_str

# A Const of at most this many elements shows its values (an LpPool's p, a reduction's axes).
SHOWN_CONST_ELEMENTS = 16


def _dims(shape: Shape | None) -> list[int | str] | None:
    if shape is None:
        return None
    return [dim.min if dim.is_static else str(dim) for dim in shape]


def describe_ir(model: Model) -> ModelDescription:
    inference = ir.infer_model(model)
    producers = {(e.to_layer, e.to_port): (e.from_layer, e.from_port) for e in model.edges}

    def tensor(layer_id: int, port_id: int, fallback_name: str) -> TensorDescription:
        """A graph input or output: the port's tensor name (else the layer's), its inferred type and dims."""
        port = model.layer(layer_id).port(port_id)
        info = inference.output(layer_id, port_id)
        return TensorDescription(port.names[0] if port.names else fallback_name, info.element_type, _dims(info.shape))

    inputs = [tensor(layer.id, layer.outputs[0].id, layer.name) for layer in model.parameters]
    outputs = [tensor(*producers[(layer.id, layer.inputs[0].id)], layer.name) for layer in model.results]
    layers = []
    for layer in model.layers:
        attrs = {name: _json_value(value) for name, value in layer.attrs.items()}
        description = LayerDescription(layer.id, layer.name, layer.type, layer.version, attrs,
                                       known=ir.schema.is_known(layer), branches=is_if(layer))
        if layer.data is not None and layer.data.size <= SHOWN_CONST_ELEMENTS:
            kind = layer.data.dtype.kind  # bfloat16 has kind "V": it is a float too
            description.value = layer.data.astype(bool if kind == "b" else int if kind in "iu" else float).tolist()
        for port in layer.outputs:
            info = inference.output(layer.id, port.id)
            description.outputs.append(PortDescription(port.id, port.names[0] if port.names else None,
                                                       info.element_type, _dims(port.shape), _dims(info.shape)))
        layers.append(description)
    return ModelDescription(model.source or "<memory>", "ir", model.name, f"IR v{model.version}", inputs, outputs,
                            layers, [str(w).removeprefix(f"{model.source}: ") for w in inference.warnings])


def _json_value(value: Any) -> Any:
    if isinstance(value, tuple):
        if not value or isinstance(value[0], Dim):
            return shape_str(value)  # Parameter/Const shapes as text: "[?,3,1..8,8]", "[]" for a scalar
        return [_json_value(v) for v in value]
    if isinstance(value, Dim):
        return str(value)
    return value
