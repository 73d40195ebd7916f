"""The layer vocabulary of the torchvision-shaped networks, each layer as PyTorch's two exporters write it.

Every function takes the Net, an input value and the layer's arguments, and returns the output value. `module`
is the layer's nn.Module name (it scopes node names and names parameters); functional calls in a forward()
have none. Where the exporters differ, read from their sources: the TorchScript exporter's symbolic functions
(torch/onnx/_internal/torchscript_exporter/symbolic_opset{9..17}.py: batch_norm, _avg_pool, max_pool,
_adaptive_pool, prim_constant_chunk, hardsigmoid), onnxscript's torch_lib, which the dynamo exporter dispatches
ATen ops to (function_libs/torch_lib/ops/nn.py and core.py: aten_max_pool2d, aten_avg_pool2d, aten_linear,
aten_dropout, aten_mean_dim, aten_sym_size, aten_view, aten_split, aten_clone,
_aten_native_batch_norm_inference_onnx), onnxscript's optimizer (SplitToSequence -> Split, and since 0.5.0
the Conv + BatchNorm fusion rule), PyTorch's C++ adaptive_avg_pool2d (output 1 -> mean), and issues
pytorch#156542 (Dropout kept), #183439 (adaptive max pool refused), #166797 (node_Conv_<n> names):

    layer                 torchscript (opset 17)                   dynamo (opset 18)
    Conv2d + BatchNorm2d  one Conv, BN folded into its weights     Conv, BatchNormalization(training_mode=0)
    BatchNorm2d alone     BatchNormalization(epsilon, momentum=0.9, training_mode=0), both styles
    MaxPool2d             MaxPool(ceil_mode, kernel_shape, pads,   the same, plus dilations
                          strides)
    AvgPool2d             AveragePool(ceil_mode, count_include_pad, kernel_shape, pads, strides), both styles
    AdaptiveAvgPool2d(1)  GlobalAveragePool                        ReduceMean(x, [-1, -2], keepdims=1): the C++
                                                                   op is x.mean((-1, -2), keepdim=True)
    AdaptiveAvgPool2d(n)  AveragePool, kernel = stride = in / n (only when n divides the input), both styles
    AdaptiveMaxPool2d(1)  GlobalMaxPool                            the released exporters refuse it (torchlib
    AdaptiveMaxPool2d(n)  MaxPool, kernel = stride = in / n, its   raises NotImplementedError; pytorch#183439);
                          unused indices output still declared     written as the decomposition under
                                                                   discussion would: ReduceMax / MaxPool
    torch.flatten(x, 1)   Flatten(axis=1)                          view(x, [batch, -1]) with a dynamic batch:
                                                                   Shape(start=0, end=1), Squeeze, Reshape to
                                                                   [-1], Concat with [features],
                                                                   Reshape(allowzero=1)
    x.view(x.size(0), -1) Shape, Gather(0), Unsqueeze([0]), Concat with [-1], Reshape (exported with a dynamic
                          batch axis; the old torchvision AlexNet/VGG forward); dynamo: as torch.flatten
    nn.Linear             Gemm(alpha=1, beta=1, transB=1)          Gemm(transB=1) on a 2-D input (on any other
                                                                   rank: Transpose(weight), MatMul, Add; no
                                                                   network here has one)
    Dropout (eval)        nothing: the symbolic returns its input  Dropout(x, ratio, training_mode=False), as
                                                                   torch_lib writes it; the optimizer usually
                                                                   drops it, at opset 22 it stayed
                                                                   (pytorch#156542)
    x.chunk(2, dim=1)     Slice per chunk (prim::ConstantChunk,    Split(num_outputs=2): SplitToSequence,
                          constants folded)                        rewritten by onnxscript's optimizer
    .contiguous()         nothing                                  Identity (aten.clone)
    x.mean([2, 3])        ReduceMean(axes=[2, 3], keepdims=0)      ReduceMean(x, [2, 3], keepdims=0)
    Hardsigmoid           HardSigmoid(alpha=1/6)                   HardSigmoid(alpha=1/6, beta=0.5)
    Hardswish, ReLU, add, mul, cat, softmax: HardSwish, Relu, Add, Mul, Concat(axis=1), Softmax(axis=1)
    LPPool2d              F.lp_pool2d is Python, so both trace it: Pow(x, p), AveragePool, Sign, Abs, Relu,
                          Mul, Mul(kh * kw), Pow(1 / p)
"""

