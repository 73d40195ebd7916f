"""ONNX <-> IR conversion (exact or refused), verification, and the `poolir` command line."""

from poolir.converter.ir_to_onnx import ir_to_onnx
from poolir.converter.onnx_to_ir import onnx_to_ir

__all__ = ["ir_to_onnx", "onnx_to_ir"]
