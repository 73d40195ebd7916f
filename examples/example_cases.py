"""The examples' raw material: the Example record, the seed spec texts, the onnx package's backend cases and
the model builders (examples/generate.py puts them together)."""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper


EXAMPLES = Path(__file__).resolve().parent
DEFAULT_SEEDS = EXAMPLES.parent.parent / "shared" / "seeds"
MAXPOOL_SEED = "004_367079bfeb48a1e3.txt"
AVGPOOL1_SEED = "002_e3fe51a60459ca01.txt"
LPPOOL_SEEDS = ("000_3cc2b6014bf515c9.txt", "001_f9f702c8c737a8e1.txt")
AVERAGEPOOL_SEED = "003_7dadfe3c908654bc.txt"
# onnxruntime 1.31 reads ONNX IR versions up to 13; every op used here exists in IR version 10.
ONNX_IR_VERSION = 10
# Largest output kept verbatim in a manifest (to show a peer's wrong numbers side by side).
MAX_LISTED_ELEMENTS = 64


@dataclass
class Example:
    name: str
    title: str
    inputs: dict[str, np.ndarray]
    expected: dict[str, np.ndarray]
    expected_source: dict[str, str]
    onnx_model: onnx.ModelProto | None = None
    ir_xml: str | None = None
    ir_files: dict[str, bytes] | None = None  # an IR written by OpenVINO: model.xml and model.bin
    # Per-example tolerance, when the expected values are rounded in their source.
    tolerance: dict[str, Any] | None = None
    # verify path name -> reason, for paths that are expected to be refused.
    expected_refused: dict[str, str] = field(default_factory=dict)
    # verify path name -> reason, for paths known to compute something else (a peer's documented deviation).
    known_deviations: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    cross_checks: list[dict[str, Any]] = field(default_factory=list)


# ----------------------------------------------------------------------------------------------------
# Sources: the seed texts


@dataclass
class SeedExample:
    """One `expect(node, ...)` example of an ONNX operator doc, parsed from its text."""

    name: str
    op_type: str
    node_inputs: list[str]
    node_outputs: list[str]
    attributes: dict[str, Any]
    arrays: dict[str, np.ndarray]  # only the arrays written out literally
    test_name: str


_ARRAY = re.compile(r"^(\w+) = np\.array\((.*?)\)\.astype\(np\.(\w+)\)", re.S | re.M)
_MAKE_NODE = re.compile(r"node = onnx\.helper\.make_node\((.*?)\n\)", re.S)
_EXPECT = re.compile(r"expect\(node, inputs=\[(.*?)\], outputs=\[(.*?)\], name='(\w+)'\)")


def parse_seed_examples(text: str) -> dict[str, SeedExample]:
    """Every example of an ONNX operator doc: a name line, a docstring, make_node, arrays, expect()."""
    examples = {}
    for match in re.finditer(r'^(\w+)\n"""\n(.*?)^expect\(.*?\)$', text, re.S | re.M):
        name, body = match.group(1), match.group(0)
        call = ast.parse("f(" + _MAKE_NODE.search(body).group(1) + "\n)", mode="eval").body
        op_type = ast.literal_eval(call.args[0])
        keywords = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
        node_inputs, node_outputs = keywords.pop("inputs"), keywords.pop("outputs")
        attributes = {k: int(v) if isinstance(v, bool) else v for k, v in keywords.items()}
        arrays = {m.group(1): np.array(ast.literal_eval(m.group(2))).astype(m.group(3))
                  for m in _ARRAY.finditer(body)}
        test_name = _EXPECT.search(body).group(3)
        examples[name] = SeedExample(name, op_type, node_inputs, node_outputs, attributes, arrays, test_name)
    return examples


@dataclass
class SpecIrLayer:
    """One AvgPool `<layer>` example of the OpenVINO AvgPool-1 spec: its data attributes and port dims."""

    data: dict[str, str]
    input_dims: list[int]
    declared_output_dims: list[int]


