"""DepthToSpace and SpaceToDepth (torch's PixelShuffle and PixelUnshuffle) in both worlds and both directions of
conversion, against the onnx package's backend cases, onnxruntime, OpenVINO's CPU plugin on its own layers (ranks 3
to 5, both modes) and the engines running the converted models. They only move elements: every check is exact."""

from __future__ import annotations

import random

import numpy as np
import onnx
import openvino.opset1 as ov1
import pytest
from onnx import helper

from poolir import ir, runtime
from poolir.converter import ir_to_onnx, onnx_to_ir
from poolir.ir.errors import PoolirError
from tests.backend_cases import accepting_versions, at_opset, feeds_of, node_cases
from tests.peers import onnxruntime_run, openvino_run_xml
from tests.runtime.ir_cases import assert_matches_openvino, single_layer_ir

OPS = ("DepthToSpace", "SpaceToDepth")


BACKEND_CASES = node_cases(("depthtospace", "spacetodepth"), OPS)


def test_every_generator_case_is_collected():
    assert {case.model.graph.node[0].op_type for case in BACKEND_CASES.values()} == set(OPS)


@pytest.mark.parametrize("name", sorted(BACKEND_CASES))
def test_onnx_backend_case_at_every_opset_that_accepts_it(name):
    case = BACKEND_CASES[name]
    _, outputs = case.data_sets[0]
    feeds = feeds_of(case)
    ran = 0
    for version in accepting_versions(case):
        result = runtime.run(at_opset(case, version.since), feeds)
        np.testing.assert_array_equal(result[case.model.graph.output[0].name], outputs[0])
        ran += 1
    assert ran >= 1


def _model(op, opset, shape, attrs, dtype=np.float32):
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"], **attrs)], "g",
                              [helper.make_tensor_value_info("x", elem, shape)],
                              [helper.make_tensor_value_info("y", elem, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def _grid(count=24, seed=3):
    rng = random.Random(seed)
    cases = []
    for index in range(count):
        op = OPS[index % 2]
        block = rng.choice((1, 2, 3))
        n, c, h, w = rng.randint(1, 2), rng.randint(1, 3), rng.randint(1, 3), rng.randint(1, 3)
        shape = (n, c * block * block, h, w) if op == "DepthToSpace" else (n, c, h * block, w * block)
        opset = rng.choice((1, 11, 13)) if op == "DepthToSpace" else rng.choice((1, 13))
        attrs = {"blocksize": block}
        if op == "DepthToSpace" and opset >= 11:
            attrs["mode"] = rng.choice(("DCR", "CRD"))
        # the types onnxruntime 1.31 has kernels for (DepthToSpace-1: floats only)
        integers = (np.uint8, np.int8) if op == "SpaceToDepth" or opset >= 11 else ()
        cases.append((op, opset, shape, attrs, rng.choice((np.float32, np.float16, *integers))))
    return cases


@pytest.mark.parametrize("case", _grid(), ids=str)
def test_against_onnxruntime_and_converted_for_openvino(case, tmp_path):
    op, opset, shape, attrs, dtype = case
    model = _model(op, max(opset, 7), shape, attrs, dtype)  # onnxruntime runs opsets from 7
    x = np.arange(np.prod(shape)).reshape(shape).astype(dtype)
    expected = onnxruntime_run(model, {"x": x})["y"]
    np.testing.assert_array_equal(runtime.run(model, {"x": x})["y"], expected)
    ir.write_model(onnx_to_ir(model), tmp_path / "model.xml")
    np.testing.assert_array_equal(openvino_run_xml(tmp_path / "model.xml", {"x": x}, ["y"])["y"], expected)


@pytest.mark.parametrize("layer", OPS)
@pytest.mark.parametrize("mode", ["blocks_first", "depth_first"])
@pytest.mark.parametrize("spatial,block", [((3,), 2), ((2, 3), 2), ((2, 1, 3), 2), ((2, 2), 3)])
def test_ir_layer_against_openvino_and_as_onnx(layer, mode, spatial, block, tmp_path):
    """Any spatial rank in OpenVINO; as ONNX, rank 4 is the op where the opset has the mode, the rest (and depth_first
    SpaceToDepth before opset 28) Reshape, Transpose, Reshape."""
    channels = 2 * block ** len(spatial) if layer == "DepthToSpace" else 2
    shape = (2, channels, *(d if layer == "DepthToSpace" else d * block for d in spatial))
    build = {"DepthToSpace": ov1.depth_to_space, "SpaceToDepth": ov1.space_to_depth}[layer]
    xml = single_layer_ir(lambda x: build(x, mode, block), shape, np.float32, tmp_path / "model.xml")
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    expected = next(iter(assert_matches_openvino(xml, {"x": x}, rtol=0, atol=0).values()))
    for opset in (7, 11, 22):
        back = ir_to_onnx(ir.read_model(xml), opset=opset)
        onnx.checker.check_model(back, full_check=True)
        ops = [node.op_type for node in back.graph.node]
        native = len(shape) == 4 and (mode == "blocks_first" or (layer == "DepthToSpace" and opset >= 11))
        assert ops == ([layer] if native else ["Reshape", "Transpose", "Reshape"]), (opset, ops)
        got = onnxruntime_run(back, {back.graph.input[0].name: x})[back.graph.output[0].name]
        np.testing.assert_array_equal(got, expected)


def test_pixel_shuffle_by_hand():
    """torch.nn.PixelShuffle(2) is DepthToSpace CRD: channel 4c + 2i + j goes to output channel c at (2h + i,
    2w + j)."""
    x = np.arange(8, dtype=np.float32).reshape(1, 8, 1, 1)
    y = runtime.run(_model("DepthToSpace", 11, x.shape, {"blocksize": 2, "mode": "CRD"}), {"x": x})["y"]
    np.testing.assert_array_equal(y, [[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]])
    dcr = runtime.run(_model("DepthToSpace", 11, x.shape, {"blocksize": 2}), {"x": x})["y"]
    np.testing.assert_array_equal(dcr, [[[[0, 2], [4, 6]], [[1, 3], [5, 7]]]])


@pytest.mark.parametrize("op,shape,attrs,match", [
    ("DepthToSpace", (1, 6, 2, 2), {"blocksize": 2}, "multiple"),
    ("SpaceToDepth", (1, 2, 3, 4), {"blocksize": 2}, "multiples"),
    ("DepthToSpace", (1, 4, 2), {"blocksize": 2}, "N x C x H x W"),
    ("DepthToSpace", (1, 4, 2, 2), {"blocksize": 2, "mode": "XYZ"}, "DCR or CRD"),
    ("SpaceToDepth", (1, 4, 2, 2), {"blocksize": 0}, "blocksize"),
])
def test_bad_input_is_refused(op, shape, attrs, match):
    with pytest.raises(PoolirError, match=match):
        runtime.run(_model(op, 13 if "mode" not in attrs else 11, shape, attrs), {"x": np.zeros(shape, np.float32)})


def test_dynamic_dims_without_an_onnx_op_are_refused(tmp_path):
    xml = single_layer_ir(lambda x: ov1.space_to_depth(x, "depth_first", 2), (1, 2, 4, 4), np.float32,
                          tmp_path / "model.xml")
    text = xml.read_text().replace("<dim>4</dim>", "<dim>-1</dim>", 1)
    text = text.replace('shape="1,2,4,4"', 'shape="1,2,?,4"')
    xml.write_text(text)
    with pytest.raises(PoolirError, match="static dims"):
        ir_to_onnx(ir.read_model(xml), opset=22)
