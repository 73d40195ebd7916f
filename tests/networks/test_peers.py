"""Whole networks through the two peers: every torchvision-shaped network in both exporter styles and every
model-zoo graph passes onnx.checker, and onnxruntime and OpenVINO's own ONNX frontend agree on it within
`agree`'s tolerance, except where OpenVINO 2026.4 is known to differ, which is pinned as a difference (with
its size and place) so that a fixed OpenVINO fails here and gets noticed.

These tests prove the networks and the harness (the peers agree, the tolerance separates rounding from a wrong
window); poolir's own runs of the same networks will be compared with the same peers and the same `agree`.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from tests.networks import torchvision, zoo
from tests.networks.torchvision import input_feeds, proto_of as _proto
from tests.networks.peers import (agree, ir_layer_types, onnxruntime_runner, openvino_ir_of, rtol_for,
                                  run_onnxruntime, run_openvino_onnx, run_openvino_xml)

AGREEING = [name for name in torchvision.NETWORKS if name not in torchvision.OPENVINO_DIVERGENT]
STYLES = torchvision.styles()
INPUT_SEED = 20260
# onnxruntime vs OpenVINO on openvino_avgpool_ceil's output `y` (seed 0, input seed INPUT_SEED): max |difference|
# and that as a fraction of max |y|. Both styles compute the same function, so the same numbers.
AVGPOOL_CEIL_ERROR = (0.7272, 0.1766)

# The IR layers (type, version) OpenVINO 2026.4 writes for the torchvision-shaped networks in both styles
# (openvino.convert_model + save_model, compress_to_fp16=False; with compression every f32 Const becomes an f16
# Const and a Convert-1). BatchNorm is folded into Convolution, Gemm becomes MatMul + Add, Flatten and the
# shape arithmetic fold into Reshape's constant target, global pools become ReduceMean / ReduceMax; ConvNeXt's
# LayerNormalization becomes MVN-6 + Multiply + Add, and its decomposed GELU (Div, Erf, Add, Mul, Mul) one Gelu-7.
IR_LAYERS = frozenset({
    ("Parameter", "opset1"), ("Const", "opset1"), ("Result", "opset1"),
    ("Convolution", "opset1"), ("GroupConvolution", "opset1"), ("MatMul", "opset1"),
    ("MaxPool", "opset8"), ("AvgPool", "opset1"), ("AvgPool", "opset16"),  # 16: rounding_type="ceil_torch"
    ("ReduceMean", "opset1"), ("ReduceMax", "opset1"),
    ("Add", "opset1"), ("Multiply", "opset1"), ("Power", "opset1"), ("Abs", "opset1"), ("Sign", "opset1"),
    ("ReLU", "opset1"), ("HSwish", "opset4"), ("HardSigmoid", "opset1"), ("SoftMax", "opset8"),
    ("Concat", "opset1"), ("Split", "opset1"), ("Slice", "opset8"), ("Reshape", "opset1"), ("Transpose", "opset1"),
    ("MVN", "opset6"), ("Gelu", "opset7"),
    # the U-Net's: ConvTranspose (grouped too), PixelShuffle, ELU, and GroupNorm's Shape(x)
    ("ConvolutionBackpropData", "opset1"), ("GroupConvolutionBackpropData", "opset1"), ("DepthToSpace", "opset1"),
    ("Elu", "opset1"), ("ShapeOf", "opset3"),
    # the segmentation network's: Resize, SiLU (Sigmoid * x becomes Swish-4), and x.shape[-2:] for its last size
    ("Interpolate", "opset11"), ("Swish", "opset4"), ("Gather", "opset8"),
})
# ... and what the model-zoo graphs add: AlexNet's, GoogLeNet's and ZFNet's LRN, and ShuffleNet v1's
# Reshape-Transpose-Reshape, which OpenVINO recognises as a channel shuffle.
ZOO_IR_LAYERS = frozenset({("LRN", "opset1"), ("ShuffleChannels", "opset1")})


def _feeds(model, seed=INPUT_SEED) -> dict[str, np.ndarray]:
    return input_feeds(model, seed)


def _check(model) -> None:
    onnx.checker.check_model(model if isinstance(model, onnx.ModelProto) else str(model), full_check=True)


# -- the torchvision-shaped networks ------------------------------------------------------------------------
@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("name", AGREEING)
def test_onnxruntime_and_openvino_agree(built, name, style):
    model = built(name, style)
    _check(model)
    feeds = _feeds(model)
    expected = run_onnxruntime(model, feeds)
    actual = run_openvino_onnx(model, feeds)
    assert set(expected) == {output.name for output in _proto(model).graph.output}
    for output, value in expected.items():
        ok, max_abs, max_rel = agree(actual[output], value)
        assert ok, f"{name} ({style}) {output}: OpenVINO differs from onnxruntime by {max_abs:.3g} ({max_rel:.3g})"
        assert np.ptp(value) > 1e3 * max_abs, f"{name} {output}: an output that hardly varies proves little"


@pytest.mark.parametrize("name", list(torchvision.NETWORKS))
def test_both_exporter_styles_compute_the_same_function(built, name):
    """One seed, one function: the styles differ in representation only (BatchNorm folded or not, Flatten or
    Shape/Reshape, Slice or Split), so onnxruntime gives the same numbers up to rounding."""
    feeds = _feeds(built(name, "torchscript"))
    torchscript = run_onnxruntime(built(name, "torchscript"), feeds)
    dynamo = run_onnxruntime(built(name, "dynamo"), feeds)
    for output, value in torchscript.items():
        ok, max_abs, _ = agree(dynamo[output], value)
        assert ok, f"{name} {output}: the dynamo style differs from the torchscript style by {max_abs:.3g}"


def test_exporter_styles_are_written_as_the_exporters_write_them(built):
    torchscript, dynamo = _proto(built("resnet_basic", "torchscript")), built("resnet_basic", "dynamo")
    dynamo_proto = onnx.load(dynamo, load_external_data=False)
    assert (torchscript.opset_import[0].version, torchscript.ir_version) == (17, 8)
    assert (dynamo_proto.opset_import[0].version, dynamo_proto.ir_version) == (18, 10)
    assert torchscript.graph.node[0].name == "/conv1/Conv" and "BatchNormalization" not in _ops(torchscript)
    assert {"Flatten", "GlobalAveragePool", "Gemm"} <= _ops(torchscript)
    assert dynamo_proto.graph.node[0].name == "node_Conv_0" and dynamo_proto.graph.node[0].output[0] == "conv2d"
    assert {"BatchNormalization", "ReduceMean", "Shape", "Reshape"} <= _ops(dynamo_proto)
    assert "Flatten" not in _ops(dynamo_proto)
    assert "layer1.0.bn1.running_var" in {i.name for i in dynamo_proto.graph.initializer}
    assert all(onnx.external_data_helper.uses_external_data(i) for i in dynamo_proto.graph.initializer)
    assert (dynamo.parent / "resnet_basic.onnx.data").is_file()
    assert {"Slice"} <= _ops(_proto(built("shufflenet_v2", "torchscript")))
    assert {"Split", "Identity"} <= _ops(_proto(built("shufflenet_v2", "dynamo")))


def test_openvino_writes_the_known_ir_layers(built, tmp_path):
    """Every network, both styles, through OpenVINO's converter: the IR layer types are exactly IR_LAYERS
    (poolir must read, run and convert all of them)."""
    found = set()
    for name in torchvision.NETWORKS:
        for style in STYLES:
            found |= set(ir_layer_types(openvino_ir_of(built(name, style), tmp_path, compress_to_fp16=False,
                                                       name=f"{name}-{style}")))
    assert found == IR_LAYERS, {"new": sorted(found - IR_LAYERS), "gone": sorted(IR_LAYERS - found)}


def _ops(model: onnx.ModelProto) -> set[str]:
    return {node.op_type for node in model.graph.node}


# -- what OpenVINO 2026.4 computes differently ----------------------------------------------------------------
@pytest.mark.parametrize("style", STYLES)
def test_openvino_divides_ceil_overhang_windows_by_the_whole_kernel(built, style):
    """AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=True) on 32x32: the 17th window starts on row 31 and
    covers row 31, the padding row 32 and row 33 past it. PyTorch (and onnxruntime) divide by the 2 rows inside
    the padded extent, OpenVINO by all 3: its last row and column are 2/3 of onnxruntime's (4/9 in the corner),
    everything else agrees, and the 1x1 conv after the pool carries the error into the network's output."""
    model = built("openvino_avgpool_ceil", style)
    _check(model)
    feeds = _feeds(model)
    expected, actual = run_onnxruntime(model, feeds), run_openvino_onnx(model, feeds)
    pooled, ov_pooled = expected["pooled"], actual["pooled"]
    assert ov_pooled.shape == pooled.shape == (1, 8, 17, 17)
    assert agree(ov_pooled[:, :, :16, :16], pooled[:, :, :16, :16])[0]
    divisor_ratio = np.full((17, 17), 1.0)
    divisor_ratio[16, :] = divisor_ratio[:, 16] = 2 / 3
    divisor_ratio[16, 16] = 4 / 9
    assert agree(ov_pooled, pooled * divisor_ratio)[0], "OpenVINO's ceil-mode AvgPool divisor changed"
    ok, max_abs, max_rel = agree(actual["y"], expected["y"])
    assert not ok, "OpenVINO now agrees with onnxruntime on ceil-mode AvgPool windows: unpin this divergence"
    assert (max_abs, max_rel) == pytest.approx(AVGPOOL_CEIL_ERROR, rel=1e-3)


