"""OpenVINO's own IR of the ONNX ops poolir now converts (Sign, Exp, Log, comparisons, logic, Where, Flatten,
GatherND, Tile, ReduceLogSum, ReduceLogSumExp), as `openvino.convert_model` writes it: poolir reads every layer
type of it, runs it like OpenVINO runs it, and converts it to ONNX that onnxruntime runs like OpenVINO runs the
IR. Oracles: OpenVINO (CPU, f32) on its own IR; onnxruntime on poolir's ONNX of that IR."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from poolir import converter, ir, runtime
from poolir.ir.schema import unknown_layer_types
from tests.peers import onnxruntime_run, openvino_convert_to_xml, openvino_run_xml

pytestmark = pytest.mark.slow  # about a minute: OpenVINO's convert_model per case
RNG = np.random.default_rng(20261124)
vi = helper.make_tensor_value_info


def _model(nodes, inputs, outputs, opset, initializers=()):
    graph = helper.make_graph(nodes, "m", [vi(*i) for i in inputs], [vi(name, t, None) for name, t in outputs],
                              initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _f32(*shape):
    x = RNG.standard_normal(shape).astype(np.float32) * 3
    x.reshape(-1)[:4] = [np.nan, 0.0, -0.0, np.inf][:x.size]
    return x


def _cases():
    cases = {}
    x4 = ("x", T.FLOAT, [2, 3, 4])
    for op in ("Sign", "Exp", "Log"):
        cases[op.lower()] = (_model([helper.make_node(op, ["x"], ["y"])], [x4], [("y", T.FLOAT)], 13),
                             {"x": _f32(2, 3, 4)})
    for op in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"):
        for elem, feeds in ((T.FLOAT, {"x": _f32(2, 3, 4), "y": _f32(4)}),
                            (T.INT32, {"x": RNG.integers(-3, 3, (2, 3, 4)).astype(np.int32),
                                       "y": RNG.integers(-3, 3, (4,)).astype(np.int32)})):
            cases[f"{op.lower()}_{elem}"] = (
                _model([helper.make_node(op, ["x", "y"], ["z"])], [("x", elem, [2, 3, 4]), ("y", elem, [4])],
                       [("z", T.BOOL)], 13), feeds)
    bools = {"a": RNG.random((2, 3)) < 0.5, "b": RNG.random((3,)) < 0.5}
    for op in ("And", "Or", "Xor"):
        cases[op.lower()] = (_model([helper.make_node(op, ["a", "b"], ["z"])],
                                    [("a", T.BOOL, [2, 3]), ("b", T.BOOL, [3])], [("z", T.BOOL)], 13), bools)
    cases["not"] = (_model([helper.make_node("Not", ["a"], ["z"])], [("a", T.BOOL, [2, 3])], [("z", T.BOOL)], 13),
                    {"a": bools["a"]})
    cases["where_greater"] = (
        _model([helper.make_node("Greater", ["x", "y"], ["c"]), helper.make_node("Where", ["c", "x", "y"], ["z"])],
               [("x", T.FLOAT, ["n", 3, 4]), ("y", T.FLOAT, [4])], [("z", T.FLOAT)], 16),
        {"x": _f32(2, 3, 4), "y": _f32(4)})
    for axis in (1, 2, -1):
        cases[f"flatten_dynamic_{axis}"] = (
            _model([helper.make_node("Flatten", ["x"], ["y"], axis=axis)], [("x", T.FLOAT, ["n", 3, "h", 5])],
                   [("y", T.FLOAT)], 13), {"x": _f32(2, 3, 4, 5)})
    for opset, batch, data_shape, index_shape in ((11, 0, (3, 4, 5), (2, 2)), (12, 1, (3, 4, 5), (3, 2, 1)),
                                                  (13, 2, (2, 3, 4, 5), (2, 3, 2))):
        bounds = np.array(data_shape[batch:batch + index_shape[-1]])
        attrs = {"batch_dims": batch} if batch else {}
        cases[f"gathernd_{opset}_b{batch}"] = (
            _model([helper.make_node("GatherND", ["x", "i"], ["y"], **attrs)],
                   [("x", T.FLOAT, list(data_shape)), ("i", T.INT64, list(index_shape))], [("y", T.FLOAT)], opset),
            {"x": _f32(*data_shape), "i": RNG.integers(-bounds, bounds, index_shape).astype(np.int64)})
    repeats = numpy_helper.from_array(np.array([2, 1, 3], np.int64), "r")
    cases["tile_constant"] = (_model([helper.make_node("Tile", ["x", "r"], ["y"])], [x4], [("y", T.FLOAT)], 13,
                                     [repeats]), {"x": _f32(2, 3, 4)})
    # computed repeats tiling at most two axes (OpenVINO tiles three computed axes wrong: onnx_to_ir/rearrange.py)
    cases["tile_computed"] = (_model([helper.make_node("Tile", ["x", "r"], ["y"])],
                                     [x4, ("r", T.INT64, [3])], [("y", T.FLOAT)], 13),
                              {"x": _f32(2, 3, 4), "r": np.array([2, 1, 3], np.int64)})
    for op in ("ReduceLogSum", "ReduceLogSumExp"):
        for opset in (13, 18):
            axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
            node = (helper.make_node(op, ["x"], ["y"], axes=[1], keepdims=0) if opset < 18 else
                    helper.make_node(op, ["x", "axes"], ["y"], keepdims=0))
            x = np.abs(_f32(2, 3, 4)) + 0.5 if op == "ReduceLogSum" else RNG.standard_normal((2, 3, 4)).astype(
                np.float32)
            cases[f"{op.lower()}_{opset}"] = (_model([node], [x4], [("y", T.FLOAT)], opset,
                                                     [axes] if opset >= 18 else []), {"x": x})
    return cases


CASES = _cases()


def _same(got: dict, want: dict, what: str) -> None:
    for name, expected in want.items():
        value = got[name]
        assert value.shape == expected.shape, (what, name, value.shape, expected.shape)
        if expected.dtype.kind in "biu":
            np.testing.assert_array_equal(value, expected, err_msg=f"{what} {name}")
        else:
            np.testing.assert_allclose(value, expected, rtol=1e-5, atol=1e-6, equal_nan=True, err_msg=f"{what} {name}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_openvinos_ir_runs_and_converts_back(name, tmp_path):
    model, feeds = CASES[name]
    path = openvino_convert_to_xml(model, tmp_path / f"{name}.xml")
    ir_model = ir.read_model(path)
    assert unknown_layer_types(ir_model.layers) == {}
    openvino = openvino_run_xml(path, feeds)
    _same(runtime.run(ir_model, feeds), openvino, "poolir's IR runtime")
    back = converter.ir_to_onnx(ir_model)
    _same(onnxruntime_run(back, feeds), openvino, "onnxruntime on poolir's ONNX of OpenVINO's IR")
