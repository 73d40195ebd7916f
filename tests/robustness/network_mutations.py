"""Mutations of whole networks, IR (.xml tree + .bin) and ONNX (ModelProto + external data), for network_fuzz.py.

Each mutation takes a `random.Random` and the model, changes one thing and returns a short description of
what it did ("layer 'conv' (id 5) data strides='0, 1'"), so that a finding can be reproduced by hand.
A mutant may well still be valid: the rule checked is the CLI contract, not that every mutant is refused.
"""

from __future__ import annotations

import random

import numpy as np
from lxml import etree

HUGE = (2**31, 2**32 + 1, 2**62, 2**63 - 1, 2**63, 2**64, 10**30)
INTS = (-(2**63), -(2**31), -7, -2, -1, 0, 0, 1, 2, 3, 5, 17) + HUGE
WORDS = ("", " ", "?", "-1", "1..8", "2..1", "..", "abc", "1.5", "nan", "NaN", "inf", "-inf", "-0", "+3", "1e3",
         "true", "false", "1,,2", ",", "[1,2]", "0x10", "\u0663", "numpy", "none", "explicit", "same_upper",
         "valid", "f32", "f16", "i64", "u1", "boolean", "string", "dynamic", "undefined", "opset1", "opset99")
ELEMENT_TYPES = ("f32", "f16", "bf16", "f64", "i8", "u8", "i32", "i64", "u1", "u4", "i4", "boolean", "string",
                 "f8e4m3", "dynamic", "undefined", "FP32", "", "x")
DIMS = ("-1", "?", "1..8", "0..", "..4", "0", "1", "2", "7", "-5", "", "abc", "1.5", str(2**31), str(2**63),
        str(2**40), "9" * 30)


def hostile_value(rng: random.Random, old: str) -> str:
    """A hostile replacement for an attribute's text: a number out of range, a list of the wrong arity, a word."""
    parts = [p.strip() for p in old.split(",")] if old else []
    kind = rng.randrange(7)
    if kind == 0 and parts:  # one entry of a list (or the one value) made hostile
        parts[rng.randrange(len(parts))] = str(rng.choice(INTS + (float("nan"),)))
        return ",".join(parts)
    if kind == 1:  # wrong arity
        length = rng.choice((0, max(0, len(parts) - 1), len(parts) + 1, len(parts) * 2, 70))
        return ",".join(str(rng.choice((0, 1, 2, 3))) for _ in range(length))
    if kind == 2:
        return str(rng.choice(INTS))
    if kind == 3:
        return rng.choice(WORDS)
    if kind == 4 and parts:  # every entry one smaller or larger
        try:
            return ",".join(str(int(p) + rng.choice((-1, 1))) for p in parts)
        except ValueError:
            return rng.choice(WORDS)
    if kind == 5:
        return repr(rng.choice((-1.5, 0.0, 1e-45, 1e39, float("nan"), float("inf"), -0.0)))
    return ",".join(parts + [str(rng.choice(INTS))])


# -- IR -------------------------------------------------------------------------------------------------------
class IRMutant:
    """An IR being mutated: the parsed .xml and the .bin bytes."""

    def __init__(self, xml: bytes, weights: bytes | None):
        self.root = etree.fromstring(xml)
        self.weights = weights

    def layers(self, predicate=lambda layer: True) -> list:
        return [e for e in self.root.iter("layer") if predicate(e)]

    def xml(self) -> bytes:
        return etree.tostring(self.root, xml_declaration=True)


def _label(layer) -> str:
    return f"layer {layer.get('name')!r} (id {layer.get('id')}, {layer.get('type')})"


def ir_attribute(rng, m: IRMutant) -> str:
    layers = m.layers(lambda e: e.find("data") is not None and e.get("type") != "Const")
    layer = rng.choice(layers)
    data = layer.find("data")
    names = sorted(data.attrib) + ["axis", "group", "bogus"]
    name = rng.choice(names)
    data.set(name, hostile_value(rng, data.get(name, "")))
    return f"{_label(layer)} data {name}={data.get(name)!r}"


def ir_delete_attribute(rng, m: IRMutant) -> str:
    layer = rng.choice(m.layers(lambda e: e.find("data") is not None and len(e.find("data").attrib)))
    name = rng.choice(sorted(layer.find("data").attrib))
    del layer.find("data").attrib[name]
    return f"{_label(layer)} data {name} removed"


