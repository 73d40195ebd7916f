"""ONNX -> IR for the elementwise, movement and reduction families (whole-graph behaviour: test_onnx_to_ir_graphs).
Each case is a small ONNX model, converted by poolir, run by OpenVINO (CPU, f32) on poolir's .xml and by onnxruntime on the ONNX; then converted back (ir_to_onnx) and run by onnxruntime again.
Neither oracle is poolir: the runtime is never compared with itself here.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from poolir import ir, runtime
from poolir.converter.ir_to_onnx import ir_to_onnx
from poolir.converter.onnx_to_ir import onnx_to_ir
from poolir.ir.errors import ConversionError, PoolirError
from tests.peers import onnxruntime_run, openvino_run_xml

_NP = {T.FLOAT: np.float32, T.INT32: np.int32, T.INT64: np.int64, T.UINT8: np.uint8, T.INT8: np.int8,
       T.DOUBLE: np.float64, T.FLOAT16: np.float16}


def make_model(nodes, inputs, outputs, opset=13, initializers=()):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                              [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
                              initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def single(op, inputs, n_outputs=1, opset=13, initializers=(), out_type=None, **attrs):
    names = [f"x{i}" if spec is not None else "" for i, spec in enumerate(inputs)]
    node = helper.make_node(op, names, [f"y{i}" for i in range(n_outputs)], **attrs)
    graph_inputs = [(n, spec[0], spec[1]) for n, spec in zip(names, inputs)
                    if spec is not None and n not in {i.name for i in initializers}]
    out_type = out_type or next(spec[0] for spec in inputs if spec is not None)
    return make_model([node], graph_inputs, [(f"y{i}", out_type) for i in range(n_outputs)], opset, initializers)


def feeds_for(model, rng):
    initialized = {i.name for i in model.graph.initializer}
    feeds = {}
    for value in model.graph.input:
        if value.name in initialized:
            continue
        elem = value.type.tensor_type.elem_type
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        dtype = _NP[elem]
        if np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            feeds[value.name] = np.asarray(rng.integers(max(info.min, -20), min(info.max, 20), size=shape)).astype(dtype)
        else:
            feeds[value.name] = np.asarray(rng.standard_normal(shape) * 3).astype(dtype)
    return feeds


def check(model, tmp_path, feeds=None, seed=0, rtol=1e-6, atol=1e-6, round_trip=True):
    """OpenVINO on poolir's IR == onnxruntime on the ONNX == onnxruntime on poolir's ONNX -> IR -> ONNX; and
    poolir's IR runtime == OpenVINO on that IR."""
    rng = np.random.default_rng(seed)
    feeds = feeds if feeds is not None else feeds_for(model, rng)
    expected = onnxruntime_run(model, feeds)
    converted = onnx_to_ir(model)
    xml = tmp_path / "m.xml"
    ir.write_model(converted, xml)
    names = [o.name for o in model.graph.output]
    got = openvino_run_xml(xml, feeds, names)
    for name in names:
        _same(got[name], expected[name], rtol, atol, f"OpenVINO {name}")
    mine = runtime.run(ir.read_model(xml), feeds)  # poolir's IR runtime against OpenVINO on the same IR
    for name in names:
        _same(mine[name], got[name], rtol, atol, f"poolir's IR runtime {name}")
    if round_trip:
        back = onnxruntime_run(ir_to_onnx(ir.read_model(xml)), feeds)
        for name in names:
            _same(back[name], expected[name], rtol, atol, f"round trip {name}")
    return converted


def _same(got, expected, rtol, atol, what):
    assert tuple(got.shape) == tuple(expected.shape), f"{what}: shape {got.shape} != {expected.shape}"
    if np.issubdtype(expected.dtype, np.integer) or expected.dtype == np.bool_:
        np.testing.assert_array_equal(got.astype(expected.dtype), expected, err_msg=what)
    else:
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


# -- elementwise ---------------------------------------------------------------------------------------

SHAPE_PAIRS = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((1, 3, 1), (2, 1, 5)), ((3, 1), ())]


