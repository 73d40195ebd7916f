"""runtime/kernels/convolution.py: hand-worked cases, a seeded random grid against onnxruntime, and OpenVINO's
GroupConvolution layout.

Oracles: onnxruntime (one thread, no graph optimisation) for float32 and float16 Conv; onnxruntime 1.31
has no float64 or bfloat16 Conv kernel, so float64 is checked against onnx.reference's Conv (computed in
float64) and bfloat16 against onnxruntime's float32 Conv of the same (exactly widened) values, rounded once.

Tolerance, from the summation order: every engine sums the K = C/groups * prod(kernel) products (and
the bias) in its own order, each ordering within gamma = K * eps * sum |x * w| of the exact sum (the
classic bound for recursive summation; blocked BLAS sums do better). Two engines are then within
2 * (K + 1) * eps * (sum |x * w| + |bias|); `magnitude` is that sum, computed by the oracle on |x|, |w|,
|bias|. For float32 with K <= 200 that is about 2.4e-5 relative to the magnitude. float16 and bfloat16
results are float32 sums rounded once, so one unit in the last place of the result is added.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from poolir.ir.errors import UsageError
from poolir.ir.geometry import pool_windows
from tests.peers import onnxruntime_run


from poolir.runtime.kernels import convolution, depthwise
conv, group_weights = convolution.conv, convolution.group_weights

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
ONNX_TYPES = {np.dtype(np.float16): TensorProto.FLOAT16, np.dtype(np.float32): TensorProto.FLOAT,
              np.dtype(np.float64): TensorProto.DOUBLE}


def windows(spatial, kernel, strides=None, dilations=None, pads_begin=None, pads_end=None):
    return pool_windows(spatial, kernel, strides, dilations, pads_begin, pads_end, "floor")


# --------------------------------------------------------------------------------------------- hand-worked

def test_1d_stride_2_with_pads_and_bias():
    # x = [1, 2, 3, 4], w = [1, 0, -1], pads (1, 1), stride 2: padded [0, 1, 2, 3, 4, 0], out = floor(3/2)+1 = 2
    #   o=0 reads 0, 1, 2 -> 0 - 2 = -2;  o=1 reads 2, 3, 4 -> 2 - 4 = -2;  bias 10 -> [8, 8]
    x = np.array([[[1, 2, 3, 4]]], dtype=np.float32)
    w = np.array([[[1, 0, -1]]], dtype=np.float32)
    y = conv(x, w, np.array([10], dtype=np.float32), windows=windows([4], [3], [2], None, [1], [1]))
    np.testing.assert_array_equal(y, [[[8, 8]]])


def test_2d_dilation_2_reads_the_corners():
    # x = 1..9 as 3x3, 2x2 kernel of ones, dilation 2: effective kernel 3, one output = 1 + 3 + 7 + 9 = 20
    x = np.arange(1, 10, dtype=np.float64).reshape(1, 1, 3, 3)
    y = conv(x, np.ones((1, 1, 2, 2)), windows=windows([3, 3], [2, 2], None, [2, 2]))
    np.testing.assert_array_equal(y, [[[[20]]]])


def test_groups_2_read_their_own_channels():
    # 4 channels [1,1], [2,2], [3,3], [4,4]; groups 2, w = [[1, 10]], [[100, 1000]] (1x1 kernel):
    #   output 0 = 1*1 + 10*2 = 21 (channels 0, 1);  output 1 = 100*3 + 1000*4 = 4300 (channels 2, 3)
    x = np.array([[[1, 1], [2, 2], [3, 3], [4, 4]]], dtype=np.float32)
    w = np.array([[[1], [10]], [[100], [1000]]], dtype=np.float32)
    y = conv(x, w, windows=windows([2], [1]), groups=2)
    np.testing.assert_array_equal(y, [[[21, 21], [4300, 4300]]])


def test_depthwise_2d_asymmetric_pads():
    # channel 0 = [[1, 2], [3, 4]], ones 2x2; channel 1 = [[5, 6], [7, 8]], w = [[1, 0], [0, -1]]
    # pads: top 1, right 1 (begin (1, 0), end (0, 1)); out 2x2. Padded channel 0 = [[0,0,0],[1,2,0],[3,4,0]]:
    #   (0,0) 0+0+1+2 = 3   (0,1) 0+0+2+0 = 2   (1,0) 1+2+3+4 = 10   (1,1) 2+0+4+0 = 6
    # padded channel 1 = [[0,0,0],[5,6,0],[7,8,0]], y(i,j) = p(i,j) - p(i+1,j+1):
    #   (0,0) 0-6 = -6   (0,1) 0-0 = 0   (1,0) 5-8 = -3   (1,1) 6-0 = 6
    x = np.array([[[[1, 2], [3, 4]], [[5, 6], [7, 8]]]], dtype=np.float32)
    w = np.array([[[[1, 1], [1, 1]]], [[[1, 0], [0, -1]]]], dtype=np.float32)
    y = conv(x, w, windows=windows([2, 2], [2, 2], None, None, [1, 0], [0, 1]), groups=2)
    np.testing.assert_array_equal(y, [[[[3, 2], [10, 6]], [[-6, 0], [-3, 6]]]])


@pytest.mark.parametrize("channels", [1, 2], ids=["single-channel", "depthwise"])
def test_taps_that_read_only_padding(channels):
    # x = [5], w = [1, 2, 3], pads (2, 2): padded [0, 0, 5, 0, 0], 3 outputs
    #   o=0: 3*5 = 15   o=1: 2*5 = 10   o=2: 1*5 = 5   (two of each output's taps read only padding)
    x = np.full((1, channels, 1), 5, dtype=np.float32)
    w = np.tile(np.array([1, 2, 3], dtype=np.float32), (channels, 1, 1))
    y = conv(x, w, windows=windows([1], [3], None, None, [2], [2]), groups=channels)
    np.testing.assert_array_equal(y, np.tile([15, 10, 5], (1, channels, 1)))


# --------------------------------------------------------------------------------------------- random grid

@dataclass(frozen=True)
class Case:
    dtype: np.dtype
    batch: int
    groups: int
    channels_per_group: int
    filters_per_group: int
    spatial: tuple[int, ...]
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads_begin: tuple[int, ...]
    pads_end: tuple[int, ...]
    bias: bool
    seed: int

    def __str__(self):
        return (f"{self.dtype.name}-n{self.batch}-g{self.groups}x{self.channels_per_group}to{self.filters_per_group}"
                f"-L{self.spatial}-k{self.kernel}-s{self.strides}-d{self.dilations}-pb{self.pads_begin}"
                f"-pe{self.pads_end}{'-bias' if self.bias else ''}")

    def arrays(self):
        rng = np.random.default_rng(self.seed)
        x = rng.standard_normal((self.batch, self.groups * self.channels_per_group) + self.spatial)
        w = rng.standard_normal((self.groups * self.filters_per_group, self.channels_per_group) + self.kernel)
        b = rng.standard_normal(self.groups * self.filters_per_group) if self.bias else None
        return tuple(None if a is None else a.astype(self.dtype) for a in (x, w, b))

    def model(self, dtype: np.dtype):
        inputs = ["x", "w", "b"] if self.bias else ["x", "w"]
        node = helper.make_node("Conv", inputs, ["y"], kernel_shape=list(self.kernel), strides=list(self.strides),
                                dilations=list(self.dilations), pads=list(self.pads_begin + self.pads_end),
                                group=self.groups)
        onnx_type = ONNX_TYPES[np.dtype(dtype)]
        graph = helper.make_graph([node], "conv", [helper.make_tensor_value_info(n, onnx_type, None) for n in inputs],
                                  [helper.make_tensor_value_info("y", onnx_type, None)])
        # IR version 10: onnxruntime 1.31 refuses the version that onnx 1.23 stamps by default.
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)], ir_version=10)


def _random_cases(count: int, seed: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    dtypes = [np.dtype(np.float32)] * 5 + [np.dtype(np.float64)] * 2 + [np.dtype(np.float16)] * 2 + [BFLOAT16]
    cases = []
    for number in range(count):
        rank = int(rng.integers(1, 4))
        biggest = 5 if rank < 3 else 3                 # 3-D kernels up to 3x3x3 keep the grid fast
        kernel = tuple(int(k) for k in rng.integers(1, biggest + 1, rank))
        dilations = tuple(int(d) for d in rng.choice([1, 1, 2, 3], rank))
        strides = tuple(int(s) for s in rng.integers(1, 4, rank))
        pads_begin = tuple(int(p) for p in rng.choice([0, 0, 1, 2, 3], rank))
        pads_end = tuple(int(p) for p in rng.choice([0, 0, 1, 2, 3], rank))
        if number % 10 == 0:       # pointwise: 1x1, stride 1, no pads (ResNet and ShuffleNet 1x1 layers)
            kernel, strides, pads_begin, pads_end = ((1,) * rank,) + ((1,) * rank,) + ((0,) * rank,) * 2
        spatial = tuple(max(1, (k - 1) * d + 1 - pb - pe) + int(rng.integers(0, 12 if rank < 3 else 5))
                        for k, d, pb, pe in zip(kernel, dilations, pads_begin, pads_end))
        kind = rng.choice(["dense", "two", "depthwise", "shuffle", "multiplier"])
        groups, per_group, filters = {
            "dense": (1, int(rng.integers(1, 6)), int(rng.integers(1, 6))),
            "two": (2, int(rng.integers(1, 4)), int(rng.integers(1, 4))),
            "depthwise": (int(rng.integers(2, 7)), 1, 1),
            "shuffle": (int(rng.choice([3, 4])), int(rng.integers(2, 4)), int(rng.integers(1, 4))),
            "multiplier": (int(rng.integers(2, 5)), 1, 2),      # depthwise with channel multiplier 2
        }[kind]
        cases.append(Case(dtypes[number % len(dtypes)], int(rng.integers(1, 4)), groups, per_group, filters,
                          spatial, kernel, strides, dilations, pads_begin, pads_end, bool(rng.integers(0, 2)),
                          seed * 1000 + number))
    return cases


CASES = _random_cases(200, seed=20261121)


def expected_and_magnitude(case: Case, x, w, b):
    """The oracle's result and sum |x * w| + |bias| (see the module docstring), both as float64."""
    if case.dtype == np.float64:
        # onnxruntime 1.31 has no float64 Conv: onnx.reference computes it in float64.
        evaluator = ReferenceEvaluator(case.model(np.float64))
        run = lambda *arrays: evaluator.run(None, dict(zip("xwb", arrays)))[0]  # noqa: E731
    else:
        # float16: onnxruntime's own float16 Conv. bfloat16: no onnxruntime kernel, so its float32 Conv of the
        # exactly widened values (our bfloat16 result is that sum rounded once).
        peer_dtype = np.float16 if case.dtype == np.float16 else np.float32
        model = case.model(peer_dtype)
        run = lambda *arrays: onnxruntime_run(model, dict(zip("xwb", (a.astype(peer_dtype) for a in arrays))))["y"]  # noqa: E731
    arrays = [a for a in (x, w, b) if a is not None]
    expected = run(*arrays).astype(np.float64)
    magnitude = run(*(np.abs(a) for a in arrays)).astype(np.float64)
    if case.dtype == BFLOAT16:
        expected = expected.astype(BFLOAT16).astype(np.float64)
    return expected, magnitude


