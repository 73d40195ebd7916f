"""Range: ONNX Range-11/27 against the onnx package's backend cases and onnxruntime, IR Range-1/4 against OpenVINO's
CPU plugin (bounds computed at run time) and its constant folding (constant bounds), both conversions, and where the
worlds differ (the element count's precision, start + i * delta or a running sum, the CPU plugin's departures from
its spec). Expected values come from the engines or from the formula written in each test's docstring."""

from __future__ import annotations

import tracemalloc

import numpy as np
import onnx
import openvino as ov
import openvino.opset1 as ov1
import pytest
from onnx import helper
from openvino.utils.node_factory import NodeFactory

from poolir import ir, runtime
from poolir.converter import ir_to_onnx, onnx_to_ir
from poolir.ir.errors import ConversionError, PoolirError
from tests.backend_cases import accepting_versions, at_opset, feeds_of, node_cases
from tests.peers import onnxruntime_run, openvino_run_xml
from tests.runtime.ir_cases import OV_TYPES, assert_matches_openvino, save_ir

BACKEND_CASES = node_cases(("rangeop",), ("Range",))


def _range_model(dtype, opset=11, shape=()):
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = helper.make_graph([helper.make_node("Range", ["start", "limit", "delta"], ["y"])], "g",
                              [helper.make_tensor_value_info(n, elem, shape) for n in ("start", "limit", "delta")],
                              [helper.make_tensor_value_info("y", elem, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def _feeds(dtype, start, limit, delta):
    return {name: np.array(value, dtype) for name, value in zip(("start", "limit", "delta"), (start, limit, delta))}


@pytest.mark.parametrize("name", sorted(BACKEND_CASES))
def test_onnx_backend_case_at_every_opset_that_accepts_it(name):
    case = BACKEND_CASES[name]
    want = case.data_sets[0][1][0]
    versions = accepting_versions(case)
    assert versions
    for version in versions:
        got = runtime.run(at_opset(case, version.since), feeds_of(case))["output"]
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


INTEGER_GRID = [(dtype, start, limit, delta) for dtype in (np.int16, np.int32, np.int64)
                for start, limit, delta in ((0, 10, 3), (10, -7, -3), (5, 0, 1), (-4, 9, 2), (3, 3, 1), (0, 1, 7),
                                            (-30000, 30000, 9999), (7, -8, -1))]


@pytest.mark.parametrize("case", INTEGER_GRID, ids=str)
def test_integer_ranges_match_onnxruntime(case):
    dtype, *bounds = case
    model, feeds = _range_model(dtype), _feeds(dtype, *bounds)
    want = onnxruntime_run(model, feeds)["y"]
    got = runtime.run(model, feeds)["y"]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bounds", [(0.5, 3.7, 0.25), (-2, 2, 0.5), (10, -6, -2.5), (1, 1, 0.5), (0, 1e3, 0.125)])
def test_float_ranges_with_exact_steps_match_onnxruntime(dtype, bounds):
    """Steps that are powers of two: the running sum and start + i * delta are the same numbers."""
    model, feeds = _range_model(dtype), _feeds(dtype, *bounds)
    np.testing.assert_array_equal(runtime.run(model, feeds)["y"], onnxruntime_run(model, feeds)["y"])


def test_float_values_follow_the_spec_formula_where_onnxruntime_keeps_a_running_sum():
    """float32 0, 1, 0.1: the spec's output[i] = start + i * delta gives element 7 = float32(7) * float32(0.1) =
    0.69999999; onnxruntime 1.31 adds 0.1 seven times (0.70000005)."""
    model, feeds = _range_model(np.float32), _feeds(np.float32, 0, 1, 0.1)
    got = runtime.run(model, feeds)["y"]
    spec = np.float32(0) + np.arange(10, dtype=np.float32) * np.float32(0.1)
    np.testing.assert_array_equal(got, spec)
    theirs = onnxruntime_run(model, feeds)["y"]
    np.testing.assert_array_equal(theirs, np.add.accumulate(np.full(10, np.float32(0.1)) * (np.arange(10) > 0),
                                                            dtype=np.float32))
    assert got[7] == np.float32(0.7) and theirs[7] == np.nextafter(np.float32(0.7), np.float32(1))


def test_the_float_count_is_computed_in_float64_as_onnxruntime_does():
    """float32 start 0.034, limit 39.034, delta 3: the float32 difference is exactly 39.0 (13 elements), the float64
    difference 39.0000019 (ceil(13.0000006) = 14); onnxruntime counts 14."""
    model, feeds = _range_model(np.float32), _feeds(np.float32, 0.034, 39.034, 3)
    assert np.float32(39.034) - np.float32(0.034) == 39.0
    assert len(onnxruntime_run(model, feeds)["y"]) == 14
    assert len(runtime.run(model, feeds)["y"]) == 14


def test_a_one_element_bound_is_accepted_as_onnxruntime_does():
    model, feeds = _range_model(np.int64, shape=(1,)), {k: v.reshape(1) for k, v in _feeds(np.int64, 2, 9, 3).items()}
    np.testing.assert_array_equal(runtime.run(model, feeds)["y"], onnxruntime_run(model, feeds)["y"])


@pytest.mark.parametrize("dtype,bounds,match", [
    (np.int32, (-2**31, 2**31 - 1, 2**30), "overflows int32"),     # onnxruntime's int32 difference wraps to -1
    (np.int64, (0, 5, 0), "step is 0"),
    (np.float32, (0, 5, 0), "non-zero"),
    (np.float32, (0, np.inf, 1), "finite"),
    (np.float64, (-1.7e308, 1.7e308, 1e308), "overflows"),
])
def test_bad_bounds_are_refused_naming_the_node(dtype, bounds, match):
    model = _range_model(dtype)
    model.graph.node[0].name = "steps"
    with pytest.raises(PoolirError, match=f"node 'steps'.*{match}"):
        runtime.run(model, _feeds(dtype, *bounds))


def test_a_huge_range_is_refused_before_allocating():
    with pytest.raises(PoolirError, match="budget|elements|memory"):
        runtime.run(_range_model(np.int64), _feeds(np.int64, 0, 2**62, 1))


def test_stash_type_27_computes_float16_in_float32():
    """float16 0, 1, 0.1 at opset 27 (stash_type 1): start + i * delta in float32 of float16(0.1) = 0.0999755859,
    then rounded to float16; stash_type 11 (float64) gives the same here; another stash_type is refused."""
    model, feeds = _range_model(np.float16, 27), _feeds(np.float16, 0, 1, 0.1)
    want = (np.arange(11, dtype=np.float32) * np.float32(np.float16(0.1))).astype(np.float16)
    np.testing.assert_array_equal(runtime.run(model, feeds)["y"], want)
    model.graph.node[0].attribute.append(helper.make_attribute("stash_type", 7))
    with pytest.raises(PoolirError, match="stash_type"):
        runtime.run(model, feeds)


# ---------------------------------------------------------------------------------------------------------------
# IR Range-1 and Range-4 against OpenVINO


def _range_ir(path, version, input_type, output_type=None, constants=None):
    """IR with one Range, its bounds Parameters "start", "stop", "step" (computed at run time) or Consts (folded: the
    model has no input)."""
    if constants is None:
        params = [ov1.parameter([], OV_TYPES[np.dtype(input_type)], name=n) for n in ("start", "stop", "step")]
        bounds = params
    else:
        params, bounds = [], [ov1.constant(np.asarray(v, input_type)) for v in constants]
    if version == 1:
        node = ov1.range(*bounds)
    else:
        node = NodeFactory("opset4").create("Range", bounds, {"output_type": output_type})
    return save_ir([node.output(0)], params, path)


def _only(outputs: dict) -> np.ndarray:
    (value,) = outputs.values()
    return value


IR_GRID = [
    (4, np.int64, "i64", (0, 10, 3)), (4, np.int64, "i64", (10, -7, -3)), (4, np.int32, "i32", (-4, 9, 2)),
    (4, np.int64, "i32", (2, 30, 5)), (1, np.int32, None, (7, -8, -1)), (1, np.int64, None, (0, 100, 7)),
    (4, np.float32, "f32", (0, 1, 0.1)), (4, np.float32, "f32", (-2, 2, 0.3)), (4, np.float32, "f32", (0, 50, 0.7)),
    (4, np.float32, "f16", (0, 1, 0.1)), (4, np.float32, "f16", (-3, 40, 0.45)), (4, np.int64, "f32", (2, 9, 2)),
    (4, np.float32, "i64", (0.5, 9.5, 1.5)), (1, np.float32, None, (0, 3, 0.1)),
    (4, np.float32, "f32", (0.034, 39.034, 3)),
    (4, np.float16, "f32", (0, 50, 0.7)), (1, np.float16, None, (-1, 30, 0.3)), (4, np.float32, "f64", (0, 5, 0.1)),
]


@pytest.mark.parametrize("case", IR_GRID, ids=str)
@pytest.mark.parametrize("folded", [False, True], ids=["computed", "folded"])
def test_ir_range_matches_openvino(case, folded, tmp_path):
    """Computed bounds: the CPU plugin's float32 running sum and float32 count (0.034, 39.034, 3: 13 elements);
    constant bounds: OpenVINO's folding, start + i * step in float32 with a float64 count (14 elements); an f16 or
    f64 output rounds the float32 values. Exact either way."""
    version, input_type, output_type, bounds = case
    if output_type == "i64" and input_type == np.float32 and not folded:
        pytest.skip("the CPU plugin rounds instead of truncating: test_cpu_plugin_departures_from_the_spec")
    if input_type in (np.float16, np.float64) and not folded:
        pytest.skip("f16 and f64 Parameters: OpenVINO converts them at the boundary (f64 Range crashes its CPU plugin)")
    xml = _range_ir(tmp_path / "model.xml", version, input_type, output_type, bounds if folded else None)
    feeds = {} if folded else {n: np.asarray(v, input_type) for n, v in zip(("start", "stop", "step"), bounds)}
    assert_matches_openvino(xml, feeds, rtol=0, atol=0)


def test_cpu_plugin_departures_from_the_spec(tmp_path):
    """Range-4's spec counts max(ceil((stop - start) / step), 0) after casting the bounds to output_type toward
    zero. For bounds computed at run time OpenVINO 2026.4's CPU plugin counts |stop - start| / |step| whatever the
    signs (5, 0, 1 gives [5, 6, 7, 8, 9]) and sums float bounds of an i64 output in float32, rounding each value
    (2.7, 9.2, 1.9 gives [3, 5, 6, 8]); its own folding follows the spec, and so does poolir."""
    xml = _range_ir(tmp_path / "i64.xml", 4, np.int64, "i64")
    feeds = {"start": np.array(5), "stop": np.array(0), "step": np.array(1)}
    np.testing.assert_array_equal(_only(openvino_run_xml(xml, feeds)), [5, 6, 7, 8, 9])
    assert _only(runtime.Session(ir.read_model(xml)).run(feeds)).size == 0
    xml = _range_ir(tmp_path / "f32.xml", 4, np.float32, "i64")
    feeds = {n: np.array(v, np.float32) for n, v in zip(("start", "stop", "step"), (2.7, 9.2, 1.9))}
    np.testing.assert_array_equal(_only(openvino_run_xml(xml, feeds)), [3, 5, 6, 8])
    np.testing.assert_array_equal(_only(runtime.Session(ir.read_model(xml)).run(feeds)), np.arange(2, 9))
    folded = _range_ir(tmp_path / "folded.xml", 4, np.float32, "i64", (2.7, 9.2, 1.9))
    assert _only(openvino_run_xml(folded, {})).tolist() == list(range(2, 9))


def test_a_step_truncated_to_zero_is_refused(tmp_path):
    xml = _range_ir(tmp_path / "model.xml", 4, np.float32, "i32")
    feeds = {n: np.array(v, np.float32) for n, v in zip(("start", "stop", "step"), (0, 1, 0.1))}
    with pytest.raises(PoolirError, match="Range.*step is 0"):
        runtime.Session(ir.read_model(xml)).run(feeds)


# ---------------------------------------------------------------------------------------------------------------
# Conversions


@pytest.mark.parametrize("dtype,bounds", [(np.int64, (0, 10, 3)), (np.int32, (10, -7, -3)), (np.int64, (5, 0, 1)),
                                          (np.int32, (-5, 0, -2)), (np.int64, (-5, 0, 2))])
def test_integer_onnx_range_converts_to_a_range_openvino_runs_alike(dtype, bounds, tmp_path):
    """A range running away from its limit (5, 0, 1) is empty: the converter clamps the limit so that OpenVINO's CPU
    plugin, which ignores the signs, counts 0 too."""
    model, feeds = _range_model(dtype, 17), _feeds(dtype, *bounds)
    converted = onnx_to_ir(model)
    assert [layer.version for layer in converted.layers if layer.type == "Range"] == ["opset4"]
    ir.write_model(converted, tmp_path / "model.xml")
    got = openvino_run_xml(tmp_path / "model.xml", feeds, ["y"])["y"]
    np.testing.assert_array_equal(got, onnxruntime_run(model, feeds)["y"])


@pytest.mark.parametrize("delta", [2, -2])
@pytest.mark.parametrize("start,limit", [(0, 9), (9, 0), (-3, -3)])
def test_integer_onnx_range_with_a_constant_delta_clamps_its_limit_once(delta, start, limit, tmp_path):
    """A constant delta: the limit is clamped by one Maximum (rising) or Minimum (falling) layer."""
    model = _range_model(np.int64, 17)
    model.graph.input.pop(2)
    model.graph.initializer.append(onnx.numpy_helper.from_array(np.array(delta, np.int64), "delta"))
    feeds = {k: v for k, v in _feeds(np.int64, start, limit, delta).items() if k != "delta"}
    converted = onnx_to_ir(model)
    assert {"Maximum" if delta > 0 else "Minimum", "Range"} <= {layer.type for layer in converted.layers}
    assert "Select" not in {layer.type for layer in converted.layers}
    ir.write_model(converted, tmp_path / "model.xml")
    got = openvino_run_xml(tmp_path / "model.xml", feeds, ["y"])["y"]
    np.testing.assert_array_equal(got, onnxruntime_run(model, feeds)["y"])


def test_float_onnx_range_converts_as_a_const_or_is_refused():
    """Constant bounds: a Const with the ONNX values (start + i * delta); computed bounds: refused, OpenVINO would
    sum step by step."""
    model = _range_model(np.float32, 17)
    with pytest.raises(ConversionError, match="step by step"):
        onnx_to_ir(model)
    bounds = _feeds(np.float32, 0, 1, 0.1)
    model.graph.input.pop(0)
    model.graph.initializer.append(onnx.numpy_helper.from_array(bounds["start"], "start"))
    model.graph.input.pop(0)
    model.graph.initializer.append(onnx.numpy_helper.from_array(bounds["limit"], "limit"))
    model.graph.input.pop(0)
    model.graph.initializer.append(onnx.numpy_helper.from_array(bounds["delta"], "delta"))
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])
    model.graph.input.append(x)
    model.graph.node.append(helper.make_node("Relu", ["x"], ["z"]))
    model.graph.output.append(helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, None))
    converted = onnx_to_ir(model)
    assert "Range" not in {layer.type for layer in converted.layers}
    got = runtime.Session(converted).run({"x": np.zeros(1, np.float32)})["y"]
    np.testing.assert_array_equal(got, np.arange(10, dtype=np.float32) * np.float32(0.1))


