"""ONNX element types: the type sets the version tables allow, the check against a row, and ONNX -> numpy."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx

from poolir.ir.errors import InvalidModelError, UsageError
from poolir.runtime.onnx_ops.registry import OnnxOpVersion

F16, BF16, F32, F64 = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32),
                       np.dtype(np.float64))
I8, U8 = np.dtype(np.int8), np.dtype(np.uint8)
FLOAT_TYPES = frozenset({F16, F32, F64})
FLOAT_TYPES_BF16 = FLOAT_TYPES | {BF16}
INTEGER_TYPES = frozenset(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64,
                                                np.uint8, np.uint16, np.uint32, np.uint64))
NUMERIC_TYPES = INTEGER_TYPES | FLOAT_TYPES
BOOL = np.dtype(np.bool_)


def check_dtype(version: OnnxOpVersion, dtype: np.dtype) -> None:
    """Raise UsageError unless the row allows `dtype` for its main input (type constraint T)."""
    if version.dtypes is not None and np.dtype(dtype) not in version.dtypes:
        allowed = ", ".join(sorted(_type_name(t) for t in version.dtypes))
        raise UsageError(f"input type {_type_name(dtype)} is not allowed for {version.label} (allowed: {allowed})")


def check_one_type(version: OnnxOpVersion, arrays) -> None:
    """Raise InvalidModelError unless `arrays` share one dtype: the spec binds them to one type T. numpy would
    promote (f32 + u8 is f32) where onnxruntime refuses the model ("Type parameter (T) of Optype (Add) bound to
    different types") and OpenVINO's frontend too ("Arguments do not have the same element type")."""
    first = arrays[0].dtype
    if any(a.dtype != first for a in arrays[1:]):  # every binary op of every run comes here: the short test first
        kinds = list(dict.fromkeys(np.dtype(a.dtype) for a in arrays))
        raise InvalidModelError(f"{version.label} inputs have different element types "
                                f"({', '.join(_type_name(k) for k in kinds)}); the spec binds them to one type T")


def _type_name(dtype) -> str:
    dtype = np.dtype(dtype)
    return "bfloat16" if dtype == BF16 else dtype.name


def onnx_dtype(element_type: int) -> np.dtype:
    """The numpy dtype of an ONNX TensorProto element type; UsageError for one numpy cannot hold."""
    try:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(element_type))
    except Exception:
        raise UsageError(f"ONNX element type {element_type} is not supported") from None


__all__ = ["BF16", "BOOL", "F16", "F32", "F64", "FLOAT_TYPES", "FLOAT_TYPES_BF16", "I8", "INTEGER_TYPES",
           "NUMERIC_TYPES", "U8", "check_dtype", "onnx_dtype"]
