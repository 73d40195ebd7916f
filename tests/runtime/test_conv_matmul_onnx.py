"""ONNX Conv, Gemm and MatMul in poolir's ONNX runtime, against independent oracles.

Oracles: the onnx package's backend node test cases (every Conv, Gemm and MatMul case that the generator
modules conv.py, gemm.py and matmul.py write, at their own opset and at every older opset whose row
accepts them), and onnxruntime (CPU, one thread, no graph optimisation) on seeded attribute grids.
onnxruntime refuses SAME_UPPER / SAME_LOWER with dilations > 1 ("Dilation not supported for
AutoPadType::SAME_UPPER"), so those grid cases use onnx.reference, whose Conv implements the spec's formula.
"""

from __future__ import annotations

import importlib

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from poolir import runtime
from poolir.ir.errors import PoolirError
from poolir.runtime.onnx_ops import OP_VERSIONS, op_version
from tests.peers import onnxruntime_run

OPS = ("Conv", "Gemm", "MatMul")


def _backend_cases():
    import onnx.backend.test.case.node as node_cases

    for module in ("conv", "gemm", "matmul"):
        importlib.import_module(f"onnx.backend.test.case.node.{module}")
    return {case.name: case for case in node_cases._NodeTestCases if case.model.graph.node[0].op_type in OPS}


BACKEND_CASES = _backend_cases()


def test_every_generator_case_is_collected():
    # onnx 1.23: 6 Conv, 11 Gemm, 7 MatMul cases
    counts = {op: sum(case.model.graph.node[0].op_type == op for case in BACKEND_CASES.values()) for op in OPS}
    assert counts["Conv"] >= 6 and counts["Gemm"] >= 11 and counts["MatMul"] >= 7, counts


def _check(result: dict, outputs, names, rtol=1e-5, atol=1e-6):
    assert list(result) == names
    for name, want in zip(names, outputs):
        got = result[name]
        assert got.shape == want.shape and got.dtype == want.dtype, name
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol)


def _opset(model) -> int:
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


@pytest.mark.parametrize("name", sorted(BACKEND_CASES))
def test_backend_case_at_every_opset_that_accepts_it(name):
    case = BACKEND_CASES[name]
    graph = case.model.graph
    node = graph.node[0]
    inputs, outputs = case.data_sets[0]
    feeds = {value.name: array for value, array in zip(graph.input, inputs)}
    used = {attribute.name for attribute in node.attribute}
    ran = 0
    for row in OP_VERSIONS[node.op_type]:
        if row.since > _opset(case.model) or not used <= set(row.attributes):
            continue
        if row.dtypes is not None and inputs[0].dtype not in row.dtypes:
            continue
        if node.op_type == "Gemm" and len(node.input) < 3 and row.since < 11:
            continue  # C is required before Gemm-11
        if "broadcast" in row.attributes and len(node.input) == 3 and inputs[2].shape != outputs[0].shape:
            continue  # before Gemm-7, a C that needs broadcasting needs broadcast=1, which the case does not set
        model = onnx.ModelProto.FromString(case.model.SerializeToString())
        del model.opset_import[:]
        model.opset_import.append(helper.make_opsetid("", row.since))
        _check(runtime.run(model, feeds), list(outputs), [o.name for o in graph.output], case.rtol, case.atol)
        ran += 1
    assert ran >= 1


# ----------------------------------------------------------------------------------------------------
# Seeded grids against onnxruntime

_TYPES = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.float16: TensorProto.FLOAT16}


def _model(node, inputs, initializers, opset):
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, _TYPES[a.dtype.type], a.shape)
                                            for n, a in inputs],
                              [helper.make_tensor_value_info("y", _TYPES[inputs[0][1].dtype.type], None)],
                              [numpy_helper.from_array(a, n) for n, a in initializers])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def conv_case(seed: int):
    """A random Conv model and feeds: rank 1-3, group, strides, dilations, pads or an auto_pad mode, bias."""
    r = np.random.default_rng(seed)
    rank = int(r.choice([1, 2, 2, 2, 3]))
    group = int(r.choice([1, 1, 2, 3])) if r.random() > 0.2 else None
    g = group or 1
    depthwise = r.random() < 0.2
    c_per = 1 if depthwise else int(r.integers(1, 4))
    m_per = 1 if depthwise and r.random() < 0.7 else int(r.integers(1, 4))
    if depthwise:
        g = group = int(r.integers(2, 5))
    kernel = [int(k) for k in r.integers(1, 4, rank)]
    strides = [int(s) for s in r.integers(1, 4, rank)]
    dilations = [int(d) for d in r.integers(1, 3, rank)]
    auto_pad = str(r.choice(["NOTSET", "NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"]))
    spatial = [int(max((k - 1) * d + 1, int(r.integers(1, 10 if rank < 3 else 7)))) for k, d in zip(kernel, dilations)]
    dtype = np.float64 if seed % 11 == 0 else np.float16 if seed % 13 == 0 else np.float32
    x = r.standard_normal([int(r.integers(1, 3)), c_per * g, *spatial]).astype(dtype)
    w = r.standard_normal([m_per * g, c_per, *kernel]).astype(dtype)
    attrs = {}
    if group is not None:
        attrs["group"] = group
    if r.random() < 0.7:
        attrs["strides"] = strides
    if r.random() < 0.6:
        attrs["dilations"] = dilations
    if r.random() < 0.5:
        attrs["kernel_shape"] = kernel
    if auto_pad == "NOTSET":
        if r.random() < 0.8:
            attrs["pads"] = [int(p) for p in r.integers(0, 3, 2 * rank)]
    else:
        attrs["auto_pad"] = auto_pad
    inputs = [("x", x)]
    initializers = [("w", w)]
    names = ["x", "w"]
    if r.random() < 0.6:
        initializers.append(("b", r.standard_normal(m_per * g).astype(dtype)))
        names.append("b")
    if r.random() < 0.2:  # weights as a graph input instead of an initializer
        inputs.append(initializers.pop(0))
    opset = int(r.choice([OP_VERSIONS["Conv"][i].since for i in range(len(OP_VERSIONS["Conv"]))] + [13, 17]))
    model = _model(helper.make_node("Conv", names, ["y"], **attrs), inputs, initializers, opset)
    return model, dict(inputs), attrs


