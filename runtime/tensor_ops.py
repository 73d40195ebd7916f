"""Compatibility path for the non-pooling kernels, which now live by family in runtime.kernels
(elementwise, reduction, movement, precision). Re-exported while the converter and the tests move over."""

from poolir.runtime.kernels.elementwise import cast, divide, modulo, power, unary_float
from poolir.runtime.kernels.movement import even_split_sizes, pad, reshape, slice_axes, split
from poolir.runtime.kernels.precision import LOW_PRECISION_FLOATS, accumulation_dtype, is_float
from poolir.runtime.kernels.reduction import REDUCTIONS, reduce

__all__ = ["LOW_PRECISION_FLOATS", "REDUCTIONS", "accumulation_dtype", "cast", "divide", "even_split_sizes",
           "is_float", "modulo", "pad", "power", "reduce", "reshape", "slice_axes", "split", "unary_float"]
