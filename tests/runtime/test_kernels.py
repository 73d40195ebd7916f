"""runtime.kernels against hand-worked cases: every expected value is computed in the comment beside it."""

import ml_dtypes
import numpy as np
import pytest

from poolir.ir.errors import UnsupportedError, UsageError
from poolir.ir.geometry import pool_windows
from poolir.runtime.kernels import IndexLayout, avg_pool, global_pool, lowest_value, lp_pool, max_pool

F32_LOWEST = -np.finfo(np.float32).max


def windows(spatial, kernel, strides=None, dilations=None, pads_begin=None, pads_end=None, rounding="floor"):
    return pool_windows(spatial, kernel, strides, dilations, pads_begin, pads_end, rounding)


# ---------------------------------------------------------------------------------------------- max

def test_max_1d_pads_and_ceil_overhang():
    # x = [3, 1, 4, 1, 5], k=2, s=2, pads (1, 1), ceil: padded length 7, windows start at -1, 1, 3, 5.
    #   [-1, 0] -> real {0}: 3       [1, 2] -> 1, 4: 4       [3, 4] -> 1, 5: 5       [5, 6] -> none real
    x = np.array([[3, 1, 4, 1, 5]], dtype=np.float32)
    w = windows([5], [2], [2], None, [1], [1], "ceil")
    assert w[0].output == 4
    np.testing.assert_array_equal(max_pool(x, w), [[3, 4, 5, F32_LOWEST]])
    np.testing.assert_array_equal(max_pool(x, w, empty_value=-7), [[3, 4, 5, -7]])
    # ceil_torch drops the window at 5 (it starts at 5 + 1 = 6 >= L + pb = 6 in padded coordinates).
    np.testing.assert_array_equal(max_pool(x, windows([5], [2], [2], None, [1], [1], "ceil_torch")), [[3, 4, 5]])


def test_max_never_selects_padding_even_when_all_real_values_are_negative():
    # x = [-3, -1, -2], k=3, s=1, pads (1, 1): windows [-1..1] -> max(-3, -1) = -1; [0..2] -> -1; [1..3] -> -1.
    x = np.array([-3, -1, -2], dtype=np.float64)
    y, idx = max_pool(x, windows([3], [3], None, None, [1], [1]), indices=IndexLayout())
    np.testing.assert_array_equal(y, [-1, -1, -1])
    np.testing.assert_array_equal(idx, [1, 1, 1])


def test_max_of_minus_infinity_is_minus_infinity_not_the_lowest_finite_value():
    # A window whose only real value is -inf must give -inf (padding is not "lowest finite").
    x = np.array([-np.inf, 2.0], dtype=np.float32)
    np.testing.assert_array_equal(max_pool(x, windows([2], [2], None, None, [1], [0])), [-np.inf, 2.0])


def test_max_2d_indices_row_major_column_major_and_axis():
    # x (1, 2, 3, 3) = 0..17; k=2, s=1, no pads: each window's max is its bottom-right element.
    # channel 0 maxima at (h, w) = (1,1) (1,2) (2,1) (2,2) -> values 4 5 7 8; channel 1 adds 9.
    x = np.arange(18, dtype=np.float32).reshape(1, 2, 3, 3)
    w = windows([3, 3], [2, 2])
    y, idx = max_pool(x, w, indices=IndexLayout())
    np.testing.assert_array_equal(y, [[[[4, 5], [7, 8]], [[13, 14], [16, 17]]]])
    # row-major flat index (c*3 + h)*3 + w equals the value itself here.
    np.testing.assert_array_equal(idx, y.astype(np.int64))
    # storage_order=1: c*9 + h + w*3. (1,1) -> 4, (1,2) -> 7, (2,1) -> 5, (2,2) -> 8; channel 1 adds 9.
    _, idx_col = max_pool(x, w, indices=IndexLayout(spatial_column_major=True))
    np.testing.assert_array_equal(idx_col, [[[[4, 7], [5, 8]], [[13, 16], [14, 17]]]])
    # OpenVINO axis=2: flatten over H, W only: h*3 + w, the same in both channels.
    _, idx_axis = max_pool(x, w, indices=IndexLayout(dtype=np.int32, flatten_from=2))
    assert idx_axis.dtype == np.int32
    np.testing.assert_array_equal(idx_axis, [[[[4, 5], [7, 8]], [[4, 5], [7, 8]]]])


