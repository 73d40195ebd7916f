"""ScatterND (ONNX 11/13/16/18) and ScatterNDUpdate-3/15 (IR) against the onnx package's backend cases, onnxruntime,
OpenVINO's CPU plugin on its own layers, and the engines running the converted models: negative indices, duplicate
index tuples under every reduction, the engines' NaN and signed-zero rules for max and min, and the refusals
(an index out of range, a last indices dim of 0, reductions the other world lacks). Scatter copies or combines
elements in a fixed order: every comparison is exact."""

from __future__ import annotations

import random

import numpy as np
import onnx
import openvino as ov
import openvino.opset1 as ov1
import openvino.opset15 as ov15
import pytest
from onnx import TensorProto, helper
from openvino.utils.node_factory import NodeFactory

from poolir import ir, runtime
from poolir.converter import ir_to_onnx, onnx_to_ir
from poolir.ir.errors import ConversionError, InvalidModelError, PoolirError, UnsupportedError
from tests.backend_cases import accepting_versions, at_opset, feeds_of, node_cases
from tests.peers import onnxruntime_run, openvino_run_xml
from tests.runtime.ir_cases import OV_TYPES, assert_matches_openvino, save_ir

BACKEND_CASES = node_cases(("scatternd",), ("ScatterND",))
ONNX_REDUCTIONS = {None: 11, "none": 16, "add": 16, "mul": 16, "max": 18, "min": 18}