@pytest.mark.parametrize("op", ["Abs", "Neg", "Floor", "Ceil", "Sqrt", "Reciprocal"])
@pytest.mark.parametrize("elem", [T.FLOAT, T.INT32])
def test_unary(op, elem, tmp_path):
    if elem == T.INT32 and op in ("Floor", "Ceil", "Sqrt", "Reciprocal"):
        pytest.skip("ONNX defines it for floats only")
    model = single(op, [(elem, (2, 3, 5))], opset=13)
    feeds = feeds_for(model, np.random.default_rng(1))
    x = feeds["x0"]
    if op == "Sqrt":
        feeds["x0"] = np.abs(x)
    if elem == T.FLOAT:
        x = feeds["x0"]
        x.reshape(-1)[:6] = [-0.0, 0.0, -0.5, 0.5, 2.5, -2.5] if op != "Sqrt" else [0, 0, 0.5, 0.5, 2.5, 2.5]
    check(model, tmp_path, feeds)


# Every op for float32 over every broadcast; the integer types on the other broadcasts only in CI (slow).
BINARY_GRID = [pytest.param(elem, shapes, id=f"{elem}-{shapes}",
                            marks=[pytest.mark.slow] if elem != T.FLOAT and shapes != SHAPE_PAIRS[1] else [])
               for elem in (T.FLOAT, T.INT32, T.INT64) for shapes in SHAPE_PAIRS]


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"])
@pytest.mark.parametrize("elem,shapes", BINARY_GRID)
def test_binary(op, elem, shapes, tmp_path):
    opset = 13 if op not in ("Max", "Min") else 13
    model = single(op, [(elem, shapes[0]), (elem, shapes[1])], opset=opset)
    rng = np.random.default_rng(hash((op, elem, shapes)) % 2 ** 32)
    feeds = feeds_for(model, rng)
    if op == "Div" and elem != T.FLOAT:
        feeds["x1"][feeds["x1"] == 0] = 3
    if op == "Pow":
        x0, x1 = feeds["x0"], feeds["x1"]
        feeds["x1"] = np.asarray(np.abs(x1) % 4 if elem != T.FLOAT else np.round(x1), dtype=x1.dtype)
        feeds["x0"] = np.asarray(x0 % 6 if elem != T.FLOAT else np.abs(x0) + 0.5, dtype=x0.dtype)
    check(model, tmp_path, feeds, rtol=1e-5 if op == "Pow" else 1e-6)


def test_integer_div_truncates(tmp_path):
    """ONNX integer Div truncates (onnxruntime: [-7, 7] / [2, -2] -> [-3, -3]), OpenVINO Divide floors unless
    m_pythondiv=false: poolir writes false."""
    model = single("Div", [(T.INT32, (4,)), (T.INT32, (4,))])
    feeds = {"x0": np.array([-7, 7, -8, 5], np.int32), "x1": np.array([2, -2, 3, 5], np.int32)}
    converted = check(model, tmp_path, feeds)
    assert onnxruntime_run(model, feeds)["y0"].tolist() == [-3, -3, -2, 1]
    (divide,) = [layer for layer in converted.layers if layer.type == "Divide"]
    assert divide.attrs["m_pythondiv"] is False


def test_pow_integer_exponent(tmp_path):
    model = single("Pow", [(T.FLOAT, (2, 3)), (T.INT64, (3,))], opset=15)
    feeds = {"x0": np.array([[1.5, -2, 3], [0.5, 4, -1]], np.float32), "x1": np.array([2, 3, 0], np.int64)}
    check(model, tmp_path, feeds)


@pytest.mark.parametrize("base,exponent,values", [(T.FLOAT16, np.float32, [2.0, 0.5]),
                                                   (T.FLOAT16, np.float64, [3.0, -1.0]),
                                                   (T.FLOAT, np.float64, [0.5, 2.0])])
def test_pow_constant_float_exponent_of_another_type(base, exponent, values, tmp_path):
    """Pow-12+ takes an exponent of its own type: a constant one that the base's type holds exactly (f16 ** f32
    2.0) converts exactly; it was refused ("converting the exponent would round it"; found by the graph fuzzer)."""
    weights = numpy_helper.from_array(np.array(values, exponent), "x1")
    model = single("Pow", [(base, (2, 2)), (T.FLOAT, (2,))], opset=15, initializers=[weights])
    feeds = {"x0": np.array([[1.5, 2.25], [3.0, 0.75]], _NP[base])}
    check(model, tmp_path, feeds, rtol=1e-3 if base == T.FLOAT16 else 1e-6)