def test_max_indices_flatten_from_a_spatial_axis():
    # x (1, 2, 3, 3) = 0..17, k=2, s=1: maxima at (h, w) in {1, 2} x {1, 2}. flatten_from=3 keeps only w.
    x = np.arange(18, dtype=np.float32).reshape(1, 2, 3, 3)
    _, idx = max_pool(x, windows([3, 3], [2, 2]), indices=IndexLayout(flatten_from=3))
    np.testing.assert_array_equal(idx, [[[[1, 2], [1, 2]], [[1, 2], [1, 2]]]])


def test_huge_kernel_costs_only_its_real_taps():
    # x = [0, 1, 2, 3, 4], k = 2e9, pads (0, 2e9 - 1): (5 + 2e9 - 1 - 2e9) / 1 + 1 = 5 windows; window o
    # reads o..4 and 2e9 - 5 + o padding taps: max 4 at index 4, average (o + 4) / 2.
    x = np.arange(5, dtype=np.float32)
    w = windows([5], [2_000_000_000], None, None, [0], [1_999_999_999])
    y, idx = max_pool(x, w, indices=IndexLayout())
    np.testing.assert_array_equal(y, [4] * 5)
    np.testing.assert_array_equal(idx, [4] * 5)
    np.testing.assert_array_equal(avg_pool(x, w, divisor="real"), [2, 2.5, 3, 3.5, 4])


def test_max_indices_with_padding_dilation_and_stride():
    # x (1,1,4,4) = 0..15 with x[0,0,0,0] = 100. k=2, s=2, d=2, pads (1,1) both axes -> output 2x2:
    # axis taps: o=0 -> -1, 1 (real: 1); o=1 -> 1, 3 (real: 1, 3).
    # (0,0): real (1,1) = 5 -> index 5.                (0,1): (1,1)=5, (1,3)=7 -> 7.
    # (1,0): (1,1)=5, (3,1)=13 -> 13.                  (1,1): 5, 7, 13, 15 -> 15.
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    x[0, 0, 0, 0] = 100  # never read: every window skips row 0 and column 0
    y, idx = max_pool(x, windows([4, 4], [2, 2], [2, 2], [2, 2], [1, 1], [1, 1]), indices=IndexLayout())
    np.testing.assert_array_equal(y, [[[[5, 7], [13, 15]]]])
    np.testing.assert_array_equal(idx, [[[[5, 7], [13, 15]]]])


def test_max_ties_pick_the_first_tap_in_row_major_scan_order():
    # All equal: each window's first real tap. k=2x2, s=1, pads (1,1) begin only on H.
    # output row 0 reads rows -1 (padding) and 0: first real tap is (0, ow) -> index ow.
    # output row 1 reads rows 0 and 1: first real tap is (0, ow) -> index ow.
    x = np.ones((2, 3), dtype=np.float32)
    _, idx = max_pool(x, windows([2, 3], [2, 2], None, None, [1, 0], [0, 0]), indices=IndexLayout())
    np.testing.assert_array_equal(idx, [[0, 1], [0, 1]])


def test_max_nan_propagates_and_indexes_the_first_nan():
    # windows (k=2, s=1): [1, nan] -> nan at 1; [nan, 5] -> nan at 1; [5, nan] -> nan at 3; [nan, nan] -> 3.
    x = np.array([1, np.nan, 5, np.nan, np.nan], dtype=np.float32)
    y, idx = max_pool(x, windows([5], [2]), indices=IndexLayout())
    np.testing.assert_array_equal(y, [np.nan] * 4)
    np.testing.assert_array_equal(idx, [1, 1, 3, 3])


def test_max_empty_window_index_and_value():
    # x = [2, 9], k=1, s=1, pads (1, 1): windows read -1 (pad), 0, 1, 2 (pad).
    x = np.array([2, 9], dtype=np.int8)
    y, idx = max_pool(x, windows([2], [1], None, None, [1], [1]), indices=IndexLayout(empty_index=-5))
    np.testing.assert_array_equal(y, [-128, 2, 9, -128])
    np.testing.assert_array_equal(idx, [-5, 0, 1, -5])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.float16, ml_dtypes.bfloat16, np.float64])
