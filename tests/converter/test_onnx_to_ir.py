"""ONNX -> IR: the IR, executed by OpenVINO itself (and by poolir's runtime), means what the ONNX model means.

Expected values: the spec-only oracle in test_onnx_to_ir_oracle.py (itself pinned by the seed examples and
hand-worked cases, and checked here against onnxruntime wherever onnxruntime is not known to be wrong),
and the onnx package's own backend test outputs.
"""

from __future__ import annotations

import importlib
import os

import numpy as np
import onnx
import pytest
from onnx import helper

from poolir import ir
from poolir import runtime
from poolir import converter
from poolir.converter import onnx_to_ir
from poolir.ir.errors import ConversionError, InvalidModelError, UnsupportedError, UsageError
from tests.converter.test_onnx_to_ir_oracle import PoolCase, assert_outputs_match, pool_case_grid
from tests.peers import onnxruntime_run, openvino_run_onnx, openvino_run_xml

GRID = pool_case_grid(200)


def run_in_openvino(model: ir.Model, feeds: dict, tmp_path) -> dict:
    path = tmp_path / "model.xml"
    ir.write_model(model, path)
    return openvino_run_xml(path, feeds)


def pool_layers(model: ir.Model) -> list[tuple[str, str]]:
    return [(layer.type, layer.version) for layer in model.layers if layer.type not in ("Parameter", "Const", "Result")]


# --- the grid ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", GRID, ids=lambda c: c.id)
def test_grid_ir_in_openvino_equals_onnx(case: PoolCase, tmp_path):
    x = case.feed()
    expected = case.expected(x)
    model = onnx_to_ir(case.model())
    assert_outputs_match(run_in_openvino(model, {"x": x}, tmp_path), expected, case.dtype, "OpenVINO on poolir's IR")
    if "N" in case.shape:  # the batch stays dynamic, and another batch runs too
        assert not model.parameters[0].attrs["shape"][0].is_static
        x3 = case.feed(batch=3)
        assert_outputs_match(run_in_openvino(model, {"x": x3}, tmp_path), case.expected(x3), case.dtype,
                             "OpenVINO, batch 3")


@pytest.mark.parametrize("case", GRID, ids=lambda c: c.id)
def test_grid_oracle_agrees_with_onnxruntime(case: PoolCase):
    """The oracle is right where onnxruntime is: every disagreement is a known onnxruntime bug."""
    x = case.feed()
    try:
        got = onnxruntime_run(case.model(), {"x": x})
    except Exception as error:  # onnxruntime lacks some kernels (LpPool float64, MaxPool-22 ...)
        pytest.skip(f"onnxruntime cannot run this case: {str(error).splitlines()[0][:120]}")
    known = case.onnxruntime_known_wrong()
    try:
        assert_outputs_match(got, case.expected(x), case.dtype, "onnxruntime vs oracle")
    except AssertionError:
        if known is None:
            raise
        return
    # A case marked known-wrong may still come out right (the bug needs particular sizes); nothing to check.


@pytest.mark.parametrize("case", GRID[::3], ids=lambda c: c.id)
def test_grid_ir_in_poolir_runtime_equals_onnx(case: PoolCase):
    x = case.feed()
    model = onnx_to_ir(case.model())
    assert_outputs_match(runtime.run(model, {"x": x}), case.expected(x), case.dtype, "poolir runtime on the IR")


# --- the onnx package's backend test cases -----------------------------------------------------------

