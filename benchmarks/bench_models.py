"""Time whole networks at 1x3x224x224 float32: poolir's runtime against onnxruntime and OpenVINO, with peak memory.

    python benchmarks/bench_models.py [--repeat N] [--rounds R] [--only resnet50,mobilenet_v3_large]
        [--blas-threads N]

Networks: a ResNet-50-class and a GoogLeNet-class network (the ONNX model zoo's light_resnet50 and
light_inception_v1 graphs with seeded random weights, tests/networks/zoo.py) and a MobileNetV3-Large-class
network (benchmarks/mobilenet_v3_large.py, torchvision's layer table in the TorchScript exporter's style).

Engines, each in its own subprocess (so that peak memory is that engine's alone):
    poolir        runtime.Session(model).run(feeds), planned once
    ort-1         onnxruntime, 1 intra-op thread, default graph optimisation
    ort-default   onnxruntime with its default thread count
    openvino      OpenVINO CPU from the ONNX file (its own frontend), f32 precision, default threads
Each engine is timed as the median of --repeat runs after two warm-up runs, and all engines run in turn
--rounds times: a time ratio is the median over the rounds of poolir / peer within one round (printed with its
range, a measure of the noise on a shared machine). Peak memory is the process's
peak resident set (VmHWM in /proc/self/status) minus its resident set after the imports and the feeds, the
peak being reset there (writing 5 to /proc/self/clear_refs), so the engines' library sizes do not count.
Resident set, not tracemalloc: onnxruntime and OpenVINO allocate outside Python's allocator, and one measure
for every engine is the only fair one. (ru_maxrss is no use here: Linux carries it over from the parent
through fork and exec, so every worker reported the parent's peak.)
numpy's OpenBLAS runs poolir's matrix products: the poolir worker gets OPENBLAS_NUM_THREADS and
OMP_NUM_THREADS from --blas-threads (default 1; 0 leaves OpenBLAS's default, one thread per core). On a
shared machine OpenBLAS's default threads spin on cores other jobs hold: MobileNetV3 took 0.2-0.85 s instead
of 26 ms (benchmarks/bench_convolution.py measured the same per layer). Every peer's output is compared with poolir's
(printed on a mismatch), so a fast wrong answer cannot hide. A network that poolir refuses (an operator not
implemented yet) is skipped with poolir's reason.

The table: milliseconds per engine, the ratio poolir / peer (below 1: poolir is faster), peak memory in MiB
and its ratio, and the geometric mean of each ratio column over the networks that ran.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

NETWORKS = ("resnet50", "inception_v1", "mobilenet_v3_large")
ENGINES = ("poolir", "ort-1", "ort-default", "openvino")
PEERS = ENGINES[1:]


def build(name: str, folder: Path) -> tuple[Path, Path]:
    """The network's .onnx and an .npz of its feeds, written into `folder`."""
    if name == "mobilenet_v3_large":
        from benchmarks.mobilenet_v3_large import mobilenet_v3_large
        model = mobilenet_v3_large()
        rng = np.random.default_rng(0)
        feeds = {model.graph.input[0].name: rng.standard_normal((1, 3, 224, 224)).astype(np.float32)}
    else:
        from tests.networks.zoo import light_model, random_feeds
        model = light_model(name, 0)
        feeds = random_feeds(model, 0)
    if model.ir_version > 10:
        model.ir_version = 10  # onnxruntime 1.31 reads up to IR version 13; onnx 1.23 stamps 14
    path = folder / f"{name}.onnx"
    onnx.save(model, path)
    np.savez(folder / f"{name}.npz", **feeds)
    return path, folder / f"{name}.npz"


