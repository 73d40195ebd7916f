"""runtime/kernels/matmul.py: hand-worked cases and seeded grids of MatMul and Gemm against onnxruntime.

Oracle: onnxruntime (one thread, no graph optimisation) for float32, float64 and float16 (its float16
MatMul and Gemm equal float32 products rounded once, measured); it has no bfloat16 MatMul or Gemm, so
bfloat16 is checked against its float32 result on the exactly widened values, rounded once.

Tolerance, from the summation order: each engine sums the K products of a dot product in its own order,
each within K * eps * sum |a * b| of the exact value, so two engines are within 2 * (K + 2) * eps *
(|alpha| sum |a * b| + |beta * c|) (two more roundings for alpha and the addition of beta * c); the
magnitude is computed in float64 from |a|, |b|, |c|. float16 and bfloat16 add one unit in the last place.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper

from poolir.ir.errors import UsageError
from tests.peers import onnxruntime_run


from poolir.runtime.kernels import matmul as kernels
matmul, gemm = kernels.matmul, kernels.gemm

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16), BFLOAT16]
ONNX_TYPES = {np.dtype(np.float16): TensorProto.FLOAT16, np.dtype(np.float32): TensorProto.FLOAT,
              np.dtype(np.float64): TensorProto.DOUBLE}


def run_onnx(op: str, arrays: dict[str, np.ndarray], dtype: np.dtype, **attributes) -> np.ndarray:
    """onnxruntime's result as float64; bfloat16 runs in float32 and is rounded to bfloat16 once."""
    peer = np.dtype(np.float32) if dtype == BFLOAT16 else dtype
    onnx_type = ONNX_TYPES[peer]
    node = helper.make_node(op, list(arrays), ["y"], **attributes)
    graph = helper.make_graph([node], op, [helper.make_tensor_value_info(n, onnx_type, None) for n in arrays],
                              [helper.make_tensor_value_info("y", onnx_type, None)])
    # IR version 10: onnxruntime 1.31 refuses the version that onnx 1.23 stamps by default.
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    result = onnxruntime_run(model, {n: a.astype(peer) for n, a in arrays.items()})["y"]
    return (result.astype(BFLOAT16) if dtype == BFLOAT16 else result).astype(np.float64)


def assert_close(got: np.ndarray, expected: np.ndarray, magnitude: np.ndarray, terms: int, dtype: np.dtype):
    assert got.dtype == dtype and got.shape == expected.shape
    accumulation = np.float64 if dtype == np.float64 else np.float32
    bound = 2 * (terms + 2) * np.finfo(accumulation).eps * magnitude
    if dtype in (np.float16, BFLOAT16):
        finfo = ml_dtypes.finfo(dtype)
        bound = bound + float(finfo.eps) * np.abs(expected) + float(finfo.smallest_subnormal)
    error = np.abs(got.astype(np.float64) - expected)
    assert np.all(error <= bound), f"max error {error.max():.3g}"


# --------------------------------------------------------------------------------------------- hand-worked

def test_matmul_hand_worked_with_vector_promotion():
    a = np.array([[1, 2], [3, 4]], dtype=np.float32)
    # [[1, 2], [3, 4]] @ [[5], [6]] = [[1*5 + 2*6], [3*5 + 4*6]] = [[17], [39]]
    np.testing.assert_array_equal(matmul(a, np.array([[5], [6]], dtype=np.float32)), [[17], [39]])
    # 1-D b is a column, the added axis removed: [17, 39]; 1-D a is a row: [5, 6] @ a = [5 + 18, 10 + 24] = [23, 34]
    np.testing.assert_array_equal(matmul(a, np.array([5, 6], dtype=np.float32)), [17, 39])
    np.testing.assert_array_equal(matmul(np.array([5, 6], dtype=np.float32), a), [23, 34])
    # 1-D @ 1-D is a 0-d array: 1*3 + 2*4 = 11
    dot = matmul(np.array([1, 2], dtype=np.float64), np.array([3, 4], dtype=np.float64))
    assert dot.shape == () and dot.dtype == np.float64 and dot == 11