def tolerance(case: Case, expected: np.ndarray, magnitude: np.ndarray) -> np.ndarray:
    terms = case.channels_per_group * int(np.prod(case.kernel)) + 1
    accumulation_eps = np.finfo(np.float64 if case.dtype == np.float64 else np.float32).eps
    bound = 2 * terms * accumulation_eps * magnitude
    if case.dtype in (np.float16, BFLOAT16):
        finfo = ml_dtypes.finfo(case.dtype)
        bound = bound + float(finfo.eps) * np.abs(expected) + float(finfo.smallest_subnormal)
    return bound


@pytest.mark.parametrize("case", CASES, ids=str)
def test_conv_matches_the_oracle(case: Case):
    x, w, b = case.arrays()
    before = [a.copy() for a in (x, w, b) if a is not None]
    got = conv(x, w, b, windows=windows(case.spatial, case.kernel, case.strides, case.dilations, case.pads_begin,
                                         case.pads_end), groups=case.groups)
    expected, magnitude = expected_and_magnitude(case, x, w, b)
    assert got.dtype == case.dtype and got.shape == expected.shape
    error = np.abs(got.astype(np.float64) - expected)
    assert np.all(error <= tolerance(case, expected, magnitude)), f"max error {error.max():.3g}"
    for original, now in zip(before, (a for a in (x, w, b) if a is not None)):
        np.testing.assert_array_equal(original, now)          # inputs are never modified


