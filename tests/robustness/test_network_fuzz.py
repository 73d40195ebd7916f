"""The whole-network mutation fuzzer (network_fuzz.py), bounded and with a fixed seed, so CI keeps it: 150 mutants
of five torchvision-shaped networks (both exporter styles, OpenVINO's IR and poolir's IR of each, poolir's ONNX
of OpenVINO's IR) and the two operator zoos, every CLI command on each, in a fresh process (the fuzzer forks a
child per command, which must not happen under a pytest process that has OpenVINO's threads running).

A failure prints each finding with its seed and mutations: reproduce one with
    python -m tests.robustness.network_fuzz --cases 1 --seed SEED --work /tmp/nf
(with the same --networks; the base is picked from the seed).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

NETWORKS = "resnet_basic,inception,mobilenet_v3,shufflenet_v2,densenet"


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="the fuzzer caps each command with RLIMIT_AS and fork()")
def test_whole_network_mutants_keep_the_cli_contract(tmp_path):
    done = subprocess.run([sys.executable, "-m", "tests.robustness.network_fuzz", "--cases", "150", "--seed", "7",
                           "--work", str(tmp_path), "--networks", NETWORKS],
                          capture_output=True, text=True, timeout=3000, cwd=Path(__file__).parents[2])
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "0 findings" in done.stdout, done.stdout[-3000:]
