"""Inputs that once made poolir loop for hours: each runs in a subprocess that must finish well within its
timeout (a hang guard, not a timing test: the work is milliseconds once bounded by the real taps)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from tests.robustness.harness import TRIED

CORPUS = Path(__file__).parent / "corpus"
HUGE = 2 * 10**9
GUARD_SECONDS = 120


def poolir(*args) -> subprocess.CompletedProcess:
    TRIED["hang.cli"] += 1
    try:
        return subprocess.run([sys.executable, "-m", "poolir", *map(str, args)], capture_output=True, text=True,
                              timeout=GUARD_SECONDS, cwd=Path(__file__).parents[2])
    except subprocess.TimeoutExpired:
        pytest.fail(f"poolir {' '.join(map(str, args))} did not finish in {GUARD_SECONDS} s (a hang)")


def _huge_kernel_onnx(path: Path, op: str, **extra) -> Path:
    outputs = ["y", "i"] if op == "MaxPool" else ["y"]
    node = helper.make_node(op, ["x"], outputs, kernel_shape=[2, HUGE], pads=[0, 0, 0, HUGE - 1], **extra)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 3, 5])],
                              [helper.make_tensor_value_info(name, TensorProto.FLOAT if name == "y" else TensorProto.INT64,
                                                             ["n", "c", "h", "w"]) for name in outputs])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=10), path)
    return path


def test_ir_kernel_of_two_billion_taps_in_the_padding(tmp_path):
    source = CORPUS / "huge_kernel_in_padding.xml"
    for args in (("run", source), ("inspect", source), ("convert", source, "-o", tmp_path / "o.onnx")):
        done = poolir(*args)
        assert done.returncode in (0, 2) and "Traceback" not in done.stderr, (args, done.stderr)


@pytest.mark.parametrize("op, extra", [("AveragePool", {}), ("AveragePool", {"count_include_pad": 1}),
                                       ("MaxPool", {}), ("LpPool", {"p": 2}), ("MaxPool", {"ceil_mode": 1})])
def test_onnx_kernel_of_two_billion_taps_in_the_padding(tmp_path, op, extra):
    source = _huge_kernel_onnx(tmp_path / "m.onnx", op, **extra)
    for args in (("run", source), ("convert", source, "-o", tmp_path / "m.xml")):
        done = poolir(*args)
        assert done.returncode in (0, 2) and "Traceback" not in done.stderr, (args, done.stderr)
    if (tmp_path / "m.xml").exists():  # and back: the IR -> ONNX planner once scanned every pads_end
        done = poolir("convert", tmp_path / "m.xml", "-o", tmp_path / "back.onnx")
        assert done.returncode in (0, 2) and "Traceback" not in done.stderr, done.stderr


def _lrn_onnx(path: Path, channels: int, size: int, spatial: int = 8) -> Path:
    shape = [1, channels, spatial, spatial]
    graph = helper.make_graph([helper.make_node("LRN", ["x"], ["y"], size=size, alpha=1e-3, beta=0.75, bias=2.0)],
                              "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10), path)
    return path


def test_lrn_over_every_channel_of_a_wide_tensor(tmp_path):
    """A 250-byte file: LRN of size 200001 over 200000 channels (51 MB, within the memory budget). Summed offset by
    offset, the window took hours; from running sums it is a few passes (the values: test_long_lrn_window_...)."""
    source = _lrn_onnx(tmp_path / "lrn.onnx", 200_000, 200_001)
    for args in (("run", source), ("convert", source, "-o", tmp_path / "lrn.xml")):
        done = poolir(*args)
        assert done.returncode == 0, (args, done.stderr)


def test_long_lrn_window_sums_agree_with_onnxruntime(tmp_path):
    import numpy as np

    from poolir import runtime
    from tests.networks.peers import run_onnxruntime

    source = _lrn_onnx(tmp_path / "lrn.onnx", 300, 201, spatial=3)
    x = np.random.default_rng(0).standard_normal((1, 300, 3, 3)).astype(np.float32) * 4
    np.testing.assert_allclose(runtime.run(source, {"x": x})["y"], run_onnxruntime(source, {"x": x})["y"], rtol=2e-6)


def _long_pool_onnx(path: Path, op: str, length: int, kernel: int, pad: int) -> Path:
    node = helper.make_node(op, ["x"], ["y"], kernel_shape=[kernel, kernel], pads=[pad] * 4)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                          [1, 2, length, length])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=10), path)
    return path


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_a_kernel_as_long_as_the_input_with_pads_one_short_of_it(tmp_path, op):
    """2000x2000 windows with pads of 1999 on a 2000x2000 map: 3999 edge outputs per axis of up to 2000 real taps
    each took minutes tap by tap (fuzz finding); running reductions along the axis give them at once."""
    source = _long_pool_onnx(tmp_path / "pool.onnx", op, 2000, 2000, 1999)
    done = poolir("run", source)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_long_edge_windows_agree_with_onnxruntime(tmp_path, op):
    import numpy as np

    from poolir import runtime
    from tests.networks.peers import run_onnxruntime

    source = _long_pool_onnx(tmp_path / "pool.onnx", op, 60, 37, 20)
    x = np.random.default_rng(0).standard_normal((1, 2, 60, 60)).astype(np.float32)
    expected = run_onnxruntime(source, {"x": x})["y"]
    if op == "MaxPool":
        np.testing.assert_array_equal(runtime.run(source, {"x": x})["y"], expected)
    else:  # sums of up to 1369 taps in another order
        np.testing.assert_allclose(runtime.run(source, {"x": x})["y"], expected, rtol=1e-5, atol=1e-6)
