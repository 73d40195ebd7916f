"""ONNX Range -> IR Range-4 (ir/ops/generation.py) with output_type the node's type, or a Const.

Integer ranges are the same in both worlds (both count exactly and every value is start + i * delta), so the layer
is written as it is, bounds computed or not; but OpenVINO 2026.4's CPU plugin counts |limit - start| / |delta| for
bounds computed at run time, so a range running away from its limit (5, 0, 1) would give [5, 6, 7, 8, 9] instead of
nothing: the limit is first clamped to start on the wrong side (Maximum for a positive delta, Minimum for a
negative one, Select on delta > 0 when delta is computed), which changes no count the spec gives.
Float ranges differ: ONNX computes start + i * delta, a Range-4 that OpenVINO runs sums delta step by step
(runtime.ir_ops.generation), and the two drift apart by ulps. So a float Range converts only when its bounds are
constants: it becomes a Const holding the ONNX values (so does an integer Range of constant bounds, up to
CONST_LIMIT elements). A one-element [1] bound (onnxruntime accepts it) is reshaped to the scalar Range-4 needs.
"""

from __future__ import annotations

import numpy as np

from poolir.converter.onnx_to_ir.node import OnnxNode, Value
from poolir.ir.element_types import dtype_of
from poolir.ir.errors import ConversionError, InvalidModelError, UsageError
from poolir.ir.ops.generation import range_count
from poolir.runtime.onnx_ops.generation import onnx_range

# An integer Range of constant bounds with more elements than this stays a layer (as the driver's FOLD_LIMIT keeps
# large folds out of the IR's constants); a float one is a Const whatever its size, its only exact form.
CONST_LIMIT = 1_000_000


def range_(node: OnnxNode) -> list[Value]:
    attrs = node.attributes()
    bounds = node.checked_inputs(3, 3)
    node.check_element_type(bounds[0])
    node.check_same_element_type(bounds[0], "start", [("limit", bounds[1]), ("delta", bounds[2])])
    for name, value in zip(("start", "limit", "delta"), bounds):
        if len(value.shape) > 1 or (value.shape and value.shape[0] != 1):
            raise InvalidModelError(f"input '{name}' must be a scalar, got dims {list(value.shape)}")
    known = [node.builder.info(value.ref).value for value in bounds]
    integer = bounds[0].element_type in ("i32", "i64")
    if all(value is not None for value in known) and not (integer and _count(known) > CONST_LIMIT):
        try:
            values = onnx_range(*(np.asarray(v) for v in known), attrs.get("stash_type", 1))
        except UsageError as error:
            raise InvalidModelError(error.problem) from None
        return [Value(node.const(values), bounds[0].element_type, values.shape)]
    if not integer:
        raise ConversionError(f"a {bounds[0].element_type} Range with bounds computed at run time: OpenVINO sums "
                              "delta step by step where ONNX computes start + i * delta (ulps apart)")
    scalars = []
    for index, value in enumerate(bounds):
        if value.shape:
            (value,) = node.layer("Reshape", [value, Value(node.const(np.zeros(0, np.int64)), "i64", (0,))],
                                  {"special_zero": False}, name=f"{node.name}/scalar{index}")
        scalars.append(value)
    scalars[1] = _limit_not_behind(node, *scalars, known[2])
    return node.layer("Range", scalars, {"output_type": bounds[0].element_type}, name=node.name)


def _count(known) -> int:
    start, limit, delta = (np.asarray(v).reshape(()) for v in known)
    return range_count(start[()], limit[()], delta[()])


def _limit_not_behind(node: OnnxNode, start: Value, limit: Value, delta: Value, known_delta) -> Value:
    """limit, or start where limit lies behind start in delta's direction (module docstring)."""
    base = f"{node.name}/limit"
    if known_delta is not None:
        clamp = "Maximum" if np.ravel(known_delta)[0] > 0 else "Minimum"
        return node.layer(clamp, [limit, start], {"auto_broadcast": "numpy"}, name=base)[0]
    (upper,) = node.layer("Maximum", [limit, start], {"auto_broadcast": "numpy"}, name=f"{base}/upper")
    (lower,) = node.layer("Minimum", [limit, start], {"auto_broadcast": "numpy"}, name=f"{base}/lower")
    zero = Value(node.const(np.zeros((), dtype_of(delta.element_type))), delta.element_type, ())
    (rising,) = node.layer("Greater", [delta, zero], {"auto_broadcast": "numpy"}, name=f"{base}/rising")
    return node.layer("Select", [rising, upper, lower], {"auto_broadcast": "numpy"}, name=base)[0]


CONVERTERS = {"Range": range_}
