"""Hostile and broken IR files: each one raises the project's own error naming the file and the layer.

The base file is a small valid model (Parameter -> AvgPool -> Multiply by a Const -> Result) written by
poolir; each case breaks it in one way, by editing the XML text or the .bin bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from poolir import ir
from poolir.ir.builder import GraphBuilder
from poolir.ir.errors import InvalidModelError, PoolirError, UnsupportedError

POOL = "layer 'pool' (id 1, AvgPool)"
CONST = "layer 'two' (id 2, Const)"
SCALE = "layer 'scale' (id 3, Multiply)"
PARAM = "layer 'x' (id 0, Parameter)"
POOL_DATA = ('<data kernel="2, 2" strides="2, 2" pads_begin="0, 0" pads_end="0, 0" exclude-pad="true" '
             'auto_pad="explicit" rounding_type="floor" />')


def _base() -> tuple[str, bytes]:
    b = GraphBuilder("hostile")
    x = b.parameter("x", "f32", (1, 1, 4, 4))
    (pooled,) = b.add("AvgPool", "opset1", [x], {"kernel": (2, 2), "strides": (2, 2), "pads_begin": (0, 0),
                                                  "pads_end": (0, 0), "exclude-pad": True}, name="pool")
    two = b.const(np.full((1, 1, 1, 1), 2.0, np.float32), name="two")
    (scaled,) = b.add("Multiply", "opset1", [pooled, two], name="scale")
    b.result(scaled, "y")
    xml, weights = ir.serialize(b.build())
    return xml.decode(), weights


BASE_XML, BASE_BIN = _base()


def edit(old: str, new: str, count: int = 1) -> str:
    assert BASE_XML.count(old) >= 1, old  # the test's own precondition, not validation
    return BASE_XML.replace(old, new, count)


def edit_pool(**attrs: str) -> str:
    data = POOL_DATA
    for name, value in attrs.items():
        name = name.replace("_pad_excl", "exclude-pad")
        start = data.index(f' {name}="') + len(name) + 3
        data = data[:start] + value + data[data.index('"', start):]
    return edit(POOL_DATA, data)


@dataclass(frozen=True)
class Case:
    xml: str | bytes
    error: type[PoolirError]
    where: str | None  # the layer label the message must contain (None: a file-level problem)
    words: str  # a fragment of the problem text
    weights: bytes | None = BASE_BIN


XXE = ('<?xml version="1.0"?>\n<!DOCTYPE net [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n'
       + BASE_XML.split("\n", 1)[1].replace('name="hostile"', 'name="&xxe;"'))
LAUGHS = ('<?xml version="1.0"?>\n<!DOCTYPE net [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
          '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">]>\n'
          + BASE_XML.split("\n", 1)[1].replace('name="hostile"', 'name="&d;"'))
CYCLE = edit('<edge from-layer="0" from-port="0" to-layer="1" to-port="0" />',
             '<edge from-layer="3" from-port="2" to-layer="1" to-port="0" />')

CASES: dict[str, Case] = {
    "xxe external entity": Case(XXE, InvalidModelError, None, "DOCTYPE"),
    "billion laughs": Case(LAUGHS, InvalidModelError, None, "DOCTYPE"),
    "plain DTD": Case(BASE_XML.replace("<net ", '<!DOCTYPE net SYSTEM "http://example.com/ir.dtd">\n<net ', 1),
                      InvalidModelError, None, "DOCTYPE"),
    "truncated XML": Case(BASE_XML[: len(BASE_XML) // 2], InvalidModelError, None, "malformed XML"),
    "garbage bytes": Case(bytes(np.random.default_rng(7).integers(0, 256, 600, dtype=np.uint8)),
                          InvalidModelError, None, ""),
    "empty file": Case(b"", InvalidModelError, None, "empty"),
    "not UTF-8": Case(BASE_XML.encode().replace(b'name="x"', b'name="\xff\xfe"', 1), InvalidModelError, None,
                      "UTF-8"),
    "wrong root element": Case("<?xml version=\"1.0\"?>\n<graph/>", InvalidModelError, None, "<graph>"),
    "unsupported IR version": Case(edit('version="11">', 'version="7">'), UnsupportedError, None, "IR version 7"),
    "cycle": Case(CYCLE, InvalidModelError, "layer 'pool'", "cycle"),
    "dangling edge to a missing layer": Case(
        edit('to-layer="4" to-port="0"', 'to-layer="9" to-port="0"'), InvalidModelError, None, "no layer with id 9"),
    "dangling edge to a missing port": Case(
        edit('from-layer="2" from-port="0"', 'from-layer="2" from-port="5"'), InvalidModelError, CONST,
        "not an output port"),
    "edge into an output port": Case(
        edit('to-layer="3" to-port="1"', 'to-layer="3" to-port="2"'), InvalidModelError, SCALE, "not an input port"),
    "two edges into one port": Case(
        edit('<edge from-layer="2" from-port="0" to-layer="3" to-port="1" />',
             '<edge from-layer="2" from-port="0" to-layer="3" to-port="1" />\n'
             '\t\t<edge from-layer="0" from-port="0" to-layer="3" to-port="1" />'),
        InvalidModelError, SCALE, "two edges into one port"),
    "unconnected input port": Case(
        edit('\t\t<edge from-layer="2" from-port="0" to-layer="3" to-port="1" />\n', ""), InvalidModelError, SCALE,
        "not connected"),
    "duplicate layer id": Case(edit('<layer id="2" name="two"', '<layer id="1" name="two"'), InvalidModelError,
                               "layer 'two' (id 1, Const)", "duplicate layer id 1"),
    "non-integer layer id": Case(edit('<layer id="2" name="two"', '<layer id="two" name="two"'), InvalidModelError,
                                 "layer 'two'", "not an integer"),
    "duplicate port id": Case(edit('<port id="1" precision="FP32">\n\t\t\t\t\t<dim>1</dim>\n\t\t\t\t\t<dim>1</dim>\n'
                                   '\t\t\t\t\t<dim>2</dim>',
                                   '<port id="0" precision="FP32">\n\t\t\t\t\t<dim>1</dim>\n\t\t\t\t\t<dim>1</dim>\n'
                                   '\t\t\t\t\t<dim>2</dim>'), InvalidModelError, POOL, "port id 0 is used twice"),
    ".bin offset past the end": Case(edit('offset="0" size="4"', 'offset="4096" size="4"'), InvalidModelError, CONST,
                                     "past the end"),
    ".bin size lies about the shape": Case(edit('offset="0" size="4"', 'offset="0" size="8"'), InvalidModelError,
                                           CONST, "does not match shape"),
    ".bin shorter than declared": Case(BASE_XML, InvalidModelError, CONST, "past the end", weights=b"\0\0"),
    "negative .bin offset": Case(edit('offset="0" size="4"', 'offset="-4" size="4"'), InvalidModelError, CONST,
                                 "negative"),
    "missing .bin": Case(BASE_XML, InvalidModelError, CONST, "missing", weights=None),
    # An unknown layer type or version is no longer refused by the reader: it is kept as it stands and refused by
    # run and convert (tests/ir/test_unknown_layers.py).
    "zero stride": Case(edit_pool(strides="0, 1"), InvalidModelError, POOL, "'strides' = 0,1: every value must be >= 1"),
    "zero kernel": Case(edit_pool(kernel="2, 0"), InvalidModelError, POOL, "'kernel'"),
    "negative pads": Case(edit_pool(pads_begin="-1, 0"), InvalidModelError, POOL, "must be >= 0"),
    "output size < 1": Case(edit_pool(kernel="5, 5"), InvalidModelError, POOL, "larger than the padded input"),
    "kernel rank differs from the input": Case(edit_pool(kernel="2, 2, 2"), InvalidModelError, POOL,
                                               "3 values for 2 spatial axes"),
    "malformed list attribute": Case(edit_pool(kernel="2;2"), InvalidModelError, POOL, "not an integer"),
    "malformed boolean": Case(edit_pool(_pad_excl="maybe"), InvalidModelError, POOL, "not a boolean"),
    "unknown rounding type": Case(edit_pool(rounding_type="round"), InvalidModelError, POOL,
                                  "allowed: floor, ceil"),
    "ceil_torch in AvgPool-1": Case(edit_pool(rounding_type="ceil_torch"), InvalidModelError, POOL,
                                    "'ceil_torch' is not allowed in AvgPool-1"),
    "dilations in AvgPool-1": Case(edit(POOL_DATA, POOL_DATA.replace("<data ", '<data dilations="1, 1" ')),
                                   InvalidModelError, POOL, "'dilations' is not an attribute of AvgPool-1"),
    "missing required attribute": Case(edit(' kernel="2, 2"', ""), InvalidModelError, POOL,
                                       "required attribute 'kernel'"),
    "missing layer type": Case(edit(' type="Multiply"', ""), InvalidModelError, "layer 'scale'", "'type'"),
    "huge Parameter shape": Case(edit('shape="1,1,4,4"', 'shape="1,1,100000,100000"'), InvalidModelError, PARAM,
                                 "more than 2147483648 elements"),
    "huge declared port": Case(edit("<dim>4</dim>", "<dim>99999999999</dim>"), InvalidModelError, PARAM,
                               "more than 2147483648 elements"),
    "huge Const": Case(edit('shape="1, 1, 1, 1" offset="0" size="4"', 'shape="65536, 65536, 4, 1" offset="0" size="4"'),
                       InvalidModelError, CONST, "more than 2147483648 elements"),
    "dynamic rank": Case(edit('shape="1,1,4,4"', 'shape="..."'), UnsupportedError, PARAM, "dynamic rank"),
    "negative dim": Case(edit("<dim>4</dim>", "<dim>-3</dim>"), InvalidModelError, PARAM, "negative"),
    "unknown precision": Case(edit('precision="FP32" names="x"', 'precision="FP8" names="x"'), UnsupportedError,
                              PARAM, "precision 'FP8'"),
    "unknown element type": Case(edit('element_type="f32" />', 'element_type="f128" />'), InvalidModelError,
                                 PARAM, "'f128'"),
    "incompatible broadcast": Case(edit('shape="1, 1, 1, 1" offset="0" size="4"', 'shape="3" offset="0" size="12"'),
                                   InvalidModelError, SCALE, "do not broadcast", weights=bytes(12)),
    "newline in a layer name": Case(edit('name="pool"', 'name="po&#10;ol"').replace(
        'strides="2, 2" pads_begin', 'strides="0, 2" pads_begin', 1), InvalidModelError, "layer 'po\\nol' (id 1",
        "must be >= 1"),
    "too many ports": Case(edit("<input>\n\t\t\t\t<port id=\"0\" precision=\"FP32\">",
                                "<input>\n\t\t\t\t<port id=\"7\" precision=\"FP32\" />\n\t\t\t\t"
                                "<port id=\"0\" precision=\"FP32\">"),
                           InvalidModelError, POOL, "input ports, AvgPool-1 takes 1"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_file_raises_located_error(tmp_path: Path, name: str) -> None:
    case = CASES[name]
    path = tmp_path / "model.xml"
    path.write_bytes(case.xml.encode() if isinstance(case.xml, str) else case.xml)
    if case.weights is not None:
        path.with_suffix(".bin").write_bytes(case.weights)
    with pytest.raises(case.error) as caught:
        ir.read_model(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: "), message
    if case.where is not None:
        assert case.where in message, message
    assert case.words in message, message
    assert "\n" not in message, message  # the CLI prints it as one line


def test_there_are_at_least_twenty_kinds() -> None:
    assert len(CASES) >= 20


def test_base_file_is_valid(tmp_path: Path) -> None:
    path = tmp_path / "model.xml"
    path.write_text(BASE_XML)
    path.with_suffix(".bin").write_bytes(BASE_BIN)
    model = ir.read_model(path)
    assert ir.check(model) == []


def test_entity_is_never_expanded_even_without_doctype_check(tmp_path: Path) -> None:
    """The parser itself is configured not to resolve entities or load a DTD (defence in depth)."""
    from poolir.ir.reader import _parser

    parser = _parser()
    from lxml import etree

    in_text = XXE.replace('name="&xxe;"', 'name="x"').replace("<layers>", "<layers>&xxe;")
    root = etree.fromstring(in_text.encode(), parser)
    assert "root:" not in etree.tostring(root, encoding="unicode")  # /etc/passwd was not read


def test_no_bin_needed_without_const(tmp_path: Path) -> None:
    b = GraphBuilder("n")
    x = b.parameter("x", "f32", (1, 1, 4))
    b.result(x, "y")
    path = tmp_path / "n.xml"
    ir.write_model(b.build(), path)
    assert not path.with_suffix(".bin").exists()
    assert ir.read_model(path).name == "n"


def test_unreadable_path_is_a_located_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidModelError, match="no such file"):
        ir.read_model(tmp_path / "absent.xml")
