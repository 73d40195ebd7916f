"""`poolir verify` on whole networks: the first diverging node, --source, whole-network tolerances, the JSON schema.

Known wrong conversions are made by hand (an IR with one pooling layer's rounding_type flipped, or one weight
changed), so the node verify must name is known without asking poolir; the networks come from tests/networks
(torchvision-shaped, PyTorch's dynamo exporter style). OpenVINO's own converter's deviations are pinned on the
examples built for them (examples/torch_networks.py), whose expected values are onnxruntime's.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner

from poolir import converter, ir
from poolir.converter.cli import main
from poolir.converter.peers import onnxruntime_tensors
from poolir.converter.verify import locate as locate_module
from poolir.converter.verify import verify_paths
from tests.networks import torchvision

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ov = pytest.importorskip("openvino", reason="the OpenVINO paths need openvino (pip install 'poolir[test]')")


def invoke(*args: str):
    return CliRunner().invoke(main, ["verify", *args], catch_exceptions=False)


@pytest.fixture(scope="module")
def squeezenet(tmp_path_factory):
    """SqueezeNet 1.1 as the dynamo exporter writes it (two MaxPool2d(3, 2, ceil_mode=True)), its ONNX path, and
    poolir's IR of it."""
    folder = tmp_path_factory.mktemp("squeezenet")
    source = Path(torchvision.build("squeezenet", "dynamo", seed=0, folder=folder))
    xml = folder / "squeezenet.xml"
    ir.write_model(converter.onnx_to_ir(onnx.load(source)), xml)
    return source, xml


def _producer(source: Path, tensor: str) -> onnx.NodeProto:
    return next(node for node in onnx.load(source, load_external_data=False).graph.node if tensor in node.output)


def _edited(xml: Path, folder: Path, edit) -> Path:
    model = ir.read_model(xml)
    edit(model)
    out = folder / "edited.xml"
    ir.write_model(model, out)
    return out


def test_flipped_rounding_type_is_named_at_that_pooling_node_and_no_earlier_one(squeezenet, tmp_path):
    source, xml = squeezenet
    pools = [layer for layer in ir.read_model(xml).layers if layer.type == "MaxPool"]
    assert len(pools) == 2 and all(p.attrs["rounding_type"] == "ceil" for p in pools)
    second = pools[1]
    tensor = second.outputs[0].names[0]  # the ONNX tensor name poolir's converter keeps on the port

    def flip(model):
        next(layer for layer in model.layers if layer.id == second.id).attrs["rounding_type"] = "floor"

    edited = _edited(xml, tmp_path, flip)
    report = verify_paths([edited], source=source, peers=("openvino",))
    (model,) = report.models
    assert not model.passed and model.reference == "runtime(onnx)"
    located = {location.path: location for location in model.locations}
    expected_node = _producer(source, tensor)
    for path in ("runtime(ir)", "openvino(ir)", "runtime(ir->onnx)"):
        divergence = located[path].divergence
        assert (divergence.node, divergence.op, divergence.tensor) == (expected_node.name, "MaxPool-12", tensor), path
        assert divergence.attributes["ceil_mode"] == 1 and divergence.attributes["kernel_shape"] == [3, 3]
        assert divergence.expected_shape == (1, 32, 8, 8) and divergence.shape == (1, 32, 7, 7)
        assert located[path].compared > 10  # every earlier tensor it exposes was compared and agreed
        assert located[path].first_output == "logits"


def test_one_changed_weight_is_named_at_the_convolution_that_reads_it(squeezenet, tmp_path):
    source, xml = squeezenet
    graph = onnx.load(source).graph
    conv = [node for node in graph.node if node.op_type == "Conv"][4]
    weight = onnx.numpy_helper.to_array(next(i for i in graph.initializer if i.name == conv.input[1]))

    # An input channel the Conv reads that is not all zero after the ReLUs (onnxruntime computes the input).
    feeds = torchvision.input_feeds(source, 0)
    activation = onnxruntime_tensors(onnx.load(source), feeds, [conv.input[0]])[conv.input[0]]
    channel = int(np.argmax(np.abs(activation).sum(axis=(0, 2, 3))))

    def change_one_weight(model):
        (const,) = [layer for layer in model.layers if layer.type == "Const" and layer.data is not None
                    and layer.data.shape == weight.shape and np.array_equal(layer.data, weight)]
        data = const.data.copy()
        data[0, channel, 0, 0] += 1.0
        const.data = data

    edited = _edited(xml, tmp_path, change_one_weight)
    np.savez(tmp_path / "feeds.npz", **feeds)
    result = invoke(str(edited), "--source", str(source), "--inputs", str(tmp_path / "feeds.npz"), "--json")
    assert result.exit_code == 1
    (model,) = json.loads(result.output)["models"]
    (location,) = [d for d in model["divergences"] if d["path"] == "runtime(ir)"]
    assert (location["node"]["name"], location["node"]["op"]) == (conv.name, "Conv-11")
    assert location["node"]["tensor"] == conv.output[0]


def test_the_search_runs_in_chunks_when_the_tensors_do_not_fit_at_once(squeezenet, tmp_path, monkeypatch):
    source, xml = squeezenet
    monkeypatch.setattr(locate_module, "CHUNK_BYTES", 40_000)  # a few tensors per run

    def flip(model):
        [layer for layer in model.layers if layer.type == "MaxPool"][1].attrs["rounding_type"] = "floor"

    report = verify_paths([_edited(xml, tmp_path, flip)], source=source)
    (location,) = [loc for loc in report.models[0].locations if loc.path == "runtime(ir)"]
    assert location.runs > 2 and location.divergence.op == "MaxPool-12"


