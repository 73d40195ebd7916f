"""ONNX -> IR for GatherND and Tile: each case run by onnxruntime on the ONNX, by OpenVINO (CPU, f32) on poolir's
IR, by poolir's IR runtime against OpenVINO, and by onnxruntime on poolir's ONNX -> IR -> ONNX
(tests/converter/test_onnx_to_ir_families.check). Seeded grids over batch_dims, index depth, negative indices,
element types, opsets, constant and computed repeats, and dynamic dims."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from poolir.converter.onnx_to_ir import onnx_to_ir
from poolir.ir.errors import InvalidModelError
from tests.converter.test_onnx_to_ir_families import check, make_model, single

_NP = {T.FLOAT: np.float32, T.INT32: np.int32, T.INT64: np.int64, T.FLOAT16: np.float16, T.UINT8: np.uint8}

# (data dims, indices dims, batch_dims); the indices' last dim is the index depth k.
GATHER_ND = [((3, 4), (2, 2), 0), ((3, 4, 5), (2, 1), 0), ((3, 4, 5), (4, 3), 0), ((2, 3), (2, 3, 1), 0),
             ((3, 4, 5), (3, 2), 1), ((3, 4, 5), (3, 2, 1), 1), ((2, 3, 4, 5), (2, 3, 1), 2),
             ((2, 3, 4, 5, 2), (2, 3, 4, 2), 2), ((2, 3, 4), (2, 3, 1), 2)]


def _indices(data_shape, index_shape, batch_dims, rng):
    bounds = np.array(data_shape[batch_dims:batch_dims + index_shape[-1]])
    return rng.integers(-bounds, bounds, size=index_shape).astype(np.int64)  # negative ones count from the end


@pytest.mark.parametrize("data_shape,index_shape,batch_dims", GATHER_ND)
@pytest.mark.parametrize("opset", [11, 12, 13])
def test_gather_nd(data_shape, index_shape, batch_dims, opset, tmp_path):
    if batch_dims and opset < 12:
        pytest.skip("batch_dims is an attribute from opset 12")
    attrs = {"batch_dims": batch_dims} if opset >= 12 else {}
    model = single("GatherND", [(T.FLOAT, data_shape), (T.INT64, index_shape)], opset=opset, out_type=T.FLOAT, **attrs)
    rng = np.random.default_rng(opset + len(data_shape) + batch_dims)
    feeds = {"x0": rng.standard_normal(data_shape).astype(np.float32),
             "x1": _indices(data_shape, index_shape, batch_dims, rng)}
    check(model, tmp_path, feeds)


@pytest.mark.parametrize("elem", [T.INT32, T.INT64, T.FLOAT16, T.UINT8])
def test_gather_nd_types_and_constant_indices(elem, tmp_path):
    rng = np.random.default_rng(elem)
    indices = numpy_helper.from_array(_indices((3, 4, 5), (3, 2, 1), 1, rng), "x1")
    model = single("GatherND", [(elem, (3, 4, 5)), (T.INT64, (3, 2, 1))], opset=13, initializers=[indices],
                   batch_dims=1)
    feeds = {"x0": (rng.standard_normal((3, 4, 5)) * 10).astype(_NP[elem])}
    check(model, tmp_path, feeds)


def test_gather_nd_dynamic_batch(tmp_path):
    model = single("GatherND", [(T.FLOAT, ("n", 4, 5)), (T.INT64, ("n", 2, 2))], opset=13, out_type=T.FLOAT,
                   batch_dims=1)
    rng = np.random.default_rng(7)
    feeds = {"x0": rng.standard_normal((3, 4, 5)).astype(np.float32), "x1": _indices((3, 4, 5), (3, 2, 2), 1, rng)}
    check(model, tmp_path, feeds)


@pytest.mark.parametrize("index_type,batch_dims", [(T.INT32, 0), (T.INT64, 2)])
def test_gather_nd_bad_indices_refused(index_type, batch_dims):
    model = single("GatherND", [(T.FLOAT, (3, 4)), (index_type, (3, 1))], opset=13, out_type=T.FLOAT,
                   batch_dims=batch_dims)
    with pytest.raises(InvalidModelError, match="int64|batch_dims"):
        onnx_to_ir(model)


TILE = [((2, 3), [2, 3]), ((2, 3), [1, 1]), ((4, 1, 2), [1, 3, 2]), ((3,), [0]), ((1, 2, 2), [3, 0, 1]), ((), []),
        ((2, 3, 4, 5), [2, 2, 2, 2]), ((2, 1, 3, 2, 1), [1, 2, 3, 2, 2])]  # OpenVINO tiles three computed axes wrong


@pytest.mark.parametrize("shape,repeats", TILE)
@pytest.mark.parametrize("constant", [True, False])
@pytest.mark.parametrize("opset", [6, 13])
def test_tile(shape, repeats, constant, opset, tmp_path):
    times = np.array(repeats, np.int64)
    initializers = [numpy_helper.from_array(times, "x1")] if constant else []
    model = single("Tile", [(T.FLOAT, shape), (T.INT64, (len(repeats),))], opset=opset, initializers=initializers)
    feeds = {"x0": np.asarray(np.random.default_rng(len(shape)).standard_normal(shape)).astype(np.float32)}
    if not constant:
        feeds["x1"] = times
    check(model, tmp_path, feeds)


@pytest.mark.parametrize("elem", [T.INT32, T.INT64, T.FLOAT16, T.UINT8])
def test_tile_types(elem, tmp_path):
    model = single("Tile", [(elem, (2, 3)), (T.INT64, (2,))], opset=13,
                   initializers=[numpy_helper.from_array(np.array([2, 2], np.int64), "x1")])
    check(model, tmp_path, {"x0": np.arange(6).reshape(2, 3).astype(_NP[elem])})


def test_tile_repeats_computed_from_a_dynamic_shape(tmp_path):
    """Tile by Shape(y) of an input with a dynamic dim: the repeats are only known when the model runs."""
    nodes = [helper.make_node("Shape", ["y"], ["r"]), helper.make_node("Tile", ["x", "r"], ["out"])]
    model = make_model(nodes, [("x", T.FLOAT, ("n", 3)), ("y", T.FLOAT, ("a", "b"))], [("out", T.FLOAT)], opset=13)
    rng = np.random.default_rng(2)
    feeds = {"x": rng.standard_normal((2, 3)).astype(np.float32), "y": np.zeros((3, 2), np.float32)}
    check(model, tmp_path, feeds)


@pytest.mark.parametrize("repeats", [[2], [1, -1]])
def test_tile_bad_repeats_refused(repeats):
    model = single("Tile", [(T.FLOAT, (2, 3)), (T.INT64, (len(repeats),))], opset=13,
                   initializers=[numpy_helper.from_array(np.array(repeats, np.int64), "x1")])
    with pytest.raises(InvalidModelError, match="repeats"):
        onnx_to_ir(model)