from __future__ import annotations

import numpy as np

from tests.networks.builder import Net

BN_EPSILON = 1e-5
BN_MOMENTUM = 0.9  # ONNX's momentum is 1 - PyTorch's 0.1


def _pair(value) -> list[int]:
    return list(value) if isinstance(value, (tuple, list)) else [value, value]


def _scope(net: Net, module: str | tuple | None):
    segments = () if module is None else (module,) if isinstance(module, str) else tuple(module)
    return net.module(*segments)


def _conv_attributes(kernel, stride, padding, groups) -> dict:
    pads = _pair(padding)
    return dict(dilations=[1, 1], group=groups, kernel_shape=_pair(kernel), pads=pads + pads, strides=_pair(stride))


def conv(net: Net, x: str, out_channels: int, kernel, stride=1, padding=0, groups=1, bias=True,
         module="conv", max_weight_sum=None) -> str:
    """nn.Conv2d not followed by a BatchNorm. `max_weight_sum` rescales each filter so the sum of its |weights|
    stays below it: below 1, no partial sum over inputs of magnitude <= M can leave [-M, M], whatever order an
    engine sums in."""
    in_channels = net.channels(x)
    weight = net.he_normal(out_channels, in_channels // groups, *_pair(kernel))
    if max_weight_sum is not None:
        sums = np.abs(weight).reshape(out_channels, -1).sum(axis=1)
        weight = (weight * (max_weight_sum / np.maximum(sums, max_weight_sum))[:, None, None, None]).astype(np.float32)
    bias_values = net.normal(0.01, out_channels) if bias else None
    with _scope(net, module):
        inputs = [x, net.param("weight", weight)] + ([net.param("bias", bias_values)] if bias else [])
        return net.op("Conv", inputs, aten="conv2d", **_conv_attributes(kernel, stride, padding, groups))


def conv_bn(net: Net, x: str, out_channels: int, kernel, stride=1, padding=0, groups=1,
            conv_module="conv", bn_module="bn", epsilon=BN_EPSILON) -> str:
    """nn.Conv2d(bias=False) then nn.BatchNorm2d in eval mode: folded into one Conv by torchscript (its
    peephole pass fuses Conv + BatchNorm), two nodes in dynamo."""
    in_channels = net.channels(x)
    weight = net.he_normal(out_channels, in_channels // groups, *_pair(kernel))
    gamma, beta, mean, var = _batch_norm_statistics(net, out_channels)
    attributes = _conv_attributes(kernel, stride, padding, groups)
    if not net.dynamo:
        factor = gamma / np.sqrt(var + np.float32(epsilon))
        folded_weight = (weight * factor[:, None, None, None]).astype(np.float32)
        folded_bias = (beta - mean * factor).astype(np.float32)
        with _scope(net, conv_module):
            inputs = [x, net.folded_param("Conv", folded_weight), net.folded_param("Conv", folded_bias)]
            return net.op("Conv", inputs, **attributes)
    with _scope(net, conv_module):
        y = net.op("Conv", [x, net.param("weight", weight)], aten="conv2d", **attributes)
    return _batch_norm_node(net, y, (gamma, beta, mean, var), bn_module, epsilon)


def batch_norm(net: Net, x: str, module="bn", epsilon=BN_EPSILON) -> str:
    """nn.BatchNorm2d in eval mode where no Conv precedes it (DenseNet): a BatchNormalization in both styles."""
    return _batch_norm_node(net, x, _batch_norm_statistics(net, net.channels(x)), module, epsilon)


def _batch_norm_statistics(net: Net, channels: int):
    """gamma, beta, running mean, running var: the spread a trained network's BatchNorms have."""
    return (net.uniform(0.8, 1.2, channels), net.normal(0.1, channels), net.normal(0.1, channels),
            net.uniform(0.5, 1.5, channels))


def _batch_norm_node(net: Net, x: str, statistics, module, epsilon) -> str:
    gamma, beta, mean, var = statistics
    with _scope(net, module):
        inputs = [x, net.param("weight", gamma), net.param("bias", beta), net.param("running_mean", mean),
                  net.param("running_var", var)]
        # torch.export's _native_batch_norm_legit_no_training returns a tuple: the value is its getitem
        return net.op("BatchNormalization", inputs, aten="getitem", epsilon=epsilon, momentum=BN_MOMENTUM,
                      training_mode=0)


def relu(net: Net, x: str, module=None) -> str:
    with _scope(net, module):
        return net.op("Relu", [x], aten="relu")


def hardswish(net: Net, x: str, module=None) -> str:
    with _scope(net, module):
        return net.op("HardSwish", [x], aten="hardswish")


def hardsigmoid(net: Net, x: str, module=None) -> str:
    extra = {"beta": 0.5} if net.dynamo else {}
    with _scope(net, module):
        return net.op("HardSigmoid", [x], aten="hardsigmoid", alpha=1.0 / 6.0, **extra)


def add(net: Net, a: str, b: str) -> str:
    return net.op("Add", [a, b], aten="add")


def mul(net: Net, a: str, b: str) -> str:
    return net.op("Mul", [a, b], aten="mul")


def concat(net: Net, values: list[str], module=None) -> str:
    with _scope(net, module):
        return net.op("Concat", values, aten="cat", axis=1)


def softmax(net: Net, x: str, name: str | None = None) -> str:
    return net.op("Softmax", [x], aten="softmax", name=name, axis=1)


def max_pool(net: Net, x: str, kernel, stride=None, padding=0, ceil_mode=False, module=None) -> str:
    pads = _pair(padding)
    extra = {"dilations": [1, 1]} if net.dynamo else {}
    with _scope(net, module):
        return net.op("MaxPool", [x], aten="max_pool2d", ceil_mode=int(ceil_mode), kernel_shape=_pair(kernel),
                      pads=pads + pads, strides=_pair(kernel if stride is None else stride), **extra)


def avg_pool(net: Net, x: str, kernel, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
             module=None) -> str:
    pads = _pair(padding)
    with _scope(net, module):
        return net.op("AveragePool", [x], aten="avg_pool2d", ceil_mode=int(ceil_mode),
                      count_include_pad=int(count_include_pad), kernel_shape=_pair(kernel), pads=pads + pads,
                      strides=_pair(kernel if stride is None else stride))


def adaptive_avg_pool(net: Net, x: str, output_size=1, module="avgpool") -> str:
    if output_size != 1:
        kernel = _divisible_kernel(net, x, output_size)
        return avg_pool(net, x, kernel, kernel, module=module)
    with _scope(net, module):
        if net.dynamo:
            return net.op("ReduceMean", [x, net.const([-1, -2])], aten="mean", keepdims=1)
        return net.op("GlobalAveragePool", [x])


def adaptive_max_pool(net: Net, x: str, output_size=1, module="maxpool") -> str:
    with _scope(net, module):
        if output_size == 1:
            if net.dynamo:
                return net.op("ReduceMax", [x, net.const([-1, -2])], aten="amax", keepdims=1)
            return net.op("GlobalMaxPool", [x])
        kernel = _divisible_kernel(net, x, output_size)
        if net.dynamo:
            return net.op("MaxPool", [x], aten="max_pool2d", ceil_mode=0, dilations=[1, 1], kernel_shape=kernel,
                          pads=[0, 0, 0, 0], strides=kernel)
        pooled, _unused_indices = net.op("MaxPool", [x], outputs=2, ceil_mode=0, kernel_shape=kernel,
                                         pads=[0, 0, 0, 0], strides=kernel)
        return pooled


def _divisible_kernel(net: Net, x: str, output_size) -> list[int]:
    spatial = net.shape_of(x)[2:]
    assert all(size % out == 0 for size, out in zip(spatial, _pair(output_size))), "exporters need divisibility"
    return [size // out for size, out in zip(spatial, _pair(output_size))]


def flatten(net: Net, x: str) -> str:
    """torch.flatten(x, 1)."""
    if not net.dynamo:
        return net.op("Flatten", [x], axis=1)
    return _dynamo_view_batch(net, x)


def view_batch(net: Net, x: str) -> str:
    """x.view(x.size(0), -1), exported with a dynamic batch axis."""
    if net.dynamo:
        return _dynamo_view_batch(net, x)
    batch = net.op("Gather", [net.op("Shape", [x]), net.const(0)], axis=0)
    batch = net.op("Unsqueeze", [batch, net.const([0])])
    shape = net.op("Concat", [batch, net.const([-1])], axis=0)
    return net.set_shape(net.op("Reshape", [x, shape]), _flat_shape(net, x))


def _dynamo_view_batch(net: Net, x: str) -> str:
    """aten.view(x, [sym_size(x, 0), features]) as torch_lib emits it (aten_sym_size, then merge_dims)."""
    batch = net.op("Squeeze", [net.op("Shape", [x], aten="sym_size_int", start=0, end=1)])
    batch = net.op("Reshape", [batch, net.const([-1])])
    shape = net.op("Concat", [batch, net.const([_flat_shape(net, x)[1]])], axis=0)
    return net.set_shape(net.op("Reshape", [x, shape], aten="view", allowzero=1), _flat_shape(net, x))


def _flat_shape(net: Net, x: str) -> tuple[int, int]:
    shape = net.shape_of(x)
    return shape[0], int(np.prod(shape[1:]))


def linear(net: Net, x: str, out_features: int, module="fc", name: str | None = None) -> str:
    """nn.Linear on a [batch, features] input."""
    in_features = net.shape_of(x)[1]
    weight = net.he_normal(out_features, in_features)
    bias = net.normal(0.01, out_features)
    with _scope(net, module):
        weight_name, bias_name = net.param("weight", weight), net.param("bias", bias)
        extra = {} if net.dynamo else {"alpha": 1.0, "beta": 1.0}
        return net.op("Gemm", [x, weight_name, bias_name], aten="linear", name=name, transB=1, **extra)


def dropout(net: Net, x: str, ratio=0.5, module="dropout") -> str:
    if not net.dynamo:
        return x
    with _scope(net, module):
        return net.op("Dropout", [x, net.const(ratio, np.float32), net.const(False, np.bool_)], aten="dropout")


def chunk2(net: Net, x: str) -> tuple[str, str]:
    """x.chunk(2, dim=1)."""
    half = net.channels(x) // 2
    if net.dynamo:
        first, second = net.op("Split", [x], aten="split", outputs=2, axis=1, num_outputs=2)
        return first, second
    return tuple(net.op("Slice", [x, net.const([start]), net.const([start + half]), net.const([1])])
                 for start in (0, half))


def channel_shuffle(net: Net, x: str, groups: int) -> str:
    """torchvision's channel_shuffle: view(b, groups, c // groups, h, w), transpose(1, 2), contiguous, view."""
    batch, channels, height, width = net.shape_of(x)
    extra = {"allowzero": 1} if net.dynamo else {}
    y = net.op("Reshape", [x, net.const([batch, groups, channels // groups, height, width])], aten="view", **extra)
    y = net.op("Transpose", [y], aten="transpose", perm=[0, 2, 1, 3, 4])
    if net.dynamo:
        y = net.op("Identity", [y], aten="clone")
    return net.op("Reshape", [y, net.const([batch, -1, height, width])], aten="view", **extra)


def spatial_mean(net: Net, x: str) -> str:
    """x.mean([2, 3]) (ShuffleNetV2's head)."""
    if net.dynamo:
        return net.op("ReduceMean", [x, net.const([2, 3])], aten="mean", keepdims=0)
    return net.op("ReduceMean", [x], axes=[2, 3], keepdims=0)


def lp_pool(net: Net, x: str, norm_type: float, kernel: int, stride: int, module="lppool") -> str:
    """nn.LPPool2d: F.lp_pool2d's Python body, which both exporters trace op by op."""
    with _scope(net, module):
        powered = net.op("Pow", [x, net.const(float(norm_type), np.float32)], aten="pow")
        pooled = avg_pool(net, powered, kernel, stride)
        sign = net.op("Sign", [pooled], aten="sign")
        magnitude = net.op("Relu", [net.op("Abs", [pooled], aten="abs")], aten="relu")
        scaled = net.op("Mul", [net.op("Mul", [sign, magnitude], aten="mul"),
                                net.const(float(kernel * kernel), np.float32)], aten="mul")
        return net.op("Pow", [scaled, net.const(1.0 / norm_type, np.float32)], aten="pow")
