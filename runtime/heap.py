"""Keep freed tensor memory in the process for the next run, instead of returning it to the kernel.

Both executors free each intermediate after its last use. With glibc's default malloc, the freed memory of
a large array goes back to the kernel (munmap for blocks above the dynamic mmap threshold, a trim of the
heap top above twice that), and the next run's arrays fault every 4 KiB page in again. Measured on the
ResNet-50-class benchmark network loaded from its file (benchmarks/bench_models.py): 8,100 page faults
and 12.8 ms of system time per 64.6 ms run; with the two settings below, 0 faults and 51.3 ms. Which case a
process hits depended on what it had allocated before (the same network built in memory happened to run
without the faults), so this also makes the timing repeatable.

`keep_freed_memory()` sets glibc's M_MMAP_THRESHOLD to its largest value (32 MiB on 64-bit: smaller blocks
come from the heap, whose freed space malloc reuses) and M_TRIM_THRESHOLD to 1 GiB (the heap is not given
back while less than that is free at its top). This is what onnxruntime's CPU memory arena does, in the
allocator every numpy array already uses: the process keeps up to its peak, and the peak does not grow.
The settings are process-wide and set once, at the first Session; POOLIR_KEEP_FREED_MEMORY=0 in the
environment leaves malloc as it is. Other C libraries (musl) have no mallopt, and nothing is changed there.
"""

from __future__ import annotations

import ctypes
import functools
import os

ENVIRONMENT_VARIABLE = "POOLIR_KEEP_FREED_MEMORY"

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_LARGEST_HEAP_BLOCK = 32 << 20   # glibc refuses a larger M_MMAP_THRESHOLD on 64-bit (HEAP_MAX_SIZE / 2)
_KEPT_AT_HEAP_TOP = 1 << 30


@functools.cache
def keep_freed_memory() -> bool:
    """Set glibc's malloc to keep freed memory (see the module doc), once per process; True if it is set."""
    if os.environ.get(ENVIRONMENT_VARIABLE, "1").strip() == "0" or not _is_glibc():
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # mallopt returns 1 on success. The trim threshold is only worth setting with the mmap threshold:
    # setting either one stops glibc's dynamic threshold, and a fixed 128 KiB one would mmap every tensor.
    return bool(mallopt(_M_MMAP_THRESHOLD, _LARGEST_HEAP_BLOCK)) and bool(mallopt(_M_TRIM_THRESHOLD, _KEPT_AT_HEAP_TOP))


def _is_glibc() -> bool:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc")
    except (ValueError, OSError, AttributeError):
        return False
