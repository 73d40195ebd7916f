"""Which dtype a computation runs in: the floating types poolir knows and their accumulation dtype.

Low-precision floats (float16, bfloat16) are accumulated in float32 and rounded back once, so a reduction
over many elements does not lose precision step by step.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from poolir.ir.element_types import is_float  # re-exported: the kernels' one test of float-ness

LOW_PRECISION_FLOATS = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


def accumulation_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype sums and means are computed in: float32 for f16/bf16, else the dtype itself."""
    return np.dtype(np.float32) if np.dtype(dtype) in LOW_PRECISION_FLOATS else np.dtype(dtype)


__all__ = ["LOW_PRECISION_FLOATS", "accumulation_dtype", "is_float"]
