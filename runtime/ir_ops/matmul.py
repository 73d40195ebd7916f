"""IR MatMul-1 and Einsum-7 onto runtime.kernels.matmul (OpenVINO's rules: ir/ops/matmul.py's docstring).

MatMul: transpose_a / transpose_b swap the last two axes of an operand of rank >= 2 (a view, no copy); a 1-D
operand ignores its flag. What remains is numpy.matmul's rule, which the kernel implements.

Einsum: the equation is read once by OpenVINO's rules (parse_einsum, world "ir"); each run spells its ellipses for
the operands' ranks and checks their dims (einsum_terms, einsum_shape). Integer Einsum is refused: OpenVINO's CPU
plugin computes it in float32 or saturates, which poolir does not imitate.
"""

from __future__ import annotations

import numpy as np

from poolir.ir.errors import UnsupportedError
from poolir.ir.model import static_shape
from poolir.ir.ops.matmul import einsum_shape, einsum_terms, integer_einsum_problem, parse_einsum
from poolir.runtime.ir_ops.registry import LayerFn, LayerInfo, builder
from poolir.runtime.kernels.matmul import einsum, matmul
from poolir.runtime.kernels.precision import is_float


def _transposed(x: np.ndarray, flag: bool) -> np.ndarray:
    return np.swapaxes(x, -1, -2) if flag and x.ndim >= 2 else x


@builder("MatMul")
def _matmul(info: LayerInfo) -> LayerFn:
    transpose_a, transpose_b = info.layer.attrs["transpose_a"], info.layer.attrs["transpose_b"]

    def run(args):
        a, b = args
        return (matmul(_transposed(a, transpose_a), _transposed(b, transpose_b)),)

    return run


@builder("Einsum")
def _einsum(info: LayerInfo) -> LayerFn:
    equation = parse_einsum(info.layer.attrs["equation"], "ir")

    def run(args):
        if not is_float(args[0].dtype):
            raise UnsupportedError(integer_einsum_problem(str(args[0].dtype)))
        terms, output = einsum_terms(equation, [a.ndim for a in args])
        einsum_shape(terms, output, [static_shape(a.shape) for a in args])
        return (einsum(terms, output, args),)

    return run