def parse_avgpool1_spec_layers(text: str) -> list[SpecIrLayer]:
    layers = []
    for block in re.findall(r'<layer \.\.\. type="AvgPool" \.\.\. >(.*?)</layer>', text, re.S):
        data = dict(re.findall(r'([\w-]+)="([^"]*)"', re.search(r"<data (.*?)/>", block).group(1)))
        ports = re.findall(r"<port id=\"\d+\">(.*?)</port>", block, re.S)
        dims = [[int(d) for d in re.findall(r"<dim>(\d+)</dim>", port)] for port in ports]
        layers.append(SpecIrLayer(data, dims[0], dims[1]))
    return layers


def backend_cases() -> dict[str, Any]:
    """The ONNX backend node test cases of the pooling operators, by test name."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # other operators' generators warn about casts
        cases = collect_testcases(None)
    pooling = {}
    for case in cases:
        if case.model is not None and "Pool" in case.model.graph.node[0].op_type and "expanded" not in case.name:
            pooling.setdefault(case.name, case)
    return pooling


# ----------------------------------------------------------------------------------------------------
# Model builders


def onnx_single_node(name: str, op_type: str, opset: int, inputs: dict[str, tuple[list, int]],
                     outputs: dict[str, tuple[list | None, int]], **attributes) -> onnx.ModelProto:
    """A one-node ONNX model; shapes may hold strings (symbolic dims, e.g. a dynamic batch).

    An output shape of None is filled in by ONNX shape inference (used only where it is plainly right);
    examples whose expected arrays are known declare the shape of those arrays.
    """
    node = helper.make_node(op_type, list(inputs), list(outputs), name=name, **attributes)
    graph = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info(n, elem, shape) for n, (shape, elem) in inputs.items()],
        [helper.make_tensor_value_info(n, elem, shape) for n, (shape, elem) in outputs.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ONNX_IR_VERSION,
                              producer_name="poolir-examples")
    if any(shape is None for shape, _ in outputs.values()):
        model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    onnx.checker.check_model(model, full_check=True)
    return model


_IR_TEMPLATE = """<?xml version="1.0"?>
<net name="{name}" version="11">
\t<layers>
\t\t<layer id="0" name="input" type="Parameter" version="opset1">
\t\t\t<data shape="{input_shape}" element_type="f32"/>
\t\t\t<output>
\t\t\t\t<port id="0" precision="FP32" names="input">
{input_dims}
\t\t\t\t</port>
\t\t\t</output>
\t\t</layer>
\t\t<layer id="1" name="pool" type="AvgPool" version="opset1">
\t\t\t<data {data}/>
\t\t\t<input>
\t\t\t\t<port id="0" precision="FP32">
{input_dims}
\t\t\t\t</port>
\t\t\t</input>
\t\t\t<output>
\t\t\t\t<port id="1" precision="FP32" names="output">
{output_dims}
\t\t\t\t</port>
\t\t\t</output>
\t\t</layer>
\t\t<layer id="2" name="output/sink_port_0" type="Result" version="opset1">
\t\t\t<input>
\t\t\t\t<port id="0" precision="FP32">
{output_dims}
\t\t\t\t</port>
\t\t\t</input>
\t\t</layer>
\t</layers>
\t<edges>
\t\t<edge from-layer="0" from-port="0" to-layer="1" to-port="0"/>
\t\t<edge from-layer="1" from-port="1" to-layer="2" to-port="0"/>
\t</edges>
</net>
"""


def avgpool_ir(name: str, data: dict[str, str], input_dims: list[int], output_dims: list[int]) -> str:
    """A complete IR v11 file around one AvgPool-1 layer, its `<data>` attributes kept as the spec spells them."""
    def dims(values: list[int]) -> str:
        return "\n".join(f"\t\t\t\t\t<dim>{d}</dim>" for d in values)

    return _IR_TEMPLATE.format(name=name, input_shape=",".join(map(str, input_dims)), input_dims=dims(input_dims),
                               output_dims=dims(output_dims),
                               data=" ".join(f'{k}="{v}"' for k, v in data.items()))


def sixteenths(rng: np.random.Generator, shape: tuple[int, ...], dtype=np.float32) -> np.ndarray:
    """Random multiples of 1/16 in [-8, 8): exact in f16 and f32, so sums are exact and files compress."""
    return (rng.integers(-128, 128, size=shape) / 16).astype(dtype)
