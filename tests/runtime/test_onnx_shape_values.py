"""The ONNX runtime keeps the values computed from the input shapes only (runtime/onnx_shape_values.py) per
shape signature: a Session run on changing input shapes must still compute what onnxruntime computes for each.
The graphs are the patterns PyTorch's exporters write for dynamic axes: a channel shuffle whose reshape targets
come from Shape -> Gather -> Unsqueeze -> Concat (TorchScript), a flatten from Shape -> Slice -> Concat (dynamo),
and a ConstantOfShape of the whole input, which is shape-derived but too large to keep."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from poolir import runtime
from tests.peers import onnxruntime_run


def i64(name: str, values) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, dtype=np.int64), name)


def shape_driven_model() -> onnx.ModelProto:
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        # channel shuffle (groups 2): [N, 2, C/2, H, W] -> transpose -> [N, C, H, W], targets from the shape
        *[helper.make_node("Gather", ["shape", f"index{axis}"], [f"dim{axis}"], axis=0) for axis in range(4)],
        *[helper.make_node("Unsqueeze", [f"dim{axis}", "zero_axis"], [f"dim{axis}_1d"]) for axis in range(4)],
        helper.make_node("Div", ["dim1_1d", "two"], ["half"]),
        helper.make_node("Concat", ["dim0_1d", "two", "half", "dim2_1d", "dim3_1d"], ["grouped_shape"], axis=0),
        helper.make_node("Reshape", ["x", "grouped_shape"], ["grouped"]),
        helper.make_node("Transpose", ["grouped"], ["swapped"], perm=[0, 2, 1, 3, 4]),
        helper.make_node("Reshape", ["swapped", "shape"], ["shuffled"]),
        # flatten from dim 1, dynamo style: Slice of the shape, Concat with -1
        helper.make_node("Slice", ["shape", "zero_axis", "one"], ["batch"]),
        helper.make_node("Concat", ["batch", "minus_one"], ["flat_shape"], axis=0),
        helper.make_node("Reshape", ["shuffled", "flat_shape"], ["flat"]),
        # shape-derived, and as large as the input
        helper.make_node("ConstantOfShape", ["shape"], ["ones"], value=numpy_helper.from_array(np.ones(1, np.float32))),
        helper.make_node("Add", ["shuffled", "ones"], ["raised"]),
        helper.make_node("ReduceProd", ["shape"], ["count"], keepdims=0),
    ]
    initializers = [*[i64(f"index{axis}", axis) for axis in range(4)], i64("zero_axis", [0]), i64("one", [1]),
                    i64("two", [2]), i64("minus_one", [-1])]
    graph = helper.make_graph(
        nodes, "shape_driven", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", "c", "h", "w"])],
        [helper.make_tensor_value_info(name, elem, None) for name, elem in
         [("flat", TensorProto.FLOAT), ("raised", TensorProto.FLOAT), ("count", TensorProto.INT64),
          ("grouped_shape", TensorProto.INT64)]],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


# repeated shapes take the kept values; (1, 8, 32, 20) has a ConstantOfShape too large to keep
SHAPES = [(1, 4, 5, 6), (2, 6, 3, 3), (1, 4, 5, 6), (3, 2, 7, 1), (1, 8, 32, 20), (2, 6, 3, 3), (1, 8, 32, 20),
          (1, 8, 2, 5)]


def test_changing_input_shapes_between_runs_gives_onnxruntime_results():
    model = shape_driven_model()
    session = runtime.Session(model)
    rng = np.random.default_rng(0)
    for shape in SHAPES:
        feed = {"x": rng.standard_normal(shape).astype(np.float32)}
        want = onnxruntime_run(model, feed)
        got = session.run(feed)
        assert sorted(got) == sorted(want)
        for name in want:
            assert got[name].shape == want[name].shape, (name, shape)
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{name} for {shape}")
    kept = session._program._shape_values  # the runs above did use it (white box: else the test proves nothing)
    assert kept.lookup(kept.signature({"x": np.empty(SHAPES[0])})) is not None
    assert kept.lookup(kept.signature({"x": np.empty((1, 8, 32, 20))})) is None


@pytest.mark.parametrize("repeat", [1, 3])
def test_an_observed_run_still_reports_every_tensor(repeat):
    """`observe` (poolir verify's stream of intermediates) is told every tensor, also on a shape run before."""
    model = shape_driven_model()
    session = runtime.Session(model)
    feed = {"x": np.ones((1, 4, 5, 6), np.float32)}
    for _ in range(repeat):
        session.run(feed)
    seen: dict[str, np.ndarray] = {}
    session.run(feed, observe=lambda name, value: seen.setdefault(name, value))
    assert {"shape", "dim0", "grouped_shape", "flat_shape", "half", "count"} <= set(seen)
    np.testing.assert_array_equal(seen["grouped_shape"], [1, 2, 2, 5, 6])


def test_a_shape_read_from_values_is_computed_on_every_run():
    """Shape of a tensor reshaped to a target fed as data: equal input shapes, different shapes inside."""
    nodes = [helper.make_node("Reshape", ["x", "target"], ["reshaped"]),
             helper.make_node("Shape", ["reshaped"], ["inner_shape"]),
             helper.make_node("Slice", ["inner_shape", "one", "two"], ["columns"]),
             helper.make_node("Slice", ["x", "zero_axis", "columns", "zero_axis"], ["head"])]
    graph = helper.make_graph(
        nodes, "value_shaped", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [12]),
                                helper.make_tensor_value_info("target", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("inner_shape", TensorProto.INT64, None),
         helper.make_tensor_value_info("head", TensorProto.FLOAT, None)],
        [i64("zero_axis", [0]), i64("one", [1]), i64("two", [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    session = runtime.Session(model)
    x = np.arange(12, dtype=np.float32)
    for target in ([3, 4], [6, 2], [3, 4], [2, 6]):
        feed = {"x": x, "target": np.array(target, np.int64)}
        want = onnxruntime_run(model, feed)
        got = session.run(feed)
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{name} for target {target}")