def _backend_cases() -> dict:
    import onnx.backend.test.case.node as node_cases

    for module in ("averagepool", "maxpool", "lppool", "globalaveragepool", "globalmaxpool"):
        importlib.import_module(f"onnx.backend.test.case.node.{module}")
    pools = ("AveragePool", "MaxPool", "LpPool", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
    return {case.name: case for case in node_cases._NodeTestCases if case.model.graph.node[0].op_type in pools}


BACKEND_CASES = _backend_cases()


def _backend_feeds_and_expected(case) -> tuple[dict, dict]:
    inputs, outputs = case.data_sets[0]
    graph = case.model.graph
    return ({v.name: a for v, a in zip(graph.input, inputs)}, {v.name: a for v, a in zip(graph.output, outputs)})


def _matches(got: dict, expected: dict, rtol=1e-3, atol=1e-5) -> bool:
    return all(name in got and got[name].shape == want.shape and
               np.allclose(got[name].astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
               for name, want in expected.items())


def test_every_backend_pooling_case_is_collected():
    assert len(BACKEND_CASES) >= 51


@pytest.mark.parametrize("name", sorted(BACKEND_CASES))
def test_backend_case_ir_in_openvino(name, tmp_path):
    case = BACKEND_CASES[name]
    feeds, expected = _backend_feeds_and_expected(case)
    got = run_in_openvino(onnx_to_ir(case.model), feeds, tmp_path)
    assert _matches(got, expected, case.rtol, max(case.atol, 1e-5)), name


# --- the cases OpenVINO's own ONNX frontend gets wrong (hand-worked values) -------------------------------

def _single(op: str, attrs: dict, shape, opset: int = 22, outputs=("y",)) -> onnx.ModelProto:
    node = helper.make_node(op, ["x"], list(outputs), name="pool", **attrs)
    infos = [helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT if o == "y" else onnx.TensorProto.INT64,
                                           [None] * len(shape)) for o in outputs]
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, list(shape))],
                              infos)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def test_maxpool_ceil_last_window_in_right_padding(tmp_path):
    # L=4 (1..4), k=2, s=2, pads (0,1), ceil: windows at 0, 2; the third would start at 4 = L + pb (padding).
    model = onnx_to_ir(_single("MaxPool", {"kernel_shape": [2], "strides": [2], "pads": [0, 1], "ceil_mode": 1},
                               [1, 1, 4]))
    got = run_in_openvino(model, {"x": np.arange(1, 5, dtype=np.float32).reshape(1, 1, 4)}, tmp_path)
    np.testing.assert_array_equal(got["y"].ravel(), [2, 4])
    assert pool_layers(model) == [("MaxPool", "opset1")]  # floor with fitted pads: still MaxPool-1


def test_maxpool_ceil_drop_with_dynamic_length_uses_ceil_torch(tmp_path):
    model = onnx_to_ir(_single("MaxPool", {"kernel_shape": [2], "strides": [2], "pads": [0, 1], "ceil_mode": 1},
                               [1, 1, "L"]))
    assert pool_layers(model) == [("MaxPool", "opset14")]
    assert model.layers[1].attrs["rounding_type"] == "ceil_torch"
    for length, expected in ((4, [2, 4]), (5, [2, 4, 5])):
        got = run_in_openvino(model, {"x": np.arange(1, length + 1, dtype=np.float32).reshape(1, 1, length)}, tmp_path)
        np.testing.assert_array_equal(got["y"].ravel(), expected)


def test_averagepool_include_pad_ceil_overhang_divides_by_padded_taps(tmp_path):
    # L=6 (1..6), k=3, s=2, pads (1,1), ceil: last window taps 5,6,7 -> inside [-1, 7): {5, 6} -> 6 / 2 = 3.
    model = onnx_to_ir(_single("AveragePool", {"kernel_shape": [3], "strides": [2], "pads": [1, 1], "ceil_mode": 1,
                                               "count_include_pad": 1}, [1, 1, 6]))
    got = run_in_openvino(model, {"x": np.arange(1, 7, dtype=np.float32).reshape(1, 1, 6)}, tmp_path)
    np.testing.assert_allclose(got["y"].ravel(), [1.0, 3.0, 5.0, 3.0])
    assert [t for t, _ in pool_layers(model)] == ["Pad", "AvgPool"]


def test_lppool_ceil_overhang_sums_real_elements(tmp_path):
    # L=5, k=2, s=2, no pads, ceil, p=2: last window is x[4] alone -> |x4|.
    model = onnx_to_ir(_single("LpPool", {"kernel_shape": [2], "strides": [2], "ceil_mode": 1, "p": 2}, [1, 1, 5]))
    x = np.array([3, 4, 6, 8, -5], dtype=np.float32).reshape(1, 1, 5)
    np.testing.assert_allclose(run_in_openvino(model, {"x": x}, tmp_path)["y"].ravel(), [5.0, 10.0, 5.0], rtol=1e-6)