def test_a_clean_network_exits_0_on_every_engine(squeezenet):
    source, xml = squeezenet
    result = invoke(str(source), "--peer", "onnxruntime", "--peer", "openvino")
    assert result.exit_code == 0, result.output
    assert "first diverges" not in result.output
    result = invoke(str(xml), "--source", str(source), "--peer", "openvino")
    assert result.exit_code == 0, result.output


def test_source_warns_first_when_the_ir_stores_compressed_weights(squeezenet, tmp_path):
    """OpenVINO's own IR with its default compress_to_fp16: every weight rounded to f16, which no conversion can
    undo; the report says so before its rows, and not for the same IR saved uncompressed or for poolir's IR."""
    source, xml = squeezenet
    warnings = {}
    for compressed in (True, False):
        path = tmp_path / f"ov_{compressed}.xml"
        ov.save_model(ov.convert_model(source), str(path), compress_to_fp16=compressed)
        (report,) = verify_paths([path], source=source).models
        warnings[compressed] = [w for w in report.warnings if "compress_to_fp16" in w]
    weights = sum(1 for t in onnx.load(source).graph.initializer if t.data_type == onnx.TensorProto.FLOAT)
    assert len(warnings[True]) == 1 and warnings[True][0].startswith(f"{weights} weight tensors are stored as f16")
    assert warnings[False] == []
    (report,) = verify_paths([xml], source=source).models
    assert not any("compress_to_fp16" in w for w in report.warnings)


@pytest.mark.slow
def test_summation_order_passes_across_a_resnet50_class_network(tmp_path):
    """Bottleneck ResNet (the ResNet-50 block structure): onnxruntime and OpenVINO sum in their own orders."""
    source = torchvision.build("resnet_bottleneck", "dynamo", seed=0, folder=tmp_path)
    result = invoke(str(source), "--peer", "onnxruntime", "--peer", "openvino")
    assert result.exit_code == 0, result.output


# ---------------------------------------------------------------------------------------------------
# OpenVINO's own converter, pinned (OpenVINO 2026.4)


def test_openvino_convert_model_changes_the_ceil_avgpool_and_poolir_ir_keeps_it():
    result = invoke(str(EXAMPLES / "pytorch_ceil_pools" / "model.onnx"), "--peer", "openvino", "--json")
    assert result.exit_code == 1
    (model,) = json.loads(result.output)["models"]
    status = {row["path"]: row["status"] for row in model["rows"]}
    assert status["openvino(onnx)"] == "mismatch"
    assert status["openvino(onnx->ir)"] == status["runtime(onnx->ir)"] == "ok"
    (location,) = model["divergences"]
    node = location["node"]
    assert (location["path"], node["name"], node["op"]) == ("openvino(onnx)", "/pool1/AveragePool", "AveragePool-11")
    assert node["attributes"]["ceil_mode"] == 1 and node["attributes"]["count_include_pad"] == 1
    # The last window of each row: PyTorch divides by the 6 taps inside the padded extent, OpenVINO by 9.
    assert node["first_mismatch"]["index"] == [0, 0, 0, 16]
    assert node["first_mismatch"]["actual"] / node["first_mismatch"]["expected"] == pytest.approx(6 / 9, rel=1e-5)
    assert location["compared"] == 2  # the Conv and ReLU before it agree


def test_openvino_convert_model_keeps_a_ceil_maxpool_window_pytorch_drops(tmp_path):
    source = torchvision.build("openvino_maxpool_ceil", "dynamo", seed=0, folder=tmp_path)
    result = invoke(str(source), "--peer", "openvino", "--json")
    assert result.exit_code == 1
    (model,) = json.loads(result.output)["models"]
    (location,) = model["divergences"]
    assert location["path"] == "openvino(onnx)" and location["node"]["op"] == "MaxPool-12"
    assert (location["node"]["shape"], location["node"]["expected_shape"]) == ([1, 8, 18, 18], [1, 8, 17, 17])


def test_openvino_convert_model_does_not_flatten_softmax_11():
    result = invoke(str(EXAMPLES / "softmax_opset11_4d" / "model.onnx"), "--peer", "openvino")
    assert result.exit_code == 1
    assert "openvino(onnx): first diverges at node '/Softmax' (Softmax-11), output 'prob'" in result.output
    (ours,) = [line for line in result.output.splitlines() if line.startswith("  prob    openvino(onnx->ir)")]
    assert ours.endswith("ok (rtol)")


def test_known_deviations_keep_the_examples_all_ok_with_openvino():
    report = verify_paths([EXAMPLES / "pytorch_ceil_pools", EXAMPLES / "softmax_opset11_4d"], peers=("openvino",))
    assert report.passed
    rows = [row for model in report.models for row in model.rows if row.path == "openvino(onnx)"]
    assert {row.status for row in rows} == {"known-deviation"}


def test_json_divergence_schema():
    result = invoke(str(EXAMPLES / "softmax_opset11_4d" / "model.onnx"), "--peer", "openvino", "--json")
    document = json.loads(result.output)
    assert document["schema"] == "poolir-verify/2"
    (model,) = document["models"]
    (location,) = model["divergences"]
    assert set(location) == {"path", "first_output", "compared", "exposed", "tensors", "runs", "note", "node"}
    assert set(location["node"]) == {"name", "op", "attributes", "tensor", "inputs", "unobserved_inputs", "shape",
                                     "expected_shape", "max_abs_error", "max_rel_error", "mismatched", "size",
                                     "first_mismatch", "tolerance", "detail", "amplified"}
    assert location["node"]["inputs"] == ["/classifier.2/Relu_output_0"] and location["node"]["mismatched"] == 250
