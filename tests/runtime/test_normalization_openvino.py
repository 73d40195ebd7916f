"""IR BatchNormInference-1/-5 and LRN-1 in poolir's runtime against OpenVINO 2026.4 (CPU, f32).

Each case is built with poolir's GraphBuilder, written as .xml + .bin, and run by OpenVINO from the file
and by poolir. The LRN grid pins OpenVINO's facts (runtime/ir_ops/normalization.py): the symmetric window
(even sizes lose an element), alpha / size^len(axes), the integer-truncated bias, and the axes it runs.
"""

from __future__ import annotations

import numpy as np
import pytest

from poolir import ir, runtime
from poolir.ir.builder import GraphBuilder
from poolir.ir.errors import PoolirError
from tests.peers import openvino_run_xml


def _run_both(builder: GraphBuilder, feeds, tmp_path):
    model = builder.build()
    path = tmp_path / "m.xml"
    ir.write_model(model, path)
    want = openvino_run_xml(path, feeds, ["y"])["y"]
    got = runtime.run(ir.read_model(path), feeds)["y"]
    return got, want


def _bn_builder(shape, version, epsilon, rng, dtype=np.float32):
    element = {np.float32: "f32", np.float64: "f64", np.float16: "f16"}[dtype]
    builder = GraphBuilder()
    x = builder.parameter("x", element, shape)
    c = shape[1]
    gamma, beta, mean = (builder.const(rng.standard_normal(c).astype(dtype)) for _ in range(3))
    var = builder.const((rng.random(c) * 2).astype(dtype))
    inputs = [x, gamma, beta, mean, var] if version == 5 else [gamma, beta, x, mean, var]
    (y,) = builder.add("BatchNormInference", f"opset{version}", inputs, {"epsilon": epsilon})
    builder.result(y, "y")
    return builder


def _bn_grid():
    rng = np.random.default_rng(5)
    cases = []
    for index in range(30):
        rank = int(rng.integers(2, 6))
        shape = [int(rng.integers(1, 3))] + [int(rng.integers(1, 6)) for _ in range(rank - 1)]
        cases.append((index, shape, [1, 5][index % 2], [1e-5, 1e-3, 0.25, 0.0][index % 4]))
    return cases


@pytest.mark.parametrize("index, shape, version, epsilon", _bn_grid())
def test_batch_norm_inference_matches_openvino(index, shape, version, epsilon, tmp_path):
    rng = np.random.default_rng(index)
    builder = _bn_builder(shape, version, epsilon, rng)
    feeds = {"x": (rng.standard_normal(shape) * 3).astype(np.float32)}
    got, want = _run_both(builder, feeds, tmp_path)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _lrn_builder(shape, axes, alpha, beta, bias, size):
    builder = GraphBuilder()
    x = builder.parameter("x", "f32", shape)
    (y,) = builder.add("LRN", "opset1", [x, builder.const(np.array(axes, np.int64))],
                       {"alpha": alpha, "beta": beta, "bias": bias, "size": size})
    builder.result(y, "y")
    return builder


def _lrn_grid():
    rng = np.random.default_rng(11)
    cases = []
    for index in range(60):
        rank = int(rng.integers(3, 5))
        shape = [int(rng.integers(1, 3)), int(rng.integers(1, 8))] + [int(rng.integers(1, 6)) for _ in range(rank - 2)]
        axes = [1] if index % 3 else list(range(2, rank))
        size = int(rng.integers(1, 8))
        alpha = float(rng.choice([1e-4, 0.3, 2.0]))
        beta = float(rng.choice([0.5, 0.75, 1.0]))
        bias = float(rng.choice([1.0, 2.0, 1.5, 0.5, 2.75]))
        cases.append((index, shape, axes, alpha, beta, bias, size))
    return cases


@pytest.mark.parametrize("index, shape, axes, alpha, beta, bias, size", _lrn_grid())
def test_lrn_matches_openvino(index, shape, axes, alpha, beta, bias, size, tmp_path):
    rng = np.random.default_rng(index)
    feeds = {"x": (rng.standard_normal(shape) * 2).astype(np.float32)}
    got, want = _run_both(_lrn_builder(shape, axes, alpha, beta, bias, size), feeds, tmp_path)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_lrn_openvino_facts_by_hand(tmp_path):
    """alpha 1, beta 1, x = [1, 2, 3, 0.5] over channels: x / y - bias = alpha / size * square sum."""
    x = np.array([1.0, 2.0, 3.0, 0.5], np.float32).reshape(1, 4, 1, 1)
    squares = x.ravel() ** 2
    three = np.array([squares[0] + squares[1], squares[:3].sum(), squares[1:].sum(), squares[2] + squares[3]])
    for size, bias, sums in ((2, 1.0, squares), (3, 1.0, three), (4, 1.0, three), (1, 1.5, squares)):
        got, want = _run_both(_lrn_builder([1, 4, 1, 1], [1], 1.0, 1.0, bias, size), {"x": x}, tmp_path)
        expected = x.ravel() / (int(bias) + sums / size)
        np.testing.assert_allclose(want.ravel(), expected, rtol=1e-6)  # OpenVINO's facts 1 and 3
        np.testing.assert_allclose(got.ravel(), expected, rtol=1e-6)


@pytest.mark.parametrize("axes", [[2], [0, 1], [1, 2, 3]])
def test_lrn_axes_openvino_does_not_run_are_refused(axes):
    model = _lrn_builder([1, 3, 4, 4], axes, 1.0, 0.75, 1.0, 3).build()
    with pytest.raises(PoolirError, match="OpenVINO's CPU plugin runs only"):
        runtime.run(model, {"x": np.ones((1, 3, 4, 4), np.float32)})


def test_batch_norm_inference_rank_1_is_refused():
    builder = GraphBuilder()
    x = builder.parameter("x", "f32", [3])
    stats = [builder.const(np.ones(3, np.float32)) for _ in range(4)]
    with pytest.raises(PoolirError, match="rank >= 2"):
        builder.add("BatchNormInference", "opset5", [x, *stats], {"epsilon": 1e-3})


@pytest.mark.parametrize("bias, truncated", [(-0.5, 0.0), (-1.5, -1.0), (0.999, 0.0)])
def test_lrn_bias_truncates_toward_zero(bias, truncated, tmp_path):
    """OpenVINO's CPU plugin truncates bias toward zero (not floor): -1.5 runs as -1, -0.5 as 0."""
    x = np.array([1.0, 2.0, 3.0], np.float32).reshape(1, 3, 1, 1)
    got, want = _run_both(_lrn_builder([1, 3, 1, 1], [1], 10.0, 1.0, bias, 1), {"x": x}, tmp_path)
    expected = x.ravel() / (truncated + 10.0 * x.ravel() ** 2)
    np.testing.assert_allclose(want.ravel(), expected, rtol=1e-5)
    np.testing.assert_allclose(got.ravel(), expected, rtol=1e-5)
