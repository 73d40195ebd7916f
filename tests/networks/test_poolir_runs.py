"""poolir runs whole networks: every torchvision-shaped network (both exporter styles) and the nine light
model-zoo graphs, in both worlds, against the engine whose meaning that world has.

    ONNX world   poolir.runtime.run on the ONNX model                  vs onnxruntime on it
    IR world     poolir.runtime.run on OpenVINO's own IR of the model  vs OpenVINO on that IR
                 (tests/networks/peers.py openvino_ir_of, with and without compress_to_fp16)

Outputs are compared with `agree` (tests/networks/peers.py) at the float32 tolerance: an f16-compressed IR
stores its weights as f16 Consts followed by Convert-1 to f32, so poolir and OpenVINO compute in f32 from the same
rounded weights, and only summation order separates them (the f16 tolerance is for comparing that IR with the
ONNX original, which test_peers.py does).

The two networks where OpenVINO's ONNX frontend computes something else than onnxruntime
(torchvision.OPENVINO_DIVERGENT) are included: poolir follows each world's meaning, so it agrees with
onnxruntime on the ONNX and with OpenVINO on OpenVINO's IR of it.

A network that uses an operator or layer type poolir does not run yet is SKIPPED with the UnsupportedError's
message (which lists what is missing), so these cases switch on by themselves as operator families land.
Anything else must agree. The model-zoo graphs run at their full 224x224 size and are marked slow.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from poolir import ir, runtime
from poolir.ir.errors import UnsupportedError
from tests.networks import torchvision, zoo
from tests.networks.torchvision import input_feeds, proto_of as _proto
from tests.networks.peers import agree, onnxruntime_runner, openvino_ir_of, run_onnxruntime, run_openvino_xml
from tests.networks.six_paths import ir_outputs_by_onnx_name

STYLES = torchvision.styles()
INPUT_SEED = 20261
IR_FORMS = {"f32": False, "f16": True}  # name -> compress_to_fp16


def _feeds(model, seed=INPUT_SEED) -> dict[str, np.ndarray]:
    return input_feeds(model, seed)


def _poolir(model, feeds) -> dict[str, np.ndarray]:
    """poolir's run, or a skip naming what poolir does not support yet."""
    try:
        return runtime.run(model, feeds)
    except UnsupportedError as error:
        pytest.skip(f"poolir does not run this network yet: {error}")


def _assert_agree(actual: dict, expected: dict, what: str) -> None:
    assert set(actual) == set(expected), f"{what}: outputs {sorted(actual)}, expected {sorted(expected)}"
    for output, value in expected.items():
        ok, max_abs, max_rel = agree(actual[output], value, np.float32)
        assert ok, f"{what} {output}: poolir differs by {max_abs:.3g} ({max_rel:.3g} of the output's size)"


def _ir_world(source, feeds: dict, folder: Path, form: str, onnx_names: list[str], what: str) -> None:
    xml = openvino_ir_of(source, folder, compress_to_fp16=IR_FORMS[form], name=form)
    model = ir.read_model(xml)
    # Every layer of OpenVINO's file is read (unknown types kept as they stand) and written back byte for byte.
    assert ir.serialize(model) == (xml.read_bytes(), xml.with_suffix(".bin").read_bytes()), f"{what}: round trip"
    ours = ir_outputs_by_onnx_name(model, _poolir(model, feeds), onnx_names)
    expected = run_openvino_xml(xml, feeds, onnx_names)
    _assert_agree(ours, {name: expected[name] for name in onnx_names}, what)


# -- the torchvision-shaped networks ------------------------------------------------------------------------
@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("name", list(torchvision.NETWORKS))
def test_poolir_runs_the_onnx_network_like_onnxruntime(built, name, style):
    model = built(name, style)
    feeds = _feeds(model)
    ours = _poolir(model, feeds)
    _assert_agree(ours, run_onnxruntime(model, feeds), f"{name} ({style}) ONNX")


@pytest.mark.parametrize("form", list(IR_FORMS))
@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("name", list(torchvision.NETWORKS))
def test_poolir_runs_openvinos_ir_of_the_network_like_openvino(built, name, style, form, tmp_path):
    model = built(name, style)
    names = [output.name for output in _proto(model).graph.output]
    _ir_world(model, _feeds(model), tmp_path, form, names, f"{name} ({style}) IR {form}")


# -- the model-zoo graphs at full size ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def zoo_models(tmp_path_factory):
    """name -> the path of the model-zoo graph with seeded weights, saved once (VGG-19's weights are 550 MB)."""
    folder = tmp_path_factory.mktemp("poolir_zoo")
    cache = {}

    def get(name: str) -> tuple[Path, dict, list[str]]:
        if name not in cache:
            model = zoo.light_model(name, seed=0)
            path = folder / f"{name}.onnx"
            onnx.save(model, path)
            cache[name] = (path, zoo.random_feeds(model, INPUT_SEED), [o.name for o in model.graph.output])
        return cache[name]

    return get


@pytest.mark.slow
@pytest.mark.parametrize("name", zoo.light_models())
def test_poolir_runs_the_zoo_onnx_graph_like_onnxruntime(zoo_models, name):
    path, feeds, _ = zoo_models(name)
    ours = _poolir(path, feeds)
    _assert_agree(ours, onnxruntime_runner(path)(feeds), f"{name} ONNX")


@pytest.mark.slow
@pytest.mark.parametrize("form", list(IR_FORMS))
@pytest.mark.parametrize("name", zoo.light_models())
def test_poolir_runs_openvinos_ir_of_the_zoo_graph_like_openvino(zoo_models, name, form, tmp_path):
    path, feeds, names = zoo_models(name)
    _ir_world(path, feeds, tmp_path, form, names, f"{name} IR {form}")


# -- the harness itself, on a network poolir runs today ---------------------------------------------------------
def _pooling_network() -> onnx.ModelProto:
    """MaxPool (ceil) -> AveragePool (count_include_pad) -> Flatten -> Gemm-free tail: ops every layer of poolir
    supports, so the comparison paths above are exercised (not only skipped) before the other families land."""
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("MaxPool", ["x"], ["m"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1),
        helper.make_node("AveragePool", ["m"], ["a"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                         count_include_pad=1),
        helper.make_node("Flatten", ["a"], ["f"], axis=1),
        helper.make_node("Mul", ["f", "scale"], ["logits"]),
    ]
    scale = onnx.numpy_helper.from_array(np.linspace(0.5, 1.5, 3 * 4 * 4, dtype=np.float32), "scale")
    graph = helper.make_graph(nodes, "pooling", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 15, 15])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, None)], [scale])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("form", list(IR_FORMS))
def test_the_harness_compares_when_poolir_runs_the_network(form, tmp_path):
    model = _pooling_network()
    feeds = _feeds(model)
    _assert_agree(runtime.run(model, feeds), run_onnxruntime(model, feeds), "pooling ONNX")
    _ir_world(model, feeds, tmp_path, form, ["logits"], f"pooling IR {form}")
    with pytest.raises(AssertionError, match="poolir differs"):  # and it does say no
        wrong = {"logits": run_onnxruntime(model, feeds)["logits"] * 1.01}
        _assert_agree(runtime.run(model, feeds), wrong, "pooling ONNX scaled")
