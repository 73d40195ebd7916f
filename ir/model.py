"""The IR data model: Model, Layer, Port, Edge and dimensions.

Invariants (established by `ir.read_model` and `ir.validate`, relied on everywhere else):
- layer ids are unique; port ids are unique within a layer across its inputs and outputs;
- every edge joins an existing output port to an existing input port; an input port has at most one edge;
- `Layer.attrs` holds typed values (tuples of int, str, bool, float) keyed by the XML attribute
  name, exactly as the layer's schema in `ir.schema` declares them (`exclude-pad` keeps its hyphen);
- a Const layer's `data` is a numpy array of its element type and shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from poolir.ir.errors import layer_label

# The IR versions (the `version` of <net>) poolir reads, builds and writes.
IR_VERSIONS = (10, 11)
IR_VERSIONS_TEXT = ", ".join(map(str, IR_VERSIONS))  # for messages: "supported: 10, 11"


@dataclass(frozen=True, slots=True)
class Dim:
    """One dimension: static when min == max, dynamic otherwise; max None means unbounded.

    Text forms (OpenVINO's): "8" static, "?" or "-1" unbounded, "1..8" a range, "..8" up to 8, "1.." from 1.
    """

    min: int
    max: int | None

    @classmethod
    def static(cls, value: int) -> "Dim":
        return cls(value, value)

    @classmethod
    def dynamic(cls) -> "Dim":
        return cls(0, None)

    @property
    def is_static(self) -> bool:
        return self.max is not None and self.min == self.max

    @property
    def value(self) -> int | None:
        """The static value, or None when dynamic."""
        return self.min if self.is_static else None

    def __str__(self) -> str:
        if self.is_static:
            return str(self.min)
        if self.min == 0 and self.max is None:
            return "?"
        return f"{self.min if self.min else ''}..{self.max if self.max is not None else ''}"


Shape = tuple[Dim, ...]


def static_shape(values: Any) -> Shape:
    return tuple(Dim.static(int(v)) for v in values)


def shape_str(shape) -> str:
    """The one shape notation of every message and table: [1,3,16,16], ? for a dynamic dim, 1..8 a range.

    Takes Dims, or plain ints (an array's shape; -1 or None for a dynamic dim)."""
    return "[" + ",".join(str(d) if isinstance(d, Dim) else "?" if d is None or int(d) < 0 else str(int(d))
                          for d in shape) + "]"


@dataclass(slots=True)
class Port:
    id: int
    element_type: str | None = None  # "f32", "i64", ...; None where the file does not say
    shape: Shape = ()
    names: tuple[str, ...] = ()  # tensor names (IR v11 `names`)
    rt_info: str | None = None  # serialized <rt_info> of the port, kept verbatim for round trips


@dataclass(slots=True)
class Layer:
    id: int
    name: str
    type: str
    version: str  # "opset1", "opset8", ...
    attrs: dict[str, Any] = field(default_factory=dict)
    inputs: list[Port] = field(default_factory=list)
    outputs: list[Port] = field(default_factory=list)
    data: np.ndarray | None = None  # Const payload
    rt_info: str | None = None  # serialized <rt_info> of the layer, kept verbatim
    # Other attributes of the <layer> element, kept verbatim in file order (OpenVINO 2025+ writes
    # `output_names` on Result layers).
    element_attrs: dict[str, str] = field(default_factory=dict)
    # port id -> port, built on first use (Layer.port is called once per edge: a scan would make a Concat of
    # n inputs quadratic); rebuilt when the port lists change.
    _ports: dict[int, Port] = field(default_factory=dict, init=False, repr=False, compare=False)
    # Other child elements of a layer of a type poolir does not know (ir.schema.is_known), as (index among the
    # <layer>'s children, verbatim XML), so that If's bodies and port maps are written back where they were.
    extra_elements: list[tuple[int, str]] = field(default_factory=list)

    @property
    def opset(self) -> int:
        """The opset number of `version` ("opset16" -> 16); 0 when the version is not an opsetN."""
        return opset_number(self.version)

    @property
    def label(self) -> str:
        """How messages name this layer: `layer 'pool1' (id 3, AvgPool)`."""
        return layer_label(self.name, self.id, self.type)

    def port(self, port_id: int) -> Port:
        port = self._ports.get(port_id)
        if port is None or port.id != port_id or len(self._ports) > len(self.inputs) + len(self.outputs):
            # The first of (*inputs, *outputs) with the id wins, as a scan would find it.
            self._ports = {candidate.id: candidate for candidate in reversed((*self.inputs, *self.outputs))}
            port = self._ports.get(port_id)
            if port is None:
                raise KeyError(port_id)
        return port


def opset_number(version: str) -> int:
    """The N of an opset name "opsetN" ("opset16" -> 16); 0 for any other text."""
    digits = version[len("opset"):] if version.startswith("opset") else ""
    return int(digits) if digits.isascii() and digits.isdecimal() and len(digits) <= 9 else 0


@dataclass(frozen=True, slots=True)
class Edge:
    from_layer: int
    from_port: int
    to_layer: int
    to_port: int


@dataclass(slots=True)
class Model:
    name: str
    version: int = 11  # IR version: one of IR_VERSIONS
    layers: list[Layer] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    rt_info: str | None = None  # serialized <rt_info> of the net, kept verbatim
    source: str | None = None  # the .xml path it was read from, for messages
    # Indexes built on first use so that layer(id) and producer(...) are O(1), not a scan per call (which
    # made graph walks quadratic); rebuilt when a lookup finds them stale.
    _by_id: dict[int, Layer] = field(default_factory=dict, init=False, repr=False, compare=False)
    _producers: dict[tuple[int, int], Edge] = field(default_factory=dict, init=False, repr=False, compare=False)
    _edge_count: int = field(default=-1, init=False, repr=False, compare=False)
    # The .bin as read, kept only when a layer poolir does not know holds sub-graphs (If, Loop, TensorIterator
    # bodies) whose Consts point into it: the writer keeps those bytes where they were.
    weights: bytes | None = None

    def layer(self, layer_id: int) -> Layer:
        layer = self._by_id.get(layer_id)
        if layer is None or layer.id != layer_id or len(self._by_id) > len(self.layers):
            self._by_id = {}
            for candidate in self.layers:
                self._by_id.setdefault(candidate.id, candidate)
            layer = self._by_id.get(layer_id)
            if layer is None:
                raise KeyError(layer_id)
        return layer

    def layers_of_type(self, layer_type: str) -> Iterator[Layer]:
        return (layer for layer in self.layers if layer.type == layer_type)

    @property
    def parameters(self) -> list[Layer]:
        return list(self.layers_of_type("Parameter"))

    @property
    def results(self) -> list[Layer]:
        return list(self.layers_of_type("Result"))

    def producer(self, layer_id: int, port_id: int) -> Edge | None:
        """The edge feeding input port `port_id` of layer `layer_id`, if any."""
        key = (layer_id, port_id)
        edge = self._producers.get(key)
        if self._edge_count != len(self.edges) or (edge is not None and (edge.to_layer, edge.to_port) != key):
            self._producers = {}
            for candidate in self.edges:
                self._producers.setdefault((candidate.to_layer, candidate.to_port), candidate)
            self._edge_count = len(self.edges)
            edge = self._producers.get(key)
        return edge


def unnamed_port_key(layer: Layer, index: int) -> str:
    """The name an output port without tensor names goes by (IR v10 names none; OpenVINO's v11 few): its layer's
    name, with ":<index>" when the layer has several outputs. IR -> ONNX names the port's tensor so, and a run
    reports it so (observed_port_names), which lets `verify` compare the two paths there."""
    return layer.name if len(layer.outputs) == 1 else f"{layer.name}:{index}"


def observed_port_names(model: Model) -> dict[tuple[int, int], tuple[str, ...]]:
    """(layer id, port id) -> the names a run reports the output port's value under: its tensor names, or for a
    port without any (not of a Parameter, Const or Result) its unnamed_port_key when that key is no tensor name
    and no other port's key, so that no name stands for two values."""
    tensor_names = {name for layer in model.layers for port in layer.outputs for name in port.names}
    keys: dict[tuple[int, int], str] = {}
    holders: dict[str, int] = {}
    for layer in model.layers:
        for index, port in enumerate(layer.outputs):
            if port.names or layer.type in ("Parameter", "Const", "Result"):
                continue
            key = unnamed_port_key(layer, index)
            keys[(layer.id, port.id)] = key
            holders[key] = holders.get(key, 0) + 1
    names = {(layer.id, port.id): tuple(port.names) for layer in model.layers for port in layer.outputs}
    names.update((where, (key,)) for where, key in keys.items() if holders[key] == 1 and key not in tensor_names)
    return names