def test_maxpool_storage_order_1_recomputes_indices(tmp_path):
    # Seed 004 "maxpool_with_argmax_2d_precomputed_strides": column-major indices [[6, 16], [8, 18]].
    model = onnx_to_ir(_single("MaxPool", {"kernel_shape": [2, 2], "strides": [2, 2], "storage_order": 1},
                               [1, 1, 5, 5], outputs=("y", "indices")))
    got = run_in_openvino(model, {"x": np.arange(1, 26, dtype=np.float32).reshape(1, 1, 5, 5)}, tmp_path)
    np.testing.assert_array_equal(got["y"][0, 0], [[7, 9], [17, 19]])
    np.testing.assert_array_equal(got["indices"][0, 0], [[6, 16], [8, 18]])


def test_kernel_larger_than_input_with_ceil(tmp_path):
    # L=3, k=4, s=2, pads (0,0), ceil: ONNX has one window (taps 0..3, one past the input); OpenVINO refuses a
    # kernel larger than the padded input, so the IR pads the end (inert for max and exclude-pad average).
    for op, expected in (("MaxPool", [3.0]), ("AveragePool", [2.0])):
        model = onnx_to_ir(_single(op, {"kernel_shape": [4], "strides": [2], "ceil_mode": 1}, [1, 1, 3]))
        got = run_in_openvino(model, {"x": np.array([1, 2, 3], dtype=np.float32).reshape(1, 1, 3)}, tmp_path)
        np.testing.assert_allclose(got["y"].ravel(), expected)


# --- which layers: the plainest that is exact --------------------------------------------------------

@pytest.mark.parametrize("op, attrs, shape, layers", [
    ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, [1, 1, 8, 8], [("MaxPool", "opset1")]),
    ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}, [1, 1, 8, 8], [("MaxPool", "opset1")]),
    ("MaxPool", {"kernel_shape": [2, 2], "dilations": [2, 2]}, [1, 1, 8, 8], [("MaxPool", "opset8")]),
    ("AveragePool", {"kernel_shape": [3], "pads": [1, 1], "count_include_pad": 1}, [1, 1, 8], [("AvgPool", "opset1")]),
    ("AveragePool", {"kernel_shape": [2], "dilations": [2]}, [1, 1, 8], [("AvgPool", "opset16")]),
    ("AveragePool", {"kernel_shape": [2], "strides": [2], "pads": [0, 1], "ceil_mode": 1}, ["N", 1, "L"],
     [("AvgPool", "opset14")]),
    ("GlobalAveragePool", {}, [1, 3, 4, 4], [("ReduceMean", "opset1")]),
    ("GlobalMaxPool", {}, [1, 3, 4, 4], [("ReduceMax", "opset1")]),
    ("GlobalLpPool", {"p": 2}, [1, 3, 4, 4], [("ReduceL2", "opset4")]),
])
def test_plainest_layers(op, attrs, shape, layers):
    assert pool_layers(onnx_to_ir(_single(op, attrs, shape))) == layers


# --- graphs, names, shapes, refusals ------------------------------------------------------------------

def test_graph_of_several_pools_keeps_names_and_dynamic_batch(tmp_path):
    nodes = [
        helper.make_node("MaxPool", ["image"], ["pooled", "where"], name="max", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Identity", ["pooled"], ["same"]),
        helper.make_node("AveragePool", ["same"], ["smooth"], name="avg", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["smooth"], ["summary"], name="gap"),
    ]
    outputs = [helper.make_tensor_value_info(n, t, [None] * 4) for n, t in
               (("smooth", onnx.TensorProto.FLOAT), ("summary", onnx.TensorProto.FLOAT), ("where", onnx.TensorProto.INT64))]
    graph = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("image", onnx.TensorProto.FLOAT,
                                                                            ["batch", 2, 6, 6])], outputs)
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    model = onnx_to_ir(onnx_model)
    assert [p.name for p in model.parameters] == ["image"]
    x = np.random.default_rng(0).standard_normal((3, 2, 6, 6)).astype(np.float32)
    expected = onnxruntime_run(onnx_model, {"image": x})
    got = run_in_openvino(model, {"image": x}, tmp_path)
    assert sorted(got) == ["smooth", "summary", "where"]
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-5, atol=1e-6)


def test_unsupported_ops_are_listed_in_one_error():
    # Sin: an ONNX op poolir neither runs nor converts (Relu, Erf, then Softplus were the example until they converted)
    nodes = [helper.make_node("Sin", ["x"], ["a"]), helper.make_node("MaxPool", ["a"], ["b"], kernel_shape=[2]),
             helper.make_node("Custom", ["b"], ["y"], domain="example.org")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 1, 4])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("example.org", 1)])
    with pytest.raises(UnsupportedError) as error:
        onnx_to_ir(model)
    assert "Sin (ai.onnx, opset 13)" in str(error.value) and "Custom (example.org, opset 1)" in str(error.value)


