"""numpy kernels, one module per operator family: pooling, elementwise, movement, reduction.

The pooling kernels' public API is re-exported here (`from poolir.runtime import kernels`;
`kernels.max_pool`, ...): the converter, the tests and the benchmarks use that path.
"""

from poolir.runtime.kernels.pooling import (DIVISORS, IndexLayout, avg_pool, global_pool, lowest_value, lp_pool,
                                            max_pool, release_work_arrays)

__all__ = ["DIVISORS", "IndexLayout", "avg_pool", "global_pool", "lowest_value", "lp_pool", "max_pool",
           "release_work_arrays"]
