"""Writing an `ir.Model` as IR `.xml` + `.bin`, in the layout OpenVINO itself writes.

The output is deterministic: attributes in schema order (OpenVINO's order), tab indentation,
Const data laid out in layer order with identical blobs stored once. So reading a file poolir wrote
and writing it again gives identical bytes. `rt_info` elements are re-emitted from their verbatim copy.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
from lxml import etree

from poolir.ir.atomic import write_files_atomically
from poolir.ir.element_types import PRECISION_OF, dtype_of
from poolir.ir.errors import InvalidModelError, PoolirError, UsageError
from poolir.ir.infer import Inference, infer_model
from poolir.ir.model import IR_VERSIONS, IR_VERSIONS_TEXT, Layer, Model, Port, shape_str
from poolir.ir.reader import join_names, parse_xml_safely
from poolir.ir.schema import format_attrs, is_known, op_version


def serialize(model: Model, version: int | None = None) -> tuple[bytes, bytes]:
    """(xml bytes, bin bytes) of `model`; `version` 10 or 11, default the model's own (11 when built)."""
    version = model.version if version is None else version
    if version not in IR_VERSIONS:
        raise UsageError(f"IR version {version!r} cannot be written (supported: {IR_VERSIONS_TEXT})")
    # OpenVINO requires `precision` on every port; a port read without one gets the inferred type.
    missing_types = any(port.element_type is None for layer in model.layers for port in (*layer.inputs, *layer.outputs))
    inference = infer_model(model) if missing_types else None
    weights = _Weights(model.weights)
    lines = ['<?xml version="1.0"?>', f'<net name="{_escape(model.name)}" version="{version}">', "\t<layers>"]
    for layer in model.layers:
        _emit_layer(lines, layer, version, weights, model.source, inference)
    lines.append("\t</layers>")
    lines.append("\t<edges>")
    for edge in model.edges:
        lines.append(f'\t\t<edge from-layer="{edge.from_layer}" from-port="{edge.from_port}" '
                     f'to-layer="{edge.to_layer}" to-port="{edge.to_port}" />')
    lines.append("\t</edges>")
    if model.rt_info is not None:
        _emit_verbatim(lines, model.rt_info, 1)
    lines.append("</net>")
    return ("\n".join(lines) + "\n").encode("utf-8"), weights.content()


def write_model(model: Model, path: str | os.PathLike, version: int | None = None) -> None:
    """Write `path` (.xml) and, when the model has Const layers, the .bin beside it; atomically."""
    path = Path(path)
    xml_bytes, bin_bytes = serialize(model, version)
    files = {path: xml_bytes}
    if any(layer.type == "Const" for layer in model.layers) or bin_bytes:
        files[path.with_suffix(".bin")] = bin_bytes
    write_files_atomically(files)


class _Weights:
    """The .bin being laid out: identical blobs share one offset.

    With `original` (a model read with sub-graphs poolir keeps verbatim, whose Consts point into its .bin), the
    .bin starts as the original bytes, and a Const whose data still lies at its old offset keeps that offset."""

    def __init__(self, original: bytes | None = None) -> None:
        self._chunks: list[bytes] = [original] if original else []
        self._size = len(original) if original else 0
        self._offsets: dict[bytes, int] = {}
        self._original = original

    def add(self, blob: bytes, offset: int | None = None) -> int:
        if self._original is not None and offset is not None and self._original[offset:offset + len(blob)] == blob:
            return offset
        if blob not in self._offsets:
            self._offsets[blob] = self._size
            self._chunks.append(blob)
            self._size += len(blob)
        return self._offsets[blob]

    def content(self) -> bytes:
        return b"".join(self._chunks)


def _const_blob(layer: Layer) -> bytes:
    element_type = layer.attrs["element_type"]
    data = np.asarray(layer.data)
    expected = tuple(d.min for d in layer.attrs["shape"])
    if data.shape != expected:
        raise InvalidModelError(f"the Const data has shape {shape_str(data.shape)}, its shape attribute says "
                                f"{shape_str(expected)}")
    if data.size == 0:
        return b"\0"  # as OpenVINO writes an empty Const: its reader refuses size 0 ("ptr is Null")
    if element_type == "u1":
        return np.packbits(data.astype(np.bool_).ravel()).tobytes()  # most significant bit first
    return np.ascontiguousarray(data, dtype=dtype_of(element_type)).tobytes()


