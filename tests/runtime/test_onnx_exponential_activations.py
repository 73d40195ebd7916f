"""ONNX Elu, Selu, Celu, Softplus, Softsign and Mish against independent oracles: the onnx package's backend node
cases (at every opset whose row accepts them), a seeded grid against onnxruntime over the op versions and element
types it has kernels for, NaN / infinities / signed zeros against onnxruntime, and the float64 formulas by hand for
the rows onnxruntime cannot run (Elu-1 and Selu-1 with their own defaults, Celu-28, float64)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from onnx import helper

from poolir import runtime
from poolir.ir.errors import PoolirError
from tests.backend_cases import accepting_versions, at_opset, feeds_of, node_cases
from tests.peers import onnxruntime_run

OPS = ("Elu", "Selu", "Celu", "Softplus", "Softsign", "Mish")


BACKEND_CASES = node_cases(("elu", "selu", "celu", "softplus", "softsign", "mish"), OPS)


def test_every_generator_case_is_collected():
    assert {case.model.graph.node[0].op_type for case in BACKEND_CASES.values()} == set(OPS)
    assert len(BACKEND_CASES) >= 14


@pytest.mark.parametrize("name", sorted(BACKEND_CASES))
def test_onnx_backend_case_at_every_opset_that_accepts_it(name):
    case = BACKEND_CASES[name]
    node = case.model.graph.node[0]
    _, outputs = case.data_sets[0]
    feeds = feeds_of(case)
    used = {attribute.name for attribute in node.attribute}
    ran = 0
    for version in accepting_versions(case):
        if node.op_type == "Selu" and version.since == 1 and used != {"alpha", "gamma"}:
            continue  # Selu-1's defaults are other constants (test_selu_1_defaults)
        result = runtime.run(at_opset(case, version.since), feeds)
        for output, want in zip(case.model.graph.output, outputs):
            got = result[output.name]
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=case.rtol,
                                       atol=case.atol)
        ran += 1
    assert ran >= 1


def _model(op, opset, dtype, shape, attrs):
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"], **attrs)], "g",
                              [helper.make_tensor_value_info("x", elem, shape)],
                              [helper.make_tensor_value_info("y", elem, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


# (op, opset) -> the element types onnxruntime 1.31 has kernels for (probed; the other rows are worked by hand)
ORT_TYPES = {("Elu", 6): ("float16", "float32"), ("Elu", 22): ("float16", "float32"),
             ("Selu", 6): ("float16", "float32"), ("Selu", 22): ("float16", "float32"), ("Celu", 12): ("float32",),
             ("Softplus", 1): ("float32",), ("Softplus", 22): ("float16", "float32"), ("Softsign", 1): ("float32",),
             ("Softsign", 22): ("float16", "float32"), ("Mish", 18): ("float16", "float32", "float64"),
             ("Mish", 22): ("float16", "float32")}


def _attributes(op, rng):
    if op in ("Elu", "Celu") and rng.random() < 0.7:
        return {"alpha": rng.choice((0.5, 1.0, 2.5, 0.1))}
    if op == "Selu" and rng.random() < 0.5:
        return {"alpha": rng.choice((1.5, 2.0)), "gamma": rng.choice((1.1, 0.9))}
    return {}


def _grid(count=120, seed=77):
    rng = random.Random(seed)
    rows = sorted(ORT_TYPES)
    cases = []
    for index in range(count):
        op, opset = rows[index % len(rows)]
        shape = tuple(rng.randint(1, 6) for _ in range(rng.randint(1, 4)))
        cases.append((op, opset, np.dtype(rng.choice(ORT_TYPES[(op, opset)])), shape, _attributes(op, rng),
                      rng.randrange(2 ** 31)))
    return cases


@pytest.mark.parametrize("op,opset,dtype,shape,attrs,seed", _grid(), ids=lambda v: str(v))
def test_grid_against_onnxruntime(op, opset, dtype, shape, attrs, seed):
    x = (np.random.default_rng(seed).standard_normal(shape) * 6).astype(dtype)
    model = _model(op, opset, dtype, shape, attrs)
    expected = onnxruntime_run(model, {"x": x})["y"]
    actual = runtime.run(model, {"x": x})["y"]
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    # onnxruntime computes in the element type; poolir rounds the float64 value once (float16: one ulp apart).
    rtol, atol = {np.float16: (2e-3, 1e-3), np.float32: (3e-6, 2e-6), np.float64: (1e-12, 1e-13)}[dtype.type]
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol)


def test_grid_covers_every_row_onnxruntime_runs():
    assert {(op, opset) for op, opset, *_ in _grid()} == set(ORT_TYPES)


SPECIAL = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, -100.0, 100.0, -3.3e38, 3.3e38, 1e-30, -1e-30], np.float32)


@pytest.mark.parametrize("op,opset", [("Elu", 6), ("Selu", 6), ("Celu", 12), ("Softplus", 1), ("Softsign", 1),
                                      ("Mish", 18)])
def test_nan_infinities_and_zeros_as_onnxruntime(op, opset):
    """NaN stays NaN; softsign(+-inf) and mish(-inf) are NaN (inf / inf, -inf * 0) in both; the sign of zero
    where onnxruntime keeps it (Elu(-0) = -0, Selu(-0) = +0). Tiny results may differ by onnxruntime's rounding of
    exp(x) - 1 in float32 (Elu(-1e-30): 0 there, -1e-30 here, the exact value rounded)."""
    model = _model(op, opset, np.float32, SPECIAL.shape, {})
    expected = onnxruntime_run(model, {"x": SPECIAL})["y"]
    actual = runtime.run(model, {"x": SPECIAL})["y"]
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-29, equal_nan=True)
    zeros = (SPECIAL == 0) & (expected == 0)
    np.testing.assert_array_equal(np.signbit(actual[zeros]), np.signbit(expected[zeros]))


def test_selu_1_defaults():
    """Selu-1's defaults are alpha 1.6732 and gamma 1.0507 (rounded to float32); version 6's the 10-digit
    constants. By hand: gamma * x above 0, gamma * alpha * (exp(x) - 1) below."""
    x = np.array([-2.0, 3.0], np.float32)
    for opset, alpha, gamma in ((1, 1.6732, 1.0507), (6, 1.67326319217681884765625, 1.05070102214813232421875)):
        alpha, gamma = float(np.float32(alpha)), float(np.float32(gamma))
        want = np.array([gamma * alpha * np.expm1(-2.0), gamma * 3.0], np.float64).astype(np.float32)
        np.testing.assert_array_equal(runtime.run(_model("Selu", opset, np.float32, x.shape, {}), {"x": x})["y"], want)


@pytest.mark.parametrize("op,attrs,formula", [
    ("Elu", {"alpha": 0.5}, lambda w: np.where(w < 0, 0.5 * np.expm1(w), w)),
    ("Celu", {"alpha": 2.5}, lambda w: np.maximum(w, 0) + np.minimum(0, 2.5 * np.expm1(w / 2.5))),
    ("Softplus", {}, lambda w: np.log1p(np.exp(w))),
    ("Softsign", {}, lambda w: w / (1 + np.abs(w))),
    ("Mish", {}, lambda w: w * np.tanh(np.log1p(np.exp(w)))),
])
@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_types_onnxruntime_has_no_kernel_for_by_the_formula(op, attrs, formula, dtype):
    """float64 (and Celu-28's float16) against the float64 formula: equal in float64, one rounding in float16."""
    x = np.linspace(-9, 9, 37).astype(dtype)
    opset = 28 if op == "Celu" else 22
    got = runtime.run(_model(op, opset, dtype, x.shape, attrs), {"x": x})["y"]
    want = formula(x.astype(np.float64)).astype(dtype)
    assert got.dtype == dtype
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-12 if dtype == np.float64
                               else 0, atol=1e-15 if dtype == np.float64 else 0)


@pytest.mark.parametrize("op,opset,dtype", [("Celu", 12, np.float64), ("Mish", 17, np.float32),
                                            ("Elu", 6, np.int32)])
def test_rows_refuse_what_they_do_not_take(op, opset, dtype):
    """Celu takes float32 only until version 28; Mish exists from opset 18; no integer Elu."""
    with pytest.raises(PoolirError):
        runtime.run(_model(op, opset, dtype, (2,), {}), {"x": np.zeros(2, dtype)})