def test_max_is_exact_in_the_input_dtype(dtype):
    # [1, 7, 3, 5] with k=2, s=2 -> [7, 5]; an extra empty window (pads (0, 2), ceil) gives the lowest value.
    x = np.array([1, 7, 3, 5], dtype=dtype)
    y = max_pool(x, windows([4], [2], [2], None, [0], [2], "ceil"))
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(y.astype(np.float64), [7, 5, float(lowest_value(np.dtype(dtype)))])


def test_max_uint8_uses_zero_as_lowest():
    assert lowest_value(np.dtype(np.uint8)) == 0
    assert lowest_value(np.dtype(ml_dtypes.bfloat16)) == -ml_dtypes.finfo(ml_dtypes.bfloat16).max


def test_max_3d_and_4d_spatial():
    # 4 spatial axes of length 2, k=2 everywhere: one window holding everything -> max 15 at index 15.
    x = np.arange(16, dtype=np.float32).reshape(2, 2, 2, 2)
    y, idx = max_pool(x, windows([2, 2, 2, 2], [2, 2, 2, 2]), indices=IndexLayout())
    assert y.shape == (1, 1, 1, 1) and y.item() == 15 and idx.item() == 15
    # 3-D, s=1, k=(1,1,2) over (1,2,3): pairs along the last axis -> [[[1, 2], [4, 5]]].
    x = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    np.testing.assert_array_equal(max_pool(x, windows([1, 2, 3], [1, 1, 2])), [[[1, 2], [4, 5]]])


# ---------------------------------------------------------------------------------------------- avg

def test_avg_divisors_real_padded_kernel_with_ceil_overhang():
    # x = [1, 2, 3, 4, 5], k=3, s=2, pads (1, 2), ceil: (5 + 3 - 3) / 2 = 2.5 -> 4 windows, starts -1, 1, 3, 5.
    # The padded extent is [-1, 7).
    #   start -1: taps -1,0,1 -> real {0,1} sum 3, padded count 3
    #   start  1: taps 1,2,3  -> sum 9, all real
    #   start  3: taps 3,4,5  -> real {3,4} sum 9, tap 5 is padding: padded count 3
    #   start  5: taps 5,6,7  -> no real tap, 5 and 6 are padding, 7 is past the padded extent: padded count 2
    # (ceil_torch drops that last window: it starts at 5 + 1 = 6 >= L + pb = 6 in padded coordinates.)
    x = np.array([1, 2, 3, 4, 5], dtype=np.float32)
    w = windows([5], [3], [2], None, [1], [2], "ceil")
    assert w[0].output == 4
    np.testing.assert_allclose(avg_pool(x, w, divisor="real", empty_value=-1), [3 / 2, 9 / 3, 9 / 2, -1])
    np.testing.assert_allclose(avg_pool(x, w, divisor="padded"), [3 / 3, 9 / 3, 9 / 3, 0 / 2])
    np.testing.assert_allclose(avg_pool(x, w, divisor="kernel"), [3 / 3, 9 / 3, 9 / 3, 0 / 3])
    assert windows([5], [3], [2], None, [1], [2], "ceil_torch")[0].output == 3


def test_avg_padded_divisor_zero_gives_the_empty_value():
    # x = [1, 2], k=1, s=3, pads (0, 0), ceil: (2 - 1) / 3 -> ceil 1 -> 2 windows at 0 and 3; the one at 3
    # is past the (unpadded) input: real 0, padded 0 -> empty value.
    x = np.array([1, 2], dtype=np.float32)
    w = windows([2], [1], [3], None, [0], [0], "ceil")
    np.testing.assert_array_equal(avg_pool(x, w, divisor="padded", empty_value=7), [1, 7])
    np.testing.assert_array_equal(avg_pool(x, w, divisor="padded"), [1, 0])


