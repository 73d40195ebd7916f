"""ConvolutionBackpropData-1 and GroupConvolutionBackpropData-1 (transposed convolution): schema rows, shape rules
and `backprop_geometry`. OpenVINO's geometry, measured with its 2026.4 CPU plugin (strides 2 and 3, dilations 1 and
2; tests/runtime/test_transposed_convolution.py pins it):

  The products of input position o land at o * s + t * d (tap t), so they span full = s * (L - 1) + d * (k - 1) + 1
  positions; the output is the window of `out` positions starting at `begin` (positions past full are zeros).
  1. Without the output_shape input: explicit (and notset) start at pads_begin and end pads_end before full, plus
     output_padding zeros: out = full - pads_begin - pads_end + output_padding; valid, same_upper and same_lower use
     no pads: out = full + output_padding. (ONNX ConvTranspose's SAME_* makes out = L * s instead: the converters
     write explicit pads.)
  2. With output_shape, out is its value; explicit starts at pads_begin; with total = full + output_padding - out,
     same_upper starts at ceil(total / 2), same_lower at floor(total / 2): the opposite of ONNX ConvTranspose's
     SAME_UPPER (floor at the front). valid starts at 0.
  3. Weights: ConvolutionBackpropData [C, M, *k], GroupConvolutionBackpropData [G, C/G, M/G, *k].
  4. Attribute order as OpenVINO writes it: ConvolutionBackpropData "strides dilations pads_begin pads_end auto_pad
     output_padding", GroupConvolutionBackpropData "strides pads_begin pads_end dilations auto_pad output_padding".
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from poolir.ir.attributes import INTS, STR, Attr, OpVersion
from poolir.ir.errors import InvalidModelError, UsageError
from poolir.ir.geometry import AUTO_PADS
from poolir.ir.model import Dim, Layer, shape_str
from poolir.ir.ops.convolution import check_conv_ranges
from poolir.ir.registry import ShapeRules
from poolir.ir.shapes import TensorInfo

BACKPROP_TYPES = ("ConvolutionBackpropData", "GroupConvolutionBackpropData")
_AXIS_ATTRS = ("strides", "dilations", "pads_begin", "pads_end", "output_padding")


def _check_ranges(attrs: Mapping[str, Any]) -> None:
    present = {name: value for name, value in attrs.items() if name != "output_padding" or value}  # () is absent
    check_conv_ranges(present, _AXIS_ATTRS, (1, 1, 0, 0, 0))


def _backprop(layer_type: str) -> OpVersion:
    strides, dilations = Attr("strides", INTS), Attr("dilations", INTS)
    pads = (Attr("pads_begin", INTS), Attr("pads_end", INTS))
    tail = (Attr("auto_pad", STR, "explicit", AUTO_PADS), Attr("output_padding", INTS, ()))
    attrs = ((strides, dilations, *pads, *tail) if layer_type == "ConvolutionBackpropData"
             else (strides, *pads, dilations, *tail))
    return OpVersion(layer_type, 1, attrs, inputs=(2, 3), value_check=_check_ranges)


SCHEMA_ROWS: tuple[OpVersion, ...] = tuple(_backprop(layer_type) for layer_type in BACKPROP_TYPES)


def backprop_geometry(attrs: Mapping[str, Any], spatial: Sequence[int], kernel: Sequence[int],
                      output_shape: Sequence[int] | None) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(begin, out) per spatial axis: the output window over the products' positions (module doc, rules 1-2)."""
    rank = len(spatial)
    for name in _AXIS_ATTRS:
        if attrs.get(name) and len(attrs[name]) != rank:
            raise UsageError(f"attribute {name!r} = {list(attrs[name])} has {len(attrs[name])} values for {rank} "
                             f"spatial axes")
    if output_shape is not None and len(output_shape) != rank:
        raise UsageError(f"output_shape {list(output_shape)} has {len(output_shape)} values for {rank} spatial axes")
    mode = attrs["auto_pad"]
    padding = attrs.get("output_padding") or (0,) * rank
    begins, outs = [], []
    for axis in range(rank):
        full = attrs["strides"][axis] * (spatial[axis] - 1) + attrs["dilations"][axis] * (kernel[axis] - 1) + 1
        explicit = mode in ("explicit", "notset")
        begin = attrs["pads_begin"][axis] if explicit else 0
        if output_shape is None:
            out = full + padding[axis] - (begin + attrs["pads_end"][axis] if explicit else 0)
        else:
            out = int(output_shape[axis])
            total = full + padding[axis] - out
            if mode == "same_upper":
                begin = total - total // 2
            elif mode == "same_lower":
                begin = total // 2
        if out < 0:   # an empty axis (out 0) is an empty result, as OpenVINO gives
            raise UsageError(f"spatial axis {axis}: the output would have {out} positions")
        begins.append(begin)
        outs.append(out)
    return tuple(begins), tuple(outs)


