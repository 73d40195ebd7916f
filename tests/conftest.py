"""Test-session settings that must hold before numpy is imported.

The tests run onnxruntime and OpenVINO in the same process as poolir. OpenVINO's worker threads and
OpenBLAS's own (numpy's BLAS, two threads on this machine's two cores) spin-wait for the same cores, and a
convolution's matrix product then ran 10-100x slower (a whole-network test stalled for minutes). The tests
check numbers, not speed, so numpy's BLAS runs one thread here; benchmarks/ measure speed with the defaults.
"""

import os

for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(variable, "1")
