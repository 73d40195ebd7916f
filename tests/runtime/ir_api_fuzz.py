"""Differential fuzzer: valid IRs written by OpenVINO's own Python API, compared number by number.

Each case is one random valid layer (or a small chain) from ir_api_cases / ir_api_cases_more, built with the
`openvino.opsetN` factories and written three ways: `openvino.save_model` with and without f16 compression of
the constants, and `openvino.serialize`. OpenVINO's CPU plugin (f32 inference precision, tests/peers.py) runs
each file; it is the oracle. Every poolir path must give its numbers:

    ir:<writer>      poolir's IR runtime on OpenVINO's file
    onnx:ort         poolir's IR -> ONNX, run by onnxruntime
    onnx:poolir      poolir's IR -> ONNX, run by poolir's ONNX runtime
    writeback        poolir reads and writes the IR; OpenVINO reads poolir's file and runs it
    inspect          `poolir inspect` describes the file, and its inferred dims agree with OpenVINO's

An outcome is a Finding: a different number, shape, dtype or name ("mismatch"), an exception other than
PoolirError ("crash"), a PoolirError on a file OpenVINO runs ("refused": some are deliberate, see the README),
or a file OpenVINO refuses that poolir runs ("accepted"). Run on request:

    PYTHONPATH=... python -m tests.runtime.ir_api_fuzz --cases 300 --seed 1 [--only Pad,Slice] [--json out.json]
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import re
import tempfile
import traceback
from pathlib import Path
from typing import Callable

import numpy as np

from poolir.converter import peers
from tests.runtime.ir_api_cases import CASES as BASIC_CASES
from tests.runtime.ir_api_cases import Ctx
from tests.runtime.ir_api_cases_more import CASES as MORE_CASES

CASES = {**BASIC_CASES, **MORE_CASES}
WRITERS = ("save_model", "save_model_fp16", "serialize")
# Layers whose float results depend on summation order (OpenVINO's CPU kernels vectorise and block sums).
SUMMING = ("Convolution", "GroupConvolution", "MatMul", "Reduce", "SoftMax", "LRN", "Pooling", "AdaptivePool", "chain",
           "BatchNormInference")


@dataclasses.dataclass
class Finding:
    case: str
    seed: int
    path: str
    kind: str  # mismatch | crash | refused | accepted
    detail: str
    notes: str = ""

    def line(self) -> str:
        return f"{self.case} seed={self.seed} {self.path}: {self.kind}: {self.detail}  [{self.notes}]"


def build(case: str, seed: int):
    """The ov.Model of case `case` with `seed`, its feeds and the notes of its random choices."""
    import openvino as ov

    rng = np.random.default_rng(seed)
    ctx = Ctx(rng, dynamic=bool(rng.random() < 0.35))
    outputs = [o if hasattr(o, "get_tensor") else o.output(0) for o in CASES[case](ctx)]  # nodes -> outputs
    for index, output in enumerate(outputs):
        output.get_tensor().set_names({f"y{index}"})
    model = ov.Model(outputs, ctx.params, case)
    notes = " ".join(ctx.notes) + (" dynamic" if ctx.dynamic else "")
    return model, ctx.feeds, notes


def write(model, writer: str, folder: Path) -> Path:
    import openvino as ov

    path = folder / f"{writer}.xml"
    if writer == "serialize":
        ov.serialize(model, str(path), str(path.with_suffix(".bin")))
    else:
        ov.save_model(model, str(path), compress_to_fp16=writer.endswith("fp16"))
    return path


def difference(got: dict, want: dict, summing: bool) -> str | None:
    """The first way `got` differs from OpenVINO's `want` (names, shape, dtype, values), or None."""
    if sorted(got) != sorted(want):
        return f"outputs {sorted(got)} vs OpenVINO {sorted(want)}"
    for name, expected in want.items():
        actual = np.asarray(got[name])
        if actual.shape != expected.shape:
            return f"{name}: shape {list(actual.shape)} vs OpenVINO {list(expected.shape)}"
        if actual.dtype != expected.dtype:
            return f"{name}: dtype {actual.dtype} vs OpenVINO {expected.dtype}"
        if expected.dtype.kind in "iub":
            bad = actual != expected
        else:
            a, e = actual.astype(np.float64), expected.astype(np.float64)
            finite = e[np.isfinite(e)]
            scale = max(1.0, float(np.abs(finite).max())) if finite.size else 1.0
            rtol, atol = (2e-3, 2e-3 * scale) if expected.dtype == np.float16 else \
                ((1e-4, 1e-5 * scale) if summing else (1e-6, 1e-7))
            bad = ~(np.isclose(a, e, rtol=rtol, atol=atol) | (np.isnan(a) & np.isnan(e))
                    | ((a == e) & np.isinf(e)))
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            return (f"{name}: {int(bad.sum())} of {bad.size} differ; first at {list(where)}: {actual[where]!r} "
                    f"vs OpenVINO {expected[where]!r}")
    return None


