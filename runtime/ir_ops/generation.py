"""IR Range-1 and Range-4 (ir/ops/generation.py) onto runtime.kernels.generation, OpenVINO's semantics.

Integer outputs: the bounds cast to the output type toward zero (Range-4), an exact count, start + i * step.
Float outputs are computed in float32 whatever the output type (OpenVINO 2026.4's CPU plugin converts f16, bf16 and
f64 to f32; measured: an f32 Range of f16 bounds, an f16 or f64 Range of f32 bounds all carry float32 arithmetic),
then rounded to it:
- a Range OpenVINO folds when it compiles the model (every bound a Const: LayerInfo.folded) has the count of its
  shape inference, in float64 of the bounds as given (ir.ops.generation.folded_count), and value i = start + i * step;
- one computed at run time has the CPU plugin's count (span and quotient in float32: 0.034, 39.034, 3 gives 13
  elements where the folded count is 14) and the Range-4 spec's running sum, val[i + 1] = val[i] + step.
Where that CPU plugin departs from its own spec, poolir follows the spec (pinned by tests/runtime/test_range.py):
- a range that runs away from stop (start 5, stop 0, step 1) is empty; the CPU plugin counts |stop - start| / |step|
  whatever the signs and returns [5, 6, 7, 8, 9];
- float bounds of an integer output_type are truncated first (2.7, 9.2, 1.9 as i64 is 2, 3, .., 8); the CPU plugin
  sums in float32 and rounds each value (3, 5, 6, 8);
- i64 bounds beyond the int32 range: the CPU plugin computes i64 in int32 and returns wrapped values;
- f64 bounds computed at run time: the CPU plugin crashes (a segmentation fault).
"""

from __future__ import annotations

import numpy as np

from poolir.ir.element_types import dtype_of
from poolir.ir.errors import InvalidModelError
from poolir.ir.ops.generation import cast_bounds, folded_count, range_count
from poolir.runtime.ir_ops.registry import LayerFn, LayerInfo, builder
from poolir.runtime.kernels.generation import arange


def ir_range(layer, start, stop, step, folded: bool) -> np.ndarray:
    """The values of Range layer `layer` for its three scalar bounds (module docstring)."""
    output = dtype_of(layer.attrs["output_type"]) if layer.opset >= 4 else np.asarray(start).dtype
    if np.issubdtype(output, np.integer):
        bounds = cast_bounds(layer, start, stop, step)
        return arange(bounds[0], bounds[2], range_count(*bounds), output, output)
    bounds = [np.asarray(v).astype(np.float32)[()] for v in (start, stop, step)]
    if folded:
        return arange(bounds[0], bounds[2], folded_count(layer, start, stop, step), np.float32, output)
    return arange(bounds[0], bounds[2], range_count(*bounds, precision=np.float32), np.float32, output,
                  running_sum=True)


@builder("Range")
def _range(info: LayerInfo) -> LayerFn:
    layer = info.layer

    def run(args):
        if any(np.ndim(value) for value in args):
            raise InvalidModelError(f"the Range bounds must be scalars, got shapes {[list(np.shape(v)) for v in args]}")
        if layer.opset < 4 and len({np.asarray(v).dtype for v in args}) != 1:
            raise InvalidModelError("Range-1 takes start, stop and step of one type")
        return (ir_range(layer, *(np.asarray(v)[()] for v in args), info.folded),)
    return run


__all__ = ["ir_range"]
