"""ONNX pooling operators: version rows, attribute readings and adapters onto runtime.kernels.pooling.

Pooling readings (these go into the README's semantics section too):

- ceil_mode=1 rounds the output size up, but a last window that would start at or after L + pad_begin
  (in the right padding) is dropped, in every version ("sliding windows that would start in the right
  padded region are ignored", AveragePool-19/22, MaxPool-22; PyTorch documents the same rule for its
  ceil_mode; onnxruntime and onnx.reference agree): ir.geometry rounding "ceil_torch".
- count_include_pad=1 divides by the taps inside the padded tensor [-pad_begin, L + pad_end), never by
  taps past it (a ceil overhang): divisor "padded" (as PyTorch's avg_pool, whose divisor is clipped to
  the padded input, and onnxruntime). count_include_pad=0, and AveragePool-1 (which has no
  such attribute and always excludes pads), divide by the real input taps: divisor "real".
- auto_pad SAME_UPPER/SAME_LOWER: out = ceil(L / s), total pad (out - 1) * s + (k - 1) * d + 1 - L (at
  least 0), the odd element at the end (UPPER) or the beginning (LOWER); ceil_mode does not change it
  (AveragePool-19/22: "SAME_UPPER or SAME_LOWER: output_spatial_shape[i] = ceil(input_spatial_shape[i] /
  strides_spatial_shape[i])", one formula for both modes; onnxruntime agrees). Dilation counts, as the
  spec's pad_shape formula says; onnxruntime 1.31 pads for the undilated kernel, and fails ("padding
  values must be non-negative") where the formula is negative (stride > effective kernel: no padding).
- auto_pad VALID: no padding and out = floor((L - ek) / s) + 1 even when ceil_mode=1. The spec's VALID
  formula (every version) is ceil((L - ek + 1) / s), which is that same number, and it is stated
  without reference to ceil_mode; onnx.reference agrees for MaxPool (its AveragePool refuses ceil_mode
  with auto_pad). onnxruntime 1.31 instead applies ceil
  rounding to VALID (L=3, k=2, s=2 gives 2 windows, the second a half-window); poolir follows the spec.
- Windows with no real input element (possible when a pad >= the kernel extent; onnxruntime refuses
  such pads, "Pad should be smaller than kernel"): MaxPool gives -inf (integers: the type's minimum),
  the identity of max, with index -1 (no element was selected); AveragePool with count_include_pad=0
  gives NaN (0 / 0 real elements, as onnx.reference's nanmean); with count_include_pad=1 it gives 0
  (a sum of zero padding over a non-zero count, as onnx.reference); LpPool gives 0 (an empty sum).
- MaxPool Indices (opset 8+): flat index over N, C and the spatial dims of the input; storage_order=1
  makes only the spatial part column-major; padding is never selected; ties go to the first element in
  row-major scan order of the window.
- LpPool: (sum over real elements |x|^p)^(1/p); p is a float in version 1 (default 2.0) and an int from
  version 2 (default 2); ceil_mode and dilations from 18. p <= 0 is refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from poolir.ir.errors import UsageError
from poolir.ir.geometry import pool_windows
from poolir.runtime.kernels.pooling import IndexLayout, avg_pool, global_pool, lp_pool, max_pool
from poolir.runtime.onnx_ops.element_types import FLOAT_TYPES, FLOAT_TYPES_BF16, I8, U8, check_dtype
from poolir.runtime.onnx_ops.registry import (FLOAT, INT, INTS, OP_VERSIONS, STRING, Attribute, NodeContext,
                                              OnnxOpVersion, Step, adapter, define)

_POOL_COMMON = {"auto_pad": Attribute(STRING, "NOTSET"), "kernel_shape": Attribute(INTS, required=True),
                "pads": Attribute(INTS), "strides": Attribute(INTS)}

define("AveragePool", [
    (1, _POOL_COMMON, FLOAT_TYPES),                         # always excludes pads from the divisor
    (7, {"count_include_pad": Attribute(INT, 0)}),
    (10, {"ceil_mode": Attribute(INT, 0)}),
    (11, {}),                                               # same attributes; pads wording clarified
    (19, {"dilations": Attribute(INTS)}),
    (22, {}, FLOAT_TYPES_BF16),
])
define("MaxPool", [
    (1, _POOL_COMMON, FLOAT_TYPES, 1),
    (8, {"storage_order": Attribute(INT, 0)}, None, 2),     # the optional Indices output appears
    (10, {"ceil_mode": Attribute(INT, 0), "dilations": Attribute(INTS)}),
    (11, {}),
    (12, {}, FLOAT_TYPES | {I8, U8}),
    (22, {}, FLOAT_TYPES_BF16 | {I8, U8}),
])
define("LpPool", [
    # LpPool-1 marks kernel_shape optional but gives it no meaning when absent; poolir requires it.
    (1, {**_POOL_COMMON, "p": Attribute(FLOAT, 2.0)}, FLOAT_TYPES),
    (2, {"p": Attribute(INT, 2)}),
    (11, {}),
    (18, {"ceil_mode": Attribute(INT, 0), "dilations": Attribute(INTS)}),
    (22, {}, FLOAT_TYPES_BF16),
])
define("GlobalAveragePool", [(1, {}, FLOAT_TYPES), (22, {}, FLOAT_TYPES_BF16)])
define("GlobalMaxPool", [(1, {}, FLOAT_TYPES), (22, {}, FLOAT_TYPES_BF16)])
define("GlobalLpPool", [(1, {"p": Attribute(FLOAT, 2.0)}, FLOAT_TYPES), (2, {"p": Attribute(INT, 2)}),
                         (22, {}, FLOAT_TYPES_BF16)])

POOLING_OPS = ("AveragePool", "MaxPool", "LpPool", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")


# ---------------------------------------------------------------------------------------------------
# ONNX attributes -> kernel parameters

_AUTO_PADS = {"NOTSET": "explicit", "SAME_UPPER": "same_upper", "SAME_LOWER": "same_lower", "VALID": "valid"}


@dataclass(frozen=True, slots=True)
class OnnxPool:
    """A windowed ONNX pooling node, read and validated; shape-independent.

    family: "max" | "avg" | "lp". rounding and auto_pad use ir.geometry's names. divisor (avg only):
    "real" or "padded". with_indices: MaxPool's second output is requested.
    """

    family: str
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads_begin: tuple[int, ...]
    pads_end: tuple[int, ...]
    rounding: str
    auto_pad: str
    divisor: str = "real"
    p: float = 2.0
    column_major_indices: bool = False
    with_indices: bool = False

    @property
    def spatial_rank(self) -> int:
        return len(self.kernel)

    def check_rank(self, rank: int) -> None:
        if rank != self.spatial_rank + 2:
            raise UsageError(f"input rank {rank} does not match kernel_shape with {self.spatial_rank} "
                             f"axes (expected rank {self.spatial_rank + 2}: N, C and {self.spatial_rank} spatial)")

    def windows(self, input_shape: Sequence[int]):
        """ir.geometry windows for an input of this shape (N, C, spatial...). Raises UsageError."""
        self.check_rank(len(input_shape))
        return pool_windows(tuple(input_shape[2:]), self.kernel, self.strides, self.dilations, self.pads_begin,
                            self.pads_end, self.rounding, self.auto_pad)


def _flag(attrs: Mapping[str, Any], name: str) -> bool:
    value = attrs.get(name, 0)
    if value not in (0, 1):
        raise UsageError(f"attribute '{name}' = {value}: must be 0 or 1")
    return bool(value)


def _per_axis(attrs: Mapping[str, Any], name: str, rank: int, minimum: int, default: int) -> tuple[int, ...]:
    values = attrs.get(name)
    if values is None:
        return (default,) * rank
    if len(values) != rank:
        raise UsageError(f"attribute '{name}' has {len(values)} values but kernel_shape has {rank} axes")
    for value in values:
        if value < minimum:
            raise UsageError(f"attribute '{name}' = {list(values)}: every value must be >= {minimum}")
    return tuple(values)


def onnx_pool(version: OnnxOpVersion, attrs: Mapping[str, Any], output_count: int) -> OnnxPool:
    """Read a windowed pooling node (AveragePool, MaxPool, LpPool) from its normalised attributes.

    Raises UsageError naming the attribute and the rule (the caller locates it at the node).
    """
    family = {"AveragePool": "avg", "MaxPool": "max", "LpPool": "lp"}[version.op_type]
    kernel = attrs["kernel_shape"]
    rank = len(kernel)
    if rank < 1:
        raise UsageError("attribute 'kernel_shape' is empty: at least one spatial axis is needed")
    kernel = _per_axis(attrs, "kernel_shape", rank, 1, 1)
    strides = _per_axis(attrs, "strides", rank, 1, 1)
    dilations = _per_axis(attrs, "dilations", rank, 1, 1)
    pads = attrs.get("pads")
    if pads is None:
        pads = (0,) * (2 * rank)
    if len(pads) != 2 * rank:
        raise UsageError(f"attribute 'pads' has {len(pads)} values but kernel_shape has {rank} axes "
                         f"(expected {2 * rank}: all begins, then all ends)")
    if any(v < 0 for v in pads):
        raise UsageError(f"attribute 'pads' = {list(pads)}: every value must be >= 0")
    auto_pad_text = attrs.get("auto_pad", "NOTSET")
    if auto_pad_text not in _AUTO_PADS:
        raise UsageError(f"attribute 'auto_pad' = {auto_pad_text!r}: must be one of {', '.join(_AUTO_PADS)}")
    auto_pad = _AUTO_PADS[auto_pad_text]
    if auto_pad != "explicit" and any(pads):
        raise UsageError(f"attribute 'pads' = {list(pads)} cannot be combined with auto_pad={auto_pad_text}")
    ceil_mode = _flag(attrs, "ceil_mode")
    # VALID ignores ceil_mode: the spec's VALID formula ceil((L - ek + 1) / s) is the floor rounding.
    # SAME ignores it too (ir.geometry always uses floor with the SAME pads, giving ceil(L / s)).
    rounding = "ceil_torch" if ceil_mode and auto_pad == "explicit" else "floor"
    divisor = "padded" if _flag(attrs, "count_include_pad") else "real"
    p = _lp_exponent(attrs["p"]) if family == "lp" else 2.0
    column_major = _flag(attrs, "storage_order")
    with_indices = output_count >= 2
    if with_indices and version.max_outputs < 2:
        raise UsageError(f"{version.label} has one output (the Indices output exists from "
                         f"MaxPool-{_first_version_with_indices()})")
    return OnnxPool(family, kernel, strides, dilations, tuple(pads[:rank]), tuple(pads[rank:]), rounding,
                    auto_pad, divisor, p, column_major, with_indices)


def _first_version_with_indices() -> int:
    return next(row.since for row in OP_VERSIONS["MaxPool"] if row.max_outputs >= 2)


def global_p(version: OnnxOpVersion, attrs: Mapping[str, Any]) -> float:
    return _lp_exponent(attrs.get("p", 2.0))


def _lp_exponent(value) -> float:
    """LpPool's p, a float (version 1) or an int (version 2 on); refused unless finite and > 0."""
    p = float(value)
    if not p > 0 or math.isinf(p):
        raise UsageError(f"attribute 'p' = {value}: must be a finite number > 0")
    return p