def test_avg_overhang_past_padded_extent_is_not_in_the_padded_divisor():
    # x = [1, 2, 3, 4], k=3, s=2, no pads, ceil_torch -> starts 0, 2: taps 0..2 (sum 6), 2..4 (tap 4 past the
    # end): real 2 (3 + 4 = 7), padded 2 (no padding, so the overhang is not counted), kernel 3.
    x = np.array([1, 2, 3, 4], dtype=np.float64)
    w = windows([4], [3], [2], None, [0], [0], "ceil_torch")
    np.testing.assert_allclose(avg_pool(x, w, divisor="padded"), [2, 3.5])
    np.testing.assert_allclose(avg_pool(x, w, divisor="kernel"), [2, 7 / 3])


def test_avg_2d_mixed_divisors_per_axis():
    # ones (3, 3), k=2x2, s=1, pads (1, 0) on both axes -> 3x3 outputs; row/col 0 have 1 real tap per axis.
    # H divisor "real": [1, 2, 2]; W divisor "kernel": [2, 2, 2]. Sums = real_H * real_W.
    # y[oh, ow] = real_H[oh] * real_W[ow] / (real_H[oh] * 2) = real_W[ow] / 2 = [0.5, 1, 1].
    x = np.ones((3, 3), dtype=np.float32)
    y = avg_pool(x, windows([3, 3], [2, 2], None, None, [1, 1], [0, 0]), divisor=("real", "kernel"))
    np.testing.assert_allclose(y, [[0.5, 1, 1]] * 3)


def test_avg_large_kernel_band_matrix_path():
    # k=7 uses the matrix-product pass. x = 0..9, k=7, s=3, pads (2, 2), exclude-pad:
    #   start -2: real 0..4 -> 10/5 = 2;  start 1: 1..7 -> 28/7 = 4;  start 4: 4..9 (tap 10 is padding) -> 39/6.
    x = np.arange(10, dtype=np.float32).reshape(1, 10)
    w = windows([10], [7], [3], None, [2], [2])
    np.testing.assert_allclose(avg_pool(x, w, divisor="real"), [[2, 4, 39 / 6]], rtol=1e-6)
    # padded counts: 7, 7, 7 (every tap inside [-2, 12)).
    np.testing.assert_allclose(avg_pool(x, w, divisor="padded"), [[10 / 7, 4, 39 / 7]], rtol=1e-6)


def test_avg_long_kernel_keeps_non_finite_values_in_their_own_windows():
    # k=7, s=1 over 10 elements (4 windows). Row 0 holds an inf at position 9, row 1 a NaN at position 0:
    # row 0 windows [0..6], [1..7], [2..8] sum 7 ones -> 1; [3..9] holds the inf -> inf.
    # row 1 window [0..6] holds the NaN -> NaN; the others -> 1. (A 0/1 band matrix product would
    # spread inf * 0 = NaN over the whole row.)
    x = np.ones((2, 10), dtype=np.float32)
    x[0, 9] = np.inf
    x[1, 0] = np.nan
    y = avg_pool(x, windows([10], [7]), divisor="real")
    np.testing.assert_array_equal(y, [[1, 1, 1, np.inf], [np.nan, 1, 1, 1]])
    np.testing.assert_array_equal(max_pool(-x, windows([10], [7])), [[-1, -1, -1, -1], [np.nan, -1, -1, -1]])


@pytest.mark.parametrize("kernel", [4, 5, 6, 7, 8, 9, 11, 16])
def test_long_kernels_sum_every_tap_once(kernel):
    # x[i] = 2**i (exact in float64): the window sum at start s is 2**s * (2**kernel - 1), so any tap
    # missing or counted twice changes the value. Stride 1, no pads: 20 - kernel + 1 windows.
    x = 2.0 ** np.arange(20)
    y = avg_pool(x, windows([20], [kernel]), divisor="kernel") * kernel
    starts = np.arange(20 - kernel + 1)
    np.testing.assert_array_equal(y, 2.0 ** starts * (2.0 ** kernel - 1))
    # max of an increasing sequence: the last tap, 2**(s + kernel - 1).
    np.testing.assert_array_equal(max_pool(x, windows([20], [kernel])), 2.0 ** (starts + kernel - 1))


