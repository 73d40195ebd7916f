"""IR layers of transformer-style blocks (ConvNeXt, ViT) pinned against OpenVINO's CPU plugin: MVN-1 and MVN-6,
Gelu-2 and Gelu-7 (erf and tanh modes), Erf-1. Each layer is built with OpenVINO's opset API, saved as IR,
run by OpenVINO (the oracle) and by poolir.

poolir computes erf and GELU exactly (float64, rounded once); the CPU plugin approximates them in f32, so
those comparisons carry the plugin's measured error (runtime/ir_ops/activation.py, pointwise.py) as their
tolerance, and the exact values are checked against Python's math.erf."""

from __future__ import annotations

import math
import random

import numpy as np
import openvino.opset1 as ov1
import openvino.opset2 as ov2
import openvino.opset6 as ov6
import openvino.opset7 as ov7
import pytest

from poolir.ir.errors import PoolirError
from tests.runtime.ir_cases import assert_matches_openvino, run_poolir, single_layer_ir


def _mvn_grid(count=40, seed=17):
    rng = random.Random(seed)
    cases = []
    for index in range(count):
        rank = rng.randint(1, 4)
        shape = tuple(rng.randint(1, 6) for _ in range(rank))
        axes = sorted(rng.sample(range(rank), rng.randint(1, rank)))
        if rng.random() < 0.3:
            axes = [a - rank for a in axes]
        cases.append((shape, axes, rng.random() < 0.8, rng.choice((1e-5, 1e-9, 0.5)),
                      rng.choice(("inside_sqrt", "outside_sqrt")), rng.choice(("float32", "float16")), index))
    return cases


@pytest.mark.parametrize("shape,axes,variance,eps,mode,dtype,seed", _mvn_grid(), ids=str)
def test_mvn6_against_openvino(shape, axes, variance, eps, mode, dtype, seed, tmp_path):
    axes_const = ov1.constant(np.array(axes, np.int64))
    path = single_layer_ir(lambda x: ov6.mvn(x, axes_const, variance, eps, mode), shape, dtype, tmp_path / "m.xml")
    x = (np.random.default_rng(seed).standard_normal(shape) * 3 + 2).astype(dtype)
    rtol, atol = (1e-5, 1e-5) if dtype == "float32" else (2e-3, 2e-3)
    assert_matches_openvino(path, {"x": x}, rtol=rtol, atol=atol, context=f"MVN-6 {shape} {axes}")


@pytest.mark.parametrize("across,variance,axes", [(True, True, None), (False, True, None), (False, False, None),
                                                  (False, True, [1, 2, 3]), (True, False, [2, 3])])
def test_mvn1_against_openvino(across, variance, axes, tmp_path):
    def build(x):
        node = ov2.mvn(x, across_channels=across, normalize_variance=variance, eps=1e-6)
        if axes is not None:
            node.set_attribute("reduction_axes", axes)
        return node
    path = single_layer_ir(build, (2, 3, 4, 5), "float32", tmp_path / "m.xml")
    x = (np.random.default_rng(3).standard_normal((2, 3, 4, 5)) * 2 - 1).astype(np.float32)
    assert_matches_openvino(path, {"x": x}, rtol=1e-5, atol=1e-5)


# The CPU plugin's f32 approximations, measured on 120001 points in [-7, 7] (the test below re-measures them).
ERF_ERROR = 5e-7
GELU_ERROR = 1.2e-6
POINTS = np.concatenate([np.linspace(-7, 7, 2801), [0.0, -0.0, 1e-30, 0.84375, 1.25, 2.857, 6.0]]).astype(np.float32)


@pytest.mark.parametrize("name,build,atol", [
    ("Erf-1", lambda x: ov1.erf(x), ERF_ERROR),
    ("Gelu-2", lambda x: ov2.gelu(x), GELU_ERROR),
    ("Gelu-7 erf", lambda x: ov7.gelu(x, "erf"), GELU_ERROR),
    ("Gelu-7 tanh", lambda x: ov7.gelu(x, "tanh"), GELU_ERROR),
])
def test_erf_and_gelu_against_openvino(name, build, atol, tmp_path):
    path = single_layer_ir(build, POINTS.shape, "float32", tmp_path / "m.xml")
    got = assert_matches_openvino(path, {"x": POINTS}, rtol=1e-3, atol=atol, context=name)
    y = next(iter(got.values())).astype(np.float64)
    x = POINTS.astype(np.float64)
    if name == "Erf-1":
        exact = np.array([math.erf(v) for v in x])
    elif name.endswith("tanh"):
        exact = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    else:
        exact = x * 0.5 * (1 + np.array([math.erf(v / math.sqrt(2)) for v in x]))
    # poolir rounds the exact value once: within half an f32 ulp (one ulp for the tanh form's float64 tanh)
    np.testing.assert_array_less(np.abs(y - exact), np.spacing(np.abs(exact).astype(np.float32)) * 1.01 + 1e-45)


def test_erf_special_values(tmp_path):
    x = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0], np.float32)
    path = single_layer_ir(lambda p: ov1.erf(p), x.shape, "float32", tmp_path / "m.xml")
    got = assert_matches_openvino(path, {"x": x}, rtol=0, atol=0)
    np.testing.assert_array_equal(next(iter(got.values())), [np.nan, -1, 1, -0.0, 0.0])


@pytest.mark.parametrize("dtype", ["float16"])
def test_erf_gelu_float16(dtype, tmp_path):
    x = np.linspace(-6, 6, 1201).astype(dtype)
    for build in (lambda p: ov1.erf(p), lambda p: ov7.gelu(p, "erf")):
        path = single_layer_ir(build, x.shape, dtype, tmp_path / "m.xml")
        assert_matches_openvino(path, {"x": x}, rtol=2e-3, atol=2e-3)


def test_mvn1_reduction_axes_the_plugin_ignores_are_refused(tmp_path):
    """OpenVINO reads reduction_axes [1, 3] as across_channels and normalises [1, 2, 3]: poolir refuses it."""
    def build(x):
        node = ov2.mvn(x, across_channels=False, normalize_variance=True, eps=1e-6)
        node.set_attribute("reduction_axes", [1, 3])
        return node
    path = single_layer_ir(build, (2, 3, 4, 5), "float32", tmp_path / "m.xml")
    with pytest.raises(PoolirError, match="reduction_axes"):
        run_poolir(path, {"x": np.zeros((2, 3, 4, 5), np.float32)})


def test_integer_gelu_refused(tmp_path):
    """OpenVINO refuses an integer Gelu when it builds it; poolir when it reads one."""
    path = single_layer_ir(lambda p: ov7.gelu(p, "erf"), (3,), "float32", tmp_path / "g.xml")
    path.write_text(path.read_text().replace('"f32"', '"i32"'))
    with pytest.raises(PoolirError, match="Gelu takes a floating type"):
        run_poolir(path, {"x": np.arange(3, dtype=np.int32)})