def test_gemm_hand_worked_alpha_beta_transposes():
    # A.T = [[1, 3], [2, 4]], B = I: A.T @ B = [[1, 3], [2, 4]]; * alpha 2 = [[2, 6], [4, 8]]; + 3 * [10, 20]
    #   = [[32, 66], [34, 68]]
    a = np.array([[1, 2], [3, 4]], dtype=np.float32)
    y = gemm(a, np.eye(2, dtype=np.float32), np.array([10, 20], dtype=np.float32), alpha=2, beta=3, trans_a=True)
    np.testing.assert_array_equal(y, [[32, 66], [34, 68]])


def test_gemm_beta_zero_ignores_c_and_alpha_zero_is_literal_as_in_onnxruntime():
    a = np.ones((2, 3), np.float32)
    b = np.ones((3, 4), np.float32)
    c = np.array([np.inf, np.nan, 1, 2], np.float32)
    # beta = 0: c is not read (BLAS convention, onnxruntime too), so no NaN from 0 * inf: 3 everywhere.
    expected = run_onnx("Gemm", dict(a=a, b=b, c=c), np.dtype(np.float32), beta=0.0)
    np.testing.assert_array_equal(expected, np.full((2, 4), 3))
    np.testing.assert_array_equal(gemm(a, b, c, beta=0.0), expected)
    # alpha = 0 multiplies: an infinite product gives NaN in onnxruntime and here (the session silences
    # numpy's floating-point warnings; the kernel does not).
    infinite = np.full((2, 3), np.inf, np.float32)
    expected = run_onnx("Gemm", dict(a=infinite, b=b, c=np.ones(4, np.float32)), np.dtype(np.float32), alpha=0.0)
    assert np.isnan(expected).all()
    with np.errstate(invalid="ignore"):
        assert np.isnan(gemm(infinite, b, np.ones(4, np.float32), alpha=0.0)).all()


# --------------------------------------------------------------------------------------------- MatMul grid

MATMUL_SHAPES = [
    ((5,), (5,)), ((3, 5), (5,)), ((5,), (5, 4)), ((3, 5), (5, 4)), ((1, 7), (7, 1)),
    ((2, 3, 5), (5, 4)), ((5,), (2, 5, 4)), ((2, 3, 5), (5,)), ((2, 1, 3, 5), (4, 5, 2)),
    ((1, 3, 5), (2, 5, 4)), ((2, 3, 64), (2, 64, 33)), ((4, 200), (200, 3)), ((0, 5), (5, 3)), ((3, 0), (0, 2)),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=lambda s: f"{s[0]}@{s[1]}")
def test_matmul_matches_onnxruntime(shapes, dtype):
    rng = np.random.default_rng(zlib.crc32(repr((shapes, dtype.name)).encode()))   # str hash() is salted per run
    a, b = (rng.standard_normal(shape).astype(dtype) for shape in shapes)
    expected = run_onnx("MatMul", dict(a=a, b=b), dtype)
    magnitude = np.abs(np.matmul(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64))))
    assert_close(matmul(a, b), expected, magnitude, shapes[0][-1], dtype)


# --------------------------------------------------------------------------------------------- Gemm grid

@dataclass(frozen=True)
class GemmCase:
    dtype: np.dtype
    m: int
    k: int
    n: int
    trans_a: bool
    trans_b: bool
    alpha: float
    beta: float
    c_shape: tuple[int, ...] | None
    seed: int

    def __str__(self):
        return (f"{self.dtype.name}-{self.m}x{self.k}x{self.n}-tA{int(self.trans_a)}-tB{int(self.trans_b)}"
                f"-alpha{self.alpha}-beta{self.beta}-c{self.c_shape}")


def _gemm_cases(count: int, seed: int) -> list[GemmCase]:
    rng = np.random.default_rng(seed)
    cases = []
    for number in range(count):
        m, k, n = (int(v) for v in rng.integers(1, 70, 3))
        c_shape = [None, (), (1,), (n,), (1, n), (m, 1), (m, n), (1, 1)][number % 8]
        cases.append(GemmCase(DTYPES[number % len(DTYPES)], m, k, n, bool(rng.integers(0, 2)), bool(rng.integers(0, 2)),
                              float(rng.choice([1.0, 1.0, 0.5, -2.0])), float(rng.choice([1.0, 1.0, 0.0, 0.25])),
                              c_shape, seed * 1000 + number))
    return cases


GEMM_CASES = _gemm_cases(64, seed=20261121)