def test_pow_constant_exponent_the_base_type_rounds_is_refused():
    weights = numpy_helper.from_array(np.array([0.1, 2.0], np.float32), "x1")
    model = single("Pow", [(T.FLOAT16, (2, 2)), (T.FLOAT, (2,))], opset=15, initializers=[weights])
    with pytest.raises(PoolirError, match="converting the exponent would round it"):
        onnx_to_ir(model)


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("elem", [T.INT32, T.INT64])
def test_integer_mod(fmod, elem, tmp_path):
    """fmod=0 takes the divisor's sign (FloorMod), fmod=1 the dividend's (C fmod)."""
    model = single("Mod", [(elem, (8,)), (elem, (8,))], fmod=fmod)
    dtype = _NP[elem]
    feeds = {"x0": np.array([-7, 7, -7, 7, 0, 5, -5, 13], dtype), "x1": np.array([3, 3, -3, -3, 2, 5, 2, -4], dtype)}
    check(model, tmp_path, feeds)


def test_float_mod_refused():
    model = single("Mod", [(T.FLOAT, (3,)), (T.FLOAT, (3,))], fmod=1)
    with pytest.raises(ConversionError, match="Mod"):
        onnx_to_ir(model)


@pytest.mark.parametrize("op", ["Sum", "Mean", "Max", "Min"])
@pytest.mark.parametrize("count", [1, 2, 3, 4])
def test_variadic(op, count, tmp_path):
    shapes = [(2, 3, 4), (3, 1), (4,), (1, 1, 1)][:count]
    model = single(op, [(T.FLOAT, s) for s in shapes], opset=13)
    if count == 1:
        model.graph.node.append(helper.make_node("Identity", ["y0"], ["unused"]))
    check(model, tmp_path)


CASTS = [(T.FLOAT, T.INT32), (T.FLOAT, T.INT64), (T.FLOAT, T.UINT8), (T.FLOAT, T.INT8), (T.INT32, T.FLOAT),
         (T.INT32, T.UINT8), (T.INT32, T.INT8), (T.INT64, T.INT32), (T.FLOAT, T.FLOAT16), (T.FLOAT16, T.FLOAT),
         (T.UINT8, T.INT8), (T.FLOAT, T.DOUBLE)]


@pytest.mark.parametrize("source,target", CASTS, ids=str)
def test_cast(source, target, tmp_path):
    """Truncation toward zero and integer wrap-around in both engines (values inside the target's range for
    float -> integer, where ONNX defines the result)."""
    model = single("Cast", [(source, (12,))], to=target, out_type=target)
    dtype = _NP[source]
    if np.issubdtype(dtype, np.integer):
        x = np.array([300, -1, 127, 128, -129, 0, 5, -5, 255, 1000, -1000, 7], np.int64)
        info = np.iinfo(dtype)
        x = np.clip(x, info.min, info.max).astype(dtype)
    else:
        x = np.array([-1.7, 1.5, 2.5, -2.5, 0.5, -0.5, 126.9, 0.0, 3.99, 7e4 if target == T.FLOAT16 else 9, 1e-8, 2],
                     dtype)
        if _NP[target] == np.uint8:
            x = np.abs(x)
    check(model, tmp_path, {"x0": x}, round_trip=not (np.issubdtype(dtype, np.floating)
                                                      and np.issubdtype(_NP[target], np.integer)))
    model = single("CastLike", [(source, (12,)), (target, (1,))], opset=15, out_type=target)
    check(model, tmp_path, {"x0": x, "x1": np.zeros(1, _NP[target])},
          round_trip=not (np.issubdtype(dtype, np.floating) and np.issubdtype(_NP[target], np.integer)))


# -- movement ----------------------------------------------------------------------------------------------

def test_transpose(tmp_path):
    rng = random.Random(3)
    for rank in (1, 2, 3, 4):
        perm = list(range(rank))
        rng.shuffle(perm)
        shape = tuple(rng.randint(1, 4) for _ in range(rank))
        check(single("Transpose", [(T.FLOAT, shape)], perm=perm), tmp_path)
        check(single("Transpose", [(T.FLOAT, shape)]), tmp_path)


@pytest.mark.parametrize("target,allowzero", [((0, -1), 0), ((2, 0, 4), 0), ((-1,), 0), ((4, 3, 2), 1),
                                              ((0, 12), 0), ((2, 3, 4, 1), 1)], ids=str)
