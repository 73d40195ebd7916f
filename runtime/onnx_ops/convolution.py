"""ONNX Conv: version rows, attribute reading and the adapter onto runtime.kernels.convolution.conv.

Conv readings (every version: 1, 11, 22; 11 only clarified the pads text, 22 adds bfloat16):

- kernel_shape is optional: absent, it is W's spatial dims; present, it must equal them.
- auto_pad NOTSET uses `pads` (all begins, then all ends; default 0). SAME_UPPER / SAME_LOWER give
  out = ceil(L / s) with total pad max(0, (out - 1) * s + (k - 1) * d + 1 - L), the odd element at the
  end / the beginning (ir.geometry.same_pads, dilation included, as the spec's formula and onnxruntime's
  Conv do). VALID: no padding, out = floor((L - ek) / s) + 1. Rounding is always floor (Conv has no
  ceil_mode). `pads` together with auto_pad != NOTSET is refused (the spec: "cannot be used simultaneously").
- group: C = group * W.shape[1] and group divides M.
- B (optional) is [M], added per output channel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from poolir.ir.errors import UsageError
from poolir.ir.geometry import AxisWindow, pool_windows
from poolir.runtime.kernels.convolution import BiasedWeights, conv, conv_biased
from poolir.runtime.onnx_ops.element_types import FLOAT_TYPES, FLOAT_TYPES_BF16, check_dtype
from poolir.runtime.onnx_ops.registry import INT, INTS, STRING, Attribute, NodeContext, OnnxOpVersion, Step, \
    adapter, define

define("Conv", [
    (1, {"auto_pad": Attribute(STRING, "NOTSET"), "dilations": Attribute(INTS), "group": Attribute(INT, 1),
         "kernel_shape": Attribute(INTS), "pads": Attribute(INTS), "strides": Attribute(INTS)}, FLOAT_TYPES),
    (11, {}),  # same attributes; the pads and auto_pad wording clarified
    (22, {}, FLOAT_TYPES_BF16),
])

_AUTO_PADS = {"NOTSET": "explicit", "SAME_UPPER": "same_upper", "SAME_LOWER": "same_lower", "VALID": "valid"}


@dataclass(frozen=True, slots=True)
class OnnxConv:
    """A Conv node's attributes, read and checked without shapes. Per-axis values are None when the
    attribute is absent (their length is then the kernel's rank, known only from W)."""

    kernel: tuple[int, ...] | None
    strides: tuple[int, ...] | None
    dilations: tuple[int, ...] | None
    pads: tuple[int, ...] | None
    auto_pad: str  # ir.geometry's name: explicit, same_upper, same_lower, valid
    group: int

    def geometry(self, weights_shape: Sequence[int]) -> dict[str, tuple[int, ...]]:
        """kernel, strides, dilations, pads_begin, pads_end for weights of this shape; raises UsageError."""
        if len(weights_shape) < 3:
            raise UsageError(f"weights W of shape {list(weights_shape)}: need rank >= 3 (M, C/group, kernel...)")
        kernel = tuple(int(k) for k in weights_shape[2:])
        rank = len(kernel)
        if self.kernel is not None and self.kernel != kernel:
            raise UsageError(f"attribute 'kernel_shape' = {list(self.kernel)} differs from the weights' spatial "
                             f"dims {list(kernel)}")
        values = {"kernel": kernel}
        for name, value in (("strides", self.strides), ("dilations", self.dilations)):
            if value is not None and len(value) != rank:
                raise UsageError(f"attribute '{name}' has {len(value)} values for {rank} kernel axes")
            values[name] = value if value is not None else (1,) * rank
        pads = self.pads if self.pads is not None else (0,) * (2 * rank)
        if len(pads) != 2 * rank:
            raise UsageError(f"attribute 'pads' has {len(pads)} values for {rank} kernel axes (expected "
                             f"{2 * rank}: all begins, then all ends)")
        values["pads_begin"], values["pads_end"] = tuple(pads[:rank]), tuple(pads[rank:])
        return values

    def windows(self, input_shape: Sequence[int], weights_shape: Sequence[int]) -> tuple[AxisWindow, ...]:
        """The floor-rounded windows for these shapes; raises UsageError for shapes that do not fit."""
        geometry = self.geometry(weights_shape)
        rank = len(geometry["kernel"])
        if len(input_shape) != rank + 2:
            raise UsageError(f"input X of shape {list(input_shape)} does not match weights W of shape "
                             f"{list(weights_shape)} (expected rank {rank + 2})")
        channels, filters = input_shape[1], weights_shape[0]
        if weights_shape[1] * self.group != channels or filters % self.group:
            raise UsageError(f"weights W {list(weights_shape)} with group {self.group} do not fit input X "
                             f"{list(input_shape)}: need W.shape[1] * group == C ({channels}) and group dividing M "
                             f"({filters})")
        return pool_windows(tuple(input_shape[2:]), geometry["kernel"], geometry["strides"], geometry["dilations"],
                            geometry["pads_begin"], geometry["pads_end"], "floor", self.auto_pad)


def _positive(attrs: Mapping[str, Any], name: str, minimum: int) -> tuple[int, ...] | None:
    values = attrs.get(name)
    if values is None:
        return None
    if any(v < minimum for v in values):
        raise UsageError(f"attribute '{name}' = {list(values)}: every value must be >= {minimum}")
    return tuple(values)


def onnx_conv(attrs: Mapping[str, Any]) -> OnnxConv:
    """Read a Conv node's normalised attributes. Raises UsageError naming the attribute and the rule."""
    auto_pad_text = attrs.get("auto_pad", "NOTSET")
    if auto_pad_text not in _AUTO_PADS:
        raise UsageError(f"attribute 'auto_pad' = {auto_pad_text!r}: must be one of {', '.join(_AUTO_PADS)}")
    pads = _positive(attrs, "pads", 0)
    if _AUTO_PADS[auto_pad_text] != "explicit" and pads is not None and any(pads):
        raise UsageError(f"attribute 'pads' = {list(pads)} cannot be combined with auto_pad={auto_pad_text}")
    group = attrs.get("group", 1)
    if group < 1:
        raise UsageError(f"attribute 'group' = {group}: must be >= 1")
    kernel = _positive(attrs, "kernel_shape", 1)
    if kernel is not None and not kernel:
        raise UsageError("attribute 'kernel_shape' is empty: at least one spatial axis is needed")
    return OnnxConv(kernel, _positive(attrs, "strides", 1), _positive(attrs, "dilations", 1), pads,
                    _AUTO_PADS[auto_pad_text], group)


class ConvStep:
    """Conv bound to the kernel; the windows are resolved once per (input shape, weights shape, dtype)."""

    __slots__ = ("spec", "version", "_plans")

    def __init__(self, spec: OnnxConv, version: OnnxOpVersion):
        self.spec = spec
        self.version = version
        self._plans: dict[tuple, tuple[AxisWindow, ...]] = {}

    def __call__(self, x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> tuple:
        return (conv(x, w, b, windows=self.windows(x, w, b), groups=self.spec.group),)

    def windows(self, x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> tuple[AxisWindow, ...]:
        key = (x.shape, w.shape, x.dtype)
        windows = self._plans.get(key)
        if windows is None:
            check_dtype(self.version, x.dtype)
            if b is not None and b.shape != (w.shape[0],):
                raise UsageError(f"bias B of shape {list(b.shape)} must be [{w.shape[0]}], one value per filter")
            windows = self._plans[key] = self.spec.windows(x.shape, w.shape)
        return windows

    def with_constants(self, w, b) -> PackedConvStep | None:
        """This Conv with constant W and B bound and packed (kernels.convolution.BiasedWeights), taking x alone;
        None where packing saves nothing."""
        if not isinstance(w, np.ndarray) or not isinstance(b, np.ndarray):
            return None
        spec = self.spec
        pointwise = (all(k == 1 for k in w.shape[2:]) and all(s == 1 for s in spec.strides or ())
                     and not any(spec.pads or ()))
        if not BiasedWeights.pays(w, b, spec.group, pointwise):
            return None
        return PackedConvStep(self, BiasedWeights(w, b))


class PackedConvStep:
    """A ConvStep with its weights and bias bound as BiasedWeights: called with x alone."""

    __slots__ = ("step", "weights")

    def __init__(self, step: ConvStep, weights: BiasedWeights):
        self.step, self.weights = step, weights

    def __call__(self, x: np.ndarray) -> tuple:
        weights = self.weights
        return (conv_biased(x, weights, windows=self.step.windows(x, weights.w, weights.bias)),)


@adapter("Conv")
def plan_conv(ctx: NodeContext) -> Step:
    spec = onnx_conv(ctx.attrs)
    if ctx.input_types[0] is not None:
        check_dtype(ctx.version, ctx.input_types[0])
    x_shape, w_shape = ctx.input_shapes[0], ctx.input_shapes[1] if len(ctx.input_shapes) > 1 else None
    if w_shape is not None and all(d is not None for d in w_shape):
        spec.geometry(w_shape)  # attribute lengths against the kernel rank, before the first run
        if x_shape is not None and all(d is not None for d in x_shape):
            spec.windows(x_shape, w_shape)
    return ConvStep(spec, ctx.version)


__all__ = ["ConvStep", "OnnxConv", "PackedConvStep", "onnx_conv"]
