"""Activation conversions run by the real engines, never by poolir against itself:

- ONNX -> IR (poolir): OpenVINO runs the IR, onnxruntime the ONNX source; they must agree.
- OpenVINO's own IR of the ONNX model (convert_model + save_model) -> ONNX (poolir): onnxruntime runs the
  ONNX, OpenVINO the IR.
- ONNX -> IR -> ONNX (poolir both ways): onnxruntime runs both ends.
- OpenVINO's own frontend on Softmax-11 (wrong) and on the SqueezeNet-style 4-D Softmax-1 (right), pinned.
Inputs are finite: NaN (and +inf for softmax) is where the engines differ (runtime/ir_ops/activation.py).
"""

from __future__ import annotations

import random

import numpy as np
import onnx
import pytest
from onnx import helper

from poolir import ir
from poolir.converter import ir_to_onnx, onnx_to_ir
from poolir.ir.errors import ConversionError
from tests.peers import onnxruntime_run, openvino_convert_to_xml, openvino_run_onnx, openvino_run_xml
from tests.runtime.test_onnx_activation import _model as one_node_model


def _model(op, opset, shape, attrs=None, extra=(), dtype=np.float32, dims=None):
    """test_onnx_activation's one-node model, its node named "act" (converter messages name it)."""
    model = one_node_model(op, opset, dtype, dims or shape, attrs or {}, extra)
    model.graph.node[0].name = "act"
    return model


def _grid(count=120, seed=99):
    """(op, opset, shape, attrs, extra) drawn over every op and the opsets onnxruntime runs."""
    rng = random.Random(seed)
    ops = {"Relu": (6, 14), "Clip": (6, 11, 13), "Sigmoid": (6, 13), "Tanh": (6, 13), "HardSigmoid": (6, 22),
           "HardSwish": (14,), "LeakyRelu": (6, 16), "PRelu": (7, 16), "Softmax": (1, 11, 13),
           "LogSoftmax": (1, 11, 13)}
    cases = []
    names = sorted(ops)
    for index in range(count):
        op = names[index % len(names)]
        opset = rng.choice(ops[op])
        rank = rng.randint(2 if op in ("Softmax", "LogSoftmax") else 1, 4)
        shape = tuple(rng.randint(1, 5) for _ in range(rank))
        attrs, extra = {}, []
        if op == "Clip":
            low, high = sorted(rng.sample(range(-5, 6), 2))
            if opset < 11:
                attrs = {"min": float(low), "max": float(high)}
            else:
                if rng.random() < 0.2:
                    low, high = high, low
                extra = [("lo", np.float32(low) if rng.random() < 0.8 else None), ("hi", np.float32(high))]
        elif op in ("HardSigmoid", "LeakyRelu"):
            attrs = {"alpha": rng.choice((0.1, 0.3))} if rng.random() < 0.5 else {}
        elif op == "PRelu":
            slope_shape = rng.choice([(1,), shape[-1:], shape])
            extra = [("slope", np.random.default_rng(index).standard_normal(slope_shape).astype(np.float32))]
        elif op in ("Softmax", "LogSoftmax") and rng.random() < 0.8:
            attrs = {"axis": rng.randrange(-rank, rank)}
        cases.append((op, opset, shape, attrs, extra, rng.randrange(2 ** 31)))
    return cases


GRID = _grid()
FAST = 20  # the first FAST cases run always; the rest are marked slow (each OpenVINO compile costs ~0.3 s)


def _params(cases, offset=0, step=1):
    return [pytest.param(case, marks=() if offset + step * index < FAST else pytest.mark.slow)
            for index, case in enumerate(cases)]


def _feed(shape, seed):
    return {"x": (np.random.default_rng(seed).standard_normal(shape) * 4).astype(np.float32)}


def _agree(actual, expected, what):
    # Both engines' f32 exp/tanh/sigmoid are approximations a few 1e-7 from the truth.
    np.testing.assert_allclose(actual, expected, rtol=2e-5, atol=2e-6, err_msg=what)


def _case_id(case):
    op, opset, shape, attrs, extra, _ = case
    return f"{op}-{opset}-{shape}-{attrs}-{[n for n, v in extra if v is not None]}"


@pytest.mark.parametrize("case", _params(GRID), ids=_case_id)
def test_onnx_to_ir_run_by_openvino(case, tmp_path):
    op, opset, shape, attrs, extra, seed = case
    model = _model(op, opset, shape, attrs, extra)
    feeds = _feed(shape, seed)
    expected = onnxruntime_run(model, feeds)["y"]
    ir.write_model(onnx_to_ir(model), tmp_path / "model.xml")
    _agree(openvino_run_xml(tmp_path / "model.xml", feeds, ["y"])["y"], expected, "poolir's IR run by OpenVINO")


# convert_model costs ~1.3 s a case: one case per op always, fifty more when slow tests run.
@pytest.mark.parametrize("case", [*GRID[:10], *(pytest.param(c, marks=pytest.mark.slow) for c in GRID[10:60])],
                         ids=_case_id)
