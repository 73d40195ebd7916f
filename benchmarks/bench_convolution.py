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

## Measured

`python benchmarks/bench_convolution.py --repeat 30`, 2-core AMD EPYC VM shared with colleagues' test runs
(load average 7.5-8 during the run, so single figures move by 2x between runs; ratios are taken within one
run), numpy 2.4.6 with OpenBLAS 0.3.31 (2 threads by default), onnxruntime 1.31:

| family | layer | shape | poolir-1 ms | ort-1 ms | poolir-default ms | ort-default ms | 1 / ort-1 | default / ort-default | 1 / ort-default |
|---|---|---|---|---|---|---|---|---|---|
| resnet50 | stem | 7x7 s2 3->64 @224 | 8.766 | 2.643 | 45.862 | 2.580 | 3.32 | 17.78 | 3.40 |
| resnet50 | l1.reduce | 1x1 s1 64->64 @56 | 0.325 | 0.289 | 35.457 | 0.555 | 1.13 | 63.91 | 0.59 |
| resnet50 | l1.3x3 | 3x3 s1 64->64 @56 | 3.802 | 2.285 | 53.721 | 2.389 | 1.66 | 22.49 | 1.59 |
| resnet50 | l1.expand | 1x1 s1 64->256 @56 | 1.656 | 1.474 | 34.612 | 1.408 | 1.12 | 24.58 | 1.18 |
| resnet50 | l1.down | 1x1 s1 64->256 @56 | 1.906 | 1.547 | 31.144 | 1.469 | 1.23 | 21.19 | 1.30 |
| resnet50 | l1.reduce2 | 1x1 s1 256->64 @56 | 1.877 | 1.766 | 34.482 | 1.538 | 1.06 | 22.42 | 1.22 |
| resnet50 | l2.reduce | 1x1 s1 256->128 @56 | 2.870 | 4.868 | 36.177 | 2.590 | 0.59 | 13.97 | 1.11 |
| resnet50 | l2.3x3.s2 | 3x3 s2 128->128 @56 | 6.740 | 3.695 | 49.592 | 2.576 | 1.82 | 19.25 | 2.62 |
| resnet50 | l2.expand | 1x1 s1 128->512 @28 | 1.400 | 1.241 | 23.158 | 1.213 | 1.13 | 19.09 | 1.15 |
| resnet50 | l2.down.s2 | 1x1 s2 256->512 @56 | 6.500 | 4.298 | 26.981 | 4.916 | 1.51 | 5.49 | 1.32 |
| resnet50 | l2.reduce2 | 1x1 s1 512->128 @28 | 1.436 | 1.340 | 50.568 | 1.304 | 1.07 | 38.77 | 1.10 |
| resnet50 | l2.3x3 | 3x3 s1 128->128 @28 | 6.793 | 2.359 | 65.722 | 2.266 | 2.88 | 29.00 | 3.00 |
| resnet50 | l3.reduce | 1x1 s1 512->256 @28 | 2.452 | 2.164 | 22.719 | 2.212 | 1.13 | 10.27 | 1.11 |
| resnet50 | l3.3x3.s2 | 3x3 s2 256->256 @28 | 3.717 | 2.709 | 18.501 | 2.438 | 1.37 | 7.59 | 1.52 |
| resnet50 | l3.expand | 1x1 s1 256->1024 @14 | 1.321 | 1.183 | 13.515 | 1.218 | 1.12 | 11.10 | 1.08 |
| resnet50 | l3.down.s2 | 1x1 s2 512->1024 @28 | 2.898 | 2.566 | 17.311 | 2.346 | 1.13 | 7.38 | 1.24 |
| resnet50 | l3.reduce2 | 1x1 s1 1024->256 @14 | 1.335 | 1.206 | 17.673 | 1.232 | 1.11 | 14.34 | 1.08 |
| resnet50 | l3.3x3 | 3x3 s1 256->256 @14 | 3.671 | 2.464 | 18.243 | 2.287 | 1.49 | 7.98 | 1.61 |
| resnet50 | l4.reduce | 1x1 s1 1024->512 @14 | 2.575 | 2.318 | 13.818 | 2.184 | 1.11 | 6.33 | 1.18 |
| resnet50 | l4.3x3.s2 | 3x3 s2 512->512 @14 | 7.274 | 2.761 | 17.698 | 2.926 | 2.63 | 6.05 | 2.49 |
| resnet50 | l4.expand | 1x1 s1 512->2048 @7 | 1.744 | 1.205 | 11.708 | 1.225 | 1.45 | 9.56 | 1.42 |
| resnet50 | l4.down.s2 | 1x1 s2 1024->2048 @14 | 3.417 | 2.565 | 17.860 | 2.439 | 1.33 | 7.32 | 1.40 |
| resnet50 | l4.reduce2 | 1x1 s1 2048->512 @7 | 1.462 | 1.075 | 17.068 | 1.215 | 1.36 | 14.04 | 1.20 |
| resnet50 | l4.3x3 | 3x3 s1 512->512 @7 | 3.767 | 2.701 | 18.681 | 2.775 | 1.39 | 6.73 | 1.36 |
| resnet50 | fc | Gemm 2048->1000 | 0.215 | 0.170 | 0.212 | 0.404 | 1.26 | 0.53 | 0.53 |
| mobilenetv3 | dw3.s1 | 3x3 s1 dw 16->16 @112 | 0.494 | 0.107 | 0.541 | 0.137 | 4.61 | 3.96 | 3.61 |
| mobilenetv3 | dw3.s2 | 3x3 s2 dw 64->64 @112 | 1.513 | 0.461 | 2.748 | 0.618 | 3.28 | 4.45 | 2.45 |
| mobilenetv3 | dw5.s2 | 5x5 s2 dw 72->72 @56 | 0.981 | 0.123 | 1.043 | 0.232 | 7.95 | 4.51 | 4.24 |
| mobilenetv3 | dw5.s1 | 5x5 s1 dw 120->120 @28 | 1.395 | 0.141 | 1.626 | 0.189 | 9.86 | 8.59 | 7.37 |
| mobilenetv3 | dw3.s2b | 3x3 s2 dw 240->240 @28 | 0.454 | 0.070 | 0.451 | 0.073 | 6.53 | 6.20 | 6.24 |
| mobilenetv3 | dw5.s1b | 5x5 s1 dw 960->960 @7 | 1.255 | 0.093 | 1.429 | 0.118 | 13.55 | 12.13 | 10.66 |
| shufflenet | g3.reduce | 1x1 s1 g3 240->60 @28 | 0.114 | 0.102 | 0.187 | 0.116 | 1.13 | 1.61 | 0.98 |
| shufflenet | g3.expand | 1x1 s1 g3 60->240 @28 | 0.136 | 0.103 | 0.390 | 0.108 | 1.32 | 3.60 | 1.25 |
| shufflenet | g8.reduce | 1x1 s1 g8 384->96 @28 | 0.096 | 0.114 | 0.096 | 0.116 | 0.84 | 0.83 | 0.83 |
| shufflenet | g8.expand | 1x1 s1 g8 96->384 @28 | 0.140 | 0.116 | 0.142 | 0.118 | 1.21 | 1.20 | 1.19 |
| geometric mean | resnet50 | 25 layers | | | | | 1.36 | 11.98 | 1.35 |
| geometric mean | mobilenetv3 | 6 layers | | | | | 6.87 | 6.09 | 5.14 |
| geometric mean | shufflenet | 4 layers | | | | | 1.11 | 1.55 | 1.05 |
| geometric mean | all layers | 35 layers | | | | | 1.76 | 8.45 | 1.65 |