def empty_max_value(dtype: np.dtype):
    """MaxPool's value for a window with no real input element: -inf, or an integer type's minimum."""
    dtype = np.dtype(dtype)
    return np.iinfo(dtype).min if dtype.kind in "iu" else -np.inf


# Values for windows without any real input element (see the module docstring).
EMPTY_AVERAGE_EXCLUDE_PAD = np.nan
EMPTY_AVERAGE_INCLUDE_PAD = 0.0


# ---------------------------------------------------------------------------------------------------
# Adapters


class WindowedPoolStep:
    """AveragePool / MaxPool / LpPool bound to the kernels; geometry is resolved once per input shape."""

    __slots__ = ("pool", "version", "_plans", "_run")

    def __init__(self, pool: OnnxPool, version: OnnxOpVersion):
        self.pool = pool
        self.version = version
        self._plans: dict[tuple, tuple] = {}  # (shape, dtype) -> windows
        if pool.family == "max":
            layout = (IndexLayout(dtype=np.int64, flatten_from=0,
                                  spatial_column_major=pool.column_major_indices, empty_index=-1)
                      if pool.with_indices else None)

            def run(x, windows):
                result = max_pool(x, windows, indices=layout, empty_value=empty_max_value(x.dtype))
                return result if pool.with_indices else (result,)
        elif pool.family == "avg":
            empty = EMPTY_AVERAGE_INCLUDE_PAD if pool.divisor == "padded" else EMPTY_AVERAGE_EXCLUDE_PAD

            def run(x, windows):
                return (avg_pool(x, windows, divisor=pool.divisor, empty_value=empty),)
        else:
            def run(x, windows):
                return (lp_pool(x, windows, p=pool.p),)
        self._run = run

    def plan(self, shape: tuple[int, ...], dtype: np.dtype):
        """Check the type and resolve the geometry for one input shape; cached."""
        key = (shape, np.dtype(dtype))
        windows = self._plans.get(key)
        if windows is None:
            check_dtype(self.version, dtype)
            windows = self._plans[key] = self.pool.windows(shape)
        return windows

    def __call__(self, x: np.ndarray) -> tuple:
        windows = self._plans.get((x.shape, x.dtype))
        if windows is None:
            windows = self.plan(x.shape, x.dtype)
        return self._run(x, windows)


