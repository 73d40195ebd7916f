"""BatchNormInference, LRN, MVN and GroupNormalization: their schema rows and shape rules.

BatchNormInference's input ORDER depends on its version (OpenVINO 2026.4, read from the XML that
openvino.opset1/opset5.batch_norm_inference write): version 1 (opset1) takes gamma, beta, data, mean,
variance on ports 0..4; version 5 (opset5) takes data, gamma, beta, mean, variance. `BN_PORTS` is that
fact, asked by the runtime and both converters. Data has rank >= 2, channels on axis 1 (OpenVINO refuses
rank 1: "data_input_rank.get_length() >= 2"); the four per-channel inputs are 1-D of length C.

LRN-1: inputs data and axes (a constant 1-D integer list); attributes alpha, beta, bias (floats) and size
(an int >= 1). What OpenVINO computes for it is in runtime/kernels/normalization.py.

MVN-6 (opset6): inputs data and axes (1-D i32/i64, each in [-rank, rank)); attributes normalize_variance,
eps and eps_mode (inside_sqrt: / sqrt(var + eps); outside_sqrt: / (sqrt(var) + eps)). OpenVINO writes it for
ONNX MeanVarianceNormalization and torch's LayerNorm (followed by Multiply and Add). MVN-1 (written
"opset2"): attributes across_channels, normalize_variance, eps (always inside the sqrt) and reduction_axes,
which when present overrides across_channels (otherwise the axes are [1 or 2, rank)).

GroupNormalization-12 (opset12): inputs data (rank >= 2, channels on axis 1), scale and bias (1-D, length C);
attributes num_groups (>= 1, dividing C) and epsilon: what OpenVINO checks when it builds the graph. Its PyTorch
frontend writes it for torch's GroupNorm, its ONNX frontend for GroupNormalization-18/21.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from poolir.ir.attributes import BOOL, FLOAT, INT, INTS, UPPER_STR, Attr, OpVersion
from poolir.ir.errors import InvalidModelError, UnsupportedError, UsageError
from poolir.ir.model import Layer, opset_number, shape_str
from poolir.ir.registry import ShapeRules
from poolir.ir.shapes import TensorInfo

# BatchNormInference version (opset) -> the input port of (data, gamma, beta, mean, variance)
BN_PORTS: dict[int, tuple[int, int, int, int, int]] = {1: (2, 0, 1, 3, 4), 5: (0, 1, 2, 3, 4)}


_F32_MAX = 3.4028234663852886e38
MVN_EPS_MODES = ("inside_sqrt", "outside_sqrt")


def batch_norm_epsilon_ok(epsilon: float) -> bool:
    """Whether OpenVINO 2026.4 takes this BatchNormInference epsilon: it reads it as a double and refuses NaN
    and negatives ("must be non negative value"); its CPU plugin then adds it to the variance as an f32
    Constant, and refuses inf and anything above the largest f32 ("inf assigned value out of range for f32")."""
    return 0 <= epsilon <= _F32_MAX  # NaN fails too


def _check_epsilon(attrs: Mapping[str, Any]) -> None:
    epsilon = attrs.get("epsilon")
    if epsilon is not None and not batch_norm_epsilon_ok(epsilon):
        raise UsageError(f"attribute 'epsilon' = {epsilon!r}: must be >= 0 and at most the largest f32 "
                         f"({_F32_MAX:.8g})")


def _check_lrn(attrs: Mapping[str, Any]) -> None:
    if attrs.get("size", 1) < 1:
        raise UsageError(f"attribute 'size' = {attrs['size']}: must be >= 1")
    for name in ("alpha", "beta", "bias"):
        value = attrs.get(name)
        if value is not None and not math.isfinite(value):
            raise UsageError(f"attribute {name!r} = {value!r}: must be a finite number")


SCHEMA_ROWS: tuple[OpVersion, ...] = (
    *(OpVersion("BatchNormInference", since, (Attr("epsilon", FLOAT),), inputs=(5, 5), value_check=_check_epsilon)
      for since in BN_PORTS),
    OpVersion("LRN", 1, (Attr("alpha", FLOAT), Attr("beta", FLOAT), Attr("bias", FLOAT), Attr("size", INT)),
              inputs=(2, 2), value_check=_check_lrn),
    # attributes in the order OpenVINO writes them
    OpVersion("MVN", 2, (Attr("eps", FLOAT), Attr("across_channels", BOOL, False),
                         Attr("normalize_variance", BOOL, False), Attr("reduction_axes", INTS, ()))),
    OpVersion("MVN", 6, (Attr("eps", FLOAT), Attr("normalize_variance", BOOL),
                         Attr("eps_mode", UPPER_STR, choices=MVN_EPS_MODES)), inputs=(2, 2)),
    OpVersion("GroupNormalization", 12, (Attr("num_groups", INT), Attr("epsilon", FLOAT)), inputs=(3, 3)),
)


def bn_ports(layer: Layer) -> tuple[int, int, int, int, int]:
    """The input ports of (data, gamma, beta, mean, variance) of a BatchNormInference layer."""
    opset = opset_number(layer.version or "")
    return BN_PORTS[max((since for since in BN_PORTS if since <= opset), default=1)]


SHAPE_RULES = ShapeRules()


@SHAPE_RULES.register("BatchNormInference")
def infer_batch_norm(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    """The data's shape and type; each per-channel input 1-D of length C (when both are known)."""
    ports = bn_ports(layer)
    data = inputs[ports[0]]
    if len(data.shape) < 2:
        raise InvalidModelError(f"data {shape_str(data.shape)} must have rank >= 2 (batch, channels, ...)")
    channels = data.shape[1]
    for name, port in zip(("gamma", "beta", "mean", "variance"), ports[1:]):
        info = inputs[port]
        if len(info.shape) != 1:
            raise InvalidModelError(f"{name} {shape_str(info.shape)} must be 1-D (one value per channel)")
        if info.element_type != data.element_type:
            raise InvalidModelError(f"{name} element type {info.element_type} differs from the data's "
                                    f"{data.element_type}")
        if channels.is_static and info.shape[0].is_static and info.shape[0].min != channels.min:
            raise InvalidModelError(f"{name} {shape_str(info.shape)} does not match the {channels.min} channels "
                                    f"of data {shape_str(data.shape)}")
    return [TensorInfo(data.element_type, data.shape)]