Reading it:
- With a one-thread BLAS poolir is 1.36x onnxruntime on ResNet-50 (1.35x against its default threads, which
  gain nothing on this loaded machine), within the 3x target; the stem (K = 147, a skinny GEMM that
  OpenBLAS runs at ~58 GFLOP/s; onnxruntime uses a direct NCHWc kernel) and some 3x3 layers reach 2.5-3.4x
  in this run (their quiet-moment minimum is 1.3-1.7x: stem 4.3 ms, 3x3 64@56 3.6 ms).
- numpy's OpenBLAS at its default 2 threads is 6-64x slower than at one thread on this shared machine
  (a 64x576x3136 sgemm: 4.5 ms at one thread, 34 ms at two): its threads wait on cores other jobs hold.
  That is the 8.45x "default / ort-default" column, and why the kernels' speed depends on who sets
  OPENBLAS_NUM_THREADS; onnxruntime's default pool does not degrade this way.
- Depthwise is 2.5-13x onnxruntime: numpy needs two passes (multiply, add) per tap over the output, and
  onnxruntime does all taps in registers; these layers are 0.1-0.5 ms each in onnxruntime.

Strategies measured on the way (one-thread BLAS, min/median ms, interleaved):
- im2col gather: clipped per-tap copies vs a zero-padded copy first vs a stride-phase buffer with
  contiguous copies and a cropped wide GEMM, all within +-5% (stem 5.6/5.3/5.3, 3x3 64@56 4.1/4.3/4.2,
  3x3 s2 128@56 3.8/3.7/4.0, 3x3 512@7 4.4/4.2/5.3): the GEMM is 70-85% of the time. Clipped kept (no
  padded copy, no cropping pass).
- the product: np.matmul, np.tensordot and np.einsum(optimize=True) on the same matrices: matmul and
  tensordot equal, einsum 5-35% slower. np.matmul kept (it also batches groups and images).
- im2col in L2-sized blocks of output rows: at most 5-15% faster at 1-2 MiB blocks, 2x slower at 256 KiB
  (stem 4.3 whole, 4.1 in 2 MiB blocks). Not worth the extra code.
- depthwise: clipped per-tap 4-D views 2-15x slower than the stride-phase wide grid (120@28 5x5: 6.7 ms
  vs 1.7 ms under the same load); im2col then batched matvec (np.matmul) or einsum over the taps:
  0.5x-1.7x of shift-and-accumulate depending on the layer, no consistent winner; channel blocks for
  cache residency: slower at every size.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import os
import math
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parent.parent


from poolir.runtime.kernels import convolution, matmul

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
    """poolir against onnxruntime: a loose guard, 8 * K * eps * max |y| (K = fan-in), that catches a wrong
    geometry or layout; the tests check the rounding-level agreement."""
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