@pytest.mark.parametrize("dtype, big, expected", [
    # float16 [2048, 1, 1]: in float16, 2048 + 1 rounds back to 2048 (spacing 2) and the mean would be
    # 2048 / 3 = 682.67 -> 682.5; accumulated in float32 it is 2050 / 3 = 683.33 -> 683.5 in float16.
    (np.float16, 2048, 683.5),
    # bfloat16 [256, 1, 1]: bfloat16 spacing at 256 is 2, so 256 + 1 + 1 would stay 256 (mean 85.33 -> 85.5);
    # in float32 258 / 3 = 86 exactly.
    (ml_dtypes.bfloat16, 256, 86.0),
])
def test_avg_low_precision_accumulates_in_float32(dtype, big, expected):
    x = np.array([big, 1, 1], dtype=dtype)
    y = avg_pool(x, windows([3], [3]), divisor="real")
    assert y.dtype == np.dtype(dtype)
    assert float(y[0]) == expected


def test_avg_rejects_integers():
    with pytest.raises(UnsupportedError, match="int8"):
        avg_pool(np.zeros(4, np.int8), windows([4], [2]), divisor="real")


def test_avg_bad_divisor_is_a_usage_error():
    with pytest.raises(UsageError, match="divisor 'all'"):
        avg_pool(np.zeros(4, np.float32), windows([4], [2]), divisor="all")
    with pytest.raises(UsageError, match="2 entries for 1"):
        avg_pool(np.zeros(4, np.float32), windows([4], [2]), divisor=("real", "real"))


# ---------------------------------------------------------------------------------------------- lp

@pytest.mark.parametrize("p, expected", [
    # x = [3, -4, 12], k=2, s=1: windows (3, -4) and (-4, 12).
    (1, [7, 16]),                               # |3| + |-4|, |-4| + |12|
    (2, [5, np.sqrt(160)]),                      # sqrt(9 + 16), sqrt(16 + 144)
    (3, [(27 + 64) ** (1 / 3), (64 + 1728) ** (1 / 3)]),
    (0.5, [(np.sqrt(3) + 2) ** 2, (2 + np.sqrt(12)) ** 2]),
])
def test_lp(p, expected):
    x = np.array([3, -4, 12], dtype=np.float64)
    np.testing.assert_allclose(lp_pool(x, windows([3], [2]), p=p), expected, rtol=1e-12)


def test_lp_padding_and_empty_windows_give_zero_contribution():
    # x = [3, 4], k=1, pads (1, 0): windows read -1 (padding: 0), 0 (3), 1 (4).
    x = np.array([3, 4], dtype=np.float32)
    np.testing.assert_array_equal(lp_pool(x, windows([2], [1], None, None, [1], [0]), p=2), [0, 3, 4])


@pytest.mark.parametrize("p", [0, -1, float("nan"), "two"])
def test_lp_rejects_bad_p(p):
    with pytest.raises(UsageError, match="p"):
        lp_pool(np.ones(3, np.float32), windows([3], [2]), p=p)


# ---------------------------------------------------------------------------------------------- global

def test_global_pools_keep_dims():
    # x (1, 2, 2, 2): channel 0 = [1, 2, 3, 4], channel 1 = [-1, 0, 0, -2].
    x = np.array([[[[1, 2], [3, 4]], [[-1, 0], [0, -2]]]], dtype=np.float32)
    np.testing.assert_allclose(global_pool(x, "avg", spatial_rank=2), [[[[2.5]], [[-0.75]]]])
    np.testing.assert_array_equal(global_pool(x, "max", spatial_rank=2), [[[[4]], [[0]]]])
    # p=2: sqrt(1 + 4 + 9 + 16) = sqrt(30); sqrt(1 + 4) = sqrt(5). p=1: 10 and 3.
    np.testing.assert_allclose(global_pool(x, "lp", spatial_rank=2), [[[[np.sqrt(30)]], [[np.sqrt(5)]]]], rtol=1e-6)
    np.testing.assert_allclose(global_pool(x, "lp", spatial_rank=2, p=1), [[[[10]], [[3]]]])
    # spatial_rank 3 reduces C too: mean of all 8 values = (10 - 3) / 8.
    assert global_pool(x, "avg", spatial_rank=3).shape == (1, 1, 1, 1)
    np.testing.assert_allclose(global_pool(x, "avg", spatial_rank=3).item(), 7 / 8)


