"""Networks in the shapes of the torchvision classics, each in both of PyTorch's ONNX exporter styles.

Every builder is `builder(style="torchscript", seed=0, folder=None)` and returns a model that passed
onnx.checker (full check): an onnx.ModelProto in the "torchscript" style, or, in the "dynamo" style, the path of
`<name>.onnx` written into `folder` with its weights in `<name>.onnx.data` beside it. Each has one input `x` of
shape [1, 3, H, W] and named outputs. Channel counts are small (a network runs in milliseconds) but every
structural feature of the original is there.

What the two exporters write, in short (builder.py has the naming, layers.py the table layer by layer):

    torch.onnx.export(model, (x,), dynamo=False), opset 17 (the TorchScript exporter): traces forward(),
        maps each ATen op through its symbolic function, folds constants and eval-mode BatchNorms into the Conv
        before them, drops eval-mode Dropout, writes torch.flatten as Flatten and Linear as Gemm(transB=1),
        global pooling as GlobalAveragePool / GlobalMaxPool, chunk as Slices; node names are module scopes
        (`/layer1/layer1.0/conv1/Conv`), weights are inside the file.
    torch.onnx.export(model, (x,), dynamo=True), opset 18 (torch.export + onnxscript's torch_lib): works on the
        decomposed ATen graph, so AdaptiveAvgPool2d(1) arrives as mean(-1, -2) and becomes ReduceMean with its
        axes as an input, flatten arrives as view and becomes Shape/Squeeze/Concat/Reshape(allowzero=1),
        BatchNorm stays a BatchNormalization node (training_mode=0; onnxscript >= 0.5's optimizer can fuse it
        into the Conv), chunk becomes Split(num_outputs), .contiguous() an Identity, Dropout a Dropout with
        training_mode=False; MaxPool carries dilations. Nodes are `node_Conv_0`, values are the FX names
        (`conv2d`, `relu_1`, `getitem`), weights go to an external data file.

Two networks exist to pin OpenVINO 2026.4's ONNX frontend where it computes something else than PyTorch and
onnxruntime: `openvino_avgpool_ceil` (AvgPool2d(3, 2, 1, ceil_mode=True), count_include_pad=True, on an even
map: the last window hangs past the padding; OpenVINO writes AvgPool-16 with rounding_type="ceil_torch", so the
shape is right, but divides that window by the whole kernel, 9, where PyTorch divides by the 6 taps inside the
padded extent) and `openvino_maxpool_ceil` (MaxPool2d(2, 2, 1, ceil_mode=True) on an odd map: ceil mode would
add a window that starts in the right padding; PyTorch and onnxruntime drop it, OpenVINO writes MaxPool-8 with
rounding_type="ceil", keeps it and fills it with the lowest float).
"""

from __future__ import annotations

import numpy as np
import onnx

from tests.networks import layers as L
from tests.networks.builder import STYLES, Net
from tests.networks.convnext import convnext
from tests.networks.segmentation import segmentation
from tests.networks.unet import unet

OPENVINO_DIVERGENT = ("openvino_avgpool_ceil", "openvino_maxpool_ceil")


def resnet_basic(style="torchscript", seed=0, folder=None):
    """ResNet-18/34: stem, a BasicBlock, and a BasicBlock with stride 2 and a 1x1 stride-2 downsample."""
    net = Net("resnet_basic", style, seed, (1, 3, 64, 64))
    y = _resnet_stem(net, 16)
    y = _basic_block(net, y, 16, stride=1, path=("layer1", "layer1.0"))
    y = _basic_block(net, y, 32, stride=2, path=("layer2", "layer2.0"))
    return _classifier(net, L.adaptive_avg_pool(net, y), folder)


def resnet_bottleneck(style="torchscript", seed=0, folder=None):
    """ResNet-50: Bottleneck blocks (1x1, 3x3 with the stride, 1x1 to 4x), each with a 1x1 downsample."""
    net = Net("resnet_bottleneck", style, seed, (1, 3, 64, 64))
    y = _resnet_stem(net, 16)
    y = _bottleneck(net, y, width=8, stride=1, path=("layer1", "layer1.0"))
    y = _bottleneck(net, y, width=16, stride=2, path=("layer2", "layer2.0"))
    return _classifier(net, L.adaptive_avg_pool(net, y), folder)


