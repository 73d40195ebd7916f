"""Every tensor an ONNX run will allocate, checked against the memory budget (ir.budget) before the run.

onnx's shape inference gives the shape and element type of most intermediate values. At planning time the
declared input shapes are used; when inputs have dynamic dims, the run checks again with the feeds' shapes
before the first node runs, so a 1 KB model that doubles a tensor thirty times is refused, not attempted.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import onnx

from poolir.ir.budget import check_tensor
from poolir.ir.errors import printable
from poolir.ir.limits import check_rank


def check_value_sizes(infos: Mapping[str, tuple[np.dtype | None, tuple | None]], source=None) -> None:
    """Raise BudgetError for the first value whose static shape and element type exceed the budget."""
    for name, (dtype, shape) in infos.items():
        if shape is not None:
            check_rank(len(shape), f"tensor '{printable(name)}'", source)
        if dtype is None or shape is None or any(d is None or d < 0 for d in shape):
            continue
        check_tensor(shape, np.dtype(dtype).itemsize, f"tensor '{printable(name)}'", file=source)


def with_input_shapes(model: onnx.ModelProto, shapes: Mapping[str, tuple[int, ...]]) -> onnx.ModelProto:
    """A copy of `model` whose graph inputs named in `shapes` declare those static shapes."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for value in copy.graph.input:
        if value.name in shapes and value.type.HasField("tensor_type"):
            dims = value.type.tensor_type.shape.dim
            del dims[:]
            for size in shapes[value.name]:
                dims.add().dim_value = int(size)
    return copy
