"""`poolir inspect` through click's CliRunner: the five AvgPool-1 spec examples, JSON, --strict, ONNX, bad files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper

from poolir import ir
from poolir.converter.cli import main
from poolir.ir.builder import GraphBuilder

SEEDS = Path(__file__).parent / "data" / "seed_avgpool1"


def run(*args: str):
    return CliRunner().invoke(main, ["inspect", *args])


@pytest.mark.parametrize("example,flagged", [(1, True), (2, True), (3, False), (4, False), (5, False)])
def test_seed_examples_flag_exactly_the_first_two(example: int, flagged: bool) -> None:
    """AvgPool-1 spec examples 1 and 2 declare 32x32 where same_upper with stride 2 gives ceil(32/2) = 16."""
    result = run(str(SEEDS / f"example{example}.xml"))
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if "declared" in line and "inferred" in line]
    if flagged:
        assert lines and all("[1,3,32,32]" in line and "[1,3,16,16]" in line for line in lines)
        assert "warnings: 1" in result.output
    else:
        assert lines == [] and "warnings: 0" in result.output
    strict = run("--strict", str(SEEDS / f"example{example}.xml"))
    assert strict.exit_code == (2 if flagged else 0)


@pytest.mark.parametrize("example,out", [(3, 10), (4, 15), (5, 14)])
def test_seed_examples_three_to_five_infer_the_spec_dims(example: int, out: int) -> None:
    # Hand-worked: (32 + 1 + 1 - 5) // 3 + 1 = 10; (32 + 2 - 5) // 2 + 1 = 15; valid: (32 - 5) // 2 + 1 = 14.
    result = json.loads(run("--json", str(SEEDS / f"example{example}.xml")).output)
    assert result["outputs"] == [{"name": "output", "element_type": "f32", "shape": [1, 3, out, out]}]


def test_json_has_layers_attributes_and_declared_vs_inferred() -> None:
    result = run("--json", str(SEEDS / "example1.xml"))
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["format"] == "ir" and data["version"] == "IR v11"
    assert data["inputs"] == [{"name": "input", "element_type": "f32", "shape": [1, 3, 32, 32]}]
    pool = next(layer for layer in data["layers"] if layer["type"] == "AvgPool")
    assert pool["version"] == "opset1" and pool["id"] == 1
    assert pool["attrs"]["exclude-pad"] is True and pool["attrs"]["kernel"] == [2, 2]
    assert pool["outputs"] == [{"port": 1, "name": "output", "element_type": "f32", "declared": [1, 3, 32, 32],
                                "inferred": [1, 3, 16, 16]}]
    assert len(data["warnings"]) == 1 and "declared [1,3,32,32], inferred [1,3,16,16]" in data["warnings"][0]


def test_strict_failure_is_one_line_on_stderr() -> None:
    result = run("--strict", str(SEEDS / "example2.xml"))
    assert result.exit_code == 2
    assert "declared [1,3,32,32], inferred [1,3,16,16]" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_dynamic_dims_are_shown(tmp_path: Path) -> None:
    b = GraphBuilder("dyn")
    x = b.parameter("x", "f16", (-1, 3, 8, 8))
    (y, _) = b.add("MaxPool", "opset8", [x], {"kernel": (2, 2), "strides": (2, 2), "pads_begin": (0, 0),
                                            "pads_end": (0, 0)}, output_names=["y", "idx"])
    b.result(y, "y")
    path = tmp_path / "dyn.xml"
    ir.write_model(b.build(), path)
    result = run(str(path))
    assert result.exit_code == 0
    assert "x: f16 [?,3,8,8]" in result.output and "y: f16 [?,3,4,4]" in result.output
    assert "MaxPool opset8" in result.output


@pytest.mark.parametrize("content,words", [
    (b"", "empty"),
    (b"<net", "malformed XML"),
    (b'<?xml version="1.0"?><!DOCTYPE net [<!ENTITY a "b">]><net version="11"/>', "DOCTYPE"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "not UTF-8"),
])
def test_bad_files_exit_2_with_one_line(tmp_path: Path, content: bytes, words: str) -> None:
    path = tmp_path / "bad.xml"
    path.write_bytes(content)
    result = run(str(path))
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and words in lines[0]
    assert "Traceback" not in result.output


def test_layer_problem_names_file_and_layer(tmp_path: Path) -> None:
    path = tmp_path / "zero.xml"
    path.write_text((SEEDS / "example3.xml").read_text().replace('strides="3,3"', 'strides="0,3"'))
    result = run(str(path))
    assert result.exit_code == 2
    assert f"{path}: layer 'avgpool' (id 1, AvgPool): attribute 'strides'" in result.output


def test_missing_file_and_unknown_suffix_exit_2(tmp_path: Path) -> None:
    assert run(str(tmp_path / "absent.xml")).exit_code == 2
    other = tmp_path / "model.txt"
    other.write_text("x")
    result = run(str(other))
    assert result.exit_code == 2 and "expected .onnx or .xml" in result.output


def _onnx_model(declared_output: list[int] | None) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 32, 32])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, declared_output)
    node = helper.make_node("AveragePool", ["x"], ["y"], name="pool", kernel_shape=[2, 2], strides=[2, 2],
                            auto_pad="SAME_UPPER")
    graph = helper.make_graph([node], "g", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=10)


def test_onnx_inspect_shows_nodes_and_inferred_dims(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(_onnx_model(["N", 3, 16, 16]), path)
    result = run("--json", str(path))
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["format"] == "onnx" and data["version"] == "ONNX opset 19"
    (node,) = data["layers"]
    assert node["type"] == "AveragePool" and node["attrs"]["auto_pad"] == "SAME_UPPER"
    assert node["outputs"][0]["inferred"] == ["N", 3, 16, 16]
    assert data["warnings"] == []


def test_onnx_declared_output_disagreement_is_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(_onnx_model(["N", 3, 32, 32]), path)
    result = run(str(path))
    assert result.exit_code == 0, result.output
    assert "declared [?,3,32,32], inferred [?,3,16,16]" in result.output
    assert run("--strict", str(path)).exit_code == 2


def test_garbage_onnx_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.onnx"
    path.write_bytes(np.random.default_rng(3).bytes(300))
    result = run(str(path))
    assert result.exit_code == 2 and str(path) in result.output


def test_small_const_values_are_shown(tmp_path: Path) -> None:
    import ml_dtypes

    b = GraphBuilder("c")
    x = b.parameter("x", "bf16", (1, 2))
    (y,) = b.add("Power", "opset1", [x, b.const(np.asarray([2.5], ml_dtypes.bfloat16), name="p")])
    b.result(y, "y")
    path = tmp_path / "c.xml"
    ir.write_model(b.build(), path)
    data = json.loads(run("--json", str(path)).output)
    assert next(layer for layer in data["layers"] if layer["name"] == "p")["value"] == [2.5]
    assert "value=[2.5]" in run(str(path)).output
