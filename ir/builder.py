"""GraphBuilder: build an `ir.Model` layer by layer, with shapes inferred as you go.

    b = GraphBuilder("net")
    x = b.parameter("x", "f32", (1, 3, 32, 32))        # ints; -1 or None for a dynamic dim
    k = b.const(np.asarray([0, 0, 1, 1], np.int64))
    (y,) = b.add("AvgPool", "opset1", [x], attrs={"kernel": (2, 2), "strides": (2, 2),
                 "pads_begin": (0, 0), "pads_end": (0, 0), "exclude-pad": True}, name="pool1")
    b.result(y, name="y")
    model = b.build()                                  # IR v11; every port's type and dims filled in

Each `add` checks the attributes against the schema and runs shape inference at once, so a wrong
attribute or an impossible shape fails where it is added. Layer ids follow creation order; port ids
follow OpenVINO's convention (inputs 0..n-1, then outputs n..); layer names are made unique.
Tensor names: a Parameter's output port is named after it; `output_names=` on `add` and the name given
to `result` name the port feeding a Result, so a run returns it under that name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

from poolir.ir.attributes import parse_dim
from poolir.ir.element_types import dtype_of, element_type_of
from poolir.ir.errors import PoolirError, UsageError, layer_label
from poolir.ir.infer import infer_layer, infer_model
from poolir.ir.model import IR_VERSIONS, IR_VERSIONS_TEXT, Dim, Edge, Layer, Model, Port, Shape, static_shape
from poolir.ir.schema import normalize_attrs, op_version
from poolir.ir.shapes import TensorInfo
from poolir.ir.validate import validate_graph


@dataclass(frozen=True, slots=True)
class OutputRef:
    """One output port of a layer being built."""

    layer_id: int
    port_id: int


def as_shape(shape: Shape | Sequence[int | None | Dim] | str) -> Shape:
    """A Shape from Dims, ints (-1 or None = dynamic) or OpenVINO's text ("?,3,1..8,8")."""
    if isinstance(shape, str):
        return tuple(parse_dim(part) for part in shape.split(",")) if shape.strip() else ()
    dims = []
    for dim in shape:
        if isinstance(dim, Dim):
            dims.append(dim)
        elif dim is None or int(dim) == -1:
            dims.append(Dim.dynamic())
        elif int(dim) < 0:
            raise UsageError(f"dimension {dim} is negative (use -1 or None for a dynamic dimension)")
        else:
            dims.append(Dim.static(int(dim)))
    return tuple(dims)