def _attempt(run):
    """(outputs, None) or (None, ("refused"|"crash", message))."""
    from poolir.ir.errors import PoolirError

    try:
        return run(), None
    except PoolirError as error:
        return None, ("refused", str(error)[:300])
    except Exception as error:  # noqa: BLE001 - anything else from poolir is a bug, reported with its origin
        frame = traceback.extract_tb(error.__traceback__)[-1]
        return None, ("crash", f"{type(error).__name__}: {str(error)[:200]} at {Path(frame.filename).name}:"
                               f"{frame.lineno}")


def check(case: str, seed: int, work: Path) -> list[Finding]:
    """Every path of one case; the findings (empty when all agree with OpenVINO)."""
    from poolir import converter, ir, runtime
    from poolir.converter.describe import describe

    try:
        model, feeds, notes = build(case, seed)
    except RuntimeError as error:  # OpenVINO's own validation refused the drawn attributes: not a case
        return [Finding(case, seed, "build", "skipped", str(error).strip().splitlines()[-1][:200])]
    summing = case in SUMMING
    findings: list[Finding] = []

    def found(path, kind, detail):
        findings.append(Finding(case, seed, path, kind, detail, notes))

    for writer in WRITERS:
        folder = work / writer
        folder.mkdir(parents=True, exist_ok=True)
        path = write(model, writer, folder)
        try:
            want = peers.openvino_run_xml(path, feeds)
        except Exception as error:  # noqa: BLE001 - OpenVINO refused the file: poolir should refuse it too
            got, failure = _attempt(lambda: runtime.Session(ir.read_model(path)).run(feeds))
            if failure is None:
                found(f"ir:{writer}", "accepted", f"OpenVINO: {peers.peer_failure_summary(error)[:200]}")
            elif failure[0] == "crash":
                found(f"ir:{writer}", *failure)
            return findings
        got, failure = _attempt(lambda: runtime.Session(ir.read_model(path)).run(feeds))
        if failure:
            found(f"ir:{writer}", *failure)
        elif (diff := difference(got, want, summing)):
            found(f"ir:{writer}", "mismatch", diff)
        if writer != "save_model":
            continue
        description, failure = _attempt(lambda: describe(path))
        if failure:
            found("inspect", *failure)
        elif description.warnings:
            found("inspect", "mismatch", f"warning: {description.warnings[0][:300]}")
        onnx_model, failure = _attempt(lambda: converter.ir_to_onnx(ir.read_model(path)))
        if failure:
            found("onnx", *failure)
        else:
            got, failure = _attempt(lambda: runtime.Session(onnx_model).run(feeds))
            if failure or (diff := difference(got, want, summing)):
                found("onnx:poolir", *(failure or ("mismatch", diff)))
            try:
                got = peers.onnxruntime_run(onnx_model, feeds)
                if (diff := difference(got, want, summing)):
                    found("onnx:ort", "mismatch", diff)
            except Exception as error:  # noqa: BLE001 - onnxruntime refused poolir's ONNX
                found("onnx:ort", "refused", peers.peer_failure_summary(error)[:300])
        written = folder / "poolir.xml"
        _, failure = _attempt(lambda: ir.write_model(ir.read_model(path), written))
        if failure:
            found("writeback", *failure)
            continue
        try:
            if (diff := difference(peers.openvino_run_xml(written, feeds), want, summing)):
                found("writeback", "mismatch", diff)
        except Exception as error:  # noqa: BLE001 - OpenVINO refused poolir's file
            found("writeback", "refused", f"OpenVINO: {peers.peer_failure_summary(error)[:300]}")
    return findings