def _strategy(case: Case) -> str:
    """The kernel strategy conv picks for a grid case (kernels.convolution's module docstring)."""
    if case.channels_per_group == 1 and case.filters_per_group == 1 and case.groups > 1:
        return "depthwise"
    if all(k == 1 and s == 1 for k, s in zip(case.kernel, case.strides)) and not any(case.pads_begin + case.pads_end):
        return "pointwise"
    return "im2col"


DEPTHWISE_CASES = [c for c in CASES if _strategy(c) == "depthwise"]


@pytest.mark.parametrize("largest_channels_last_image, largest_tiled_weights, column_bytes",
                         [(0, 0, 4 << 20), (0, 0, 1), (10**9, 10**9, 4 << 20), (10**9, 0, 4 << 20)],
                         ids=["channels-first", "channels-first-one-channel-blocks", "channels-last",
                              "channels-last-unmerged"])
@pytest.mark.parametrize("case", DEPTHWISE_CASES, ids=str)
def test_every_depthwise_layout_matches_the_oracle(case: Case, largest_channels_last_image, largest_tiled_weights,
                                                   column_bytes, monkeypatch):
    # The output size (and the taps) pick the layout (convolution._CHANNELS_LAST_*), the size of the repeated weights
    # whether channels-last merges the last axis with the channels, and the column budget how many channels
    # channels-first multiplies per matrix product: every grid case runs all four.
    monkeypatch.setattr(convolution, "_CHANNELS_LAST_MAX_IMAGE", largest_channels_last_image)
    monkeypatch.setattr(convolution, "_CHANNELS_LAST_MAX_LONG_IMAGE", largest_channels_last_image)
    monkeypatch.setattr(depthwise, "_TILED_WEIGHTS_MAX_BYTES", largest_tiled_weights)
    monkeypatch.setattr(depthwise, "_DEPTHWISE_COLUMN_BYTES", column_bytes)
    test_conv_matches_the_oracle(case)


