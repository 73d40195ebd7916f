"""Where onnxruntime will not run, or runs wrongly, ONNX that the specs allow, among the nodes poolir writes.

The converters avoid these forms wherever an exact one exists (a Global pool stays a Reduce*, pads >= kernel
become an explicit Pad); `poolir convert` warns about what is left (onnxruntime_warnings), and the ONNX is
still what the spec means. The facts are onnxruntime 1.31's CPU kernels, each found by running a one-node model
(tests/converter/test_ir_to_onnx_onnxruntime.py pins them against the installed onnxruntime):

- no kernel: AveragePool, LpPool, GlobalAveragePool, GlobalMaxPool and GlobalLpPool for double (every
  opset), MaxPool-1 for double, GlobalLpPool-22 for any type, and no pooling kernel for bfloat16;
- "Pad should be smaller than kernel": a pool pad >= kernel_shape (not the dilated kernel) is refused;
- auto_pad SAME_* with dilations > 1: pads computed from the undilated kernel (wrong numbers, no error);
- Resize linear and cubic on some axes only (onnxruntime_resizes): "'Cubic' mode only supports 2-D inputs or 4-D
  inputs with the corresponding outermost 2 scale values being 1 or ... outermost and innermost ... and other
  scales >= 1", at run time.
"""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper

from poolir.runtime.onnx_ops import op_version

_POOLS = ("AveragePool", "MaxPool", "LpPool", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
_NO_DOUBLE = ("AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")


def onnxruntime_lacks(op_type: str, opset: int, element_type: int) -> bool:
    """Whether onnxruntime has no CPU kernel for `op_type` as the default-domain `opset` defines it, on
    `element_type` (an onnx.TensorProto type)."""
    if op_type not in _POOLS:
        return False
    row = op_version(op_type, opset)
    since = row.since if row is not None else opset
    if element_type == TensorProto.BFLOAT16:
        return True
    if element_type == TensorProto.DOUBLE and (op_type in _NO_DOUBLE or since < 8):
        return True
    return op_type == "GlobalLpPool" and since >= 22


def onnxruntime_resizes(mode: str, rank: int, resized: list[int], upscaling: bool) -> bool:
    """Whether onnxruntime's Resize `mode` kernel takes a rank-`rank` input whose axes `resized` are scaled (the
    others keep scale 1), `upscaling` when no scale is below 1. Nearest takes any; linear 2-D and 3-D inputs, 4-D
    with the outer two axes or the outer and inner ones unscaled, 5-D with the outer two unscaled; cubic 2-D
    inputs, and 4-D with the outer two unscaled, or the outer and inner ones when upscaling."""
    inner = set(resized)
    if mode == "nearest" or not inner:
        return True
    if mode == "linear":
        return (rank in (2, 3) or (rank == 4 and (inner <= {2, 3} or inner <= {1, 2}))
                or (rank == 5 and inner <= {2, 3, 4}))
    return rank == 2 or (rank == 4 and (inner <= {2, 3} or (inner <= {1, 2} and upscaling)))


def onnxruntime_warnings(model: onnx.ModelProto) -> list[str]:
    """One line per node of `model` that onnxruntime will refuse or compute differently from the spec."""
    opset = next((entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx")), None)
    if opset is None:
        return []
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except onnx.shape_inference.InferenceError:  # then only the declared types are known
        inferred = model
    types = {info.name: info.type.tensor_type.elem_type
             for info in [*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output]}
    types.update({tensor.name: tensor.data_type for tensor in model.graph.initializer})
    found = []
    for node in model.graph.node:
        if node.op_type not in _POOLS:
            continue
        element_type = types.get(node.input[0])
        label = f"node '{node.name}' ({node.op_type}-{opset})"
        if element_type is not None and onnxruntime_lacks(node.op_type, opset, element_type):
            name = TensorProto.DataType.Name(element_type).lower()
            found.append(f"{label}: onnxruntime has no kernel for it on {name}; the ONNX is valid, other "
                         "runtimes (and poolir run) run it")
            continue
        attrs = {attribute.name: helper.get_attribute_value(attribute) for attribute in node.attribute}
        kernel = list(attrs.get("kernel_shape", []))
        pads = list(attrs.get("pads", []))
        if kernel and pads and any(pad >= kernel[axis % len(kernel)] for axis, pad in enumerate(pads)):
            found.append(f"{label}: pads {pads} include one >= kernel_shape {kernel}, which onnxruntime refuses "
                         "(\"Pad should be smaller than kernel\"); the spec allows it")
        dilated = any(d != 1 for d in attrs.get("dilations", []))
        if dilated and attrs.get("auto_pad", b"NOTSET") in (b"SAME_UPPER", b"SAME_LOWER"):
            found.append(f"{label}: auto_pad SAME with dilations: onnxruntime computes the pads without the "
                         "dilation, so its numbers differ from the spec's")
    return found
