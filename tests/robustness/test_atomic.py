"""Outputs are all-or-nothing and inputs are sacred.

For convert (.xml + .bin, .onnx), run -o (.npz) and verify --report: a failed command leaves no partial
file and no temporary file, an existing destination keeps its bytes, no input changes (hashed before and
after), an output naming an input is refused, and a write interrupted midway (the writer made to raise)
leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from poolir import ir
import poolir.ir.atomic
from tests.robustness.cli_check import invoke_cli
from tests.robustness.ir_bases import bases

OLD = b"old bytes that must survive"


def _snapshot(folder: Path) -> dict[str, str]:
    """Every file under `folder` (temporaries included) with the hash of its bytes."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _onnx(path: Path, *, convertible: bool = True) -> Path:
    # kernel 1 with pads (0, 1) makes a MaxPool window of padding only, which the converter refuses.
    attrs = dict(kernel_shape=[2, 2], pads=[1, 1, 1, 1]) if convertible else dict(kernel_shape=[1, 1], pads=[0, 0, 1, 1])
    node = helper.make_node("MaxPool", ["x"], ["y"], name="pool", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10), path)
    return path


def _ir(folder: Path, name: str = "avg_pool_scaled_v11") -> Path:
    base = next(b for b in bases() if b.name == name)
    path = folder / "net.xml"
    path.write_bytes(base.xml)
    path.with_suffix(".bin").write_bytes(base.weights)
    return path


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return tmp_path


def test_failed_convert_keeps_existing_destinations_and_leaves_no_temporaries(work):
    source = _onnx(work / "m.onnx", convertible=False)
    (work / "out.xml").write_bytes(OLD)
    (work / "out.bin").write_bytes(OLD)
    before = _snapshot(work)
    invoke_cli("convert", ["convert", source, "-o", work / "out.xml"], names="m.onnx", allowed=(2,))
    assert _snapshot(work) == before


def test_failed_ir_to_onnx_keeps_the_destination(work):
    source = _ir(work)
    source.write_bytes(source.read_bytes().replace(b'strides="2, 2"', b'strides="0, 2"'))
    (work / "out.onnx").write_bytes(OLD)
    before = _snapshot(work)
    invoke_cli("convert", ["convert", source, "-o", work / "out.onnx"], names="net.xml", allowed=(2,))
    assert _snapshot(work) == before


def test_successful_convert_touches_only_its_outputs(work):
    source = _ir(work)
    before = _snapshot(work)
    invoke_cli("convert", ["convert", source, "-o", work / "out.onnx"], allowed=(0,))
    after = _snapshot(work)
    assert {k: v for k, v in after.items() if k != "out.onnx"} == before
    onnx.checker.check_model(onnx.load(work / "out.onnx"))


@pytest.mark.parametrize("command", ["convert", "run", "verify"])
def test_output_naming_an_input_is_refused(work, command):
    model = _onnx(work / "m.onnx")
    np.savez(work / "feeds.npz", x=np.ones((1, 1, 4, 4), np.float32))
    ir_model = _ir(work / "ir" if (work / "ir").mkdir() is None else work)
    before = _snapshot(work)
    if command == "convert":
        cases = [["convert", model, "-o", model], ["convert", ir_model, "-o", ir_model],
                 ["convert", model, "-o", work / "." / ".." / work.name / "m.onnx"]]
    elif command == "run":
        cases = [["run", model, "-o", model], ["run", ir_model, "-o", ir_model],
                 ["run", ir_model, "-o", ir_model.with_suffix(".bin")],
                 ["run", model, "--inputs", work / "feeds.npz", "-o", work / "feeds.npz"]]
    else:
        cases = [["verify", model, "--report", model], ["verify", ir_model, "--report", ir_model.with_suffix(".bin")],
                 ["verify", model, "--inputs", work / "feeds.npz", "--report", work / "feeds.npz"]]
    for args in cases:
        invoke_cli(command, args, allowed=(2,))
        assert _snapshot(work) == before, args
    if hasattr(os, "symlink"):
        link = work / "link.onnx"
        link.symlink_to(model)
        before = _snapshot(work)
        args = {"convert": ["convert", model, "-o", link], "run": ["run", model, "-o", link],
                "verify": ["verify", model, "--report", link]}[command]
        invoke_cli(command, args, allowed=(2,))
        assert _snapshot(work) == before


