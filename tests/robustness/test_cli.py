"""The CLI on hostile inputs: every command keeps the contract of cli_check.py, through click's CliRunner
(fuzzed) and through a real subprocess (a few cases)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from hypothesis import given, strategies as st
from onnx import TensorProto, helper

from tests.robustness.cli_check import all_commands, invoke_cli
from tests.robustness.harness import fuzz
from tests.robustness.test_ir_fuzz import mutated_bytes, mutated_pool_values, mutated_tree
from tests.robustness.test_onnx_fuzz import garbled_onnx_bytes, plausible_pool_models, pool_models

CORPUS = Path(__file__).parent / "corpus"


def _write_ir(folder: Path, xml: bytes, weights: bytes | None) -> Path:
    path = folder / "model.xml"
    path.write_bytes(xml)
    if weights is not None:
        path.with_suffix(".bin").write_bytes(weights)
    return path


@fuzz(160)
@given(st.one_of(mutated_tree(), mutated_bytes(), mutated_pool_values()))
def test_cli_on_mutated_ir(tmp_path_factory, case):
    folder = tmp_path_factory.mktemp("ir")
    all_commands(_write_ir(folder, *case), folder)


@fuzz(160)
@given(st.one_of(pool_models(), plausible_pool_models()))
def test_cli_on_mutated_onnx(tmp_path_factory, model):
    folder = tmp_path_factory.mktemp("onnx")
    path = folder / "model.onnx"
    onnx.save(model, path)
    all_commands(path, folder)


@fuzz(100)
@given(garbled_onnx_bytes())
def test_cli_on_garbled_onnx(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("garbled")
    path = folder / "model.onnx"
    path.write_bytes(data)
    all_commands(path, folder)


def test_cli_on_missing_files_and_directories(tmp_path):
    missing = tmp_path / "absent.xml"
    invoke_cli("inspect", ["inspect", missing], names=str(missing))
    invoke_cli("run", ["run", missing], names=str(missing))
    invoke_cli("run", ["run", tmp_path / "absent.onnx"], names="absent.onnx")
    invoke_cli("verify", ["verify", missing], names=str(missing))
    (tmp_path / "dir.xml").mkdir()
    invoke_cli("run", ["run", tmp_path / "dir.xml"], names="dir.xml")
    invoke_cli("verify", ["verify", tmp_path / "dir.xml"])
    odd = tmp_path / "model.txt"
    odd.write_text("hello")
    invoke_cli("run", ["run", odd], names="model.txt")
    invoke_cli("inspect", ["inspect", odd], names="model.txt")


def _subprocess(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "poolir", *args], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).parents[2])


def test_real_process_exit_2_and_one_line_for_hostile_files(tmp_path):
    bomb = CORPUS / "billion_laughs.xml"
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x08\x07\x12\xff\xff\xff\xff\x0f")
    for args, named in ((["inspect", str(bomb)], str(bomb)), (["run", str(garbage)], str(garbage)),
                        (["convert", str(CORPUS / "xxe_file_entity.xml"), "-o", str(tmp_path / "o.onnx")],
                         "xxe_file_entity.xml"),
                        (["verify", str(CORPUS / "stride_2_pow_63.xml")], "stride_2_pow_63.xml")):
        done = _subprocess(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert "Traceback" not in done.stderr
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("poolir: error: ") and named in lines[0], (args, done.stderr)
    assert not (tmp_path / "o.onnx").exists()


@pytest.mark.parametrize("args, message", [
    (["run", "{m}", "--seed", "-1"], "--seed -1 must be >= 0"),  # regression: numpy ValueError, exit 3
    (["verify", "{m}", "--seed", "-1"], "--seed -1 must be >= 0"),
    (["run", "{m}", "-o", "{tmp}/missing/out.npz"], "missing/out.npz: cannot write the output: the folder"),
    (["verify", "{m}", "--report", "{tmp}/missing/r.json"], "missing/r.json: cannot write the output"),
    # convert creates a missing output folder (as ovc does); one that cannot be created is refused
    (["convert", "{m}", "-o", "{m}/o.xml"], "o.xml: cannot"),
    (["run", "{m}", "-o", "{tmp}"], "is a directory"),
    (["run", "{m}", "--input", "x"], "expected NAME=FILE.npy"),
    (["run", "{m}", "--input", "x=nofile.npy"], "nofile.npy: input 'x': no such file"),
    (["run", "{m}", "--inputs", "{m}"], "not a readable .npz archive"),
    (["run", "{m}", "--input", "x={m}"], "not a readable .npy file"),
    (["convert", "{m}", "-o", "{tmp}/o.xml", "--input-shape", "x=0,1,4,4"], "dim '0' is not a positive integer"),
    (["convert", "{m}", "-o", "{tmp}/o.xml", "--input-shape", "=1"], "expected NAME=1,3,224,224"),
    (["convert", "{m}", "-o", "{tmp}/o.xml", "--input-shape", "y=1,1,4,4"], "y"),
    (["convert", "{m}", "-o", "{tmp}/o.xml", "--input-shape", "x=1,1,4"], "x"),
    (["convert", "{m}", "-o", "{tmp}/o.xml", "--ir-version", "12"], "--ir-version"),
    (["convert", "{m}", "-o", "{tmp}/o.onnx"], "expected .onnx -> .xml"),
    (["verify", "{m}", "--rtol", "nan"], "--rtol nan must be a finite number"),
    (["verify", "{m}", "--atol", "-1"], "--atol -1.0 must be a finite number"),
])
def test_hostile_options(tmp_path, args, message):
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 3, 3])])
    model = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10), model)
    before = sorted(tmp_path.rglob("*"))
    result = invoke_cli("options", [a.format(m=model, tmp=tmp_path) for a in args], allowed=(2,))
    assert message in result.stderr
    assert sorted(tmp_path.rglob("*")) == before


def _break_example(folder: Path, breakage: str) -> None:
    import numpy as np

    if breakage == "manifest not JSON":
        (folder / "manifest.json").write_text('{"oops')
    elif breakage == "manifest a list":
        (folder / "manifest.json").write_text("[1, 2, 3]")
    elif breakage == "manifest wrong types":
        (folder / "manifest.json").write_text('{"expected_refused": 12345}')
    elif breakage == "expected.npz garbage":
        (folder / "expected.npz").write_bytes(b"PK\x03\x04garbage")
    elif breakage == "inputs.npz garbage":
        (folder / "inputs.npz").write_bytes(bytes(range(100)))
    elif breakage == "expected.npz pickled":
        np.savez(folder / "expected.npz", y=np.array([object()], dtype=object))
    elif breakage == "no model":
        for model in (*folder.glob("*.onnx"), *folder.glob("*.xml")):
            model.unlink()


@pytest.mark.parametrize("breakage", ["manifest not JSON", "manifest a list", "manifest wrong types",
                                      "expected.npz garbage", "inputs.npz garbage", "expected.npz pickled", "no model"])
def test_verify_on_a_broken_example_folder(tmp_path, breakage):
    import shutil

    folder = tmp_path / "example"
    shutil.copytree(Path(__file__).parents[2] / "examples" / "maxpool_2d_ceil", folder)
    _break_example(folder, breakage)
    result = invoke_cli("verify", ["verify", folder], names=str(folder), allowed=(2,))
    assert result.exit_code == 2
