"""AvgPool, MaxPool, AdaptiveAvgPool and AdaptiveMaxPool: their schema rows, OpenVINO's pooling shape rules and `pool_windows_of`.

OpenVINO's pooling shape rules (the IR world), measured with OpenVINO 2026.4: first on every
combination of L in {1,4,5,7,8}, kernel 1..3, stride 1..3, dilation 1..2, pads (0..2, 0..1), the
three rounding types and the four auto_pad values for AvgPool-16 (exclude-pad=false) and MaxPool-14
(6354 cases, identical for both ops), then on the seeded 900-case grid of every op version, rank
1-3, dynamic dims and exclude-pad that tests/ir/test_infer_openvino.py pins:
  1. auto_pad same_upper / same_lower replaces pads_begin/pads_end by the SAME pads
     (total = max(0, (ceil(L/s) - 1) * s + ek - L), odd element at the end / at the beginning);
     auto_pad valid replaces them by zeros; explicit keeps them.
  2. rounding_type then applies to the resolved pads unchanged, also for same_* and valid. This
     differs from ONNX, where SAME always yields ceil(L/s): with same_upper, L=8, k=1, s=3
     OpenVINO gives floor 3, ceil 4, ceil_torch 3.
  3. The dilated kernel must fit the padded input: (k-1)*d+1 <= L + pads_begin + pads_end, else
     OpenVINO refuses the layer ("Kernel after dilation has size ... larger than the data shape
     after padding"), even where ceil rounding would give one output.
  4. ceil_torch is ceil minus a last window that would start at or after L + pads_begin.
  5. AvgPool with exclude-pad=true and auto_pad explicit is refused when pads_begin or pads_end
     >= the dilated kernel on a static axis ("Kernel after dilation is sometimes entirely in the
     padding area"): such a window would average nothing. Dynamic axes, exclude-pad=false, the
     auto_pad modes and MaxPool are exempt.
  6. A dynamic input dim with bounds [lo, hi] gives the output bounds [max(1, out(lo)), out(hi)]
     (hi unbounded stays unbounded) for explicit and valid; for same_* the output dim is fully dynamic.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from poolir.ir.attributes import BOOL, INT, INTS, STR, Attr, OpVersion
from poolir.ir.element_types import INDEX_ELEMENT_TYPES
from poolir.ir.errors import InvalidModelError, UsageError
from poolir.ir.geometry import (AUTO_PADS, MAX_AXIS_VALUE, ROUNDINGS, AxisWindow, AxisSpec, axis_window,
                                output_length, pool_axes)
from poolir.ir.model import Dim, Layer, shape_str
from poolir.ir.registry import ShapeRules
from poolir.ir.shapes import TensorInfo

# ---------------------------------------------------------------------------------------------
# Schema rows

ROUNDINGS_V1 = ("floor", "ceil")  # opset14 adds ceil_torch: ROUNDINGS
_WINDOW_ATTRS = ("kernel", "strides", "dilations", "pads_begin", "pads_end")


def check_pool_ranges(attrs: Mapping[str, Any]) -> None:
    """kernel, strides, dilations >= 1 and pads >= 0, each <= MAX_AXIS_VALUE (shape-independent).

    Validation runs it on every pooling layer, and the shape rule again before any geometry: an axis
    with a dynamic length skips the geometry's own range checks until run time.
    """
    for name, minimum in zip(_WINDOW_ATTRS, (1, 1, 1, 0, 0)):
        for value in attrs.get(name) or ():
            if value < minimum:
                raise UsageError(f"attribute {name!r} = {_ints(attrs[name])}: every value must be >= {minimum}")
            if value > MAX_AXIS_VALUE:
                raise UsageError(f"attribute {name!r} = {_ints(attrs[name])}: every value must be <= "
                                 f"{MAX_AXIS_VALUE} (2**31 - 1)")


def _ones_like_kernel(attrs: dict[str, Any]) -> tuple[int, ...]:
    return (1,) * len(attrs.get("kernel", ()))


def _avg_pool(since: int, rounding: tuple[str, ...], dilations: bool) -> OpVersion:
    attrs = [Attr("kernel", INTS), Attr("strides", INTS), Attr("pads_begin", INTS), Attr("pads_end", INTS),
             Attr("exclude-pad", BOOL), Attr("auto_pad", STR, "explicit", AUTO_PADS),
             Attr("rounding_type", STR, "floor", rounding)]
    if dilations:
        attrs.append(Attr("dilations", INTS, _ones_like_kernel))  # OpenVINO writes it last
    return OpVersion("AvgPool", since, tuple(attrs), value_check=check_pool_ranges)


def _max_pool(since: int, rounding: tuple[str, ...], indices: bool) -> OpVersion:
    if not indices:
        return OpVersion("MaxPool", since, (
            Attr("strides", INTS), Attr("pads_begin", INTS), Attr("pads_end", INTS), Attr("kernel", INTS),
            Attr("rounding_type", STR, "floor", rounding), Attr("auto_pad", STR, "explicit", AUTO_PADS)),
            value_check=check_pool_ranges)
    return OpVersion("MaxPool", since, (
        Attr("strides", INTS), Attr("dilations", INTS, _ones_like_kernel), Attr("pads_begin", INTS),
        Attr("pads_end", INTS), Attr("kernel", INTS), Attr("rounding_type", STR, "floor", rounding),
        Attr("auto_pad", STR, "explicit", AUTO_PADS), Attr("index_element_type", STR, "i64", INDEX_ELEMENT_TYPES),
        Attr("axis", INT, 0)), outputs=(2, 2), value_check=check_pool_ranges)


SCHEMA_ROWS: tuple[OpVersion, ...] = (
    _avg_pool(1, ROUNDINGS_V1, dilations=False),
    _avg_pool(14, ROUNDINGS, dilations=False),
    _avg_pool(16, ROUNDINGS, dilations=True),
    _max_pool(1, ROUNDINGS_V1, indices=False),
    _max_pool(8, ROUNDINGS_V1, indices=True),
    _max_pool(14, ROUNDINGS, indices=True),
    # Adaptive pooling: input 1 is the output spatial shape (i32/i64, one value per spatial axis).
    OpVersion("AdaptiveAvgPool", 8, inputs=(2, 2)),
    OpVersion("AdaptiveMaxPool", 8, (Attr("index_element_type", STR, "i64", INDEX_ELEMENT_TYPES),), inputs=(2, 2),
              outputs=(2, 2)),
)

# ---------------------------------------------------------------------------------------------
# The pooling geometry of an IR layer (the runtime's IR executor and the converter call this too)


def pool_windows_of(layer: Layer, spatial: Sequence[int]) -> tuple[AxisWindow, ...]:
    """The resolved windows of an AvgPool/MaxPool layer over static spatial dims, by OpenVINO's rules
    (see the module docstring). Raises UsageError for values OpenVINO refuses; callers locate it."""
    axes = _checked_pool_axes(layer.attrs, len(spatial))
    return tuple(_pool_axis(layer.attrs, axis, attrs, length)
                 for axis, (attrs, length) in enumerate(zip(axes, spatial)))


def _checked_pool_axes(attrs: dict[str, Any], rank: int) -> tuple[AxisSpec, ...]:
    """The per-axis attributes, after the checks that need no input length (ranges and rule 5)."""
    for name in _WINDOW_ATTRS:
        values = attrs.get(name)
        if values is not None and len(values) != rank:
            raise UsageError(f"attribute {name!r} = {_ints(values)} has {len(values)} values for "
                             f"{rank} spatial axes")
    check_pool_ranges(attrs)
    axes = pool_axes(attrs)
    if attrs.get("exclude-pad") and attrs["auto_pad"] == "explicit":
        # Rule 5: a window could lie entirely in the padding and average nothing. OpenVINO checks it from the
        # attributes alone, so it holds for a dynamic length too (its CPU plugin refuses that IR when compiling).
        for axis, window in enumerate(axes):
            if max(window.pad_begin, window.pad_end) >= window.effective_kernel:
                raise UsageError(f"spatial axis {axis}: pads {window.pad_begin}, {window.pad_end} are not smaller "
                                 f"than the dilated kernel {window.effective_kernel}, so with exclude-pad a window "
                                 "can lie entirely in the padding; OpenVINO refuses such an AvgPool")
    return axes


def _pool_axis(attrs: dict[str, Any], axis: int, window: AxisSpec, length: int) -> AxisWindow:
    """One spatial axis of OpenVINO's pooling: resolve pads by auto_pad, then round (rules 1-4)."""
    pad_begin, pad_end = window.resolve_pads(length, attrs["auto_pad"])
    padded = length + pad_begin + pad_end
    if window.effective_kernel > padded:
        raise UsageError(f"spatial axis {axis}: the dilated kernel {window.effective_kernel} is larger than the "
                         f"padded input {padded} (input {length}, pads {pad_begin}, {pad_end}); OpenVINO refuses it")
    try:
        # "explicit": OpenVINO applies rounding_type to the resolved pads, also for same_* (rule 2).
        return axis_window(length, window.kernel, window.stride, window.dilation, pad_begin, pad_end,
                           attrs["rounding_type"], "explicit")
    except UsageError as error:
        raise UsageError(f"spatial axis {axis}: {error.problem}") from None


