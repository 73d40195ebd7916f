"""ONNX ConvTranspose: version rows (1, 11, 22) and the adapter onto runtime.kernels.transposed_convolution.

Geometry (`conv_transpose_geometry`, which the converter uses too), as onnxruntime 1.31 computes it (measured on
1-D cases with strides 2 and 3, dilations 1 and 2; the spec's text agrees where it is explicit). The products of
input position o land at o * s + t * d (tap t), spanning full = s * (L - 1) + d * (k - 1) + 1 positions; the output
is the window of `out` positions starting at `begin` (positions past full are zeros):
- output_shape (the spatial dims, or the whole N, C, ... shape) sets out; without it SAME_UPPER and SAME_LOWER aim
  at out = L * s, but with total = max(0, full + output_padding - L * s) (so never beyond full + output_padding),
  and NOTSET and VALID give out = full + output_padding - pads (VALID: no pads, begin 0). An empty output is
  refused, as onnxruntime refuses it.
- Where out is set: total = full + output_padding - out; SAME_UPPER begins at floor(total / 2), NOTSET and
  SAME_LOWER at total - floor(total / 2) (the spec's formulas; OpenVINO's same_upper is the other way round, see
  ir/ops/transposed_convolution.py). A negative total (out longer than full + output_padding) begins at 0 and ends
  in zeros; onnxruntime refuses it once output_padding - total reaches the stride ("inconsistent with input spatial
  dimensions"), and so does poolir.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from poolir.ir.errors import UsageError
from poolir.runtime.kernels.transposed_convolution import conv_transpose
from poolir.runtime.onnx_ops.element_types import FLOAT_TYPES, FLOAT_TYPES_BF16, check_dtype
from poolir.runtime.onnx_ops.registry import INT, INTS, STRING, Attribute, NodeContext, Step, adapter, define

define("ConvTranspose", [
    (1, {"auto_pad": Attribute(STRING, "NOTSET"), "dilations": Attribute(INTS), "group": Attribute(INT, 1),
         "kernel_shape": Attribute(INTS), "output_padding": Attribute(INTS), "output_shape": Attribute(INTS),
         "pads": Attribute(INTS), "strides": Attribute(INTS)}, FLOAT_TYPES),
    (11, {}),
    (22, {}, FLOAT_TYPES_BF16),
])
AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


@dataclass(frozen=True)
class TransposeGeometry:
    """Per spatial axis: strides, dilations, where the output window begins over the products' positions, its
    length, and `end` = full - begin - out (positions cut at the end; negative: that many zeros added)."""

    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    begin: tuple[int, ...]
    out: tuple[int, ...]
    end: tuple[int, ...]


def _per_axis(attrs: Mapping[str, Any], name: str, rank: int, default: int, minimum: int) -> tuple[int, ...]:
    values = attrs.get(name)
    if values is None:
        return (default,) * rank
    if len(values) != rank or any(v < minimum for v in values):
        raise UsageError(f"attribute {name!r} = {list(values)}: needs {rank} values, each >= {minimum}")
    return tuple(int(v) for v in values)


@dataclass(frozen=True)
class TransposeAttributes:
    """A ConvTranspose's attributes checked and completed for `rank` spatial axes (target: output_shape's spatial
    dims, or None)."""

    mode: str
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads: tuple[int, ...]
    padding: tuple[int, ...]
    target: tuple[int, ...] | None


def transpose_attributes(attrs: Mapping[str, Any], rank: int, kernel: Sequence[int]) -> TransposeAttributes:
    mode = attrs.get("auto_pad", "NOTSET")
    if mode not in AUTO_PADS:
        raise UsageError(f"attribute 'auto_pad' = {mode!r}: must be one of {', '.join(AUTO_PADS)}")
    if attrs.get("kernel_shape") is not None and tuple(attrs["kernel_shape"]) != tuple(kernel):
        raise UsageError(f"kernel_shape {list(attrs['kernel_shape'])} differs from the weights' {list(kernel)}")
    target = attrs.get("output_shape")
    if target is not None:
        if len(target) not in (rank, rank + 2):
            raise UsageError(f"output_shape {list(target)} needs {rank} (or {rank + 2}) values")
        target = tuple(int(v) for v in list(target)[-rank:])
    pads = _per_axis(attrs, "pads", 2 * rank, 0, 0) if mode == "NOTSET" else (0,) * (2 * rank)
    return TransposeAttributes(mode, _per_axis(attrs, "strides", rank, 1, 1), _per_axis(attrs, "dilations", rank, 1, 1),
                               pads, _per_axis(attrs, "output_padding", rank, 0, 0), target)


def conv_transpose_geometry(attrs: Mapping[str, Any], spatial: Sequence[int],
                            kernel: Sequence[int]) -> TransposeGeometry:
    """The output window of a ConvTranspose over input dims `spatial` and kernel `kernel` (the module doc's rules)."""
    rank = len(spatial)
    checked = transpose_attributes(attrs, rank, kernel)
    mode, strides, dilations, pads, padding, target = (checked.mode, checked.strides, checked.dilations, checked.pads,
                                                       checked.padding, checked.target)
    begins, outs, ends = [], [], []
    for axis in range(rank):
        full = strides[axis] * (spatial[axis] - 1) + dilations[axis] * (kernel[axis] - 1) + 1
        if target is None and mode in ("NOTSET", "VALID"):
            begin, out = pads[axis], full + padding[axis] - pads[axis] - pads[rank + axis]
        elif target is None:   # SAME_*: L * s positions, or all of full + output_padding when that is fewer
            total = max(0, full + padding[axis] - spatial[axis] * strides[axis])
            out = full + padding[axis] - total
            begin = total // 2 if mode == "SAME_UPPER" else total - total // 2
        else:
            out = int(target[axis])
            total = full + padding[axis] - out
            if total < 0 and padding[axis] - total >= strides[axis]:
                raise UsageError(f"output_shape {out} on spatial axis {axis} is inconsistent with the input's "
                                 f"{spatial[axis]} (full size {full}, output_padding {padding[axis]})")
            begin = 0 if total < 0 else (total // 2 if mode == "SAME_UPPER" else total - total // 2)
        if out < 1:   # onnxruntime: "Computed output dimension is <= 0"
            raise UsageError(f"spatial axis {axis}: the output would have {out} positions")
        begins.append(begin)
        outs.append(out)
        ends.append(full - begin - out)
    return TransposeGeometry(strides, dilations, tuple(begins), tuple(outs), tuple(ends))


@adapter("ConvTranspose")
def plan_conv_transpose(ctx: NodeContext) -> Step:
    attrs, version = ctx.attrs, ctx.version
    groups = attrs["group"]
    if groups < 1:
        raise UsageError(f"attribute 'group' = {groups}: must be >= 1")

    def run(x, w, b=None):
        check_dtype(version, x.dtype)
        for name, value in (("W", w), ("B", b)):
            if value is not None and value.dtype != x.dtype:
                raise UsageError(f"{name} has type {value.dtype}, X {x.dtype} (they must be equal)")
        if x.ndim < 3 or w.ndim != x.ndim:
            raise UsageError(f"X {list(x.shape)} and W {list(w.shape)} must both have rank N + 2 >= 3")
        if x.shape[1] % groups or w.shape[0] != x.shape[1]:
            raise UsageError(f"W {list(w.shape)} needs C = {x.shape[1]} rows, a multiple of group {groups}")
        if b is not None and b.shape != (groups * w.shape[1],):
            raise UsageError(f"B has shape {list(b.shape)}, expected [{groups * w.shape[1]}]")
        geometry = conv_transpose_geometry(attrs, x.shape[2:], w.shape[2:])
        return (conv_transpose(x, w, b, strides=geometry.strides, dilations=geometry.dilations,
                               pads_begin=geometry.begin, output=geometry.out, groups=groups),)
    return run


__all__ = ["AUTO_PADS", "TransposeAttributes", "TransposeGeometry", "conv_transpose_geometry", "transpose_attributes"]