CONV_SEEDS = range(200)


def _restamped(model, opset: int):
    copy = onnx.ModelProto.FromString(model.SerializeToString())
    del copy.opset_import[:]
    copy.opset_import.append(helper.make_opsetid("", opset))
    return copy


def oracle(model, feeds):
    """onnxruntime where it runs the case, else onnx.reference:

    - onnxruntime has no Gemm-1/6 kernel, and onnx.reference's Gemm_6 ignores beta when broadcast=0 (it
      adds C unscaled): the case runs as Gemm-7 without `broadcast`. That is the same computation: the
      grid gives legacy versions only C shapes that broadcast=1 allows (element size 1, or a suffix of
      [M, N]) or that need no broadcasting;
    - onnxruntime inserts an opset-6 Cast into float16 models older than opset 6 and then fails; the
      model is run at the op's next version instead (Conv-11: text clarified; MatMul-9: integer types added);
    - onnxruntime has no float64 Conv, and refuses SAME with dilations (see the module docstring).
    """
    node = model.graph.node[0]
    opset = _opset(model)
    if node.op_type == "Gemm" and "broadcast" in op_version("Gemm", opset).attributes:
        model = _restamped(model, 7)
        kept = [a for a in model.graph.node[0].attribute if a.name != "broadcast"]
        del model.graph.node[0].attribute[:]
        model.graph.node[0].attribute.extend(kept)
        return onnxruntime_run(model, feeds)
    if opset < 7:
        model = _restamped(model, next(row.since for row in OP_VERSIONS[node.op_type] if row.since >= 7))
    if node.op_type == "Conv":
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        auto_pad = attrs.get("auto_pad", b"NOTSET").decode()
        dilated_same = auto_pad.startswith("SAME") and any(d > 1 for d in attrs.get("dilations", ()))
        if dilated_same or feeds["x"].dtype == np.float64:
            from onnx.reference import ReferenceEvaluator
            return {"y": ReferenceEvaluator(model).run(None, feeds)[0]}
    return onnxruntime_run(model, feeds)


def _tolerance(dtype):
    return dict(rtol=2e-3, atol=2e-3) if dtype == np.float16 else dict(rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("seed", CONV_SEEDS)
def test_conv_grid_against_onnxruntime(seed):
    model, feeds, attrs = conv_case(seed)
    want = oracle(model, feeds)["y"]
    got = runtime.run(model, feeds)["y"]
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), **_tolerance(got.dtype))


def gemm_case(seed: int):
    r = np.random.default_rng(10_000 + seed)
    rows, inner, cols = (int(v) for v in r.integers(1, 7, 3))
    trans_a, trans_b = int(r.integers(0, 2)), int(r.integers(0, 2))
    dtype = np.float64 if seed % 7 == 0 else np.float16 if seed % 9 == 0 else np.float32
    a = r.standard_normal((inner, rows) if trans_a else (rows, inner)).astype(dtype)
    b = r.standard_normal((cols, inner) if trans_b else (inner, cols)).astype(dtype)
    versions = [row.since for row in OP_VERSIONS["Gemm"]]
    opset = int(r.choice(versions))
    legacy = "broadcast" in op_version("Gemm", opset).attributes
    shapes = [(rows, cols), (cols,), (), (1,)] if legacy else [(rows, cols), (cols,), (1, cols), (rows, 1), (), (1, 1)]
    c_shape = shapes[int(r.integers(0, len(shapes)))]
    attrs = {}
    if r.random() < 0.6:
        attrs["alpha"] = float(r.choice([0.5, 2.0, -1.25, 1.0, 0.0]))
    if r.random() < 0.6:
        attrs["beta"] = float(r.choice([0.5, 2.0, -1.25, 1.0, 0.0]))
    if trans_a or r.random() < 0.3:
        attrs["transA"] = trans_a
    if trans_b or r.random() < 0.3:
        attrs["transB"] = trans_b
    if legacy:
        if c_shape != (rows, cols):
            attrs["broadcast"] = 1
        elif r.random() < 0.5:
            attrs["broadcast"] = int(r.integers(0, 2))
    with_c = opset < 11 or r.random() < 0.8
    inputs, initializers = [("a", a)], [("b", b)]
    names = ["a", "b"]
    if with_c:
        c = r.standard_normal(c_shape).astype(dtype)
        # a 0-d C stays an initializer: OpenVINO's Python API turns a 0-d feed into shape [1]
        (initializers if r.random() < 0.7 or c.ndim == 0 else inputs).append(("c", c))
        names.append("c")
    return _model(helper.make_node("Gemm", names, ["y"], **attrs), inputs, initializers, opset), dict(inputs)