# Disagreements triaged as OpenVINO's or onnxruntime's, or as cases poolir does not model (README, "Layout"):
# (case, predicate on the finding) -> the reason. A finding none of these explains is a poolir bug to fix.
KNOWN: list[tuple[str, Callable[[Finding], bool], str]] = [
    ("Tile", lambda f: "repeats=[]" in f.notes,
     "OpenVINO's Tile with empty repeats returns uninitialised memory (the spec: the output is the input)"),
    ("Pooling", lambda f: "kind=max" in f.notes and "version=1 " not in f.notes and "auto_pad=same" in f.notes
     and f.notes.endswith("dynamic"),
     "OpenVINO's MaxPool-8/14 with its indices used pads (0, total) for same_* on a dynamic dim"),
    ("StridedSlice", lambda f: re.search(r"new_axis_mask=\[[^]]*1", f.notes) is not None
     and re.search(r"shrink_mask=\[[^]]*1", f.notes) is not None,
     "OpenVINO's StridedSlice with new_axis_mask and shrink_axis_mask together returns garbage"),
    ("PReLU", lambda f: f.notes.endswith("dynamic") and "shape" in f.detail,
     "OpenVINO's PReLU on a dynamic channel dim broadcasts the channels to the slope's length"),
    ("Convert", lambda f: "source=f64" in f.notes,
     "OpenVINO converts an f64 input at the boundary, saturating (not modelled)"),
    ("Tile", lambda f: len(re.findall(r"[2-9]", f.notes.split("repeats=")[-1])) >= 3,
     "OpenVINO's CPU plugin tiles wrong when three or more axes repeat (README, whole networks: Tile)"),
    ("StridedSlice", lambda f: _backwards_from_before_start(f.notes, "begin", "strides"),
     "OpenVINO starts a backward slice whose begin is before the axis at element 0; the spec: python's rules"),
    ("Slice", lambda f: _backwards_from_before_start(f.notes, "start", "step"),
     "OpenVINO starts a backward slice whose start is before the axis at element 0; the spec: python's rules"),
    ("Reduce", lambda f: ("type=i8" in f.notes and re.search(r"op=Reduce(Sum|Mean) ", f.notes) is not None)
     or ("type=u8" in f.notes and "op=ReduceL2 " in f.notes),
     "an i8 sum that overflows and comes back, or u8 ReduceL2 past 255: not modelled"),
]


def _backwards_from_before_start(notes: str, begin: str, step: str) -> bool:
    """Whether a slice's notes may hold a negative step whose begin lies before its axis (x[-9::-1] of a dim < 9:
    python gives nothing, OpenVINO 2026.4 one element)."""
    found = {key: re.search(rf"\b{key}=\[([^]]*)\]", notes) for key in ("shape", begin, step)}
    if not all(found.values()):
        return False
    values = {key: [int(v) for v in m.group(1).split(",") if v.strip()] for key, m in found.items()}
    return any(s < 0 and b < -min(values["shape"], default=0) for b, s in zip(values[begin], values[step]))