def ir_dim(rng, m: IRMutant) -> str:
    dims = list(m.root.iter("dim"))
    dim = rng.choice(dims)
    dim.text = rng.choice(DIMS)
    layer = next(dim.iterancestors("layer"))
    return f"{_label(layer)} a <dim> = {dim.text!r}"


def ir_parameter_shape(rng, m: IRMutant) -> str:
    layer = rng.choice(m.layers(lambda e: e.get("type") == "Parameter"))
    data = layer.find("data")
    dims = data.get("shape", "").split(",")
    choice = rng.randrange(4)
    if choice == 0:
        dims[rng.randrange(len(dims))] = rng.choice(DIMS)
    elif choice == 1:
        dims = [rng.choice(("-1", "?", "1..4")) for _ in dims]
    elif choice == 2:
        dims = dims[:-1] if rng.random() < 0.5 else dims + ["1"]
    else:
        dims = [str(int(d) * rng.choice((2, 3))) if d.strip().isdigit() else d for d in dims]
    data.set("shape", ",".join(dims))
    ports = layer.find("output/port")
    if ports is not None and rng.random() < 0.5:  # the declared port dims follow (or not)
        for old in ports.findall("dim"):
            ports.remove(old)
        for value in dims:
            etree.SubElement(ports, "dim").text = value.strip()
    return f"{_label(layer)} shape={data.get('shape')!r}"


def ir_element_type(rng, m: IRMutant) -> str:
    layer = rng.choice(m.layers(lambda e: e.get("type") in ("Parameter", "Const", "Convert", "ShapeOf")
                                 or e.find("output/port") is not None))
    data = layer.find("data")
    for name in ("element_type", "destination_type", "output_type", "index_element_type"):
        if data is not None and name in data.attrib and rng.random() < 0.8:
            data.set(name, rng.choice(ELEMENT_TYPES))
            return f"{_label(layer)} {name}={data.get(name)!r}"
    port = rng.choice(list(layer.iter("port")))
    port.set("precision", rng.choice(("FP32", "FP16", "I64", "I32", "U8", "BOOL", "FP64", "UNSPECIFIED", "x")))
    return f"{_label(layer)} port {port.get('id')} precision={port.get('precision')!r}"