def test_include_pad_ceil_with_pads_converts_for_a_dynamic_length_as_for_a_fixed_one(tmp_path):
    # count_include_pad=1, ceil, pads: the last window [6, pad, past] divides by 2 (hand-worked: 1, 3, 5, 3).
    # A dynamic length converts too (Pad, AvgPool, Slice; tests/converter/test_avg_pool_include_pad_ceil_dynamic.py).
    onnx_model = _single("AveragePool", {"kernel_shape": [3], "strides": [2], "pads": [1, 1], "ceil_mode": 1,
                                         "count_include_pad": 1}, [1, 1, "L"])
    x = np.arange(1, 7, dtype=np.float32).reshape(1, 1, 6)
    for model in (onnx_to_ir(onnx_model), onnx_to_ir(onnx_model, input_shapes={"x": (1, 1, 6)})):
        got = run_in_openvino(model, {"x": x}, tmp_path)
        np.testing.assert_allclose(got["y"].ravel(), [1.0, 3.0, 5.0, 3.0])


@pytest.mark.parametrize("shape", [(2, 2, 5, 7), (1, 2, 4, 3, 5)])
def test_storage_order_1_with_dynamic_spatial_dims(shape, tmp_path):
    # The column-major index arithmetic takes the spatial dims from ShapeOf when they are dynamic.
    rank = len(shape) - 2
    attrs = {"kernel_shape": [2] * rank, "storage_order": 1, "pads": [1] * (2 * rank)}
    symbolic = PoolCase("MaxPool", 12, ("N", 2, *(f"d{i}" for i in range(rank))), attrs, indices=True)
    model = onnx_to_ir(symbolic.model())
    assert "ShapeOf" in [layer.type for layer in model.layers]
    for grow in (0, 1):
        case = PoolCase("MaxPool", 12, (*shape[:2], *(d + grow for d in shape[2:])), attrs, indices=True)
        x = case.feed()
        assert_outputs_match(run_in_openvino(model, {"x": x}, tmp_path), case.expected(x), case.dtype, "OpenVINO")


def test_input_shape_errors():
    onnx_model = _single("MaxPool", {"kernel_shape": [2]}, [1, 1, 4])
    with pytest.raises(UsageError, match="no input called"):
        onnx_to_ir(onnx_model, input_shapes={"y": (1, 1, 4)})
    with pytest.raises(UsageError, match="contradicts"):
        onnx_to_ir(onnx_model, input_shapes={"x": (1, 1, 5)})


def test_invalid_attributes_name_the_node():
    with pytest.raises(InvalidModelError, match="node 'pool' \\(MaxPool\\)"):
        onnx_to_ir(_single("MaxPool", {"kernel_shape": [2], "strides": [0]}, [1, 1, 4]))


def test_ir_version_10_writes_and_runs(tmp_path):
    model = onnx_to_ir(_single("MaxPool", {"kernel_shape": [2], "strides": [2]}, [1, 1, 4]), ir_version=10)
    assert model.version == 10
    got = run_in_openvino(model, {"x": np.arange(4, dtype=np.float32).reshape(1, 1, 4)}, tmp_path)
    np.testing.assert_array_equal(list(got.values())[0].ravel(), [1, 3])


# --- for the report: how many of the same cases OpenVINO's own convert_model gets right -----------------

@pytest.mark.skipif(not os.environ.get("POOLIR_FRONTEND_COUNT"),
                    reason="slow (OpenVINO's convert_model takes ~0.4 s per model, ~2 min in all); "
                           "run with POOLIR_FRONTEND_COUNT=1 to print the counts")
