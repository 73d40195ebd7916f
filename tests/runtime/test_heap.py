"""runtime.heap: a repeated run reuses the memory its freed tensors held instead of faulting it in again.

Counted, not timed: the minor page faults of the fifth to ninth run of a network whose four 3.2 MB branches
live at once and are then freed, in a fresh interpreter (the setting is process-wide and set once).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from poolir.runtime.heap import ENVIRONMENT_VARIABLE, _is_glibc

pytestmark = pytest.mark.skipif(not _is_glibc(), reason="the setting is glibc's mallopt")

_FAULTS_PER_RUN = r"""
import resource
import numpy as np
from onnx import TensorProto, helper, numpy_helper
from poolir import runtime

rng = np.random.default_rng(0)
weights = numpy_helper.from_array(rng.standard_normal((64, 64, 1, 1)).astype(np.float32), "w")
nodes = [helper.make_node("Conv", ["x", "w"], [f"branch{i}"]) for i in range(4)]
nodes += [helper.make_node("Sum", [f"branch{i}" for i in range(4)], ["sum"]),
          helper.make_node("MaxPool", ["sum"], ["y"], kernel_shape=[4, 4], strides=[4, 4])]
graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 112, 112])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 28, 28])], [weights])
session = runtime.Session(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
feeds = {"x": rng.standard_normal((1, 64, 112, 112)).astype(np.float32)}
for _ in range(4):
    session.run(feeds)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    session.run(feeds)
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 5)
"""


def _faults_per_run(keep: str) -> float:
    env = dict(os.environ, **{ENVIRONMENT_VARIABLE: keep})
    done = subprocess.run([sys.executable, "-c", _FAULTS_PER_RUN], capture_output=True, text=True, env=env,
                          check=True)
    return float(done.stdout.split()[-1])


def test_a_repeated_run_faults_no_pages_in_again():
    assert _faults_per_run("1") < 50


def test_without_the_setting_glibc_returns_the_freed_branches_to_the_kernel():
    # The case the setting is for: 4,700 faults (18 MB) per run on this network with glibc's defaults.
    assert _faults_per_run("0") > 1000
