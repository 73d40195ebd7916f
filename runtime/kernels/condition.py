"""The branch an If takes, in both worlds: ONNX If (its type B) and OpenVINO's If-8 ("cond: a boolean scalar")."""

from __future__ import annotations

import numpy as np

from poolir.ir.errors import UsageError


def condition_value(condition) -> bool:
    """The condition must be a bool tensor of exactly one element (onnxruntime refuses another type when it loads
    the model; OpenVINO's If-8 declares it boolean)."""
    flat = np.asarray(condition).reshape(-1)
    if flat.dtype != np.bool_:
        raise UsageError(f"the condition of If is {flat.dtype}; it must be bool")
    if flat.size != 1:
        raise UsageError(f"the condition of If has {flat.size} elements; it must have one")
    return bool(flat[0])


__all__ = ["condition_value"]
