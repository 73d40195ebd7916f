"""What `poolir inspect` shows: a model's inputs, outputs, layers (or nodes) and warnings.

For IR the inferred dims come from ir.infer (OpenVINO's shape rules); for ONNX from onnx's own
shape inference (strict mode, with data propagation). Either way, a declared shape that disagrees
with the inferred one becomes a warning naming the layer, the port and both shapes.

    description.py   the description and how it is printed (text or JSON)
    of_ir.py         an IR model described
    of_onnx.py       an ONNX model described
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from poolir import ir
from poolir.converter.describe.description import (LayerDescription, ModelDescription, PortDescription,
                                                   TensorDescription)
from poolir.converter.describe.of_ir import describe_ir
from poolir.converter.describe.of_onnx import describe_onnx
from poolir.runtime.session import model_kind

__all__ = ["LayerDescription", "ModelDescription", "PortDescription", "TensorDescription", "describe",
           "describe_ir", "describe_onnx"]


def describe(path: str | os.PathLike, warn: Callable[[str], None] | None = None) -> ModelDescription:
    """Describe an IR .xml or an .onnx file; raises PoolirError for unreadable or invalid files. `warn` is
    told what the ONNX checker found that leaves the meaning unchanged (each naming the value)."""
    path = Path(path)
    if model_kind(path) == "ir":
        return describe_ir(ir.read_model(path))
    return describe_onnx(path, warn)