def inception(style="torchscript", seed=0, folder=None):
    """GoogLeNet: BasicConv2d (conv, BatchNorm eps 0.001, ReLU), MaxPool2d(3, 2, ceil_mode=True), an Inception
    module (1x1 / 1x1-3x3 / 1x1-3x3 / MaxPool2d(3, 1, 1, ceil_mode=True)-1x1, Concat), dropout, fc."""
    net = Net("inception", style, seed, (1, 3, 64, 64))
    y = _basic_conv(net, net.x, 16, 7, stride=2, padding=3, module="conv1")
    y = L.max_pool(net, y, 3, 2, ceil_mode=True, module="maxpool1")  # 32 -> 16 (floor would give 15)
    with net.module("inception3a"):
        branch1 = _basic_conv(net, y, 8, 1, module="branch1")
        with net.module("branch2"):
            branch2 = _basic_conv(net, _basic_conv(net, y, 8, 1, module="branch2.0"), 12, 3, padding=1,
                                  module="branch2.1")
        with net.module("branch3"):
            branch3 = _basic_conv(net, _basic_conv(net, y, 4, 1, module="branch3.0"), 8, 3, padding=1,
                                  module="branch3.1")
        with net.module("branch4"):
            pooled = L.max_pool(net, y, 3, 1, 1, ceil_mode=True, module="branch4.0")
            branch4 = _basic_conv(net, pooled, 8, 1, module="branch4.1")
        y = L.concat(net, [branch1, branch2, branch3, branch4])
    y = L.max_pool(net, y, 3, 2, ceil_mode=True, module="maxpool3")  # 16 -> 8 (floor would give 7)
    y = L.flatten(net, L.adaptive_avg_pool(net, y))
    y = L.dropout(net, y, 0.2)
    return _finish(net, L.linear(net, y, 10, name="logits"), folder)


def squeezenet(style="torchscript", seed=0, folder=None):
    """SqueezeNet 1.1: Fire modules (squeeze 1x1, expand 1x1 and 3x3, Concat), MaxPool2d(3, 2, ceil_mode=True),
    and the classifier: Dropout, a 1x1 conv, ReLU, AdaptiveAvgPool2d(1), flatten."""
    net = Net("squeezenet", style, seed, (1, 3, 66, 66))
    with net.module("features"):
        y = L.relu(net, L.conv(net, net.x, 16, 3, stride=2, module="features.0"), module="features.1")  # 32
        y = L.max_pool(net, y, 3, 2, ceil_mode=True, module="features.2")  # 32 -> 16 (floor: 15)
        y = _fire(net, y, 8, 16, "features.3")
        y = _fire(net, y, 8, 16, "features.4")
        y = L.max_pool(net, y, 3, 2, ceil_mode=True, module="features.5")  # 16 -> 8 (floor: 7)
        y = _fire(net, y, 8, 24, "features.6")
    with net.module("classifier"):
        y = L.dropout(net, y, module="classifier.0")
        y = L.relu(net, L.conv(net, y, 10, 1, module="classifier.1"), module="classifier.2")
        y = L.adaptive_avg_pool(net, y, module="classifier.3")
    return _finish(net, _flatten_named(net, y, "logits"), folder)