def test_reshape(target, allowzero, tmp_path):
    """ONNX allowzero=0 copies a dim for a 0 (IR special_zero=true); allowzero=1 keeps 0 literal."""
    shape = numpy_helper.from_array(np.array(target, np.int64), "x1")
    attrs = {"allowzero": allowzero} if allowzero else {}
    check(single("Reshape", [(T.FLOAT, (2, 3, 4)), (T.INT64, (len(target),))], opset=14, initializers=[shape],
                 **attrs), tmp_path)


def test_reshape_allowzero_empty(tmp_path):
    shape = numpy_helper.from_array(np.array([0, 4], np.int64), "x1")
    model = single("Reshape", [(T.FLOAT, (0, 4)), (T.INT64, (2,))], opset=14, initializers=[shape], allowzero=1)
    converted = onnx_to_ir(model)
    assert [layer.attrs["special_zero"] for layer in converted.layers if layer.type == "Reshape"] == [False]


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(axis, tmp_path):
    shapes = [(2, 3, 4), (2, 3, 4), (2, 3, 4)]
    check(single("Concat", [(T.FLOAT, s) for s in shapes], axis=axis), tmp_path)


@pytest.mark.parametrize("opset,attrs,split,outputs,length", [
    (11, {"axis": 1}, None, 3, 6), (11, {"axis": 1, "split": [1, 2, 3]}, None, 3, 6),
    (13, {"axis": -1}, [2, 4], 2, 6), (13, {"axis": 1}, None, 2, 6), (18, {"axis": 1, "num_outputs": 3}, None, 3, 7),
    (18, {"axis": 1, "num_outputs": 2}, None, 2, 6), (18, {"axis": 0}, [1, 1], 2, 6)], ids=str)
def test_split(opset, attrs, split, outputs, length, tmp_path):
    shape = (2, length) if attrs.get("axis") != 0 else (2, length)
    init = [numpy_helper.from_array(np.array(split, np.int64), "x1")] if split else []
    inputs = [(T.FLOAT, shape)] + ([(T.INT64, (len(split),))] if split else [])
    check(single("Split", inputs, n_outputs=outputs, opset=opset, initializers=init, **attrs), tmp_path)


SLICES = [([0], [2], [0], [1]), ([1, 0], [-1, 100], [1, 2], [1, 2]), ([-1], [-100], [2], [-1]),
          ([5], [0], [1], [-2]), ([0, 0, 0], [2, 3, 4], None, None), ([2], [2 ** 62], [-1], [1])]


@pytest.mark.parametrize("starts,ends,axes,steps", SLICES, ids=str)
def test_slice(starts, ends, axes, steps, tmp_path):
    arrays = [np.array(v, np.int64) for v in (starts, ends, axes, steps) if v is not None]
    names = ["x1", "x2", "x3", "x4"][:len(arrays)]
    init = [numpy_helper.from_array(a, n) for a, n in zip(arrays, names)]
    inputs = [(T.FLOAT, (3, 5, 6))] + [(T.INT64, a.shape) for a in arrays]
    check(single("Slice", inputs, opset=13, initializers=init), tmp_path)
    if steps is None or all(s == 1 for s in steps):
        attrs = {"starts": starts, "ends": ends, **({"axes": axes} if axes is not None else {})}
        check(single("Slice", [(T.FLOAT, (3, 5, 6))], opset=9, **attrs), tmp_path)


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("axes", [None, [0], [0, -1]], ids=str)
def test_squeeze_unsqueeze(opset, axes, tmp_path):
    if opset >= 13 and axes is not None:
        init = [numpy_helper.from_array(np.array(axes, np.int64), "x1")]
        inputs = [(T.FLOAT, (1, 3, 1)), (T.INT64, (len(axes),))]
        check(single("Squeeze", inputs, opset=opset, initializers=init), tmp_path)
        check(single("Unsqueeze", [(T.FLOAT, (2, 3)), (T.INT64, (len(axes),))], opset=opset, initializers=init),
              tmp_path)
    else:
        attrs = {"axes": axes} if axes is not None else {}
        check(single("Squeeze", [(T.FLOAT, (1, 3, 1))], opset=opset, **attrs), tmp_path)
        if axes is not None:
            check(single("Unsqueeze", [(T.FLOAT, (2, 3))], opset=opset, axes=axes), tmp_path)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("indices", [[0], [2, -1, 0], [[1, 0], [-2, 1]], 1], ids=str)
