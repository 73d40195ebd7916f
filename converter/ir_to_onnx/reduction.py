"""Reduce* IR layers -> the ONNX reduction of the same name. (Over every spatial axis with keep_dims, the
pooling family writes a Global pool instead: ir_to_onnx/pooling.py.)"""

from __future__ import annotations

from poolir.converter.ir_to_onnx.context import Context
from poolir.converter.ir_to_onnx.opsets import check_writes, has_attribute
from poolir.ir.model import Layer

REDUCTIONS = ("ReduceMean", "ReduceMax", "ReduceMin", "ReduceSum", "ReduceProd", "ReduceL1", "ReduceL2")


def reduction_axes(context: Context, layer: Layer) -> list[int]:
    """The constant axes input of a Reduce* layer, sorted, without repeats, negative ones counted from the end."""
    rank = len(context.input_info(layer, 0).shape)
    return sorted({a + rank if a < 0 else a for a in context.constant_ints(layer, 1, "reduction axes")})


def reduce(context: Context, layer: Layer) -> None:
    axes = reduction_axes(context, layer)
    keep = bool(layer.attrs["keep_dims"])
    output = context.name_output(layer, 0)
    source = context.input(layer, 0)
    if not axes:  # OpenVINO reduces each element alone (runtime/ir_ops/reduction.py); ONNX would reduce everything
        context.node_into("Abs" if layer.type in ("ReduceL1", "ReduceL2") else "Identity", [source], [output],
                          layer.name)
        return
    op_type = layer.type  # the IR and ONNX reductions share their names
    # ONNX's sums take no 8-bit type (and OpenVINO saturates them: runtime/ir_ops/reduction.py)
    check_writes(context, op_type, context.input_info(layer, 0).element_type)
    if has_attribute(op_type, context.opset, "axes"):
        context.node_into(op_type, [source], [output], layer.name, axes=axes, keepdims=int(keep))
    else:
        context.node_into(op_type, [source, context.int64s(axes, f"{layer.name}/axes")], [output], layer.name,
                          keepdims=int(keep))


CONVERTERS = dict.fromkeys(REDUCTIONS, reduce)