def mobilenet_v3(style="torchscript", seed=0, folder=None):
    """MobileNetV3: Hardswish stem, an inverted residual with depthwise conv, squeeze-excitation (avg pool,
    1x1 conv, ReLU, 1x1 conv, Hardsigmoid, Mul) and a residual Add, one with a stride-2 5x5 depthwise conv and
    ReLU, and the classifier (Linear, Hardswish, Dropout, Linear). BatchNorm eps 0.001."""
    net = Net("mobilenet_v3", style, seed, (1, 3, 64, 64))
    with net.module("features"):
        y = _conv_norm_act(net, net.x, 16, 3, 2, L.hardswish, "features.0")  # 32
        with net.module("features.1", "block"):
            x = y
            y = _conv_norm_act(net, y, 64, 1, 1, L.hardswish, "block.0")
            y = _conv_norm_act(net, y, 64, 3, 1, L.hardswish, "block.1", groups=64)
            y = _squeeze_excitation(net, y, 16, "block.2")
            y = _conv_norm_act(net, y, 16, 1, 1, None, "block.3")
        y = L.add(net, y, x)
        with net.module("features.2", "block"):
            y = _conv_norm_act(net, y, 48, 1, 1, L.relu, "block.0")
            y = _conv_norm_act(net, y, 48, 5, 2, L.relu, "block.1", groups=48)  # 16
            y = _conv_norm_act(net, y, 24, 1, 1, None, "block.2")
        y = _conv_norm_act(net, y, 96, 1, 1, L.hardswish, "features.3")
    y = L.flatten(net, L.adaptive_avg_pool(net, y))
    with net.module("classifier"):
        y = L.hardswish(net, L.linear(net, y, 64, module="classifier.0"), module="classifier.1")
        y = L.dropout(net, y, 0.2, module="classifier.2")
        y = L.linear(net, y, 10, module="classifier.3", name="logits")
    return _finish(net, y, folder)


def shufflenet_v2(style="torchscript", seed=0, folder=None):
    """ShuffleNetV2: a stride-2 unit (two branches, Concat, channel shuffle) and a stride-1 unit (channel split
    by chunk, one branch, Concat, shuffle: Reshape, Transpose, Reshape), conv5, x.mean([2, 3]), fc."""
    net = Net("shufflenet_v2", style, seed, (1, 3, 64, 64))
    with net.module("conv1"):
        y = L.relu(net, L.conv_bn(net, net.x, 24, 3, 2, 1, conv_module="conv1.0", bn_module="conv1.1"),
                   module="conv1.2")  # 32
    y = L.max_pool(net, y, 3, 2, 1, module="maxpool")  # 16
    with net.module("stage2", "stage2.0"):
        with net.module("branch1"):
            left = L.conv_bn(net, y, 24, 3, 2, 1, groups=24, conv_module="branch1.0", bn_module="branch1.1")
            left = L.relu(net, L.conv_bn(net, left, 24, 1, conv_module="branch1.2", bn_module="branch1.3"),
                          module="branch1.4")
        right = _shuffle_branch(net, y, 24, stride=2)
        y = L.channel_shuffle(net, L.concat(net, [left, right]), 2)  # 48 channels, 8x8
    with net.module("stage2", "stage2.1"):
        kept, processed = L.chunk2(net, y)
        y = L.channel_shuffle(net, L.concat(net, [kept, _shuffle_branch(net, processed, 24, stride=1)]), 2)
    with net.module("conv5"):
        y = L.relu(net, L.conv_bn(net, y, 64, 1, conv_module="conv5.0", bn_module="conv5.1"), module="conv5.2")
    return _finish(net, L.linear(net, L.spatial_mean(net, y), 10, name="logits"), folder)


def densenet(style="torchscript", seed=0, folder=None):
    """DenseNet: stem, a dense block of two dense layers (BatchNorm, ReLU, 1x1 conv, BatchNorm, ReLU, 3x3 conv,
    Concat with everything before), a transition (BatchNorm, ReLU, 1x1 conv, AvgPool2d(2, 2)), final
    BatchNorm, ReLU, adaptive average pool, classifier. The BatchNorms after a Concat stay BatchNorms."""
    net = Net("densenet", style, seed, (1, 3, 64, 64))
    with net.module("features"):
        y = L.relu(net, L.conv_bn(net, net.x, 16, 7, 2, 3, conv_module="conv0", bn_module="norm0"),
                   module="relu0")  # 32
        y = L.max_pool(net, y, 3, 2, 1, module="pool0")  # 16
        with net.module("denseblock1"):
            for index in (1, 2):
                with net.module(f"denselayer{index}"):
                    new = L.relu(net, L.batch_norm(net, y, module="norm1"), module="relu1")
                    new = L.relu(net, L.conv_bn(net, new, 16, 1, conv_module="conv1", bn_module="norm2"),
                                 module="relu2")
                    new = L.conv(net, new, 8, 3, padding=1, bias=False, module="conv2")
                y = L.concat(net, [y, new])
        with net.module("transition1"):
            y = L.relu(net, L.batch_norm(net, y, module="norm"), module="relu")
            y = L.conv(net, y, 16, 1, bias=False, module="conv")
            y = L.avg_pool(net, y, 2, 2, module="pool")  # 8
        y = L.batch_norm(net, y, module="norm5")
    y = L.relu(net, y)
    return _classifier(net, L.adaptive_avg_pool(net, y, module=None), folder, module="classifier")


