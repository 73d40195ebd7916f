"""Fuzz the IR reader, .bin reader, shape inference, the IR runtime and IR -> ONNX with mutated files.

Each example takes a valid IR from ir_bases.py and breaks it 1-3 times: an attribute of any element
(<net>, <layer>, <data>, <port>, <edge>) set to a hostile value, a <dim> rewritten, an element removed,
duplicated or renamed, an edge added or redirected, layer ids swapped; then maybe the .bin truncated,
extended or overwritten; or the bytes of the file itself truncated or flipped. Whatever comes out must
be refused with a PoolirError naming the file, or be a model poolir can write, read back, run and convert.
"""

from __future__ import annotations

import copy

from hypothesis import given, strategies as st
from lxml import etree

from tests.robustness.exercise import exercise_ir
from tests.robustness.harness import fuzz
from tests.robustness.ir_bases import bases

INTERESTING_INTS = (-(2**63) - 1, -(2**63), -(2**31), -2, -1, 0, 1, 2, 3, 7, 255, 2**31 - 1, 2**31, 2**32,
                    2**63 - 1, 2**63, 2**64, 10**30)
WORDS = ("", " ", "?", "-1", "1..", "..4", "2..1", "1..8", "0..0", "abc", "1.5", "nan", "inf", "-0", "+3", " 2 ",
         "1,", ",", "1,,2", "true", "false", "TRUE", "yes", "explicit", "same_upper", "same_lower", "valid",
         "notset", "floor", "ceil", "ceil_torch", "CEIL", "numpy", "none", "pdpd", "constant", "reflect",
         "f32", "f16", "bf16", "f64", "i8", "u8", "i32", "i64", "u1", "boolean", "f8e4m3", "string",
         "FP32", "FP16", "I64", "U8", "BOOL", "opset1", "opset8", "opset14", "opset16", "opset17", "opset0",
         "opset-1", "Opset1", "ext", "AvgPool", "MaxPool", "Const", "Parameter", "Result", "Convolution",
         "\u00e9", "\x7f", "a\tb", "[1,2]", "[...]", "...")

int_text = st.one_of(st.sampled_from(INTERESTING_INTS), st.integers(-3, 12)).map(str)
int_list_text = st.lists(st.one_of(st.sampled_from(INTERESTING_INTS), st.integers(-2, 6)), max_size=6).map(
    lambda values: ", ".join(map(str, values)))
hostile_text = st.one_of(int_text, int_list_text, st.sampled_from(WORDS),
                         st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12))
ATTRIBUTE_NAMES = ("id", "name", "type", "version", "precision", "names", "kernel", "strides", "pads_begin",
                   "pads_end", "dilations", "exclude-pad", "rounding_type", "auto_pad", "axis",
                   "index_element_type", "element_type", "shape", "offset", "size", "from-layer", "from-port",
                   "to-layer", "to-port", "keep_dims", "special_zero", "output_type", "batch_dims", "pad_mode",
                   "auto_broadcast", "destination_type", "mode", "bogus")


def _elements(root: etree._Element, predicate=lambda e: True) -> list[etree._Element]:
    return [element for element in root.iter() if isinstance(element.tag, str) and predicate(element)]


def set_attribute(draw, root):
    element = draw(st.sampled_from(_elements(root)))
    existing = sorted(element.attrib)
    name = draw(st.sampled_from(existing) if existing and draw(st.booleans()) else st.sampled_from(ATTRIBUTE_NAMES))
    element.set(name, draw(hostile_text))


def delete_attribute(draw, root):
    candidates = _elements(root, lambda e: len(e.attrib) > 0)
    if not candidates:  # earlier mutations may have removed every attribute
        return
    element = draw(st.sampled_from(candidates))
    del element.attrib[draw(st.sampled_from(sorted(element.attrib)))]


def set_dim(draw, root):
    dims = _elements(root, lambda e: e.tag == "dim")
    if dims:
        draw(st.sampled_from(dims)).text = draw(hostile_text)