def backprop_layout(layer_type: str, weights_shape: Sequence) -> tuple[int, int, int]:
    """(groups, first kernel axis, output channels per group) of the weights (ints or Dims; None when unknown)."""
    grouped = layer_type == "GroupConvolutionBackpropData"
    first = 3 if grouped else 2
    if len(weights_shape) < first + 1:
        raise InvalidModelError(f"weights {_dims(weights_shape)} need rank >= {first + 1} "
                                f"({'G, C/G, M/G' if grouped else 'C, M'} and at least one kernel axis)")
    groups = _value(weights_shape[0]) if grouped else 1
    return groups, first, _value(weights_shape[first - 1])


def _value(dim) -> int | None:
    return dim.value if isinstance(dim, Dim) else int(dim)


def _dims(shape) -> str:
    return shape_str(shape) if shape and isinstance(shape[0], Dim) else str(list(shape))


SHAPE_RULES = ShapeRules()


@SHAPE_RULES.register(*BACKPROP_TYPES)
def infer_backprop(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    data, weights, *rest = inputs
    if data.element_type != weights.element_type:
        raise InvalidModelError(f"input element types differ (data {data.element_type}, weights "
                                f"{weights.element_type})")
    groups, first, per_group = backprop_layout(layer.type, weights.shape)
    kernel = weights.shape[first:]
    if len(data.shape) != len(kernel) + 2:
        raise InvalidModelError(f"input {shape_str(data.shape)} must have rank {len(kernel) + 2} for weights "
                                f"{shape_str(weights.shape)}")
    in_channels = weights.shape[0].value if groups == 1 else (
        None if groups is None or weights.shape[1].value is None else groups * weights.shape[1].value)
    if in_channels is not None and data.shape[1].value not in (None, in_channels):
        raise InvalidModelError(f"weights {shape_str(weights.shape)} expect {in_channels} input channels, the input "
                                f"has {data.shape[1].value}")
    output_shape = None
    if rest:
        target = rest[0]
        if target.element_type not in ("i32", "i64") or len(target.shape) != 1:
            raise InvalidModelError(f"output_shape must be a 1-D i32 or i64 tensor, got {target.element_type} "
                                    f"{shape_str(target.shape)}")
        if target.value is None:
            return [_result(data, groups, per_group, [Dim.dynamic()] * len(kernel))]
        output_shape = [int(v) for v in target.value.reshape(-1)]
    spatial, kernel_values = [d.value for d in data.shape[2:]], [d.value for d in kernel]
    if None in spatial or None in kernel_values:
        dims = [Dim.dynamic()] * len(kernel) if output_shape is None else [Dim.static(v) for v in output_shape]
        return [_result(data, groups, per_group, dims)]
    try:
        _, out = backprop_geometry(layer.attrs, spatial, kernel_values, output_shape)
    except UsageError as error:
        raise InvalidModelError(error.problem) from None
    return [_result(data, groups, per_group, [Dim.static(v) for v in out])]


def _result(data: TensorInfo, groups, per_group, spatial: list[Dim]) -> TensorInfo:
    channels = Dim.static(groups * per_group) if groups is not None and per_group is not None else Dim.dynamic()
    return TensorInfo(data.element_type, (data.shape[0], channels, *spatial))


__all__ = ["BACKPROP_TYPES", "SCHEMA_ROWS", "SHAPE_RULES", "backprop_geometry", "backprop_layout"]
