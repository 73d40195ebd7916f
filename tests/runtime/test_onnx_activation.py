"""ONNX activations (Relu, Clip, Sigmoid, Tanh, HardSigmoid, HardSwish, LeakyRelu, PRelu, Softmax, LogSoftmax)
against independent oracles: the onnx package's backend node cases (at every opset whose row accepts them),
a seeded grid against onnxruntime over op versions, element types, shapes and attributes, and hand-worked
cases for the readings onnxruntime cannot show (Clip-1, version 1's consumed_inputs)."""

from __future__ import annotations

import importlib
import random

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from poolir import runtime
from poolir.ir.errors import PoolirError
from poolir.runtime.onnx_ops import OP_VERSIONS
from poolir.runtime.onnx_ops.activation import softmax_along_axis
from tests.peers import onnxruntime_run

OPS = ("Relu", "Clip", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "LeakyRelu", "PRelu", "Softmax",
       "LogSoftmax")
GENERATORS = ("relu", "clip", "sigmoid", "tanh", "hardsigmoid", "hardswish", "leakyrelu", "prelu", "softmax",
              "logsoftmax")


def _backend_cases():
    import onnx.backend.test.case.node as node_cases

    for module in GENERATORS:
        importlib.import_module(f"onnx.backend.test.case.node.{module}")
    return {case.name: case for case in node_cases._NodeTestCases
            if len(case.model.graph.node) == 1 and case.model.graph.node[0].op_type in OPS}


BACKEND_CASES = _backend_cases()


def test_every_generator_case_is_collected():
    ops = {case.model.graph.node[0].op_type for case in BACKEND_CASES.values()}
    assert ops == set(OPS)
    assert len(BACKEND_CASES) >= 40


def _feeds(case):
    inputs, _ = case.data_sets[0]
    return {value.name: np.asarray(array) for value, array in zip(case.model.graph.input, inputs)}


def _check(result, case):
    _, outputs = case.data_sets[0]
    for output, want in zip(case.model.graph.output, outputs):
        got = result[output.name]
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=case.rtol,
                                   atol=case.atol)


@pytest.mark.parametrize("name", sorted(BACKEND_CASES))
def test_onnx_backend_case_at_every_opset_that_accepts_it(name):
    case = BACKEND_CASES[name]
    node = case.model.graph.node[0]
    feeds = _feeds(case)
    dtype = next(iter(feeds.values())).dtype
    used = {attribute.name for attribute in node.attribute}
    case_opset = case.model.opset_import[0].version
    ran = 0
    for version in OP_VERSIONS[node.op_type]:
        takes_bounds_as_inputs = node.op_type != "Clip" or "min" not in version.attributes
        if not used <= set(version.attributes) or dtype not in version.dtypes:
            continue
        if len(node.input) > 1 and not takes_bounds_as_inputs:
            continue
        if node.op_type in ("Softmax", "LogSoftmax") and (
                softmax_along_axis(node.op_type, version.since) != softmax_along_axis(node.op_type, case_opset)):
            continue  # the case's expected values are those of its own opset's reading
        model = onnx.ModelProto.FromString(case.model.SerializeToString())
        model.opset_import[0].version = version.since
        _check(runtime.run(model, feeds), case)
        ran += 1
    assert ran >= 1


# ---------------------------------------------------------------------------------------------------
# A seeded grid against onnxruntime


def _model(op, opset, x_dtype, shape, attrs, extra=()):
    """One node; `extra`: (name, array or None) after x: an array becomes an initializer, None an empty input."""
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(x_dtype))
    names, inits = ["x"], []
    for name, value in extra:
        if value is None:
            names.append("")
        else:
            names.append(name)
            inits.append(numpy_helper.from_array(np.asarray(value), name))
    node = helper.make_node(op, names, ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", elem, shape)],
                              [helper.make_tensor_value_info("y", elem, None)], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=7)


# The (op, opset) -> element types onnxruntime 1.31 has kernels for (probed: any other fails "Could not find an
# implementation", and Softmax-1 on float16 fails in its own precision-cast pass). The grid runs exactly these;
# the other rows and types are covered by the backend cases and the hand-worked cases below.
_F16_32, _F = ("float16", "float32"), ("float16", "float32", "float64")
_INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
ORT_TYPES = {
    ("Relu", 6): _F, ("Relu", 13): _F, ("Relu", 14): (*_F, "int8", "int32"),
    ("Clip", 6): _F16_32, ("Clip", 11): _F16_32, ("Clip", 12): (*_F, *(t for t in _INTS if "16" not in t)),
    ("Clip", 13): (*_F, *_INTS),
    ("Sigmoid", 6): _F, ("Sigmoid", 13): _F, ("Tanh", 6): _F, ("Tanh", 13): _F,
    ("HardSigmoid", 6): _F16_32, ("HardSigmoid", 22): _F16_32, ("HardSwish", 14): _F16_32,
    ("HardSwish", 22): _F16_32, ("LeakyRelu", 6): _F16_32, ("LeakyRelu", 16): _F,
    ("PRelu", 7): _F16_32, ("PRelu", 9): _F16_32, ("PRelu", 16): (*_F, "int32", "int64", "uint32"),
    ("Softmax", 1): ("float32", "float64"), ("Softmax", 11): _F, ("Softmax", 13): _F,
    ("LogSoftmax", 1): ("float32", "float64"), ("LogSoftmax", 11): _F, ("LogSoftmax", 13): _F,
}
ORT_OPSETS = {op: tuple(opset for o, opset in ORT_TYPES if o == op) for op in OPS}


