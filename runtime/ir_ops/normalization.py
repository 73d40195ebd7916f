"""IR BatchNormInference, LRN, MVN and GroupNormalization onto runtime.kernels.normalization: what OpenVINO 2026.4's
CPU plugin computes.

BatchNormInference: (data - mean) / sqrt(variance + epsilon) * gamma + beta per channel (axis 1); its input
order depends on the version (ir.ops.normalization.BN_PORTS: version 1 takes gamma, beta, data, ...).

LRN-1, measured by running single openvino.opset1.lrn layers on the CPU plugin (tests/runtime/
test_normalization_openvino.py pins it):
1. The window on each axis in `axes` is [i - floor((size-1)/2), i + floor((size-1)/2)], symmetric: an even
   size loses one element (size 2 sums x[c]^2 alone, size 4 the same three elements as size 3), unlike
   ONNX, whose window for an even size has size elements, the extra one after c.
2. The square sum is taken over the box those windows span, and alpha is divided by size^len(axes)
   (axes [2, 3], size 3: alpha / 9); for axes [1] that is ONNX's alpha / size.
3. The CPU plugin truncates bias toward zero to an integer: 1.5 computes as 1, 2.5 as 2, 0.5 as 0, -1.5
   as -1 (alpha 1, beta 1, size 1, x = [1, 2, 3, 0.5]: x / y - x^2 = 1 for bias 1.5). OpenVINO's own ONNX frontend keeps
   bias 1.5, so its IR of an ONNX LRN with bias 1.5 is off by 0.31 against onnxruntime. poolir computes
   what OpenVINO computes (int(bias)); the ONNX -> IR converter writes a non-integer bias exactly another
   way (converter/onnx_to_ir/normalization.py).
4. Only axes [1] (across channels) or every spatial axis [2 .. rank-1] run: the CPU plugin refuses others
   ("Supports only across channels or across spatial reduction"), and for [1, 2, 3] it accepts the layer
   but its numbers match neither window formula (0.04..0.13 off): poolir refuses those too. The axes are
   taken as written: a negative axis ([-3], [2, -1]) and [1, 1] are refused by the plugin, and so by poolir.

MVN (1 and 6): mean and variance over the axes, two-pass in f32 (f16/bf16 too; f64 in f64), multiplied by
1 / sqrt(var + eps) (MVN-6 outside_sqrt: 1 / (sqrt(var) + eps)), rounded once; eps as an f32. Pinned against
the CPU plugin in tests/runtime/test_ir_layer_norm_vs_openvino.py. Repeated axes are refused (OpenVINO
refuses them too: "Axes input must have unique values").

GroupNormalization-12: the statistics of each sample's group of C / num_groups consecutive channels, then scale and
bias per channel, in f32 (f64 in f64) and rounded once; floating types only (the plugin's integer results are not
pinned). Pinned against the CPU plugin in tests/runtime/test_group_instance_norm.py.
"""

from __future__ import annotations

import numpy as np

from poolir.ir.errors import InvalidModelError, UnsupportedError
from poolir.ir.ops.normalization import bn_ports, mvn1_axes
from poolir.runtime.kernels.precision import accumulation_dtype, is_float
from poolir.runtime.ir_ops.registry import axis_index, builder, int_list
from poolir.runtime.kernels.normalization import batch_norm, group_norm, lrn, standardize


def openvino_lrn_window(size: int) -> int:
    """The half-width of OpenVINO's LRN window on each axis (fact 1)."""
    return (size - 1) // 2