def test_failed_run_keeps_an_existing_npz(work):
    model = _onnx(work / "m.onnx")
    np.save(work / "wrong.npy", np.ones((1, 1, 5, 5), np.float32))  # wrong dims: a FeedError
    (work / "out.npz").write_bytes(OLD)
    before = _snapshot(work)
    invoke_cli("run", ["run", model, "--input", f"x={work / 'wrong.npy'}", "-o", work / "out.npz"], allowed=(2,))
    assert _snapshot(work) == before


def test_failed_verify_writes_no_report(work):
    (work / "report.json").write_bytes(OLD)
    broken = work / "broken.onnx"
    broken.write_bytes(b"\x08\x07not protobuf\xff")
    before = _snapshot(work)
    invoke_cli("verify", ["verify", broken, "--report", work / "report.json"], allowed=(1, 2))
    after = _snapshot(work)
    # verify reports a broken model as a failed row (exit 1) or refuses it (exit 2); either way no temporary
    assert set(after) == set(before)


class _Interrupted(Exception):
    pass


def test_interrupted_write_of_xml_and_bin_leaves_the_old_pair(work, monkeypatch):
    """The second rename fails after the first succeeded: the first destination must be rolled back too."""
    model = ir.parse_model(next(b for b in bases() if b.name == "avg_pool_scaled_v11").xml,
                           next(b for b in bases() if b.name == "avg_pool_scaled_v11").weights)
    (work / "out.xml").write_bytes(OLD)
    (work / "out.bin").write_bytes(OLD)
    before = _snapshot(work)
    real_replace = os.replace
    calls = []

    def flaky_replace(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise _Interrupted("disk vanished")
        return real_replace(src, dst)

    monkeypatch.setattr(ir.atomic.os, "replace", flaky_replace)
    with pytest.raises(_Interrupted):
        ir.write_model(model, work / "out.xml")
    monkeypatch.undo()
    assert _snapshot(work) == before


@pytest.mark.parametrize("existing", [True, False])
def test_interrupted_write_midway_through_the_bytes_leaves_nothing(work, monkeypatch, existing):
    model = ir.parse_model(next(b for b in bases() if b.name == "avg_pool_scaled_v11").xml,
                           next(b for b in bases() if b.name == "avg_pool_scaled_v11").weights)
    if existing:
        (work / "out.xml").write_bytes(OLD)
    before = _snapshot(work)

    def failing_fsync(fd):
        raise KeyboardInterrupt  # the user pressed Ctrl-C while the data was being flushed

    monkeypatch.setattr(ir.atomic.os, "fsync", failing_fsync)
    with pytest.raises(KeyboardInterrupt):
        ir.write_model(model, work / "out.xml")
    monkeypatch.undo()
    assert _snapshot(work) == before


def test_interrupted_npz_write_leaves_nothing(work, monkeypatch):
    model = _onnx(work / "m.onnx")
    (work / "out.npz").write_bytes(OLD)
    before = _snapshot(work)

    def half_savez(handle, arrays):
        handle.write(b"PK\x03\x04 partial")
        raise _Interrupted("killed midway")

    import poolir.converter.cmd_run
    monkeypatch.setattr(poolir.converter.cmd_run, "save_archive", half_savez)
    result = invoke_cli("run", ["run", model, "-o", work / "out.npz"], allowed=(3,))
    assert "internal error" in result.stderr
    monkeypatch.undo()
    assert _snapshot(work) == before


def test_interrupted_report_write_leaves_nothing(work, monkeypatch):
    model = _onnx(work / "m.onnx")
    (work / "report.json").write_bytes(OLD)
    before = _snapshot(work)

    def failing_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ir.atomic.os, "fsync", failing_fsync)
    result = invoke_cli("verify", ["verify", model, "--report", work / "report.json"], allowed=(2,))
    assert "No space left on device" in result.stderr
    monkeypatch.undo()
    assert _snapshot(work) == before