def vgg_head(style="torchscript", seed=0, folder=None):
    """VGG/AlexNet: conv-ReLU-MaxPool2d(2, 2) features, AdaptiveAvgPool2d((4, 4)) (an AveragePool), the old
    x.view(x.size(0), -1), and the classifier (Linear, ReLU, Dropout, Linear, ReLU, Dropout, Linear), then
    Softmax. Outputs `logits` and `probs`."""
    net = Net("vgg_head", style, seed, (1, 3, 32, 32))
    with net.module("features"):
        y = L.relu(net, L.conv(net, net.x, 8, 3, padding=1, module="features.0"), module="features.1")
        y = L.max_pool(net, y, 2, 2, module="features.2")  # 16
        y = L.relu(net, L.conv(net, y, 16, 3, padding=1, module="features.3"), module="features.4")
        y = L.max_pool(net, y, 2, 2, module="features.5")  # 8
    y = L.view_batch(net, L.adaptive_avg_pool(net, y, (4, 4)))
    with net.module("classifier"):
        y = L.relu(net, L.linear(net, y, 64, module="classifier.0"), module="classifier.1")
        y = L.dropout(net, y, module="classifier.2")
        y = L.relu(net, L.linear(net, y, 64, module="classifier.3"), module="classifier.4")
        y = L.dropout(net, y, module="classifier.5")
        logits = L.linear(net, y, 10, module="classifier.6", name="logits")
    L.softmax(net, logits, name="probs")
    return _finish(net, "logits", folder, "probs")


def lp_pool(style="torchscript", seed=0, folder=None):
    """LPPool2d(2, 2, 2) between two convolutions, as both exporters trace F.lp_pool2d."""
    net = Net("lp_pool", style, seed, (1, 3, 32, 32))
    y = L.conv(net, net.x, 8, 3, padding=1, module="conv1")
    y = L.lp_pool(net, y, 2.0, 2, 2)  # 16
    return _finish(net, _named_conv(net, y, 4, "y"), folder)


def adaptive_max_pool(style="torchscript", seed=0, folder=None):
    """AdaptiveMaxPool2d((4, 4)) on a 32x32 map (a MaxPool 8/8) and AdaptiveMaxPool2d(1) (a global max)."""
    net = Net("adaptive_max_pool", style, seed, (1, 3, 32, 32))
    y = L.relu(net, L.conv(net, net.x, 8, 3, padding=1, module="conv1"), module="relu")
    y = L.adaptive_max_pool(net, y, (4, 4), module="pool1")
    y = L.relu(net, L.conv(net, y, 16, 1, module="conv2"), module="relu")
    return _classifier(net, L.adaptive_max_pool(net, y, 1, module="pool2"), folder)


def openvino_avgpool_ceil(style="torchscript", seed=0, folder=None):
    """AvgPool2d(3, 2, 1, ceil_mode=True) with count_include_pad=True on a 32x32 map: 17 outputs, the last
    window starts on the last row and reaches one past the padding. Outputs `pooled` and `y` (a 1x1 conv)."""
    net = Net("openvino_avgpool_ceil", style, seed, (1, 3, 32, 32))
    y = L.relu(net, L.conv(net, net.x, 8, 3, padding=1, module="conv1"), module="relu")
    pooled = L.avg_pool(net, y, 3, 2, 1, ceil_mode=True, count_include_pad=True, module="pool")
    net.output(net.rename(pooled, "pooled"))
    return _finish(net, _named_conv(net, "pooled", 4, "y"), folder)


