"""Mutation fuzzer over whole networks: every CLI command on every mutant, each in its own process with a memory
cap and a time limit, checked against the CLI contract (DESIGN.md, "Command line" and "Bad input").

A mutant is one base of network_bases.py (a torchvision-shaped network as either exporter writes it, OpenVINO's
IR of it, poolir's IR of it, poolir's ONNX of OpenVINO's IR, or an operator zoo) with 1-3 mutations of
network_mutations.py or onnx_mutations.py. `inspect`, `inspect --json`, `run -o`, `convert -o` and
`verify --report` run on it; a finding is any of:

    exit      an exit code other than 0 or 2 (1 only from verify): 3 is poolir's "internal error"
    traceback "Traceback" on stdout or stderr
    message   exit 2 without exactly one "poolir: error:" line naming the file
    hang      still running after the time limit (60 s)
    memory    more than MEMORY_MB of resident memory, or killed by the address-space cap
    leftover  an output file (or a temporary) left behind by a failing command; an input file modified
    peer      exit 0 from convert with an output its peer refuses (onnx.checker + onnxruntime for .onnx,
              OpenVINO read + compile for .xml) although the peer of the input accepts the input

Each command runs in a forked child of a process that has imported poolir once (the CLI's own entry point,
`main(args)`, exit code from SystemExit), so a mutant costs milliseconds of start-up instead of a second.

Run on request (not a test): python -m tests.robustness.network_fuzz --cases 500 --seed 1 --work /tmp/nf
The fixed-seed, bounded run that CI keeps is test_network_fuzz.py.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import io
import json
import os
import random
import re
import resource
import shutil
import signal
import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import onnx

from tests.robustness.network_bases import Base
from tests.robustness.network_mutations import mutate_ir
from tests.robustness.onnx_mutations import mutate_onnx

EXITS: Counter = Counter()  # (command, exit code) -> how often: how deep the mutants reach
TIME_LIMIT = 60.0
CAP_MB = 4096  # address-space cap: far above what the small networks need (OpenVINO maps ~1.5 GB)
MEMORY_MB = 2500  # resident memory above this is a blow-up (the default tensor budget is 2 GiB)


@dataclass
class Outcome:
    args: list[str]
    code: int | None  # None: killed (time limit or a signal)
    stdout: str
    stderr: str
    seconds: float
    rss_mb: float


@dataclass
class Finding:
    kind: str
    command: str
    detail: str
    case: str
    mutations: list[str] = field(default_factory=list)

    def signature(self) -> str:
        text = re.sub(r"/\S+", "<path>", self.detail)
        text = re.sub(r"'[^']*'", "'…'", text)
        text = re.sub(r"\d+", "N", text)
        return f"{self.kind} {self.command.split()[0]} {text[:160]}"


def _child(args: list[str], cwd: Path, out: Path, err: Path) -> None:
    code = 1
    try:
        os.chdir(cwd)
        cap = CAP_MB << 20
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        for fd, path in ((1, out), (2, err)):
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(handle, fd)
            os.close(handle)
        sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), write_through=True)
        sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", closefd=False), write_through=True)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from poolir.converter.cli import main

        try:
            main.main(args=args, prog_name="poolir", standalone_mode=True)
            code = 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except BaseException:  # what Python itself would do with an uncaught exception
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def run_command(args: list[str], cwd: Path, time_limit: float = TIME_LIMIT) -> Outcome:
    """`poolir ARGS` in a forked child under the caps; stdout and stderr captured through files."""
    out, err = cwd / ".fuzz_stdout", cwd / ".fuzz_stderr"
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(args, cwd, out, err)
    code = None
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            code = None if code < 0 else code
            break
        if time.monotonic() - start > time_limit:
            os.kill(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            break
        time.sleep(0.005)
    seconds = time.monotonic() - start
    outcome = Outcome(args, code, out.read_text(errors="replace"), err.read_text(errors="replace"), seconds,
                      usage.ru_maxrss / 1024)
    out.unlink()
    err.unlink()
    return outcome


def _digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def check_outcome(outcome: Outcome, model: Path, outputs: list[Path], allowed=(0, 2)) -> list[tuple[str, str]]:
    """The contract for one command: a list of (kind, detail), empty when kept."""
    problems = []
    command = " ".join(outcome.args)
    if outcome.code is None:
        kind = "hang" if outcome.seconds > TIME_LIMIT else "memory"
        problems.append((kind, f"killed after {outcome.seconds:.1f} s; stderr {outcome.stderr[-300:]!r}"))
        return problems
    if "Traceback" in outcome.stderr or "Traceback" in outcome.stdout:
        problems.append(("traceback", outcome.stderr.strip().splitlines()[-1] if outcome.stderr.strip() else command))
    if outcome.code not in allowed:
        problems.append(("exit", f"exit {outcome.code}: {outcome.stderr.strip()[-300:]!r}"))
    if outcome.code == 2:
        errors = [line for line in outcome.stderr.splitlines() if line.startswith("poolir: error:")]
        others = [line for line in outcome.stderr.splitlines()
                  if line.strip() and not line.startswith(("poolir: error:", "poolir: warning:"))]
        if len(errors) != 1 or others:
            problems.append(("message", f"stderr is not one error line: {outcome.stderr.strip()[:300]!r}"))
        elif str(model) not in errors[0] and model.name not in errors[0]:
            problems.append(("message", f"the error does not name the file: {errors[0][:300]}"))
    if outcome.code not in (0, 1):
        left = [p.name for p in outputs if p.exists()]
        if left:
            problems.append(("leftover", f"exit {outcome.code} left {left} behind"))
    if outcome.rss_mb > MEMORY_MB:
        problems.append(("memory", f"{outcome.rss_mb:.0f} MB resident"))
    return problems


_PEER_CHECK = """
import sys, os
path = sys.argv[1]
if path.endswith('.onnx'):
    import onnx, onnxruntime
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    onnxruntime.InferenceSession(path, providers=['CPUExecutionProvider'])
else:
    import openvino
    core = openvino.Core()
    core.compile_model(core.read_model(path), 'CPU')