class GraphBuilder:
    def __init__(self, name: str = "model") -> None:
        self.name = name
        self._layers: list[Layer] = []
        self._edges: list[Edge] = []
        self._infos: dict[OutputRef, TensorInfo] = {}
        self._names: set[str] = set()
        self._tensor_names: set[str] = set()  # names given by name_tensor
        self._shape_sources: dict[OutputRef, OutputRef] = {}  # a ShapeOf's output -> the tensor it measures
        self._sources: list[tuple[OutputRef, ...]] = []  # per layer id: the outputs feeding its inputs, in order
        self._kept_weights = bytearray()  # what sub-graphs of kept layers point into (Model.weights)

    # -- layers ---------------------------------------------------------------------------------

    def parameter(self, name: str, element_type: str, shape: Shape | Sequence[int | None] | str) -> OutputRef:
        dtype_of(element_type)  # raises for an unknown element type
        attrs = {"shape": as_shape(shape), "element_type": element_type}
        (ref,) = self._append("Parameter", "opset1", [], attrs, name, exact_name=True)
        self._layer(ref.layer_id).outputs[0].names = (name,)
        return ref

    def const(self, value: Any, name: str | None = None) -> OutputRef:
        data = np.array(value)  # a copy: later changes by the caller do not leak into the model
        attrs = {"element_type": element_type_of(data.dtype), "shape": static_shape(data.shape),
                 "offset": 0, "size": data.nbytes}
        (ref,) = self._append("Const", "opset1", [], attrs, name, data=data)
        return ref

    def add(self, layer_type: str, version: str, inputs: Sequence[OutputRef], attrs: dict[str, Any] | None = None,
            name: str | None = None, output_names: Iterable[str | None] | None = None) -> list[OutputRef]:
        """Add a layer; returns its output ports. `output_names[i]` names output i (None: unnamed)."""
        refs = self._append(layer_type, version, list(inputs), dict(attrs or {}), name)
        for ref, tensor_name in zip(refs, output_names or ()):
            if tensor_name:
                self._port(ref).names = (tensor_name,)
        return refs

    def keep_weights(self, blob: bytes) -> int:
        """Add `blob` to the weights the sub-graphs of kept layers (add_kept) point into; returns its offset, which
        is its offset in the .bin the model is written with (ir.writer keeps Model.weights first)."""
        offset = len(self._kept_weights)
        self._kept_weights += blob
        return offset

    def add_kept(self, layer_type: str, version: str, inputs: Sequence[OutputRef], outputs: Sequence[TensorInfo],
                 extra_elements: list[tuple[int, str]], name: str | None = None) -> list[OutputRef]:
        """Add a layer of a type the schema does not know (an If-8 with its bodies): no attributes, its other child
        elements given verbatim (as ir.model.Layer.extra_elements), its outputs declared as `outputs`, which
        shape inference then trusts."""
        layer_id = len(self._layers)
        name = self._unique_name(name or f"{layer_type}_{layer_id}", False)
        for ref in inputs:
            if ref not in self._infos:
                raise UsageError(f"input {ref} is not an output of a layer of this builder")
        layer = Layer(layer_id, name, layer_type, version, {}, inputs=[Port(index) for index in range(len(inputs))])
        layer.outputs = [Port(len(inputs) + index, info.element_type, info.shape) for index, info in enumerate(outputs)]
        layer.extra_elements = list(extra_elements)
        return self._added(layer, list(inputs), list(outputs))

    def result(self, ref: OutputRef, name: str | None = None) -> int:
        """Add a Result fed by `ref`; `name` becomes the tensor name a run returns it under."""
        if name:
            port = self._port(ref)
            if self._layer(ref.layer_id).type == "Parameter":
                # The Parameter's own name is its input name; the output name can only be added after it.
                port.names = tuple(dict.fromkeys((*port.names, name)))
            else:
                port.names = (name, *(n for n in port.names if n != name))
        refs = self._append("Result", "opset1", [ref], {}, name)
        del refs
        return self._layers[-1].id

    def name_tensor(self, ref: OutputRef, name: str) -> None:
        """Give an unnamed output port the tensor name of the source value it computes (an ONNX tensor), so that
        a run, a peer or `poolir verify` can observe it by that name. A named port keeps its name (one port, one
        tensor: a pass-through such as Identity adds none); Parameters and Consts are never named this way, and
        a name the IR's `names` attribute would not read back (surrounding spaces) is skipped."""
        port = self._port(ref)
        if port.names or not name or name != name.strip() or name in self._tensor_names:
            return
        if self._layer(ref.layer_id).type in ("Parameter", "Const"):
            return
        port.names = (name,)
        self._tensor_names.add(name)

    def shape_source(self, ref: OutputRef) -> OutputRef | None:
        """The tensor whose dims `ref` holds, when `ref` is the output of a ShapeOf layer; else None."""
        return self._shape_sources.get(ref)

    def producer(self, ref: OutputRef) -> tuple[Layer, list[OutputRef]]:
        """The layer whose output `ref` is, and the outputs feeding its inputs in port order (read-only use)."""
        return self._layer(ref.layer_id), list(self._sources[ref.layer_id])

    def tensor_names(self, ref: OutputRef) -> tuple[str, ...]:
        """The tensor names an output port carries so far."""
        return self._port(ref).names

    def constant_value(self, ref: OutputRef) -> np.ndarray | None:
        """The data of a Const layer's output (any size, unlike `info(ref).value`), or None for another layer."""
        layer = self._layer(ref.layer_id)
        return layer.data if layer.type == "Const" else None

    def info(self, ref: OutputRef) -> TensorInfo:
        """The inferred element type and shape of an output port (what the next layer will see)."""
        return self._infos[ref]

    # -- building -------------------------------------------------------------------------------

    def build(self, version: int = 11) -> Model:
        """The finished model, validated, with every port's declared type and dims filled in."""
        if version not in IR_VERSIONS:
            raise UsageError(f"IR version {version!r} is not supported (supported: {IR_VERSIONS_TEXT})")
        model = Model(name=self.name, version=version,
                      layers=[_copy_layer(layer) for layer in self._layers], edges=list(self._edges),
                      weights=bytes(self._kept_weights) if self._kept_weights else None)
        validate_graph(model)
        inference = infer_model(model)
        for layer in model.layers:
            for port in layer.inputs:
                info = inference.inputs[(layer.id, port.id)]
                port.element_type, port.shape = info.element_type, info.shape
            for port in layer.outputs:
                info = inference.outputs[(layer.id, port.id)]
                port.element_type, port.shape = info.element_type, info.shape
        return model

    # -- internals ------------------------------------------------------------------------------

    def _append(self, layer_type: str, version: str, inputs: list[OutputRef], attrs: dict[str, Any],
                name: str | None, data: np.ndarray | None = None, exact_name: bool = False) -> list[OutputRef]:
        layer_id = len(self._layers)
        name = self._unique_name(name or f"{layer_type}_{layer_id}", exact_name)
        where = layer_label(name, layer_id, layer_type)
        try:
            schema = op_version(layer_type, version)
            attrs = normalize_attrs(schema, attrs)
            for ref in inputs:
                if ref not in self._infos:
                    raise UsageError(f"input {ref} is not an output of a layer of this builder")
            layer = Layer(layer_id, name, layer_type, version, attrs,
                          inputs=[Port(index) for index in range(len(inputs))], data=data)
            infos = infer_layer(layer, [self._infos[ref] for ref in inputs])
        except PoolirError as error:
            raise error.located(where=where) from None
        layer.outputs = [Port(len(inputs) + index) for index in range(len(infos))]
        return self._added(layer, inputs, infos)

    def _added(self, layer: Layer, inputs: list[OutputRef], infos: list[TensorInfo]) -> list[OutputRef]:
        layer_id, layer_type, name = layer.id, layer.type, layer.name
        self._layers.append(layer)
        self._sources.append(tuple(inputs))
        self._names.add(name)
        for port, ref in zip(layer.inputs, inputs):
            self._edges.append(Edge(ref.layer_id, ref.port_id, layer_id, port.id))
        refs = [OutputRef(layer_id, port.id) for port in layer.outputs]
        self._infos.update(zip(refs, infos))
        if layer_type == "ShapeOf":
            self._shape_sources[refs[0]] = inputs[0]
        return refs

    def _unique_name(self, name: str, exact: bool) -> str:
        if name not in self._names:
            return name
        if exact:
            raise UsageError(f"the name {name!r} is already used by another layer")
        suffix = 1
        while f"{name}_{suffix}" in self._names:
            suffix += 1
        return f"{name}_{suffix}"

    def _layer(self, layer_id: int) -> Layer:
        return self._layers[layer_id]

    def _port(self, ref: OutputRef) -> Port:
        return self._layers[ref.layer_id].port(ref.port_id)


def _copy_layer(layer: Layer) -> Layer:
    copy = Layer(layer.id, layer.name, layer.type, layer.version, dict(layer.attrs),
                 [Port(p.id, p.element_type, p.shape, p.names, p.rt_info) for p in layer.inputs],
                 [Port(p.id, p.element_type, p.shape, p.names, p.rt_info) for p in layer.outputs],
                 layer.data, layer.rt_info, dict(layer.element_attrs))
    copy.extra_elements = list(layer.extra_elements)
    return copy
