"""The surprising OpenVINO pooling rules (runtime/ir_ops/pooling.py, rules G*, A*, M*), hand-worked.

Every case states its arithmetic, checks poolir against that hand-worked expectation, and checks
OpenVINO against the same expectation, so the rule is pinned to OpenVINO's real behaviour and a
change in either shows up here.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from poolir.ir.errors import PoolirError
from tests.peers import openvino_run_xml
from tests.runtime.ir_cases import avg_pool_node, max_pool_node, run_poolir, single_layer_ir

F32_LOWEST = np.finfo(np.float32).min  # -3.4028235e38


def run_both(build, x, tmp_path, *, via_bf16=False):
    """(poolir outputs, OpenVINO outputs), each a list in output order."""
    path = single_layer_ir(build, x.shape, np.float32 if via_bf16 else x.dtype, tmp_path / "rule.xml",
                           via_bf16=via_bf16)
    feeds = {"x": x}
    ours, theirs = run_poolir(path, feeds), openvino_run_xml(path, feeds)
    return [ours[k] for k in sorted(ours)], [theirs[k] for k in sorted(theirs)]


def check(build, x, expected, tmp_path, *, via_bf16=False, exact=False):
    """poolir and OpenVINO both equal `expected` (a list: one array per output)."""
    ours, theirs = run_both(build, x, tmp_path, via_bf16=via_bf16)
    for name, got in (("poolir", ours), ("OpenVINO", theirs)):
        assert len(got) == len(expected), name
        for value, want in zip(got, expected):
            want = np.asarray(want)
            if exact or want.dtype.kind in "iu":
                np.testing.assert_array_equal(value, want, err_msg=name)
            else:
                np.testing.assert_allclose(value.astype(np.float64), want.astype(np.float64), rtol=1e-6,
                                           equal_nan=True, err_msg=name)
    return ours, theirs


def avg(version=16, **attrs):
    attrs.setdefault("rounding", "floor")
    attrs.setdefault("exclude_pad", False)
    return lambda x: avg_pool_node(version, x, **attrs)


def mx(version=14, **attrs):
    attrs.setdefault("rounding", "floor")
    return lambda x: max_pool_node(version, x, **attrs)


def row(*values, dtype=np.float32):
    return np.array(values, dtype=dtype).reshape(1, 1, -1)


# --- AvgPool divisor ------------------------------------------------------------------------------

@pytest.mark.parametrize("version", [1, 14, 16])
def test_a2_kernel_divisor_counts_taps_past_the_padded_extent(version, tmp_path):
    # ones(5), k=3, s=2, pads (0, 1), ceil: out = ceil((5 + 1 - 3) / 2) + 1 = 3, windows start 0, 2, 4.
    # Taps (0,1,2) and (2,3,4): 3 real / 3. Taps (4,5,6): 1 real; tap 5 is padding, tap 6 is past the
    # padded extent [0, 6) and still counts: 1 / 3 (ONNX count_include_pad would give 1 / 2).
    check(avg(version, kernel=[3], strides=[2], pads_begin=[0], pads_end=[1], rounding="ceil"),
          np.ones((1, 1, 5), np.float32), [row(1, 1, 1 / 3)], tmp_path)


def test_a3_zero_pads_divide_by_real_taps(tmp_path):
    # ones(6), k=3, s=2, pads 0, ceil: windows start 0, 2, 4; the last has taps 4, 5 real and 6 past
    # the end: all pads are zero, so OpenVINO divides by the 2 real taps: 2 / 2 = 1.
    check(avg(kernel=[3], strides=[2], pads_begin=[0], pads_end=[0], rounding="ceil"),
          np.ones((1, 1, 6), np.float32), [row(1, 1, 1)], tmp_path)


def test_a2_full_kernel_on_every_axis_once_any_pad_is_non_zero(tmp_path):
    # ones(6x6), k=3x3, s=2x2, pads_begin (1, 0), pads_end (0, 0), ceil -> 3x3 outputs.
    # Axis 0 windows start -1, 1, 3: real taps 2, 3, 3. Axis 1 (its pads are zero) starts 0, 2, 4:
    # real taps 3, 3, 2. Divisor 9 everywhere: y = real0 * real1 / 9.
    expected = np.array([[6, 6, 4], [9, 9, 6], [9, 9, 6]], np.float32).reshape(1, 1, 3, 3) / 9
    check(avg(kernel=[3, 3], strides=[2, 2], pads_begin=[1, 0], pads_end=[0, 0], rounding="ceil"),
          np.ones((1, 1, 6, 6), np.float32), [expected], tmp_path)


def test_a2_kernel_divisor_with_dilation(tmp_path):
    # ones(7), k=3, d=2 (effective 5), s=2, pads (1, 1), ceil: out = ceil((7 + 2 - 5) / 2) + 1 = 3.
    # Taps (-1, 1, 3): 2 real / 3; (1, 3, 5): 3 / 3; (3, 5, 7): 2 real / 3.
    check(avg(kernel=[3], dilations=[2], strides=[2], pads_begin=[1], pads_end=[1], rounding="ceil"),
          np.ones((1, 1, 7), np.float32), [row(2 / 3, 1, 2 / 3)], tmp_path)


def test_a1_exclude_pad_divides_by_real_taps_with_dilation(tmp_path):
    # Same geometry, exclude-pad=true: 2/2, 3/3, 2/2.
    check(avg(kernel=[3], dilations=[2], strides=[2], pads_begin=[1], pads_end=[1], rounding="ceil",
              exclude_pad=True), np.ones((1, 1, 7), np.float32), [row(1, 1, 1)], tmp_path)


def test_a2_same_lower_pads_count_as_pads(tmp_path):
    # ones(5), k=4, s=1, same_lower: total pad 3 -> (2, 1). Pads are non-zero -> divisor 4.
    # Windows start -2..2: real taps 2, 3, 4, 4, 3.
    check(avg(kernel=[4], strides=[1], pads_begin=[0], pads_end=[0], auto_pad="same_lower"),
          np.ones((1, 1, 5), np.float32), [row(0.5, 0.75, 1, 1, 0.75)], tmp_path)


def test_a4_empty_window_is_nan_when_it_starts_at_the_end(tmp_path):
    # x = 1..4, k=2, s=2, pads (0, 1), ceil, exclude-pad: windows start 0, 2, 4. (1+2)/2, (3+4)/2, and
    # the window at 4 = L has no real tap: OpenVINO's count there is 0 -> 0/0 = NaN.
    check(avg(kernel=[2], strides=[2], pads_begin=[0], pads_end=[1], rounding="ceil", exclude_pad=True),
          row(1, 2, 3, 4), [row(1.5, 3.5, np.nan)], tmp_path)


def test_a4_empty_window_past_the_end_is_signed_zero(tmp_path):
    # x = 1..6, k=1, s=4, valid, ceil: out = ceil((6 - 1) / 4) + 1 = 3, windows at 0, 4, 8. The window at
    # 8 > L has count L - 8 = -2: 0 / -2 = -0.0. In 2-D the corner window is 0 / ((-2) * (-2)) = +0.0.
    ours, theirs = check(avg(kernel=[1], strides=[4], pads_begin=[0], pads_end=[0], rounding="ceil",
                             auto_pad="valid"), row(1, 2, 3, 4, 5, 6), [row(1, 5, 0)], tmp_path)
    assert np.signbit(ours[0][0, 0, 2]) and np.signbit(theirs[0][0, 0, 2])
    x = np.arange(1, 37, dtype=np.float32).reshape(1, 1, 6, 6)
    expected = np.array([[1, 5, 0], [25, 29, 0], [0, 0, 0]], np.float32).reshape(1, 1, 3, 3)
    ours, theirs = check(avg(kernel=[1, 1], strides=[4, 4], pads_begin=[0, 0], pads_end=[0, 0],
                             rounding="ceil", auto_pad="valid"), x, [expected], tmp_path)
    assert [bool(np.signbit(v)) for v in ours[0].reshape(-1)] == [bool(np.signbit(v)) for v in theirs[0].reshape(-1)]


def test_a4_empty_window_between_dilated_taps_is_nan(tmp_path):
    # x = [1], k=2, d=3, pads (2, 2), exclude-pad: windows start -2, -1 with taps (-2, 1) and (-1, 2):
    # no real tap, count 0 -> NaN.
    check(avg(kernel=[2], dilations=[3], strides=[1], pads_begin=[2], pads_end=[2], exclude_pad=True),
          row(1), [row(np.nan, np.nan)], tmp_path)


def test_a4_include_pad_empty_window_is_zero(tmp_path):
    # ones(3), k=2, s=1, pads (3, 3), exclude-pad=false: out = 3 + 6 - 2 + 1 = 8; windows at -3, -2 and
    # 3, 4 hold no real tap: 0 / 2 = 0. Windows at -1 and 2: 1 / 2; at 0 and 1: 2 / 2.
    check(avg(kernel=[2], strides=[1], pads_begin=[3], pads_end=[3]), np.ones((1, 1, 3), np.float32),
          [row(0, 0, 0.5, 1, 1, 0.5, 0, 0)], tmp_path)


def test_a5_exclude_pad_with_pads_not_smaller_than_the_kernel_is_refused(tmp_path):
    # OpenVINO cannot even build this layer; write a valid one and raise its pads in the XML text.
    path = single_layer_ir(avg(kernel=[2], strides=[1], pads_begin=[1], pads_end=[1], exclude_pad=True),
                           (1, 1, 4), np.float32, tmp_path / "a5.xml")
    text = path.read_text().replace('pads_begin="1"', 'pads_begin="2"')
    path.write_text(text.replace("<dim>5</dim>", "<dim>6</dim>"))
    import openvino as ov

    with pytest.raises(Exception, match="entirely in the padding"):
        ov.Core().read_model(str(path))
    with pytest.raises(PoolirError, match="padding"):
        run_poolir(path, {"x": np.ones((1, 1, 4), np.float32)})


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int32])
def test_a6_integer_average_rounds_half_to_even(dtype, tmp_path):
    # k=2, s=2: (2+3)/2 = 2.5 -> 2, (4+5)/2 = 4.5 -> 4, (1+2)/2 = 1.5 -> 2, (7+8)/2 = 7.5 -> 8.
    check(avg(kernel=[2], strides=[2], pads_begin=[0], pads_end=[0]),
          row(2, 3, 4, 5, 1, 2, 7, 8, dtype=dtype), [row(2, 4, 2, 8, dtype=dtype)], tmp_path)


def test_a6_negative_integer_average_rounds_half_to_even(tmp_path):
    # (-2-3)/2 = -2.5 -> -2, (-1-2)/2 = -1.5 -> -2, (-4-5)/2 = -4.5 -> -4.
    check(avg(kernel=[2], strides=[2], pads_begin=[0], pads_end=[0]),
          row(-2, -3, -1, -2, -4, -5, dtype=np.int8), [row(-2, -2, -4, dtype=np.int8)], tmp_path)


# --- geometry ------------------------------------------------------------------------------------

@pytest.mark.parametrize("auto_pad", ["same_upper", "same_lower", "valid"])
def test_g2_g3_auto_pad_keeps_the_rounding_type(auto_pad, tmp_path):
    # x = 1..6, k=1, s=4: SAME pads are 0 (total max(0, (2-1)*4 + 1 - 6) = 0). ceil: ceil(5/4)+1 = 3
    # outputs at 0, 4, 8 (the last empty: the floor value); ceil_torch drops the window at 8 >= L;
    # floor gives 2. ceil_torch needs MaxPool-14.
    x = row(1, 2, 3, 4, 5, 6)
    common = dict(kernel=[1], strides=[4], pads_begin=[1], pads_end=[1], auto_pad=auto_pad)
    check(mx(1, rounding="ceil", **common), x, [row(1, 5, F32_LOWEST)], tmp_path)
    check(mx(14, rounding="ceil_torch", **common), x, [row(1, 5), row(0, 4, dtype=np.int64)], tmp_path)
    check(mx(1, rounding="floor", **common), x, [row(1, 5)], tmp_path)


def test_g4_valid_ignores_explicit_pads(tmp_path):
    # ones(6), k=3, s=2, pads (1, 1) but valid: pads 0, ceil -> 3 outputs, all real-tap averages = 1.
    check(avg(kernel=[3], strides=[2], pads_begin=[1], pads_end=[1], rounding="ceil", auto_pad="valid"),
          np.ones((1, 1, 6), np.float32), [row(1, 1, 1)], tmp_path)


# --- MaxPool --------------------------------------------------------------------------------------

def test_m2_ceil_keeps_a_window_in_the_padding_and_ceil_torch_drops_it(tmp_path):
    # x = 1..4, k=2, s=2, pads (0, 1): ceil -> windows 0, 2, 4; the window at 4 is all padding: the
    # floor value, index 0 (the slab origin). ceil_torch drops it (4 >= L + pad_begin = 4).
    common = dict(kernel=[2], strides=[2], pads_begin=[0], pads_end=[1])
    check(mx(rounding="ceil", **common), row(1, 2, 3, 4),
          [row(2, 4, F32_LOWEST), row(1, 3, 0, dtype=np.int64)], tmp_path)
    check(mx(rounding="ceil_torch", **common), row(1, 2, 3, 4), [row(2, 4), row(1, 3, dtype=np.int64)],
          tmp_path)


def test_m1_nan_never_wins(tmp_path):
    # k=2, s=1 over [nan, 1, nan, nan, 2]: (nan, 1) -> 1 at 1; (1, nan) -> 1 at 1; (nan, nan) -> nothing
    # beats the floor: floor, index 0; (nan, 2) -> 2 at 4.
    check(mx(kernel=[2], strides=[1], pads_begin=[0], pads_end=[0]), row(np.nan, 1, np.nan, np.nan, 2),
          [row(1, 1, F32_LOWEST, 2), row(1, 1, 0, 4, dtype=np.int64)], tmp_path)


def test_m1_minus_infinity_and_the_floor_itself_never_win(tmp_path):
    # [1, lowest, lowest, -inf, 2], k=2, s=1: (1, lowest) -> 1 at 0; (lowest, lowest) -> floor, index 0
    # (not 1: a tap must be strictly greater than the floor); (lowest, -inf) -> floor, 0; (-inf, 2) -> 2 at 4.
    check(mx(kernel=[2], strides=[1], pads_begin=[0], pads_end=[0]), row(1, F32_LOWEST, F32_LOWEST, -np.inf, 2),
          [row(1, F32_LOWEST, F32_LOWEST, 2), row(0, 0, 0, 4, dtype=np.int64)], tmp_path)


@pytest.mark.parametrize("dtype, floor", [
    (np.float16, -np.inf), (np.float64, F32_LOWEST), (np.int8, -128), (np.uint8, 0),
    (np.int32, np.iinfo(np.int32).min), (np.int64, np.iinfo(np.int32).min),
])
def test_m1_floor_value_per_element_type(dtype, floor, tmp_path):
    # x = [1, 2, 3, 4], k=2, s=2, pads (0, 1), ceil: [2, 4, floor].
    x = row(1, 2, 3, 4, dtype=dtype)
    check(mx(1, kernel=[2], strides=[2], pads_begin=[0], pads_end=[1], rounding="ceil"), x,
          [row(2, 4, floor, dtype=dtype)], tmp_path)


def test_m1_bfloat16_floor_is_bfloat16_lowest(tmp_path):
    # Through Convert f32 -> bf16 -> MaxPool -> Convert f32: the empty window is bfloat16's lowest finite.
    lowest = -float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
    check(mx(1, kernel=[2], strides=[2], pads_begin=[0], pads_end=[1], rounding="ceil"), row(1, 2, 3, 4),
          [row(2, 4, lowest)], tmp_path, via_bf16=True)


def test_m2_empty_window_index_is_the_slab_origin(tmp_path):
    # x = -(1..16) of shape (2, 2, 4), k=2, s=2, pads (0, 1), ceil: every slab's window at 4 is all padding.
    # axis=0: its index is the flat index of element (n, c, 0) = 4 * (2n + c); axis=2: 0.
    x = -np.arange(1, 17, dtype=np.float32).reshape(2, 2, 4)
    common = dict(kernel=[2], strides=[2], pads_begin=[0], pads_end=[1], rounding="ceil")
    values = np.stack([x[..., 0], x[..., 2], np.full((2, 2), F32_LOWEST, np.float32)], axis=-1)
    flat = np.array([[[0, 2, 0], [4, 6, 4]], [[8, 10, 8], [12, 14, 12]]])
    check(mx(axis=0, **common), x, [values, flat], tmp_path)
    check(mx(axis=2, **common), x, [values, np.tile([0, 2, 0], (2, 2, 1))], tmp_path)


def test_m2_u8_zeros_equal_to_the_floor_report_the_slab_origin(tmp_path):
    # u8 floor is 0: a window of real zeros never beats it, so its index is the slab origin (4 for c=1).
    x = np.array([[[1, 0, 0, 0], [0, 0, 0, 0]]], np.uint8)
    check(mx(kernel=[2], strides=[1], pads_begin=[0], pads_end=[0]), x,
          [np.array([[[1, 0, 0], [0, 0, 0]]], np.uint8), np.array([[[0, 0, 0], [4, 4, 4]]])], tmp_path)


@pytest.mark.parametrize("axis, expected", [
    # x (1, 2, 1, 3): c0 = [1, 3, 2], c1 = [6, 5, 4]; k = (1, 2), s = 1: maxima c0 at w = 1, 1; c1 at w = 0, 1.
    (0, [[1, 1], [3, 4]]),   # flat over (N, C, H, W): c1 starts at 3
    (1, [[1, 1], [3, 4]]),   # over (C, H, W): the same, N = 1
    (-3, [[1, 1], [3, 4]]),
    (2, [[1, 1], [0, 1]]),   # over (H, W)
    (-1, [[1, 1], [0, 1]]),  # over W alone
    (3, [[1, 1], [0, 1]]),
])
def test_m3_axis_sets_where_flattening_starts(axis, expected, tmp_path):
    x = np.array([1, 3, 2, 6, 5, 4], np.float32).reshape(1, 2, 1, 3)
    check(mx(kernel=[1, 2], strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], axis=axis, index_type="i32"), x,
          [np.array([[3, 3], [6, 5]], np.float32).reshape(1, 2, 1, 2),
           np.array(expected, np.int32).reshape(1, 2, 1, 2)], tmp_path)


def test_m3_ties_go_to_the_first_tap(tmp_path):
    # ones(3x3), k=2x2, s=1: every window is a tie; its first tap (row-major) is its top-left corner.
    check(mx(kernel=[2, 2], strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0]), np.ones((1, 1, 3, 3), np.float32),
          [np.ones((1, 1, 2, 2), np.float32), np.array([0, 1, 3, 4]).reshape(1, 1, 2, 2)], tmp_path)


def test_rounding_not_allowed_in_the_version_is_refused(tmp_path):
    # ceil_torch exists from AvgPool-14; an AvgPool-1 layer with it is invalid.
    path = single_layer_ir(avg(14, kernel=[2], strides=[2], pads_begin=[0], pads_end=[0], rounding="ceil_torch"),
                           (1, 1, 4), np.float32, tmp_path / "r.xml")
    path.write_text(path.read_text().replace('type="AvgPool" version="opset14"', 'type="AvgPool" version="opset1"'))
    with pytest.raises(PoolirError, match="ceil_torch"):
        run_poolir(path, {"x": np.ones((1, 1, 4), np.float32)})


def test_maxpool_axis_out_of_range_is_refused(tmp_path):
    path = single_layer_ir(mx(kernel=[2], strides=[2], pads_begin=[0], pads_end=[0], axis=2), (1, 1, 4),
                           np.float32, tmp_path / "ax.xml")
    path.write_text(path.read_text().replace('axis="2"', 'axis="3"'))
    with pytest.raises(PoolirError, match="axis"):
        run_poolir(path, {"x": np.ones((1, 1, 4), np.float32)})


def test_m1_f16_nan_never_wins_and_the_floor_is_minus_infinity(tmp_path):
    # f16 [1, 2, nan, nan], k=2, s=2, pads (0, 1), ceil: (1, 2) -> 2 at 1; (nan, nan) -> -inf, index 0;
    # the all-padding window -> -inf, index 0.
    check(mx(kernel=[2], strides=[2], pads_begin=[0], pads_end=[1], rounding="ceil"),
          row(1, 2, np.nan, np.nan, dtype=np.float16),
          [row(2, -np.inf, -np.inf, dtype=np.float16), row(1, 0, 0, dtype=np.int64)], tmp_path)


def test_m1_bfloat16_nan_and_minus_infinity_give_the_bfloat16_floor(tmp_path):
    # bf16 [1, 2, nan, -inf, 4, 5], k=2, s=2, pads (0, 1), ceil: 2; (nan, -inf) -> floor; 5; padding -> floor.
    lowest = -float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
    check(mx(1, kernel=[2], strides=[2], pads_begin=[0], pads_end=[1], rounding="ceil"),
          row(1, 2, np.nan, -np.inf, 4, 5), [row(2, lowest, 5, lowest)], tmp_path, via_bf16=True)


@pytest.mark.parametrize("dtype", [np.float16, np.uint8, np.int8])
def test_a4_empty_windows_in_other_element_types(dtype, tmp_path):
    # [1, 2, 3, 4], k=2, s=2, pads (0, 1), ceil, exclude-pad: the empty window at 4 is NaN in f16 and 0
    # for integers (u8/i8: 1.5 -> 2, 3.5 -> 4 rounded half to even).
    expected = row(1.5, 3.5, np.nan, dtype=dtype) if dtype == np.float16 else row(2, 4, 0, dtype=dtype)
    check(avg(kernel=[2], strides=[2], pads_begin=[0], pads_end=[1], rounding="ceil", exclude_pad=True),
          row(1, 2, 3, 4, dtype=dtype), [expected], tmp_path)
