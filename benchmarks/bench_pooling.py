"""Time poolir's runtime against onnxruntime, OpenVINO and onnx.reference on nine float32 pooling workloads.

    python benchmarks/bench_pooling.py [--repeat N] [--quick] [--only W1,W5] [--no-reference]

Every engine runs the same single-node ONNX model on the same input, in the same process and run, and is
timed as the median of `--repeat` calls after warm-up calls, the engines timed in turn (blocks of 5 calls,
the order rotating; see interleaved_ms) so that a change of the machine's load meets every engine alike (plans and compilations happen before timing:
poolir builds `runtime.Session(model)` once, OpenVINO compiles once, onnxruntime creates its session once).
onnx.reference is slow, so it is timed with a small repeat. The table shows the median milliseconds of
poolir and the ratio poolir / peer for each peer (below 1: poolir is faster), and the geometric mean of
every ratio column. Outputs of every engine are checked against poolir's before timing, so a fast wrong
answer cannot hide in the table.
"""

from __future__ import annotations

import argparse
import functools
import math
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper

# Running as `python benchmarks/bench_pooling.py` from the repository root puts benchmarks/ first on the path;
# the packages live one level up.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

OPSET = {"MaxPool": 22, "AveragePool": 22, "LpPool": 22, "GlobalAveragePool": 22}


@dataclass(frozen=True)
class Workload:
    key: str
    title: str
    op: str
    shape: tuple[int, ...]
    attrs: dict = field(default_factory=dict)
    with_indices: bool = False

    def model(self) -> onnx.ModelProto:
        outputs = ["y", "indices"] if self.with_indices else ["y"]
        node = helper.make_node(self.op, ["x"], outputs, **self.attrs)
        outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
        if self.with_indices:
            outs.append(helper.make_tensor_value_info("indices", TensorProto.INT64, None))
        graph = helper.make_graph([node], self.key, [helper.make_tensor_value_info("x", TensorProto.FLOAT, self.shape)],
                                  outs)
        # IR version 10: onnxruntime 1.31 refuses the version 14 that onnx 1.23 stamps by default.
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET[self.op])], ir_version=10)


WORKLOADS = [
    Workload("W1", "MaxPool 3x3 s2 p1 1x64x112x112", "MaxPool", (1, 64, 112, 112),
             dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    Workload("W2", "AveragePool 3x3 s1 p1 exclude-pad 1x192x28x28", "AveragePool", (1, 192, 28, 28),
             dict(kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1], count_include_pad=0)),
    Workload("W3", "AveragePool 2x2 s2 8x256x56x56", "AveragePool", (8, 256, 56, 56),
             dict(kernel_shape=[2, 2], strides=[2, 2])),
    Workload("W4", "MaxPool 3x3x3 s2 p1 1x32x32x64x64", "MaxPool", (1, 32, 32, 64, 64),
             dict(kernel_shape=[3, 3, 3], strides=[2, 2, 2], pads=[1, 1, 1, 1, 1, 1])),
    Workload("W5", "LpPool p=2 3x3 s2 1x64x56x56", "LpPool", (1, 64, 56, 56),
             dict(kernel_shape=[3, 3], strides=[2, 2], p=2)),
    Workload("W6", "AveragePool 7x7 s1 1x256x32x32", "AveragePool", (1, 256, 32, 32),
             dict(kernel_shape=[7, 7], strides=[1, 1])),
    Workload("W7", "MaxPool 2x2 s2 d2 ceil 1x64x56x56", "MaxPool", (1, 64, 56, 56),
             dict(kernel_shape=[2, 2], strides=[2, 2], dilations=[2, 2], ceil_mode=1)),
    Workload("W8", "GlobalAveragePool 1x2048x7x7", "GlobalAveragePool", (1, 2048, 7, 7)),
    Workload("W9", "MaxPool 3x3 s2 p1 + Indices 1x64x112x112", "MaxPool", (1, 64, 112, 112),
             dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), with_indices=True),
]


