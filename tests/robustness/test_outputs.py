"""What poolir writes (issue items 2, 6, 7, 11): regular files only; every output round-trips through
np.load(allow_pickle=False) under its own name or is refused; no partial or temporary file survives a
failure, SIGTERM, SIGHUP or Ctrl-C; two concurrent converts to one .xml never leave a mixed .xml/.bin pair."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from poolir import ir
from poolir.ir.atomic import check_output_path
from poolir.ir.errors import UsageError
from tests.robustness.cli_check import invoke_cli

ROOT = Path(__file__).parents[2]


def _identity_model(path: Path, outputs: list[str], elem=TensorProto.FLOAT) -> Path:
    nodes = [helper.make_node("Identity", ["x"], [name]) for name in outputs]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", elem, [1, 2])],
                              [helper.make_tensor_value_info(name, elem, [1, 2]) for name in outputs])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10), path)
    return path


def _weights_model(path: Path, scale: int) -> Path:
    """An ONNX model whose IR has a Const of `scale` values (so a mixed .xml/.bin pair cannot be read)."""
    weights = helper.make_tensor("w", TensorProto.FLOAT, [1, scale], [float(scale)] * scale)
    nodes = [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[1]), helper.make_node("Identity", ["w"], ["z"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 4]),
                               helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, scale])], [weights])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10), path)
    return path


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.mark.parametrize("make, problem", [
    (lambda d: os.mkfifo(d / "out.npz"), "is a named pipe (FIFO)"),
    (lambda d: os.symlink("/dev/null", d / "out.npz"), "is a symlink"),
    (lambda d: os.symlink("/proc/self/fd/1", d / "out.npz"), "is a symlink"),
    (lambda d: ((d / "target.npz").write_bytes(b"x"), os.symlink(d / "target.npz", d / "out.npz")), "is a symlink"),
])
def test_outputs_are_regular_files_only(tmp_path, make, problem):
    model = _identity_model(tmp_path / "m.onnx", ["y"])
    make(tmp_path)
    out = tmp_path / "out.npz"
    for args in (["run", model, "-o", out], ["verify", model, "--report", out]):
        result = invoke_cli("outputs", args, names=str(out))
        assert result.exit_code == 2 and problem in result.stderr
    assert os.path.islink(out) or not out.is_file()


def test_device_nodes_are_refused_before_any_write():
    for device in ("/dev/null", "/dev/zero"):
        with pytest.raises(UsageError, match="is a character device"):
            check_output_path(device)


@pytest.mark.parametrize("option, problem", [("", "the output path is empty"), ("newdir/", "is a folder")])
def test_empty_and_folder_outputs_are_refused(tmp_path, monkeypatch, option, problem):
    monkeypatch.chdir(tmp_path)
    model = _identity_model(tmp_path / "m.onnx", ["y"])
    for args in (["run", model, "-o", option], ["verify", model, "--report", option],
                 ["convert", model, "-o", option]):  # convert too: "" is not ".", "newdir/" is not "newdir"
        result = invoke_cli("outputs", args)
        assert result.exit_code == 2 and problem in result.stderr, (args, result.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]


@pytest.mark.parametrize("name", ["allow_pickle", "file", "y.npy", "名前", " x ", "a:b"])
def test_every_output_round_trips_under_its_own_name(tmp_path, name):
    model = _identity_model(tmp_path / "m.onnx", [name, "other"])
    assert invoke_cli("outputs", ["run", model, "-o", tmp_path / "o.npz"]).exit_code == 0
    with np.load(tmp_path / "o.npz", allow_pickle=False) as archive:
        assert sorted(archive.files) == sorted([name, "other"])
        assert archive[name].shape == (1, 2)


@pytest.mark.parametrize("name, problem", [
    ("../../evil", "an .npz member cannot be named so"),
    ("a/b", "an .npz member cannot be named so"),
    ("a\\b", "an .npz member cannot be named so"),
])
def test_outputs_an_npz_cannot_hold_are_refused_and_nothing_is_written(tmp_path, name, problem):
    model = _identity_model(tmp_path / "m.onnx", [name])
    result = invoke_cli("outputs", ["run", model, "-o", tmp_path / "o.npz"], names=str(model))
    assert result.exit_code == 2 and problem in result.stderr
    assert not (tmp_path / "o.npz").exists() and not _leftovers(tmp_path)
    assert not (tmp_path.parent / "evil.npy").exists()


def test_a_string_output_is_never_pickled(tmp_path):
    model = _identity_model(tmp_path / "m.onnx", ["s"], elem=TensorProto.STRING)
    result = invoke_cli("outputs", ["run", model, "-o", tmp_path / "o.npz"], names=str(model))
    assert result.exit_code == 2
    assert not (tmp_path / "o.npz").exists()


# A test run started in the background inherits SIGINT ignored (POSIX shells ignore it for `&` jobs), and Python
# keeps it ignored: the child puts back the handler an interactive Ctrl-C meets.
_SLOW_WRITER = """
import signal, sys, time, numpy as np
signal.signal(signal.SIGINT, signal.default_int_handler)
real = np.lib.format.write_array
def slow(*args, **kwargs):
    print("writing", flush=True)
    time.sleep(30)
    return real(*args, **kwargs)
np.lib.format.write_array = slow
from poolir.converter.cli import main
sys.argv = ["poolir", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 128 + 15), (signal.SIGHUP, 128 + 1),
                                          (signal.SIGINT, 130)])
def test_a_signal_during_a_write_leaves_no_temporary(tmp_path, signum, code):
    model = _identity_model(tmp_path / "m.onnx", ["y"])
    process = subprocess.Popen([sys.executable, "-c", _SLOW_WRITER, "run", str(model), "-o", str(tmp_path / "o.npz")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert process.stdout.readline().strip() == "writing"
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == code, stderr
    assert "Traceback" not in stderr
    assert not (tmp_path / "o.npz").exists() and not _leftovers(tmp_path)


_SLOW_RENAMES = """
import os, sys, time
real = os.replace
delay = sys.argv.pop(1)
def replace(*args, **kwargs):
    real(*args, **kwargs)
    time.sleep(float(delay))
os.replace = replace
from poolir.converter.cli import main
sys.argv = ["poolir", *sys.argv[1:]]
main()
"""


def test_concurrent_converts_to_one_xml_never_mix_the_pair(tmp_path):
    """Two processes convert models of different sizes to one out.xml, again and again, each sleeping after
    every rename (a slow disk): the pair left is always one run's .xml with the same run's .bin (the renames
    run under a flock on the folder; without it, about half the rounds leave a mixed pair)."""
    onnx_sources = [_weights_model(tmp_path / f"s{scale}.onnx", scale) for scale in (3, 70000)]
    out = tmp_path / "out" / "net.xml"
    out.parent.mkdir()
    for round in range(6):
        processes = [subprocess.Popen([sys.executable, "-c", _SLOW_RENAMES, delay, "convert", str(s), "-o", str(out)],
                                      cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                     for s, delay in zip(onnx_sources, ("0.05", "0.6") if round % 2 else ("0.6", "0.05"))]
        for process in processes:
            assert process.wait(timeout=120) == 0, process.stderr.read()
        model = ir.read_model(out)  # a mixed pair fails here: the Const size does not match the .bin
        const = next(model.layers_of_type("Const"))
        assert const.data.size in (3, 70000) and np.all(const.data == const.data.size)
        assert not _leftovers(out.parent)