def test_channels_last_tap_views_on_every_1d_geometry(monkeypatch):
    """depthwise._ChannelsLast builds its tap views from stride, dilation and phase arithmetic: every
    1-D geometry up to kernel 5, stride 3, dilation 3, pads 2 and length 9 (merged and unmerged), against the sums
    written out tap by tap in float64."""
    monkeypatch.setattr(convolution, "_CHANNELS_LAST_MAX_IMAGE", 10**9)
    rng = np.random.default_rng(7)
    checked = 0
    for merged in (True, False):
        monkeypatch.setattr(depthwise, "_TILED_WEIGHTS_MAX_BYTES", 4 << 20 if merged else 0)
        for kernel, stride, dilation, pad_begin, pad_end, length in np.ndindex(5, 3, 3, 3, 3, 9):
            kernel, stride, dilation, length = kernel + 1, stride + 1, dilation + 1, length + 1
            if (kernel - 1) * dilation + 1 > length + pad_begin + pad_end:
                continue
            x = rng.standard_normal((2, 3, length))
            w = rng.standard_normal((3, 1, kernel))
            geometry = windows([length], [kernel], [stride], [dilation], [pad_begin], [pad_end])
            padded = np.pad(x, ((0, 0), (0, 0), (pad_begin, pad_end)))
            expected = sum(padded[:, :, j * dilation: j * dilation + (geometry[0].output - 1) * stride + 1: stride]
                           * w[None, :, 0, j, None] for j in range(kernel))
            np.testing.assert_allclose(conv(x, w, windows=geometry, groups=3), expected, rtol=1e-12, atol=1e-12)
            checked += 1
    assert checked == 5286