@pytest.mark.parametrize("style", STYLES)
def test_openvino_keeps_a_ceil_window_that_starts_in_the_padding(built, style):
    """MaxPool2d(2, 2, 1, ceil_mode=True) on 33x33: ceil((33 + 2 - 2) / 2) + 1 = 18 windows, the 18th starting at
    row 33, in the right padding. PyTorch and onnxruntime drop it (17x17); OpenVINO keeps it (18x18, as ONNX
    shape inference also says) and fills it with the lowest float, -3.4e38, which the 1x1 conv after the pool
    turns into values near +-3.3e38. The 17x17 both compute agree."""
    model = built("openvino_maxpool_ceil", style)
    _check(model)
    feeds = _feeds(model)
    expected, actual = run_onnxruntime(model, feeds), run_openvino_onnx(model, feeds)
    assert expected["pooled"].shape == (1, 8, 17, 17)
    assert actual["pooled"].shape == (1, 8, 18, 18), "OpenVINO no longer keeps the window in the padding: unpin"
    for output in ("pooled", "y"):
        assert agree(actual[output][:, :, :17, :17], expected[output])[0]
    lowest = np.finfo(np.float32).min
    assert np.all(actual["pooled"][:, :, 17, :] == lowest) and np.all(actual["pooled"][:, :, :, 17] == lowest)
    edge = np.concatenate([actual["y"][:, :, 17, :].ravel(), actual["y"][:, :, :17, 17].ravel()])
    assert np.all(np.abs(edge) > 1e37)