GEMM_SEEDS = range(80)


@pytest.mark.parametrize("seed", GEMM_SEEDS)
def test_gemm_grid_against_onnxruntime(seed):
    model, feeds = gemm_case(seed)
    want = oracle(model, feeds)["y"]
    got = runtime.run(model, feeds)["y"]
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), **_tolerance(got.dtype))


MATMUL_SHAPES = [((3,), (3,)), ((3,), (3, 4)), ((4, 3), (3,)), ((2, 3), (3, 5)), ((2, 4, 3), (3, 5)),
                 ((3,), (2, 3, 4)), ((2, 1, 4, 3), (5, 3, 6)), ((1, 2, 3), (4, 1, 3, 2)), ((2, 3, 4), (4,)),
                 ((1, 1), (1, 1)), ((5, 2, 3), (5, 3, 2))]


def matmul_case(seed: int):
    r = np.random.default_rng(20_000 + seed)
    sa, sb = MATMUL_SHAPES[seed % len(MATMUL_SHAPES)]
    dtype = [np.float32, np.float64, np.float16][seed // len(MATMUL_SHAPES) % 3]
    opset = int(r.choice([row.since for row in OP_VERSIONS["MatMul"]]))
    a, b = r.standard_normal(sa).astype(dtype), r.standard_normal(sb).astype(dtype)
    inputs, initializers = [("a", a)], []
    (inputs if r.random() < 0.5 else initializers).append(("b", b))
    return _model(helper.make_node("MatMul", ["a", "b"], ["y"]), inputs, initializers, opset), dict(inputs)


MATMUL_SEEDS = range(3 * len(MATMUL_SHAPES))


@pytest.mark.parametrize("seed", MATMUL_SEEDS)
def test_matmul_grid_against_onnxruntime(seed):
    model, feeds = matmul_case(seed)
    want = oracle(model, feeds)["y"]
    got = runtime.run(model, feeds)["y"]
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), **_tolerance(got.dtype))


# ----------------------------------------------------------------------------------------------------
# Refusals, each named

@pytest.mark.parametrize("attrs, shapes, message", [
    ({"kernel_shape": [2, 2]}, ((1, 2, 5, 5), (3, 2, 3, 3)), "kernel_shape"),
    ({"group": 2}, ((1, 3, 5, 5), (4, 1, 3, 3)), "group"),
    ({"pads": [1, 1]}, ((1, 2, 5, 5), (3, 2, 3, 3)), "pads"),
    ({"auto_pad": "SAME_UPPER", "pads": [1, 1, 1, 1]}, ((1, 2, 5, 5), (3, 2, 3, 3)), "pads"),
    ({"strides": [0, 1]}, ((1, 2, 5, 5), (3, 2, 3, 3)), "strides"),
    ({"auto_pad": "FOO"}, ((1, 2, 5, 5), (3, 2, 3, 3)), "auto_pad"),
    ({}, ((1, 2, 2, 2), (3, 2, 3, 3)), "output length"),
])
def test_conv_refusals_name_the_attribute(attrs, shapes, message):
    x = np.zeros(shapes[0], np.float32)
    w = np.zeros(shapes[1], np.float32)
    model = _model(helper.make_node("Conv", ["x", "w"], ["y"], **attrs), [("x", x)], [("w", w)], 13)
    with pytest.raises(PoolirError, match=message):
        runtime.run(model, {"x": x})


def test_gemm_refuses_c_that_does_not_broadcast_and_missing_c_before_11():
    a, b = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    model = _model(helper.make_node("Gemm", ["a", "b", "c"], ["y"]), [("a", a)],
                   [("b", b), ("c", np.ones((3,), np.float32))], 13)
    with pytest.raises(PoolirError, match="broadcast"):
        runtime.run(model, {"a": a})
    model = _model(helper.make_node("Gemm", ["a", "b", "c"], ["y"]), [("a", a)],
                   [("b", b), ("c", np.ones((4,), np.float32))], 6)
    with pytest.raises(PoolirError, match="broadcast=0"):
        runtime.run(model, {"a": a})
    model = _model(helper.make_node("Gemm", ["a", "b"], ["y"]), [("a", a)], [("b", b)], 9)
    with pytest.raises(PoolirError, match="C"):
        runtime.run(model, {"a": a})
