"""ONNX ScatterND (11, 13, 16, 18): the version rows and the adapter onto runtime.kernels.scatter (world "onnx").

Indices are int64; negative ones count from the end (the spec's wording since 11; onnxruntime agrees), and one out
of range is refused. reduction arrives in 16 (none, add, mul) and gains max and min in 18 (REDUCTION_SINCE, asked by
the converters). Duplicate index tuples are undefined for none by the spec; onnxruntime and OpenVINO keep the last
update, and so does poolir. max and min follow onnxruntime's fold (runtime.kernels.scatter). Element types: every
numeric type, bool, and bfloat16 from 13; string and complex tensors are not supported. onnxruntime 1.31 refuses
float16 with a reduction ("not supported"); poolir computes it, rounding to float16 after every step.
"""

from __future__ import annotations

import numpy as np

from poolir.ir.errors import UsageError
from poolir.runtime.kernels.scatter import scatter_nd
from poolir.runtime.onnx_ops.element_types import BF16, BOOL, FLOAT_TYPES, INTEGER_TYPES, check_dtype
from poolir.runtime.onnx_ops.registry import STRING, Attribute, NodeContext, Step, adapter, define

_TYPES = INTEGER_TYPES | FLOAT_TYPES | {BOOL}
define("ScatterND", [(11, {}, _TYPES), (13, {}, _TYPES | {BF16}), (16, {"reduction": Attribute(STRING, "none")}),
                     (18, {})])
# The first opset whose ScatterND takes each reduction (none: the op's first opset).
REDUCTION_SINCE = {"none": 11, "add": 16, "mul": 16, "max": 18, "min": 18}


def reduction_since(reduction: str) -> int | None:
    """The first opset whose ScatterND reduces by `reduction`, or None for one no version has ("sub")."""
    return REDUCTION_SINCE.get(reduction)


@adapter("ScatterND")
def plan_scatter_nd(ctx: NodeContext) -> Step:
    reduction = ctx.attrs.get("reduction", "none")
    since = reduction_since(reduction)
    if since is None or since > ctx.version.since:
        allowed = [name for name, first in REDUCTION_SINCE.items() if first <= ctx.version.since]
        raise UsageError(f"attribute 'reduction' = {reduction!r} is not one of {', '.join(allowed)} in "
                         f"{ctx.version.label}")

    def run(data, indices, updates):
        check_dtype(ctx.version, data.dtype)
        if indices.dtype != np.int64:
            raise UsageError(f"the indices are {indices.dtype}, ScatterND takes int64")
        if updates.dtype != data.dtype:
            raise UsageError(f"updates are {updates.dtype}, data {data.dtype}: the spec binds them to one type T")
        return (scatter_nd(data, indices, updates, reduction, "onnx"),)
    return run


__all__ = ["REDUCTION_SINCE", "plan_scatter_nd", "reduction_since"]