def openvino_maxpool_ceil(style="torchscript", seed=0, folder=None):
    """MaxPool2d(2, 2, 1, ceil_mode=True) on a 33x33 map: PyTorch gives 17 outputs (an 18th window would start in
    the right padding). Outputs `pooled` and `y` (a 1x1 conv), their spatial dims declared by name: ONNX's own
    shape inference says 18."""
    net = Net("openvino_maxpool_ceil", style, seed, (1, 3, 33, 33))
    y = L.relu(net, L.conv(net, net.x, 8, 3, padding=1, module="conv1"), module="relu")
    pooled = net.rename(L.max_pool(net, y, 2, 2, 1, ceil_mode=True, module="pool"), "pooled")
    net.output(pooled, shape=[1, 8, "height", "width"])
    # OpenVINO's extra window holds the lowest float32 (-3.4e38) on every channel; a head whose filters sum to
    # more than 1 in |w| overflows to +-inf or stays finite depending on the order an engine sums in (BLAS
    # differs by machine), so its filters are scaled to keep every partial sum finite.
    head = L.conv(net, pooled, 4, 1, module="head", max_weight_sum=np.float32(0.9))
    net.output(net.rename(head, "y"), shape=[1, 4, "height", "width"])
    return net.finish(folder)


NETWORKS = {builder.__name__: builder for builder in (
    resnet_basic, resnet_bottleneck, inception, squeezenet, mobilenet_v3, shufflenet_v2, densenet, vgg_head,
    lp_pool, adaptive_max_pool, openvino_avgpool_ceil, openvino_maxpool_ceil, convnext, unet,
    segmentation)}


def build(name: str, style: str = "torchscript", seed: int = 0, folder=None):
    """NETWORKS[name](style, seed, folder)."""
    return NETWORKS[name](style, seed, folder)


def styles() -> list[str]:
    return list(STYLES)


# -- blocks ------------------------------------------------------------------------------------------------
def _resnet_stem(net: Net, channels: int) -> str:
    y = L.relu(net, L.conv_bn(net, net.x, channels, 7, 2, 3, conv_module="conv1", bn_module="bn1"), module="relu")
    return L.max_pool(net, y, 3, 2, 1, module="maxpool")


def _basic_block(net: Net, x: str, planes: int, stride: int, path: tuple[str, ...]) -> str:
    with net.module(*path):
        y = L.relu(net, L.conv_bn(net, x, planes, 3, stride, 1, conv_module="conv1", bn_module="bn1"),
                   module="relu")
        y = L.conv_bn(net, y, planes, 3, 1, 1, conv_module="conv2", bn_module="bn2")
        return L.relu(net, L.add(net, y, _downsample(net, x, planes, stride)), module="relu")


def _bottleneck(net: Net, x: str, width: int, stride: int, path: tuple[str, ...]) -> str:
    with net.module(*path):
        y = L.relu(net, L.conv_bn(net, x, width, 1, conv_module="conv1", bn_module="bn1"), module="relu")
        y = L.relu(net, L.conv_bn(net, y, width, 3, stride, 1, conv_module="conv2", bn_module="bn2"),
                   module="relu")
        y = L.conv_bn(net, y, width * 4, 1, conv_module="conv3", bn_module="bn3")
        return L.relu(net, L.add(net, y, _downsample(net, x, width * 4, stride)), module="relu")


def _downsample(net: Net, x: str, planes: int, stride: int) -> str:
    if stride == 1 and net.channels(x) == planes:
        return x
    return L.conv_bn(net, x, planes, 1, stride, conv_module=("downsample", "downsample.0"),
                     bn_module=("downsample", "downsample.1"))


