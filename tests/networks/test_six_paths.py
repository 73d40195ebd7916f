"""Whole networks convert both ways (issue 11): every torchvision-shaped network in both exporter styles, and the
nine model-zoo graphs (slow), through the six paths of six_paths.py, each against its independent engine:

    1 poolir runs the ONNX                                   vs onnxruntime
    2 poolir's ONNX -> IR run by OpenVINO                    vs onnxruntime on the ONNX
    3 poolir's IR run by poolir                              vs onnxruntime on the ONNX
    4 ONNX -> IR -> ONNX run by onnxruntime (names, order and declared shapes of the outputs kept)
                                                             vs onnxruntime on the source
    5 OpenVINO's own IR (f32 weights, and f16-compressed) run by poolir          vs OpenVINO on that IR
    6 OpenVINO's own IR -> ONNX by poolir, run by onnxruntime                    vs OpenVINO on that IR

Every path must agree (`agree`, float32); a refusal fails the test with poolir's message. The two networks where
OpenVINO's ONNX frontend differs from onnxruntime (torchvision.OPENVINO_DIVERGENT) are included: paths 1-4 follow
onnxruntime on them, paths 5-6 follow OpenVINO's IR, so both worlds are exact on the same network.

`python -m tests.networks.paths_table` prints the same as a table, network by path.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from tests.networks import torchvision, zoo
from tests.networks.six_paths import compare, onnx_paths, openvino_ir_paths, signature_lost
from tests.networks.torchvision import input_feeds

STYLES = torchvision.styles()
INPUT_SEED = 20262
IR_FORMS = {"f32": False, "f16": True}  # name -> compress_to_fp16


def _assert_all_agree(outcomes: dict, what: str) -> None:
    failed = [f"{path}: {outcome.cell()}" for path, outcome in outcomes.items() if not outcome.ok]
    assert not failed, f"{what}: " + "; ".join(failed)


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("name", list(torchvision.NETWORKS))
def test_onnx_paths_agree_with_onnxruntime(built, name, style, tmp_path):
    model = built(name, style)
    _assert_all_agree(onnx_paths(model, input_feeds(model, INPUT_SEED), tmp_path), f"{name} ({style})")


@pytest.mark.parametrize("form", list(IR_FORMS))
@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("name", list(torchvision.NETWORKS))
def test_openvino_ir_paths_agree_with_openvino(built, name, style, form, tmp_path):
    model = built(name, style)
    outcomes = openvino_ir_paths(model, input_feeds(model, INPUT_SEED), tmp_path, IR_FORMS[form])
    _assert_all_agree(outcomes, f"{name} ({style}) OpenVINO IR {form}")


# A symbolic batch, run with batch 2. ShuffleNetV2's channel shuffle reshapes to a batch of 1, and the dynamo
# style's Resize sizes are [1, C, h, w], as a static export writes them: those run with batch 1 only.
STATIC_BATCH = {("shufflenet_v2", style) for style in STYLES} | {("segmentation", "dynamo")}
DYNAMIC_BATCH = [(name, style) for name in torchvision.NETWORKS for style in STYLES
                 if (name, style) not in STATIC_BATCH]


def _with_dynamic_batch(model) -> onnx.ModelProto:
    """The network with its input's and outputs' batch dim symbolic (torch.onnx.export's dynamic_axes)."""
    proto = onnx.ModelProto.FromString(torchvision.proto_of(model).SerializeToString())
    for value in (*proto.graph.input, *proto.graph.output):
        dims = value.type.tensor_type.shape.dim
        if len(dims):
            dims[0].dim_param = "batch"
    del proto.graph.value_info[:]
    return proto


@pytest.mark.parametrize(("name", "style"), DYNAMIC_BATCH)
def test_a_dynamic_batch_agrees_on_all_six_paths(built, name, style, tmp_path):
    model = _with_dynamic_batch(built(name, style))
    (x,) = model.graph.input
    shape = [2] + [dim.dim_value for dim in x.type.tensor_type.shape.dim[1:]]
    feeds = {x.name: np.random.default_rng(INPUT_SEED).standard_normal(shape).astype(np.float32)}
    outcomes = onnx_paths(model, feeds, tmp_path)
    outcomes.update(openvino_ir_paths(model, feeds, tmp_path, compress_to_fp16=False))
    _assert_all_agree(outcomes, f"{name} ({style}) with a dynamic batch of 2")


# -- the model-zoo graphs at full size -------------------------------------------------------------------------
# VGG-19 (550 MB of weights, 51 s here: a third of CI's margin) is left to test_peers and test_poolir_runs, which run
# it against onnxruntime and OpenVINO; its layers are AlexNet's and ZFNet's, which take all six paths here.
SIX_PATH_ZOO = [name for name in zoo.light_models() if name != "vgg19"]


@pytest.mark.slow
@pytest.mark.parametrize("name", SIX_PATH_ZOO)
def test_the_zoo_graph_agrees_on_all_six_paths(name, tmp_path):
    model = zoo.light_model(name, seed=0)
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, path)
    feeds = zoo.random_feeds(model, INPUT_SEED)
    del model
    outcomes = onnx_paths(path, feeds, tmp_path)
    for form, compress in IR_FORMS.items():
        outcomes.update({f"{path_name} {form}": outcome
                         for path_name, outcome in openvino_ir_paths(path, feeds, tmp_path, compress).items()})
    _assert_all_agree(outcomes, name)


# -- the harness says no ----------------------------------------------------------------------------------------
def test_compare_reports_a_wrong_value_a_missing_output_and_a_lost_name():
    from onnx import TensorProto, helper

    expected = {"y": np.linspace(-1, 1, 10, dtype=np.float32)}
    assert compare({"y": expected["y"] * (1 + 1e-6)}, expected).ok
    wrong = compare({"y": expected["y"] * 1.01}, expected)
    assert wrong.status == "differs" and abs(wrong.max_abs - 0.01) < 1e-6 and "y:" in wrong.detail
    assert compare({"z": expected["y"]}, expected).status == "differs"
    # A float16 output is judged at float16's tolerance: an ulp of float16 agrees, a 5% error does not.
    half = {"y": np.linspace(8, 16, 10, dtype=np.float16)}
    assert compare({"y": half["y"] + np.float16(0.0078125)}, half).ok
    assert not compare({"y": half["y"] * np.float16(1.05)}, half).ok

    def graph_with(outputs):
        nodes = [helper.make_node("Identity", ["x"], [name]) for name, _ in outputs]
        values = [helper.make_tensor_value_info(name, TensorProto.FLOAT, dims) for name, dims in outputs]
        return helper.make_model(helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
            "x", TensorProto.FLOAT, [2])], values))

    source = graph_with([("a", [2]), ("b", None)])
    assert signature_lost(source, graph_with([("a", [2]), ("b", [2])])) == ""
    assert "outputs" in signature_lost(source, graph_with([("b", [2]), ("a", [2])]))
    assert "declared" in signature_lost(source, graph_with([("a", [3]), ("b", [2])]))
    assert signature_lost(graph_with([("a", ["n"])]), graph_with([("a", [2])])) == ""  # symbolic may become static
