"""ONNX InstanceNormalization and GroupNormalization, IR GroupNormalization-12, and their conversions, against
independent oracles: the onnx package's backend node cases, onnxruntime over a seeded grid, OpenVINO's CPU plugin
on its own layer, and the converted models run by the engine of the other world."""

from __future__ import annotations

import random

import numpy as np
import onnx
import openvino as ov
import openvino.opset1 as ov1
import openvino.opset12 as ov12
import pytest
from onnx import helper, numpy_helper

from poolir import ir, runtime
from poolir.converter import ir_to_onnx, onnx_to_ir
from poolir.ir.errors import PoolirError
from tests.backend_cases import feeds_of, node_cases
from tests.peers import onnxruntime_run, openvino_convert_to_xml, openvino_run_xml
from tests.runtime.ir_cases import assert_matches_openvino, single_layer_ir

OPS = ("InstanceNormalization", "GroupNormalization")


BACKEND_CASES = node_cases(("instance_normalization", "groupnormalization"), OPS)


def test_every_generator_case_is_collected():
    assert {case.model.graph.node[0].op_type for case in BACKEND_CASES.values()} == set(OPS)


@pytest.mark.parametrize("name", sorted(BACKEND_CASES))
def test_onnx_backend_case(name):
    case = BACKEND_CASES[name]
    _, outputs = case.data_sets[0]
    result = runtime.run(case.model, feeds_of(case))
    for output, want in zip(case.model.graph.output, outputs):
        got = result[output.name]
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=max(case.rtol, 1e-5), atol=max(case.atol, 1e-6))