LANE_CASES = [Case(np.dtype(np.float32), batch, groups, 1, 1, spatial, kernel, (2, 2), (1, 1), pads, pads, True, seed)
              for seed, (batch, groups, spatial, kernel, pads) in enumerate([
                  (1, 5, (9, 9), (3, 3), (1, 1)), (2, 2, (8, 11), (3, 3), (1, 1)), (2, 3, (7, 6), (5, 5), (2, 2)),
                  (1, 2, (6, 7), (3, 3), (0, 0)), (3, 2, (5, 10), (3, 2), (0, 1))])]


@pytest.mark.parametrize("case", LANE_CASES, ids=str)
def test_stride_2_phase_split_through_lanes_matches_the_oracle(case: Case, monkeypatch):
    """float32 phases along a stride-2 last axis are copied as the low lanes of uint64s (kernels.axis_pass.copy_strided);
    with pad 1 a lane of the last image row reads one element past the input, so that row is copied apart."""
    monkeypatch.setattr(convolution, "_CHANNELS_LAST_MAX_IMAGE", 0)
    monkeypatch.setattr(convolution, "_CHANNELS_LAST_MAX_LONG_IMAGE", 0)
    test_conv_matches_the_oracle(case)


IM2COL_CASES = [c for c in CASES if _strategy(c) == "im2col"]


@pytest.mark.parametrize("waste_limit", [-1, 10**9], ids=["gathered-from-x", "gathered-from-phases"])
@pytest.mark.parametrize("case", IM2COL_CASES, ids=str)
def test_both_im2col_gathers_match_the_oracle(case: Case, waste_limit, monkeypatch):
    """im2col copies each tap from x, or from the phase buffer's wide grid (convolution._gathers_phases, by the
    filters and the grid's extra columns): every grid case runs both, with its bias as an addition or, where the
    plan packs it (BiasedWeights, one group, float32/float64), inside the product."""
    monkeypatch.setattr(convolution, "_PHASED_WASTE_LIMIT", waste_limit)
    test_conv_matches_the_oracle(case)
    x, w, b = case.arrays()
    if not convolution.BiasedWeights.pays(w, b, case.groups, pointwise=False):
        return
    got = convolution.conv_biased(x, convolution.BiasedWeights(w, b), windows=windows(
        case.spatial, case.kernel, case.strides, case.dilations, case.pads_begin, case.pads_end))
    expected, magnitude = expected_and_magnitude(case, x, w, b)
    assert got.dtype == case.dtype and got.shape == expected.shape
    error = np.abs(got.astype(np.float64) - expected)
    assert np.all(error <= tolerance(case, expected, magnitude)), f"max error {error.max():.3g}"


@pytest.mark.parametrize("groups", [1, 2], ids=["im2col", "depthwise"])
def test_kernels_of_more_taps_than_the_caches_take_are_computed_uncached(groups):
    """Kernels above phase_buffer.CACHED_TAPS taps (a hostile file's, or a long 1-D filter) are worked out on every
    call and never kept in the geometry caches (the cached functions are not called at all: a size check would pass
    on a full cache); the sums match numpy's float64 correlation."""
    from poolir.runtime.kernels import phase_buffer
    taps = phase_buffer.CACHED_TAPS + 77
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 2, taps + 900)).astype(np.float32)      # 910 outputs: depthwise in columns
    w = rng.standard_normal((2, 2 // groups, taps)).astype(np.float32)
    def cache_calls():
        return tuple(info.hits + info.misses for info in (convolution._tap_copies.cache_info(),
                                                           phase_buffer._cached_phase_plan.cache_info()))
    before = cache_calls()
    got = conv(x, w, windows=windows([taps + 900], [taps], [1], [1], [5], [4]), groups=groups)
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (5, 4)))
    for m in range(2):
        inputs = [m] if groups == 2 else [0, 1]
        expected = sum(np.correlate(padded[0, c], w[m, c - inputs[0]].astype(np.float64), "valid")
                       for c in inputs)
        np.testing.assert_allclose(got[0, m], expected, rtol=0, atol=1e-4 * np.abs(expected).max())
    assert cache_calls() == before


@pytest.mark.parametrize("layout", ["im2col-from-x", "im2col-from-phases", "depthwise-columns",
                                    "depthwise-channels-last"])
