"""Time poolir's conv and gemm kernels against onnxruntime on the layers of ResNet-50, MobileNetV3 and ShuffleNet.

    python benchmarks/bench_convolution.py [--repeat N] [--only stem,fc] [--family resnet50]

Every layer is one float32 ONNX node (Conv with its weights and bias as initializers, or Gemm for the
classifier), batch 1, run by onnxruntime (default graph optimisations) with one intra-op thread and with
its default thread count, and by poolir's kernel called directly with the geometry resolved once, with
numpy's OpenBLAS set to one thread and to its default thread count (through OpenBLAS's own
set_num_threads, found with ctypes; without it both poolir columns use the default). All in the same
process and run; each time is the median of `--repeat` rounds after warm-up. The
table shows the median ms and the ratios poolir / onnxruntime at one thread and at default threads
(below 1: poolir is faster), and the geometric mean of each ratio column, per family and overall.
Every layer is timed at one thread first (poolir and onnxruntime interleaved), then every layer at the
default thread counts: pools that spin after a call would otherwise steal the core from the next engine.
Before timing, poolir's output is compared with onnxruntime's (a mismatch is printed on stderr), so a fast
wrong answer cannot hide in the table.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import importlib.util
import os
import math
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parent.parent


def _load(name: str):
    """The kernels live in runtime/kernels_new/ (no package yet): loaded from their file."""
    spec = importlib.util.spec_from_file_location(f"poolir_kernels_new_{name}", ROOT / "runtime" / "kernels_new" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


convolution = _load("convolution")
matmul = _load("matmul")

from poolir.ir.geometry import pool_windows  # noqa: E402


@dataclass(frozen=True)
class Layer:
    family: str
    key: str
    channels: int
    filters: int
    size: int               # square input, height = width
    kernel: int = 1
    stride: int = 1
    groups: int = 1
    gemm: bool = False      # a Gemm (FC) layer: channels -> filters, no spatial axes

    @property
    def pad(self) -> int:
        return self.kernel // 2

    def title(self) -> str:
        if self.gemm:
            return f"Gemm {self.channels}->{self.filters}"
        group = "" if self.groups == 1 else " dw" if self.groups == self.channels else f" g{self.groups}"
        return (f"{self.kernel}x{self.kernel} s{self.stride}{group} "
                f"{self.channels}->{self.filters} @{self.size}")


def _resnet50() -> list[Layer]:
    layers = [Layer("resnet50", "stem", 3, 64, 224, 7, 2)]
    stages = [(64, 256, 56), (128, 512, 28), (256, 1024, 14), (512, 2048, 7)]
    previous = 64
    for stage, (width, out, size) in enumerate(stages, start=1):
        strided = stage > 1
        in_size = size * 2 if strided else size
        tag = f"l{stage}"
        layers += [
            Layer("resnet50", f"{tag}.reduce", previous, width, in_size),            # first block's 1x1
            Layer("resnet50", f"{tag}.3x3" + (".s2" if strided else ""), width, width, in_size, 3, 2 if strided else 1),
            Layer("resnet50", f"{tag}.expand", width, out, size),
            Layer("resnet50", f"{tag}.down" + (".s2" if strided else ""), previous, out, in_size, 1, 2 if strided else 1),
            Layer("resnet50", f"{tag}.reduce2", out, width, size),                   # later blocks' 1x1
        ]
        if strided:
            layers.append(Layer("resnet50", f"{tag}.3x3", width, width, size, 3))    # later blocks' 3x3
        previous = out
    layers.append(Layer("resnet50", "fc", 2048, 1000, 1, gemm=True))
    return layers


LAYERS = _resnet50() + [
    Layer("mobilenetv3", "dw3.s1", 16, 16, 112, 3, 1, 16),
    Layer("mobilenetv3", "dw3.s2", 64, 64, 112, 3, 2, 64),
    Layer("mobilenetv3", "dw5.s2", 72, 72, 56, 5, 2, 72),
    Layer("mobilenetv3", "dw5.s1", 120, 120, 28, 5, 1, 120),
    Layer("mobilenetv3", "dw3.s2b", 240, 240, 28, 3, 2, 240),
    Layer("mobilenetv3", "dw5.s1b", 960, 960, 7, 5, 1, 960),
    Layer("shufflenet", "g3.reduce", 240, 60, 28, groups=3),
    Layer("shufflenet", "g3.expand", 60, 240, 28, groups=3),
    Layer("shufflenet", "g8.reduce", 384, 96, 28, groups=8),
    Layer("shufflenet", "g8.expand", 96, 384, 28, groups=8),
]


class Case:
    """One layer's inputs, its ONNX model and the poolir call."""

    def __init__(self, layer: Layer, rng: np.random.Generator):
        self.layer = layer
        if layer.gemm:
            self.x = rng.standard_normal((1, layer.channels), dtype=np.float32)
            self.w = rng.standard_normal((layer.filters, layer.channels), dtype=np.float32) / math.sqrt(layer.channels)
            self.b = rng.standard_normal(layer.filters, dtype=np.float32)
            node = helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)
            self.poolir: Callable[[], np.ndarray] = lambda: matmul.gemm(self.x, self.w, self.b, trans_b=True)
        else:
            fan_in = layer.channels // layer.groups * layer.kernel ** 2
            self.x = rng.standard_normal((1, layer.channels, layer.size, layer.size), dtype=np.float32)
            self.w = rng.standard_normal((layer.filters, layer.channels // layer.groups, layer.kernel, layer.kernel),
                                         dtype=np.float32) / math.sqrt(fan_in)
            self.b = rng.standard_normal(layer.filters, dtype=np.float32)
            pads = [layer.pad] * 4
            node = helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[layer.kernel] * 2,
                                    strides=[layer.stride] * 2, pads=pads, group=layer.groups)
            windows = pool_windows([layer.size] * 2, [layer.kernel] * 2, [layer.stride] * 2, None,
                                   [layer.pad] * 2, [layer.pad] * 2)
            self.poolir = lambda: convolution.conv(self.x, self.w, self.b, windows=windows, groups=layer.groups)
        graph = helper.make_graph(
            [node], layer.key, [helper.make_tensor_value_info("x", TensorProto.FLOAT, self.x.shape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            initializer=[numpy_helper.from_array(self.w, "w"), numpy_helper.from_array(self.b, "b")])
        # IR version 10: onnxruntime 1.31 refuses the version that onnx 1.23 stamps by default.
        self.model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)], ir_version=10)

    def onnxruntime(self, threads: int | None) -> Callable[[], np.ndarray]:
        import onnxruntime as ort

        options = ort.SessionOptions()
        if threads is not None:
            options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        session = ort.InferenceSession(self.model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        feeds = {"x": self.x}
        return lambda: session.run(None, feeds)[0]


def _blas_thread_setter() -> tuple[Callable[[int], None], int] | None:
    """OpenBLAS's set_num_threads from the library numpy loaded, and its default thread count (or None)."""
    for path in glob.glob(os.path.join(os.path.dirname(np.__file__) + ".libs", "*openblas*")):
        library = ctypes.CDLL(path)
        for prefix in ("scipy_openblas", "openblas"):
            setter = getattr(library, f"{prefix}_set_num_threads64_", None) or getattr(library, f"{prefix}_set_num_threads", None)
            getter = getattr(library, f"{prefix}_get_num_threads64_", None) or getattr(library, f"{prefix}_get_num_threads", None)
            if setter and getter:
                return setter, getter()
    return None


def median_ms(calls: list[Callable[[], object]], repeat: int, warmup: int = 3) -> list[float]:
    """Median milliseconds of each call, timed in interleaved rounds (one of each per round), so that a
    change of load on a shared machine moves every engine's figure alike and ratios stay comparable."""
    for call in calls:
        for _ in range(warmup):
            call()
    times: list[list[float]] = [[] for _ in calls]
    for _ in range(repeat):
        for call, sink in zip(calls, times):
            start = time.perf_counter()
            call()
            sink.append(time.perf_counter() - start)
    return [statistics.median(sink) * 1e3 for sink in times]


def check(case: Case, expected: np.ndarray) -> None:
    """poolir against onnxruntime, within float32 rounding of a K-term dot product (K = fan-in)."""
    got = case.poolir()
    fan_in = case.w[0].size
    bound = 2 * fan_in * np.finfo(np.float32).eps * (np.abs(expected).max() + 1) * 4
    error = float(np.abs(got - expected).max()) if got.shape == expected.shape else math.inf
    if not error <= bound:
        print(f"MISMATCH {case.layer.key}: shapes {got.shape} {expected.shape}, max error {error:.3g} > {bound:.3g}",
              file=sys.stderr)


def geometric_mean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values)) if values else math.nan


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--only", help="comma-separated layer keys")
    parser.add_argument("--family", help="resnet50, mobilenetv3 or shufflenet")
    args = parser.parse_args(argv)
    layers = [layer for layer in LAYERS if (not args.only or layer.key in args.only.split(","))
              and (not args.family or layer.family == args.family)]
    rng = np.random.default_rng(0)
    blas = _blas_thread_setter()
    if blas is None:
        print("OpenBLAS set_num_threads not found: both poolir columns use numpy's default threads", file=sys.stderr)
    print(f"numpy OpenBLAS default threads: {blas[1] if blas else '?'}, os.cpu_count(): {os.cpu_count()}, "
          f"load average before: {os.getloadavg()[0]:.1f}")
    cases = [Case(layer, rng) for layer in layers]
    for case in cases:
        check(case, case.onnxruntime(1)())
    # The one-thread pair of every layer first, then the default-thread pair: threads that spin after a call
    # (OpenBLAS's and onnxruntime's pools) would otherwise steal the core from the one-thread engines.
    timed: dict[str, list[float]] = {}
    for threads in (1, None):
        if blas is not None:
            blas[0](1 if threads == 1 else blas[1])
        for case in cases:
            timed.setdefault(case.layer.key, []).extend(median_ms([case.poolir, case.onnxruntime(threads)], args.repeat))
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    # Ratios: poolir-1 / ort-1, poolir-default / ort-default, and poolir-1 / ort-default (poolir with a
    # one-thread BLAS against onnxruntime as it comes).
    print("| family | layer | shape | poolir-1 ms | ort-1 ms | poolir-default ms | ort-default ms "
          "| 1 / ort-1 | default / ort-default | 1 / ort-default |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    ratios: dict[str, list[tuple[float, float, float]]] = {}
    for case in cases:
        layer = case.layer
        ours_one, one, ours_default, default = timed[layer.key]
        row = (ours_one / one, ours_default / default, ours_one / default)
        ratios.setdefault(layer.family, []).append(row)
        print(f"| {layer.family} | {layer.key} | {layer.title()} | {ours_one:.3f} | {one:.3f} | {ours_default:.3f} "
              f"| {default:.3f} | " + " | ".join(f"{r:.2f}" for r in row) + " |")
    everything = [row for rows in ratios.values() for row in rows]
    for name, rows in list(ratios.items()) + [("all layers", everything)]:
        means = [geometric_mean([row[k] for row in rows]) for k in range(3)]
        print(f"| geometric mean | {name} | {len(rows)} layers | | | | | " + " | ".join(f"{m:.2f}" for m in means) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