def test_openvino_frontend_comparison_counts(tmp_path, capsys):
    """Counts, on the grid and the backend cases, of exact results by poolir's IR and by OpenVINO's frontend.

    poolir must be right on every case; the frontend's count is printed, with the cases it gets wrong.
    """
    poolir_right = frontend_right = total = 0
    frontend_wrong = []
    cases = [(case.id, case.model(), {"x": case.feed()}, None, case) for case in GRID]
    cases += [(name, c.model, *_backend_feeds_and_expected(c), None) for name, c in sorted(BACKEND_CASES.items())]
    for name, model, feeds, expected, case in cases:
        if expected is None:
            expected = case.expected(feeds["x"])
        total += 1
        tolerance = {"rtol": 2e-3, "atol": 2e-3} if case is not None and case.dtype == onnx.TensorProto.FLOAT16 else {}
        poolir_right += _matches(run_in_openvino(onnx_to_ir(model), feeds, tmp_path), expected, **tolerance)
        try:
            frontend = openvino_run_onnx(model, feeds)
            outputs = {o.name: frontend.get(o.name, frontend.get(str(i))) for i, o in enumerate(model.graph.output)}
            good = _matches({k: v for k, v in outputs.items() if v is not None}, expected, **tolerance)
        except Exception:  # the frontend refuses the model
            good = False
        frontend_right += good
        if not good:
            frontend_wrong.append(name)
    with capsys.disabled():
        print(f"\nONNX -> IR on {total} cases: poolir's IR in OpenVINO exact on {poolir_right}; "
              f"OpenVINO's own convert_model exact on {frontend_right}; it gets these wrong:")
        for name in frontend_wrong:
            print(f"  {name}")
    assert poolir_right == total


def test_outputs_that_are_inputs_or_repeat_a_tensor_keep_their_names_and_order(tmp_path):
    nodes = [helper.make_node("Identity", ["x"], ["same"]), helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[2]),
             helper.make_node("Identity", ["p"], ["p2"])]
    outputs = [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, [1, 1, d]) for n, d in (("same", 4), ("p", 3),
                                                                                               ("p2", 3))]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 1, 4])], outputs)
    model = onnx_to_ir(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10))
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 4)
    got = run_in_openvino(model, {"x": x}, tmp_path)
    np.testing.assert_array_equal(got["same"], x)
    np.testing.assert_array_equal(got["p"], got["p2"])
    assert [o.name for o in converter.ir_to_onnx(model).graph.output] == ["same", "p", "p2"]


@pytest.mark.parametrize("case", GRID[1::4], ids=lambda c: c.id)
def test_dynamic_spatial_dims_are_exact_for_the_actual_length_or_refused(case: PoolCase, tmp_path):
    """Every spatial dim symbolic: the IR must be exact for any length (checked at the grid's length and one
    more), or the conversion refuses and names --input-shape."""
    dynamic = PoolCase(case.op, case.opset, (case.shape[0], case.shape[1], *(f"d{i}" for i in range(len(case.shape) - 2))),
                       case.attrs, case.indices, case.dtype)
    try:
        model = onnx_to_ir(dynamic.model())
    except ConversionError as error:
        assert "--input-shape" in str(error)
        return
    for grow in (0, 1):
        shaped = PoolCase(case.op, case.opset, (*case.shape[:2], *(d + grow for d in case.shape[2:])), case.attrs,
                          case.indices, case.dtype)
        x = shaped.feed()
        try:
            expected = shaped.expected(x)
        except ValueError:  # no window fits this length
            continue
        assert_outputs_match(run_in_openvino(model, {"x": x}, tmp_path), expected, case.dtype,
                             f"OpenVINO, dynamic spatial dims, length +{grow}")


def _dynamic_length_max_pool(pads, kernel, dilation):
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[kernel], pads=pads, dilations=[dilation])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N", 1, "L"])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)], ir_version=10)


@pytest.mark.parametrize("pads, kernel, dilation", [
    ([2, 0], 2, 1),   # the first window, taps -2 and -1, is padding for every L
    ([0, 3], 2, 1),   # L=4: windows start at 0..4; the last, taps 4 and 5, is padding
    ([1, 1], 2, 3),   # L=1: taps -1 and 2 skip the one input element
])
def test_dynamic_length_max_pool_that_can_have_a_padding_window_is_refused(pads, kernel, dilation):
    # ONNX gives -inf for such a window and OpenVINO its lowest finite value; with a static length the same
    # check runs on the real windows, with a dynamic one every length that can occur must be safe.
    with pytest.raises(ConversionError, match="dynamic spatial dims.*--input-shape"):
        onnx_to_ir(_dynamic_length_max_pool(pads, kernel, dilation))