def known_reason(finding: Finding, findings: list[Finding]) -> str | None:
    """Why `finding` is not a poolir bug, or None. onnxruntime disagreeing where poolir's own run of the same ONNX
    agrees with OpenVINO is onnxruntime's deviation from the spec (converter/ir_to_onnx/onnxruntime_gaps.py)."""
    for case, applies, reason in KNOWN:
        if finding.case == case and applies(finding):
            return reason
    if finding.path == "onnx:ort" and not any(f.case == finding.case and f.seed == finding.seed
                                              and f.path == "onnx:poolir" for f in findings):
        return "onnxruntime computes otherwise than the ONNX spec, which poolir's ONNX runtime follows"
    return None


def fuzz(cases: int, seed: int, only: list[str] | None = None, work: Path | None = None, echo=None, start: int = 0):
    """Cases start .. cases-1, the generators taken in turn; returns (findings, cases run per generator)."""
    names = only or sorted(CASES)
    counts: collections.Counter = collections.Counter()
    findings: list[Finding] = []
    with tempfile.TemporaryDirectory() as tmp:
        for index in range(start, cases):
            name = names[index % len(names)]
            case_seed = seed * 1_000_003 + index
            if echo:
                echo(f"# case {index}: {name} seed={case_seed}")
            new = check(name, case_seed, Path(work or tmp) / f"{index}")
            for finding in new if echo else ():
                echo(finding.line())
            findings += new
            counts[name] += 1
    return findings, counts


def supervise(args):
    """Run the cases in a child process, restarting it after the case that killed it (a peer that crashes,
    as OpenVINO 2026.4 does on a Broadcast to an empty target shape, is a finding too)."""
    import subprocess
    import sys

    findings, counts, start = [], collections.Counter(), 0
    while start < args.cases:
        child = subprocess.run([sys.executable, "-m", "tests.runtime.ir_api_fuzz", "--cases", str(args.cases),
                                "--seed", str(args.seed), "--only", args.only, "--start", str(start)],
                               capture_output=True, text=True)
        last, last_case = start - 1, "?"
        for line in child.stdout.splitlines():
            print(line, flush=True)
            if line.startswith("# case "):
                last, last_case = int(line.split()[2].rstrip(":")), line.split()[3]
                counts[last_case] += 1
            elif " seed=" in line:
                case, rest = line.split(" seed=", 1)
                head, kind, detail = rest.split(": ", 2)
                detail, _, notes = detail.rpartition("  [")
                findings.append(Finding(case, int(head.split()[0]), head.split()[1], kind, detail, notes[:-1]))
        if child.returncode != 0:
            finding = Finding(last_case, last, "process", "crash", f"exit {child.returncode} in case {last}")
            print(finding.line(), flush=True)
            findings.append(finding)
        start = last + 1 if child.returncode != 0 else args.cases
    return findings, counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", default="")
    parser.add_argument("--json", default="")
    parser.add_argument("--start", type=int, default=-1, help="(internal) run cases from here in this process")
    args = parser.parse_args()
    only = [name for name in args.only.split(",") if name] or None
    if args.start >= 0:
        fuzz(args.cases, args.seed, only, echo=lambda line: print(line, flush=True), start=args.start)
        return
    findings, counts = supervise(args)
    unexplained = [f for f in findings if f.kind in ("mismatch", "crash") and not known_reason(f, findings)]
    print(f"{len(unexplained)} mismatches or crashes not explained by OpenVINO's, onnxruntime's or known gaps:")
    for finding in unexplained:
        print("  " + finding.line())
    print(f"{sum(counts.values())} cases, {len(findings)} findings: "
          + ", ".join(f"{k} {v}" for k, v in collections.Counter(f.kind for f in findings).items()))
    if args.json:
        Path(args.json).write_text(json.dumps([dataclasses.asdict(f) for f in findings], indent=1))


if __name__ == "__main__":
    main()
