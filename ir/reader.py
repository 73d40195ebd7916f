"""Reading IR `.xml` (+ `.bin`) into an `ir.Model`, treating every file as hostile.

The XML parser resolves no entities, loads no DTD, touches no network and refuses huge trees; a
document with any DOCTYPE is refused outright (that is where entity bombs and XXE live). Every
problem raises `InvalidModelError` or `UnsupportedError` naming the file, the layer and the problem.
After parsing, the graph is validated (ir.validate) and shape inference runs once (ir.infer), so a
model returned by `read_model` is structurally sound and every layer's output shape is computable.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
from lxml import etree

from poolir.ir.attributes import parse_dim, parse_integer
from poolir.ir.element_types import DTYPES, PRECISIONS
from poolir.ir.errors import InvalidModelError, PoolirError, UnsupportedError, UsageError, as_model_error, layer_label
from poolir.ir.files import read_regular
from poolir.ir.infer import infer_model
from poolir.ir.limits import check_declared_size
from poolir.ir.model import IR_VERSIONS, IR_VERSIONS_TEXT, Edge, Layer, Model, Port, Shape
from poolir.ir.schema import known_op_version, parse_attrs
from poolir.ir.validate import validate_graph

__all__ = ["join_names", "parse_model", "parse_xml_safely", "read_model"]

# Attributes of a <layer> element that are its identity; any others (OpenVINO 2025+ writes
# `output_names` on Result) are kept verbatim in Layer.element_attrs.
_LAYER_IDENTITY = ("id", "name", "type", "version")


def _parser() -> etree.XMLParser:
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False,
                           dtd_validation=False, remove_comments=True, remove_pis=True)


def parse_xml_safely(data: bytes, source: str) -> etree._Element:
    """Parse untrusted XML bytes into an element; raises InvalidModelError naming `source`."""
    if not data.strip():
        raise InvalidModelError("the file is empty", file=source)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidModelError(f"not UTF-8 text (invalid byte at offset {error.start})", file=source) from None
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise InvalidModelError("a DOCTYPE or ENTITY declaration is not allowed in an IR file", file=source)
    try:
        root = etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as error:
        # libxml2's messages can contain a newline; a PoolirError message is one line.
        raise InvalidModelError(f"malformed XML: {' '.join(str(error).split())}", file=source) from None
    if root.getroottree().docinfo.doctype:
        raise InvalidModelError("a DOCTYPE declaration is not allowed in an IR file", file=source)
    return root


def read_model(path: str | os.PathLike) -> Model:
    """Read an IR `.xml` and the `.bin` beside it (same name, `.bin` extension; needed only for Const)."""
    path = Path(path)
    source = os.fspath(path)
    xml_bytes = read_regular(path, error=InvalidModelError)
    bin_path = path.with_suffix(".bin")

    def load_weights() -> bytes:
        if not os.path.lexists(bin_path):
            raise InvalidModelError(f"the weights file {os.fspath(bin_path)} is missing", file=source)
        return read_regular(bin_path, error=InvalidModelError, file=source, what="the weights file")

    return parse_model(xml_bytes, load_weights, source=source)


def parse_model(xml_bytes: bytes, weights: bytes | Any | None = None, *, source: str = "<memory>") -> Model:
    """Parse IR from bytes. `weights` is the .bin content, or a callable returning it (called only
    when a Const needs it), or None when there is no .bin."""
    root = parse_xml_safely(xml_bytes, source)
    if root.tag != "net":
        raise InvalidModelError(f"the root element is <{root.tag}>, expected <net>", file=source)
    ir_version = _int_attr(root, "version", source, "<net>")
    if ir_version not in IR_VERSIONS:
        raise UnsupportedError(f"IR version {ir_version} is not supported (supported: {IR_VERSIONS_TEXT})",
                               file=source)
    model = Model(name=root.get("name", ""), version=ir_version, source=source)

    layers_element = _only_child(root, "layers", source, "<net>", required=True)
    blob_cache: list[bytes] = []

    def blob() -> bytes:
        if not blob_cache:
            content = weights() if callable(weights) else weights
            if content is None:
                raise InvalidModelError("a Const layer needs a .bin weights file and there is none", file=source)
            blob_cache.append(content)
        return blob_cache[0]

    for element in layers_element:
        if element.tag != "layer":
            raise InvalidModelError(f"unexpected element <{element.tag}> in <layers>", file=source)
        model.layers.append(_read_layer(element, ir_version, source, blob))

    edges_element = _only_child(root, "edges", source, "<net>", required=False)
    for element in (edges_element if edges_element is not None else ()):
        if element.tag != "edge":
            raise InvalidModelError(f"unexpected element <{element.tag}> in <edges>", file=source)
        where = "edge " + " ".join(f"{key}={element.get(key)!r}" for key in
                                   ("from-layer", "from-port", "to-layer", "to-port"))
        model.edges.append(Edge(*(_int_attr(element, key, source, where) for key in
                                  ("from-layer", "from-port", "to-layer", "to-port"))))

    rt_info = _only_child(root, "rt_info", source, "<net>", required=False)
    model.rt_info = _verbatim(rt_info)
    # Sub-graph Consts of unknown layers (an If's bodies) point into the .bin (ir.model.Model.weights); a model whose
    # bodies hold no Const is written without one.
    nested_const = any(inner.get("type") == "Const" for element in layers_element
                       for inner in element.iter("layer") if inner is not element)
    if weights is not None and nested_const:
        model.weights = blob()
    validate_graph(model)
    infer_model(model)
    return model


def _read_layer(element: etree._Element, ir_version: int, source: str, blob) -> Layer:
    raw_id = element.get("id")
    name = element.get("name")
    layer_type = element.get("type")
    where = layer_label(name if name is not None else "?", raw_id, layer_type)
    for key in _LAYER_IDENTITY:
        if element.get(key) is None:
            raise InvalidModelError(f"the <layer> element has no {key!r} attribute", file=source, where=where)
    if not name.strip():  # a layer name names inputs, outputs and messages, so it must say something
        raise InvalidModelError("the layer name is empty", file=source, where=where)
    layer_id = _int_attr(element, "id", source, where)
    if layer_id < 0:
        raise InvalidModelError(f"layer id {layer_id} is negative", file=source, where=where)
    data = _only_child(element, "data", source, where, required=False)
    raw_attrs = dict(data.attrib) if data is not None else {}
    schema = known_op_version(layer_type, element.get("version"))
    if schema is None:
        # A layer type (or a version of one) poolir does not know: kept as it stands, its attributes as raw
        # strings in file order (ir.schema.is_known); its declared output ports are trusted by inference.
        attrs: dict[str, Any] = raw_attrs
    else:
        try:
            attrs = parse_attrs(schema, raw_attrs)
        except PoolirError as error:  # a malformed or out-of-range attribute is the file's fault
            raise as_model_error(error).located(file=source, where=where) from None
    layer = Layer(id=layer_id, name=name, type=layer_type, version=element.get("version"), attrs=attrs,
                  element_attrs={k: v for k, v in element.attrib.items() if k not in _LAYER_IDENTITY})
    layer.rt_info = _verbatim(_only_child(element, "rt_info", source, where, required=False))
    for direction, ports in (("input", layer.inputs), ("output", layer.outputs)):
        group = _only_child(element, direction, source, where, required=False)
        for port_element in (group if group is not None else ()):
            if port_element.tag != "port":
                raise InvalidModelError(f"unexpected element <{port_element.tag}> in <{direction}>",
                                        file=source, where=where)
            ports.append(_read_port(port_element, ir_version, source, where))
    port_ids = [port.id for port in (*layer.inputs, *layer.outputs)]
    if len(set(port_ids)) != len(port_ids):
        duplicate = next(p for p in port_ids if port_ids.count(p) > 1)
        raise InvalidModelError(f"port id {duplicate} is used twice", file=source, where=where)
    for index, child in enumerate(element):
        if child.tag not in ("data", "input", "output", "rt_info"):
            if schema is not None or not isinstance(child.tag, str):
                raise InvalidModelError(f"unexpected element <{child.tag}> in <layer>", file=source, where=where)
            # A layer poolir does not know may hold more (If's then_body and port maps, TensorIterator's body):
            # kept verbatim with its place among the layer's children, never interpreted.
            layer.extra_elements.append((index, _verbatim(child)))
    if schema is None:
        return layer
    if layer.type == "Parameter":
        check_declared_size(layer.attrs["shape"], "the Parameter shape", source, where)
    if layer.type == "Const":
        layer.data = _read_const(layer, blob, source, where)
    return layer


def _read_port(element: etree._Element, ir_version: int, source: str, where: str) -> Port:
    port_id = _int_attr(element, "id", source, where)
    port_where = f"{where}: port {port_id}"
    precision = element.get("precision")
    element_type = None
    if precision is not None:
        element_type = PRECISIONS.get(precision.upper())
        if element_type is None:
            raise UnsupportedError(f"precision {precision!r} is not supported "
                                   f"(supported: {', '.join(PRECISIONS)})", file=source, where=port_where)
    dims = []
    rt_info = None
    for child in element:
        if child.tag == "dim":
            try:
                dims.append(parse_dim(child.text or ""))
            except UsageError as error:
                raise InvalidModelError(error.problem, file=source, where=port_where) from None
        elif child.tag == "rt_info":
            rt_info = _verbatim(child)
        else:
            raise InvalidModelError(f"unexpected element <{child.tag}> in <port>", file=source, where=port_where)
    shape: Shape = tuple(dims)
    check_declared_size(shape, "the declared port shape", source, port_where)
    names = _split_names(element.get("names", "")) if ir_version >= 11 else ()
    return Port(id=port_id, element_type=element_type, shape=shape, names=names, rt_info=rt_info)


def _read_const(layer: Layer, blob, source: str, where: str) -> np.ndarray:
    attrs = layer.attrs
    element_type, shape, offset, size = attrs["element_type"], attrs["shape"], attrs["offset"], attrs["size"]
    check_declared_size(shape, "the Const shape", source, where)
    count = math.prod(d.min for d in shape)
    dtype = DTYPES[element_type]
    expected = (count + 7) // 8 if element_type == "u1" else count * dtype.itemsize
    if offset < 0 or size < 0:
        raise InvalidModelError(f"Const offset {offset} / size {size} must not be negative", file=source, where=where)
    if size != expected and not (count == 0 and size <= 1):  # OpenVINO writes an empty Const with size 1
        raise InvalidModelError(f"Const size {size} bytes does not match shape {[d.min for d in shape]} of "
                                f"{element_type} ({expected} bytes)", file=source, where=where)
    try:
        content = blob()
    except PoolirError as error:
        raise error.located(file=source, where=where) from None
    if offset + size > len(content):
        raise InvalidModelError(f"Const data at offset {offset} with size {size} lies past the end of the "
                                f"weights file ({len(content)} bytes)", file=source, where=where)
    raw = content[offset:offset + expected]
    if element_type == "u1":
        # OpenVINO packs u1 most significant bit first.
        values = np.unpackbits(np.frombuffer(raw, np.uint8))[:count].astype(np.bool_)
    else:
        values = np.frombuffer(raw, dtype=dtype).copy()
    return values.reshape(tuple(d.min for d in shape))


def _split_names(text: str) -> tuple[str, ...]:
    """OpenVINO's `names`: comma separated, a comma inside a name escaped as a backslash-comma."""
    if not text:
        return ()
    names, current, index = [], [], 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text) and text[index + 1] == ",":
            current.append(",")
            index += 2
            continue
        if char == ",":
            names.append("".join(current).strip())
            current = []
        else:
            current.append(char)
        index += 1
    names.append("".join(current).strip())
    return tuple(name for name in names if name)


