"""ONNX MaxPool storage_order=1 (column-major) indices, from OpenVINO's row-major ones by index arithmetic."""

from __future__ import annotations

import math
from typing import Any

from poolir.converter.onnx_to_ir.node import OnnxNode, Value
from poolir.ir.builder import OutputRef


def column_major_indices(node: OnnxNode, indices: OutputRef, x: Value) -> OutputRef:
    """ONNX storage_order=1 indices from OpenVINO's row-major ones (axis=0), by index arithmetic.

    i = base + r with r the row-major spatial offset; r's coordinates c_j = r // row_j % dim_j are
    recombined with column-major strides (the first spatial axis fastest): base + sum c_j * col_j.
    Products of static dims are constants; a product involving a dynamic dim is computed from ShapeOf.
    """
    name = node.name
    spatial = x.shape[2:]
    shape_of = []  # built once, on first need
    products: dict[tuple[int, int], Any] = {}

    def dims_product(first: int, stop: int):
        """prod(spatial[first:stop]) as an int when static, else as a one-element i64 tensor."""
        dims = spatial[first:stop]
        if all(d is not None for d in dims):
            return math.prod(dims)
        if (first, stop) not in products:
            if not shape_of:
                shape_of.append(node.add("ShapeOf", [x.ref], {"output_type": "i64"}, f"{name}/shape")[0])
            # Gather in its newest version, as OpenVINO's own frontend writes it (the indices are non-negative).
            picked = node.add("Gather", [shape_of[0], node.const(range(2 + first, 2 + stop), "i64"),
                                         node.const(0, "i64")], name=f"{name}/dims{first}_{stop}", newest=True)[0]
            products[(first, stop)] = node.add("ReduceProd", [picked, node.const([0], "i64")], {"keep_dims": True},
                                               f"{name}/prod{first}_{stop}")[0]
        return products[(first, stop)]

    def binary(kind: str, left, right, layer_name: str):
        operand = node.const(right, "i64") if isinstance(right, int) else right
        return node.add(kind, [left, operand], {"auto_broadcast": "numpy"}, layer_name)[0]

    rank = len(spatial)
    offset = binary("FloorMod", indices, dims_product(0, rank), f"{name}/spatial_offset")
    result = binary("Subtract", indices, offset, f"{name}/base")
    for axis in range(rank):
        row_stride, col_stride = dims_product(axis + 1, rank), dims_product(0, axis)
        coordinate = offset
        if row_stride != 1:
            coordinate = binary("Divide", coordinate, row_stride, f"{name}/row{axis}")
        if axis > 0:
            coordinate = binary("FloorMod", coordinate, dims_product(axis, axis + 1), f"{name}/coord{axis}")
        if col_stride != 1:
            coordinate = binary("Multiply", coordinate, col_stride, f"{name}/col{axis}")
        result = binary("Add", result, coordinate, name if axis == rank - 1 else f"{name}/sum{axis}")
    return result
