"""IR element types and ONNX TensorProto element types: one table, read in both directions."""

from __future__ import annotations

import onnx
from onnx import TensorProto

from poolir.ir.errors import UnsupportedError

# IR element type -> ONNX TensorProto element type.
ONNX_ELEMENT_TYPES: dict[str, int] = {
    "f32": TensorProto.FLOAT, "f16": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16,
    "f64": TensorProto.DOUBLE, "i8": TensorProto.INT8, "u8": TensorProto.UINT8, "i32": TensorProto.INT32,
    "i64": TensorProto.INT64, "boolean": TensorProto.BOOL,
}
# ONNX TensorProto element type -> IR element type.
IR_ELEMENT_TYPES: dict[int, str] = {onnx_type: ir_type for ir_type, onnx_type in ONNX_ELEMENT_TYPES.items()}


def onnx_element_type(element_type: str) -> int:
    """The ONNX element type of an IR element type; UnsupportedError for one ONNX cannot hold here."""
    try:
        return ONNX_ELEMENT_TYPES[element_type]
    except KeyError:
        raise UnsupportedError(f"element type {element_type} has no ONNX equivalent here "
                               f"(supported: {', '.join(ONNX_ELEMENT_TYPES)})") from None


def ir_element_type(onnx_type: int, what: str) -> str:
    """The IR element type of an ONNX element type; UnsupportedError naming `what` (e.g. "input 'x'") if none."""
    try:
        return IR_ELEMENT_TYPES[onnx_type]
    except KeyError:
        names = onnx.TensorProto.DataType
        name = names.Name(onnx_type) if onnx_type in names.values() else str(onnx_type)
        supported = ", ".join(names.Name(t) for t in IR_ELEMENT_TYPES)
        raise UnsupportedError(f"{what}: element type {name} has no IR equivalent (supported: {supported})") from None