def remove_element(draw, root):
    children = _elements(root, lambda e: e is not root)
    if not children:
        return
    element = draw(st.sampled_from(children))
    element.getparent().remove(element)


def duplicate_element(draw, root):
    children = _elements(root, lambda e: e is not root)
    if not children:
        return
    element = draw(st.sampled_from(children))
    element.addnext(copy.deepcopy(element))


def rename_element(draw, root):
    element = draw(st.sampled_from(_elements(root)))
    element.tag = draw(st.sampled_from(("net", "layers", "layer", "data", "input", "output", "port", "dim",
                                        "edges", "edge", "rt_info", "attribute", "blob", "weights")))


def add_edge(draw, root):
    edges = root.find("edges")
    if edges is None:
        return
    small = st.integers(-1, 12).map(str)
    etree.SubElement(edges, "edge", {"from-layer": draw(small), "from-port": draw(small),
                                     "to-layer": draw(small), "to-port": draw(small)})


def redirect_edge(draw, root):
    edges = _elements(root, lambda e: e.tag == "edge")
    if edges:
        edge = draw(st.sampled_from(edges))
        edge.set(draw(st.sampled_from(("from-layer", "from-port", "to-layer", "to-port"))),
                 str(draw(st.integers(-1, 12))))


def swap_layer_ids(draw, root):
    layers = _elements(root, lambda e: e.tag == "layer" and e.get("id") is not None)
    if len(layers) >= 2:
        first, second = draw(st.sampled_from(layers)), draw(st.sampled_from(layers))
        ids = first.get("id"), second.get("id")
        first.set("id", ids[1])
        second.set("id", ids[0])


def add_port(draw, root):
    groups = _elements(root, lambda e: e.tag in ("input", "output"))
    if groups:
        group = draw(st.sampled_from(groups))
        port = etree.SubElement(group, "port", {"id": str(draw(st.integers(0, 9))), "precision": "FP32"})
        for value in draw(st.lists(st.integers(0, 5), max_size=4)):
            etree.SubElement(port, "dim").text = str(value)


TREE_MUTATIONS = (set_attribute, set_attribute, set_attribute, delete_attribute, set_dim, set_dim, remove_element,
                  duplicate_element, rename_element, add_edge, redirect_edge, swap_layer_ids, add_port)


@st.composite
def mutated_bin(draw, weights: bytes) -> bytes | None:
    choice = draw(st.sampled_from(("keep", "keep", "none", "truncate", "extend", "garbage")))
    if choice == "keep":
        return weights
    if choice == "none":
        return None
    if choice == "truncate":
        return weights[:draw(st.integers(0, max(0, len(weights) - 1)))]
    if choice == "extend":
        return weights + draw(st.binary(min_size=1, max_size=9))
    return draw(st.binary(min_size=len(weights), max_size=len(weights)))


@st.composite
def mutated_tree(draw):
    base = draw(st.sampled_from(bases()))
    root = etree.fromstring(base.xml)
    for _ in range(draw(st.integers(1, 3))):
        mutation = draw(st.sampled_from(TREE_MUTATIONS))
        mutation(draw, root)
    return etree.tostring(root), draw(mutated_bin(base.weights))


@st.composite
def mutated_bytes(draw):
    base = draw(st.sampled_from(bases()))
    data = bytearray(base.xml)
    kind = draw(st.sampled_from(("truncate", "flip", "insert", "garbage")))
    if kind == "truncate":
        data = data[:draw(st.integers(0, len(data) - 1))]
    elif kind == "flip":
        for _ in range(draw(st.integers(1, 4))):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    elif kind == "insert":
        at = draw(st.integers(0, len(data)))
        data[at:at] = draw(st.sampled_from((b"<", b">", b"&", b"&amp;", b"\x00", b"\xff\xfe", b"]]>",
                                            b"<!-- x -->", b"<?pi x?>", b"<![CDATA[7]]>", b"&#0;", b"&#x41;")))
    else:
        data = bytearray(draw(st.binary(max_size=64)))
    return bytes(data), base.weights