def test_dynamic_length_max_pool_without_padding_windows_is_exact_at_every_length(tmp_path):
    # pads (1, 1) with kernel 3: every window holds an input element whatever L is.
    model = _dynamic_length_max_pool([1, 1], 3, 1)
    path = tmp_path / "pool.xml"
    ir.write_model(onnx_to_ir(model), path)
    for length in range(1, 10):
        x = np.random.default_rng(length).standard_normal((2, 1, length)).astype(np.float32)
        np.testing.assert_array_equal(openvino_run_xml(path, {"x": x})["y"], onnxruntime_run(model, {"x": x})["y"])


def _lp_pool(shape):
    # LpPool-22 k=3 s=3 ceil_mode=1 p=3 on the last axis: ONNX accepts a length of 1 (one window, x[0] and two
    # overhang taps), where the kernel is longer than the (unpadded) input.
    node = helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[3], strides=[3], ceil_mode=1, p=3)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)], ir_version=10)


def _dynamic_ceil_pool(op_type, kernel, strides, spatial, **attrs):
    node = helper.make_node(op_type, ["x"], ["y"], kernel_shape=kernel, strides=strides, ceil_mode=1, **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT,
                                                                          ["N", 1, *spatial])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)], ir_version=10)


def test_dynamic_length_that_can_be_shorter_than_the_kernel_is_refused_where_onnx_may_drop_a_window():
    # OpenVINO cannot run a kernel longer than the padded input; with a dynamic length its CPU plugin returned an
    # empty tensor for length 1 and crashed on the next inference. k=2, s=3: ONNX gives L=1 a window, and no
    # floor pads_end both reaches the kernel there and keeps ONNX's dropping of a last window in the padding.
    model = _dynamic_ceil_pool("MaxPool", [2], [3], ["L"])
    with pytest.raises(ConversionError, match="dynamic and ONNX's ceil_mode accepts a length of 1.*--input-shape"):
        onnx_to_ir(model)


@pytest.mark.parametrize("op_type, kernel, strides, spatial, attrs", [
    ("MaxPool", [3], [3], ["L"], {}),
    ("MaxPool", [3, 3], [2, 2], ["H", "W"], {}),  # SqueezeNet's pools with dynamic H and W: L = 2 has a window
    ("MaxPool", [3, 3], [2, 2], [5, "W"], {"pads": [0, 1, 0, 0]}),
    ("AveragePool", [3, 3], [2, 2], ["H", "W"], {}),
    ("AveragePool", [3], [2], ["L"], {"count_include_pad": 1}),
])
def test_dynamic_length_that_can_be_shorter_than_the_kernel_converts_exactly_at_every_length(
        op_type, kernel, strides, spatial, attrs, tmp_path):
    # Floor rounding over pads_end + s - 1 counts ONNX's ceil windows at every length and reaches the kernel
    # wherever ONNX gives a window (it used to be refused: "ONNX's ceil_mode accepts a length of 1 / 2").
    model = _dynamic_ceil_pool(op_type, kernel, strides, spatial, **attrs)
    path = tmp_path / "pool.xml"
    ir.write_model(onnx_to_ir(model), path)
    for length in range(1, 10):
        shape = (2, 1, *(length if isinstance(d, str) else d for d in spatial))
        x = np.random.default_rng(length).standard_normal(shape).astype(np.float32)
        want = onnxruntime_run(model, {"x": x})["y"]
        if want.size == 0:
            continue  # ONNX has no window at this length (k=3, s=2, L=1), nor has the IR
        for got in (openvino_run_xml(path, {"x": x})["y"], runtime.run(ir.read_model(path), {"x": x})["y"]):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=f"length {length}")


@pytest.mark.parametrize("length", [1, 2, 4])
def test_static_length_shorter_than_the_kernel_converts_exactly(length, tmp_path):
    # Hand-worked for x = [1, 2, ...]: the first window holds x[0..2] clipped to the input, p=3.
    model = _lp_pool([1, 1, length])
    path = tmp_path / "lp.xml"
    ir.write_model(onnx_to_ir(model), path)
    x = np.arange(1, length + 1, dtype=np.float32).reshape(1, 1, length)
    expected = np.array([np.sum(x[0, 0, i:i + 3] ** 3) ** (1 / 3) for i in range(0, length, 3)], np.float32)
    np.testing.assert_allclose(openvino_run_xml(path, {"x": x})["y"].ravel(), expected, rtol=1e-5)