# -- the tolerance tells rounding from a wrong window ---------------------------------------------------------
def _with_attribute(model: onnx.ModelProto, node_name: str, attribute: str, value: int) -> onnx.ModelProto:
    mutated = onnx.ModelProto()
    mutated.CopyFrom(model)
    (node,) = [node for node in mutated.graph.node if node.name == node_name]
    (found,) = [a for a in node.attribute if a.name == attribute]
    assert found.i != value
    found.i = value
    return mutated


@pytest.mark.parametrize("node_name, attribute, value", [
    ("/features/features.2/MaxPool", "ceil_mode", 0),  # 16x16 -> 15x15 from there on; the global pool hides it
    ("/features/features.5/MaxPool", "ceil_mode", 0),  # 8x8 -> 7x7
])
def test_agree_rejects_a_wrong_pooling_window(built, node_name, attribute, value):
    """SqueezeNet with one MaxPool's ceil_mode flipped: same output shape (the classifier ends in a global
    average pool), different windows. agree must say no, by far more than its tolerance."""
    model = built("squeezenet", "torchscript")
    feeds = _feeds(model)
    right = run_onnxruntime(model, feeds)["logits"]
    wrong = run_onnxruntime(_with_attribute(model, node_name, attribute, value), feeds)["logits"]
    ok, _, max_rel = agree(wrong, right)
    assert wrong.shape == right.shape and not ok
    assert max_rel > 30 * rtol_for(np.float32), f"a wrong window moved the output by only {max_rel:.3g}"