def median_ms(call: Callable[[], object], repeat: int, warmup: int) -> float:
    for _ in range(warmup):
        call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def interleaved_ms(calls: dict[str, Callable[[], object]], repeat: int, warmup: int,
                   block: int = 5) -> dict[str, float]:
    """The median ms of each call, the engines timed in turn: each round gives every engine `block` timed calls
    (the engines' order rotating from round to round) until each has `repeat`.

    On a shared machine the load changes within seconds (measured: one numpy call 1 us, then 16 us at a load
    average of 8); timing all of one engine's repeats and then another's lets a load change decide the ratio,
    while in turn every engine meets the same conditions. Engine switches pause 2 ms and make one untimed call
    first: onnxruntime's and OpenVINO's pool threads keep spinning for a while after a run, and they took the
    core from whichever engine came next (poolir measured 10x slower right after OpenVINO)."""
    names = list(calls)
    for _ in range(warmup):
        for name in names:
            calls[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    number = 0
    while any(len(values) < repeat for values in times.values()):
        shift = number % len(names)
        number += 1
        for name in names[shift:] + names[:shift]:
            time.sleep(0.002)
            calls[name]()
            for _ in range(min(block, repeat - len(times[name]))):
                start = time.perf_counter()
                calls[name]()
                times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) * 1e3 for name, values in times.items()}


# -------------------------------------------------------------------------------------------- engines

def poolir_runner(model: onnx.ModelProto, workload: Workload) -> tuple[str, Callable]:
    """runtime.Session(model).run, the official number; the bare kernels if the Session cannot run it."""
    try:
        from poolir import runtime
        session = runtime.Session(model)
        feeds = {"x": np.zeros(workload.shape, np.float32)}
        session.run(feeds)
        return "Session", lambda feeds: session.run(feeds)
    except Exception as error:  # noqa: BLE001 - a benchmark falls back and says so in its table
        print(f"  {workload.key}: runtime.Session unavailable ({type(error).__name__}: {error}); "
              "timing runtime.kernels directly", file=sys.stderr)
        return "kernels", kernel_runner(workload)


def kernel_runner(workload: Workload) -> Callable:
    """The kernels called directly with windows resolved once (what a plan does)."""
    from poolir.ir.geometry import pool_windows
    from poolir.runtime import kernels

    attrs = workload.attrs
    spatial = workload.shape[2:]
    if workload.op == "GlobalAveragePool":
        return lambda feeds: {"y": kernels.global_pool(feeds["x"], "avg", spatial_rank=len(spatial))}
    rank = len(spatial)
    pads = attrs.get("pads", [0] * 2 * rank)
    windows = pool_windows(spatial, attrs["kernel_shape"], attrs.get("strides"), attrs.get("dilations"),
                           pads[:rank], pads[rank:], "ceil_torch" if attrs.get("ceil_mode") else "floor")
    if workload.op == "MaxPool" and workload.with_indices:
        layout = kernels.IndexLayout()

        def run(feeds):
            y, idx = kernels.max_pool(feeds["x"], windows, indices=layout)
            return {"y": y, "indices": idx}
        return run
    if workload.op == "MaxPool":
        return lambda feeds: {"y": kernels.max_pool(feeds["x"], windows)}
    if workload.op == "AveragePool":
        divisor = "padded" if attrs.get("count_include_pad") else "real"
        return lambda feeds: {"y": kernels.avg_pool(feeds["x"], windows, divisor=divisor)}
    return lambda feeds: {"y": kernels.lp_pool(feeds["x"], windows, p=attrs["p"])}


def onnxruntime_runner(model: onnx.ModelProto, threads: int) -> Callable:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads   # 0: onnxruntime's default (one per core)
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return lambda feeds: dict(zip(names, session.run(names, feeds)))


def openvino_runner(model: onnx.ModelProto, tmp: Path) -> Callable:
    import openvino as ov

    path = tmp / "model.onnx"
    onnx.save(model, path)
    core = ov.Core()
    compiled = core.compile_model(ov.convert_model(str(path)), "CPU",
                                  {"INFERENCE_PRECISION_HINT": "f32", "NUM_STREAMS": "1",
                                   "INFERENCE_NUM_THREADS": "1"})
    request = compiled.create_infer_request()
    ports = list(compiled.outputs)

    def run(feeds):
        results = request.infer({0: feeds["x"]})
        return {name: np.asarray(results[port]) for name, port in zip(("y", "indices"), ports)}
    return run