"""


def peer_accepts(path: Path, cwd: Path) -> tuple[bool, str]:
    """Whether the file's own peer loads it: onnx.checker and onnxruntime for .onnx, OpenVINO for .xml."""
    import subprocess

    env = dict(os.environ, OPENVINO_TELEMETRY_ENABLE="0")  # no network from a fuzz run
    try:
        done = subprocess.run([sys.executable, "-c", _PEER_CHECK, str(path)], capture_output=True, text=True,
                              timeout=TIME_LIMIT, cwd=cwd, env=env)
    except subprocess.TimeoutExpired:
        return False, "the peer timed out"
    lines = done.stderr.strip().splitlines()
    return done.returncode == 0, (lines[-1] if lines else "")[:300]


def prepare(base: Base, rng: random.Random, folder: Path) -> tuple[Path, list[str]]:
    """Copy `base` into `folder`, mutate it 1-3 times; returns the mutant's path and what was done."""
    folder.mkdir(parents=True)
    count = rng.choice((1, 1, 2, 3))
    if base.kind == "xml":
        weights_path = base.path.with_suffix(".bin")
        weights = weights_path.read_bytes() if weights_path.exists() else None
        xml, weights, done = mutate_ir(rng, base.path.read_bytes(), weights, count)
        target = folder / "model.xml"
        target.write_bytes(xml)
        if weights is not None:
            target.with_suffix(".bin").write_bytes(weights)
        return target, done
    model = onnx.load(base.path, load_external_data=False)
    for sibling in base.path.parent.glob("*.data"):
        shutil.copy(sibling, folder / sibling.name)
    done = mutate_onnx(rng, model, folder, count)
    target = folder / "model.onnx"
    target.write_bytes(model.SerializeToString())
    return target, done


