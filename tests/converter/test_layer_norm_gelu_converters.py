"""LayerNormalization, Gelu and Erf conversions run by the real engines, never by poolir against itself:

- ONNX -> IR (poolir): OpenVINO runs the IR, onnxruntime the ONNX source.
- IR built with OpenVINO's opset API (MVN-1/6, Gelu-2/7, Erf-1) -> ONNX (poolir) at several opsets: onnxruntime
  runs the ONNX, OpenVINO the IR.
- OpenVINO's own IR of the ONNX model (convert_model) -> ONNX (poolir): onnxruntime runs both ends.
Tolerances carry OpenVINO's f32 approximations of erf and GELU (tests/runtime/test_ir_layer_norm_vs_openvino.py).
"""

from __future__ import annotations

import numpy as np
import onnx
import openvino.opset1 as ov1
import openvino.opset2 as ov2
import openvino.opset6 as ov6
import openvino.opset7 as ov7
import pytest
from onnx import helper, numpy_helper

from poolir import ir
from poolir.converter import ir_to_onnx, onnx_to_ir
from poolir.ir.errors import PoolirError
from tests.peers import onnxruntime_run, openvino_convert_to_xml, openvino_run_xml
from tests.runtime.ir_cases import single_layer_ir

RTOL, ATOL = 1e-3, 2e-6  # OpenVINO's GELU: relative 1e-3 where |y| > 1e-3, absolute 1.2e-6


def _model(nodes, shape, initializers=(), opset=17, dtype=np.float32):
    tensor_type = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", tensor_type, shape)],
                              [helper.make_tensor_value_info("y", tensor_type, None)], list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def _layer_norm(shape, axis, bias=True, dtype=np.float32, epsilon=1e-6, norm_shape=None):
    rng = np.random.default_rng(len(shape) + axis)
    norm = shape[axis:] if norm_shape is None else norm_shape
    inits = [numpy_helper.from_array(rng.standard_normal(norm).astype(dtype), "scale")]
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(norm).astype(dtype), "bias"))
    node = helper.make_node("LayerNormalization", ["x", "scale"] + (["bias"] if bias else []), ["y"], axis=axis,
                            epsilon=epsilon, name="ln")
    return _model([node], shape, inits, dtype=dtype)


def _feed(shape, seed=0, dtype=np.float32):
    return {"x": (np.random.default_rng(seed).standard_normal(shape) * 3 + 1).astype(dtype)}


LAYER_NORM_CASES = [((2, 3, 8), -1, True, None), ((1, 7, 7, 16), -1, True, None), ((2, 5, 4, 6), 1, False, None),
                    ((3, 10), 0, True, None), ((2, 3, 8), -1, True, (1,)), ((4, 6), -2, True, None)]