@SHAPE_RULES.register("LRN")
def infer_lrn(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    data, axes = inputs
    if axes.element_type not in ("i32", "i64"):
        raise InvalidModelError(f"axes element type {axes.element_type}: expected i32 or i64")
    if len(axes.shape) != 1:
        raise InvalidModelError(f"axes {shape_str(axes.shape)} must be 1-D")
    if axes.value is not None:
        rank = len(data.shape)
        for axis in axes.value.reshape(-1):
            if not -rank <= int(axis) < rank:
                raise InvalidModelError(f"axis {int(axis)} is out of range for data {shape_str(data.shape)}")
    return [TensorInfo(data.element_type, data.shape)]


def mvn1_axes(attrs: Mapping[str, Any], rank: int) -> tuple[int, ...]:
    """The axes MVN-1 normalises over: [1, rank) across channels, else [2, rank). OpenVINO 2026.4 derives
    across_channels from reduction_axes when they are given (whether they hold axis 1), and its CPU plugin
    then normalises by across_channels alone (measured: reduction_axes [1, 3] of a rank-4 input normalise
    [1, 2, 3]): reduction_axes other than those two ranges are refused."""
    written = attrs.get("reduction_axes") or ()
    across = (1 in [a + rank if a < 0 else a for a in written]) if written else attrs["across_channels"]
    axes = tuple(range(1 if across else 2, rank))
    if written and tuple(sorted(a + rank if a < 0 else a for a in written)) != axes:
        raise UnsupportedError(f"MVN-1 reduction_axes {list(written)}: OpenVINO's CPU plugin normalises over "
                               f"{list(axes)} for them (its across_channels), poolir only runs axes it states")
    return axes


@SHAPE_RULES.register("MVN")
def infer_mvn(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    data = inputs[0]
    rank = len(data.shape)
    if len(inputs) == 1:
        axes = list(mvn1_axes(layer.attrs, rank))
    else:
        info = inputs[1]
        if info.element_type not in ("i32", "i64"):
            raise InvalidModelError(f"axes element type {info.element_type}: expected i32 or i64")
        if len(info.shape) != 1:
            raise InvalidModelError(f"axes {shape_str(info.shape)} must be 1-D")
        axes = [] if info.value is None else [int(a) for a in info.value.reshape(-1)]
    for axis in axes:
        if not -rank <= axis < rank:
            raise InvalidModelError(f"axis {axis} is out of range for data {shape_str(data.shape)}")
    return [TensorInfo(data.element_type, data.shape)]


@SHAPE_RULES.register("GroupNormalization")
def infer_group_norm(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    data, *per_channel = inputs
    groups = layer.attrs["num_groups"]
    if len(data.shape) < 2:
        raise InvalidModelError(f"data {shape_str(data.shape)} must have rank >= 2 (N, C, ...)")
    if groups < 1:
        raise InvalidModelError(f"num_groups {groups} must be >= 1")
    channels = data.shape[1]
    if channels.is_static and channels.min % groups:
        raise InvalidModelError(f"num_groups {groups} does not divide the {channels.min} channels")
    for name, info in zip(("scale", "bias"), per_channel):
        if info.element_type != data.element_type:
            raise InvalidModelError(f"{name} has element type {info.element_type}, the data {data.element_type}")
        length = info.shape[0] if len(info.shape) == 1 else None
        if length is None or (channels.is_static and length.is_static and length.min != channels.min):
            raise InvalidModelError(f"{name} {shape_str(info.shape)} must be 1-D with the data's "
                                    f"{channels} channels")
    return [TensorInfo(data.element_type, data.shape)]


__all__ = ["BN_PORTS", "MVN_EPS_MODES", "SCHEMA_ROWS", "SHAPE_RULES", "bn_ports", "mvn1_axes"]
