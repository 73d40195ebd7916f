"""Shapes too large for the machine: refused quickly with exit 2 and a one-line message naming the file,
never an internal error, a swap storm or the OOM killer.

Each case runs `poolir` in a subprocess whose address space is capped (RLIMIT_AS), so an allocation
that would need gigabytes fails at once instead of eating the shared machine's memory. Declared shapes
above ir.MAX_ELEMENTS (2**31 elements) are refused by the reader before anything is allocated; below it,
a model can still need more than the machine has, and then the allocation's MemoryError becomes a
PoolirError naming the file (runtime.Session.run, converter.feeds.random_input).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests.robustness.harness import TRIED, FAILED_CLEANLY
from tests.robustness.ir_bases import bases

CAP_MB = 1500  # far above what the small models need, far below the gigabytes these shapes want
_CAPPED = """
import resource, sys
cap = {cap} << 20
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
from poolir.converter.cli import main
sys.argv = ["poolir", *sys.argv[1:]]
main()
"""

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS caps the address space only on Linux")


def poolir_capped(*args) -> subprocess.CompletedProcess:
    TRIED["memory.cli"] += 1
    return subprocess.run([sys.executable, "-c", _CAPPED.format(cap=CAP_MB), *map(str, args)],
                          capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[2])


def _assert_refused(done: subprocess.CompletedProcess, named: Path, problem: str) -> None:
    assert done.returncode == 2, done.stderr
    FAILED_CLEANLY["memory.cli"] += 1
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("poolir: error: "), done.stderr
    assert str(named) in lines[0] and problem in lines[0], lines[0]


def _ir(folder: Path, edit) -> Path:
    base = next(b for b in bases() if b.name == "avg_pool_scaled_v11")
    path = folder / "net.xml"
    path.write_bytes(edit(base.xml.decode()).encode())
    path.with_suffix(".bin").write_bytes(base.weights)
    return path


def test_declared_input_above_the_limit_is_refused_before_allocating(tmp_path):
    path = _ir(tmp_path, lambda xml: xml.replace('shape="1,2,5,5"', 'shape="4,4,40000,40000"'))
    for command in ("inspect", "run", "verify"):
        _assert_refused(poolir_capped(command, path), path, "has more than 2147483648 elements")


def test_legal_input_larger_than_memory_is_refused_not_crashed(tmp_path):
    path = _ir(tmp_path, lambda xml: xml.replace('shape="1,2,5,5"', 'shape="1,1,40000,40000"'))
    for command in ("run", "verify"):
        _assert_refused(poolir_capped(command, path), path, "6400000000 bytes exceeds the memory budget")


def test_random_input_is_drawn_and_sized_in_its_own_dtype(tmp_path):
    # 40000 x 40000 float32 is 6.4 GB; drawn through float64 it would be refused as a 12.8 GB float64 array.
    path = _ir(tmp_path, lambda xml: xml.replace('shape="1,2,5,5"', 'shape="1,1,40000,40000"'))
    # A budget above the input's size, so that the address-space cap (not the budget) is what refuses it.
    done = poolir_capped("--max-memory", "16G", "run", path)
    _assert_refused(done, path, "not enough memory for a random input 'x' of shape [1,1,40000,40000] "
                                "(6.4 GB of float32)")
    assert "float64" not in done.stderr


def test_intermediate_larger_than_memory_is_refused_not_crashed(tmp_path):
    # A 1x2x5x5 input padded by 30000 on each spatial axis end: a legal 1x2x30003x30003 AvgPool output (7 GB).
    path = _ir(tmp_path, lambda xml: xml.replace('pads_end="1, 1"', 'pads_end="30000, 30000"'))
    np.save(tmp_path / "x.npy", np.ones((1, 2, 5, 5), np.float32))
    done = poolir_capped("run", path, "--input", f"x={tmp_path / 'x.npy'}")
    _assert_refused(done, path, "the tensors live at once at this step need")  # the plan, before the first step


def test_onnx_input_larger_than_memory_is_refused_not_crashed(tmp_path):
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 40000, 40000])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    path = tmp_path / "big.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10), path)
    _assert_refused(poolir_capped("run", path), path, "exceeds the memory budget")


def test_npy_whose_header_claims_a_huge_shape_is_refused(tmp_path):
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10), model)
    lying = tmp_path / "x.npy"
    np.save(lying, np.ones((1, 1, 4, 4), np.float32))
    data = lying.read_bytes().replace(b"(1, 1, 4, 4)", b"(99999, 99999, 99999)"[:12])
    lying.write_bytes(data)
    done = poolir_capped("run", model, "--input", f"x={lying}")
    _assert_refused(done, lying, "not a readable .npy file")