def test_gather(axis, indices, tmp_path):
    idx = np.array(indices, np.int64)
    init = [numpy_helper.from_array(idx, "x1")]
    check(single("Gather", [(T.FLOAT, (3, 4, 5)), (T.INT64, idx.shape)], initializers=init, axis=axis), tmp_path)
    # indices as a graph input: not folded, a real Gather-8 layer
    check(single("Gather", [(T.FLOAT, (3, 4, 5)), (T.INT64, idx.shape)], axis=axis), tmp_path,
          feeds={"x0": np.arange(60, dtype=np.float32).reshape(3, 4, 5), "x1": idx})


@pytest.mark.parametrize("start,end", [(None, None), (1, None), (-2, None), (0, -1), (-10, 10), (2, 1)], ids=str)
def test_shape(start, end, tmp_path):
    """Shape of a dynamic input stays ShapeOf (+ Slice for start/end), of a static one is folded."""
    attrs = {k: v for k, v in (("start", start), ("end", end)) if v is not None}
    for dims in ((2, 3, 4), ("n", 3, 4)):
        model = single("Shape", [(T.FLOAT, dims)], opset=15, out_type=T.INT64, **attrs)
        feeds = {"x0": np.zeros((2, 3, 4), np.float32)}
        converted = check(model, tmp_path, feeds)
        kinds = {layer.type for layer in converted.layers}
        assert ("ShapeOf" in kinds) == (dims[0] == "n")


@pytest.mark.parametrize("shape,target", [((3, 1), (2, 1, 6)), ((1,), (4,)), ((2, 3), (3,)), ((2, 1, 4), (1, 3, 1))])
def test_expand(shape, target, tmp_path):
    check(single("Expand", [(T.FLOAT, shape), (T.INT64, (len(target),))],
                 initializers=[numpy_helper.from_array(np.array(target, np.int64), "x1")]), tmp_path)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
@pytest.mark.parametrize("opset", [2, 11, 18])
def test_pad(mode, opset, tmp_path):
    pads = [0, 1, 2, 0, 2, 1]
    if opset == 2:
        model = single("Pad", [(T.FLOAT, (2, 3, 4))], opset=2, mode=mode, pads=pads, value=1.5)
    elif opset == 11:
        init = [numpy_helper.from_array(np.array(pads, np.int64), "x1"),
                numpy_helper.from_array(np.array(-2.0, np.float32), "x2")]
        model = single("Pad", [(T.FLOAT, (2, 3, 4)), (T.INT64, (6,)), (T.FLOAT, ())], opset=11, initializers=init,
                       mode=mode)
    else:
        init = [numpy_helper.from_array(np.array([1, 2, 2, 1], np.int64), "x1"),
                numpy_helper.from_array(np.array([-1, 1], np.int64), "x3")]
        model = single("Pad", [(T.FLOAT, (2, 3, 4)), (T.INT64, (4,)), None, (T.INT64, (2,))], opset=18,
                       initializers=init, mode=mode)
    check(model, tmp_path)


# -- reduction --------------------------------------------------------------------------------------------

REDUCE_OPS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
              "ReduceSumSquare"]


@pytest.mark.parametrize("op", REDUCE_OPS)
@pytest.mark.parametrize("opset", [11, 18])
@pytest.mark.parametrize("axes,keepdims", [([1], 1), ([0, -1], 0), (None, 1), (None, 0), ([], 1)], ids=str)
def test_reduce(op, opset, axes, keepdims, tmp_path):
    if opset == 11 and axes == []:
        pytest.skip("an empty axes attribute is the same as none before opset 18 (covered by axes=None)")
    if opset == 11 or (op == "ReduceSum" and opset < 13):
        attrs = {"axes": axes} if axes is not None else {}
        model = single(op, [(T.FLOAT, (2, 3, 4))], opset=opset, keepdims=keepdims, **attrs)
    elif axes is None:
        model = single(op, [(T.FLOAT, (2, 3, 4))], opset=opset, keepdims=keepdims)
    else:
        init = [numpy_helper.from_array(np.array(axes, np.int64), "x1")]
        model = single(op, [(T.FLOAT, (2, 3, 4)), (T.INT64, (len(axes),))], opset=opset, initializers=init,
                       keepdims=keepdims)
    check(model, tmp_path, rtol=1e-5, atol=1e-5)


def test_reduce_noop_with_empty_axes(tmp_path):
    model = single("ReduceSum", [(T.FLOAT, (2, 3))], opset=18, noop_with_empty_axes=1)
    converted = check(model, tmp_path)
    assert not any(layer.type.startswith("Reduce") for layer in converted.layers)
