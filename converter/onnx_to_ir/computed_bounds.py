"""ONNX Slice and Pad whose bounds are computed at run time -> IR layers that OpenVINO runs exactly.

Slice with run-time `axes` -> Slice-8 without an axes input. OpenVINO 2026.4's CPU plugin crashes (SIGSEGV) on a
Slice-8 whose axes input is not a constant (seen on inputs of rank 1 to 4; its own ONNX frontend writes that layer
and crashes the same way). A Slice-8 without axes, whose starts, ends and steps name every axis in order, runs.
So the per-axis bounds are scattered into full-rank vectors, each unlisted axis getting the bound that keeps it
whole (start 0, end INT64_MAX, step 1):

    hit[j, i]  = (axes[i] + (rank if axes[i] < 0 else 0)) == j        [rank, k] boolean
    entry[j]   = ReduceSum(Select(hit, [0, 1, .., k-1], 0), axis 1)   where axis j is listed (else 0)
    full[j]    = Select(ReduceMax(hit as i64, axis 1)[j] != 0, Gather(bounds, entry)[j], default[j])

Exact: ONNX forbids repeated axes, so at most one entry of each row of `hit` is set and the sum is its index.
The bounds themselves only move (Gather, Select): the plugin computes an integer ReduceSum in float32, which
would turn INT32_MAX into INT32_MIN; the entry indices are small.

Pad with run-time `pads` -> in edge and reflect modes a Pad-12 by min(pads, 0), which only crops (negative pads
crop first there in ONNX, as onnxruntime and the runtime's kernels.movement.pad compute it), then a Pad by
max(pads, 0) in the node's mode; in constant mode, which onnxruntime crops after padding, one Pad-12.
"""

from __future__ import annotations

import numpy as np

from poolir.converter.onnx_to_ir.node import OnnxNode, Value
from poolir.ir.element_types import dtype_of
from poolir.ir.errors import ConversionError, InvalidModelError

_NUMPY = {"auto_broadcast": "numpy"}
_KEEP_WHOLE = {"starts": 0, "ends": 2**63 - 1, "steps": 1}


def full_rank_bounds(node: OnnxNode, rank: int, axes: Value, bounds: dict[str, Value]) -> list[Value]:
    """[starts, ends, steps] over all `rank` axes, in that order (`bounds` by those names, listed per entry of
    the run-time `axes`)."""
    if len(axes.shape) != 1 or axes.shape[0] is None:
        raise ConversionError("Slice axes computed at run time need a known length to convert to IR")
    name = f"{node.name}/axes"
    axes = _as_i64(node, axes, f"{name}/i64")
    row = node.const(np.zeros(1, np.int64))  # Unsqueeze at axis 0
    negative = node.layer("Less", [axes, _scalar(node, 0)], _NUMPY, name=f"{name}/negative")[0]
    shifted = node.layer("Add", [axes, _scalar(node, rank)], _NUMPY, name=f"{name}/shifted")[0]
    normal = node.layer("Select", [negative, shifted, axes], _NUMPY, name=f"{name}/normal")[0]
    listed = node.layer("Unsqueeze", [normal, Value(row, "i64", (1,))], name=f"{name}/row")[0]    # [1, k]
    column = Value(node.const(np.arange(rank, dtype=np.int64).reshape(rank, 1)), "i64", (rank, 1))
    hit = node.layer("Equal", [listed, column], _NUMPY, name=f"{name}/hit")[0]                   # [rank, k]
    along_k = Value(node.const(np.ones(1, np.int64)), "i64", (1,))
    hits = node.layer("Convert", [hit], {"destination_type": "i64"}, name=f"{name}/hit_i64")[0]
    count = node.layer("ReduceMax", [hits, along_k], {"keep_dims": False}, name=f"{name}/listed")[0]
    present = node.layer("NotEqual", [count, _scalar(node, 0)], _NUMPY, name=f"{name}/present")[0]
    k = axes.shape[0]
    entries = Value(node.const(np.arange(k, dtype=np.int64).reshape(1, k)), "i64", (1, k))
    chosen = node.layer("Select", [hit, entries, _scalar(node, 0)], _NUMPY, name=f"{name}/entry_hit")[0]
    entry = node.layer("ReduceSum", [chosen, along_k], {"keep_dims": False}, name=f"{name}/entry")[0]  # [rank]
    full = []
    for what in ("starts", "ends", "steps"):
        values = _as_i64(node, bounds[what], f"{node.name}/{what}_i64")
        picked = node.layer("Gather", [values, entry, _scalar(node, 0)], {"batch_dims": 0},
                            name=f"{node.name}/{what}_listed", newest=True)[0]
        default = Value(node.const(np.full(rank, _KEEP_WHOLE[what], np.int64)), "i64", (rank,))
        full.append(node.layer("Select", [present, picked, default], _NUMPY, name=f"{node.name}/{what}_full")[0])
    return full


def _scalar(node: OnnxNode, value: int) -> Value:
    return Value(node.const(np.asarray(value, np.int64)), "i64", ())


def _as_i64(node: OnnxNode, value: Value, name: str) -> Value:
    if value.element_type == "i64":
        return value
    return node.layer("Convert", [value], {"destination_type": "i64"}, name=name)[0]


def pad_by_computed_pads(node: OnnxNode, x: Value, pads: Value, mode: str, fill: Value | None) -> list[Value]:
    """x padded by run-time `pads` ([begins..., ends...]) in IR `mode`, `fill` its constant value (or None)."""
    rank = len(x.shape)
    if len(pads.shape) != 1 or pads.shape[0] not in (None, 2 * rank):
        raise InvalidModelError(f"pads of shape {list(pads.shape)} for rank {rank} (expected [{2 * rank}])")
    pads = _as_i64(node, pads, f"{node.name}/pads_i64")
    one = Value(node.const(np.ones(1, np.int64)), "i64", (1,))
    halves = [node.layer("Slice", [pads, _vector(node, start), _vector(node, start + rank), one],
                         name=f"{node.name}/{what}")[0] for start, what in ((0, "begins"), (rank, "ends"))]
    if mode == "constant":  # onnxruntime pads, then crops, in constant mode: what one Pad-12 does
        return node.layer("Pad", [x, *halves, fill], {"pad_mode": "constant"}, name=node.name, newest=True)
    crops = [node.layer("Minimum", [half, _scalar(node, 0)], _NUMPY, name=f"{half_name}_crop")[0]
             for half, half_name in zip(halves, (f"{node.name}/begins", f"{node.name}/ends"))]
    zero = Value(node.const(np.zeros((), dtype_of(x.element_type))), x.element_type, ())
    cropped = node.layer("Pad", [x, *crops, zero], {"pad_mode": "constant"}, name=f"{node.name}/crop",
                         newest=True)[0]  # Pad-12: negative pads
    grows = [node.layer("Maximum", [half, _scalar(node, 0)], _NUMPY, name=f"{half_name}_grow")[0]
             for half, half_name in zip(halves, (f"{node.name}/begins", f"{node.name}/ends"))]
    inputs = [cropped, *grows] + ([fill] if fill is not None else [])
    return node.layer("Pad", inputs, {"pad_mode": mode}, name=node.name)


def _vector(node: OnnxNode, value: int) -> Value:
    return Value(node.const(np.asarray([value], np.int64)), "i64", (1,))
