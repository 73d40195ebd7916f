"""Elu, Selu, Celu, Softplus, Softsign and Mish conversions run by the real engines, never by poolir against itself:

- ONNX -> IR (poolir): OpenVINO runs the IR, onnxruntime the ONNX source;
- OpenVINO's own IR of the ONNX model -> ONNX (poolir): onnxruntime runs the ONNX, OpenVINO the IR;
- ONNX -> IR -> ONNX (poolir both ways): onnxruntime runs both ends;
- IR -> ONNX below opset 18 writes Mish as x * Tanh(Softplus(x)), run by onnxruntime against OpenVINO's Mish.
"""

from __future__ import annotations

import numpy as np
import onnx
import openvino.opset4 as ov4
import pytest

from poolir import ir
from poolir.converter import ir_to_onnx, onnx_to_ir
from poolir.ir.errors import ConversionError
from tests.peers import onnxruntime_run, openvino_convert_to_xml, openvino_run_xml
from tests.runtime.ir_cases import single_layer_ir
from tests.runtime.test_onnx_exponential_activations import _model

CASES = [("Elu", 6, {}), ("Elu", 22, {"alpha": 0.4}), ("Selu", 6, {}), ("Selu", 22, {"alpha": 2.0, "gamma": 0.9}),
         ("Celu", 12, {}), ("Celu", 12, {"alpha": 2.5}), ("Celu", 12, {"alpha": 0.3}), ("Softplus", 1, {}),
         ("Softplus", 22, {}), ("Softsign", 1, {}), ("Mish", 18, {}), ("Mish", 22, {})]
SHAPE = (2, 3, 5)


def _feeds(seed=0):
    return {"x": (np.random.default_rng(seed).standard_normal(SHAPE) * 5).astype(np.float32)}


def _agree(actual, expected, what):
    # The engines' f32 exp/log are within 2e-6 of the exact value; Celu's layers round at each step.
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=3e-6, err_msg=what)


def _id(case):
    return f"{case[0]}-{case[1]}-{case[2]}"


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_onnx_to_ir_run_by_openvino(case, tmp_path):
    op, opset, attrs = case
    model = _model(op, opset, np.float32, SHAPE, attrs)
    feeds = _feeds()
    ir.write_model(onnx_to_ir(model), tmp_path / "model.xml")
    _agree(openvino_run_xml(tmp_path / "model.xml", feeds, ["y"])["y"], onnxruntime_run(model, feeds)["y"],
           "poolir's IR run by OpenVINO")


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_openvino_ir_to_onnx_run_by_onnxruntime(case, tmp_path):
    op, opset, attrs = case
    model = _model(op, opset, np.float32, SHAPE, attrs)
    feeds = _feeds(1)
    xml = openvino_convert_to_xml(model, tmp_path / "openvino.xml")
    back = ir_to_onnx(ir.read_model(xml))
    onnx.checker.check_model(back, full_check=True)
    _agree(onnxruntime_run(back, feeds)["y"], openvino_run_xml(xml, feeds, ["y"])["y"],
           "OpenVINO's IR, as ONNX by poolir, run by onnxruntime")


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_round_trip_run_by_onnxruntime(case):
    op, opset, attrs = case
    model = _model(op, opset, np.float32, SHAPE, attrs)
    feeds = _feeds(2)
    back = ir_to_onnx(onnx_to_ir(model))
    onnx.checker.check_model(back, full_check=True)
    _agree(onnxruntime_run(back, feeds)["y"], onnxruntime_run(model, feeds)["y"], "ONNX -> IR -> ONNX")


def test_written_layer_types():
    """What poolir writes, as OpenVINO's frontend writes it (Celu with alpha 1 is Elu: the same function)."""
    cases = [("Elu", 6, {}, ["Elu"]), ("Selu", 6, {}, ["Selu"]), ("Softplus", 1, {}, ["SoftPlus"]),
             ("Softsign", 1, {}, ["SoftSign"]), ("Mish", 18, {}, ["Mish"]), ("Celu", 12, {}, ["Elu"]),
             ("Celu", 12, {"alpha": 2.0}, ["Maximum", "Divide", "Exp", "Subtract", "Multiply", "Minimum", "Add"])]
    for op, opset, attrs, types in cases:
        converted = onnx_to_ir(_model(op, opset, np.float32, SHAPE, attrs))
        written = [layer.type for layer in converted.layers if layer.type not in ("Parameter", "Result", "Const")]
        assert written == types, (op, opset)


@pytest.mark.parametrize("opset", [13, 17, 18])
def test_mish_before_opset_18_is_its_definition(opset, tmp_path):
    x = np.linspace(-12, 12, 97).astype(np.float32)
    xml = single_layer_ir(ov4.mish, x.shape, np.float32, tmp_path / "model.xml")
    back = ir_to_onnx(ir.read_model(xml), opset=opset)
    ops = [node.op_type for node in back.graph.node]
    assert ops == (["Mish"] if opset >= 18 else ["Softplus", "Tanh", "Mul"])
    name = back.graph.input[0].name
    _agree(onnxruntime_run(back, {name: x})[back.graph.output[0].name],
           next(iter(openvino_run_xml(xml, {"x": x}).values())), f"Mish at opset {opset}")


def test_selu_with_a_non_float32_parameter_is_refused(tmp_path):
    """ONNX Selu's alpha is a float32 attribute; an f64 IR's alpha that float32 cannot hold has no exact ONNX."""
    import openvino as ov
    import openvino.opset1 as ov1

    # openvino.opset1.constant rounds a float64 value through float32; op.Constant keeps it
    alpha, lambda_ = (ov.op.Constant(np.array([v], np.float64)) for v in (1.1, 1.0))
    xml = single_layer_ir(lambda x: ov1.selu(x, alpha, lambda_), (3,), np.float64, tmp_path / "model.xml")
    with pytest.raises(ConversionError, match="float32"):
        ir_to_onnx(ir.read_model(xml))
