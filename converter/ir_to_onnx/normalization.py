"""IR BatchNormInference and LRN -> ONNX nodes with the meaning OpenVINO gives them.

- BatchNormInference (version 1: gamma, beta, data, mean, variance; version 5: data, gamma, beta, mean,
  variance; ir.ops.normalization.BN_PORTS) -> BatchNormalization with X, scale, B, mean, var and epsilon
  (spatial keeps its default 1 in opsets 7 and 8; every written opset is >= 7, so there is no is_test).
- LRN over axes [1] -> ONNX LRN. OpenVINO's window is [c - h, c + h] with h = floor((size-1)/2), alpha
  divided by size (one axis), and a bias truncated to an integer by its CPU plugin
  (runtime/ir_ops/normalization.py). ONNX's window for an odd size s' is [c - (s'-1)/2, c + (s'-1)/2], its
  alpha divided by s': so s' = 2h + 1, alpha' = alpha * s' / size and bias' = int(bias) carry it exactly
  (an even size becomes the next lower odd one). LRN over spatial axes has no ONNX LRN (which always
  normalises across channels): refused.
"""

from __future__ import annotations

from poolir.converter.ir_to_onnx.context import Context
from poolir.converter.ir_to_onnx.opsets import check_writes
from poolir.ir.errors import ConversionError
from poolir.ir.model import Layer
from poolir.ir.ops.normalization import bn_ports
from poolir.runtime.ir_ops.normalization import openvino_lrn_axes_problem, openvino_lrn_window


def batch_norm(context: Context, layer: Layer) -> None:
    ports = bn_ports(layer)
    check_writes(context, "BatchNormalization", context.input_info(layer, ports[0]).element_type)
    inputs = [context.input(layer, port) for port in ports]
    context.node_into("BatchNormalization", inputs, [context.name_output(layer, 0)], layer.name,
                      epsilon=float(layer.attrs["epsilon"]))


def lrn(context: Context, layer: Layer) -> None:
    rank = len(context.input_info(layer, 0).shape)
    axes = list(context.constant_ints(layer, 1, "LRN axes"))
    problem = openvino_lrn_axes_problem(axes, rank)
    if problem:
        raise ConversionError(problem)
    axes = sorted(axes)
    if axes != [1]:
        raise ConversionError(f"LRN over the spatial axes {axes}: ONNX LRN normalises across channels (axis 1) only")
    check_writes(context, "LRN", context.input_info(layer, 0).element_type)
    size = layer.attrs["size"]
    onnx_size = 2 * openvino_lrn_window(size) + 1
    context.node_into("LRN", [context.input(layer, 0)], [context.name_output(layer, 0)], layer.name,
                      size=onnx_size, alpha=float(layer.attrs["alpha"]) * onnx_size / size,
                      beta=float(layer.attrs["beta"]), bias=float(int(layer.attrs["bias"])))


CONVERTERS = {"BatchNormInference": batch_norm, "LRN": lrn}