def _basic_conv(net: Net, x: str, channels: int, kernel: int, stride=1, padding=0, module="conv") -> str:
    """GoogLeNet's BasicConv2d: conv (no bias), BatchNorm(eps=0.001), F.relu."""
    with net.module(module):
        y = L.conv_bn(net, x, channels, kernel, stride, padding, conv_module="conv", bn_module="bn", epsilon=1e-3)
        return L.relu(net, y)


def _fire(net: Net, x: str, squeeze: int, expand: int, module: str) -> str:
    with net.module(module):
        s = L.relu(net, L.conv(net, x, squeeze, 1, module="squeeze"), module="squeeze_activation")
        e1 = L.relu(net, L.conv(net, s, expand, 1, module="expand1x1"), module="expand1x1_activation")
        e3 = L.relu(net, L.conv(net, s, expand, 3, padding=1, module="expand3x3"), module="expand3x3_activation")
        return L.concat(net, [e1, e3])


def _conv_norm_act(net: Net, x: str, channels: int, kernel: int, stride: int, activation, module: str,
                   groups=1) -> str:
    """torchvision's Conv2dNormActivation with MobileNetV3's BatchNorm eps 0.001."""
    with net.module(module):
        y = L.conv_bn(net, x, channels, kernel, stride, (kernel - 1) // 2, groups, conv_module=f"{module}.0",
                      bn_module=f"{module}.1", epsilon=1e-3)
        return y if activation is None else activation(net, y, module=f"{module}.2")


def _squeeze_excitation(net: Net, x: str, squeeze: int, module: str) -> str:
    with net.module(module):
        scale = L.adaptive_avg_pool(net, x)
        scale = L.relu(net, L.conv(net, scale, squeeze, 1, module="fc1"), module="activation")
        scale = L.hardsigmoid(net, L.conv(net, scale, net.channels(x), 1, module="fc2"), module="scale_activation")
        return L.mul(net, scale, x)


def _shuffle_branch(net: Net, x: str, channels: int, stride: int) -> str:
    """ShuffleNetV2's branch2: 1x1 conv-BN-ReLU, 3x3 depthwise conv-BN (with the stride), 1x1 conv-BN-ReLU."""
    with net.module("branch2"):
        y = L.relu(net, L.conv_bn(net, x, channels, 1, conv_module="branch2.0", bn_module="branch2.1"),
                   module="branch2.2")
        y = L.conv_bn(net, y, channels, 3, stride, 1, groups=channels, conv_module="branch2.3",
                      bn_module="branch2.4")
        return L.relu(net, L.conv_bn(net, y, channels, 1, conv_module="branch2.5", bn_module="branch2.6"),
                      module="branch2.7")


# -- heads --------------------------------------------------------------------------------------------------
def _classifier(net: Net, pooled: str, folder, module="fc"):
    """torch.flatten(x, 1), then the Linear classifier as the graph output `logits`."""
    return _finish(net, L.linear(net, L.flatten(net, pooled), 10, module=module, name="logits"), folder)


def _flatten_named(net: Net, x: str, name: str) -> str:
    """torch.flatten(x, 1) as the graph output `name`."""
    return net.rename(L.flatten(net, x), name)


def _named_conv(net: Net, x: str, channels: int, name: str) -> str:
    """A 1x1 conv head as the graph output `name`."""
    return net.rename(L.conv(net, x, channels, 1, module="head"), name)


def _finish(net: Net, output: str, folder, *more_outputs: str):
    for name in (output, *more_outputs):
        net.output(name)
    return net.finish(folder)


def proto_of(model) -> onnx.ModelProto:
    """The ModelProto of what build() returned (the torchscript style's proto, or the dynamo style's path)."""
    return model if isinstance(model, onnx.ModelProto) else onnx.load(model)


def input_feeds(model, seed: int) -> dict[str, np.ndarray]:
    """A seeded standard-normal feed for the network's one input `x`."""
    (x,) = proto_of(model).graph.input
    shape = [dim.dim_value for dim in x.type.tensor_type.shape.dim]
    return {x.name: np.random.default_rng(seed).standard_normal(shape).astype(np.float32)}
