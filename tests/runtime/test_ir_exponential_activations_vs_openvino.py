"""IR Elu, Selu, SoftPlus, SoftSign and Mish pinned against OpenVINO: each layer built with OpenVINO's opset API,
saved as IR by OpenVINO, run by its CPU plugin (the oracle) and by poolir; a seeded grid over element types, shapes
and parameters, then NaN, infinities and signed zeros, and the integer inputs the layers refuse."""

from __future__ import annotations

import random

import numpy as np
import openvino.opset1 as ov1
import openvino.opset4 as ov4
import openvino.opset9 as ov9
import pytest

from poolir.ir.errors import PoolirError
from tests.peers import openvino_run_xml
from tests.runtime.ir_cases import assert_matches_openvino, run_poolir, single_layer_ir

LAYERS = ("Elu", "Selu", "SoftPlus", "SoftSign", "Mish")


def _build(layer: str, rng: random.Random, dtype):
    if layer == "Elu":
        alpha = rng.choice((1.0, 0.5, 2.5))
        return lambda x: ov1.elu(x, alpha)
    if layer == "Selu":
        alpha, lambda_ = (np.array([v], dtype) for v in (rng.choice((1.6732632, 2.0)), rng.choice((1.0507010, 0.9))))
        return lambda x: ov1.selu(x, alpha, lambda_)
    return {"SoftPlus": ov4.softplus, "SoftSign": ov9.softsign, "Mish": ov4.mish}[layer]


def _grid(count=40, seed=11):
    rng = random.Random(seed)
    return [(LAYERS[index % len(LAYERS)], rng.choice(("float32", "float16")),
             tuple(rng.randint(1, 6) for _ in range(rng.randint(1, 4))), rng.randrange(2 ** 31))
            for index in range(count)]


@pytest.mark.parametrize("layer,dtype,shape,seed", _grid(), ids=str)
def test_grid_against_openvino(layer, dtype, shape, seed, tmp_path):
    path = single_layer_ir(_build(layer, random.Random(seed), dtype), shape, dtype, tmp_path / "model.xml")
    x = (np.random.default_rng(seed).standard_normal(shape) * 6).astype(dtype)
    # OpenVINO computes in f32 with vectorised exp/log (within 2e-6 absolute of the exact value); f16 rounds once.
    rtol, atol = (1e-5, 2e-6) if dtype == "float32" else (2e-3, 2e-3)
    assert_matches_openvino(path, {"x": x}, rtol=rtol, atol=atol, context=f"{layer} {dtype} {shape}")


def test_grid_covers_every_layer_and_type():
    assert {(layer, dtype) for layer, dtype, *_ in _grid()} == {(layer, dtype) for layer in LAYERS
                                                                for dtype in ("float32", "float16")}


SPECIAL = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, -100.0, 100.0, -3.3e38, 3.3e38, 20.5, -2.0], np.float32)


@pytest.mark.parametrize("layer", LAYERS)
def test_nan_infinities_and_zeros_as_openvino(layer, tmp_path):
    """NaN gives NaN; SoftSign(+-inf) and Mish(-inf) give NaN; Elu(-0) is +0 (x > 0 ? x : alpha * (exp(x) - 1)),
    where ONNX Elu keeps -0."""
    path = single_layer_ir(_build(layer, random.Random(0), np.float32), SPECIAL.shape, np.float32,
                           tmp_path / "model.xml")
    expected = next(iter(openvino_run_xml(path, {"x": SPECIAL}).values()))
    actual = next(iter(run_poolir(path, {"x": SPECIAL}).values()))
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-37, equal_nan=True)
    zeros = (actual == 0) & (expected == 0)
    np.testing.assert_array_equal(np.signbit(actual[zeros]), np.signbit(expected[zeros]))
    if layer == "Elu":
        assert actual[3] == 0 and not np.signbit(actual[3])


@pytest.mark.parametrize("layer", ["Selu", "SoftPlus", "SoftSign", "Mish"])
def test_integer_data_is_refused_like_openvino(layer, tmp_path):
    """OpenVINO refuses these layers on integers when it builds the graph; poolir refuses such an IR too."""
    path = single_layer_ir(_build(layer, random.Random(0), np.float32), (3,), np.float32, tmp_path / "model.xml")
    text = path.read_text().replace('element_type="f32"', 'element_type="i32"').replace(
        "<precision>FP32</precision>", "<precision>I32</precision>")
    path.write_text(text)
    with pytest.raises(PoolirError):
        run_poolir(path, {"x": np.zeros(3, np.int32)})