def test_openvino_ir_to_onnx_run_by_onnxruntime(case, tmp_path):
    op, opset, shape, attrs, extra, seed = case
    model = _model(op, opset, shape, attrs, extra)
    feeds = _feed(shape, seed)
    xml = openvino_convert_to_xml(model, tmp_path / "openvino.xml")
    expected = openvino_run_xml(xml, feeds, ["y"])["y"]
    back = ir_to_onnx(ir.read_model(xml))
    onnx.checker.check_model(back, full_check=True)
    _agree(onnxruntime_run(back, feeds)["y"], expected, "OpenVINO's IR, as ONNX by poolir, run by onnxruntime")


@pytest.mark.parametrize("case", GRID[1::2], ids=_case_id)
def test_round_trip_run_by_onnxruntime(case):
    op, opset, shape, attrs, extra, seed = case
    model = _model(op, opset, shape, attrs, extra)
    feeds = _feed(shape, seed)
    back = ir_to_onnx(onnx_to_ir(model))
    onnx.checker.check_model(back, full_check=True)
    _agree(onnxruntime_run(back, feeds)["y"], onnxruntime_run(model, feeds)["y"], "ONNX -> IR -> ONNX")


def test_grid_covers_every_op():
    assert {case[0] for case in GRID} == {"Relu", "Clip", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish",
                                          "LeakyRelu", "PRelu", "Softmax", "LogSoftmax"}


# -- Softmax before opset 13 ----------------------------------------------------------------------------

X4 = (np.random.default_rng(0).standard_normal((2, 3, 4, 5)) * 3).astype(np.float32)


def test_openvino_frontend_gets_softmax_11_wrong():
    """OpenVINO 2026.4's ONNX frontend writes Softmax-11 (opsets 11, 12) as SoftMax along `axis`, without the
    2-D coercion: on (2, 3, 4, 5) with the default axis 1 its result is 0.98 away from onnxruntime's. Softmax-1
    (opsets 1..10) it coerces correctly (Reshape, SoftMax axis 1, Reshape back). poolir's IR is right for both."""
    for opset, wrong in ((11, True), (12, True), (9, False)):
        model = _model("Softmax", opset, X4.shape)
        expected = onnxruntime_run(model, {"x": X4})["y"]
        error = np.abs(openvino_run_onnx(model, {"x": X4})["y"] - expected).max()
        assert (error > 0.5) == wrong, (opset, error)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("opset", [9, 11, pytest.param(1, marks=pytest.mark.slow),
                                   pytest.param(12, marks=pytest.mark.slow)])
@pytest.mark.parametrize("axis", [0, 1, 2, -1, pytest.param(3, marks=pytest.mark.slow),
                                  pytest.param(-3, marks=pytest.mark.slow)])
def test_coerced_softmax_on_4d_run_by_openvino(op, opset, axis, tmp_path):
    model = _model(op, opset, X4.shape, {"axis": axis})
    expected = onnxruntime_run(model, {"x": X4})["y"]
    ir.write_model(onnx_to_ir(model), tmp_path / "model.xml")
    _agree(openvino_run_xml(tmp_path / "model.xml", {"x": X4}, ["y"])["y"], expected, f"{op}-{opset} axis {axis}")


def test_squeezenet_style_softmax(tmp_path):
    """light_squeezenet's head: Softmax-9, default axis, on (1, 1000, 1, 1) (after a global pool): one SoftMax
    along axis 1 (every later dim is 1), no Reshape. The same at opset 11 with a dynamic batch."""
    x = (np.random.default_rng(3).standard_normal((1, 1000, 1, 1)) * 2).astype(np.float32)
    for opset, dims in ((9, None), (11, ["N", 1000, 1, 1])):
        model = _model("Softmax", opset, x.shape, dims=dims)
        converted = onnx_to_ir(model)
        assert [layer.type for layer in converted.layers if layer.type not in ("Parameter", "Result")] == ["SoftMax"]
        ir.write_model(converted, tmp_path / "model.xml")
        _agree(openvino_run_xml(tmp_path / "model.xml", {"x": x}, ["y"])["y"],
               onnxruntime_run(model, {"x": x})["y"], f"opset {opset}")


@pytest.mark.parametrize("dims,axis", [(["N", 3, 4, 5], 1), (["N", 3, 4, 5], 2), ([2, 3, "H", "W"], 2)])
def test_coerced_softmax_with_dynamic_dims(dims, axis, tmp_path):
    model = _model("Softmax", 11, X4.shape, {"axis": axis}, dims=dims)
    ir.write_model(onnx_to_ir(model), tmp_path / "model.xml")
    _agree(openvino_run_xml(tmp_path / "model.xml", {"x": X4}, ["y"])["y"],
           onnxruntime_run(model, {"x": X4})["y"], f"dims {dims} axis {axis}")


def test_coerced_softmax_dynamic_on_both_sides_is_refused():
    model = _model("Softmax", 11, X4.shape, {"axis": 2}, dims=["N", 3, "H", 5])
    with pytest.raises(ConversionError, match="dynamic on both sides"):
        onnx_to_ir(model)


