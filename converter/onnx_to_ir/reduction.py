"""ONNX Reduce* nodes -> IR Reduce* layers with constant axes.

ONNX keepdims is IR keep_dims. Axes: an attribute before the op's first version with
noop_with_empty_axes (runtime.onnx_ops.first_opset_with asks the table), an optional input after. Absent or
empty axes reduce every axis, unless noop_with_empty_axes=1, when the input passes through unchanged.
ReduceSumSquare is ReduceSum(x * x), ReduceLogSum Log(ReduceSum(x)) and ReduceLogSumExp needs Exp and Log:
poolir's IR has no Log or Exp layer, so the last two are refused.
"""

from __future__ import annotations

import numpy as np

from poolir.converter.onnx_to_ir.node import OnnxNode, Value
from poolir.ir.errors import ConversionError, InvalidModelError
from poolir.ir.shapes import checked_axes

_DIRECT = {op: op for op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                             "ReduceL2")}


def _axes(node: OnnxNode, attrs: dict, axes_input: Value | None, rank: int) -> list[int] | None:
    """The reduced axes, normalised; None: reduce nothing (noop_with_empty_axes)."""
    if "axes" in attrs:
        axes = list(attrs["axes"])
    elif axes_input is not None and axes_input.shape != (0,):
        known = node.builder.info(axes_input.ref).value
        if known is None:
            raise ConversionError("the axes input must be constant to convert to IR")
        axes = [int(v) for v in np.asarray(known).reshape(-1)]
    else:
        axes = []
    if not axes:
        return None if attrs.get("noop_with_empty_axes", 0) else list(range(rank))
    return sorted(checked_axes(axes, rank, "attribute 'axes'" if "axes" in attrs else "input 'axes'"))


def reduce(node: OnnxNode) -> list[Value]:
    attrs = node.attributes()
    x, axes_input = (node.checked_inputs(1, 1 if "axes" in node.version.attributes else 2, optional=(1,))
                     + [None])[:2]
    axes = _axes(node, attrs, axes_input, len(x.shape))
    if axes is None:
        return [x]  # noop_with_empty_axes: the driver copies it if it is also a graph input/output name
    op_type = node.version.op_type
    source = x
    if op_type == "ReduceSumSquare":
        (source,) = node.layer("Multiply", [x, x], {"auto_broadcast": "numpy"}, name=f"{node.name}/square")
        layer_type = "ReduceSum"
    elif op_type in _DIRECT:
        layer_type = _DIRECT[op_type]
    else:
        raise ConversionError(f"{op_type} needs Log (and Exp), which poolir's IR has no layer for")
    axes_value = Value(node.const(np.asarray(axes, np.int64)), "i64", (len(axes),))
    return node.layer(layer_type, [source, axes_value], {"keep_dims": bool(attrs.get("keepdims", 1))},
                      name=node.name)


CONVERTERS = {**dict.fromkeys(_DIRECT, reduce), "ReduceSumSquare": reduce}
