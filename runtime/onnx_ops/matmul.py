"""ONNX MatMul and Gemm: version rows and adapters onto runtime.kernels.matmul.

- MatMul (1, 9, 13): numpy.matmul semantics (1-D operands become a row / a column vector and the added axis
  is removed; batch axes broadcast). MatMul-9 adds int32, int64, uint32 and uint64 (wrapping on overflow, as
  onnxruntime's), 13 bfloat16.
- Gemm (1, 6, 7, 9, 11, 13): Y = alpha * A' B' + beta * C. Before 7, C broadcasts to [M, N] only with
  broadcast=1; with broadcast=0 it must already be [M, N]. From 7, C broadcasts unidirectionally. From 11,
  C is optional. Gemm-6 only dropped Gemm-1's legacy optimisation attributes (none are in the table).
  beta == 0 ignores C (as onnxruntime and BLAS: an infinite C does not give NaN).
- Einsum (12, 28): the equation is read by ONNX's rules (ir.ops.matmul.parse_einsum, world "onnx": spaces allowed,
  implicit output = the labels occurring once, ASCII-sorted, an ellipsis first; every ellipsis covers as many dims).
  Every float and integer type of the spec runs, bfloat16 from 28: floats through BLAS with float32 accumulators
  (float16 rounded once, as onnxruntime), integers exactly, wrapping (onnxruntime has kernels for int32 and int64
  only). Where poolir and onnxruntime 1.31 part: an implicit output keeping an upper-case label ('aB' -> 'Ba',
  onnxruntime refuses it) and ellipses of 0 and 1 dims (poolir refuses them as the spec does; onnxruntime crashes).
"""

from __future__ import annotations

import numpy as np

from poolir.ir.errors import UsageError
from poolir.ir.model import static_shape
from poolir.ir.ops.matmul import einsum_shape, einsum_terms, parse_einsum
from poolir.runtime.kernels.matmul import einsum, gemm, matmul
from poolir.runtime.onnx_ops.element_types import (BF16, FLOAT_TYPES, FLOAT_TYPES_BF16, INTEGER_TYPES, check_dtype,
                                                   check_one_type)
from poolir.runtime.onnx_ops.registry import (FLOAT, INT, REMOVED, STRING, Attribute, NodeContext, Step, adapter,
                                              define)

_MATMUL_INTEGERS = frozenset(np.dtype(t) for t in (np.int32, np.int64, np.uint32, np.uint64))
define("MatMul", [(1, {}, FLOAT_TYPES), (9, {}, FLOAT_TYPES | _MATMUL_INTEGERS),
                  (13, {}, FLOAT_TYPES_BF16 | _MATMUL_INTEGERS)])
define("Gemm", [
    (1, {"alpha": Attribute(FLOAT, 1.0), "beta": Attribute(FLOAT, 1.0), "broadcast": Attribute(INT, 0),
         "transA": Attribute(INT, 0), "transB": Attribute(INT, 0)}, FLOAT_TYPES),
    (6, {}),
    (7, {"broadcast": REMOVED}),  # C broadcasts unidirectionally
    (9, {}),
    (11, {}),  # C optional
    (13, {}, FLOAT_TYPES_BF16),
])
define("Einsum", [(12, {"equation": Attribute(STRING, required=True)}, FLOAT_TYPES | INTEGER_TYPES),
                  (28, {}, FLOAT_TYPES | INTEGER_TYPES | {BF16})])


def _flag(attrs, name: str) -> bool:
    value = attrs.get(name, 0)
    if value not in (0, 1):
        raise UsageError(f"attribute '{name}' = {value}: must be 0 or 1")
    return bool(value)


@adapter("MatMul")
def plan_matmul(ctx: NodeContext) -> Step:
    version = ctx.version
    if ctx.input_types[0] is not None:
        check_dtype(version, ctx.input_types[0])

    def run(a, b):
        check_dtype(version, a.dtype)
        return (matmul(a, b, integers=True),)
    return run


def c_is_optional(version) -> bool:
    """Whether C may be omitted: the spec makes it optional from Gemm-11 (a fact of this table's rows)."""
    return version.since >= _FIRST_OPTIONAL_C


_FIRST_OPTIONAL_C = 11  # Gemm-11: "Optional input tensor C"; the only Gemm fact not carried by an attribute


@adapter("Gemm")
def plan_gemm(ctx: NodeContext) -> Step:
    version, attrs = ctx.version, ctx.attrs
    alpha, beta = float(attrs["alpha"]), float(attrs["beta"])
    trans_a, trans_b = _flag(attrs, "transA"), _flag(attrs, "transB")
    legacy_broadcast = "broadcast" in version.attributes
    broadcast = _flag(attrs, "broadcast") if legacy_broadcast else True
    optional_c = c_is_optional(version)
    if ctx.input_types[0] is not None:
        check_dtype(version, ctx.input_types[0])

    def run(a, b, c=None):
        check_dtype(version, a.dtype)
        if c is None and not optional_c:
            raise UsageError(f"input C is required by {version.label} (optional from Gemm-{_FIRST_OPTIONAL_C})")
        if c is not None and not broadcast:
            rows = a.shape[1] if trans_a else a.shape[0]
            cols = b.shape[0] if trans_b else b.shape[1]
            if c.shape != (rows, cols):
                raise UsageError(f"C of shape {list(c.shape)} must be [M, N] = [{rows}, {cols}] with "
                                 f"broadcast=0 ({version.label})")
        return (gemm(a, b, c, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b),)
    return run


@adapter("Einsum")
def plan_einsum(ctx: NodeContext) -> Step:
    version = ctx.version
    equation = parse_einsum(ctx.attrs["equation"], "onnx")
    if len(ctx.node.input) != len(equation.terms):
        raise UsageError(f"equation {ctx.attrs['equation']!r} has {len(equation.terms)} input terms for "
                         f"{len(ctx.node.input)} inputs")
    if ctx.input_types[0] is not None:
        check_dtype(version, ctx.input_types[0])

    def run(*operands):
        check_dtype(version, operands[0].dtype)
        check_one_type(version, operands)
        terms, output = einsum_terms(equation, [a.ndim for a in operands])
        einsum_shape(terms, output, [static_shape(a.shape) for a in operands])
        return (einsum(terms, output, operands),)
    return run


__all__ = ["c_is_optional", "plan_einsum"]