@pytest.mark.parametrize("shape,axis,bias,norm_shape", LAYER_NORM_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_layer_norm_to_ir_run_by_openvino(shape, axis, bias, norm_shape, dtype, tmp_path):
    model = _layer_norm(list(shape), axis, bias, dtype, norm_shape=norm_shape)
    feeds = _feed(shape, dtype=dtype)
    converted = onnx_to_ir(model)
    assert "MVN" in {layer.type for layer in converted.layers}
    ir.write_model(converted, tmp_path / "m.xml")
    tol = 2e-3 if dtype == np.float16 else 2e-5
    np.testing.assert_allclose(openvino_run_xml(tmp_path / "m.xml", feeds, ["y"])["y"].astype(np.float64),
                               onnxruntime_run(model, feeds)["y"], rtol=tol, atol=tol)


@pytest.mark.parametrize("op,attrs,opset", [("Erf", {}, 9), ("Erf", {}, 13), ("Gelu", {}, 20),
                                            ("Gelu", {"approximate": "tanh"}, 20)])
def test_erf_gelu_to_ir_run_by_openvino(op, attrs, opset, tmp_path):
    model = _model([helper.make_node(op, ["x"], ["y"], **attrs)], [3, 500], opset=opset)
    feeds = _feed((3, 500))
    ir.write_model(onnx_to_ir(model), tmp_path / "m.xml")
    np.testing.assert_allclose(openvino_run_xml(tmp_path / "m.xml", feeds, ["y"])["y"],
                               onnxruntime_run(model, feeds)["y"], rtol=RTOL, atol=ATOL)


def test_layer_norm_statistics_outputs_are_refused():
    model = _layer_norm([2, 3], -1)
    model.graph.node[0].output.append("mean")
    with pytest.raises(PoolirError, match="Mean and InvStdDev"):
        onnx_to_ir(model)


# -- IR -> ONNX -------------------------------------------------------------------------------------------

MVN_CASES = [  # (axes, normalize_variance, eps_mode), on (2, 3, 4, 5)
    ([3], True, "inside_sqrt"), ([1, 2, 3], True, "inside_sqrt"), ([-2, -1], True, "inside_sqrt"),
    ([2, 3], True, "outside_sqrt"), ([1, 3], True, "inside_sqrt"), ([0], False, "inside_sqrt"),
]


@pytest.mark.parametrize("axes,variance,mode", MVN_CASES)
@pytest.mark.parametrize("opset", [13, 17, 18])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_mvn6_to_onnx_run_by_onnxruntime(axes, variance, mode, opset, dtype, tmp_path):
    axes_const = ov1.constant(np.array(axes, np.int64))
    path = single_layer_ir(lambda x: ov6.mvn(x, axes_const, variance, 1e-5, mode), (2, 3, 4, 5), dtype,
                           tmp_path / "m.xml")
    feeds = _feed((2, 3, 4, 5), dtype=dtype)
    back = ir_to_onnx(ir.read_model(path), opset=opset)
    onnx.checker.check_model(back, full_check=True)
    written = {node.op_type for node in back.graph.node}
    trailing = sorted(a % 4 for a in axes) == list(range(min(a % 4 for a in axes), 4))
    assert ("LayerNormalization" in written) == (opset >= 17 and trailing and variance and mode == "inside_sqrt")
    want = next(iter(openvino_run_xml(path, feeds).values()))
    got = next(iter(onnxruntime_run(back, feeds).values()))
    tol = 2e-3 if dtype == "float16" else 1e-5
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


def test_mvn1_to_onnx_run_by_onnxruntime(tmp_path):
    path = single_layer_ir(lambda x: ov2.mvn(x, across_channels=False, normalize_variance=True, eps=1e-9),
                           (2, 3, 4, 5), "float32", tmp_path / "m.xml")
    feeds = _feed((2, 3, 4, 5))
    for opset in (11, 17):
        back = ir_to_onnx(ir.read_model(path), opset=opset)
        np.testing.assert_allclose(next(iter(onnxruntime_run(back, feeds).values())),
                                   next(iter(openvino_run_xml(path, feeds).values())), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name,build", [
    ("Erf-1", lambda x: ov1.erf(x)), ("Gelu-2", lambda x: ov2.gelu(x)),
    ("Gelu-7 erf", lambda x: ov7.gelu(x, "erf")), ("Gelu-7 tanh", lambda x: ov7.gelu(x, "tanh")),
])
@pytest.mark.parametrize("opset", [13, 20])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_erf_gelu_to_onnx_run_by_onnxruntime(name, build, opset, dtype, tmp_path):
    path = single_layer_ir(build, (4, 300), dtype, tmp_path / "m.xml")
    feeds = _feed((4, 300), dtype=dtype)
    back = ir_to_onnx(ir.read_model(path), opset=opset)
    onnx.checker.check_model(back, full_check=True)
    assert ("Gelu" in {node.op_type for node in back.graph.node}) == (opset >= 20 and "Gelu" in name)
    want = next(iter(openvino_run_xml(path, feeds).values())).astype(np.float64)
    got = next(iter(onnxruntime_run(back, feeds).values())).astype(np.float64)
    rtol, atol = (RTOL, ATOL) if dtype == "float32" else (2e-3, 4e-3)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("shape,axis", [((2, 3, 8), -1), ((2, 5, 4, 6), 1)])
def test_openvino_ir_of_layer_norm_to_onnx(shape, axis, tmp_path):
    """OpenVINO's own frontend writes LayerNormalization as MVN-6 + Multiply + Add; poolir folds them back into
    one LayerNormalization (opset 17; the formula before it), which runs in onnxruntime to the source model's
    numbers."""
    model = _layer_norm(list(shape), axis)
    feeds = _feed(shape)
    xml = openvino_convert_to_xml(model, tmp_path / "ov.xml")
    assert "MVN" in {layer.type for layer in ir.read_model(xml).layers}
    older = ir_to_onnx(ir.read_model(xml), opset=13)
    np.testing.assert_allclose(onnxruntime_run(older, feeds)["y"], onnxruntime_run(model, feeds)["y"],
                               rtol=2e-5, atol=2e-5)
    back = ir_to_onnx(ir.read_model(xml), opset=17)
    assert [node.op_type for node in back.graph.node] == ["LayerNormalization"]
    np.testing.assert_allclose(onnxruntime_run(back, feeds)["y"], onnxruntime_run(model, feeds)["y"],
                               rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("scale_shape,folded", [((5,), True), ((1, 5), True), ((4, 1), False), ((3, 1, 1), False)])
def test_mvn_multiply_add_fold_only_over_the_normalised_axes(scale_shape, folded, tmp_path):
    """MVN over the last axis, then Multiply and Add by constants: one LayerNormalization when the constants
    span the normalised axes only; else LayerNormalization, Mul and Add. onnxruntime agrees with OpenVINO."""
    rng = np.random.default_rng(4)

    def build(x):
        normal = ov6.mvn(x, ov1.constant(np.array([-1], np.int64)), True, 1e-5, "inside_sqrt")
        scaled = ov1.multiply(normal, ov1.constant(rng.standard_normal(scale_shape).astype(np.float32)))
        return ov1.add(scaled, ov1.constant(rng.standard_normal(scale_shape).astype(np.float32)))
    path = single_layer_ir(build, (2, 3, 4, 5), "float32", tmp_path / "m.xml")
    back = ir_to_onnx(ir.read_model(path), opset=17)
    assert ([node.op_type for node in back.graph.node] == ["LayerNormalization"]) == folded
    feeds = _feed((2, 3, 4, 5))
    np.testing.assert_allclose(next(iter(onnxruntime_run(back, feeds).values())),
                               next(iter(openvino_run_xml(path, feeds).values())), rtol=1e-5, atol=1e-5)
