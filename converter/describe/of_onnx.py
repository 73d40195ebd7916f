"""An ONNX model described: inferred dims from onnx's own shape inference (strict, with data propagation)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import onnx
from onnx import helper, shape_inference

from poolir.converter.describe.description import (LayerDescription, ModelDescription, PortDescription,
                                                   TensorDescription, dims_text)
from poolir.ir.errors import InvalidModelError, node_label
from poolir.runtime.onnx_model import data_propagation_is_bounded, load_onnx, shape_inference_hazard


def describe_onnx(path: Path, warn: Callable[[str], None] | None = None) -> ModelDescription:
    """`warn` is told the checker's findings that leave the meaning unchanged (runtime.onnx_model.check_onnx)."""
    source = os.fspath(path)
    model = load_onnx(path, check=True, warn=warn)
    # Infer from the inputs alone: drop the declared intermediate and output shapes first, so that a
    # wrong declaration is reported as a disagreement instead of being merged into the inference.
    bare = onnx.ModelProto.FromString(model.SerializeToString())
    del bare.graph.value_info[:]
    for output in bare.graph.output:
        if output.type.HasField("tensor_type"):
            output.type.tensor_type.ClearField("shape")
    hazard = shape_inference_hazard(bare)   # onnx would never return
    if hazard:
        raise InvalidModelError(hazard, file=source)
    try:
        data_prop = data_propagation_is_bounded(bare)
        inferred_model = shape_inference.infer_shapes(bare, strict_mode=True, data_prop=data_prop)
    except Exception as error:  # onnx reports inconsistent shapes as InferenceError
        problem = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise InvalidModelError(f"ONNX shape inference failed: {problem}", file=source) from None

    def table(graph) -> dict[str, Any]:
        return {v.name: v for v in (*graph.input, *graph.value_info, *graph.output)}

    declared, inferred = table(model.graph), table(inferred_model.graph)
    initializers = {init.name for init in model.graph.initializer}
    opsets = {entry.domain or "ai.onnx": entry.version for entry in model.opset_import}

    def tensor(name: str, values: dict) -> TensorDescription:
        element_type, dims = _onnx_type(values.get(name))
        return TensorDescription(name, element_type, dims)

    inputs = [tensor(v.name, inferred) for v in model.graph.input if v.name not in initializers]
    outputs = [tensor(v.name, inferred) for v in model.graph.output]
    layers, warnings = [], []
    for index, node in enumerate(model.graph.node):
        name = node.name or f"{node.op_type}_{index}"
        attrs = {a.name: _json_value(helper.get_attribute_value(a)) for a in node.attribute}
        domain = node.domain or "ai.onnx"
        description = LayerDescription(None, name, node.op_type, f"{domain} opset {opsets.get(domain, '?')}", attrs)
        for position, output in enumerate(node.output):
            if not output:
                continue
            declared_type, declared_dims = _onnx_type(declared.get(output))
            inferred_type, inferred_dims = _onnx_type(inferred.get(output))
            description.outputs.append(PortDescription(position, output, inferred_type or declared_type,
                                                       declared_dims, inferred_dims))
            if _disagree(declared_dims, inferred_dims):
                warnings.append(f"{node_label(name, node.op_type)}: output '{output}': dims declared "
                                f"{dims_text(declared_dims)}, inferred {dims_text(inferred_dims)}")
        layers.append(description)
    version = f"ONNX opset {opsets.get('ai.onnx', '?')}"
    return ModelDescription(source, "onnx", model.graph.name, version, inputs, outputs, layers, warnings)


def _onnx_type(value_info) -> tuple[str | None, list[int | str] | None]:
    if value_info is None or not value_info.type.HasField("tensor_type"):
        return None, None
    tensor_type = value_info.type.tensor_type
    element_type = helper.tensor_dtype_to_np_dtype(tensor_type.elem_type).name if tensor_type.elem_type else None
    if not tensor_type.HasField("shape"):
        return element_type, None
    dims: list[int | str] = []
    for dim in tensor_type.shape.dim:
        dims.append(dim.dim_value if dim.HasField("dim_value") else (dim.dim_param or "?"))
    return element_type, dims


def _disagree(declared: list | None, inferred: list | None) -> bool:
    if declared is None or inferred is None:
        return False
    if len(declared) != len(inferred):
        return True
    return any(isinstance(a, int) and isinstance(b, int) and a != b for a, b in zip(declared, inferred))


def _json_value(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    return f"<{type(value).__name__}>"  # tensors and graphs: named, not dumped