def fuzz_case(base: Base, seed: int, work: Path, peers: bool = True) -> list[Finding]:
    rng = random.Random(seed)
    folder = work / f"case{seed}"
    model, mutations = prepare(base, rng, folder)
    case = f"seed {seed}, base {base.name}"
    inputs = [p for p in (model, model.with_suffix(".bin")) if p.exists()]
    before = [_digest(p) for p in inputs]
    converted = folder / ("out.onnx" if model.suffix == ".xml" else "out.xml")
    commands = [(["inspect", str(model)], []), (["inspect", str(model), "--json"], []),
                (["run", str(model), "-o", str(folder / "out.npz")], [folder / "out.npz"]),
                (["convert", str(model), "-o", str(converted)], [converted, converted.with_suffix(".bin")]),
                # verify writes its whole report even when a model is invalid (that model is a row "error")
                (["verify", str(model), "--report", str(folder / "report.json")], [])]
    findings = []
    convert_ok = False
    for args, outputs in commands:
        outcome = run_command(args, folder)
        allowed = (0, 1, 2) if args[0] == "verify" else (0, 2)
        EXITS[" ".join(a for a in args if a.startswith("-") or a in ("inspect", "run", "convert", "verify")),
              outcome.code] += 1
        for kind, detail in check_outcome(outcome, model, outputs, allowed):
            findings.append(Finding(kind, " ".join(args[:1] + args[2:3]), detail, case, mutations))
        convert_ok |= args[0] == "convert" and outcome.code == 0
    report = folder / "report.json"
    if report.exists():
        try:
            json.loads(report.read_text())
        except ValueError as error:
            findings.append(Finding("leftover", "verify", f"report.json is not JSON: {error}", case, mutations))
    temporaries = [p.name for p in folder.iterdir() if p.name.startswith(".") and not p.name.startswith(".fuzz")]
    if temporaries:
        findings.append(Finding("leftover", "any", f"temporaries {temporaries}", case, mutations))
    if [_digest(p) for p in inputs] != before:
        findings.append(Finding("leftover", "any", "an input file was modified", case, mutations))
    if peers and convert_ok:
        accepted, why = peer_accepts(converted, folder)
        if not accepted and peer_accepts(model, folder)[0]:
            findings.append(Finding("peer", "convert", why, case, mutations))
    if not findings:
        shutil.rmtree(folder, ignore_errors=True)
    return findings


def fuzz(bases: list[Base], cases: int, seed: int, work: Path, peers: bool = True, log=None) -> list[Finding]:
    """`cases` mutants from `seed` on; the bases are taken in turn (case i mutates bases[i % len(bases)])."""
    findings = []
    for index in range(cases):
        base = bases[(seed + index) % len(bases)]
        found = fuzz_case(base, seed + index, work, peers)
        findings += found
        if log is not None:
            for finding in found:
                log(f"[{finding.case}] {finding.kind} in `{finding.command}`: {finding.detail} "
                    f"<- {'; '.join(finding.mutations)}")
    return findings


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--only", default="", help="substring a base's name must contain")
    parser.add_argument("--networks", default="", help="comma-separated torchvision network names to build bases "
                        "of (default: all); the operator zoos are always built")
    options = parser.parse_args(argv)
    bases_folder = options.work / "bases"
    if not bases_folder.exists():  # in another process: OpenVINO's threads are not to be forked
        import subprocess

        subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; "
                        "from tests.robustness.network_bases import build_bases; "
                        "build_bases(Path(sys.argv[1]), sys.argv[2].split(',') if sys.argv[2] else None)",
                        str(bases_folder), options.networks], check=True)
    bases = _existing(bases_folder)
    importlib.import_module("poolir.converter.cli")  # imported once, before the children fork
    bases = [b for b in bases if options.only in b.name]
    started = time.monotonic()
    findings = fuzz(bases, options.cases, options.seed, options.work / "cases", not options.no_peers,
                    log=lambda line: print(line, flush=True))
    unique = {f.signature(): f for f in findings}
    print(f"{options.cases} mutants of {len(bases)} bases in {time.monotonic() - started:.0f} s: "
          f"{len(findings)} findings, {len(unique)} distinct")
    print("exit codes:", ", ".join(f"{command} {code}: {count}" for (command, code), count in sorted(EXITS.items(),
                                                                                                   key=str)))
    for signature in sorted(unique):
        print("  ", signature, "|", unique[signature].case)
    return 1 if findings else 0


def _existing(folder: Path) -> list[Base]:
    paths = sorted(p for p in folder.glob("*/*") if p.suffix in (".onnx", ".xml"))
    return [Base(f"{p.parent.name}/{p.name}", p) for p in paths]


if __name__ == "__main__":
    sys.exit(main())