def _grid(count=240, seed=1234):
    rng = random.Random(seed)
    cases = []
    for index in range(count):
        op = OPS[index % len(OPS)]
        opset = rng.choice(ORT_OPSETS[op])
        dtype = rng.choice(ORT_TYPES[(op, opset)])
        rank = rng.randint(2 if op in ("Softmax", "LogSoftmax") else 1, 4)
        shape = tuple(rng.randint(1, 5) for _ in range(rank))
        cases.append((op, opset, np.dtype(dtype), shape, rng.randrange(2 ** 31)))
    return cases


def _case_input(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -50), min(info.max, 50) + 1, size=shape).astype(dtype)
    return (rng.standard_normal(shape) * 4).astype(dtype)


@pytest.mark.parametrize("op,opset,dtype,shape,seed", _grid(), ids=lambda v: str(v))
def test_grid_against_onnxruntime(op, opset, dtype, shape, seed):
    rng = random.Random(seed)
    x = _case_input(dtype, shape, seed)
    attrs, extra = {}, []
    if op == "Clip":
        low, high = sorted(rng.sample(range(0 if dtype.kind == "u" else -6, 7), 2))
        if rng.random() < 0.15 and opset >= 11:  # onnxruntime refuses Clip-6 with min > max
            low, high = high, low  # min > max: every element becomes max
        if opset < 11:
            attrs = {k: float(v) for k, v in (("min", low), ("max", high)) if rng.random() < 0.8}
        else:
            extra = [("lo", np.array(low, dtype) if rng.random() < 0.8 else None),
                     ("hi", np.array(high, dtype) if rng.random() < 0.8 else None)]
            while extra and extra[-1][1] is None:
                extra.pop()
    elif op in ("HardSigmoid", "LeakyRelu") and rng.random() < 0.6:
        attrs = {"alpha": rng.choice((0.1, 0.3, 1 / 3))}
        if op == "HardSigmoid":
            attrs["beta"] = rng.choice((0.2, 0.6))
    elif op == "PRelu":
        slope_shape = rng.choice([(1,), shape[-1:], shape[-2:] if len(shape) > 1 else shape, shape])
        extra = [("slope", (np.random.default_rng(seed + 1).standard_normal(slope_shape)).astype(dtype)
                  if dtype.kind == "f" else np.arange(np.prod(slope_shape), dtype=dtype).reshape(slope_shape))]
    elif op in ("Softmax", "LogSoftmax") and rng.random() < 0.8:
        attrs = {"axis": rng.randrange(-len(shape), len(shape))}
    model = _model(op, opset, dtype, shape, attrs, extra)
    expected = onnxruntime_run(model, {"x": x})["y"]
    actual = runtime.run(model, {"x": x})["y"]
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    if dtype.kind in "iu":
        np.testing.assert_array_equal(actual, expected)
    else:
        # f16 rounds once from f32 here and in onnxruntime; an f16 exp/tanh may differ by one f16 ulp.
        # onnxruntime's f32 Sigmoid and Tanh are MLAS approximations accurate to ~6e-8 absolute, not relative:
        # sigmoid(-11.8) is 7.4489e-6 (poolir, float64 truth rounded) where onnxruntime gives 7.3910e-6.
        rtol = {np.float16: 2e-3, np.float32: 2e-6, np.float64: 1e-12}[dtype.type]
        atol = 1e-7 if dtype == np.float32 and op in ("Sigmoid", "Tanh") else rtol * 1e-2
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol)


def test_grid_covers_every_op_and_version_onnxruntime_runs():
    seen = {(op, opset) for op, opset, *_ in _grid()}
    assert seen == set(ORT_TYPES)


# ---------------------------------------------------------------------------------------------------
# Readings pinned by hand and by onnxruntime

SPECIAL = np.array([np.nan, -np.inf, np.inf, -3.0, 0.5, 3.0, -3.3e38], np.float32)


@pytest.mark.parametrize("op,opset,attrs", [
    ("Relu", 14, {}), ("Clip", 6, {}), ("Clip", 6, {"min": -1.0, "max": 2.0}), ("Sigmoid", 13, {}),
    ("Tanh", 13, {}), ("HardSigmoid", 6, {}), ("HardSwish", 14, {}), ("LeakyRelu", 16, {})])
def test_nan_and_infinities_as_onnxruntime(op, opset, attrs):
    """NaN stays NaN; Clip-6's default bounds are +-FLT_MAX, so -inf becomes -3.4e38 (not -inf)."""
    model = _model(op, opset, np.float32, SPECIAL.shape, attrs)
    expected = onnxruntime_run(model, {"x": SPECIAL})["y"]
    np.testing.assert_allclose(runtime.run(model, {"x": SPECIAL})["y"], expected, rtol=1e-6, equal_nan=True)