def _emit_layer(lines: list[str], layer: Layer, version: int, weights: _Weights, source: str | None,
                inference: Inference | None) -> None:
    where = layer.label
    try:
        if not is_known(layer):  # written back as it was read: raw attribute strings in file order
            _emit_body(lines, layer, version, inference, [(key, str(value)) for key, value in layer.attrs.items()])
            return
        schema = op_version(layer.type, layer.version)
        attrs = dict(layer.attrs)
        if layer.type == "Const":
            blob = _const_blob(layer)
            attrs["offset"], attrs["size"] = weights.add(blob, attrs.get("offset")), len(blob)
        pairs = format_attrs(schema, attrs)
    except PoolirError as error:
        raise error.located(file=source, where=where) from None
    _emit_body(lines, layer, version, inference, pairs)


def _emit_body(lines: list[str], layer: Layer, version: int, inference: Inference | None,
               pairs: list[tuple[str, str]]) -> None:
    """The <layer> element with `pairs` as its <data> attributes."""
    head = (f'\t\t<layer id="{layer.id}" name="{_escape(layer.name)}" type="{_escape(layer.type)}" '
            f'version="{_escape(layer.version)}"')
    head += "".join(f' {key}="{_escape(value)}"' for key, value in layer.element_attrs.items())
    children: list[list[str]] = []  # each child element's lines, in order
    if pairs:
        children.append(["\t\t\t<data" + "".join(f' {key}="{_escape(value)}"' for key, value in pairs) + " />"])
    if layer.rt_info is not None:
        children.append([])
        _emit_verbatim(children[-1], layer.rt_info, 3)
    for tag, ports in (("input", layer.inputs), ("output", layer.outputs)):
        if ports:
            chunk = [f"\t\t\t<{tag}>"]
            for port in ports:
                element_type = port.element_type
                if element_type is None and inference is not None:
                    table = inference.inputs if tag == "input" else inference.outputs
                    element_type = table[(layer.id, port.id)].element_type
                _emit_port(chunk, port, element_type, version)
            chunk.append(f"\t\t\t</{tag}>")
            children.append(chunk)
    for index, text in layer.extra_elements:  # an unknown layer's other children, back in their places
        chunk = []
        _emit_verbatim(chunk, text, 3)
        children.insert(min(index, len(children)), chunk)
    if not children:
        lines.append(head + " />")
        return
    lines.append(head + ">")
    for chunk in children:
        lines.extend(chunk)
    lines.append("\t\t</layer>")


def _emit_port(lines: list[str], port: Port, element_type: str | None, version: int) -> None:
    head = f'\t\t\t\t<port id="{port.id}"'
    if element_type is not None:
        head += f' precision="{PRECISION_OF[element_type]}"'
    if version >= 11 and port.names:
        head += f' names="{_escape(join_names(port.names))}"'
    if not port.shape and port.rt_info is None:
        lines.append(head + " />")
        return
    lines.append(head + ">")
    for dim in port.shape:
        lines.append(f"\t\t\t\t\t<dim>{dim.min if dim.is_static else -1}</dim>")
    if port.rt_info is not None:
        _emit_verbatim(lines, port.rt_info, 5)
    lines.append("\t\t\t\t</port>")


def _emit_verbatim(lines: list[str], text: str, depth: int) -> None:
    _emit_element(lines, parse_xml_safely(text.encode("utf-8"), "<rt_info>"), depth)


def _emit_element(lines: list[str], element: etree._Element, depth: int) -> None:
    indent = "\t" * depth
    head = f"{indent}<{element.tag}" + "".join(f' {k}="{_escape(v)}"' for k, v in element.attrib.items())
    children = [child for child in element if isinstance(child.tag, str)]
    text = (element.text or "").strip()
    if not children and not text:
        lines.append(head + " />")
    elif not children:
        lines.append(f"{head}>{_escape(text, quote=False)}</{element.tag}>")
    else:
        lines.append(head + ">")
        for child in children:
            _emit_element(lines, child, depth + 1)
        lines.append(f"{indent}</{element.tag}>")


# Characters XML 1.0 cannot hold at all, not even as character references.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _escape(value: object, quote: bool = True) -> str:
    found = _NOT_XML.search(str(value))
    if found:  # refused when written: such a file could not be read back
        raise UsageError(f"{str(value)!r} holds the character U+{ord(found.group()):04X}, which an IR .xml file "
                         "cannot represent")
    text = str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if quote:
        text = text.replace('"', "&quot;").replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#9;")
    return text
