"""The ONNX graph being written from an IR model: names, nodes, initializers, and what a converter may ask
about a layer (its inputs' tensors, inferred types and shapes, constant values, consumers)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from onnx import helper, numpy_helper

from poolir.converter.element_types import onnx_element_type
from poolir.ir.errors import ConversionError
from poolir.ir.infer import Inference
from poolir.ir.shapes import TensorInfo
from poolir.ir.model import Layer, Model, Port, unnamed_port_key


@dataclass
class Context:
    model: Model
    inference: Inference
    opset: int
    in_body: bool = False  # converting an If-8 body
    nodes: list = field(default_factory=list)
    initializers: list = field(default_factory=list)
    graph_inputs: list = field(default_factory=list)  # (Parameter layer id, ValueInfoProto)
    graph_outputs: list = field(default_factory=list)  # (Result layer id, ValueInfoProto)
    tensors: dict[tuple[int, int], str] = field(default_factory=dict)  # IR output port -> ONNX tensor
    used: set[str] = field(default_factory=set)  # ONNX names taken
    reserved: set[str] = field(default_factory=set)  # IR tensor names, kept for their own tensors
    folded: set[int] = field(default_factory=set)  # layers already written as part of a fused node
    producers: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)
    consumers: dict[tuple[int, int], list[tuple[int, int]]] = field(default_factory=dict)
    by_id: dict[int, Layer] = field(default_factory=dict)
    output_names: set[str] = field(default_factory=set)  # the graph outputs' names so far
    # base -> the next suffix fresh() tries: n names from one base cost n tries, not n*n/2
    next_suffix: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_id = {layer.id: layer for layer in self.model.layers}
        for edge in self.model.edges:
            self.producers[(edge.to_layer, edge.to_port)] = (edge.from_layer, edge.from_port)
            self.consumers.setdefault((edge.from_layer, edge.from_port), []).append((edge.to_layer, edge.to_port))
        # Reserve every IR tensor name (inputs, outputs, named ports), so no generated name takes one.
        for layer in self.model.layers:
            self.reserved.update(name for port in layer.outputs for name in port.names)
            if layer.type in ("Parameter", "Result"):
                self.reserved.add(layer.name)

    # -- the requested opset ------------------------------------------------------------------------

    def check_opset(self, since: int | None, needs: str) -> None:
        """Refuse the layer when the requested opset is older than `since` (None: no opset has it).
        `needs` says what needs which opset, e.g. "integer floor division needs Mod, from opset 10"."""
        if since is None or self.opset < since:
            raise ConversionError(f"{needs} (requested opset {self.opset})")

    # -- names --------------------------------------------------------------------------------------

    def fresh(self, base: str) -> str:
        """A new ONNX name from `base`, avoiding taken and reserved names."""
        name, suffix = base, self.next_suffix.get(base, 1)
        if suffix > 1:
            name = f"{base}_{suffix - 1}"
        while name in self.used or name in self.reserved:
            name, suffix = f"{base}_{suffix}", suffix + 1
        self.next_suffix[base] = suffix
        self.used.add(name)
        return name

    def claim(self, name: str) -> str:
        """An IR tensor name for its own tensor; a fresh variant if it is taken already."""
        if name in self.used:
            return self.fresh(name)
        self.used.add(name)
        return name

    def name_output(self, layer: Layer, index: int) -> str:
        """A fresh ONNX tensor name for output `index` of `layer` (its IR tensor name when it has one)."""
        port = layer.outputs[index]
        tensor_name = port_name(port)
        name = self.claim(tensor_name) if tensor_name else self.fresh(unnamed_port_key(layer, index))
        self.tensors[(layer.id, port.id)] = name
        return name

    # -- what a converter asks about a layer ----------------------------------------------------------

    def input(self, layer: Layer, index: int) -> str:
        """The ONNX tensor feeding input `index` of `layer`."""
        return self.tensors[self.producers[(layer.id, layer.inputs[index].id)]]

    def input_info(self, layer: Layer, index: int) -> TensorInfo:
        return self.inference.inputs[(layer.id, layer.inputs[index].id)]

    def output_info(self, layer: Layer, index: int) -> TensorInfo:
        return self.inference.outputs[(layer.id, layer.outputs[index].id)]

    def is_used(self, layer: Layer, index: int) -> bool:
        return bool(self.consumers.get((layer.id, layer.outputs[index].id)))

    def single_consumer(self, layer: Layer) -> Layer | None:
        """The one layer reading `layer`'s only output, or None when there are several or none."""
        if len(layer.outputs) != 1:
            return None
        readers = self.consumers.get((layer.id, layer.outputs[0].id), [])
        return self.by_id[readers[0][0]] if len(readers) == 1 else None

    def info(self, ref: tuple[int, int]) -> TensorInfo:
        """The inferred type, dims and value of IR output `ref` (layer id, port id)."""
        return self.inference.outputs[ref]

    def producer(self, ref: tuple[int, int]) -> tuple[Layer, list[tuple[int, int]]]:
        """The layer computing output `ref` and the outputs feeding its inputs, in port order."""
        layer = self.by_id[ref[0]]
        return layer, [self.producers[(layer.id, port.id)] for port in layer.inputs]

    def input_ref(self, layer: Layer, index: int) -> tuple[int, int]:
        """The IR output feeding input `index` of `layer`."""
        return self.producers[(layer.id, layer.inputs[index].id)]

    def on_dynamic_path(self, layer: Layer) -> bool:
        """Whether OpenVINO's CPU plugin runs `layer` on its dynamic-shape path, which computes some layers otherwise
        (runtime.ir_ops.registry.LayerInfo.dynamic): an input dim is dynamic, or the layer is in an If body."""
        return self.in_body or any(not dim.is_static for i in range(len(layer.inputs))
                                   for dim in self.input_info(layer, i).shape)

    def from_input_boundary(self, layer: Layer, index: int) -> bool:
        """Whether a Parameter of the model (not of an If body) feeds input `index` straight
        (runtime.ir_ops.registry.LayerInfo.parameter_inputs)."""
        return not self.in_body and self.producer(self.input_ref(layer, index))[0].type == "Parameter"

    def constant(self, layer: Layer, index: int) -> np.ndarray | None:
        """The value of input `index` when inference knows it (a Const or folded shape arithmetic)."""
        return self.input_info(layer, index).value

    def constant_ints(self, layer: Layer, index: int, what: str) -> list[int]:
        """Input `index` as a list of ints; ConversionError naming `what` when it is not constant."""
        value = self.constant(layer, index)
        if value is None:
            raise ConversionError(f"the {what} are not constant")
        return [int(v) for v in np.ravel(value)]

    # -- nodes --------------------------------------------------------------------------------------

    def node(self, op_type: str, inputs: list[str], base: str, outputs: int = 1, **attrs) -> list[str]:
        names = [self.fresh(base if outputs == 1 else f"{base}:{i}") for i in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, names, name=self.fresh(f"{base}/{op_type}"), **attrs))
        return names

    def node_into(self, op_type: str, inputs: list[str], outputs: list[str], base: str, **attrs) -> None:
        self.nodes.append(helper.make_node(op_type, inputs, outputs, name=self.fresh(f"{base}/{op_type}"), **attrs))

    def initializer(self, array: np.ndarray, base: str) -> str:
        name = self.fresh(base)
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def int64s(self, values, base: str) -> str:
        return self.initializer(np.asarray(values, dtype=np.int64), base)


def port_name(port: Port) -> str | None:
    """A port's IR tensor name (the first of its names), if it has one."""
    return port.names[0] if port.names else None


def value_info(name: str, info: TensorInfo, dim_prefix: str | None = None):
    """An ONNX graph input/output declaration; dynamic dims named `{dim_prefix}_{axis}` (or left unnamed)."""
    dims = []
    for axis, dim in enumerate(info.shape):
        if dim.is_static:
            dims.append(dim.min)
        else:
            dims.append(f"{dim_prefix}_{axis}" if dim_prefix else None)
    return helper.make_tensor_value_info(name, onnx_element_type(info.element_type), dims)
