"""The command line as a user meets it: `python -m poolir ...` in a scratch folder under umask 022.

Pins: output modes follow the umask; --input-shape's three spellings on run, verify and convert; a dynamic
batch alone defaults to 1 (ONNX, and an IR OpenVINO wrote with a `?` batch); verify reports every model,
a bad one in the middle too, and exits with the worst outcome; convert without -o and into a missing
folder; convert and inspect of a model whose outputs declare no shape; --json error documents.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

EXAMPLES = Path(__file__).parents[2] / "examples"
BATCH_NOTE = "input 'x': dynamic batch set to 1 (give --input-shape to choose)"


def poolir(cwd: Path, *args, umask: int = 0o022) -> subprocess.CompletedProcess:
    """Run the CLI in a child process with the given umask, in `cwd`."""
    return subprocess.run([sys.executable, "-m", "poolir", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=300, preexec_fn=lambda: os.umask(umask))


def maxpool_onnx(path: Path, dims, *, output_shape=True) -> Path:
    """MaxPool k2 s1 on x (dims: ints or symbols); y declared without a shape when output_shape is False."""
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)
    if output_shape:
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
        y.type.tensor_type.shape.SetInParent()
        for _ in dims:
            y.type.tensor_type.shape.dim.add()
    else:  # an element type and no shape: what onnx.checker calls "Field 'shape' of 'type' is required"
        y = onnx.ValueInfoProto(name="y")
        y.type.tensor_type.elem_type = TensorProto.FLOAT
    graph = helper.make_graph([node], "g", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# ---------------------------------------------------------------------------------------------------
# Outputs follow the umask


@pytest.mark.parametrize("umask, expected", [(0o022, 0o644), (0o027, 0o640)])
def test_every_output_kind_follows_the_umask(tmp_path, umask, expected):
    shutil.copy(EXAMPLES / "lppool_2d_pads" / "model.onnx", tmp_path / "lp.onnx")  # its IR has Consts: a .bin
    assert poolir(tmp_path, "convert", "lp.onnx", "-o", "lp.xml", umask=umask).returncode == 0
    assert poolir(tmp_path, "convert", "lp.xml", "-o", "back.onnx", umask=umask).returncode == 0
    assert poolir(tmp_path, "run", "lp.onnx", "-o", "out.npz", umask=umask).returncode == 0
    assert poolir(tmp_path, "verify", "lp.onnx", "--report", "report.json", umask=umask).returncode == 0
    for name in ("lp.xml", "lp.bin", "back.onnx", "out.npz", "report.json"):
        assert mode(tmp_path / name) == expected, name
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary left


# ---------------------------------------------------------------------------------------------------
# --input-shape: one parser, three spellings, on run, verify and convert

SPELLINGS = ["x=2,3,9,9", "x:[2,3,9,9]", "x[2,3,9,9]"]


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_input_shape_spellings_on_run(tmp_path, spelling):
    maxpool_onnx(tmp_path / "m.onnx", ["N", 3, "H", "W"])
    done = poolir(tmp_path, "run", "m.onnx", "--input-shape", spelling)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("y: shape [2,3,8,8]  dtype float32")


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_input_shape_spellings_on_verify(tmp_path, spelling):
    maxpool_onnx(tmp_path / "m.onnx", ["N", 3, "H", "W"])
    done = poolir(tmp_path, "verify", "m.onnx", "--input-shape", spelling, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    (model,) = json.loads(done.stdout)["models"]
    # One fixed shape on every path: the ONNX, the converted IR (fixed by the conversion too) and back.
    assert {row["path"]: row["shape"] for row in model["rows"]} == {
        "runtime(onnx)": [2, 3, 8, 8], "runtime(onnx->ir)": [2, 3, 8, 8], "runtime(onnx->ir->onnx)": [2, 3, 8, 8]}


@pytest.mark.parametrize("spelling, declared", [("x=2,3,9,9", "2,3,9,9"), ("x:[2,3,9,9]", "2,3,9,9"),
                                                ("x[1,3,?,9]", "1,3,?,9"), ("x=-1,3,9,9", "?,3,9,9")])
def test_input_shape_spellings_on_convert(tmp_path, spelling, declared):
    maxpool_onnx(tmp_path / "m.onnx", ["N", 3, "H", "W"])
    done = poolir(tmp_path, "convert", "m.onnx", "-o", "m.xml", "--input-shape", spelling)
    assert done.returncode == 0, done.stderr
    assert f'shape="{declared}"' in (tmp_path / "m.xml").read_text()


@pytest.mark.parametrize("command", ["run", "verify"])
@pytest.mark.parametrize("value, problem", [("x=2,3,?,9", "dim ? left dynamic"), ("2,3,9,9", "expected NAME=1,3"),
                                            ("x=2,0,9,9", "dim '0' is not a positive integer")])
def test_bad_input_shape_is_one_line_naming_the_option(tmp_path, command, value, problem):
    maxpool_onnx(tmp_path / "m.onnx", ["N", 3, "H", "W"])
    done = poolir(tmp_path, command, "m.onnx", "--input-shape", value)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "--input-shape" in done.stderr and problem in done.stderr


def test_other_dynamic_dims_without_a_shape_name_the_input_and_the_option(tmp_path):
    maxpool_onnx(tmp_path / "m.onnx", ["N", 3, "H", "W"])
    for command in ("run", "verify"):
        done = poolir(tmp_path, command, "m.onnx")
        assert done.returncode == 2
        assert "m.onnx: input 'x' has dynamic dims (shape [?,3,?,?])" in done.stderr
        assert "--input-shape x=" in done.stderr and "Traceback" not in done.stderr


def test_input_shape_contradicting_the_model_is_refused_naming_both(tmp_path):
    maxpool_onnx(tmp_path / "m.onnx", ["N", 3, "H", "W"])
    done = poolir(tmp_path, "run", "m.onnx", "--input-shape", "x=1,4,9,9")
    assert done.returncode == 2
    assert "m.onnx: input 'x': --input-shape x[1,4,9,9]: dim 1 is 4, but the model declares [?,3,?,?]" in done.stderr


# ---------------------------------------------------------------------------------------------------
# A dynamic batch alone defaults to 1


def test_dynamic_batch_defaults_to_1_on_run_and_verify_of_onnx(tmp_path):
    maxpool_onnx(tmp_path / "m.onnx", ["N", 3, 8, 8])
    run = poolir(tmp_path, "run", "m.onnx")
    assert run.returncode == 0 and run.stdout.startswith("y: shape [1,3,7,7]")
    assert run.stderr == f"m.onnx: {BATCH_NOTE}\n"
    verify = poolir(tmp_path, "verify", "m.onnx")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert verify.stderr == f"m.onnx: {BATCH_NOTE}\n" and "all match" in verify.stdout
    assert poolir(tmp_path, "run", "m.onnx", "--input-shape", "x=4,3,8,8").stdout.startswith("y: shape [4,3,7,7]")


def test_verify_an_ir_openvino_wrote_with_a_dynamic_batch_needs_no_option(tmp_path):
    openvino = pytest.importorskip("openvino", reason="openvino writes the IR under test")
    maxpool_onnx(tmp_path / "m.onnx", ["N", 3, 32, 32])
    openvino.save_model(openvino.convert_model(str(tmp_path / "m.onnx")), str(tmp_path / "ov.xml"),
                        compress_to_fp16=False)
    assert 'shape="?,3,32,32"' in (tmp_path / "ov.xml").read_text()
    done = poolir(tmp_path, "verify", "ov.xml", "--peer", "openvino", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == f"ov.xml: {BATCH_NOTE}\n"
    (model,) = json.loads(done.stdout)["models"]
    assert {row["path"]: row["shape"] for row in model["rows"]} == {
        "runtime(ir)": [1, 3, 31, 31], "runtime(ir->onnx)": [1, 3, 31, 31], "openvino(ir)": [1, 3, 31, 31]}


# ---------------------------------------------------------------------------------------------------
# verify reports every model; the exit code is the worst outcome


def test_verify_reports_every_model_around_a_bad_one_and_exits_2(tmp_path):
    shutil.copy(EXAMPLES / "maxpool_2d_ceil" / "model.onnx", tmp_path / "a.onnx")
    (tmp_path / "bad.onnx").write_bytes(b"\x08\x07not protobuf\xff\xff")
    shutil.copy(EXAMPLES / "avgpool1_spec_3" / "model.xml", tmp_path / "c.xml")
    done = poolir(tmp_path, "verify", "a.onnx", "bad.onnx", "c.xml")
    assert done.returncode == 2
    assert "a.onnx  [PASS]" in done.stdout and "c.xml  [PASS]" in done.stdout
    assert "bad.onnx  [ERROR]" in done.stdout and "3 model(s)" in done.stdout
    assert "error: bad.onnx: not a readable ONNX model" in done.stdout
    assert done.stderr.startswith("poolir: error: bad.onnx: not a readable ONNX model")
    as_json = poolir(tmp_path, "verify", "a.onnx", "bad.onnx", "c.xml", "--json")
    assert as_json.returncode == 2
    document = json.loads(as_json.stdout)
    assert [m["source"] for m in document["models"]] == ["a.onnx", "bad.onnx", "c.xml"]
    assert [m["passed"] for m in document["models"]] == [True, False, True]
    assert document["models"][1]["error"]["file"] == "bad.onnx"
    assert document["models"][1]["error"]["kind"] == "InvalidModelError"
    assert document["summary"]["models_invalid"] == 1


def test_inputs_given_to_several_models_name_the_model_they_do_not_fit(tmp_path):
    maxpool_onnx(tmp_path / "small.onnx", [1, 3, 8, 8])
    maxpool_onnx(tmp_path / "large.onnx", [1, 3, 16, 16])
    np.savez(tmp_path / "in.npz", x=np.zeros((1, 3, 8, 8), np.float32))
    done = poolir(tmp_path, "verify", "--inputs", "in.npz", "small.onnx", "large.onnx")
    assert done.returncode == 2
    assert "small.onnx  [PASS]" in done.stdout
    assert done.stderr.startswith("poolir: error: large.onnx: input 'x': dim 2 is 8")


# ---------------------------------------------------------------------------------------------------
# convert: -o optional, a missing folder created, the source never overwritten


def test_convert_without_output_writes_the_stem_in_the_current_folder(tmp_path):
    source = tmp_path / "models"
    source.mkdir()
    shutil.copy(EXAMPLES / "lppool_2d_pads" / "model.onnx", source / "model.onnx")
    work = tmp_path / "work"
    work.mkdir()
    done = poolir(work, "convert", "../models/model.onnx")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "wrote model.xml, model.bin\n"
    assert sorted(p.name for p in work.iterdir()) == ["model.bin", "model.xml"]
    back = poolir(work, "convert", "model.xml")
    assert back.returncode == 0 and back.stdout == "wrote model.onnx\n"
    assert (work / "model.onnx").is_file()


def test_convert_into_a_missing_folder_creates_it(tmp_path):
    shutil.copy(EXAMPLES / "lppool_2d_pads" / "model.onnx", tmp_path / "model.onnx")
    done = poolir(tmp_path, "convert", "model.onnx", "-o", "out/deep/model.xml")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "out" / "deep").iterdir()) == ["model.bin", "model.xml"]


def test_convert_refuses_to_write_over_its_source_without_output(tmp_path):
    shutil.copy(EXAMPLES / "avgpool1_spec_3" / "model.xml", tmp_path / "m.xml")
    shutil.copy(EXAMPLES / "avgpool1_spec_3" / "model.xml", tmp_path / "copy.xml")
    done = poolir(tmp_path, "convert", "m.xml", "-o", "m.xml")
    assert done.returncode == 2 and "the output m.xml is the input m.xml" in done.stderr


def test_convert_wrong_pair_names_the_paths_as_given(tmp_path):
    shutil.copy(EXAMPLES / "avgpool1_spec_3" / "model.xml", tmp_path / "m.xml")
    done = poolir(tmp_path, "convert", "m.xml", "-o", "sub/back.xml")
    assert done.returncode == 2
    assert done.stderr == "poolir: error: cannot convert m.xml to sub/back.xml: expected .onnx -> .xml or .xml -> .onnx\n"
    assert not (tmp_path / "sub").exists()


# ---------------------------------------------------------------------------------------------------
# convert and inspect accept what onnxruntime accepts


def test_convert_and_inspect_accept_outputs_without_a_shape_with_a_warning(tmp_path):
    maxpool_onnx(tmp_path / "m.onnx", [1, 3, 8, 8], output_shape=False)
    with pytest.raises(onnx.checker.ValidationError):  # the strict checker refuses it
        onnx.checker.check_model(onnx.load(tmp_path / "m.onnx"))
    warning = "poolir: warning: m.onnx: output 'y' declares no shape; read as unknown\n"
    inspect = poolir(tmp_path, "inspect", "m.onnx")
    assert inspect.returncode == 0 and inspect.stderr == warning
    assert "y: float32 [1,3,7,7]" in inspect.stdout
    convert = poolir(tmp_path, "convert", "m.onnx")
    assert convert.returncode == 0 and convert.stderr == warning
    assert poolir(tmp_path, "verify", "m.onnx").returncode == 0


def test_a_checker_finding_that_changes_the_meaning_stays_an_error(tmp_path):
    maxpool_onnx(tmp_path / "m.onnx", [1, 3, 8, 8])
    model = onnx.load(tmp_path / "m.onnx")
    model.graph.node[0].input[0] = "nowhere"  # a node reading a value nothing produces
    onnx.save(model, tmp_path / "m.onnx")
    for command in ("inspect", "convert"):
        done = poolir(tmp_path, command, "m.onnx")
        # the one reading of every command (runtime.onnx_model.order_nodes), naming the node
        assert done.returncode == 2 and done.stderr.startswith(
            "poolir: error: m.onnx: node '#0' (MaxPool): input 'nowhere' is produced by no node"), done.stderr


# ---------------------------------------------------------------------------------------------------
# --json: a JSON document on stdout for errors too


@pytest.mark.parametrize("args, kind, file", [
    (("run", "missing.onnx", "--json"), "UsageError", "missing.onnx"),
    (("inspect", "--json", "bad.onnx"), "InvalidModelError", "bad.onnx"),
    (("run", "bad.onnx", "--json", "--input-shape", "x"), "UsageError", None),
    (("verify", "--json", "--rtol", "-1", "bad.onnx"), "UsageError", None),
])
def test_json_errors_are_a_json_document_on_stdout(tmp_path, args, kind, file):
    (tmp_path / "bad.onnx").write_bytes(b"\x08\x07not protobuf\xff\xff")
    done = poolir(tmp_path, *args)
    assert done.returncode == 2
    document = json.loads(done.stdout)
    assert document["exit_code"] == 2
    assert document["error"]["kind"] == kind and document["error"]["file"] == file
    assert done.stderr == f"poolir: error: {document['error']['message']}\n"