def test_clip6_default_bounds_are_float_max():
    model = _model("Clip", 6, np.float32, SPECIAL.shape, {})
    got = runtime.run(model, {"x": SPECIAL})["y"]
    assert got[1] == -np.finfo(np.float32).max and got[2] == np.finfo(np.float32).max


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("row", [np.array([1, -np.inf, 2], np.float32), np.array([1, np.inf, 2], np.float32),
                                 np.array([1, np.nan, 2], np.float32)])
def test_softmax_infinities_as_onnxruntime(op, row):
    """-inf gets 0 (log: -inf); +inf or NaN make the whole slice NaN."""
    model = _model(op, 13, np.float32, row.shape, {"axis": 0})
    expected = onnxruntime_run(model, {"x": row})["y"]
    np.testing.assert_allclose(runtime.run(model, {"x": row})["y"], expected, rtol=1e-6, equal_nan=True)


def test_clip_min_above_max_gives_max():
    x = np.array([-5, 0, 5], np.float32)
    model = _model("Clip", 13, np.float32, x.shape, {}, [("lo", np.float32(2)), ("hi", np.float32(-1))])
    np.testing.assert_array_equal(runtime.run(model, {"x": x})["y"], [-1, -1, -1])
    np.testing.assert_array_equal(onnxruntime_run(model, {"x": x})["y"], [-1, -1, -1])


@pytest.mark.parametrize("op,attrs,expected", [
    # Clip-1: an absent bound is no bound (onnxruntime has no Clip-1 kernel: worked by hand)
    ("Clip", {"min": -1.0}, [-1.0, 0.5, np.inf]),
    ("Clip", {"max": 0.0}, [-np.inf, 0.0, 0.0]),
    ("Clip", {"consumed_inputs": [0]}, [-np.inf, 0.5, np.inf]),
    ("Relu", {"consumed_inputs": [0]}, [0.0, 0.5, np.inf]),
    ("LeakyRelu", {"consumed_inputs": [0], "alpha": 0.5}, [-np.inf, 0.5, np.inf]),
    ("HardSigmoid", {"consumed_inputs": [0]}, [0.0, 0.6, 1.0]),
])
def test_version_1_rows_by_hand(op, attrs, expected):
    x = np.array([-np.inf, 0.5, np.inf], np.float32)
    model = _model(op, 1, np.float32, x.shape, attrs)
    np.testing.assert_allclose(runtime.run(model, {"x": x})["y"], np.array(expected, np.float32), rtol=1e-6)


def test_consumed_inputs_is_refused_from_version_6():
    model = _model("Relu", 6, np.float32, (2,), {"consumed_inputs": [0]})
    with pytest.raises(PoolirError, match="consumed_inputs"):
        runtime.run(model, {"x": np.zeros(2, np.float32)})


def test_softmax_before_13_normalises_the_flattened_block():
    """Softmax-11, axis 1, on (2, 3, 2): each of the 2 rows of 6 sums to 1 (hand-worked), not each of 2 x 2
    columns of 3 (Softmax-13)."""
    x = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    old = runtime.run(_model("Softmax", 11, np.float32, x.shape, {"axis": 1}), {"x": x})["y"]
    new = runtime.run(_model("Softmax", 13, np.float32, x.shape, {"axis": 1}), {"x": x})["y"]
    np.testing.assert_allclose(old.reshape(2, 6).sum(axis=1), [1, 1], rtol=1e-6)
    np.testing.assert_allclose(new.sum(axis=1), np.ones((2, 2)), rtol=1e-6)
    row = np.exp(np.arange(6) - 5.0) / np.exp(np.arange(6) - 5.0).sum()
    np.testing.assert_allclose(old[0].ravel(), row, rtol=1e-6)


def test_hard_swish_is_onnxruntime_bit_for_bit():
    x = np.linspace(-8, 8, 20001).astype(np.float32)
    model = _model("HardSwish", 14, np.float32, x.shape, {})
    np.testing.assert_array_equal(runtime.run(model, {"x": x})["y"], onnxruntime_run(model, {"x": x})["y"])


def test_f16_softmax_computes_in_f32():
    """Large f16 logits: exp(x - max) in f32, rounded once; the f64 result rounded to f16 agrees."""
    x = np.array([60000, 59990, -60000, 0], np.float16)
    got = runtime.run(_model("Softmax", 13, np.float16, x.shape, {}), {"x": x})["y"]
    w = x.astype(np.float64)
    want = (np.exp(w - w.max()) / np.exp(w - w.max()).sum()).astype(np.float16)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op,opset,attrs,dtype", [("Softmax", 13, {"axis": 3}, np.float32),
                                                   ("Relu", 13, {}, np.int32), ("Clip", 11, {}, np.int32)])
def test_bad_input_is_refused(op, opset, attrs, dtype):
    model = _model(op, opset, dtype, (2, 3), attrs)
    with pytest.raises(PoolirError):
        runtime.run(model, {"x": np.zeros((2, 3), dtype)})
