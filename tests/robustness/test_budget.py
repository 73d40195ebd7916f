"""The memory budget (issue item 4): tiny files that ask for gigabytes are refused before allocating, with
one line naming the file and the budget (ir.budget: default 2 GiB, --max-memory, POOLIR_MAX_MEMORY).
Each runs in a subprocess under RLIMIT_AS, so a regression fails cleanly instead of eating the machine."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper

from poolir import ir
from poolir.converter.cli import main
from poolir.ir.budget import DEFAULT_MAX_MEMORY, check_bytes, max_memory, parse_size, set_max_memory
from poolir.ir.errors import BudgetError, UsageError
from tests.robustness.test_memory import _assert_refused, _ir, poolir_capped

BUDGET = "exceeds the memory budget"
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS caps the address space only on Linux")


def _save(graph, path: Path) -> Path:
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10), path)
    return path


def _doubling(path: Path, batch: int | str = 1) -> Path:
    """1.2 KB: a [batch, 4] tensor concatenated with itself thirty times (12 GB at the end)."""
    nodes, previous = [], "x"
    for index in range(30):
        nodes.append(helper.make_node("Concat", [previous, previous], [f"c{index}"], axis=1))
        previous = f"c{index}"
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 4])],
                              [helper.make_tensor_value_info(previous, TensorProto.FLOAT, None)])
    return _save(graph, path)


def test_a_tiny_onnx_that_doubles_a_tensor_thirty_times(tmp_path):
    path = _doubling(tmp_path / "double.onnx")
    for command in ("run", "verify"):
        _assert_refused(poolir_capped(command, path), path, BUDGET)


def test_the_same_with_a_dynamic_batch_is_refused_once_the_feed_is_known(tmp_path):
    path = _doubling(tmp_path / "double.onnx", batch="n")
    np.save(tmp_path / "x.npy", np.ones((1, 4), np.float32))
    _assert_refused(poolir_capped("run", path, "--input", f"x={tmp_path / 'x.npy'}"), path, BUDGET)


def test_a_random_input_beyond_the_budget_is_never_drawn(tmp_path):
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [30000, 30000])],
                              [helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)])
    path = _save(graph, tmp_path / "big.onnx")
    _assert_refused(poolir_capped("run", path), path, BUDGET)


def test_an_ir_broadcast_to_billions_of_elements(tmp_path):
    b = ir.GraphBuilder("bcast")
    x = b.parameter("x", "f32", (1, 1))
    target = b.const(np.array([40000, 40000], np.int64), name="target")
    (y,) = b.add("Broadcast", "opset3", [x, target], {"mode": "numpy"}, name="bcast")
    b.result(y, "y")
    path = tmp_path / "bcast.xml"
    set_max_memory("100G")  # the builder checks the budget too
    try:
        ir.write_model(b.build(), path)
    finally:
        set_max_memory(None)
    for command in ("inspect", "run", "convert"):
        args = [command, path] + (["-o", tmp_path / "o.onnx"] if command == "convert" else [])
        _assert_refused(poolir_capped(*args), path, BUDGET)


def test_an_npz_member_is_checked_before_it_is_inflated(tmp_path):
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = _save(graph, tmp_path / "m.onnx")
    bomb = tmp_path / "bomb.npz"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False,
                                                       "shape": (2**31,)})
        archive.writestr("x.npy", header.getvalue() + bytes(2**20))  # claims 8 GiB, holds 1 MiB
    _assert_refused(poolir_capped("run", model, "--inputs", bomb), bomb, BUDGET)


def test_a_bin_beyond_the_budget_is_not_read(tmp_path):
    path = _ir(tmp_path, lambda xml: xml)
    with open(path.with_suffix(".bin"), "r+b") as handle:
        handle.truncate(3 * 2**30)  # sparse: 3 GiB of zeros
    _assert_refused(poolir_capped("--max-memory", "1G", "run", path), path, BUDGET)


def test_the_budget_can_be_raised_and_is_parsed_strictly(tmp_path, monkeypatch):
    assert DEFAULT_MAX_MEMORY == 2 * 2**30 and parse_size("16G") == 16 * 2**30 and parse_size("512m") == 2**29
    for bad in ("", "0", "-1", "1.5G", "G", "1" * 30, "٣G"):
        with pytest.raises(UsageError):
            parse_size(bad)
    monkeypatch.setenv("POOLIR_MAX_MEMORY", "1K")
    assert max_memory() == 1024
    with pytest.raises(BudgetError, match="1 KiB"):
        check_bytes(2048, "a test")
    set_max_memory("8K")
    try:
        check_bytes(2048, "a test")
    finally:
        set_max_memory(None)
    path = _doubling(tmp_path / "d.onnx")
    done = subprocess.run([sys.executable, "-m", "poolir", "--max-memory", "nonsense", "run", path],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "is not a positive number of bytes" in done.stderr


def _constant_shape_models(folder: Path) -> list[Path]:
    big = helper.make_tensor("s", TensorProto.INT64, [2], [100000, 100000])
    factor = helper.make_tensor("k", TensorProto.INT64, [2], [100000, 100000])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, None)
    graphs = {
        "constant_of_shape": helper.make_graph([helper.make_node("ConstantOfShape", ["s"], ["z"])], "g", [], [z], [big]),
        "expand": helper.make_graph([helper.make_node("Expand", ["x", "s"], ["z"])], "g", [x], [z], [big]),
        "expand_of_a_computed_shape": helper.make_graph(
            [helper.make_node("Shape", ["x"], ["sh"]), helper.make_node("Mul", ["sh", "k"], ["s2"]),
             helper.make_node("Expand", ["x", "s2"], ["z"])], "g", [x], [z], [factor]),
    }
    return [_save(graph, folder / f"{name}.onnx") for name, graph in graphs.items()]


def test_shapes_computed_from_constants_are_checked_before_running(tmp_path):
    for path in _constant_shape_models(tmp_path):
        _assert_refused(poolir_capped("run", path), path, "tensor 'z' of shape [100000, 100000]")


def test_an_ir_run_with_dynamic_inputs_is_checked_with_the_feeds_shapes(tmp_path):
    b = ir.GraphBuilder("dyn")
    (y,) = b.add("Multiply", "opset1", [b.parameter("x", "f32", (-1, 1)),
                                        b.const(np.ones((1, 100000), np.float32), name="c")], name="mul")
    b.result(y, "y")
    path = tmp_path / "dyn.xml"
    ir.write_model(b.build(), path)
    np.save(tmp_path / "x.npy", np.ones((6000, 1), np.float32))  # a 2.4 GB output
    done = poolir_capped("run", path, "--input", f"x={tmp_path / 'x.npy'}")
    _assert_refused(done, path, "layer 'mul' (id 2, Multiply): the inferred output [6000,100000] of f32")


def test_the_help_states_the_default_budget_the_code_applies(monkeypatch):
    """The help once said 4G while the budget was 2 GiB: the stated default is read back and applied."""
    monkeypatch.delenv("POOLIR_MAX_MEMORY", raising=False)
    stated = re.search(r"default\s+(\d+)\s+GiB", " ".join(CliRunner().invoke(main, ["--help"]).output.split()))
    assert stated is not None and parse_size(f"{stated.group(1)}G") == max_memory() == DEFAULT_MAX_MEMORY