def join_names(names: tuple[str, ...]) -> str:
    return ",".join(name.replace(",", "\\,") for name in names)


def _verbatim(element: etree._Element | None) -> str | None:
    if element is None:
        return None
    element = etree.fromstring(etree.tostring(element), _parser())  # a detached copy without the tail
    for node in element.iter():  # layout whitespace is not content; the writer re-indents
        if node.text is not None and not node.text.strip():
            node.text = None
        if node.tail is not None and not node.tail.strip():
            node.tail = None
    element.tail = None
    return etree.tostring(element, encoding="unicode")


def _only_child(parent: etree._Element, tag: str, source: str, where: str, *, required: bool):
    found = [child for child in parent if child.tag == tag]
    if len(found) > 1:
        raise InvalidModelError(f"more than one <{tag}> element", file=source, where=where)
    if required and not found:
        raise InvalidModelError(f"the <{tag}> element is missing", file=source, where=where)
    return found[0] if found else None


def _int_attr(element: etree._Element, key: str, source: str, where: str) -> int:
    text = element.get(key)
    if text is None:
        raise InvalidModelError(f"attribute {key!r} is missing", file=source, where=where)
    value = parse_integer(text)
    if value is None:
        raise InvalidModelError(f"attribute {key!r} = {text!r} is not an integer (at most 20 ASCII digits)",
                                file=source, where=where)
    return value