def test_agree_rejects_a_wrong_divisor(built):
    """count_include_pad flipped on a padded 3x3 AvgPool: only the border windows' divisors change."""
    model = built("openvino_avgpool_ceil", "torchscript")
    feeds = _feeds(model)
    right = run_onnxruntime(model, feeds)["y"]
    wrong = run_onnxruntime(_with_attribute(model, "/pool/AveragePool", "count_include_pad", 0), feeds)["y"]
    ok, _, max_rel = agree(wrong, right)
    assert not ok and max_rel > 30 * rtol_for(np.float32)


@pytest.mark.parametrize("name", ["resnet_bottleneck", "densenet", "mobilenet_v3"])
def test_fp16_compressed_ir_agrees_at_the_float16_tolerance(built, name, tmp_path):
    """openvino.save_model's default f16 weight compression moves the output by a few 1e-4 of its size, a
    thousand times what the uncompressed IR differs by: within the f16 tolerance, not a summation-order
    difference. Without compression the IR agrees at f32."""
    model = built(name, "torchscript")
    feeds = _feeds(model)
    expected = run_onnxruntime(model, feeds)["logits"]
    compressed = run_openvino_xml(openvino_ir_of(model, tmp_path, name="f16"), feeds)["logits"]
    exact = run_openvino_xml(openvino_ir_of(model, tmp_path, compress_to_fp16=False, name="f32"), feeds)["logits"]
    exact_ok, _, exact_error = agree(exact, expected, np.float32)
    compressed_ok, _, compressed_error = agree(compressed, expected, np.float16)
    assert exact_ok and compressed_ok
    assert compressed_error > 100 * exact_error, "compress_to_fp16 no longer rounds the weights?"


# -- the model-zoo graphs at full size ------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name", zoo.light_models())
def test_light_model_zoo_network(name, tmp_path):
    """A model-zoo graph with random weights: checked, run by onnxruntime and by OpenVINO (OpenVINO's own IR
    conversion, saved without f16 compression and read back), the two agree, and the output is neither
    constant nor one-hot: it depends on the input by far more than the tolerance."""
    path = tmp_path / f"{name}.onnx"
    model = zoo.light_model(name, seed=0)
    onnx.save(model, path)
    _check(path)
    feeds, other_feeds = zoo.random_feeds(model, INPUT_SEED), zoo.random_feeds(model, INPUT_SEED + 1)
    output = model.graph.output[0].name
    del model
    onnxruntime = onnxruntime_runner(path)
    expected = onnxruntime(feeds)[output]
    xml = openvino_ir_of(path, tmp_path, compress_to_fp16=False)
    assert set(ir_layer_types(xml)) <= IR_LAYERS | ZOO_IR_LAYERS
    actual = run_openvino_xml(xml, feeds, [output])[output]
    ok, max_abs, max_rel = agree(actual, expected)
    assert ok, f"{name}: OpenVINO differs from onnxruntime by {max_abs:.3g} ({max_rel:.3g} of the output's size)"
    assert not agree(onnxruntime(other_feeds)[output], expected)[0], "the output ignores the input"
    if name != "densenet121":  # DenseNet ends in its classifier conv; the others in a Softmax
        assert expected.max() < 0.9, f"{name}: a one-hot softmax ({expected.max():.3f})"


@pytest.mark.slow
def test_agree_rejects_a_wrong_divisor_deep_in_a_network():
    """BN-Inception with count_include_pad set on its first padded 3x3 AvgPool (seventy layers, and BatchNorms
    whose statistics no longer match, before the softmax): agree says no, by far more than its tolerance."""
    model = zoo.light_model("inception_v2", seed=0)
    feeds = zoo.random_feeds(model, INPUT_SEED)
    output = model.graph.output[0].name
    right = run_onnxruntime(model, feeds)[output]
    pool = next(node for node in model.graph.node if node.op_type == "AveragePool")
    assert list(pool.attribute[1].ints) == [1, 1, 1, 1] and pool.attribute[1].name == "pads"
    pool.attribute.append(onnx.helper.make_attribute("count_include_pad", 1))
    ok, _, max_rel = agree(run_onnxruntime(model, feeds)[output], right)
    assert not ok and max_rel > 30 * rtol_for(np.float32)
