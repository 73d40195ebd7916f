"""Pooling geometry against hand-worked cases (each computed on paper, window by window)."""

import numpy as np
import pytest

from poolir.ir.errors import UsageError
from poolir.ir.geometry import axis_window, pool_windows, same_pads


@pytest.mark.parametrize("rounding, expected", [("floor", 2), ("ceil", 3), ("ceil_torch", 2)])
def test_docstring_example_last_window_in_right_padding(rounding, expected):
    # L=4, k=2, s=2, pads (0,1): windows start at 0, 2 and (ceil only) 4, which is all padding.
    assert axis_window(4, 2, 2, 1, 0, 1, rounding).output == expected


def test_ceil_torch_keeps_a_last_window_that_starts_in_real_input():
    # L=5, k=2, s=2, no pads: windows at 0, 2, 4; the last covers input 4 and one overhang tap.
    assert axis_window(5, 2, 2, rounding="floor").output == 2
    assert axis_window(5, 2, 2, rounding="ceil_torch").output == 3
    assert axis_window(5, 2, 2, rounding="ceil").output == 3


def test_ceil_allows_kernel_longer_than_input():
    # L=2, k=3, s=2: floor has no complete window; ceil keeps the one starting at 0.
    with pytest.raises(UsageError, match="output length 0 < 1"):
        axis_window(2, 3, 2, rounding="floor")
    assert axis_window(2, 3, 2, rounding="ceil_torch").output == 1


@pytest.mark.parametrize("length, kernel, stride, dilation, upper, lower", [
    (32, 2, 2, 1, (0, 0), (0, 0)),  # out 16: (15*2 + 2 - 32) = 0
    (32, 5, 2, 1, (1, 2), (2, 1)),  # out 16: 30 + 5 - 32 = 3
    (5, 3, 1, 2, (2, 2), (2, 2)),   # ek 5, out 5: 4 + 5 - 5 = 4
    (6, 3, 2, 2, (1, 2), (2, 1)),   # ek 5, out 3: 4 + 5 - 6 = 3
    (5, 1, 3, 1, (0, 0), (0, 0)),   # out 2: 3 + 1 - 5 < 0, clamped to 0
])
def test_same_padding(length, kernel, stride, dilation, upper, lower):
    assert same_pads(length, kernel, stride, dilation, "same_upper") == upper
    assert same_pads(length, kernel, stride, dilation, "same_lower") == lower
    for auto_pad in ("same_upper", "same_lower"):
        # auto padding always yields ceil(L / s), whatever rounding the caller asks for
        for rounding in ("floor", "ceil", "ceil_torch"):
            window = axis_window(length, kernel, stride, dilation, rounding=rounding, auto_pad=auto_pad)
            assert window.output == -(-length // stride)


def test_valid_ignores_explicit_pads():
    window = axis_window(32, 5, 2, 1, 1, 1, auto_pad="valid")
    assert (window.pad_begin, window.pad_end, window.output) == (0, 0, 14)


def test_tap_counts_with_padding_overhang_and_dilation():
    # L=5, k=3, s=2, d=1, pads (1,1), ceil: padded length 7, starts -1, 1, 3 (and 5 under plain ceil:
    # ceil((7-3)/2)+1 = 3, so only three windows). Taps: [-1,0,1] [1,2,3] [3,4,5]
    window = axis_window(5, 3, 2, 1, 1, 1, "ceil")
    assert window.output == 3
    assert window.real_taps().tolist() == [2, 3, 2]
    assert window.padded_taps().tolist() == [3, 3, 3]
    # L=4, k=3, s=2, pads (1,0), ceil: span 4+1-3 = 2 -> 2 windows: [-1,0,1] [1,2,3]; one more under ceil? ceil(2/2)+1 = 2.
    # L=4, k=3, s=3, pads (1,1), ceil: span 3 -> ceil(1)+1 = 2 windows [-1,0,1] [2,3,4]; tap 4 is padding.
    window = axis_window(4, 3, 3, 1, 1, 1, "ceil")
    assert window.real_taps().tolist() == [2, 2]
    assert window.padded_taps().tolist() == [3, 3]
    # L=4, k=3, s=3, pads (1,0), ceil: windows [-1,0,1] [2,3,4]; tap 4 is past the padded extent.
    window = axis_window(4, 3, 3, 1, 1, 0, "ceil")
    assert window.output == 2
    assert window.real_taps().tolist() == [2, 2]
    assert window.padded_taps().tolist() == [3, 2]
    # dilation 2, k=2, L=5, s=1, pads (2,0): taps {-2,0} {-1,1} {0,2} {1,3} {2,4} -> 4+... outputs
    window = axis_window(5, 2, 1, 2, 2, 0)
    assert window.output == 5
    assert window.real_taps().tolist() == [1, 1, 2, 2, 2]


@pytest.mark.parametrize("kwargs, message", [
    (dict(kernel=0), "kernel 0 must be >= 1"),
    (dict(stride=0), "stride 0 must be >= 1"),
    (dict(dilation=0), "dilation 0 must be >= 1"),
    (dict(pad_begin=-1), "pad_begin -1 must be >= 0"),
    (dict(rounding="round"), "rounding 'round'"),
    (dict(auto_pad="same"), "auto_pad 'same'"),
])
def test_out_of_range_values_are_rejected(kwargs, message):
    args = dict(length=8, kernel=2)
    args.update(kwargs)
    with pytest.raises(UsageError, match=message):
        axis_window(**args)


def test_pool_windows_names_the_axis_and_checks_lengths():
    with pytest.raises(UsageError, match="spatial axis 1: stride 0"):
        pool_windows([8, 8], [2, 2], strides=[1, 0])
    with pytest.raises(UsageError, match="strides has 1 values for 2 spatial axes"):
        pool_windows([8, 8], [2, 2], strides=[1])
    assert [w.output for w in pool_windows([8, 9], [2, 3], [2, 3])] == [4, 3]
    assert isinstance(pool_windows([8], [2])[0].starts(), np.ndarray)


@pytest.mark.parametrize("name", ["stride", "kernel", "dilation", "pad_begin", "pad_end"])
def test_values_beyond_int32_are_rejected_before_int64_arithmetic(name):
    # Found by tests/robustness: strides="1, 9223372036854775808" in an IR file overflowed numpy in starts().
    with pytest.raises(UsageError, match=f"{name} {2**63} must be <= 2147483647"):
        axis_window(**{"length": 8, "kernel": 2, name: 2**63})
    assert axis_window(length=8, kernel=1, stride=2**31 - 1).output == 1
