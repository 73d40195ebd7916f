"""Any well-formed IR can be read: layer types (and versions) poolir does not know are kept as they stand.

The files are OpenVINO's own (built with its Python API and written by `openvino.save_model`), so the
round trip is checked byte for byte against what OpenVINO writes; `run` and `convert` refuse such a graph
with one message listing each unknown type once with its count; `inspect` marks them; hostile files stay
refused with the project's errors.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from poolir import converter, ir, runtime
from poolir.converter.cli import main
from poolir.ir.errors import InvalidModelError, PoolirError, UnsupportedError

from tests.networks.peers import run_onnxruntime

ov = pytest.importorskip("openvino")


def _openvino_file(folder: Path) -> Path:
    """Parameter -> Sin -> Cos -> Sin -> AvgPool -> Result, plus a CumSum branch: three types poolir lacks."""
    from openvino import opset1, opset3

    x = opset1.parameter([1, 2, 8, 8], np.float32, name="x")
    a = opset1.sin(x)
    b = opset1.cos(a)
    c = opset1.sin(b)
    pool = opset1.avg_pool(c, [2, 2], [0, 0], [0, 0], [2, 2], exclude_pad=True)
    cum = opset3.cumsum(x, opset1.constant(np.int64(3)))
    model = ov.Model([opset1.result(pool), opset1.result(cum)], [x], "unknown_types")
    path = folder / "unknown.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    return path


@pytest.fixture(scope="module")
def openvino_file(tmp_path_factory) -> Path:
    return _openvino_file(tmp_path_factory.mktemp("unknown"))


def _bin(path: Path) -> bytes:
    weights = path.with_suffix(".bin")
    return weights.read_bytes() if weights.exists() else b""


def test_openvino_file_with_unknown_types_round_trips_byte_for_byte(openvino_file: Path) -> None:
    model = ir.read_model(openvino_file)
    unknown = sorted({layer.type for layer in model.layers if not ir.schema.is_known(layer)})
    assert unknown == ["Cos", "CumSum", "Sin"]
    assert ir.serialize(model) == (openvino_file.read_bytes(), _bin(openvino_file))


def test_declared_dims_of_unknown_layers_are_trusted_downstream(openvino_file: Path) -> None:
    model = ir.read_model(openvino_file)
    inference = ir.infer_model(model)
    pool = next(model.layers_of_type("AvgPool"))
    assert [d.min for d in inference.output(pool.id, pool.outputs[0].id).shape] == [1, 2, 4, 4]
    assert inference.warnings == []


def test_run_and_convert_list_every_unknown_type_once_with_its_count(openvino_file: Path) -> None:
    model = ir.read_model(openvino_file)
    expected = "unsupported layer types: CumSum-opset3, Sin-opset1 (2 layers), Cos-opset1"  # file order
    with pytest.raises(UnsupportedError, match=re.escape(expected)):
        runtime.run(model, {"x": np.zeros((1, 2, 8, 8), np.float32)})
    with pytest.raises(UnsupportedError, match=re.escape(expected)):
        converter.ir_to_onnx(model)
    result = CliRunner().invoke(main, ["run", str(openvino_file)])
    assert result.exit_code == 2 and expected in result.output
    assert result.output.count("Sin-") == 1


def test_inspect_marks_unknown_layers_and_shows_raw_attributes(openvino_file: Path) -> None:
    result = CliRunner().invoke(main, ["inspect", str(openvino_file)])
    assert result.exit_code == 0, result.output
    marked = [line for line in result.output.splitlines() if "unknown layer type" in line]
    assert len(marked) == 4 and "declared output dims trusted" in marked[0]
    as_json = CliRunner().invoke(main, ["inspect", "--json", str(openvino_file)])
    assert '"known": false' in as_json.output


def test_an_unknown_version_of_a_known_type_is_kept_and_refused_alike(openvino_file: Path, tmp_path: Path) -> None:
    text = openvino_file.read_text()
    edited = re.sub(r'(type="AvgPool" version=")opset1"', r'\1opset99"', text)
    assert edited != text
    path = tmp_path / "future.xml"
    path.write_text(edited)
    path.with_suffix(".bin").write_bytes(_bin(openvino_file))
    model = ir.read_model(path)
    pool = next(model.layers_of_type("AvgPool"))
    assert not ir.schema.is_known(pool) and pool.attrs["exclude-pad"] == "true"  # raw text
    assert ir.serialize(model)[0] == edited.encode()
    with pytest.raises(UnsupportedError, match=re.escape("AvgPool-opset99")):
        runtime.run(model, {"x": np.zeros((1, 2, 8, 8), np.float32)})


_HOSTILE_BASE = """<?xml version="1.0"?>
<net name="n" version="11">
\t<layers>
\t\t<layer id="0" name="x" type="Parameter" version="opset1">
\t\t\t<data shape="1,2" element_type="f32" />
\t\t\t<output><port id="0" precision="FP32"><dim>1</dim><dim>2</dim></port></output>
\t\t</layer>
\t\t<layer id="1" name="u" type="Frobnicate" version="opset3">
\t\t\t<data alpha="0.5" />
\t\t\t<input><port id="0" precision="FP32"><dim>1</dim><dim>2</dim></port></input>
\t\t\t<output><port id="1" PRECISION><dim>DIM</dim><dim>2</dim></port></output>
\t\t</layer>
\t\t<layer id="2" name="y" type="Result" version="opset1">
\t\t\t<input><port id="0" precision="FP32"><dim>1</dim><dim>2</dim></port></input>
\t\t</layer>
\t</layers>
\t<edges>
\t\t<edge from-layer="0" from-port="0" to-layer="1" to-port="0" />
\t\t<edge from-layer="1" from-port="FROM" to-layer="2" to-port="0" />
\t</edges>
</net>
"""


def _hostile(precision: str = 'precision="FP32"', dim: str = "1", from_port: str = "1") -> bytes:
    return (_HOSTILE_BASE.replace("PRECISION", precision).replace("DIM", dim)
            .replace("FROM", from_port).encode())


def test_a_sound_unknown_layer_reads() -> None:
    model = ir.parse_model(_hostile())
    assert model.layer(1).attrs == {"alpha": "0.5"}


@pytest.mark.parametrize("change, error, message", [
    (dict(dim="4611686018427387904"), InvalidModelError, "the limit poolir allocates"),
    (dict(dim="-7"), InvalidModelError, "-7"),
    (dict(from_port="5"), InvalidModelError, "dangling edge"),
    (dict(precision=""), InvalidModelError, "declares no precision"),
    (dict(precision='precision="NOPE"'), UnsupportedError, "precision"),
], ids=["huge_dim", "negative_dim", "dangling_edge", "no_precision", "bad_precision"])
def test_hostile_unknown_layers_are_refused_with_the_projects_errors(change, error, message) -> None:
    with pytest.raises(error, match=message) as raised:
        ir.parse_model(_hostile(**change))
    assert isinstance(raised.value, PoolirError)
    assert "'u'" in str(raised.value) or "edge from layer 1" in str(raised.value)


def test_sub_graphs_of_unknown_layers_are_kept_in_place_with_their_weights(tmp_path: Path) -> None:
    """OpenVINO's If-8 (from an ONNX If) holds port maps before its ports and two bodies after them; the else
    body's Multiply-by-minus-one Const points into the .bin. All of it is written back byte for byte, and a
    model whose top-level Consts change keeps the bodies' bytes where they were."""
    import onnx
    from onnx import TensorProto as T, helper

    then = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [],
                             [helper.make_tensor_value_info("t", T.FLOAT, [2, 3])])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                              [helper.make_tensor_value_info("e", T.FLOAT, [2, 3])])
    graph = helper.make_graph([helper.make_node("If", ["c"], ["i"], then_branch=then, else_branch=other),
                               helper.make_node("Add", ["i", "k"], ["y"])], "m",
                              [helper.make_tensor_value_info("c", T.BOOL, []),
                               helper.make_tensor_value_info("x", T.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", T.FLOAT, None)],
                              [onnx.numpy_helper.from_array(np.full((2, 3), 0.25, np.float32), "k")])
    source = tmp_path / "if.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), source)
    path = tmp_path / "if.xml"
    ov.save_model(ov.convert_model(str(source)), path, compress_to_fp16=False)
    model = ir.read_model(path)
    (branch,) = [layer for layer in model.layers if not ir.schema.is_known(layer)]
    assert branch.type == "If" and [text[1:text.index(">")].split()[0] for _, text in branch.extra_elements] == [
        "else_port_map", "then_port_map", "then_body", "else_body"]
    assert ir.serialize(model) == (path.read_bytes(), _bin(path))
    # The condition is an input, so the If is decided at run time: run by poolir, and as an ONNX If by onnxruntime.
    x = np.arange(-3, 3, dtype=np.float32).reshape(2, 3)
    back = converter.ir_to_onnx(model)
    for condition, expected in ((True, np.maximum(x, 0) + 0.25), (False, -x + 0.25)):  # hand-worked
        feeds = {"c": np.array(condition), "x": x}
        np.testing.assert_array_equal(next(iter(runtime.run(model, feeds).values())), expected)
        np.testing.assert_array_equal(next(iter(run_onnxruntime(back, feeds).values())), expected)
    # Change the top-level Const: OpenVINO still runs the written file, with the bodies' Const intact.
    (k,) = [layer for layer in model.layers if layer.type == "Const" and layer.data.size == 6]
    k.data = np.full((2, 3), 2.0, np.float32)
    ir.write_model(model, tmp_path / "again.xml")
    compiled = ov.Core().compile_model(str(tmp_path / "again.xml"), "CPU")
    (y,) = compiled({"c": np.array(False), "x": x}).values()
    np.testing.assert_array_equal(y, -x + 2.0)  # hand-worked: the else branch negates, then + 2
