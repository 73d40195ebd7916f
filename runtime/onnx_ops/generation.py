"""ONNX Range (11, 27): the version rows and the adapter onto runtime.kernels.generation.

start, limit and delta are scalars (or one-element tensors, as onnxruntime accepts) of one type T: float, double,
int16, int32, int64, and from opset 27 float16 and bfloat16, computed in float32 (stash_type 1, the default) or
float64 (stash_type 11) and cast back. The count is max(ceil((limit - start) / delta), 0) in float64, as onnxruntime
1.31 computes it (ir.ops.generation.range_count: float32 0.034, 39.034, 3 has 14 elements, though the float32
difference is 39.0; an integer count is exact, and a difference the type cannot hold is refused where onnxruntime
overflows).

The values follow the spec's formula, output[i] = start + i * delta in the computation type. onnxruntime 1.31 adds
delta to a running value instead, so its float outputs drift by ulps from the spec's (float32 0, 1, 0.1: its
element 7 is 0.70000005, the spec's 0.69999999); integer outputs are identical.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from poolir.ir.errors import UsageError
from poolir.ir.ops.generation import range_count
from poolir.runtime.kernels.generation import arange
from poolir.runtime.onnx_ops.element_types import BF16, F16, F32, F64, check_dtype, check_one_type
from poolir.runtime.onnx_ops.registry import INT, Attribute, NodeContext, Step, adapter, define

_RANGE_TYPES = frozenset({F32, F64, np.dtype(np.int16), np.dtype(np.int32), np.dtype(np.int64)})
define("Range", [(11, {}, _RANGE_TYPES),
                 (27, {"stash_type": Attribute(INT, int(TensorProto.FLOAT))}, _RANGE_TYPES | {F16, BF16})])
_STASH_TYPES = {int(TensorProto.FLOAT): F32, int(TensorProto.DOUBLE): F64}


def computation_type(dtype: np.dtype, stash_type: int) -> np.dtype:
    """The type a Range of inputs `dtype` computes in: float16 and bfloat16 in their stash_type, others in their own."""
    if dtype not in (F16, BF16):
        return dtype
    if stash_type not in _STASH_TYPES:
        raise UsageError(f"attribute 'stash_type' = {stash_type}: must be 1 (float) or 11 (double)")
    return _STASH_TYPES[stash_type]


def onnx_range(start: np.ndarray, limit: np.ndarray, delta: np.ndarray, stash_type: int = 1) -> np.ndarray:
    """The spec's Range of three one-element arrays of one type (module docstring)."""
    compute = computation_type(start.dtype, stash_type)
    bounds = [np.asarray(v).reshape(()).astype(compute)[()] for v in (start, limit, delta)]
    return arange(bounds[0], bounds[2], range_count(*bounds), compute, start.dtype)


@adapter("Range")
def plan_range(ctx: NodeContext) -> Step:
    stash_type = ctx.attrs.get("stash_type", int(TensorProto.FLOAT))

    def run(start, limit, delta):
        check_one_type(ctx.version, [start, limit, delta])
        check_dtype(ctx.version, start.dtype)
        for name, value in (("start", start), ("limit", limit), ("delta", delta)):
            if value.size != 1 or value.ndim > 1:
                raise UsageError(f"input '{name}' must be a scalar, got shape {list(value.shape)}")
        return (onnx_range(start, limit, delta, stash_type),)
    return run


__all__ = ["computation_type", "onnx_range", "plan_range"]