def openvino_lrn_axes_problem(axes: list[int], rank: int) -> str | None:
    """Why OpenVINO's CPU plugin does not run LRN over these axes, as written in the layer, or None (fact 4).

    It takes no negative axis ([-3] for rank 4, [2, -1]: refused) and no repeated channel axis ([1, 1]: refused).
    A repeated spatial axis ([2, 3, 3]) it runs, but whether its alpha divisor then counts the axis twice is not
    pinned: poolir refuses every repeated axis."""
    if axes and sorted(axes) in ([1], list(range(2, rank))):
        return None
    if len(set(axes)) != len(axes) and sorted(set(axes)) in ([1], list(range(2, rank))):
        return f"LRN axes {axes} repeat an axis: OpenVINO's CPU plugin refuses [1, 1], and poolir every repetition"
    return (f"LRN axes {axes} for rank {rank}: OpenVINO's CPU plugin runs only axes [1] (across channels) or "
            f"every spatial axis {list(range(2, rank))}, counted from 0 (no negative axis)")


@builder("BatchNormInference")
def _batch_norm(info):
    data_port, gamma_port, beta_port, mean_port, var_port = bn_ports(info.layer)
    epsilon = info.layer.attrs["epsilon"]

    def run(args):
        x = args[data_port]
        for name, port in (("gamma", gamma_port), ("beta", beta_port), ("mean", mean_port), ("variance", var_port)):
            if args[port].shape != (x.shape[1],):
                raise InvalidModelError(f"{name} has shape {list(args[port].shape)}, expected [{x.shape[1]}]")
        return (batch_norm(x, args[gamma_port], args[beta_port], args[mean_port], args[var_port], epsilon),)
    return run


@builder("LRN")
def _lrn(info):
    attrs = info.layer.attrs
    size = attrs["size"]
    half = openvino_lrn_window(size)
    bias = float(int(attrs["bias"]))  # fact 3

    def run(args):
        x = args[0]
        written = int_list(args[1], "LRN axes")
        problem = openvino_lrn_axes_problem(written, x.ndim)
        if problem:
            raise UnsupportedError(problem)
        axes = sorted(axis_index(a, x.ndim, "LRN axis") for a in written)
        alpha = attrs["alpha"] / size ** len(axes)  # fact 2
        return (lrn(x, axes, alpha, attrs["beta"], bias, half, half),)
    return run


def mvn(x, axes: list[int], attrs: dict, inside_sqrt: bool):
    if not is_float(x.dtype):
        raise UnsupportedError(f"MVN on element type {x.dtype} is not supported (floating types only)")
    chosen = [axis_index(a, x.ndim, "MVN axis") for a in axes]
    if len(set(chosen)) != len(chosen):
        raise InvalidModelError(f"MVN axes {axes} repeat an axis")
    eps = float(np.float32(attrs["eps"]))
    normalised, _, _ = standardize(x, tuple(sorted(chosen)), eps, accumulation_dtype(x.dtype), inside_sqrt,
                                   attrs["normalize_variance"])
    return normalised.astype(x.dtype, copy=False)


@builder("MVN")
def _mvn(info):
    attrs = info.layer.attrs
    if "eps_mode" not in attrs:  # MVN-1
        return lambda args: (mvn(args[0], list(mvn1_axes(attrs, args[0].ndim)), attrs, True),)
    inside = attrs["eps_mode"] == "inside_sqrt"
    return lambda args: (mvn(args[0], int_list(args[1], "MVN axes"), attrs, inside),)


@builder("GroupNormalization")
def _group_norm(info):
    groups, epsilon = info.layer.attrs["num_groups"], float(np.float32(info.layer.attrs["epsilon"]))

    def run(args):
        x, scale, bias = args
        if not is_float(x.dtype):
            raise UnsupportedError(f"GroupNormalization on element type {x.dtype} is not supported (floating types "
                                   f"only)")
        if x.shape[1] % groups:
            raise InvalidModelError(f"num_groups {groups} does not divide the {x.shape[1]} channels")
        for name, value in (("scale", scale), ("bias", bias)):
            if value.shape != (x.shape[1],):
                raise InvalidModelError(f"{name} has shape {list(value.shape)}, expected [{x.shape[1]}]")
        return (group_norm(x, scale, bias, groups, epsilon, accumulation_dtype(x.dtype)),)
    return run
