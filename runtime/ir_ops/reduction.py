"""IR reductions (ReduceMean, ReduceMax, ReduceMin, ReduceSum, ReduceProd, ReduceL1, ReduceL2) onto
runtime.kernels.reduction."""

from __future__ import annotations

import numpy as np

from poolir.ir.element_types import SATURATED_DTYPES
from poolir.runtime.ir_ops.pooling import openvino_max_floor, openvino_min_ceiling
from poolir.runtime.ir_ops.registry import axis_index, builder, int_list
from poolir.runtime.kernels.reduction import reduce

_REDUCTIONS = {"ReduceMean": "mean", "ReduceMax": "max", "ReduceMin": "min", "ReduceSum": "sum",
               "ReduceProd": "prod", "ReduceL1": "l1", "ReduceL2": "l2"}


_SUMMING = ("sum", "mean", "l1", "l2")


def _saturated_reduce(x: np.ndarray, kind: str, axes: list[int], keep_dims: bool) -> np.ndarray:
    """ReduceSum/Mean/L1/L2 of i8 or u8 as OpenVINO's CPU plugin computes them: its kernel accumulates into the
    output buffer, stored in the output type, so the sum (of x, |x| or x²) saturates there; the mean and the
    square root are taken of that saturated sum afterwards, truncated (OpenVINO 2026.4: ReduceMean of u8
    [200, 200] is 127, ReduceSum 255; i8 ReduceMean [-100, -100, -100] is -42; ReduceL2 of i8 [-128] over no axes is
    11 = trunc(sqrt(127))). Exact whenever the running sum stays in range until it leaves it for good: always for
    u8 and for i8 L1/L2 (no negative terms). Not modelled: an i8 sum that overflows and comes back (it depends on
    the plugin's order of accumulation), and u8 ReduceL2 of an element whose square passes 255 enough (the plugin
    gives 0 for 200 and 255, 15 for 16 and 17). The spec says nothing of overflow."""
    wide = x.astype(np.int64)
    terms = np.abs(wide) if kind == "l1" else (wide * wide if kind == "l2" else wide)
    limits = np.iinfo(x.dtype)
    total = np.clip(np.sum(terms, axis=tuple(axes), keepdims=keep_dims), limits.min, limits.max)
    if kind == "mean":
        total = np.trunc(total / max(1, x.size // max(1, total.size)))
    elif kind == "l2":
        total = np.trunc(np.sqrt(total))
    return np.asarray(total).astype(x.dtype)


@builder(*_REDUCTIONS)
def _reduce(info):
    kind = _REDUCTIONS[info.layer.type]
    keep_dims = info.layer.attrs.get("keep_dims", False)

    def run(args):
        x = args[0]
        axes = sorted({axis_index(a, max(x.ndim, 1)) for a in int_list(args[1], "axes")})
        if x.dtype in SATURATED_DTYPES and kind in _SUMMING:
            return (_saturated_reduce(x, kind, axes, keep_dims),)
        if not axes:
            # OpenVINO: an empty axes list reduces nothing (unlike ONNX, where it reduces every axis), so each
            # element is reduced alone: itself, but |x| for ReduceL1 and ReduceL2 (OpenVINO 2026.4 CPU: -0.94 -> 0.94).
            return (np.abs(x) if kind in ("l1", "l2") else x.copy(),)
        # OpenVINO's ReduceMax/ReduceMin over an empty axis give the finite floor and ceiling of its MaxPool
        # (f32: -+3.4028235e+38), where ONNX gives -+inf: OpenVINO 2026.4 CPU.
        extremes = (openvino_max_floor(x.dtype), openvino_min_ceiling(x.dtype)) if x.size == 0 else None
        return (np.asarray(reduce(x, kind, axes, keep_dims, empty_extremes=extremes)),)

    return run