def _status_kib(field: str) -> int:
    """A memory figure of this process in KiB from /proc/self/status (VmRSS: now; VmHWM: the peak)."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def _reset_peak() -> int:
    """Reset the peak resident set to the current one (Linux clear_refs 5) and return it in KiB."""
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")
    return _status_kib("VmRSS")


def worker(engine: str, model_path: str, feeds_path: str, repeat: int, out_path: str) -> dict:
    """Run in a subprocess: load, warm up, time; returns ms, peak memory and writes the first output."""
    import onnxruntime as ort
    import openvino as ov
    from poolir import runtime
    from poolir.ir.errors import PoolirError

    feeds = dict(np.load(feeds_path))
    baseline = _reset_peak()
    try:
        if engine == "poolir":
            session = runtime.Session(onnx.load(model_path))

            def run():
                return list(session.run(feeds).values())[0]
        elif engine.startswith("ort"):
            options = ort.SessionOptions()
            if engine == "ort-1":
                options.intra_op_num_threads = 1
                options.inter_op_num_threads = 1
            options.log_severity_level = 3
            sess = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])

            def run():
                return sess.run(None, feeds)[0]
        else:
            compiled = ov.Core().compile_model(ov.convert_model(model_path), "CPU",
                                               {"INFERENCE_PRECISION_HINT": "f32"})
            request = compiled.create_infer_request()

            def run():
                return np.array(request.infer(list(feeds.values()))[compiled.outputs[0]])
        output = run()
        run()
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            run()
            times.append((time.perf_counter() - start) * 1000)
    except PoolirError as error:
        return {"refused": str(error)}
    np.save(out_path, np.asarray(output))
    peak = _status_kib("VmHWM")
    return {"ms": statistics.median(times), "peak_mib": (peak - baseline) / 1024}


def _spawn(engine: str, model: Path, feeds: Path, repeat: int, out: Path, blas_threads: int) -> dict:
    command = [sys.executable, __file__, "--worker", engine, str(model), str(feeds), str(repeat), str(out)]
    env = dict(os.environ)
    if engine == "poolir" and blas_threads:
        env.update(OPENBLAS_NUM_THREADS=str(blas_threads), OMP_NUM_THREADS=str(blas_threads))
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env)
    if done.returncode != 0:
        return {"failed": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _geomean(values) -> float:
    values = [v for v in values if v and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--only", default=",".join(NETWORKS))
    parser.add_argument("--rounds", type=int, default=3, help="rounds of all engines in turn (ratios per round)")
    parser.add_argument("--blas-threads", type=int, default=1,
                        help="OpenBLAS threads for poolir's matrix products (0: OpenBLAS's default)")
    parser.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        engine, model, feeds, repeat, out = args.worker
        print(json.dumps(worker(engine, model, feeds, int(repeat), out)))
        return 0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name in args.only.split(","):
            print(f"{name}: building", file=sys.stderr)
            model, feeds = build(name, folder)
            rounds = []
            for number in range(args.rounds):
                results = {}
                for engine in ENGINES:
                    print(f"{name}: round {number + 1}, {engine}", file=sys.stderr)
                    results[engine] = _spawn(engine, model, feeds, args.repeat, folder / f"{name}-{engine}.npy",
                                             args.blas_threads)
                    if engine == "poolir" and "ms" not in results[engine]:
                        break
                rounds.append(results)
                if "ms" not in results["poolir"]:
                    break
            if "ms" not in rounds[0]["poolir"]:
                reason = rounds[0]["poolir"].get("refused") or rounds[0]["poolir"].get("failed")
                print(f"{name}: skipped, poolir cannot run it: {reason}")
                continue
            _compare_outputs(name, folder, rounds[-1])
            rows.append((name, _summary(rounds)))
    if not rows:
        print("no network ran")
        return 0
    _print_table(rows, args)
    return 0


def _compare_outputs(name: str, folder: Path, results: dict) -> None:
    ours = np.load(folder / f"{name}-poolir.npy")
    for engine in PEERS:
        if "ms" not in results[engine]:
            print(f"{name}: {engine} failed: {results[engine]}", file=sys.stderr)
            continue
        theirs = np.load(folder / f"{name}-{engine}.npy")
        scale = float(np.max(np.abs(theirs))) if theirs.size else 0.0
        if theirs.shape != ours.shape or not np.allclose(ours, theirs, rtol=1e-3, atol=1e-5 * max(scale, 1.0)):
            print(f"{name}: {engine}'s output differs from poolir's (max |diff| "
                  f"{np.max(np.abs(ours - theirs)) if theirs.shape == ours.shape else 'shape'}, max |output| "
                  f"{scale:.3g})", file=sys.stderr)


def _summary(rounds: list[dict]) -> dict:
    """Per engine: median ms and peak over the rounds; per peer: the per-round ratios poolir / peer."""
    summary = {}
    for engine in ENGINES:
        done = [r[engine] for r in rounds if "ms" in r.get(engine, {})]
        if done:
            summary[engine] = {"ms": statistics.median(d["ms"] for d in done),
                               "peak_mib": statistics.median(d["peak_mib"] for d in done)}
    for peer in PEERS:
        summary[f"ratios/{peer}"] = [r["poolir"]["ms"] / r[peer]["ms"] for r in rounds
                                     if "ms" in r.get(peer, {}) and "ms" in r["poolir"]]
    return summary


def _print_table(rows, args) -> None:
    threads = args.blas_threads or "OpenBLAS's default"
    # OpenBLAS picks its kernels for the CPU unless OPENBLAS_CORETYPE names them: on an AVX-512 CPU pinned to
    # Haswell's AVX2 kernels, float32 GEMM runs at about half speed (benchmarks/README.md), so the table says which.
    kernels = os.environ.get("OPENBLAS_CORETYPE") or "OpenBLAS's own choice"
    print(f"poolir with {threads} BLAS thread(s), OpenBLAS kernels: {kernels}; each engine the median of "
          f"{args.repeat} runs in its own process, "
          f"{args.rounds} round(s) of all engines in turn; a time ratio is the median over the rounds of "
          f"poolir / peer within one round [its range]; memory: peak RSS above the post-import baseline")
    header = ["network", "poolir ms"] + [f"/ {p}" for p in PEERS] + ["poolir MiB"] + [f"mem / {p}" for p in PEERS]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    time_ratios = {p: [] for p in PEERS}
    memory_ratios = {p: [] for p in PEERS}
    for name, summary in rows:
        ours = summary["poolir"]
        cells = [name, f"{ours['ms']:.1f}"]
        for peer in PEERS:
            ratios = summary[f"ratios/{peer}"]
            ratio = statistics.median(ratios) if ratios else float("nan")
            time_ratios[peer].append(ratio)
            spread = f" [{min(ratios):.3g}-{max(ratios):.3g}]" if len(ratios) > 1 else ""
            cells.append(f"{ratio:.3g}{spread}")
        cells.append(f"{ours['peak_mib']:.0f}")
        for peer in PEERS:
            theirs = summary.get(peer, {}).get("peak_mib")
            ratio = ours["peak_mib"] / theirs if theirs else float("nan")
            memory_ratios[peer].append(ratio)
            cells.append(f"{ratio:.3g}")
        print("| " + " | ".join(cells) + " |")
    cells = ["geometric mean", ""] + [f"{_geomean(time_ratios[p]):.3g}" for p in PEERS] + [""] + \
            [f"{_geomean(memory_ratios[p]):.3g}" for p in PEERS]
    print("| " + " | ".join(cells) + " |")
    for name, summary in rows:
        peers = ", ".join(f"{p} {summary[p]['ms']:.1f} ms / {summary[p]['peak_mib']:.0f} MiB"
                          for p in PEERS if p in summary)
        print(f"{name}: {peers}")

if __name__ == "__main__":
    sys.exit(main())