def reference_runner(model: onnx.ModelProto) -> Callable:
    from onnx.reference import ReferenceEvaluator

    evaluator = ReferenceEvaluator(model)
    names = [o.name for o in model.graph.output]
    return lambda feeds: dict(zip(names, evaluator.run(None, feeds)))


# -------------------------------------------------------------------------------------------- main

def check_same(ours: dict, theirs: dict, engine: str, key: str) -> None:
    for name, value in theirs.items():
        if name not in ours:
            continue
        if name == "indices":
            ok = np.array_equal(ours[name], value)
        else:
            ok = np.allclose(ours[name], value, rtol=1e-4, atol=1e-5)
        if not ok:
            print(f"  {key}: {engine} output {name!r} differs from poolir's", file=sys.stderr)


def geometric_mean(values: list[float]) -> float:
    values = [v for v in values if v and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30, help="timed calls per engine (median reported)")
    parser.add_argument("--quick", action="store_true", help="5 repeats, onnx.reference skipped")
    parser.add_argument("--only", default="", help="comma-separated workload keys, e.g. W1,W9")
    parser.add_argument("--no-reference", action="store_true", help="skip onnx.reference (minutes per run)")
    parser.add_argument("--kernels", action="store_true", help="time runtime.kernels directly instead of Session")
    args = parser.parse_args(argv)
    repeat = 5 if args.quick else args.repeat
    with_reference = not (args.quick or args.no_reference)
    selected = [w for w in WORKLOADS if not args.only or w.key in args.only.split(",")]

    columns = ["ort-1", "ort-default", "openvino", "onnx.reference"]
    rows = []
    mode = set()
    with tempfile.TemporaryDirectory() as tmp:
        for workload in selected:
            model = workload.model()
            x = np.random.default_rng(0).standard_normal(workload.shape).astype(np.float32)
            feeds = {"x": x}
            if args.kernels:
                how, ours = "kernels", kernel_runner(workload)
            else:
                how, ours = poolir_runner(model, workload)
            mode.add(how)
            expected = ours(feeds)
            peers = {"ort-1": onnxruntime_runner(model, 1), "ort-default": onnxruntime_runner(model, 0),
                     "openvino": openvino_runner(model, Path(tmp))}
            if with_reference:
                peers["onnx.reference"] = reference_runner(model)
            for name, peer in peers.items():
                check_same(expected, peer(feeds), name, workload.key)
            fast = {"poolir": ours, **{name: peer for name, peer in peers.items() if name != "onnx.reference"}}
            ms = interleaved_ms({name: functools.partial(run, feeds) for name, run in fast.items()}, repeat, 2)
            if "onnx.reference" in peers:
                ms["onnx.reference"] = median_ms(lambda: peers["onnx.reference"](feeds), 1, 0)
            ratios = {name: ms["poolir"] / ms[name] for name in peers}
            rows.append((workload, ms, ratios))
            cells = "  ".join(f"{name} {ms[name]:.3f} ms" for name in ms)
            print(f"  {workload.key} {cells}", file=sys.stderr)

    print(f"poolir = runtime.{'/'.join(sorted(mode))}; ratio = poolir time / peer time (median of {repeat}; "
          f"onnx.reference: 1 call)")
    header = ["workload", "poolir ms", *[f"/ {c}" for c in columns]]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for workload, ms, ratios in rows:
        cells = [f"{workload.key} {workload.title}", f"{ms['poolir']:.3f}"]
        cells += [f"{ratios[c]:.3g}" if c in ratios else "-" for c in columns]
        print("| " + " | ".join(cells) + " |")
    means = [f"{geometric_mean([r[c] for _, _, r in rows if c in r]):.3g}" for c in columns]
    print("| geometric mean | | " + " | ".join(means) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
