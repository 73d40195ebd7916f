"""ONNX GatherND, Tile, DepthToSpace and SpaceToDepth -> IR (ir/ops/rearrange.py).

DepthToSpace and SpaceToDepth are the IR layers of the same names, mode DCR as blocks_first and CRD as
depth_first (what OpenVINO's own frontend writes).

GatherND-11/12/13 is IR GatherND-8: both keep the batch dims in the output (GatherND-5 folds them into one,
so it is never written), both take negative indices counting from the end (measured with OpenVINO 2026.4's
CPU plugin, batch_dims 0 and 1). ONNX indices are int64; batch_dims is an attribute from opset 12.
Tile-6/13 is IR Tile-1 with the repeats input as it is, constant or computed: ONNX takes exactly one repeat
per axis, which is the IR's case without padding (a static repeats length must equal the rank). A scalar
input (empty repeats) is passed on as it is: OpenVINO 2026.4's CPU plugin returns an uninitialised value for
Tile of a scalar by constant empty repeats (3.5e17 for 0.126) and crashes when the empty repeats are computed.
The same plugin tiles wrong when the repeats are computed (not a Const) and three or more axes repeat more
than once (data [2,3,4,5], repeats [2,2,2,2] or the backend case's [7,6,4,2]: uninitialised values); one or two
such axes are right. So computed repeats on an input of rank >= 3 become one Tile per axis, each with the
repeats e_axis * repeats + (1 - e_axis) (Multiply, Add): measured right for every repeats in {1,2,3}^4.
"""

from __future__ import annotations

import numpy as np

from poolir.converter.onnx_to_ir.node import OnnxNode, Value
from poolir.ir.errors import InvalidModelError
from poolir.runtime.onnx_ops.movement import DEPTH_MODES


def gather_nd(node: OnnxNode) -> list[Value]:
    attrs = node.attributes()
    data, indices = node.checked_inputs(2, 2)
    if indices.element_type != "i64":
        raise InvalidModelError(f"the indices of {node.version.label} must be int64, got {indices.element_type}")
    batch_dims = attrs.get("batch_dims", 0)
    if not 0 <= batch_dims < min(len(data.shape), len(indices.shape)):
        raise InvalidModelError(f"attribute 'batch_dims' = {batch_dims} must be in 0.."
                                f"{min(len(data.shape), len(indices.shape)) - 1}")
    return node.layer("GatherND", [data, indices], {"batch_dims": batch_dims}, name=node.name, newest=True)


def tile(node: OnnxNode) -> list[Value]:
    node.attributes()
    x, repeats = node.checked_inputs(2, 2)
    if repeats.element_type != "i64" or len(repeats.shape) != 1:
        raise InvalidModelError(f"the repeats of {node.version.label} must be a 1-D int64 tensor, got "
                                f"{repeats.element_type} of rank {len(repeats.shape)}")
    if repeats.shape[0] is not None and repeats.shape[0] != len(x.shape):
        raise InvalidModelError(f"repeats has {repeats.shape[0]} values for an input of rank {len(x.shape)}")
    if not x.shape:
        return [x]  # a scalar with no repeats is itself (OpenVINO's Tile reads garbage for it, and crashes)
    known = node.builder.info(repeats.ref).value
    if known is not None and np.any(np.asarray(known) < 0):
        raise InvalidModelError(f"repeats {np.asarray(known).tolist()} must not be negative")
    rank = len(x.shape)
    if known is not None or rank <= 2:
        return node.layer("Tile", [x, repeats], name=node.name)
    # Computed repeats on rank >= 3: one Tile per axis, by repeats * e_axis + (1 - e_axis) (module docstring).
    for axis in range(rank):
        unit = np.eye(rank, dtype=np.int64)[axis]
        (picked,) = node.layer("Multiply", [repeats, Value(node.const(unit), "i64", (rank,))],
                               {"auto_broadcast": "numpy"}, name=f"{node.name}/repeats{axis}/pick")
        (axis_repeats,) = node.layer("Add", [picked, Value(node.const(1 - unit), "i64", (rank,))],
                                     {"auto_broadcast": "numpy"}, name=f"{node.name}/repeats{axis}")
        (x,) = node.layer("Tile", [x, axis_repeats], name=node.name if axis == rank - 1 else f"{node.name}/{axis}")
    return [x]


def depth_space(node: OnnxNode) -> list[Value]:
    x, attrs = node.checked_single_input()
    mode = attrs.get("mode", "DCR")
    if mode not in DEPTH_MODES:
        raise InvalidModelError(f"attribute 'mode' = {mode!r}: must be DCR or CRD")
    if len(x.shape) != 4:
        raise InvalidModelError(f"input of rank {len(x.shape)}: {node.version.label} takes N x C x H x W")
    ir_attrs = {"block_size": attrs["blocksize"], "mode": "blocks_first" if mode == "DCR" else "depth_first"}
    return node.layer(node.version.op_type, [x], ir_attrs, name=node.name)


CONVERTERS = {"GatherND": gather_nd, "Tile": tile, "DepthToSpace": depth_space, "SpaceToDepth": depth_space}
