"""IR ScatterNDUpdate-3/15 -> ONNX ScatterND, at the opset its reduction needs (none: 11; sum as add and prod as mul:
16; max and min: 18, runtime.onnx_ops.scatter.REDUCTION_SINCE).

Both worlds take negative indices, keep the last of duplicate updates and reduce in index order, so the node means
what the layer means; i32 indices are cast to int64 (ScatterND takes int64 only). Refused: reduction sub (ScatterND
has none), max and min on floats (the engines fold NaN updates and equal zeros differently:
runtime.kernels.scatter), and indices whose last dim is 0 or unknown (ONNX replaces all of data, OpenVINO's CPU
plugin nothing).
"""

from __future__ import annotations

from onnx import TensorProto

from poolir.converter.ir_to_onnx.context import Context
from poolir.converter.ir_to_onnx.opsets import check_writes
from poolir.ir.errors import ConversionError
from poolir.ir.model import Layer
from poolir.runtime.onnx_ops.scatter import reduction_since

ONNX_REDUCTIONS = {"none": "none", "sum": "add", "prod": "mul", "max": "max", "min": "min"}


def scatter_nd_update(context: Context, layer: Layer) -> None:
    reduction = layer.attrs.get("reduction", "none")
    if reduction not in ONNX_REDUCTIONS:
        raise ConversionError(f"reduction {reduction} has no ONNX ScatterND reduction (add, mul, max, min)")
    data, indices = context.input_info(layer, 0), context.input_info(layer, 1)
    if reduction in ("max", "min") and data.element_type in ("f16", "bf16", "f32", "f64"):
        raise ConversionError(f"reduction {reduction} on {data.element_type}: OpenVINO and onnxruntime fold NaN "
                              "updates and equal zeros differently")
    if not indices.shape or indices.shape[-1].value in (0, None):
        raise ConversionError(f"indices of dims {[str(d) for d in indices.shape]}: a last dim of 0 (or unknown) "
                              "replaces all of data in ONNX and nothing in OpenVINO's CPU plugin")
    check_writes(context, "ScatterND", data.element_type, "ScatterNDUpdate")
    name = ONNX_REDUCTIONS[reduction]
    since = reduction_since(name)
    context.check_opset(since, f"ScatterNDUpdate with reduction {reduction} needs ONNX ScatterND with reduction "
                               f"{name}, from opset {since}")
    index_tensor = context.input(layer, 1)
    if indices.element_type != "i64":
        (index_tensor,) = context.node("Cast", [index_tensor], f"{layer.name}/indices_i64", to=TensorProto.INT64)
    attrs = {} if name == "none" else {"reduction": name}
    context.node_into("ScatterND", [context.input(layer, 0), index_tensor, context.input(layer, 2)],
                      [context.name_output(layer, 0)], layer.name, **attrs)


CONVERTERS = {"ScatterNDUpdate": scatter_nd_update}
