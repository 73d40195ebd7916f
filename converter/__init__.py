"""ONNX <-> IR conversion (exact or refused), verification, and the `poolir` command line."""

from converter.ir_to_onnx import ir_to_onnx
from converter.onnx_to_ir import onnx_to_ir

__all__ = ["ir_to_onnx", "onnx_to_ir"]
