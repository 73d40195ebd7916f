"""IR ScatterNDUpdate-3/15 (ir/ops/scatter.py) onto runtime.kernels.scatter with OpenVINO's rules (world "ir"):
negative indices count from the end, the last of duplicate updates wins, reductions apply in index order, max and
min skip NaN updates and keep the earlier of equal values. Indices whose last dim is 0 are refused: the spec
replaces all of data by each update, OpenVINO 2026.4's CPU plugin leaves data unchanged."""

from __future__ import annotations

from poolir.ir.errors import InvalidModelError, UnsupportedError
from poolir.runtime.ir_ops.registry import LayerFn, LayerInfo, builder
from poolir.runtime.kernels.scatter import scatter_nd

# ScatterNDUpdate-15's reductions by the kernel's names
KERNEL_REDUCTIONS = {"none": "none", "sum": "add", "sub": "sub", "prod": "mul", "min": "min", "max": "max"}


@builder("ScatterNDUpdate")
def _scatter_nd_update(info: LayerInfo) -> LayerFn:
    reduction = KERNEL_REDUCTIONS[info.layer.attrs.get("reduction", "none")]

    def run(args):
        data, indices, updates = args
        if indices.dtype.kind not in "iu":
            raise InvalidModelError(f"the indices are {indices.dtype}, expected i32 or i64")
        if indices.ndim and indices.shape[-1] == 0:
            raise UnsupportedError("indices with a last dim of 0 (each update replaces all of data by the spec; "
                                   "OpenVINO's CPU plugin leaves data unchanged)")
        return (scatter_nd(data, indices, updates, reduction, "ir"),)
    return run


__all__ = ["KERNEL_REDUCTIONS"]
