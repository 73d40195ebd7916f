"""ONNX BatchNormalization, LRN and Dropout in poolir's runtime against independent oracles.

Oracles: the onnx package's backend node cases (batch_normalization, lrn, dropout generators; the
training-mode cases are expected to be refused, each named below), onnxruntime on seeded grids, and
hand-worked cases for what onnxruntime does not run (opsets < 7, even LRN sizes, spatial=0).
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from onnx import TensorProto, helper

from poolir import runtime
from poolir.ir.errors import PoolirError
from tests.peers import onnxruntime_run

GENERATORS = ("batch_normalization", "lrn", "dropout")
OPS = ("BatchNormalization", "LRN", "Dropout")


def _backend_cases():
    import onnx.backend.test.case.node as node_cases

    for module in GENERATORS:
        importlib.import_module(f"onnx.backend.test.case.node.{module}")
    return {case.name: case for case in node_cases._NodeTestCases
            if case.model.graph.node[0].op_type in OPS and len(case.model.graph.node) == 1}


BACKEND_CASES = _backend_cases()


def _is_training(case) -> bool:
    """Training-mode cases (random dropout, batch statistics, running-statistics outputs): poolir refuses them."""
    node = case.model.graph.node[0]
    if node.op_type == "BatchNormalization":
        return any(a.name == "training_mode" and a.i for a in node.attribute) or len(node.output) > 1
    if node.op_type == "Dropout":
        return len(node.input) >= 3 and node.input[2] != "" and bool(np.ravel(case.data_sets[0][0][2])[0]) and \
            float(np.ravel(case.data_sets[0][0][1])[0]) != 0.0
    return False


def test_backend_cases_collected():
    names = sorted(BACKEND_CASES)
    assert sum(n.startswith("test_batchnorm") for n in names) >= 4, names
    assert sum(n.startswith("test_lrn") for n in names) >= 2, names
    assert sum(n.startswith("test_dropout") or n.startswith("test_training_dropout") for n in names) >= 4, names


@pytest.mark.parametrize("name", sorted(BACKEND_CASES))
def test_onnx_backend_case(name):
    case = BACKEND_CASES[name]
    graph = case.model.graph
    inputs, outputs = case.data_sets[0]
    feeds = {value.name: np.asarray(array) for value, array in zip(graph.input, inputs)}
    if _is_training(case):
        with pytest.raises(PoolirError, match="training|inference only"):
            runtime.run(case.model, feeds)
        return
    result = runtime.run(case.model, feeds)
    for output, want in zip(graph.output, outputs):
        got = result[output.name]
        assert got.shape == want.shape and got.dtype == want.dtype, output.name
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=case.rtol, atol=case.atol)


def _model(node, inputs, outputs, opset, initializers=()):
    graph = helper.make_graph([node], "g", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def _bn_model(shape, opset, dtype=TensorProto.FLOAT, epsilon=None, stats_dtype=None, attrs=None):
    names = ["x", "scale", "bias", "mean", "var"]
    kwargs = dict(attrs or {})
    if epsilon is not None:
        kwargs["epsilon"] = epsilon
    node = helper.make_node("BatchNormalization", names, ["y"], **kwargs)
    c = shape[1]
    stats = stats_dtype or dtype
    inputs = [helper.make_tensor_value_info("x", dtype, shape)] + \
        [helper.make_tensor_value_info(n, stats, [c]) for n in names[1:]]
    return _model(node, inputs, [helper.make_tensor_value_info("y", dtype, shape)], opset)


def _bn_feeds(rng, shape, dtype=np.float32, stats_dtype=None):
    c = shape[1]
    stats = stats_dtype or dtype
    return {"x": (rng.standard_normal(shape) * 3).astype(dtype), "scale": rng.standard_normal(c).astype(stats),
            "bias": rng.standard_normal(c).astype(stats), "mean": rng.standard_normal(c).astype(stats),
            "var": (rng.random(c) * 2).astype(stats)}


def _bn_grid():
    rng = np.random.default_rng(20261123)
    cases = []
    for index in range(60):
        rank = int(rng.integers(2, 6))
        shape = [int(rng.integers(1, 4))] + [int(rng.integers(1, 6)) for _ in range(rank - 1)]
        opset = int(rng.choice([7, 9, 14, 15, 22]))
        epsilon = [None, 1e-3, 0.5, 0.0][index % 4]
        dtype = [np.float32, np.float64, np.float16][index % 3]
        cases.append((index, shape, opset, epsilon, dtype))
    return cases


@pytest.mark.parametrize("index, shape, opset, epsilon, dtype", _bn_grid())
def test_batch_norm_matches_onnxruntime(index, shape, opset, epsilon, dtype):
    rng = np.random.default_rng(index)
    onnx_type = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    model = _bn_model(shape, opset, onnx_type, epsilon)
    feeds = _bn_feeds(rng, shape, dtype)
    want = onnxruntime_run(model, feeds)["y"]
    got = runtime.run(model, feeds)["y"]
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = 2e-3 if dtype == np.float16 else 1e-5
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


def test_batch_norm_15_mixed_types_matches_onnxruntime():
    rng = np.random.default_rng(3)
    shape = [2, 3, 4]
    model = _bn_model(shape, 15, TensorProto.FLOAT16, 1e-3, stats_dtype=TensorProto.FLOAT)
    feeds = _bn_feeds(rng, shape, np.float16, np.float32)
    try:
        want = onnxruntime_run(model, feeds)["y"]
    except Exception as error:  # noqa: BLE001
        pytest.skip(f"onnxruntime does not run BatchNormalization-15 with f16 X and f32 statistics: {error}")
    np.testing.assert_allclose(runtime.run(model, feeds)["y"].astype(np.float64), want.astype(np.float64),
                               rtol=2e-3, atol=2e-3)


def test_batch_norm_spatial_0_by_hand():
    # opset 7, spatial=0: statistics per element of a sample (C x D): x (1, 2, 2)
    x = np.array([[[1.0, 2.0], [3.0, 4.0]]], np.float32)
    stats = {"scale": np.array([[1, 2], [1, 1]], np.float32), "bias": np.array([[0, 1], [0, 0]], np.float32),
             "mean": np.array([[1, 0], [3, 2]], np.float32), "var": np.array([[4, 1], [1, 4]], np.float32)}
    node = helper.make_node("BatchNormalization", ["x", *stats], ["y"], spatial=0, epsilon=0.0)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 2])] + \
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 2]) for n in stats]
    model = _model(node, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 2])], 7)
    got = runtime.run(model, {"x": x, **stats})["y"]
    # (1-1)/2*1+0, (2-0)/1*2+1, (3-3)/1, (4-2)/2
    np.testing.assert_array_equal(got, [[[0.0, 5.0], [0.0, 1.0]]])


@pytest.mark.parametrize("opset, attrs, outputs, match", [
    (6, {}, 1, "is_test=0"),
    (6, {"is_test": 1}, 2, "training"),
    (9, {}, 3, "training"),
    (14, {"training_mode": 1}, 1, "training_mode=1"),
])
def test_batch_norm_training_is_refused(opset, attrs, outputs, match):
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"][:outputs], **attrs)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3])] + \
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in "sbmv"]
    model = _model(node, inputs, [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
                                  for n in ["y", "rm", "rv"][:outputs]], opset)
    feeds = {"x": np.ones((1, 2, 3), np.float32), **{n: np.ones(2, np.float32) for n in "sbmv"}}
    with pytest.raises(PoolirError, match=match):
        runtime.run(model, feeds)


def test_batch_norm_6_is_test_runs_by_hand():
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], is_test=1, epsilon=0.0)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])] + \
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in "sbmv"]
    model = _model(node, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])], 6)
    feeds = {"x": np.array([[3.0, 5.0]], np.float32), "s": np.array([2.0, 1.0], np.float32),
             "b": np.array([1.0, 0.0], np.float32), "m": np.array([1.0, 1.0], np.float32),
             "v": np.array([4.0, 16.0], np.float32)}
    np.testing.assert_array_equal(runtime.run(model, feeds)["y"], [[3.0, 1.0]])  # (3-1)/2*2+1, (5-1)/4


def _lrn_model(shape, opset, size, dtype=TensorProto.FLOAT, **attrs):
    node = helper.make_node("LRN", ["x"], ["y"], size=size, **attrs)
    return _model(node, [helper.make_tensor_value_info("x", dtype, shape)],
                  [helper.make_tensor_value_info("y", dtype, shape)], opset)


def _lrn_grid():
    rng = np.random.default_rng(1123)
    cases = []
    for index in range(60):
        # onnxruntime's LRN takes rank 4 only ("X_shape.NumDimensions() == 4"); other ranks: by hand below
        shape = [int(rng.integers(1, 3))] + [int(rng.integers(1, 8))] + [int(rng.integers(1, 5)) for _ in range(2)]
        size = int(rng.choice([1, 3, 5, 7, 9, 11]))  # onnxruntime refuses even sizes
        attrs = {}
        if index % 2:
            attrs = {"alpha": float(rng.choice([1e-4, 0.3, 2.0])), "beta": float(rng.choice([0.5, 0.75, 1.3])),
                     "bias": float(rng.choice([1.0, 1.5, 2.0, 0.7]))}
        cases.append((index, shape, int(rng.choice([1, 13])) if index % 3 else 13, size, attrs))
    return cases


@pytest.mark.parametrize("index, shape, opset, size, attrs", _lrn_grid())
def test_lrn_matches_onnxruntime(index, shape, opset, size, attrs):
    rng = np.random.default_rng(index)
    model = _lrn_model(shape, max(opset, 7), size, **attrs)  # onnxruntime runs opset >= 7
    feeds = {"x": (rng.standard_normal(shape) * 2).astype(np.float32)}
    want = onnxruntime_run(model, feeds)["y"]
    np.testing.assert_allclose(runtime.run(model, feeds)["y"], want, rtol=1e-5, atol=1e-6)


def test_lrn_rank_3_and_5_by_hand():
    # one spatial dim, then three: the window runs over axis 1 whatever the rank (size 3, alpha 3 -> alpha / 3 = 1)
    for shape in ((1, 3, 2), (1, 3, 1, 1, 2)):
        x = np.arange(1, 7, dtype=np.float32).reshape(shape)
        got = runtime.run(_lrn_model(list(shape), 13, 3, alpha=3.0, beta=1.0, bias=1.0), {"x": x})["y"]
        flat = x.reshape(3, 2)
        sums = np.stack([flat[0] ** 2 + flat[1] ** 2, (flat ** 2).sum(0), flat[1] ** 2 + flat[2] ** 2])
        np.testing.assert_allclose(got.reshape(3, 2), flat / (1 + sums), rtol=1e-6)


def test_lrn_even_size_window_by_hand():
    # size 2: window [c - 0, c + 1] (the extra element after c), alpha / 2
    x = np.array([1.0, 2.0, 3.0], np.float32).reshape(1, 3, 1)
    model = _lrn_model([1, 3, 1], 13, 2, alpha=2.0, beta=1.0, bias=1.0)
    got = runtime.run(model, {"x": x})["y"].ravel()
    sums = np.array([1 + 4, 4 + 9, 9], np.float32)
    np.testing.assert_allclose(got, x.ravel() / (1 + sums), rtol=1e-6)


def _dropout_case(opset, with_mask, ratio=None, training=None, is_test=None):
    inputs = ["x"]
    initializers = []
    if ratio is not None or training is not None:
        inputs.append("ratio" if ratio is not None else "")
        if ratio is not None:
            initializers.append(helper.make_tensor("ratio", TensorProto.FLOAT, [], [ratio]))
    if training is not None:
        inputs.append("training")
        initializers.append(helper.make_tensor("training", TensorProto.BOOL, [], [training]))
    attrs = {} if is_test is None else {"is_test": is_test}
    outputs = ["y", "mask"] if with_mask else ["y"]
    node = helper.make_node("Dropout", inputs, outputs, **attrs)
    mask_type = TensorProto.BOOL if opset >= 10 else TensorProto.FLOAT
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])]
    if with_mask:
        outs.append(helper.make_tensor_value_info("mask", mask_type, [2, 3]))
    return _model(node, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])], outs, opset, initializers)


@pytest.mark.parametrize("opset, training", [(7, None), (10, None), (12, None), (13, None), (22, None),
                                             (12, False), (13, False), (22, False)])  # an input from opset 12
@pytest.mark.parametrize("with_mask", [False, True])
def test_dropout_inference_matches_onnxruntime(opset, with_mask, training):
    model = _dropout_case(opset, with_mask, ratio=0.3 if training is not None else None, training=training)
    x = np.random.default_rng(opset).standard_normal((2, 3)).astype(np.float32)
    want = onnxruntime_run(model, {"x": x})
    got = runtime.run(model, {"x": x})
    assert list(got) == list(want)
    if with_mask and opset < 12:
        # Before opset 12 the spec leaves an inference mask unspecified (1 and 6: "not filled"); poolir reads
        # it by opset 12's wording (mask = the elements kept: all of them), as onnx.reference does; onnxruntime
        # 1.31 fills it with zeros (false) for opsets 7..11.
        assert not want["mask"].any()
        assert got["mask"].dtype == want["mask"].dtype and got["mask"].all()
        del want["mask"]
    for name in want:
        assert got[name].dtype == want[name].dtype, name
        np.testing.assert_array_equal(got[name], want[name])


def test_dropout_6_is_test_and_mask_of_type_t():
    model = _dropout_case(6, True, is_test=1)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = runtime.run(model, {"x": x})
    np.testing.assert_array_equal(got["y"], x)
    assert got["mask"].dtype == np.float32 and np.all(got["mask"] == 1)


@pytest.mark.parametrize("model, match", [
    (lambda: _dropout_case(6, False), "is_test=0"),
    (lambda: _dropout_case(12, False, ratio=0.5, training=True), "training_mode is true"),
])
def test_dropout_training_is_refused(model, match):
    with pytest.raises(PoolirError, match=match):
        runtime.run(model(), {"x": np.ones((2, 3), np.float32)})


def test_dropout_training_with_ratio_0_is_identity():
    model = _dropout_case(13, True, ratio=0.0, training=True)
    x = np.ones((2, 3), np.float32)
    got = runtime.run(model, {"x": x})
    np.testing.assert_array_equal(got["y"], x)
    assert got["mask"].dtype == bool and got["mask"].all()