@pytest.mark.parametrize("case", GEMM_CASES, ids=str)
def test_gemm_matches_onnxruntime(case: GemmCase):
    rng = np.random.default_rng(case.seed)
    a = rng.standard_normal((case.k, case.m) if case.trans_a else (case.m, case.k)).astype(case.dtype)
    b = rng.standard_normal((case.n, case.k) if case.trans_b else (case.k, case.n)).astype(case.dtype)
    c = None if case.c_shape is None else rng.standard_normal(case.c_shape).astype(case.dtype)
    arrays = dict(a=a, b=b) if c is None else dict(a=a, b=b, c=c)
    expected = run_onnx("Gemm", arrays, case.dtype, alpha=case.alpha, beta=case.beta, transA=int(case.trans_a),
                        transB=int(case.trans_b))
    wide = [np.abs(x.astype(np.float64)) for x in (a, b)]
    magnitude = abs(case.alpha) * ((wide[0].T if case.trans_a else wide[0]) @ (wide[1].T if case.trans_b else wide[1]))
    if c is not None:
        magnitude = magnitude + abs(case.beta) * np.abs(c.astype(np.float64))
    got = gemm(a, b, c, alpha=case.alpha, beta=case.beta, trans_a=case.trans_a, trans_b=case.trans_b)
    assert_close(got, expected, magnitude, case.k, case.dtype)


def test_gemm_fc_layer_shape():
    # The ResNet-50 classifier: [1, 2048] @ [1000, 2048].T + [1000]
    rng = np.random.default_rng(5)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((1, 2048), (1000, 2048), (1000,)))
    expected = run_onnx("Gemm", dict(a=x, b=w, c=b), np.dtype(np.float32), transB=1)
    magnitude = np.abs(x.astype(np.float64)) @ np.abs(w.astype(np.float64)).T + np.abs(b)
    assert_close(gemm(x, w, b, trans_b=True), expected, magnitude, 2048, np.dtype(np.float32))


def test_results_are_fresh_and_inputs_untouched():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.ones((3, 2), np.float32)
    c = np.ones(2, np.float32)
    saved = [x.copy() for x in (a, b, c)]
    y = gemm(a, b, c, alpha=2, beta=3)
    assert not any(np.shares_memory(y, x) for x in (a, b, c))
    for x, kept in zip((a, b, c), saved):
        np.testing.assert_array_equal(x, kept)
    z = matmul(a.astype(np.float16), b.astype(np.float16))
    assert z.dtype == np.float16 and z.flags.writeable


# --------------------------------------------------------------------------------------------- refusals

@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, bool])
def test_integer_operands_are_refused(dtype):
    with pytest.raises(UsageError, match="not supported"):
        matmul(np.ones((2, 2), dtype), np.ones((2, 2), dtype))
    with pytest.raises(UsageError, match="not supported"):
        gemm(np.ones((2, 2), dtype), np.ones((2, 2), dtype))


def test_shape_and_type_mismatches_are_refused():
    f32 = np.float32
    with pytest.raises(UsageError, match="inner dimensions 3 and 4 differ"):
        matmul(np.ones((2, 3), f32), np.ones((4, 2), f32))
    with pytest.raises(UsageError, match="batch dimensions"):
        matmul(np.ones((2, 2, 3), f32), np.ones((3, 3, 2), f32))
    with pytest.raises(UsageError, match="rank >= 1"):
        matmul(np.float32(2), np.ones((1,), f32))
    with pytest.raises(UsageError, match="one element type"):
        matmul(np.ones((2, 3), f32), np.ones((3, 2), np.float64))
    with pytest.raises(UsageError, match="must be 2-D"):
        gemm(np.ones((2, 2, 3), f32), np.ones((3, 2), f32))
    with pytest.raises(UsageError, match="inner dimensions"):
        gemm(np.ones((2, 3), f32), np.ones((2, 3), f32))
    with pytest.raises(UsageError, match="does not broadcast unidirectionally"):
        gemm(np.ones((2, 3), f32), np.ones((3, 4), f32), np.ones((3, 4), f32))
    with pytest.raises(UsageError, match="does not broadcast unidirectionally"):
        gemm(np.ones((2, 3), f32), np.ones((3, 4), f32), np.ones((1, 2, 4), f32))