def test_softmax_along_an_inner_axis_cannot_be_written_before_opset_13(tmp_path):
    model = _model("Softmax", 13, X4.shape, {"axis": 1})
    converted = onnx_to_ir(model)
    with pytest.raises(ConversionError, match="exact only from opset 13"):
        ir_to_onnx(converted, opset=12)
    back = ir_to_onnx(converted, opset=13)
    _agree(onnxruntime_run(back, {"x": X4})["y"], onnxruntime_run(model, {"x": X4})["y"], "opset 13")


# -- the other readings ---------------------------------------------------------------------------------

def test_written_layer_types():
    """What poolir writes, as OpenVINO's frontend writes it (checked against convert_model in the grid above)."""
    cases = [("Relu", 14, {}, ["ReLU"]), ("Clip", 6, {"min": -1.0, "max": 1.0}, ["Clamp"]),
             ("HardSwish", 14, {}, ["HSwish"]), ("LeakyRelu", 16, {}, ["PReLU"]),
             ("HardSigmoid", 6, {}, ["HardSigmoid"]), ("Softmax", 13, {}, ["SoftMax"]),
             ("Softmax", 9, {}, ["Reshape", "SoftMax", "ShapeOf", "Reshape"])]
    for op, opset, attrs, types in cases:
        converted = onnx_to_ir(_model(op, opset, (2, 3, 4), attrs))
        written = [layer.type for layer in converted.layers if layer.type not in ("Parameter", "Result", "Const")]
        assert written == types, (op, opset)


def test_clip_with_min_above_max_becomes_max(tmp_path):
    x = np.array([-5, 0, 5], np.float32)
    model = _model("Clip", 13, x.shape, {}, [("lo", np.float32(2)), ("hi", np.float32(-1))])
    ir.write_model(onnx_to_ir(model), tmp_path / "model.xml")
    np.testing.assert_array_equal(openvino_run_xml(tmp_path / "model.xml", {"x": x}, ["y"])["y"], [-1, -1, -1])


def test_clip_with_bounds_computed_in_the_graph(tmp_path):
    """min and max from graph inputs, not constants: Maximum and Minimum layers."""
    x = np.linspace(-4, 4, 9, dtype=np.float32)
    node = helper.make_node("Clip", ["x", "lo", "hi"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, s)
                                            for n, s in (("x", [9]), ("lo", []), ("hi", []))],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=7)
    feeds = {"x": x, "lo": np.array(-1.5, np.float32), "hi": np.array(2.5, np.float32)}
    ir.write_model(onnx_to_ir(model), tmp_path / "model.xml")
    # tests.peers feeds through np.ascontiguousarray, which makes a 0-d array 1-d: fed here directly.
    import openvino as ov
    from poolir.converter.peers import OPENVINO_CPU_CONFIG, openvino_core
    compiled = openvino_core().compile_model(str(tmp_path / "model.xml"), "CPU", OPENVINO_CPU_CONFIG)
    result = compiled.create_infer_request().infer({name: ov.Tensor(array) for name, array in feeds.items()})
    np.testing.assert_array_equal(np.array(result[compiled.outputs[0]]), onnxruntime_run(model, feeds)["y"])


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8])
def test_integer_clip_round_trip(dtype, tmp_path):
    x = np.arange(-6, 7).astype(dtype) if np.dtype(dtype).kind == "i" else np.arange(0, 13).astype(dtype)
    model = _model("Clip", 13, x.shape, {}, [("lo", dtype(1)), ("hi", dtype(4))], dtype=dtype)
    expected = onnxruntime_run(model, {"x": x})["y"]
    converted = onnx_to_ir(model)
    ir.write_model(converted, tmp_path / "model.xml")
    np.testing.assert_array_equal(onnxruntime_run(ir_to_onnx(converted), {"x": x})["y"], expected)


def test_prelu_per_channel_slope_both_ways(tmp_path):
    """A 1-D slope of length C: OpenVINO scales the channels, ONNX PRelu the last axis. Data (2, 3, 3) makes both
    readings possible, so a wrong one shows."""
    x = (np.random.default_rng(5).standard_normal((2, 3, 3)) * 3).astype(np.float32)
    slope = np.array([0.1, 0.2, 0.3], np.float32)
    model = _model("PRelu", 16, x.shape, {}, [("slope", slope)])
    expected = onnxruntime_run(model, {"x": x})["y"]
    ir.write_model(onnx_to_ir(model), tmp_path / "model.xml")
    _agree(openvino_run_xml(tmp_path / "model.xml", {"x": x}, ["y"])["y"], expected, "ONNX PRelu -> IR")
    import openvino.opset1 as ov1
    from tests.runtime.ir_cases import single_layer_ir
    xml = single_layer_ir(lambda p: ov1.prelu(p, ov1.constant(slope)), x.shape, np.float32, tmp_path / "ov.xml")
    want = next(iter(openvino_run_xml(xml, {"x": x}).values()))
    back = ir_to_onnx(ir.read_model(xml))
    _agree(next(iter(onnxruntime_run(back, {"x": x}).values())), want, "IR PReLU per channel -> ONNX")
