"""Two small networks written the way PyTorch's TorchScript exporter writes them (node names are module scopes,
`/pool1/AveragePool`; values `/pool1/AveragePool_output_0`), where OpenVINO's own ONNX converter changes the numbers
and poolir's does not. generate.py turns them into example folders (expected values: onnxruntime).

    pytorch_ceil_pools      Conv 3x3 -> ReLU -> AvgPool2d(3, 2, 1, ceil_mode=True) (count_include_pad) -> Conv 3x3
                            -> ReLU -> MaxPool2d(2, 2, 1, ceil_mode=True) -> AdaptiveAvgPool2d(1) -> view(1, -1)
                            -> Linear, on 1x3x32x32, opset 17. The average pool's last window hangs past the
                            padding (PyTorch divides it by the 6 taps inside the padded extent; OpenVINO's
                            convert_model by 9); the max pool's would-be 10th window starts in the right padding
                            (PyTorch drops it: 9 outputs; OpenVINO keeps it, filled with the lowest float).
    softmax_opset11_4d      Conv 1x1 -> ReLU -> Softmax (opset 11, axis 1) on a 4-D map, a classifier applied
                            per position: before opset 13, Softmax flattens the input to 2-D at `axis` and
                            normalises the whole C*H*W block; OpenVINO 2026.4's convert_model normalises along
                            axis 1 alone for Softmax-11 and -12 (measured: off by 0.63 here; for Softmax-9 it
                            flattens, as the spec says, and agrees).

The weights are seeded random numbers; the networks are small so that the example folders stay a few kB.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ONNX_IR_VERSION = 8


def _conv(nodes, initializers, rng, x: str, scope: str, cin: int, cout: int, kernel: int, pad: int) -> str:
    weight = (rng.standard_normal((cout, cin, kernel, kernel)) * np.sqrt(2.0 / (cin * kernel * kernel)))
    initializers += [numpy_helper.from_array(weight.astype(np.float32), f"{scope}.weight"),
                     numpy_helper.from_array((rng.standard_normal(cout) * 0.1).astype(np.float32), f"{scope}.bias")]
    out = f"/{scope}/Conv_output_0"
    nodes.append(helper.make_node("Conv", [x, f"{scope}.weight", f"{scope}.bias"], [out], name=f"/{scope}/Conv",
                                  dilations=[1, 1], group=1, kernel_shape=[kernel, kernel], pads=[pad] * 4,
                                  strides=[1, 1]))
    return out


def _relu(nodes, x: str, scope: str) -> str:
    out = f"/{scope}/Relu_output_0"
    nodes.append(helper.make_node("Relu", [x], [out], name=f"/{scope}/Relu"))
    return out


def ceil_pools(seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    nodes: list = []
    initializers: list = []
    y = _relu(nodes, _conv(nodes, initializers, rng, "x", "conv1", 3, 8, 3, 1), "relu1")
    nodes.append(helper.make_node("AveragePool", [y], ["/pool1/AveragePool_output_0"], name="/pool1/AveragePool",
                                  ceil_mode=1, count_include_pad=1, kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                  strides=[2, 2]))
    y = _relu(nodes, _conv(nodes, initializers, rng, "/pool1/AveragePool_output_0", "conv2", 8, 8, 3, 1), "relu2")
    nodes.append(helper.make_node("MaxPool", [y], ["/pool2/MaxPool_output_0"], name="/pool2/MaxPool", ceil_mode=1,
                                  dilations=[1, 1], kernel_shape=[2, 2], pads=[1, 1, 1, 1], strides=[2, 2]))
    nodes.append(helper.make_node("GlobalAveragePool", ["/pool2/MaxPool_output_0"],
                                  ["/avgpool/GlobalAveragePool_output_0"], name="/avgpool/GlobalAveragePool"))
    initializers.append(numpy_helper.from_array(np.array([1, -1], np.int64), "/Constant_output_0"))
    nodes.append(helper.make_node("Reshape", ["/avgpool/GlobalAveragePool_output_0", "/Constant_output_0"],
                                  ["/Reshape_output_0"], name="/Reshape"))
    weight = (rng.standard_normal((10, 8)) * 0.5).astype(np.float32)
    initializers += [numpy_helper.from_array(weight, "fc.weight"),
                     numpy_helper.from_array((rng.standard_normal(10) * 0.1).astype(np.float32), "fc.bias")]
    nodes.append(helper.make_node("Gemm", ["/Reshape_output_0", "fc.weight", "fc.bias"], ["logits"], name="/fc/Gemm",
                                  alpha=1.0, beta=1.0, transB=1))
    graph = helper.make_graph(nodes, "pytorch_ceil_pools",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="pytorch",
                              ir_version=ONNX_IR_VERSION)
    onnx.checker.check_model(model, full_check=True)
    return model


def softmax_opset11(seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    nodes: list = []
    initializers: list = []
    y = _relu(nodes, _conv(nodes, initializers, rng, "x", "classifier.1", 4, 10, 1, 0), "classifier.2")
    nodes.append(helper.make_node("Softmax", [y], ["prob"], name="/Softmax", axis=1))
    graph = helper.make_graph(nodes, "softmax_opset11_4d",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 5, 5])],
                              [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, 10, 5, 5])],
                              initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)], ir_version=ONNX_IR_VERSION)
    onnx.checker.check_model(model, full_check=True)
    return model


NETWORKS = {
    "pytorch_ceil_pools": ("PyTorch-style CNN: AvgPool2d(3, 2, 1, ceil_mode=True) and MaxPool2d(2, 2, 1, "
                           "ceil_mode=True) between convolutions, then the classifier", ceil_pools, (1, 3, 32, 32)),
    "softmax_opset11_4d": ("Softmax-11 (axis 1) on a 4-D map after a 1x1 conv classifier", softmax_opset11,
                          (1, 4, 5, 5)),
}
