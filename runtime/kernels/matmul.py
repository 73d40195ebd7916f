"""The numpy matrix-product kernels: ONNX MatMul (numpy broadcasting), ONNX Gemm and Einsum (both worlds).

Accumulation: float32 operands are multiplied by BLAS sgemm (float32 accumulators), float64 by dgemm.
float16 and bfloat16 are widened to float32, multiplied there and rounded once at the end: numpy has no
half-precision GEMM (its float16 matmul is a slow non-BLAS loop), and onnxruntime's float16 MatMul and
Gemm on this CPU also equal float32 results rounded once. MatMul takes int32/int64/uint32/uint64 too (ONNX
MatMul-9): numpy's integer matmul, exact modulo wrap-around, as onnxruntime's; Gemm takes floats only (onnxruntime
has no integer Gemm to check one against). Operands must share one element type, as ONNX's T requires. The
summation order is BLAS's, so results differ from other engines by rounding only (at most about
K * eps * sum |a * b| for K-term dot products). Results are always fresh arrays.

Einsum contracts its operands pairwise from the left, as onnxruntime and OpenVINO's CPU plugin both do, through
np.einsum with that explicit path: numpy (>= 2) runs each pairwise step as one batched matmul (BLAS sgemm for
float32, float32 accumulators) after summing, tracing and transposing each operand on its own, so a product such as
'bghid,bghjd->bghij' costs what np.matmul costs. float16 and bfloat16 are widened to float32 and rounded once (so
does onnxruntime's float16 Einsum, measured bit for bit on 8 x 512 x 8); integers are numpy's exact wrapping sums.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from poolir.ir.budget import check_allocation
from poolir.ir.errors import UsageError
from poolir.runtime.kernels.precision import accumulation_dtype, is_float

__all__ = ["einsum", "matmul", "gemm"]


def matmul(a: np.ndarray, b: np.ndarray, *, integers: bool = False) -> np.ndarray:
    """ONNX MatMul = numpy.matmul: a [..., M, K] times b [..., K, N] -> [..., M, N], batch axes broadcast.

    A 1-D a is a row vector [1, K] and a 1-D b a column vector [K, 1]; the added axis is removed from
    the result (1-D times 1-D is a 0-d scalar array). Both operands need rank >= 1 and one float dtype
    (`integers`: or int32/int64/uint32/uint64, for ONNX; OpenVINO's CPU plugin multiplies integers in
    float32, which the IR runtime does not imitate, so it leaves them refused).
    """
    a, b = _operands("MatMul", integers, a=a, b=b)
    if a.ndim == 0 or b.ndim == 0:
        raise UsageError(f"MatMul operands need rank >= 1, got shapes {a.shape} and {b.shape}")
    inner_a, inner_b = a.shape[-1], b.shape[-2] if b.ndim > 1 else b.shape[0]
    if inner_a != inner_b:
        raise UsageError(f"MatMul shapes {a.shape} and {b.shape}: inner dimensions {inner_a} and {inner_b} differ")
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise UsageError(f"MatMul shapes {a.shape} and {b.shape}: batch dimensions {a.shape[:-2]} and "
                         f"{b.shape[:-2]} do not broadcast") from None
    acc = accumulation_dtype(a.dtype)
    rows, columns = a.shape[-2] if a.ndim > 1 else 1, b.shape[-1] if b.ndim > 1 else 1
    check_allocation(batch + (rows, columns), acc.itemsize, "the MatMul output")
    result = np.matmul(a.astype(acc, copy=False), b.astype(acc, copy=False))
    return _rounded(result, a.dtype)


def gemm(a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None, *, alpha: float = 1.0, beta: float = 1.0,
         trans_a: bool = False, trans_b: bool = False) -> np.ndarray:
    """ONNX Gemm: Y = alpha * A' @ B' + beta * C, with A' = A.T if trans_a, B' = B.T if trans_b.

    A' is [M, K], B' is [K, N] (a and b are 2-D), and c, when given, is broadcast unidirectionally to
    [M, N] (shape (), (N,), (1, N), (M, 1), (M, N)...). Transposes are BLAS flags, never copies. As in
    onnxruntime (and BLAS), beta == 0 ignores c entirely, so an infinite or NaN c does not give NaN; alpha
    is applied literally (alpha == 0 with an infinite product gives NaN, as in onnxruntime).
    """
    named = dict(a=a, b=b) if c is None else dict(a=a, b=b, c=c)
    operands = _operands("Gemm", **named)
    a, b = operands[:2]
    c = operands[2] if c is not None else None
    if a.ndim != 2 or b.ndim != 2:
        raise UsageError(f"Gemm operands a and b must be 2-D, got shapes {a.shape} and {b.shape}")
    a_matrix = a.T if trans_a else a
    b_matrix = b.T if trans_b else b
    (m, k), (k_b, n) = a_matrix.shape, b_matrix.shape
    if k != k_b:
        raise UsageError(f"Gemm shapes a {a.shape} (trans_a={int(trans_a)}) and b {b.shape} (trans_b={int(trans_b)}): "
                         f"inner dimensions {k} and {k_b} differ")
    if c is not None and not _broadcasts_to(c.shape, (m, n)):
        raise UsageError(f"Gemm c of shape {c.shape} does not broadcast unidirectionally to [M, N] = [{m}, {n}]")
    acc = accumulation_dtype(a.dtype)
    check_allocation((m, n), acc.itemsize, "the Gemm output")
    result = np.matmul(a_matrix.astype(acc, copy=False), b_matrix.astype(acc, copy=False))
    alpha, beta = acc.type(alpha), acc.type(beta)
    if alpha != 1:
        result *= alpha
    if c is not None and beta != 0:
        wide_c = c.astype(acc, copy=False)
        if beta == 1:
            result += wide_c
        else:
            result += beta * wide_c
    return _rounded(result, a.dtype)


def einsum(terms: Sequence[str], output: str, operands: Sequence[np.ndarray]) -> np.ndarray:
    """Einstein summation of `operands` by spelled terms (ir.ops.matmul.einsum_terms: letters only, one term per
    operand): output[output] = sum over the other labels of the product of operand[term]. A label's dims are
    equal, or 1 and broadcast (the caller checked them with ir.ops.matmul.einsum_shape). Every operand has one
    numeric type; the result is a fresh array of it."""
    operands = [np.asarray(a) for a in operands]
    operands = [a if a.dtype.isnative else a.astype(a.dtype.newbyteorder("=")) for a in operands]
    dtype = operands[0].dtype
    if any(a.dtype != dtype for a in operands) or not (is_float(dtype) or dtype.kind in "iu"):
        raise UsageError(f"Einsum operands must share one numeric element type, got "
                         f"{', '.join(str(a.dtype) for a in operands)}")
    sizes = _label_sizes(terms, operands)
    for labels in _intermediate_labels(terms, output):
        check_allocation(tuple(sizes[label] for label in labels), max(dtype.itemsize, 4), "an Einsum intermediate")
    acc = accumulation_dtype(dtype)
    wide = [a.astype(acc, copy=False) for a in operands]
    path = ["einsum_path"] + [(0, 1)] * (len(wide) - 1) if len(wide) > 1 else False
    result = np.asarray(np.einsum(",".join(terms) + "->" + output, *wide, optimize=path))
    if any(np.may_share_memory(result, a) for a in wide):   # a transpose or a diagonal is a view of its operand
        result = result.copy()
    return _rounded(result, dtype)


def _label_sizes(terms: Sequence[str], operands: Sequence[np.ndarray]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for term, operand in zip(terms, operands):
        for label, size in zip(term, operand.shape):
            sizes[label] = sizes.get(label, 1) if size == 1 else size   # 1 broadcasts; 0 and n do not
    return sizes


def _intermediate_labels(terms: Sequence[str], output: str) -> list[str]:
    """The labels of every result the left-to-right pairwise path holds: those of the operands so far that a later
    operand or the output still needs (the rest are summed before the product)."""
    held, results = "", []
    for index, term in enumerate(terms):
        later = set(output).union(*terms[index + 1:])
        held = "".join(dict.fromkeys(label for label in held + term if label in later))
        results.append(held)
    return results


_INTEGERS = frozenset(np.dtype(t) for t in (np.int32, np.int64, np.uint32, np.uint64))


def _operands(op: str, integers: bool = False, **arrays) -> list[np.ndarray]:
    """The operands as native-byte-order arrays of one supported dtype (else UsageError): a float type, or
    with `integers` (MatMul) an integer type of at least 32 bits too."""
    converted = []
    for name, array in arrays.items():
        array = np.asarray(array)
        if not array.dtype.isnative:
            array = array.astype(array.dtype.newbyteorder("="))
        if not is_float(array.dtype) and not (integers and array.dtype in _INTEGERS):
            raise UsageError(f"{op} operand {name} of element type {array.dtype} is not supported "
                             "(float16, bfloat16, float32 and float64 are"
                             + (", and int32, int64, uint32, uint64)" if integers else ")"))
        converted.append(array)
    dtypes = {array.dtype for array in converted}
    if len(dtypes) > 1:
        listed = ", ".join(f"{name} {array.dtype}" for name, array in zip(arrays, converted))
        raise UsageError(f"{op} operands must share one element type, got {listed}")
    return converted


def _rounded(result: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The accumulator-typed result in the operands' dtype, rounded once (a fresh array either way)."""
    result = np.asarray(result)
    return result if result.dtype == dtype else result.astype(dtype)


def _broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Unidirectional (ONNX) broadcasting: shape stretches to target without changing target."""
    if len(shape) > len(target):
        return False
    return all(s == t or s == 1 for s, t in zip(shape[::-1], target[::-1]))
