"""MatMul-1: its schema row and OpenVINO's MatMul shape rule.

OpenVINO's MatMul (its MatMul-1 spec, checked with OpenVINO 2026.4's CPU plugin; pinned in
tests/runtime/test_matmul_family.py):
  1. transpose_a / transpose_b swap the last two axes of an operand of rank >= 2 before the product.
  2. A 1-D operand is a vector whatever its transpose flag: A [K] acts as [1, K], B [K] as [K, 1], and the
     added axis is removed from the result (A [3] with transpose_a=true times B [3, 4] gives [4];
     [3] x [3] gives a scalar []). This is numpy.matmul's (and ONNX MatMul's) rule for 1-D operands.
  3. The batch axes (all but the last two) broadcast numpy-style: [2, 1, 4, 3] x [5, 3, 6] -> [2, 5, 4, 6].
So MatMul with both flags false is exactly ONNX MatMul.
"""

from __future__ import annotations

from poolir.ir.attributes import BOOL, Attr, OpVersion
from poolir.ir.errors import InvalidModelError
from poolir.ir.model import Dim, Layer, shape_str
from poolir.ir.registry import ShapeRules
from poolir.ir.shapes import TensorInfo, broadcast_shapes

SCHEMA_ROWS: tuple[OpVersion, ...] = (
    OpVersion("MatMul", 1, (Attr("transpose_a", BOOL, False), Attr("transpose_b", BOOL, False)), inputs=(2, 2)),
)

SHAPE_RULES = ShapeRules()


def _merge(a: Dim, b: Dim, what: str) -> None:
    if a.is_static and b.is_static and a.min != b.min:
        raise InvalidModelError(what)


@SHAPE_RULES.register("MatMul")
def infer_matmul(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    a, b = inputs
    if a.element_type != b.element_type:
        raise InvalidModelError(f"input element types differ ({a.element_type}, {b.element_type})")
    if not a.shape or not b.shape:
        raise InvalidModelError(f"inputs {shape_str(a.shape)} and {shape_str(b.shape)}: MatMul needs rank >= 1")
    a_shape, b_shape = list(a.shape), list(b.shape)
    if len(a_shape) >= 2 and layer.attrs["transpose_a"]:
        a_shape[-2:] = a_shape[-1], a_shape[-2]
    if len(b_shape) >= 2 and layer.attrs["transpose_b"]:
        b_shape[-2:] = b_shape[-1], b_shape[-2]
    a_vector, b_vector = len(a_shape) == 1, len(b_shape) == 1
    if a_vector:
        a_shape = [Dim.static(1), *a_shape]
    if b_vector:
        b_shape = [*b_shape, Dim.static(1)]
    _merge(a_shape[-1], b_shape[-2], f"the inner dims differ: {shape_str(a.shape)} x {shape_str(b.shape)} "
                                     f"(transpose_a={layer.attrs['transpose_a']}, "
                                     f"transpose_b={layer.attrs['transpose_b']})")
    try:
        batch = broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2]))
    except Exception as error:
        raise InvalidModelError(f"batch axes of {shape_str(a.shape)} and {shape_str(b.shape)} do not broadcast: "
                                f"{getattr(error, 'problem', error)}") from None
    out = [*batch] + ([] if a_vector else [a_shape[-2]]) + ([] if b_vector else [b_shape[-1]])
    return [TensorInfo(a.element_type, tuple(out))]