def ir_const_blob(rng, m: IRMutant) -> str:
    layer = rng.choice(m.layers(lambda e: e.get("type") == "Const"))
    data = layer.find("data")
    offset, size = int(data.get("offset", 0)), int(data.get("size", 0))
    total = len(m.weights or b"")
    name = rng.choice(("offset", "size", "both", "shape"))
    if name == "offset":
        data.set("offset", str(rng.choice((-1, offset + 1, offset - 1, total, total - 1, 2**63, 2**64 - 8))))
    elif name == "size":
        data.set("size", str(rng.choice((0, size - 1, size + 1, size * 2, total + 1, -size, 2**63))))
    elif name == "both":
        data.set("offset", str(total - size // 2))
    else:
        dims = [d.strip() for d in data.get("shape", "").split(",") if d.strip()]
        dims = dims[1:] if dims and rng.random() < 0.3 else dims + [rng.choice(("1", "2", "0", "-1", "?"))]
        data.set("shape", ",".join(dims))
    return f"{_label(layer)} Const {name}: offset={data.get('offset')} size={data.get('size')} shape={data.get('shape')!r}"


def ir_bin(rng, m: IRMutant) -> str:
    weights = m.weights or b""
    choice = rng.randrange(4)
    if choice == 0:
        m.weights = weights[:rng.randrange(len(weights) + 1)]
    elif choice == 1:
        m.weights = None
    elif choice == 2 and weights:  # NaN/inf/garbage in the weights
        data = bytearray(weights)
        for _ in range(rng.randint(1, 64)):
            at = rng.randrange(len(data) - 3)
            data[at:at + 4] = rng.choice((b"\x00\x00\xc0\x7f", b"\x00\x00\x80\x7f", b"\xff\xff\xff\xff", b"\x7e\x7c\x7e\x7c"))
        m.weights = bytes(data)
    else:
        m.weights = weights + bytes(rng.randrange(1, 9))
    return f".bin of {len(m.weights) if m.weights is not None else 'no'} bytes (was {len(weights)})"


def ir_edge(rng, m: IRMutant) -> str:
    edges_element = m.root.find("edges")
    edges = list(edges_element)
    edge = rng.choice(edges)
    ids = [layer.get("id") for layer in m.layers()]
    choice = rng.randrange(6)
    if choice == 0:  # dangling
        edge.set(rng.choice(("from-layer", "to-layer")), str(rng.choice((len(ids) + 5, -1, 10**6))))
    elif choice == 1:  # duplicated (two producers for one input)
        edges_element.append(etree.fromstring(etree.tostring(edge)))
    elif choice == 2:  # wrong port
        edge.set(rng.choice(("from-port", "to-port")), str(rng.choice((0, 1, 2, 3, 7, -1, 99))))
    elif choice == 3:  # a cycle: a later layer feeds an earlier one
        later = edges[rng.randrange(len(edges) // 2, len(edges))]
        edge.set("from-layer", later.get("to-layer"))
        edge.set("from-port", str(rng.choice((0, 1, 2))))
    elif choice == 4:  # removed: an input left unconnected
        edges_element.remove(edge)
    else:  # two edges swapped at their target
        other = rng.choice(edges)
        for key in ("to-layer", "to-port"):
            a, b = edge.get(key), other.get(key)
            edge.set(key, b)
            other.set(key, a)
    return "edge " + " ".join(f"{k}={edge.get(k)}" for k in ("from-layer", "from-port", "to-layer", "to-port")) \
        + f" ({('dangling', 'duplicated', 'wrong port', 'cycle', 'removed', 'swapped')[choice]})"


def ir_ports(rng, m: IRMutant) -> str:
    layer = rng.choice(m.layers(lambda e: e.get("type") not in ("Const",)))
    groups = [g for g in (layer.find("input"), layer.find("output")) if g is not None]
    group = rng.choice(groups)
    ports = list(group)
    if ports and rng.random() < 0.5:
        group.remove(rng.choice(ports))
        return f"{_label(layer)} a port of <{group.tag}> removed"
    port = etree.SubElement(group, "port", {"id": str(rng.choice((len(ports), 0, 1, 9, -1))), "precision": "FP32"})
    for _ in range(rng.randrange(5)):
        etree.SubElement(port, "dim").text = str(rng.choice((1, 2, 3, 8)))
    return f"{_label(layer)} a port {port.get('id')} added to <{group.tag}>"


def ir_layer_identity(rng, m: IRMutant) -> str:
    layer = rng.choice(m.layers(lambda e: e.get("type") not in ("Parameter", "Result")))
    choice = rng.randrange(4)
    if choice == 0:
        layer.set("version", rng.choice(("opset0", "opset99", "", "opset1", "opset8", "opset3", "internal", "x")))
        return f"{_label(layer)} version={layer.get('version')!r}"
    if choice == 1:
        layer.set("type", rng.choice(("Convolution", "GroupConvolution", "MatMul", "Concat", "Split", "Reshape",
                                      "SoftMax", "Gather", "Broadcast", "Tile", "Select", "Pad", "Convert", "Const",
                                      "Parameter", "Result", "ShapeOf", "StridedSlice", "Unknown")))
        return f"layer id {layer.get('id')} type changed to {layer.get('type')!r}"
    if choice == 2:
        other = rng.choice(m.layers())
        layer.set("id", other.get("id"))
        return f"{_label(layer)} id duplicated"
    layer.getparent().remove(layer)
    return f"{_label(layer)} removed"


def ir_net(rng, m: IRMutant) -> str:
    choice = rng.randrange(3)
    if choice == 0:
        m.root.set("version", rng.choice(("9", "10", "11", "12", "", "x", "-1", "99999999999999999999")))
        return f"net version={m.root.get('version')!r}"
    rt_info = m.root.find("rt_info")
    if rt_info is None:
        rt_info = etree.SubElement(m.root, "rt_info")
    if choice == 1:
        etree.SubElement(rt_info, rng.choice(("framework", "conversion_parameters", "x")),
                         {"value": rng.choice(WORDS)})
        return "rt_info entry added"
    layer = rng.choice(m.layers())
    info = etree.SubElement(layer, "rt_info")
    etree.SubElement(info, "attribute", {"name": "fused_names", "version": rng.choice(("0", "x", "")),
                                         "value": rng.choice(WORDS)})
    return f"{_label(layer)} rt_info added"


BOOLEANS = ("true", "false")


def _choices(layer_type: str, name: str) -> tuple[str, ...]:
    """The values the schema allows for a string attribute (of any version of the layer type), if any."""
    from poolir.ir.ops import SCHEMAS

    found: list[str] = []
    for row in SCHEMAS.get(layer_type, ()):
        for attr in row.attrs:
            if attr.name == name and attr.choices:
                found += [c for c in attr.choices if c not in found]
    return tuple(found)


def plausible_value(rng: random.Random, old: str, choices: tuple[str, ...] = ()) -> str:
    """A replacement that parses and is often in range: an integer one off or 0/1/-1, another allowed word."""
    text = old.strip().lower()
    if text in BOOLEANS:
        return "false" if text == "true" else "true"
    parts = [p.strip() for p in old.split(",")] if old.strip() else []
    try:
        numbers = [int(p) for p in parts]
    except ValueError:
        try:
            numbers = None
            value = float(old)
            return repr(rng.choice((0.0, value * 2, -value, value + 1, 1e-7, 1.0)))
        except ValueError:
            return rng.choice(choices) if choices else old
    if not numbers:
        return rng.choice(("0", "1", "-1"))
    index = rng.randrange(len(numbers))
    numbers[index] = rng.choice((numbers[index] + 1, numbers[index] - 1, 0, 1, -1, 2, numbers[index] * 2))
    if rng.random() < 0.15:
        numbers = numbers[:-1] if rng.random() < 0.5 else numbers + [numbers[-1]]
    return ",".join(map(str, numbers))


def ir_plausible_attribute(rng, m: IRMutant) -> str:
    layer = rng.choice(m.layers(lambda e: e.find("data") is not None and e.get("type") not in ("Const", "Parameter")
                                and len(e.find("data").attrib)))
    data = layer.find("data")
    name = rng.choice(sorted(data.attrib))
    data.set(name, plausible_value(rng, data.get(name), _choices(layer.get("type"), name)))
    return f"{_label(layer)} data {name}={data.get(name)!r}"


_CONST_TYPES = {"i64": np.int64, "i32": np.int32, "f32": np.float32, "f16": np.float16, "u8": np.uint8,
                "i8": np.int8}


def ir_const_values(rng, m: IRMutant) -> str:
    """One value of a small Const changed in the .bin: shapes, axes, pads, split lengths, indices, a weight."""
    def small(layer):
        data = layer.find("data")
        return (layer.get("type") == "Const" and data is not None and data.get("element_type") in _CONST_TYPES
                and 0 < int(data.get("size", "0")) <= 64)
    layer = rng.choice(m.layers(small))
    data = layer.find("data")
    dtype = np.dtype(_CONST_TYPES[data.get("element_type")])
    offset, size = int(data.get("offset")), int(data.get("size"))
    weights = bytearray(m.weights)
    values = np.frombuffer(bytes(weights[offset:offset + size]), dtype).copy()
    index = rng.randrange(values.size)
    old = values[index]
    if dtype.kind == "f":
        new = rng.choice((0.0, -1.0, float(old) * 3, float("nan"), float("inf"), -float(old)))
    else:
        info = np.iinfo(dtype)
        new = rng.choice((int(old) + 1, int(old) - 1, 0, 1, -1, -int(old), int(old) * 2, info.max, info.min))
        new = min(max(new, info.min), info.max)
    values[index] = new
    weights[offset:offset + size] = values.tobytes()
    m.weights = bytes(weights)
    return f"{_label(layer)} value {index}: {old} -> {values[index]} (now {values.tolist()[:8]})"


IR_MUTATIONS = (ir_attribute, ir_attribute, ir_attribute, ir_delete_attribute, ir_dim, ir_parameter_shape,
                ir_element_type, ir_const_blob, ir_const_blob, ir_bin, ir_edge, ir_edge, ir_ports,
                ir_layer_identity, ir_net) + (ir_plausible_attribute, ir_const_values) * 6


def mutate_ir(rng: random.Random, xml: bytes, weights: bytes | None, count: int) -> tuple[bytes, bytes | None, list]:
    mutant = IRMutant(xml, weights)
    done = []
    for _ in range(count):
        mutation = rng.choice(IR_MUTATIONS)
        try:
            done.append(mutation(rng, mutant))
        except (IndexError, ValueError, StopIteration, AttributeError, TypeError):
            done.append(f"{mutation.__name__}: nothing to mutate")
    return mutant.xml(), mutant.weights, done