@fuzz(1800)
@given(mutated_tree(), st.integers(0, 2**16))
def test_mutated_ir_tree_is_refused_or_works(case, seed):
    xml, weights = case
    exercise_ir(xml, weights, seed=seed)


@fuzz(600)
@given(mutated_bytes())
def test_mutated_ir_bytes_are_refused_or_work(case):
    xml, weights = case
    exercise_ir(xml, weights)


# -- targeted: well-formed values, hostile ranges -------------------------------------------------------

def _pool_layers(root):
    return _elements(root, lambda e: e.tag == "layer" and e.get("type") in ("AvgPool", "MaxPool"))


range_int = st.one_of(st.integers(-2, 9), st.sampled_from((2**31, 2**62, 2**63 - 1, 2**63, 10**19, 10**30)))


@st.composite
def mutated_pool_values(draw):
    """Pooling attributes with syntactically valid values anywhere in range (and out of it), over any input dims."""
    base = draw(st.sampled_from([b for b in bases() if b"Pool" in b.xml]))
    root = etree.fromstring(base.xml)
    layer = _pool_layers(root)[0]
    data = layer.find("data")
    rank = len(data.get("kernel").split(","))
    for name in ("kernel", "strides", "pads_begin", "pads_end", "dilations"):
        if name in data.attrib or name == "dilations" and draw(st.booleans()):
            if draw(st.booleans()):
                length = draw(st.sampled_from((rank, rank, rank, 0, rank - 1, rank + 1)))
                data.set(name, ", ".join(str(draw(range_int)) for _ in range(max(0, length))))
    for name, choices in (("rounding_type", ("floor", "ceil", "ceil_torch", "CEIL", "round")),
                          ("auto_pad", ("explicit", "same_upper", "same_lower", "valid", "notset", "SAME_UPPER")),
                          ("exclude-pad", ("true", "false", "1", "maybe")), ("axis", ("0", "1", "2", "3", "-1", "9")),
                          ("index_element_type", ("i32", "i64", "u8", "f32"))):
        if name in data.attrib and draw(st.integers(0, 3)) == 0:
            data.set(name, draw(st.sampled_from(choices)))
    if draw(st.booleans()):
        parameter = _elements(root, lambda e: e.tag == "layer" and e.get("type") == "Parameter")[0]
        shape = parameter.find("data").get("shape").split(",")
        new = shape[:2] + [str(draw(st.one_of(st.integers(0, 12), st.just(-1), st.sampled_from((2**20, 2**40))))) for _ in shape[2:]]
        parameter.find("data").set("shape", ",".join(new))
    return etree.tostring(root), base.weights


@fuzz(1200)
@given(mutated_pool_values(), st.integers(0, 2**16))
def test_pool_attribute_ranges_are_refused_or_work(case, seed):
    xml, weights = case
    exercise_ir(xml, weights, seed=seed)


@st.composite
def lying_consts(draw):
    """Const offset/size/shape/element_type that lie about the .bin (negative, past EOF, overflow, not a multiple)."""
    base = draw(st.sampled_from([b for b in bases() if b.weights]))
    root = etree.fromstring(base.xml)
    consts = _elements(root, lambda e: e.tag == "layer" and e.get("type") == "Const")
    data = draw(st.sampled_from(consts)).find("data")
    lie = st.one_of(st.integers(-9, 90), st.sampled_from((2**31, 2**32 - 1, 2**63 - 1, 2**63, 2**64 + 4, -(2**63))))
    for name in draw(st.sets(st.sampled_from(("offset", "size", "shape", "element_type")), min_size=1)):
        if name in ("offset", "size"):
            data.set(name, str(draw(lie)))
        elif name == "shape":
            data.set("shape", ", ".join(str(draw(st.one_of(st.integers(0, 5), st.sampled_from((2**31, 2**62, 2**64)))))
                                         for _ in range(draw(st.integers(0, 4)))))
        else:
            data.set("element_type", draw(st.sampled_from(("f32", "f16", "bf16", "f64", "i8", "u8", "i32", "i64",
                                                           "boolean", "u1", "u4", "string"))))
    return etree.tostring(root), draw(mutated_bin(base.weights))