@pytest.mark.parametrize("version,input_type,output_type,bounds", [
    (4, np.int64, "i64", (-4, 9, 2)), (4, np.float32, "i64", (0.5, 9.5, 1.5)), (4, np.int64, "i32", (20, 2, -5)),
    (1, np.int32, None, (7, -8, -1)), (4, np.int32, "u8", (3, 250, 11)), (4, np.float32, "i8", (-9.9, 9.9, 2.5)),
])
def test_integer_ir_range_converts_to_onnx(version, input_type, output_type, bounds, tmp_path):
    """ONNX Cast truncates float bounds as Range-4 does; u8 and i8 ranges run in int32. The oracle is OpenVINO's
    folding of the same bounds (its CPU plugin rounds float bounds)."""
    xml = _range_ir(tmp_path / "model.xml", version, input_type, output_type)
    back = ir_to_onnx(ir.read_model(xml), opset=13)
    onnx.checker.check_model(back, full_check=True)
    feeds = {n: np.asarray(v, input_type) for n, v in zip(("start", "stop", "step"), bounds)}
    got = _only(onnxruntime_run(back, feeds))
    want = _only(openvino_run_xml(_range_ir(tmp_path / "folded.xml", version, input_type, output_type, bounds), {}))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_float_ir_range_converts_when_folded_and_is_refused_when_computed(tmp_path):
    computed = _range_ir(tmp_path / "computed.xml", 4, np.float32, "f32")
    with pytest.raises(ConversionError, match="step after step"):
        ir_to_onnx(ir.read_model(computed))
    folded = _range_ir(tmp_path / "folded.xml", 4, np.float32, "f16", (0, 1, 0.1))
    back = ir_to_onnx(ir.read_model(folded))
    assert "Range" not in {node.op_type for node in back.graph.node}
    want = _only(openvino_run_xml(folded, {}))
    assert want.dtype == np.float16 and len(want) == 10
    np.testing.assert_array_equal(_only(onnxruntime_run(back, {})), want)


