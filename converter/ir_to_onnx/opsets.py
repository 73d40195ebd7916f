"""The ONNX opsets poolir writes, and the version facts the IR -> ONNX converters ask of the runtime's op table.

A fact such as "MaxPool has ceil_mode from opset 10" or "Reduce axes become an input in opset 18" is
never restated here: it is read from runtime.onnx_ops.OP_VERSIONS, the table the executor runs by.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from poolir.ir.element_types import dtype_of
from poolir.runtime.onnx_ops import OP_VERSIONS, OnnxOpVersion, first_opset, op_version

# The opsets poolir WRITES: 7 is the first with today's broadcasting and attribute semantics for every op
# the converters emit, 22 the newest whose every op version the converters were checked against. (The
# newest opset poolir READS, runtime.onnx_model.MAX_OPSET, is a different, larger number.)
OLDEST_WRITTEN_OPSET = 7
NEWEST_WRITTEN_OPSET = 22
WRITABLE_OPSETS = range(OLDEST_WRITTEN_OPSET, NEWEST_WRITTEN_OPSET + 1)
ONNX_IR_VERSION = 10  # every opset up to 22 is valid in ONNX IR version 10, which onnxruntime reads


def first_opset_where(op_type: str, condition: Callable[[OnnxOpVersion], bool]) -> int | None:
    """The first opset whose row for `op_type` meets `condition`, or None."""
    return next((row.since for row in OP_VERSIONS.get(op_type, ()) if condition(row)), None)


def first_opset_accepting(op_type: str, dtype: np.dtype) -> int | None:
    """The first opset whose `op_type` accepts `dtype` for its main input (MaxPool int8: 12), or None."""
    return first_opset_where(op_type, lambda row: row.dtypes is None or np.dtype(dtype) in row.dtypes)


def check_writes(context, op_type: str, element_type: str, what: str | None = None) -> None:
    """Refuse unless the requested opset has `op_type` and its version takes `element_type` for its main input
    (Equal on floats from opset 11, MaxPool on int8 from 12, Exp on no integer type); `what` names the layer."""
    what = what or op_type
    since = first_opset(op_type)
    context.check_opset(since, f"{what} needs ONNX {op_type}, from opset {since}")
    accepting = first_opset_accepting(op_type, dtype_of(element_type))
    context.check_opset(accepting, f"{what} needs ONNX {op_type} on {element_type}, from opset {accepting}"
                        if accepting else f"{what}: ONNX {op_type} does not take element type {element_type}")


def has_attribute(op_type: str, opset: int, attribute: str) -> bool:
    """Whether `op_type` in `opset` takes `attribute` as an attribute (Squeeze axes until opset 12; an input
    after)."""
    row = op_version(op_type, opset)
    return row is not None and attribute in row.attributes
