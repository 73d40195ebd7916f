"""ONNX Erf, Gelu and LayerNormalization in poolir's runtime against independent oracles: the onnx package's
backend node cases and onnxruntime on seeded grids (f32 and f16; onnxruntime runs no f64 Erf)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from poolir import runtime
from poolir.ir.errors import PoolirError
from tests.peers import onnxruntime_run

OPS = ("Erf", "Gelu", "LayerNormalization")


def _backend_cases():
    import onnx.backend.test.case.node as node_cases

    for module in ("erf", "gelu", "layernormalization"):
        importlib.import_module(f"onnx.backend.test.case.node.{module}")
    return {case.name: case for case in node_cases._NodeTestCases
            if case.model.graph.node[0].op_type in OPS and len(case.model.graph.node) == 1}


BACKEND_CASES = _backend_cases()


def test_backend_cases_collected():
    assert {case.model.graph.node[0].op_type for case in BACKEND_CASES.values()} == set(OPS)
    assert sum(name.startswith("test_layer_normalization") for name in BACKEND_CASES) >= 10


@pytest.mark.parametrize("name", sorted(BACKEND_CASES))
def test_onnx_backend_case(name):
    case = BACKEND_CASES[name]
    graph = case.model.graph
    inputs, outputs = case.data_sets[0]
    result = runtime.run(case.model, {v.name: np.asarray(a) for v, a in zip(graph.input, inputs)})
    for output, want in zip(graph.output, outputs):
        got = result[output.name]
        assert got.shape == want.shape and got.dtype == want.dtype, output.name
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-5, atol=1e-6)


def _unary_model(op, dtype, opset, **attrs):
    tensor_type = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"], **attrs)], "g",
                              [helper.make_tensor_value_info("x", tensor_type, None)],
                              [helper.make_tensor_value_info("y", tensor_type, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def _ulps(got: np.ndarray, want: np.ndarray) -> float:
    spacing = np.spacing(np.maximum(np.abs(want), np.finfo(want.dtype).tiny)).astype(np.float64)
    return float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)) / spacing))


POINTS = np.concatenate([np.random.default_rng(5).standard_normal(20000) * 3, np.linspace(-7, 7, 14001),
                         [0.0, -0.0, 1e-40, np.inf, -np.inf, 0.84375, 1.25, 1 / 0.35, 6.0]])


@pytest.mark.parametrize("dtype,opset", [(np.float32, 9), (np.float32, 13), (np.float16, 13)])
def test_erf_within_an_ulp_of_onnxruntime(dtype, opset):
    x = POINTS.astype(dtype)
    model = _unary_model("Erf", dtype, opset)
    got, want = runtime.run(model, {"x": x})["y"], onnxruntime_run(model, {"x": x})["y"]
    assert got.dtype == want.dtype and _ulps(got, want) <= 1


def test_erf_nan_and_integer_input():
    got = runtime.run(_unary_model("Erf", np.float32, 13), {"x": np.array([np.nan], np.float32)})["y"]
    assert np.isnan(got).all()
    with pytest.raises(PoolirError, match="not allowed"):
        runtime.run(_unary_model("Erf", np.int32, 13), {"x": np.array([1], np.int32)})


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gelu_matches_onnxruntime(approximate, dtype):
    x = POINTS[np.isfinite(POINTS)].astype(dtype)
    model = _unary_model("Gelu", dtype, 20, approximate=approximate)
    got, want = runtime.run(model, {"x": x})["y"], onnxruntime_run(model, {"x": x})["y"]
    # onnxruntime's f32 Gelu rounds each step (and its tanh is MLAS's approximation): a few ulps of max(|y|, 1)
    scale = np.spacing(np.maximum(np.abs(want), 1).astype(dtype)).astype(np.float64)
    assert np.max(np.abs(got.astype(np.float64) - want) / scale) <= (8 if approximate == "tanh" else 4)


def _layer_norm_model(shape, axis, dtype, norm_shape, bias=True, outputs=3, epsilon=1e-5):
    tensor_type = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    rng = np.random.default_rng(len(shape) * 10 + axis)
    initializers = [numpy_helper.from_array(rng.standard_normal(norm_shape).astype(dtype), "scale")]
    names = ["x", "scale"]
    if bias:
        initializers.append(numpy_helper.from_array(rng.standard_normal(norm_shape).astype(dtype), "bias"))
        names.append("bias")
    output_names = ["y", "mean", "inv_std"][:outputs]
    node = helper.make_node("LayerNormalization", names, output_names, axis=axis, epsilon=epsilon)
    values = [helper.make_tensor_value_info("y", tensor_type, None)] + [
        helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in output_names[1:]]
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", tensor_type, shape)], values,
                              initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


def _layer_norm_grid(count=48, seed=23):
    rng = np.random.default_rng(seed)
    cases = []
    for index in range(count):
        rank = int(rng.integers(1, 5))
        shape = [int(rng.integers(1, 7)) for _ in range(rank)]
        axis = int(rng.integers(-rank, rank))
        normalised = shape[axis:]
        norm_shape = [normalised, [1] * len(normalised), normalised[-1:]][index % 3]
        cases.append((index, shape, axis, norm_shape, bool(index % 4), 1 + index % 3,
                      [np.float32, np.float16][index % 2]))
    return cases


@pytest.mark.parametrize("index,shape,axis,norm_shape,bias,outputs,dtype", _layer_norm_grid())
def test_layer_norm_matches_onnxruntime(index, shape, axis, norm_shape, bias, outputs, dtype):
    model = _layer_norm_model(shape, axis, dtype, norm_shape, bias, outputs)
    x = (np.random.default_rng(index).standard_normal(shape) * 3 + 2).astype(dtype)
    got, want = runtime.run(model, {"x": x}), onnxruntime_run(model, {"x": x})
    for name in want:
        assert got[name].dtype == want[name].dtype and got[name].shape == want[name].shape, name
        # a few ulps of the output's scale: + B and the mean's sum cancel, so small values carry the rounding of
        # the larger terms (the mean's are X's)
        size = max(np.abs(want[name]).max(), np.abs(x).max() if name == "mean" else 0)
        scale = np.spacing(size.astype(want[name].dtype)).astype(np.float64)
        assert np.max(np.abs(got[name].astype(np.float64) - want[name])) <= 4 * scale, name


def test_layer_norm_refusals():
    model = _layer_norm_model([2, 3], -1, np.float32, [3])
    with pytest.raises(PoolirError, match="does not broadcast"):
        runtime.run(_layer_norm_model([2, 3], -1, np.float32, [2]), {"x": np.zeros((2, 3), np.float32)})
    model.graph.node[0].attribute.append(helper.make_attribute("stash_type", 11))
    with pytest.raises(PoolirError, match="stash_type"):
        runtime.run(model, {"x": np.zeros((2, 3), np.float32)})
