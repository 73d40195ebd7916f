"""IR MatMul-1 onto runtime.kernels.matmul.matmul (OpenVINO's rules: ir/ops/matmul.py's docstring).

transpose_a / transpose_b swap the last two axes of an operand of rank >= 2 (a view, no copy); a 1-D
operand ignores its flag. What remains is numpy.matmul's rule, which the kernel implements.
"""

from __future__ import annotations

import numpy as np

from poolir.runtime.ir_ops.registry import LayerFn, LayerInfo, builder
from poolir.runtime.kernels.matmul import matmul


def _transposed(x: np.ndarray, flag: bool) -> np.ndarray:
    return np.swapaxes(x, -1, -2) if flag and x.ndim >= 2 else x


@builder("MatMul")
def _matmul(info: LayerInfo) -> LayerFn:
    transpose_a, transpose_b = info.layer.attrs["transpose_a"], info.layer.attrs["transpose_b"]

    def run(args):
        a, b = args
        return (matmul(_transposed(a, transpose_a), _transposed(b, transpose_b)),)

    return run