def _scatter_model(opset, reduction, data, indices, updates):
    elem = helper.np_dtype_to_tensor_dtype(data.dtype)
    attrs = {} if reduction is None else {"reduction": reduction}
    graph = helper.make_graph([helper.make_node("ScatterND", ["data", "indices", "updates"], ["y"], name="scatter",
                                                **attrs)], "g",
                              [helper.make_tensor_value_info("data", elem, data.shape),
                               helper.make_tensor_value_info("indices", TensorProto.INT64, indices.shape),
                               helper.make_tensor_value_info("updates", elem, updates.shape)],
                              [helper.make_tensor_value_info("y", elem, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def _feeds(data, indices, updates):
    return {"data": data, "indices": indices, "updates": updates}


def _same(got, want):
    """Equal values, NaN where NaN, and the same sign of every zero."""
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    if got.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("name", sorted(BACKEND_CASES))
def test_onnx_backend_case_at_every_opset_that_accepts_it(name):
    case = BACKEND_CASES[name]
    reduction = next((a.s.decode() for a in case.model.graph.node[0].attribute if a.name == "reduction"), None)
    versions = [v for v in accepting_versions(case) if v.since >= ONNX_REDUCTIONS[reduction]]
    assert versions
    for version in versions:
        got = runtime.run(at_opset(case, version.since), feeds_of(case))["y"]
        np.testing.assert_array_equal(got, case.data_sets[0][1][0])


def _random_case(rng: random.Random, dtype, with_nan: bool):
    """data of rank 1..3, indices of k = 1..rank with negative and repeated tuples, updates of matching shape."""
    nrng = np.random.default_rng(rng.randrange(2**31))
    rank = rng.randint(1, 3)
    shape = tuple(rng.randint(1, 4) for _ in range(rank))
    depth = rng.randint(1, rank)
    count = tuple(rng.randint(1, 4) for _ in range(rng.randint(1, 2)))
    indices = np.stack([nrng.integers(-shape[j], shape[j], count) for j in range(depth)], -1).astype(np.int64)
    data = (nrng.standard_normal(shape) * 4).astype(dtype)
    updates = (nrng.standard_normal(count + shape[depth:]) * 4).astype(dtype)
    if with_nan:
        data.flat[0], updates.flat[-1] = np.nan, np.nan
        updates.flat[0] = -0.0
    return data, indices, updates


def _grid(count=120, seed=3):
    rng = random.Random(seed)
    cases = []
    for index in range(count):
        reduction = list(ONNX_REDUCTIONS)[index % 6]
        dtype = [np.float32, np.int32, np.int64, np.uint8, np.bool_, np.float64][index // 6 % 6]
        if dtype == np.bool_ and reduction in ("max", "min"):
            dtype = np.int8           # onnxruntime has no bool max or min
        cases.append((reduction, dtype, index % 4 == 0 and dtype in (np.float32, np.float64), rng.randrange(2**31)))
    return cases


@pytest.mark.parametrize("case", _grid(), ids=str)
def test_against_onnxruntime(case):
    reduction, dtype, with_nan, seed = case
    data, indices, updates = _random_case(random.Random(seed), dtype, with_nan)
    model = _scatter_model(ONNX_REDUCTIONS[reduction], reduction, data, indices, updates)
    feeds = _feeds(data, indices, updates)
    _same(runtime.run(model, feeds)["y"], onnxruntime_run(model, feeds)["y"])


@pytest.mark.parametrize("reduction,data,updates,want", [
    # onnxruntime's fold: acc stays only when it strictly wins, else the update is taken
    ("max", [np.nan, 1, 2], [5, np.nan, 0], [5, np.nan, 2]),     # a NaN acc is replaced, a NaN update taken
    ("min", [np.nan, 1, 2], [5, np.nan, 3], [5, np.nan, 2]),
    ("max", [0.0, -0.0, 1], [-0.0, 0.0, 1], [-0.0, 0.0, 1]),     # equal values: the later (the update) wins
])
def test_onnx_max_min_follow_onnxruntimes_fold(reduction, data, updates, want):
    data, updates = np.array(data, np.float32), np.array(updates, np.float32)
    indices = np.arange(3, dtype=np.int64).reshape(3, 1)
    model, feeds = _scatter_model(18, reduction, data, indices, updates), _feeds(data, indices, updates)
    want = np.array(want, np.float32)
    _same(onnxruntime_run(model, feeds)["y"], want)
    _same(runtime.run(model, feeds)["y"], want)


def test_duplicates_under_none_keep_the_last_update_as_the_engines_do(tmp_path):
    """500 updates of one element: onnxruntime and OpenVINO (both worlds) keep the 500th, 499."""
    data, indices = np.zeros(4, np.float32), np.full((500, 1), 2, np.int64)
    updates = np.arange(500, dtype=np.float32)
    model, feeds = _scatter_model(16, "none", data, indices, updates), _feeds(data, indices, updates)
    want = np.array([0, 0, 499, 0], np.float32)
    _same(onnxruntime_run(model, feeds)["y"], want)
    _same(runtime.run(model, feeds)["y"], want)
    ir.write_model(onnx_to_ir(model), tmp_path / "model.xml")
    _same(openvino_run_xml(tmp_path / "model.xml", feeds, ["y"])["y"], want)


def test_add_applies_duplicates_in_index_order():
    """float32 0 + 1 + 1e8 - 1e8 is 0 (the 1 is lost at 1e8), 0 - 1e8 + 1e8 + 1 is 1: onnxruntime sums in index
    order."""
    data, indices = np.zeros(1, np.float32), np.zeros((3, 1), np.int64)
    for updates, want in (([1, 1e8, -1e8], 0), ([-1e8, 1e8, 1], 1)):
        updates = np.array(updates, np.float32)
        model, feeds = _scatter_model(16, "add", data, indices, updates), _feeds(data, indices, updates)
        assert onnxruntime_run(model, feeds)["y"][0] == want == runtime.run(model, feeds)["y"][0]


def test_empty_index_tuples_replace_all_of_data_in_onnx():
    """k = 0: output[()] = updates[i] for each i, the last winning (onnxruntime agrees); IR refuses it."""
    data, indices = np.arange(6, dtype=np.float32).reshape(2, 3), np.zeros((2, 0), np.int64)
    updates = np.stack([np.full((2, 3), 7, np.float32), np.full((2, 3), 9, np.float32)])
    model, feeds = _scatter_model(13, None, data, indices, updates), _feeds(data, indices, updates)
    _same(onnxruntime_run(model, feeds)["y"], np.full((2, 3), 9, np.float32))
    _same(runtime.run(model, feeds)["y"], np.full((2, 3), 9, np.float32))
    with pytest.raises(ConversionError, match="last dim of 0"):
        onnx_to_ir(model)


@pytest.mark.parametrize("index", [[8], [-9]])
def test_an_index_out_of_range_is_refused_naming_the_node(index):
    """onnxruntime refuses it too ("invalid indice found"); OpenVINO writes out of bounds."""
    data, indices, updates = np.arange(8, dtype=np.float32), np.array([index], np.int64), np.ones(1, np.float32)
    with pytest.raises(InvalidModelError, match=rf"node 'scatter'.*index \[{index[0]}\] is out of range"):
        runtime.run(_scatter_model(13, None, data, indices, updates), _feeds(data, indices, updates))


@pytest.mark.parametrize("opset,reduction,indices,updates,match", [
    (16, "max", [[0]], [1.0], "not one of none, add, mul"),
    (18, "sub", [[0]], [1.0], "reduction"),
    (13, None, [[0]], [1.0, 2.0], "updates"),
    (13, None, [[0, 0]], [1.0], "exceeds the data rank"),
])
def test_bad_scatter_nodes_are_refused(opset, reduction, indices, updates, match):
    data = np.zeros(3, np.float32)
    indices, updates = np.array(indices, np.int64), np.array(updates, np.float32)
    model = _scatter_model(opset, reduction, data, indices, updates)
    with pytest.raises(PoolirError, match=match):
        runtime.run(model, _feeds(data, indices, updates))
    with pytest.raises(PoolirError, match="node 'scatter'"):
        onnx_to_ir(model)


# ---------------------------------------------------------------------------------------------------------------
# IR ScatterNDUpdate against OpenVINO


def _scatter_ir(path, version, reduction, data, indices, updates):
    params = [ov1.parameter(list(a.shape), OV_TYPES.get(a.dtype, ov.Type.boolean), name=n)
              for n, a in (("data", data), ("indices", indices), ("updates", updates))]
    if version == 15:
        node = ov15.scatter_nd_update(*params, reduction)
    else:
        node = NodeFactory("opset4").create("ScatterNDUpdate", params, {})
    return save_ir([node.output(0)], params, path)


IR_REDUCTIONS = (None, "none", "sum", "sub", "prod", "min", "max")


def _ir_grid(count=84, seed=8):
    rng = random.Random(seed)
    return [(IR_REDUCTIONS[index % 7], [np.float32, np.int32, np.int64, np.uint8][index // 7 % 4],
             index % 3 == 0, rng.randrange(2**31)) for index in range(count)]


@pytest.mark.parametrize("case", _ir_grid(), ids=str)
def test_ir_layer_against_openvino(case, tmp_path):
    """Negative and repeated index tuples, i32 or i64 indices; float max and min with NaN and -0.0 (OpenVINO skips a
    NaN update, keeps a NaN in data and the earlier of equal values)."""
    reduction, dtype, with_nan, seed = case
    data, indices, updates = _random_case(random.Random(seed), dtype, with_nan and dtype == np.float32)
    if seed % 2:
        indices = indices.astype(np.int32)
    xml = _scatter_ir(tmp_path / "model.xml", 3 if reduction is None else 15, reduction, data, indices, updates)
    got = assert_matches_openvino(xml, _feeds(data, indices, updates), rtol=0, atol=0)
    if dtype == np.float32:
        want = openvino_run_xml(xml, _feeds(data, indices, updates))
        np.testing.assert_array_equal(np.signbit(next(iter(got.values()))), np.signbit(next(iter(want.values()))))


def test_openvino_bool_sub_is_u8_arithmetic_where_its_spec_says_xor(tmp_path):
    """data [T, F], updates T, T at index 1: the spec's XOR gives F ^ T ^ T = F; OpenVINO 2026.4's CPU plugin
    computes 0 - 1 - 1 = 254 in u8, true. poolir follows the spec."""
    data, indices, updates = np.array([True, False]), np.array([[1], [1]], np.int64), np.array([True, True])
    xml = _scatter_ir(tmp_path / "model.xml", 15, "sub", data, indices, updates)
    feeds = _feeds(data, indices, updates)
    assert next(iter(openvino_run_xml(xml, feeds).values())).tolist() == [True, True]
    assert next(iter(runtime.Session(ir.read_model(xml)).run(feeds).values())).tolist() == [True, False]


def test_ir_refuses_what_openvino_gets_wrong(tmp_path):
    """An index out of range (OpenVINO writes out of bounds) and k = 0 (OpenVINO leaves data unchanged)."""
    data = np.arange(8, dtype=np.float32)
    xml = _scatter_ir(tmp_path / "oob.xml", 3, None, data, np.array([[8]], np.int64), np.ones(1, np.float32))
    with pytest.raises(InvalidModelError, match=r"ScatterNDUpdate.*index \[8\] is out of range"):
        runtime.Session(ir.read_model(xml)).run(_feeds(data, np.array([[8]], np.int64), np.ones(1, np.float32)))
    empty = np.zeros((1, 0), np.int64)
    xml = _scatter_ir(tmp_path / "k0.xml", 15, "none", data, empty, data[None])
    feeds = _feeds(data, empty, np.full((1, 8), 5, np.float32))
    np.testing.assert_array_equal(next(iter(openvino_run_xml(xml, feeds).values())), data)
    with pytest.raises(UnsupportedError, match="last dim of 0"):
        runtime.Session(ir.read_model(xml)).run(feeds)


def test_openvino_reads_the_v3_layer_as_opset4_only(tmp_path):
    data, indices, updates = np.zeros(4, np.float32), np.array([[1]], np.int64), np.ones(1, np.float32)
    xml = _scatter_ir(tmp_path / "model.xml", 3, None, data, indices, updates)
    assert 'type="ScatterNDUpdate" version="opset4"' in xml.read_text()
    assert ir.read_model(xml).layers
    assert ir.op_version("ScatterNDUpdate", "opset3").since == ir.op_version("ScatterNDUpdate", "opset4").since == 3
    assert [layer.version for layer in onnx_to_ir(_scatter_model(11, None, data, indices, updates)).layers
            if layer.type == "ScatterNDUpdate"] == ["opset4"]


# ---------------------------------------------------------------------------------------------------------------
# Conversions


@pytest.mark.parametrize("case", [c for c in _grid(60, seed=4) if c[1] != np.float64
                                  and not (c[0] in ("max", "min") and c[1] == np.float32)], ids=str)
def test_onnx_converts_to_what_openvino_runs_alike(case, tmp_path):
    reduction, dtype, with_nan, seed = case
    data, indices, updates = _random_case(random.Random(seed), dtype, with_nan)
    model = _scatter_model(ONNX_REDUCTIONS[reduction], reduction, data, indices, updates)
    feeds = _feeds(data, indices, updates)
    ir.write_model(onnx_to_ir(model), tmp_path / "model.xml")
    _same(openvino_run_xml(tmp_path / "model.xml", feeds, ["y"])["y"], onnxruntime_run(model, feeds)["y"])


def test_float_max_and_min_are_refused_in_conversion(tmp_path):
    data, indices, updates = np.zeros(3, np.float32), np.array([[1]], np.int64), np.ones(1, np.float32)
    with pytest.raises(ConversionError, match="NaN"):
        onnx_to_ir(_scatter_model(18, "max", data, indices, updates))
    xml = _scatter_ir(tmp_path / "model.xml", 15, "min", data, indices, updates)
    with pytest.raises(ConversionError, match="NaN"):
        ir_to_onnx(ir.read_model(xml))


@pytest.mark.parametrize("case", [c for c in _ir_grid(42, seed=9) if c[0] != "sub"
                                  and not (c[0] in ("max", "min") and c[1] == np.float32)], ids=str)
def test_ir_converts_to_onnx_that_onnxruntime_runs_alike(case, tmp_path):
    reduction, dtype, with_nan, seed = case
    data, indices, updates = _random_case(random.Random(seed), dtype, with_nan and dtype == np.float32)
    indices = indices.astype(np.int32) if seed % 2 else indices
    xml = _scatter_ir(tmp_path / "model.xml", 3 if reduction is None else 15, reduction, data, indices, updates)
    back = ir_to_onnx(ir.read_model(xml), opset=18)
    onnx.checker.check_model(back, full_check=True)
    feeds = _feeds(data, indices, updates)
    _same(next(iter(onnxruntime_run(back, feeds).values())), next(iter(openvino_run_xml(xml, feeds).values())))


def test_ir_to_onnx_needs_the_opset_of_the_reduction(tmp_path):
    data, indices, updates = np.zeros(3, np.int32), np.array([[1]], np.int64), np.ones(1, np.int32)
    xml = _scatter_ir(tmp_path / "model.xml", 15, "max", data, indices, updates)
    with pytest.raises(ConversionError, match="reduction max.*from opset 18"):
        ir_to_onnx(ir.read_model(xml), opset=17)
    xml = _scatter_ir(tmp_path / "sub.xml", 15, "sub", data, indices, updates)
    with pytest.raises(ConversionError, match="reduction sub has no ONNX ScatterND reduction"):
        ir_to_onnx(ir.read_model(xml), opset=18)
    xml = _scatter_ir(tmp_path / "none.xml", 3, None, data, indices, updates)
    with pytest.raises(ConversionError, match="from opset 11"):
        ir_to_onnx(ir.read_model(xml), opset=10)