@adapter("AveragePool", "MaxPool", "LpPool")
def plan_windowed_pool(ctx: NodeContext) -> Step:
    pool = onnx_pool(ctx.version, ctx.attrs, ctx.output_count)
    step = WindowedPoolStep(pool, ctx.version)
    if ctx.input_types[0] is not None:
        check_dtype(ctx.version, ctx.input_types[0])
    shape = ctx.input_shapes[0]
    if shape is not None:
        pool.check_rank(len(shape))
        if all(d is not None for d in shape) and ctx.input_types[0] is not None:
            step.plan(tuple(shape), ctx.input_types[0])
    return step


def _check_global_rank(rank: int, version: OnnxOpVersion) -> None:
    if rank < 3:
        raise UsageError(f"input rank {rank}: {version.op_type} needs N, C and at least one spatial axis")


@adapter("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
def plan_global_pool(ctx: NodeContext) -> Step:
    kind = {"GlobalAveragePool": "avg", "GlobalMaxPool": "max", "GlobalLpPool": "lp"}[ctx.version.op_type]
    p = global_p(ctx.version, ctx.attrs) if kind == "lp" else 2.0
    version = ctx.version
    if ctx.input_types[0] is not None:
        check_dtype(version, ctx.input_types[0])
    shape = ctx.input_shapes[0]
    if shape is not None:
        _check_global_rank(len(shape), version)
    checked: set = set()

    def run(x):
        if x.dtype not in checked:
            check_dtype(version, x.dtype)
            _check_global_rank(x.ndim, version)
            checked.add(x.dtype)
        return (global_pool(x, kind, spatial_rank=x.ndim - 2, p=p),)
    return run


__all__ = ["EMPTY_AVERAGE_EXCLUDE_PAD", "EMPTY_AVERAGE_INCLUDE_PAD", "OnnxPool", "POOLING_OPS", "WindowedPoolStep",
           "empty_max_value", "global_p", "onnx_pool"]