def _pool_interval(attrs: dict[str, Any], window: AxisSpec, dim: Dim) -> Dim:
    """Output bounds for a dynamic input dim: the output length grows with the input length, so the
    bounds are the outputs of the bounds; OpenVINO clamps the lower one to 1, and with same_* pads
    it gives no bounds at all (rule 6)."""
    auto_pad = attrs["auto_pad"]
    if auto_pad in ("same_upper", "same_lower"):
        return Dim.dynamic()

    def length(value: int) -> int:
        pads = window.resolve_pads(value, auto_pad)
        return max(1, output_length(value, window.kernel, window.stride, window.dilation, *pads,
                                    attrs["rounding_type"]))

    return Dim(length(dim.min), None if dim.max is None else length(dim.max))


def _ints(values) -> str:
    return ",".join(str(v) for v in values)


# ---------------------------------------------------------------------------------------------
# Shape rule

SHAPE_RULES = ShapeRules()


@SHAPE_RULES.register("AvgPool", "MaxPool")
def infer_pool(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    """[N, C, *spatial] -> [N, C, *windows per axis]; MaxPool-8+ adds the indices output of the same shape."""
    (data,) = inputs
    if len(data.shape) < 3:
        raise InvalidModelError(f"input {shape_str(data.shape)} must have rank >= 3 (batch, channels, spatial)")
    spatial = data.shape[2:]
    axes = _checked_pool_axes(layer.attrs, len(spatial))
    out = list(data.shape[:2])
    for axis, (window, dim) in enumerate(zip(axes, spatial)):
        out.append(Dim.static(_pool_axis(layer.attrs, axis, window, dim.min).output) if dim.is_static else
                   _pool_interval(layer.attrs, window, dim))
    outputs = [TensorInfo(data.element_type, tuple(out))]
    if "index_element_type" in layer.attrs:
        outputs.append(TensorInfo(layer.attrs["index_element_type"], tuple(out)))
    return outputs


@SHAPE_RULES.register("AdaptiveAvgPool", "AdaptiveMaxPool")
def infer_adaptive_pool(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    """[N, C, *spatial] and the output spatial shape -> [N, C, *output]; AdaptiveMaxPool adds its indices.
    An output shape computed at run time gives dynamic spatial dims."""
    data, size = inputs
    if len(data.shape) not in (3, 4, 5):
        raise InvalidModelError(f"input {shape_str(data.shape)} must have rank 3, 4 or 5 (batch, channels, spatial)")
    if size.element_type not in INDEX_ELEMENT_TYPES or len(size.shape) != 1:
        raise InvalidModelError(f"the output shape input is {size.element_type} {shape_str(size.shape)}, expected a "
                                "1-D i32 or i64 tensor")
    spatial_rank = len(data.shape) - 2
    if any(d.is_static and d.min < 1 for d in data.shape[2:]):  # OpenVINO 2026.4 reads memory it never wrote
        raise InvalidModelError(f"input {shape_str(data.shape)}: every spatial dim must be >= 1")
    if size.shape[0].is_static and size.shape[0].min != spatial_rank:
        raise InvalidModelError(f"the output shape input holds {size.shape[0].min} values for {spatial_rank} "
                                "spatial axes")
    if size.value is None:
        spatial = tuple(Dim.dynamic() for _ in range(spatial_rank))
    else:
        values = [int(v) for v in size.value.ravel()]
        if any(v < 1 or v > MAX_AXIS_VALUE for v in values):
            raise InvalidModelError(f"output shape {values}: every value must be in [1, {MAX_AXIS_VALUE}]")
        spatial = tuple(Dim.static(v) for v in values)
    out = tuple(data.shape[:2]) + spatial
    outputs = [TensorInfo(data.element_type, out)]
    if layer.type == "AdaptiveMaxPool":
        outputs.append(TensorInfo(layer.attrs["index_element_type"], out))
    return outputs
