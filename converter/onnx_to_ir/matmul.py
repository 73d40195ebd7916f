"""ONNX MatMul and Gemm -> IR MatMul (+ Multiply by alpha, + Add of beta * C), exactly.

- MatMul -> MatMul with transpose_a = transpose_b = false: OpenVINO's MatMul treats 1-D operands and batch
  broadcasting as numpy.matmul does, which is ONNX MatMul (ir/ops/matmul.py).
- Gemm -> MatMul(transpose_a=transA, transpose_b=transB); alpha != 1: Multiply by alpha; C with beta != 0:
  Add of beta * C (a Const folded from a constant C, else a Multiply by beta). OpenVINO's own frontend writes
  the same layers. Every step rounds in the element type exactly as the ONNX kernel does (product, then
  * alpha, then + beta * C, each rounded in float32 for float32); float16 / bfloat16 run the chain in f32
  between Convert layers and round once, as ONNX's Gemm computes in f32 and rounds once.
- Gemm before version 7 with broadcast=0 needs C of shape [M, N]; poolir checks that on the static shapes.
- Einsum -> Einsum-7 with the equation read by ONNX's rules and written explicitly, without spaces, every ellipsis
  spelled as letters ('B G H I D, B G H J D -> B G H I J' -> 'BGHID,BGHJD->BGHIJ'; '...ij->...i' over rank 4 ->
  'ABij->ABi'): OpenVINO's IR reader refuses spaces, its implicit-output rule differs ('ii' is the trace in ONNX,
  the output 'ii' in OpenVINO), and its CPU plugin computes some equations whose ellipsis covers 2 or more dims
  wrongly or not at all (ir/ops/matmul.py), which the same equation in letters never did in 400 random probes.
  Integer Einsum is refused, as OpenVINO computes it in float32 or saturates.
"""

from __future__ import annotations

import numpy as np

from poolir.converter.onnx_to_ir.convolution import convert_to
from poolir.converter.onnx_to_ir.node import OnnxNode, Value
from poolir.ir.element_types import dtype_of
from poolir.ir.element_types import is_integer
from poolir.ir.errors import ConversionError, InvalidModelError
from poolir.ir.ops.matmul import einsum_terms, integer_einsum_problem, parse_einsum
from poolir.runtime.onnx_ops.matmul import c_is_optional

_NARROW_FLOATS = ("f16", "bf16")


def _matmul_shape(a: tuple, b: tuple) -> tuple:
    a_vector, b_vector = len(a) == 1, len(b) == 1
    a2 = (1, *a) if a_vector else a
    b2 = (*b, 1) if b_vector else b
    batch_a, batch_b = a2[:-2], b2[:-2]
    rank = max(len(batch_a), len(batch_b))
    batch_a = (1,) * (rank - len(batch_a)) + tuple(batch_a)
    batch_b = (1,) * (rank - len(batch_b)) + tuple(batch_b)
    batch = tuple(y if x == 1 else x if y == 1 else (x if x is not None else y) for x, y in zip(batch_a, batch_b))
    return batch + (() if a_vector else (a2[-2],)) + (() if b_vector else (b2[-1],))


def matmul(node: OnnxNode) -> list[Value]:
    a, b = node.checked_inputs(2, 2)
    node.attributes()
    node.check_element_type(a)
    node.check_same_element_type(a, "A", [("B", b)])
    if np.issubdtype(dtype_of(a.element_type), np.integer):
        raise ConversionError(f"integer MatMul ({a.element_type}): OpenVINO's CPU plugin multiplies integers in "
                              "float32, inexact past 2**24 (i32 [[16777217, 1]] x [[1], [4096]] gives 16781312, "
                              "ONNX 16781313)")
    if not a.shape or not b.shape:
        raise InvalidModelError(f"inputs of shapes {list(a.shape)} and {list(b.shape)}: MatMul needs rank >= 1")
    y = node.add("MatMul", [a.ref, b.ref], {"transpose_a": False, "transpose_b": False}, node.name)[0]
    return [Value(y, a.element_type, _matmul_shape(a.shape, b.shape))]


