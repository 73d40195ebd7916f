"""ONNX ScatterND -> IR ScatterNDUpdate-3 (reduction none, version "opset4") or ScatterNDUpdate-15 (add -> sum,
mul -> prod, max, min).

Both worlds take negative indices, keep the last of duplicate updates and apply add and mul in index order
(runtime.kernels.scatter), so the layer means what the node means, with two exceptions that are refused:
- indices whose last dim is 0 or unknown: ONNX replaces all of data by each update, OpenVINO's CPU plugin leaves
  data unchanged;
- max and min on floats: onnxruntime's fold lets a NaN update through and keeps the later of 0.0 and -0.0,
  OpenVINO's skips NaN updates and keeps the earlier (on integers and bool they agree).
"""

from __future__ import annotations

from poolir.converter.onnx_to_ir.node import OnnxNode, Value, value_of
from poolir.ir.errors import ConversionError, InvalidModelError
from poolir.ir.ops.scatter import updates_shape
from poolir.runtime.onnx_ops.scatter import reduction_since

IR_REDUCTIONS = {"none": "none", "add": "sum", "mul": "prod", "max": "max", "min": "min"}


def scatter_nd(node: OnnxNode) -> list[Value]:
    attrs = node.attributes()
    data, indices, updates = node.checked_inputs(3, 3)
    node.check_element_type(data)
    node.check_same_element_type(data, "data", [("updates", updates)])
    if indices.element_type != "i64":
        raise InvalidModelError(f"the indices of {node.version.label} must be int64, got {indices.element_type}")
    reduction = attrs.get("reduction", "none")
    since = reduction_since(reduction)
    if since is None or since > node.version.since:
        raise InvalidModelError(f"attribute 'reduction' = {reduction!r} is not a reduction of {node.version.label}")
    if not indices.shape or indices.shape[-1] in (0, None):
        raise ConversionError(f"indices of dims {list(indices.shape)}: a last dim of 0 (or unknown) replaces all of "
                              "data in ONNX and nothing in OpenVINO's CPU plugin")
    # checked here, not left to the layer's shape rule, so that the error names the ONNX node
    expected = updates_shape(*(node.builder.info(v.ref).shape for v in (data, indices)))
    if expected is not None and (len(expected) != len(updates.shape) or any(
            d.value is not None and u is not None and d.value != u for d, u in zip(expected, updates.shape))):
        raise InvalidModelError(f"updates of dims {list(updates.shape)} must have dims {[d.value for d in expected]} "
                                f"(indices {list(indices.shape)}, data {list(data.shape)})")
    if reduction in ("max", "min") and data.element_type in ("f16", "bf16", "f32", "f64"):
        raise ConversionError(f"reduction {reduction} on {data.element_type}: onnxruntime and OpenVINO fold NaN "
                              "updates and equal zeros differently")
    if reduction == "none":
        # v3, spelled "opset4" as OpenVINO writes it: its "opset3" table lacks ScatterNDUpdate, so 2026.4 refuses
        # to read the layer with version "opset3"
        refs = node.builder.add("ScatterNDUpdate", "opset4", [data.ref, indices.ref, updates.ref], {}, name=node.name)
        return [value_of(node.builder, ref) for ref in refs]
    return node.layer("ScatterNDUpdate", [data, indices, updates], {"reduction": IR_REDUCTIONS[reduction]},
                      name=node.name)


CONVERTERS = {"ScatterND": scatter_nd}
