"""Convolution-1 and GroupConvolution-1: their schema rows, OpenVINO's convolution shape rules and
`conv_windows_of`.

OpenVINO's convolution geometry (its Convolution-1 / GroupConvolution-1 specs, and the IRs its ONNX
frontend writes, checked with OpenVINO 2026.4):
  1. Rounding is always floor: out = floor((L + pads_begin + pads_end - ek) / s) + 1, ek = (k - 1) * d + 1.
  2. auto_pad same_upper / same_lower replace pads_begin/pads_end by the SAME pads (out = ceil(L / s), the
     odd element of the total at the end / the beginning), valid by zeros, explicit keeps them. OpenVINO's
     ONNX frontend writes auto_pad="same_upper" with pads "0, 0" for an ONNX Conv with SAME_UPPER.
  3. The kernel comes from the weights: Convolution weights [M, C, *k], GroupConvolution weights
     [G, M/G, C/G, *k] (the input's C must equal G * C/G).
  4. Attribute order as OpenVINO writes it: Convolution "strides dilations pads_begin pads_end auto_pad",
     GroupConvolution "strides pads_begin pads_end dilations auto_pad".
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from poolir.ir.attributes import INTS, STR, Attr, OpVersion
from poolir.ir.errors import InvalidModelError, UsageError
from poolir.ir.geometry import AUTO_PADS, MAX_AXIS_VALUE, AxisWindow, axis_window, output_length
from poolir.ir.model import Dim, Layer, shape_str
from poolir.ir.registry import ShapeRules
from poolir.ir.shapes import TensorInfo

CONV_TYPES = ("Convolution", "GroupConvolution")
_WINDOW_ATTRS = ("strides", "dilations", "pads_begin", "pads_end")


def check_conv_ranges(attrs: Mapping[str, Any], names: Sequence[str] = _WINDOW_ATTRS,
                      minimums: Sequence[int] = (1, 1, 0, 0)) -> None:
    """strides, dilations >= 1 and pads >= 0 (or `names` >= `minimums`), each <= MAX_AXIS_VALUE, and one value per
    axis in each."""
    lengths = {len(attrs[name]) for name in names if attrs.get(name) is not None}
    if len(lengths) > 1:
        raise UsageError("attributes " + ", ".join(f"{name}={_ints(attrs[name])}" for name in names
                                                   if attrs.get(name) is not None)
                         + " must have one value per spatial axis each")
    for name, minimum in zip(names, minimums):
        for value in attrs.get(name) or ():
            if not minimum <= value <= MAX_AXIS_VALUE:
                raise UsageError(f"attribute {name!r} = {_ints(attrs[name])}: every value must be in "
                                 f"[{minimum}, {MAX_AXIS_VALUE}]")


def _convolution(layer_type: str) -> OpVersion:
    strides, dilations = Attr("strides", INTS), Attr("dilations", INTS)
    pads = (Attr("pads_begin", INTS), Attr("pads_end", INTS))
    auto_pad = Attr("auto_pad", STR, "explicit", AUTO_PADS)
    attrs = ((strides, dilations, *pads, auto_pad) if layer_type == "Convolution"
             else (strides, *pads, dilations, auto_pad))
    return OpVersion(layer_type, 1, attrs, inputs=(2, 2), value_check=check_conv_ranges)


SCHEMA_ROWS: tuple[OpVersion, ...] = tuple(_convolution(layer_type) for layer_type in CONV_TYPES)


def conv_weight_layout(layer_type: str, weights_shape: Sequence, channels) -> tuple[int, int]:
    """(groups, kernel rank offset) of a layer's weights; raises for a rank or channel count that does not fit.

    `weights_shape` and `channels` are ints, or Dims (then only static values are checked)."""
    grouped = layer_type == "GroupConvolution"
    first_kernel_axis = 3 if grouped else 2
    if len(weights_shape) < first_kernel_axis + 1:
        raise InvalidModelError(f"weights {_dims(weights_shape)} need rank >= {first_kernel_axis + 1} "
                                f"({'G, M/G, C/G' if grouped else 'M, C'} and at least one kernel axis)")
    groups = _value(weights_shape[0]) if grouped else 1
    per_group = _value(weights_shape[first_kernel_axis - 1])
    c = _value(channels)
    if groups is not None and per_group is not None and c is not None and groups * per_group != c:
        raise InvalidModelError(f"weights {_dims(weights_shape)} expect {groups * per_group} input channels, "
                                f"the input has {c}")
    return (groups or 1), first_kernel_axis


def conv_windows_of(layer: Layer, spatial: Sequence[int], kernel: Sequence[int]) -> tuple[AxisWindow, ...]:
    """The resolved floor-rounded windows of a Convolution/GroupConvolution over static spatial dims."""
    attrs = layer.attrs
    rank = len(spatial)
    _check_rank(attrs, rank)
    windows = []
    for axis in range(rank):
        try:
            windows.append(axis_window(spatial[axis], kernel[axis], attrs["strides"][axis], attrs["dilations"][axis],
                                       attrs["pads_begin"][axis], attrs["pads_end"][axis], "floor",
                                       attrs["auto_pad"]))
        except UsageError as error:
            raise UsageError(f"spatial axis {axis}: {error.problem}") from None
    return tuple(windows)


def _check_rank(attrs: Mapping[str, Any], rank: int) -> None:
    check_conv_ranges(attrs)
    for name in _WINDOW_ATTRS:
        if len(attrs[name]) != rank:
            raise UsageError(f"attribute {name!r} = {_ints(attrs[name])} has {len(attrs[name])} values for "
                             f"{rank} spatial axes")


def _value(dim) -> int | None:
    if isinstance(dim, Dim):
        return dim.value
    return int(dim)


def _dims(shape) -> str:
    return shape_str(shape) if shape and isinstance(shape[0], Dim) else str(list(shape))


def _ints(values) -> str:
    return ",".join(str(v) for v in values)


SHAPE_RULES = ShapeRules()


@SHAPE_RULES.register(*CONV_TYPES)
def infer_convolution(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    """[N, C, *spatial] (*) weights -> [N, M, *out]; out by floor rounding (rules 1-3 of the module doc)."""
    data, weights = inputs
    if data.element_type != weights.element_type:
        raise InvalidModelError(f"input element types differ (data {data.element_type}, weights "
                                f"{weights.element_type})")
    groups, first_kernel_axis = conv_weight_layout(layer.type, weights.shape, data.shape[1] if len(data.shape) > 1
                                                   else Dim.dynamic())
    kernel_dims = weights.shape[first_kernel_axis:]
    rank = len(kernel_dims)
    if len(data.shape) != rank + 2:
        raise InvalidModelError(f"input {shape_str(data.shape)} must have rank {rank + 2} for weights "
                                f"{shape_str(weights.shape)}")
    try:
        _check_rank(layer.attrs, rank)
    except UsageError as error:
        raise InvalidModelError(error.problem) from None
    if layer.type == "GroupConvolution":
        g, per = weights.shape[0].value, weights.shape[1].value
        filters = Dim.static(g * per) if g is not None and per is not None else Dim.dynamic()
    else:
        filters = weights.shape[0]
    out = [data.shape[0], filters]
    attrs = layer.attrs
    for axis, (dim, kdim) in enumerate(zip(data.shape[2:], kernel_dims)):
        stride, dilation = attrs["strides"][axis], attrs["dilations"][axis]
        if dim.is_static and kdim.is_static:
            try:
                window = axis_window(dim.min, kdim.min, stride, dilation, attrs["pads_begin"][axis],
                                     attrs["pads_end"][axis], "floor", attrs["auto_pad"])
            except UsageError as error:
                raise InvalidModelError(f"spatial axis {axis}: {error.problem}") from None
            out.append(Dim.static(window.output))
        elif attrs["auto_pad"] in ("same_upper", "same_lower"):
            out.append(Dim(-(-dim.min // stride), None if dim.max is None else -(-dim.max // stride)))
        elif kdim.is_static:
            pads = (0, 0) if attrs["auto_pad"] == "valid" else (attrs["pads_begin"][axis], attrs["pads_end"][axis])

            def length(value: int) -> int:
                return max(0, output_length(value, kdim.min, stride, dilation, *pads, "floor"))
            out.append(Dim(length(dim.min), None if dim.max is None else length(dim.max)))
        else:
            out.append(Dim.dynamic())
    del groups
    return [TensorInfo(data.element_type, tuple(out))]