@fuzz(800)
@given(lying_consts(), st.integers(0, 2**16))
def test_lying_const_offsets_and_sizes_are_refused_or_work(case, seed):
    xml, weights = case
    exercise_ir(xml, weights, seed=seed)


@st.composite
def plausible_ir_pools(draw):
    """One AvgPool or MaxPool layer of any version with small, mostly valid geometry (pads up to 4 past the
    kernel, every rounding and auto_pad, dilations, tiny inputs): the edge cases of OpenVINO's rules."""
    spatial = draw(st.integers(1, 3))
    small = lambda low, high: ", ".join(str(draw(st.integers(low, high))) for _ in range(spatial))  # noqa: E731
    dims = [draw(st.integers(1, 2)), draw(st.integers(1, 3))] + [draw(st.integers(1, 7)) for _ in range(spatial)]
    layer_type = draw(st.sampled_from(("AvgPool", "MaxPool")))
    opset = draw(st.sampled_from((1, 14, 16) if layer_type == "AvgPool" else (1, 8, 14)))
    element_type = draw(st.sampled_from(("f32", "f16", "f64") + (("i8", "u8", "i32") if layer_type == "MaxPool" else ())))
    rounding = draw(st.sampled_from(("floor", "ceil") + (("ceil_torch",) if opset >= 14 else ())))
    data = {"kernel": small(1, 4), "strides": small(1, 3), "pads_begin": small(0, 4), "pads_end": small(0, 4),
            "rounding_type": rounding, "auto_pad": draw(st.sampled_from(("explicit", "explicit", "same_upper",
                                                                          "same_lower", "valid")))}
    outputs = 1
    if layer_type == "AvgPool":
        data["exclude-pad"] = draw(st.sampled_from(("true", "false")))
        if opset >= 16:
            data["dilations"] = small(1, 3)
    elif opset >= 8:
        data["dilations"] = small(1, 3)
        data["index_element_type"] = draw(st.sampled_from(("i32", "i64")))
        data["axis"] = str(draw(st.integers(-len(dims), len(dims) - 1)))
        outputs = 2
    shape = ",".join(map(str, dims))
    attributes = " ".join(f'{key}="{value}"' for key, value in data.items())
    results = "".join(f'<layer id="{2 + i}" name="out{i}" type="Result" version="opset1"><input><port id="0"/></input>'
                      "</layer>" for i in range(outputs))
    edges = "".join(f'<edge from-layer="1" from-port="{1 + i}" to-layer="{2 + i}" to-port="0"/>' for i in range(outputs))
    xml = (f'<net name="p" version="11"><layers>'
           f'<layer id="0" name="x" type="Parameter" version="opset1"><data shape="{shape}" element_type="{element_type}"/>'
           f'<output><port id="0" names="x"/></output></layer>'
           f'<layer id="1" name="pool" type="{layer_type}" version="opset{opset}"><data {attributes}/>'
           f'<input><port id="0"/></input><output>'
           + "".join(f'<port id="{1 + i}" names="out{i}"/>' for i in range(outputs)) +
           f'</output></layer>{results}</layers><edges><edge from-layer="0" from-port="0" to-layer="1" to-port="0"/>'
           f'{edges}</edges></net>')
    return xml.encode()


@fuzz(1200)
@given(plausible_ir_pools(), st.integers(0, 2**16), st.booleans())
def test_edge_of_range_ir_pooling_runs_and_converts_exactly(xml, seed, specials):
    exercise_ir(xml, None, seed=seed, specials=specials)
