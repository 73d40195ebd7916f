"""ONNX -> IR for Exp, Log, the comparisons, the logical ops and Where: each case run by onnxruntime on the ONNX,
by OpenVINO (CPU, f32) on poolir's IR, by poolir's IR runtime against OpenVINO, and by onnxruntime on poolir's
ONNX -> IR -> ONNX (tests/converter/test_onnx_to_ir_families.check). Seeded grids over element types,
broadcasts and opset versions, with the IEEE edge values (NaN, +-inf, +-0) in every float input."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T

from poolir.converter.onnx_to_ir import onnx_to_ir
from poolir.ir.errors import InvalidModelError, UnsupportedError
from tests.converter.test_onnx_to_ir_families import SHAPE_PAIRS, check, single

FLOATS = {T.FLOAT: np.float32, T.FLOAT16: np.float16, T.DOUBLE: np.float64}
INTS = {T.INT8: np.int8, T.UINT8: np.uint8, T.INT32: np.int32, T.INT64: np.int64}
EDGES = [np.nan, -np.inf, np.inf, 0.0, -0.0, 1.0, -1.0]
# OpenVINO's CPU plugin computes f64 in f32 and saturates inf to 3.4e38 on the way back
# (test_onnx_to_ir_backend_cases.OPENVINO_F64_SATURATES): no infinities in f64 inputs or outputs.
F64_EDGES = [np.nan, -1e30, 1e30, 1.0, -1.0, 2.0, -2.0]


def _numbers(elem, shape, rng):
    if elem == T.BOOL:
        return np.asarray(rng.integers(0, 2, size=shape)).astype(bool)
    if elem in FLOATS:
        x = np.asarray(rng.standard_normal(shape) * 3).astype(FLOATS[elem])
        edges = F64_EDGES if elem == T.DOUBLE else EDGES
        x.reshape(-1)[:len(edges)] = edges[:x.size]
        return x
    info = np.iinfo(INTS[elem])
    # OpenVINO's CPU plugin compares integers in f32 (onnx_to_ir/pointwise.py): stay within 2^24.
    return np.asarray(rng.integers(max(info.min, -4), min(info.max, 4), size=shape, endpoint=True)).astype(INTS[elem])


@pytest.mark.parametrize("op", ["Exp", "Log"])
@pytest.mark.parametrize("elem", list(FLOATS))
@pytest.mark.parametrize("opset", [6, 13])
def test_exp_log(op, elem, opset, tmp_path):
    model = single(op, [(elem, (2, 3, 5))], opset=opset)
    x = _numbers(elem, (2, 3, 5), np.random.default_rng(opset))
    x.reshape(-1)[-3:] = [80, -80, 1e-3] if elem != T.FLOAT16 else [10, -10, 1e-3]
    if elem == T.DOUBLE and op == "Exp":  # exp(1e300) is inf: see F64_EDGES
        x[np.abs(x) > 700] = 3
    check(model, tmp_path, {"x0": x}, rtol=1e-6 if elem != T.FLOAT16 else 1e-3)


def test_exp_round_trip_is_one_exp_again(tmp_path):
    """ONNX Exp -> IR Select(Equal(x, x), Exp(x), x) (OpenVINO's Exp gives +inf for NaN) -> ONNX Exp again."""
    from poolir import ir
    from poolir.converter.ir_to_onnx import ir_to_onnx
    converted = check(single("Exp", [(T.FLOAT, (2, 3))], opset=13), tmp_path,
                      {"x0": np.array([[np.nan, -np.inf, np.inf], [0, 1, -1]], np.float32)})
    assert sorted(layer.type for layer in converted.layers) == ["Equal", "Exp", "Parameter", "Result", "Select"]
    back = ir_to_onnx(ir.read_model(tmp_path / "m.xml"))
    assert [node.op_type for node in back.graph.node] == ["Exp"]


@pytest.mark.parametrize("op", ["Exp", "Log"])
def test_exp_log_integer_refused(op):
    # The runtime's table carries the spec's float-only type constraint (onnxruntime refuses these models too).
    with pytest.raises(UnsupportedError, match="i32 is not allowed for"):
        onnx_to_ir(single(op, [(T.INT32, (2, 3))], opset=13))


COMPARISON_GRID = [(elem, shapes) for elem in (T.FLOAT, T.INT32) for shapes in SHAPE_PAIRS] + \
                  [(elem, SHAPE_PAIRS[2]) for elem in (T.FLOAT16, T.DOUBLE, T.INT8, T.UINT8, T.INT64)]


@pytest.mark.parametrize("op,opset", [("Equal", 11), ("Equal", 13), ("Less", 9), ("Less", 13), ("Greater", 13),
                                      ("LessOrEqual", 12), ("GreaterOrEqual", 12), ("GreaterOrEqual", 16)])
@pytest.mark.parametrize("elem,shapes", COMPARISON_GRID)
def test_comparison(op, opset, elem, shapes, tmp_path):
    model = single(op, [(elem, shapes[0]), (elem, shapes[1])], opset=opset, out_type=T.BOOL)
    rng = np.random.default_rng(hash((op, opset, elem, shapes)) % 2 ** 32)
    feeds = {"x0": _numbers(elem, shapes[0], rng), "x1": _numbers(elem, shapes[1], rng)}
    if elem in FLOATS and feeds["x1"].size > 1:
        edges = F64_EDGES if elem == T.DOUBLE else EDGES
        feeds["x1"].reshape(-1)[:len(edges)] = edges[::-1][:feeds["x1"].size]  # NaN against numbers and itself
    check(model, tmp_path, feeds)


@pytest.mark.parametrize("opset", [7, 11, 13])
def test_equal_bool(opset, tmp_path):
    model = single("Equal", [(T.BOOL, (2, 3)), (T.BOOL, (3,))], opset=opset, out_type=T.BOOL)
    rng = np.random.default_rng(opset)
    check(model, tmp_path, {"x0": _numbers(T.BOOL, (2, 3), rng), "x1": _numbers(T.BOOL, (3,), rng)})


def test_greater_with_nan_is_false(tmp_path):
    """OpenVINO's Greater(NaN, 1) is true (not(a <= b)); ONNX's is false, and poolir writes Less(b, a)."""
    for op in ("Greater", "GreaterOrEqual"):
        model = single(op, [(T.FLOAT, (4,)), (T.FLOAT, (4,))], opset=13, out_type=T.BOOL)
        feeds = {"x0": np.array([np.nan, 1, np.nan, 2], np.float32), "x1": np.array([1, np.nan, np.nan, 1], np.float32)}
        converted = check(model, tmp_path, feeds)
        assert [layer.type for layer in converted.layers if layer.type not in ("Parameter", "Result")] == [
            "Less" if op == "Greater" else "LessEqual"]


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
@pytest.mark.parametrize("shapes", SHAPE_PAIRS)
def test_logical(op, shapes, tmp_path):
    model = single(op, [(T.BOOL, shapes[0]), (T.BOOL, shapes[1])], opset=7)
    rng = np.random.default_rng(len(shapes[0]))
    check(model, tmp_path, {"x0": _numbers(T.BOOL, shapes[0], rng), "x1": _numbers(T.BOOL, shapes[1], rng)})


def test_not(tmp_path):
    check(single("Not", [(T.BOOL, (2, 3, 4))], opset=1), tmp_path,
          {"x0": _numbers(T.BOOL, (2, 3, 4), np.random.default_rng(0))})


@pytest.mark.parametrize("op,inputs", [("Not", [(T.FLOAT, (2,))]), ("And", [(T.INT32, (2,)), (T.INT32, (2,))]),
                                       ("Where", [(T.FLOAT, (2,)), (T.FLOAT, (2,)), (T.FLOAT, (2,))])])
def test_non_boolean_logic_refused(op, inputs):
    with pytest.raises(InvalidModelError, match="must be bool"):
        onnx_to_ir(single(op, inputs, opset=13))


WHERE_SHAPES = [((2, 3, 4), (2, 3, 4), (2, 3, 4)), ((3, 1), (1, 4), ()), ((1,), (2, 1, 3), (3,)), ((), (2, 2), (2, 1))]


@pytest.mark.parametrize("shapes", WHERE_SHAPES)
@pytest.mark.parametrize("elem,opset", [(T.FLOAT, 9), (T.FLOAT, 16), (T.INT64, 16), (T.UINT8, 9),
                                        (T.FLOAT16, 16)])
def test_where(shapes, elem, opset, tmp_path):
    model = single("Where", [(T.BOOL, shapes[0]), (elem, shapes[1]), (elem, shapes[2])], opset=opset, out_type=elem)
    rng = np.random.default_rng(opset + len(shapes[0]))
    feeds = {"x0": _numbers(T.BOOL, shapes[0], rng), "x1": _numbers(elem, shapes[1], rng),
             "x2": _numbers(elem, shapes[2], rng)}
    check(model, tmp_path, feeds)


def test_where_bool(tmp_path):
    """onnxruntime 1.31 has no bool Where kernel: OpenVINO on poolir's IR against numpy's where."""
    from poolir import ir
    from tests.peers import openvino_run_xml
    model = single("Where", [(T.BOOL, (3, 1)), (T.BOOL, (1, 4)), (T.BOOL, ())], opset=16, out_type=T.BOOL)
    rng = np.random.default_rng(5)
    feeds = {"x0": _numbers(T.BOOL, (3, 1), rng), "x1": _numbers(T.BOOL, (1, 4), rng), "x2": np.array(True)}
    ir.write_model(onnx_to_ir(model), tmp_path / "m.xml")
    got = openvino_run_xml(tmp_path / "m.xml", feeds, ["y0"])["y0"]
    np.testing.assert_array_equal(got, np.where(feeds["x0"], feeds["x1"], feeds["x2"]))


def test_comparison_into_where(tmp_path):
    """A ReLU-like Where(Greater(x, 0), x, 0 * x) as exporters write masks, with dynamic dims."""
    from tests.converter.test_onnx_to_ir_families import make_model
    from onnx import helper
    nodes = [helper.make_node("Greater", ["x", "zero"], ["mask"]), helper.make_node("Mul", ["x", "zero"], ["z"]),
             helper.make_node("Where", ["mask", "x", "z"], ["y"])]
    zero = helper.make_tensor("zero", T.FLOAT, [], [0.0])
    model = make_model(nodes, [("x", T.FLOAT, ("n", 3))], [("y", T.FLOAT)], opset=13, initializers=[zero])
    x = np.array([[np.nan, -1, 2], [0.5, -0.0, -3]], np.float32)
    check(model, tmp_path, {"x": x})