def _model(op, opset, dtype, shape, attrs, per, seed):
    """One node with constant scale and bias of length `per` (channels, or groups for GroupNormalization-18)."""
    rng = np.random.default_rng(seed)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    inits = [numpy_helper.from_array((rng.standard_normal(per) + 1).astype(dtype), "s"),
             numpy_helper.from_array(rng.standard_normal(per).astype(dtype), "b")]
    graph = helper.make_graph([helper.make_node(op, ["x", "s", "b"], ["y"], **attrs)], "g",
                              [helper.make_tensor_value_info("x", elem, shape)],
                              [helper.make_tensor_value_info("y", elem, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    model.graph.node[0].name = "norm"
    return model


def _grid(count=48, seed=5):
    rng = random.Random(seed)
    cases = []
    for index in range(count):
        op = OPS[index % 2]
        channels = rng.choice((2, 4, 6, 12))
        spatial = [rng.randint(1, 6) for _ in range(rng.randint(1, 3))]
        spatial[0] = max(spatial[0], 4)  # see test_one_spatial_element_gives_the_bias
        shape = (rng.randint(1, 3), channels, *spatial)
        attrs = {"epsilon": rng.choice((1e-5, 1e-3, 0.5))} if rng.random() < 0.5 else {}
        if op == "GroupNormalization":
            attrs["num_groups"] = rng.choice([g for g in (1, 2, 3, 6, 12) if channels % g == 0])
            opset = rng.choice((18, 21))
            per = channels if opset == 21 else attrs["num_groups"]
            dtype = rng.choice(("float32", "float32", "float16", "float64"))
        else:
            opset, per, dtype = rng.choice((6, 22)), channels, rng.choice(("float32", "float32", "float16"))
        cases.append((op, opset, np.dtype(dtype), shape, attrs, per, rng.randrange(2 ** 31)))
    return cases


GRID = _grid()
TOLERANCE = {np.float16: (4e-3, 4e-3), np.float32: (2e-5, 2e-5), np.float64: (1e-9, 1e-9)}


def _input(shape, dtype, seed):
    # a mean away from 0 and a spread of a few units, as activations have
    return (np.random.default_rng(seed + 1).standard_normal(shape) * 3 + 1.5).astype(dtype)


@pytest.mark.parametrize("case", GRID, ids=str)
def test_grid_against_onnxruntime(case):
    op, opset, dtype, shape, attrs, per, seed = case
    model = _model(op, opset, dtype, shape, attrs, per, seed)
    x = _input(shape, dtype, seed)
    expected = onnxruntime_run(model, {"x": x})["y"]
    actual = runtime.run(model, {"x": x})["y"]
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    # GroupNormalization-21's stash_type 1 normalises float64 in float32 (its function body casts X), where
    # onnxruntime 1.31 stays in double: float32's tolerance then.
    stashed = op == "GroupNormalization" and opset >= 21 and dtype == np.float64
    rtol, atol = TOLERANCE[np.float32 if stashed else dtype.type]
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol)


@pytest.mark.parametrize("case", [c for c in GRID if c[2] != np.float64], ids=str)
def test_onnx_to_ir_run_by_openvino(case, tmp_path):
    op, opset, dtype, shape, attrs, per, seed = case
    model = _model(op, opset, dtype, shape, attrs, per, seed)
    x = _input(shape, dtype, seed)
    ir.write_model(onnx_to_ir(model), tmp_path / "model.xml")
    rtol, atol = TOLERANCE[dtype.type]
    np.testing.assert_allclose(openvino_run_xml(tmp_path / "model.xml", {"x": x}, ["y"])["y"].astype(np.float64),
                               onnxruntime_run(model, {"x": x})["y"].astype(np.float64), rtol=rtol, atol=atol)


@pytest.mark.parametrize("case", [c for c in GRID[:16] if c[2] == np.float32], ids=str)
def test_openvino_ir_to_onnx_run_by_onnxruntime(case, tmp_path):
    """OpenVINO's own IR of the ONNX model (MVN-6 + Multiply + Add; GroupNormalization-12), converted back by poolir
    at opset 17 (InstanceNormalization as PyTorch writes GroupNorm) and 22 (GroupNormalization-21)."""
    op, opset, dtype, shape, attrs, per, seed = case
    model = _model(op, opset, dtype, shape, attrs, per, seed)
    x = _input(shape, dtype, seed)
    xml = openvino_convert_to_xml(model, tmp_path / "openvino.xml")
    expected = openvino_run_xml(xml, {"x": x}, ["y"])["y"]
    for target in (17, 22):
        back = ir_to_onnx(ir.read_model(xml), opset=target)
        onnx.checker.check_model(back, full_check=True)
        np.testing.assert_allclose(onnxruntime_run(back, {"x": x})["y"], expected, rtol=2e-5, atol=2e-5)


def _ir_group_norm(tmp_path, shape, groups, dtype, epsilon, seed):
    rng = np.random.default_rng(seed)
    scale, bias = ((rng.standard_normal(shape[1]) + c).astype(dtype) for c in (1, 0))
    def build(x):
        return ov12.group_normalization(x, ov1.constant(scale), ov1.constant(bias), groups, epsilon)
    return single_layer_ir(build, shape, dtype, tmp_path / "model.xml")


@pytest.mark.parametrize("shape,groups,dtype,epsilon", [
    ((2, 6, 4, 5), 2, np.float32, 1e-5), ((1, 12, 7), 4, np.float32, 1e-3), ((3, 4, 2, 3, 2), 4, np.float32, 0.1),
    ((2, 8, 5, 5), 1, np.float16, 1e-5), ((2, 6), 3, np.float32, 1e-5), ((1, 32, 3, 3), 8, np.float16, 1e-2)])
def test_ir_group_norm_against_openvino_and_as_onnx(shape, groups, dtype, epsilon, tmp_path):
    xml = _ir_group_norm(tmp_path, shape, groups, dtype, epsilon, 3)
    x = _input(shape, dtype, 4)
    rtol, atol = TOLERANCE[np.dtype(dtype).type]
    assert_matches_openvino(xml, {"x": x}, rtol=rtol, atol=atol)
    expected = next(iter(openvino_run_xml(xml, {"x": x}).values()))
    for target in (17, 22):
        back = ir_to_onnx(ir.read_model(xml), opset=target)
        ops = [node.op_type for node in back.graph.node]
        assert ("GroupNormalization" in ops) == (target >= 21) and ("InstanceNormalization" in ops) == (target < 21)
        if dtype == np.float16 and target < 21 and len(shape) == 2:
            continue
        name = back.graph.input[0].name
        got = onnxruntime_run(back, {name: x})[back.graph.output[0].name]
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol)


def test_one_spatial_element_gives_the_bias():
    """Over one spatial element x - mean is 0 exactly, so Y is B (hand-worked). onnxruntime computes the variance
    as E[x^2] - E[x]^2, whose rounding residue divided by sqrt(epsilon) moved one output of a grid case by 8e-5."""
    model = _model("InstanceNormalization", 22, np.float32, (3, 4, 1), {}, 4, 1)
    bias = numpy_helper.to_array(model.graph.initializer[1])
    x = _input((3, 4, 1), np.float32, 2)
    np.testing.assert_array_equal(runtime.run(model, {"x": x})["y"], np.broadcast_to(bias.reshape(1, 4, 1), x.shape))


def test_refusals(tmp_path):
    """float64 GroupNormalization has no exact conversion either way (stash_type normalises in float32); version 18
    converts with constant scale and bias only; num_groups must divide the channels."""
    model = _model("GroupNormalization", 21, np.float64, (1, 4, 3), {"num_groups": 2}, 4, 0)
    assert runtime.run(model, {"x": np.ones((1, 4, 3))})["y"].shape == (1, 4, 3)
    with pytest.raises(PoolirError, match="float64"):
        onnx_to_ir(model)
    with pytest.raises(PoolirError, match="float64"):
        ir_to_onnx(ir.read_model(_ir_group_norm(tmp_path, (1, 4, 3), 2, np.float64, 1e-5, 0)))
    dynamic = _model("GroupNormalization", 18, np.float32, (1, 4, 3), {"num_groups": 2}, 2, 0)
    dynamic.graph.initializer.pop()
    dynamic.graph.input.append(helper.make_tensor_value_info("b", onnx.TensorProto.FLOAT, [2]))
    with pytest.raises(PoolirError, match="constant scale and bias"):
        onnx_to_ir(dynamic)
    with pytest.raises(PoolirError, match="does not divide"):
        runtime.run(_model("GroupNormalization", 21, np.float32, (1, 6, 3), {"num_groups": 4}, 6, 0),
                    {"x": np.ones((1, 6, 3), np.float32)})
    with pytest.raises(PoolirError, match="rank"):
        runtime.run(_model("InstanceNormalization", 6, np.float32, (2, 3), {}, 3, 0),
                    {"x": np.ones((2, 3), np.float32)})
    one_scale = _model("InstanceNormalization", 6, np.float32, (2, 3, 4), {}, 1, 0)  # would broadcast in IR
    with pytest.raises(PoolirError, match="one per channel"):
        onnx_to_ir(one_scale)
    with pytest.raises(PoolirError, match="one per channel"):
        runtime.run(one_scale, {"x": np.ones((2, 3, 4), np.float32)})


def test_pytorch_group_norm_as_openvino_writes_it(tmp_path):
    """torch's GroupNorm through OpenVINO's PyTorch frontend is one GroupNormalization-12 (checked with openvino
    2026.4 on nn.GroupNorm(2, 8)); the same layer with an f16-compressed Const scale, as save_model writes it."""
    scale = np.linspace(0.5, 1.5, 8).astype(np.float32)
    bias = np.linspace(-1, 1, 8).astype(np.float32)
    x_param = ov1.parameter([1, 8, 5, 5], np.float32, name="x")
    node = ov12.group_normalization(x_param, ov1.convert(ov1.constant(scale.astype(np.float16)), "f32"),
                                    ov1.constant(bias), 2, 1e-5)
    xml = tmp_path / "gn.xml"
    ov.save_model(ov.Model([node], [x_param]), xml, compress_to_fp16=False)
    x = _input((1, 8, 5, 5), np.float32, 9)
    assert_matches_openvino(xml, {"x": x}, rtol=2e-5, atol=2e-5)
