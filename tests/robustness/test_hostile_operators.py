"""The whole-model operators against hostile files (tests/robustness/hostile_operators.py): every case runs
`poolir run` with its expected exit code and message, all in one subprocess under a 3 GB address-space cap
(RLIMIT_AS: a regression that allocates fails cleanly instead of eating the machine) and a time guard.

What they pin: an allocation whose size only the run decides (Tile repeats, Expand/Broadcast shapes,
ConstantOfShape, Pad widths, Concat of one tensor 64 times, Gather by computed indices, im2col columns of a
kernel larger than a tiny input) is refused before it is made, naming the file, the node and the size; the
tensors live at once count, not each alone; Split's num_outputs, Slice's extreme and zero steps, rank 70 and a
Reshape to impossible dims are one clear refusal (or, for the extreme slice, a result)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.robustness.harness import FAILED_CLEANLY, TRIED
from tests.robustness.hostile_operators import IR_CASES, ONNX_CASES

CAP_BYTES = 3 << 30
_RUNNER = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap}))
from click.testing import CliRunner
from poolir.converter.cli import main
results = {{}}
for name, args in json.loads(sys.stdin.read()).items():
    outcome = CliRunner().invoke(main, args)
    crashed = outcome.exception is not None and not isinstance(outcome.exception, SystemExit)
    results[name] = [outcome.exit_code, outcome.stdout, outcome.stderr, repr(outcome.exception) if crashed else None]
print(json.dumps(results))
"""

CASES = {name: (build, code, fragment) for name, build, code, fragment in ONNX_CASES + IR_CASES}
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS caps the address space only on Linux")


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict:
    folders, commands = {}, {}
    for name, (build, _, _) in CASES.items():
        folders[name] = tmp_path_factory.mktemp(name)
        commands[name] = [str(arg) for arg in build(folders[name])]
    done = subprocess.run([sys.executable, "-c", _RUNNER.format(cap=CAP_BYTES)], input=json.dumps(commands),
                          capture_output=True, text=True, timeout=30 * len(commands),
                          cwd=Path(__file__).parents[2])
    assert done.returncode == 0, done.stderr[-2000:]
    return {name: (folders[name], *result) for name, result in json.loads(done.stdout).items()}


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_operator(outcomes, name):
    _, expected_code, fragment = CASES[name]
    folder, code, stdout, stderr, crash = outcomes[name]
    TRIED["operators.cli"] += 1
    assert crash is None, crash
    assert code == expected_code, stderr
    if code == 2:
        FAILED_CLEANLY["operators.cli"] += 1
        lines = stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"poolir: error: {folder}"), stderr
        assert fragment in lines[0], lines[0]
    else:
        assert fragment in stdout, stdout