def gemm(node: OnnxNode) -> list[Value]:
    attrs = node.attributes()
    has_c = len(node.inputs) == 3 and bool(node.node.input[2])
    if not 2 <= len(node.inputs) <= 3 or (not has_c and not c_is_optional(node.version)):
        raise InvalidModelError(f"{node.version.label} takes inputs A, B and C (C optional from Gemm-11), got "
                                f"{len(node.inputs)}")
    a, b = node.inputs[0], node.inputs[1]
    node.check_element_type(a)
    node.check_same_element_type(a, "A", [("B", b), ("C", node.inputs[2] if has_c else None)])
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise InvalidModelError(f"Gemm operands A {list(a.shape)} and B {list(b.shape)} must be 2-D")
    flags = {}
    for attr in ("transA", "transB", "broadcast"):
        if attrs.get(attr, 0) not in (0, 1):
            raise InvalidModelError(f"attribute '{attr}' = {attrs[attr]}: must be 0 or 1")
        flags[attr] = bool(attrs.get(attr, 0))
    rows = a.shape[1] if flags["transA"] else a.shape[0]
    inner_a = a.shape[0] if flags["transA"] else a.shape[1]
    inner_b = b.shape[1] if flags["transB"] else b.shape[0]
    cols = b.shape[0] if flags["transB"] else b.shape[1]
    if inner_a is not None and inner_b is not None and inner_a != inner_b:
        raise InvalidModelError(f"Gemm shapes A {list(a.shape)} and B {list(b.shape)}: inner dims {inner_a} and "
                                f"{inner_b} differ")
    alpha, beta = float(attrs["alpha"]), float(attrs["beta"])
    element_type = a.element_type
    name = node.name
    use_c = has_c and beta != 0.0  # beta == 0 ignores C (ONNX kernel and onnxruntime)
    if use_c:
        c = node.inputs[2]
        legacy = "broadcast" in node.version.attributes
        if legacy and not flags["broadcast"] and tuple(c.shape) != (rows, cols):
            raise InvalidModelError(f"C of shape {list(c.shape)} must be [M, N] = [{rows}, {cols}] with "
                                    f"broadcast=0 ({node.version.label})")
        # A dim known on one side only (C [2, N] with M dynamic) is a run-time fact: the model is valid where
        # they match, and Add's numpy broadcast computes the same there.
        if len(c.shape) > 2 or any(x is not None and t is not None and x != 1 and x != t for x, t in
                                   zip(reversed(c.shape), (cols, rows))):
            raise InvalidModelError(f"C of shape {list(c.shape)} does not broadcast unidirectionally to "
                                    f"[M, N] = [{rows}, {cols}]")
    widen = element_type in _NARROW_FLOATS and (alpha != 1.0 or use_c)
    work = "f32" if widen else element_type
    a_ref, b_ref = a.ref, b.ref
    if widen:
        a_ref, b_ref = convert_to(node, a_ref, "f32", f"{name}/a_f32"), convert_to(node, b_ref, "f32", f"{name}/b_f32")
    steps_after = int(alpha != 1.0) + int(use_c)
    y = node.add("MatMul", [a_ref, b_ref], {"transpose_a": flags["transA"], "transpose_b": flags["transB"]},
                 name if steps_after == 0 and not widen else f"{name}/MatMul")[0]
    if alpha != 1.0:
        steps_after -= 1
        y = node.add("Multiply", [y, node.const(alpha, work)], {"auto_broadcast": "numpy"},
                     name if steps_after == 0 and not widen else f"{name}/alpha")[0]
    if use_c:
        data = node.builder.constant_value(c.ref)
        if data is not None and (beta != 1.0 or widen):
            # beta * C folded, rounded in the work type as the ONNX kernel rounds it
            dtype = dtype_of(work)
            scaled = node.const(np.multiply(np.asarray(beta, dtype=dtype), np.asarray(data).astype(dtype)))
        else:
            c_ref = convert_to(node, c.ref, "f32", f"{name}/c_f32") if widen else c.ref
            scaled = c_ref if beta == 1.0 else None
        if scaled is None:
            scaled = node.add("Multiply", [c_ref, node.const(beta, work)], {"auto_broadcast": "numpy"},
                              f"{name}/beta")[0]
        y = node.add("Add", [y, scaled], {"auto_broadcast": "numpy"}, name if not widen else f"{name}/sum")[0]
    if widen:
        y = convert_to(node, y, element_type, name)
    return [Value(y, element_type, (rows, cols))]


def einsum(node: OnnxNode) -> list[Value]:
    operands = node.checked_inputs(1, None)
    attrs = node.attributes()
    node.check_element_type(operands[0])
    node.check_same_element_type(operands[0], "input 0", [(f"input {i}", v) for i, v in enumerate(operands)])
    if is_integer(operands[0].element_type):
        raise ConversionError(integer_einsum_problem(operands[0].element_type))
    terms, output = einsum_terms(parse_einsum(attrs["equation"], "onnx"), [len(value.shape) for value in operands])
    return node.layer("Einsum", operands, {"equation": ",".join(terms) + "->" + output}, name=node.name)


CONVERTERS = {"MatMul": matmul, "Gemm": gemm, "Einsum": einsum}
