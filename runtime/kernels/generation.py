"""Range's values, vectorised: start + i * step (ONNX's formula, and OpenVINO's when it folds constants) or the running
sum start, start + step, (start + step) + step, ... (what OpenVINO's Range-4 spec and its CPU plugin compute).

The two differ for floats only: in float32, 0 + 7 * 0.1 is 0.69999999 but seven additions of 0.1 make 0.70000005.
For integers both are exact: every value lies between start and stop (ir.ops.generation.range_count refuses a span
the type cannot hold), so none overflows. The element count comes from ir.ops.generation.range_count.
"""

from __future__ import annotations

import numpy as np

from poolir.ir.budget import check_allocation


def arange(start, step, count: int, compute: np.dtype, output: np.dtype, *, running_sum: bool = False) -> np.ndarray:
    """`count` values from `start` by `step`, computed in `compute` and cast (rounded to nearest) to `output`.

    running_sum=False: value i is compute(start) + compute(i) * compute(step), each operation rounded to `compute`
    (numpy's float16 arithmetic rounds each product and sum, as OpenVINO's float16 type does).
    running_sum=True: the sequential sum in `compute` (np.add.accumulate adds left to right, no pairwise summation).
    """
    compute, output = np.dtype(compute), np.dtype(output)
    check_allocation((count,), max(compute.itemsize, output.itemsize), "the Range output")
    first, delta = np.asarray(start).astype(compute), np.asarray(step).astype(compute)
    if count == 0:
        return np.zeros(0, output)
    if np.issubdtype(compute, np.integer):
        # exact in int64: |i * step| < |stop - start| + |step|, which fits (range_count checked the span)
        values = first.astype(np.int64) + np.arange(count, dtype=np.int64) * delta.astype(np.int64)
    elif running_sum:
        terms = np.full(count, delta, compute)
        terms[0] = first
        values = np.add.accumulate(terms, dtype=compute)
    else:
        values = first + np.arange(count).astype(compute) * delta
    return values.astype(output)


__all__ = ["arange"]
