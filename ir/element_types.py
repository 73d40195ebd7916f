"""IR element types: names, numpy dtypes, and the legacy `precision` spellings of port attributes."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from poolir.ir.errors import UnsupportedError

# element_type -> numpy dtype. "boolean" is OpenVINO's bool; u1 is a packed bit type used by some
# OpenVINO layers' constants and is read as bool after unpacking (see ir.reader).
DTYPES: dict[str, np.dtype] = {
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "i8": np.dtype(np.int8),
    "u8": np.dtype(np.uint8),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "boolean": np.dtype(np.bool_),
    "u1": np.dtype(np.bool_),
}

# The `precision` attribute of ports (FP32, I64, BOOL, ...) -> element_type.
PRECISIONS: dict[str, str] = {
    "FP16": "f16", "BF16": "bf16", "FP32": "f32", "FP64": "f64",
    "I8": "i8", "U8": "u8", "I32": "i32", "I64": "i64", "BOOL": "boolean", "U1": "u1",
    "BIN": "u1",  # what OpenVINO 2026.4's serializer writes for u1 (last: u1 is written back as BIN)
}
PRECISION_OF: dict[str, str] = {v: k for k, v in PRECISIONS.items()}

# The element types an index output may have (MaxPool's argmax indices, ShapeOf).
INDEX_ELEMENT_TYPES = ("i32", "i64")

# The integer types OpenVINO 2026.4's CPU plugin computes in int32 or float32 and stores saturated where ONNX (and
# OpenVINO's reference implementation, which folds constants) wraps: arithmetic, reductions, Convert from float on
# dynamic dims, Clamp's bounds. Each place that models or converts this names the behaviour it concerns.
OPENVINO_SATURATED_TYPES = ("i8", "u8")
SATURATED_DTYPES = tuple(np.dtype(t) for t in (np.int8, np.uint8))  # the same, as numpy dtypes


def openvino_narrow_arithmetic(layer_type: str, dtype: np.dtype, dynamic: bool) -> tuple[bool, bool]:
    """(subtrahend negated, product in int16): where OpenVINO 2026.4's CPU plugin computes an i8/u8 Add, Subtract or
    Multiply of run-time values otherwise than exactly in int32 and saturated (measured): on static dims an i8
    Subtract adds b's saturated negation (-128 - -128 -> -1, as -128 + 127); on the dynamic-shape path a u8 Multiply
    wraps the product in int16 before saturating (255 * 255 -> 0, 181 * 181 -> 255)."""
    dtype = np.dtype(dtype)
    return (layer_type == "Subtract" and dtype == np.int8 and not dynamic,
            layer_type == "Multiply" and dtype == np.uint8 and dynamic)


def is_float(dtype: np.dtype) -> bool:
    """Whether `dtype` is a floating type, bfloat16 included (numpy gives bfloat16 kind 'V')."""
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or dtype == ml_dtypes.bfloat16


def dtype_of(element_type: str) -> np.dtype:
    try:
        return DTYPES[element_type]
    except KeyError:
        raise UnsupportedError(
            f"element type {element_type!r} is not supported (supported: {', '.join(DTYPES)})") from None


def check_computable(element_type: str, what: str) -> None:
    """Refuse a computed tensor of type u1: OpenVINO 2026.4's CPU plugin runs none ("Input image format u1 is
    not supported" for a Parameter; a Convert to u1 fails at its output), and poolir reads u1 only as the packed
    bits of a Const."""
    if element_type == "u1":
        raise UnsupportedError(f"{what} u1 is not supported: only a Const may hold packed u1 bits (OpenVINO's CPU "
                               "plugin computes no u1 tensor)")


def is_integer(element_type: str) -> bool:
    """Whether `element_type` holds integers (bool and u1 do not). Raises UnsupportedError for an unknown type."""
    return bool(np.issubdtype(dtype_of(element_type), np.integer))


def element_type_of(dtype: np.dtype) -> str:
    """The element type of a numpy dtype (bool maps to "boolean")."""
    dtype = np.dtype(dtype)
    for name, candidate in DTYPES.items():
        if candidate == dtype and name != "u1":
            return name
    raise UnsupportedError(f"numpy dtype {dtype} has no IR element type (supported: {', '.join(DTYPES)})")
