"""IR reductions (ReduceMean, ReduceMax, ReduceMin, ReduceSum, ReduceProd, ReduceL1, ReduceL2) onto
runtime.kernels.reduction."""

from __future__ import annotations

import numpy as np

from poolir.runtime.ir_ops.pooling import openvino_max_floor, openvino_min_ceiling
from poolir.runtime.ir_ops.registry import axis_index, builder, int_list
from poolir.runtime.kernels.reduction import reduce

_REDUCTIONS = {"ReduceMean": "mean", "ReduceMax": "max", "ReduceMin": "min", "ReduceSum": "sum",
               "ReduceProd": "prod", "ReduceL1": "l1", "ReduceL2": "l2"}


@builder(*_REDUCTIONS)
def _reduce(info):
    kind = _REDUCTIONS[info.layer.type]
    keep_dims = info.layer.attrs.get("keep_dims", False)

    def run(args):
        x = args[0]
        axes = sorted({axis_index(a, max(x.ndim, 1)) for a in int_list(args[1], "axes")})
        if not axes:
            # OpenVINO: an empty axes list reduces nothing (unlike ONNX, where it reduces every axis).
            return (x.copy(),)
        # OpenVINO's ReduceMax/ReduceMin over an empty axis give the finite floor and ceiling of its MaxPool
        # (f32: -+3.4028235e+38), where ONNX gives -+inf: OpenVINO 2026.4 CPU.
        extremes = (openvino_max_floor(x.dtype), openvino_min_ceiling(x.dtype)) if x.size == 0 else None
        return (np.asarray(reduce(x, kind, axes, keep_dims, empty_extremes=extremes)),)

    return run
