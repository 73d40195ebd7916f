"""ONNX reductions (ReduceSum, ReduceMean, ...): version rows and one adapter onto runtime.kernels.reduction.

Element types are not restricted by these tables (numpy computes any of them). Versions before an op's
first row use legacy semantics (e.g. broadcast/axis attributes before opset 7) and are unsupported.
"""

from __future__ import annotations

import numpy as np

from poolir.ir.shapes import checked_axes
from poolir.runtime.kernels.reduction import reduce
from poolir.runtime.onnx_ops.element_types import BF16, BOOL, FLOAT_TYPES, I8, U8, check_dtype
from poolir.runtime.onnx_ops.registry import (INT, INTS, REMOVED, Attribute, NodeContext, Step, adapter, define,
                                              int_values)

# Type constraint T: 32/64-bit integers and floats; bfloat16 from 13; ReduceMax/ReduceMin add int8 and uint8 in 12
# and bool in 20 (onnxruntime refuses a model outside them as invalid: "Type 'tensor(int8)' ... is invalid").
_REDUCE_TYPES = FLOAT_TYPES | {np.dtype(t) for t in (np.int32, np.int64, np.uint32, np.uint64)}
for _op, _input_axes_since in (("ReduceSum", 13), ("ReduceMean", 18), ("ReduceMax", 18), ("ReduceMin", 18),
                               ("ReduceProd", 18), ("ReduceL1", 18), ("ReduceL2", 18),
                               ("ReduceSumSquare", 18), ("ReduceLogSum", 18), ("ReduceLogSumExp", 18)):
    _extremes = _op in ("ReduceMax", "ReduceMin")
    _changes = {1: ({"axes": Attribute(INTS), "keepdims": Attribute(INT, 1)}, set()), 13: ({}, {BF16}),
                **({12: ({}, {I8, U8}), 20: ({}, {BOOL})} if _extremes else {})}
    _changes[_input_axes_since] = ({"axes": REMOVED, "noop_with_empty_axes": Attribute(INT, 0)},
                                   _changes.get(_input_axes_since, ({}, set()))[1])
    _rows, _types = [], _REDUCE_TYPES
    for _since in sorted(_changes):
        _types = _types | _changes[_since][1]
        _rows.append((_since, _changes[_since][0], frozenset(_types)))
    define(_op, _rows)


_REDUCE_KINDS = {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max", "ReduceMin": "min",
                 "ReduceProd": "prod", "ReduceL1": "l1", "ReduceL2": "l2", "ReduceSumSquare": "sum_square",
                 "ReduceLogSum": "log_sum", "ReduceLogSumExp": "log_sum_exp"}


@adapter(*_REDUCE_KINDS)
def plan_reduce(ctx: NodeContext) -> Step:
    """axes: an attribute before opset 13 (ReduceSum) / 18 (the others), then an optional input. Empty
    or absent axes reduce every axis, unless noop_with_empty_axes=1 (then each element is reduced alone)."""
    kind = _REDUCE_KINDS[ctx.version.op_type]
    keepdims = bool(ctx.attrs.get("keepdims", 1))
    attribute_axes = ctx.attrs.get("axes")
    noop = bool(ctx.attrs.get("noop_with_empty_axes", 0))

    def run(x, axes=None):
        check_dtype(ctx.version, x.dtype)
        chosen = list(attribute_axes) if attribute_axes is not None else ([] if axes is None else int_values(axes))
        if not chosen and noop:
            # "reduction over an empty set of axes": each element alone, so ReduceLogSum gives log(x) and
            # ReduceSumSquare x * x (the spec's wording in onnx 1.23; onnxruntime 1.31 and onnx.reference agree)
            return (reduce(x[..., np.newaxis], kind, [-1], False),)
        checked_axes(chosen, x.ndim, "attribute 'axes'" if attribute_axes is not None else "input 'axes'")
        return (reduce(x, kind, chosen, keepdims),)
    return run
