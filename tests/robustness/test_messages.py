"""Exit 2 with one clear line where the input is at fault (issue items 5, 8, 10, 11), and output that no name
can break: every case a security pass found exiting 3 (internal error), lying, or printing raw control text."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from poolir.ir.errors import PoolirError, printable
from tests.robustness.cli_check import invoke_cli
from tests.robustness.ir_bases import bases

ROOT = Path(__file__).parents[2]
HUGE = "9" * 5000


def _base_ir(folder: Path, edit=lambda xml: xml) -> Path:
    base = next(b for b in bases() if b.name == "avg_pool_scaled_v11")
    path = folder / "net.xml"
    path.write_text(edit(base.xml.decode()))
    path.with_suffix(".bin").write_bytes(base.weights)
    return path


def _onnx(path: Path, nodes, inputs, outputs, opset=17, initializers=()) -> Path:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10), path)
    return path


def _value(name, shape=(1, 2), elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


@pytest.mark.parametrize("edit, problem", [
    (lambda x: x.replace('<layer id="1"', f'<layer id="{HUGE}"', 1), "is not an integer"),
    (lambda x: x.replace('<port id="0"', f'<port id="{HUGE}"', 1), "is not an integer"),
    (lambda x: x.replace("<dim>5</dim>", f"<dim>{HUGE}</dim>", 1), "is not an integer"),
    (lambda x: x.replace("<dim>5</dim>", f"<dim>1..{HUGE}</dim>", 1), "is not an integer range"),
    (lambda x: x.replace('kernel="3, 3"', f'kernel="{HUGE}, 3"', 1), "is not an integer"),
    (lambda x: x.replace('version="11"', f'version="{HUGE}"', 1), "is not an integer"),
    (lambda x: x.replace('from-layer="0"', f'from-layer="{HUGE}"', 1), "is not an integer"),
    (lambda x: x.replace('offset="0"', f'offset="{HUGE}"', 1), "is not an integer"),
    (lambda x: x.replace('shape="1,2,5,5"', 'shape="' + ",".join(["1"] * 70) + '"', 1), "at most 32 dims"),
    (lambda x: x.replace("<dim>5</dim>", "<dim>٣</dim>", 1), "is not an integer"),
])
def test_huge_or_foreign_integers_in_ir_fields(tmp_path, edit, problem):
    path = _base_ir(tmp_path, edit)
    for command in (["run", path], ["inspect", path], ["convert", path, "-o", tmp_path / "o.onnx"]):
        result = invoke_cli("messages", command, names=str(path))
        assert result.exit_code == 2 and problem in result.stderr
        assert len(result.stderr) < 1000  # a 5000-digit value is cut


def test_a_huge_opset_is_an_unknown_version_that_run_and_convert_refuse(tmp_path):
    # Any IR is read (ir.schema.is_known): inspect shows the layer as unknown; run and convert refuse it, shortly.
    path = _base_ir(tmp_path, lambda x: x.replace('version="opset1"', f'version="opset{HUGE}"', 1))
    for command in (["run", path], ["convert", path, "-o", tmp_path / "o.onnx"]):
        result = invoke_cli("messages", command, names=str(path))
        assert result.exit_code == 2 and "unsupported layer types" in result.stderr
        assert len(result.stderr) < 1000  # a 5000-digit value is cut
    result = invoke_cli("messages", ["inspect", path], names=str(path))
    assert result.exit_code == 0 and "unknown layer type" in result.stdout


def test_unicode_digits_in_input_shape(tmp_path):
    model = _onnx(tmp_path / "m.onnx", [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[1, 1])],
                  [_value("x", (1, 1, "h", 4))], [_value("y", None)])
    result = invoke_cli("messages", ["convert", model, "-o", tmp_path / "o.xml", "--input-shape", "x=1,1,²,4"])
    assert result.exit_code == 2 and "dim '²' is not a positive integer" in result.stderr


def test_rank_above_the_limit_in_onnx(tmp_path):
    model = _onnx(tmp_path / "m.onnx", [helper.make_node("Identity", ["x"], ["y"])], [_value("x", [1] * 70)],
                  [_value("y", None)])
    result = invoke_cli("messages", ["run", model], names=str(model))
    assert "has rank 70; poolir supports at most 32 dims" in result.stderr


@pytest.mark.parametrize("count, outputs", [(5, 5), (50000, 50000)])
def test_split_into_more_parts_than_the_axis_has(tmp_path, count, outputs):
    opset, attrs = (18, {"num_outputs": count}) if count == 5 else (13, {})
    names = [f"y{i}" for i in range(outputs)]
    model = _onnx(tmp_path / "m.onnx", [helper.make_node("Split", ["x"], names, axis=1, **attrs)],
                  [_value("x", (1, 3))], [_value(n, None) for n in names], opset=opset)
    result = invoke_cli("messages", ["run", model], names=str(model))
    assert result.exit_code == 2 and "node '#0' (Split)" in result.stderr


def test_names_with_newlines_and_ansi_escapes_are_printed_escaped(tmp_path):
    name = "y\n\x1b[31mRED\r"
    model = _onnx(tmp_path / "m.onnx", [helper.make_node("Identity", ["x"], [name])], [_value("x")],
                  [_value(name, (1, 2))])
    for command in (["run", model], ["verify", model], ["inspect", model]):
        result = invoke_cli("messages", command)
        assert result.exit_code == 0, result.stderr
        assert "\x1b" not in result.output and "\r" not in result.output and "\\x1b[31mRED" in result.output
        assert not any(line.startswith("\x1b") or line.startswith("RED") for line in result.output.splitlines())


def test_a_path_with_a_newline_makes_a_one_line_error(tmp_path):
    path = tmp_path / "bad\nname.onnx"
    path.write_bytes(b"garbage")
    result = invoke_cli("messages", ["run", path])
    assert result.exit_code == 2 and "bad\\nname.onnx" in result.stderr


def test_a_two_megabyte_attribute_value_makes_a_short_error(tmp_path):
    path = _base_ir(tmp_path, lambda x: x.replace('rounding_type="ceil"', f'rounding_type="{"x" * 2_000_000}"', 1))
    result = invoke_cli("messages", ["run", path], names=str(path))
    assert result.exit_code == 2 and len(result.stderr) < 2500 and "…" in result.stderr


def test_printable_escapes_and_cuts():
    assert printable("a\nb\x1b[2J") == "a\\nb\\x1b[2J"
    assert printable("x" * 500) == "x" * 200 + "…"
    assert str(PoolirError("y" * 10**6, file="f\n")).startswith("f\\n: " + "y" * 200 + "…")


@pytest.mark.parametrize("tolerance, problem", [
    ({"rtol": 1e999, "atol": 0}, "must be a finite number"),  # json reads 1e999 as inf
    ({"rtol": "NaN", "atol": 0}, "must be a number"),
    ({"rtol": -1, "atol": 0}, "must be a finite number >= 0"),
    ({"rtol": 0, "atol": 5}, "<= 1"),
    ({"rtol": 0}, "'tolerance' must be an object"),
    ({"rtol": 0, "atol": 0, "rtoll": 1}, "'tolerance' must be an object"),
    ([1, 2], "'tolerance' must be an object"),
])
def test_a_manifest_cannot_make_verify_lie(tmp_path, tolerance, problem):
    folder = tmp_path / "e"
    folder.mkdir()
    _onnx(folder / "model.onnx", [helper.make_node("Identity", ["x"], ["y"])], [_value("x")], [_value("y")])
    np.savez(folder / "inputs.npz", x=np.zeros((1, 2), np.float32))
    np.savez(folder / "expected.npz", y=np.full((1, 2), 1e6, np.float32))  # wrong values
    text = json.dumps({"tolerance": tolerance}).replace("Infinity", "1e999")
    (folder / "manifest.json").write_text(text)
    result = invoke_cli("messages", ["verify", folder], names=str(folder / "manifest.json"))
    assert result.exit_code == 2 and problem in result.stderr


def test_a_manifest_with_an_unknown_key_is_refused(tmp_path):
    folder = tmp_path / "e"
    folder.mkdir()
    _onnx(folder / "model.onnx", [helper.make_node("Identity", ["x"], ["y"])], [_value("x")], [_value("y")])
    (folder / "manifest.json").write_text('{"tolerence": {"rtol": 1, "atol": 1}}')
    result = invoke_cli("messages", ["verify", folder], names=str(folder / "manifest.json"))
    assert result.exit_code == 2 and "unknown key 'tolerence'" in result.stderr


def test_ctrl_c_exits_130_without_a_traceback(tmp_path):
    model = _onnx(tmp_path / "m.onnx", [helper.make_node("Identity", ["x"], ["y"])], [_value("x")], [_value("y")])
    # The default handler as an interactive shell gives it: a background test run inherits SIGINT ignored.
    script = ("import signal, sys, time, poolir.runtime.session as s\n"
              "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
              "def slow(self, feeds):\n    print('running', flush=True); time.sleep(30)\n"
              "    raise SystemExit('not interrupted')\n"
              "s.Session.run = slow\n"
              "from poolir.converter.cli import main\nsys.argv = ['poolir', *sys.argv[1:]]\nmain()\n")
    process = subprocess.Popen([sys.executable, "-c", script, "run", str(model)], cwd=ROOT, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout.readline().strip() == "running"
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130 and "Traceback" not in stderr, stderr