def test_a_stride_far_above_the_input_allocates_for_the_taps_read_only(layout, monkeypatch):
    """Stride 10**7 over a 5x5 input: one output, read by taps of phase 0 .. 2 only. The stride-phase buffers hold a
    plane per phase a tap reads, not one per phase of the stride (10**14 here), so the convolution runs within a
    1 MiB budget."""
    from poolir.ir import budget
    monkeypatch.setattr(convolution, "_PHASED_WASTE_LIMIT", -1 if layout == "im2col-from-x" else 10**9)
    monkeypatch.setattr(convolution, "_CHANNELS_LAST_MAX_IMAGE", 10**9 if layout.endswith("last") else 0)
    monkeypatch.setattr(convolution, "_CHANNELS_LAST_MAX_LONG_IMAGE", 0)
    groups = 3 if layout.startswith("depthwise") else 1
    rng = np.random.default_rng(11)
    x = rng.standard_normal((1, 3, 5, 5)).astype(np.float32)
    w = rng.standard_normal((3, 3 // groups, 3, 3)).astype(np.float32)
    budget.set_max_memory(1 << 20)
    try:
        got = conv(x, w, windows=windows([5, 5], [3, 3], [10**7, 10**7]), groups=groups)
    finally:
        budget.set_max_memory(None)
    patch = x[0, :, :3, :3].astype(np.float64)
    expected = ([np.sum(patch[m] * w[m, 0]) for m in range(3)] if groups == 3
                else [np.sum(patch * w[m]) for m in range(3)])
    np.testing.assert_allclose(got.reshape(3), expected, rtol=1e-5)


def test_grid_covers_every_strategy_and_dtype():
    strategies = {_strategy(c) for c in CASES}
    assert strategies == {"depthwise", "pointwise", "im2col"}
    assert {c.dtype for c in CASES} == {np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64), BFLOAT16}
    assert {len(c.spatial) for c in CASES} == {1, 2, 3}


# --------------------------------------------------------------------------------------------- buffers and layouts

@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("shape, kernel, groups", [((1, 4, 6, 6), 1, 1), ((2, 4, 6, 6), 3, 1), ((2, 4, 6, 6), 3, 4),
                                                   ((1, 4, 6), 1, 2)],
                         ids=["pointwise", "im2col", "depthwise", "pointwise-1d-grouped"])
def test_results_are_fresh_arrays_that_later_calls_leave_alone(shape, kernel, groups, dtype):
    rng = np.random.default_rng(0)
    spatial = shape[2:]
    w = rng.standard_normal((4, shape[1] // groups) + (kernel,) * len(spatial)).astype(dtype)
    geometry = windows(spatial, [kernel] * len(spatial), None, None, [kernel // 2] * len(spatial),
                       [kernel // 2] * len(spatial))
    x = rng.standard_normal(shape).astype(dtype)
    first = conv(x, w, windows=geometry, groups=groups)
    kept = first.copy()
    conv(rng.standard_normal(shape).astype(dtype), w, windows=geometry, groups=groups)
    np.testing.assert_array_equal(first, kept)
    assert first.flags.c_contiguous and first.flags.writeable


def test_openvino_group_weights_reshape_to_conv_weights():
    # OpenVINO GroupConvolution weights [G, M/G, C/G, k]: group g's filters become rows g*M/G .. of [M, C/G, k].
    grouped = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    weights, groups = group_weights(grouped)
    assert groups == 2 and weights.shape == (6, 4, 5)
    np.testing.assert_array_equal(weights[3:], grouped[1])


@pytest.mark.parametrize("strides, pads, dilations", [([1, 1], [1, 1], [1, 1]), ([2, 1], [0, 2], [1, 2])])
def test_group_convolution_matches_openvino(strides, pads, dilations):
    ov = pytest.importorskip("openvino", reason="OpenVINO is the oracle for its own GroupConvolution layout")
    from openvino import opset13 as ops

    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 6, 7, 8)).astype(np.float32)
    grouped = rng.standard_normal((3, 2, 2, 3, 3)).astype(np.float32)         # G=3, M/G=2, C/G=2, 3x3
    parameter = ops.parameter(x.shape, ov.Type.f32)
    node = ops.group_convolution(parameter, ops.constant(grouped), strides, [pads[0]] * 2, [pads[1]] * 2, dilations)
    compiled = ov.Core().compile_model(ov.Model([node], [parameter]), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    expected = compiled(x)[0]
    weights, groups = group_weights(grouped)
    got = conv(x, weights, windows=windows([7, 8], [3, 3], strides, dilations, [pads[0]] * 2, [pads[1]] * 2),
               groups=groups)
    magnitude = conv(np.abs(x), np.abs(weights), windows=windows([7, 8], [3, 3], strides, dilations,
                                                                   [pads[0]] * 2, [pads[1]] * 2), groups=groups)
    # K = C/G * 3 * 3 = 18 products plus nothing else: 2 * (K + 1) * eps * sum |x * w| (module docstring)
    assert np.all(np.abs(got - expected) <= 2 * 19 * np.finfo(np.float32).eps * magnitude)


# --------------------------------------------------------------------------------------------- refusals

@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, bool])
def test_integer_inputs_are_refused(dtype):
    with pytest.raises(UsageError, match="not supported.*ConvInteger"):
        conv(np.ones((1, 1, 3), dtype=dtype), np.ones((1, 1, 2), dtype=dtype), windows=windows([3], [2]))


@pytest.mark.parametrize("x_shape, w_shape, groups, geometry, message", [
    ((1, 4, 5), (2, 3, 3), 1, windows([5], [3]), "do not fit input"),
    ((1, 4, 5), (3, 2, 3), 2, windows([5], [3]), "groups dividing M"),
    ((1, 4, 5), (2, 4, 3), 0, windows([5], [3]), "groups 0 must be"),
    ((1, 4, 5), (2, 4, 3), 1, windows([6], [3]), "spatial axis 0"),
    ((1, 4, 5), (2, 4, 2), 1, windows([5], [3]), "spatial axis 0"),
    ((1, 4, 5), (2, 4, 3), 1, pool_windows([5], [3], [2], None, [0], [1], "ceil"), "floor rounding"),
    ((1, 4, 5, 5), (2, 4, 3), 1, windows([5], [3]), "rank 3"),
])
def test_shape_and_geometry_mismatches_are_refused(x_shape, w_shape, groups, geometry, message):
    with pytest.raises(UsageError, match=message):
        conv(np.ones(x_shape, np.float32), np.ones(w_shape, np.float32), windows=geometry, groups=groups)


def test_mixed_element_types_and_bad_bias_are_refused():
    x, w = np.ones((1, 2, 4), np.float32), np.ones((3, 2, 2), np.float32)
    with pytest.raises(UsageError, match="one element type"):
        conv(x, w.astype(np.float64), windows=windows([4], [2]))
    with pytest.raises(UsageError, match=r"bias shape \(2,\)"):
        conv(x, w, np.ones(2, np.float32), windows=windows([4], [2]))


def test_big_endian_input_and_empty_batch():
    w = np.ones((1, 1, 2), np.float32)
    y = conv(np.array([[[1, 2, 3]]], dtype=">f4"), w, windows=windows([3], [2]))
    assert y.dtype == np.float32 and y.tolist() == [[[3, 5]]]
    assert conv(np.ones((0, 1, 3), np.float32), w, windows=windows([3], [2])).shape == (0, 1, 2)


@pytest.mark.parametrize("x_shape, w_shape, groups", [((1, 4, 5, 5), (0, 4, 3, 3), 1), ((1, 4, 5, 5), (0, 1, 3, 3), 4),
                                                      ((0, 4, 5, 5), (2, 4, 3, 3), 1)],
                         ids=["no-filters", "no-filters-grouped", "no-images"])
def test_no_filters_or_no_images_give_an_empty_result(x_shape, w_shape, groups):
    # OpenVINO returns an empty tensor for a Convolution with 0 output channels; numpy's reshape used to raise.
    y = conv(np.ones(x_shape, np.float32), np.ones(w_shape, np.float32),
             windows=windows([5, 5], [3, 3], None, None, [1, 1], [1, 1]), groups=groups)
    assert y.shape == (x_shape[0], w_shape[0], 5, 5) and y.dtype == np.float32