def test_a_range_bounded_by_data_is_recomputed_on_every_run():
    """The Shape of a Range whose limit comes from data values is not a function of the input shapes: a session
    run twice on inputs of one shape must not reuse the first run's count (runtime.onnx_shape_values)."""
    nodes = [helper.make_node("ReduceMax", ["x"], ["top"], keepdims=0),
             helper.make_node("Cast", ["top"], ["limit"], to=onnx.TensorProto.INT64),
             helper.make_node("Range", ["zero", "limit", "one"], ["r"]),
             helper.make_node("Shape", ["r"], ["n"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("n", onnx.TensorProto.INT64, None)],
                              [onnx.numpy_helper.from_array(np.array(0, np.int64), "zero"),
                               onnx.numpy_helper.from_array(np.array(1, np.int64), "one")])
    session = runtime.Session(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10))
    assert session.run({"x": np.array([1, 4, 2], np.float32)})["n"].tolist() == [4]
    assert session.run({"x": np.array([1, 7, 2], np.float32)})["n"].tolist() == [7]


def test_a_global_pool_on_a_dynamic_batch_as_openvino_reads_it_converts_to_onnx(tmp_path):
    """OpenVINO's ONNX frontend writes GlobalAveragePool on a dynamic batch as ReduceMean over Range(2, rank), with
    rank = ShapeOf(ShapeOf(x)); an IR saved without OpenVINO's constant folding keeps it. The rank is known, so the
    axes are (ir.ops.generation), and the converted model runs on any batch as OpenVINO's IR does."""
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N", 8, 6, 5])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["N", 8])
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["g"]), helper.make_node("Flatten", ["g"], ["y"])]
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)],
                                ir_version=8), tmp_path / "model.onnx")
    ov.save_model(ov.Core().read_model(tmp_path / "model.onnx"), tmp_path / "model.xml", compress_to_fp16=False)
    assert "Range" in {layer.type for layer in ir.read_model(tmp_path / "model.xml").layers}
    back = ir_to_onnx(ir.read_model(tmp_path / "model.xml"))
    feeds = {"x": np.random.default_rng(0).standard_normal((3, 8, 6, 5)).astype(np.float32)}
    want = _only(openvino_run_xml(tmp_path / "model.xml", feeds))
    np.testing.assert_allclose(_only(onnxruntime_run(back, feeds)), want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("stop,folds", [(4096, True), (4097, False), (2**30, False)])
def test_integer_range_values_are_folded_only_when_small(stop, folds):
    """Shape inference keeps an integer Range's value up to ir.shapes.MAX_FOLDED_ELEMENTS; a larger count is only a
    length, never materialized (a hostile file's 2**30 elements would be 8 GiB, allocated while reading it)."""
    from poolir.ir.builder import GraphBuilder
    builder = GraphBuilder("range")
    bounds = [builder.const(np.array(v, np.int64)) for v in (0, stop, 1)]
    tracemalloc.start()
    try:
        (out,) = builder.add("Range", "opset4", bounds, {"output_type": "i64"})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**20        # numpy reports its allocations to tracemalloc
    info = builder.info(out)
    assert info.shape[0].value == stop
    if folds:
        np.testing.assert_array_equal(info.value, np.arange(stop))
    else:
        assert info.value is None