def test_global_max_integers_and_dtype_kept():
    x = np.array([[[5, -3, 7]]], dtype=np.int8)
    y = global_pool(x, "max", spatial_rank=1)
    assert y.dtype == np.int8 and y.shape == (1, 1, 1) and y.item() == 7


def test_global_bad_arguments():
    with pytest.raises(UsageError, match="kind 'min'"):
        global_pool(np.ones((1, 2)), "min", spatial_rank=1)
    with pytest.raises(UsageError, match="spatial_rank 3"):
        global_pool(np.ones((1, 2)), "avg", spatial_rank=3)


# ---------------------------------------------------------------------------------------------- contracts

def test_input_is_never_modified_and_non_contiguous_input_works():
    base = np.arange(40, dtype=np.float32).reshape(5, 8)
    x = base[:, ::2]            # (5, 4), not contiguous
    snapshot = base.copy()
    w = windows([5, 4], [2, 2], None, None, [1, 1], [0, 0])
    y = max_pool(x, w)
    avg_pool(x, w, divisor="padded")
    lp_pool(x, w, p=2)
    lp_pool(x, w, p=3)
    np.testing.assert_array_equal(base, snapshot)
    # output (0, 0) reads only (0, 0) = 0; output (4, 3) reads x[3:5, 2:4] = base[3:5, 4:8:2] -> max 38.
    assert y[0, 0] == 0 and y[4, 3] == 38


def test_empty_batch_gives_empty_outputs_of_the_pooled_shape():
    # N = 0: (8 + 2 - 3) // 2 + 1 = 4 outputs per spatial axis, no values.
    x = np.zeros((0, 3, 8, 8), dtype=np.float32)
    w = windows([8, 8], [3, 3], [2, 2], None, [1, 1], [1, 1])
    y, idx = max_pool(x, w, indices=IndexLayout())
    assert y.shape == idx.shape == (0, 3, 4, 4)
    assert avg_pool(x, w, divisor="real").shape == lp_pool(x, w, p=2).shape == (0, 3, 4, 4)


def test_zero_length_axis_with_padding_has_only_empty_windows():
    # L = 0, k = 1, pads (1, 1): 0 + 2 - 1 + 1 = 2 windows, each reading one padding element only.
    x = np.zeros((1, 2, 0), dtype=np.float32)
    w = windows([0], [1], None, None, [1], [1])
    y, idx = max_pool(x, w, indices=IndexLayout(), empty_value=-9)
    np.testing.assert_array_equal(y, np.full((1, 2, 2), -9))
    np.testing.assert_array_equal(idx, np.full((1, 2, 2), -1))
    np.testing.assert_array_equal(avg_pool(x, w, divisor="real", empty_value=-1), np.full((1, 2, 2), -1))
    np.testing.assert_array_equal(avg_pool(x, w, divisor="padded"), np.zeros((1, 2, 2)))   # 0 / 1
    np.testing.assert_array_equal(lp_pool(x, w, p=2), np.zeros((1, 2, 2)))


def test_big_endian_input_is_pooled_in_its_own_precision():
    # float64 stored big-endian: (0.1 + 0.2) / 2 in float64 is 0.15000000000000002, not a float32 rounding.
    x = np.array([0.1, 0.2], dtype=">f8")
    y = avg_pool(x, windows([2], [2]), divisor="real")
    assert y.dtype == np.float64 and y[0] == (0.1 + 0.2) / 2


def test_identity_window_returns_a_copy():
    x = np.arange(4, dtype=np.float32)
    y = max_pool(x, windows([4], [1]))
    y[0] = 99
    assert x[0] == 0


def test_window_length_mismatch_is_a_usage_error():
    with pytest.raises(UsageError, match="resolved for length 4, the input has 5"):
        max_pool(np.zeros(5, np.float32), windows([4], [2]))
    with pytest.raises(UsageError, match="2 pooling windows for an input of rank 1"):
        max_pool(np.zeros(4, np.float32), windows([4, 4], [2, 2]))
