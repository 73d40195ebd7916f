"""The window queries the converters ask ir.geometry (its appended section), against brute force over lengths.

The oracle is counting: every answer is checked by trying the lengths or pads one by one with output_length
and AxisWindow, which are pinned against OpenVINO and ONNX elsewhere (tests/ir, tests/runtime)."""

from __future__ import annotations

import itertools

import pytest

from poolir.ir.geometry import (ROUNDINGS, AxisSpec, axis_specs, covering_pad_end, keeps_a_window_ceil_torch_drops,
                                kernel_fits, output_length, overhang_possible, overhangs, padding_window_possible,
                                rounding_matters_with_same_pads, same_pads, shortest_length_with_a_window,
                                smallest_pad_end)

LENGTHS = range(1, 60)
SPECS = [AxisSpec(k, s, d, pb, pe) for k, s, d, pb, pe in itertools.product(range(1, 5), range(1, 5), range(1, 3),
                                                                            range(0, 4), range(0, 4))]


def test_worked_examples_of_the_docstrings():
    assert AxisSpec(3, 2, 2, 1, 1).effective_kernel == 5 and AxisSpec(3, 2, 2, 1, 1).count(8, "floor") == 3
    assert axis_specs((2, 3), (2, 1)) == (AxisSpec(2, 2, 1, 0, 0), AxisSpec(3, 1, 1, 0, 0))
    assert covering_pad_end(AxisSpec(2, 2).window(5, "ceil")) == 1
    assert covering_pad_end(AxisSpec(2, 2).window(5, "floor")) == 0
    assert overhangs(AxisSpec(3, 2, 1, 1, 1).window(6, "ceil")) and not overhangs(AxisSpec(3, 2, 1, 1, 1).window(6, "floor"))
    assert kernel_fits(AxisSpec(3, 3), 3) and not kernel_fits(AxisSpec(3, 3), 1)
    assert smallest_pad_end(AxisSpec(2, 2), 5, 3, "floor") == 1
    assert smallest_pad_end(AxisSpec(2, 2), 5, 3, "ceil_torch") == 0
    assert keeps_a_window_ceil_torch_drops(AxisSpec(2, 2, 1, 0, 1), "ceil")
    assert not keeps_a_window_ceil_torch_drops(AxisSpec(2, 2, 1, 0, 1), "floor")
    assert keeps_a_window_ceil_torch_drops(AxisSpec(1, 1, 1, 0, 1), "floor")
    assert rounding_matters_with_same_pads(AxisSpec(1, 3))
    assert shortest_length_with_a_window(AxisSpec(3, 3), "floor") == 3
    assert shortest_length_with_a_window(AxisSpec(3, 3), "ceil") == 1
    assert padding_window_possible(AxisSpec(2, 2, 1, 0, 2), "floor", "explicit")
    assert padding_window_possible(AxisSpec(1, 2), "ceil", "explicit")


@pytest.mark.parametrize("rounding", ROUNDINGS)
def test_smallest_pad_end_is_the_first_pad_end_giving_the_count(rounding):
    for k, s, d, pb, length, windows in itertools.product(range(1, 4), range(1, 4), range(1, 3), range(0, 3),
                                                          range(1, 9), range(1, 7)):
        counts = [output_length(length, k, s, d, pb, pe, rounding) for pe in range(0, 60)]
        expected = None if counts[0] > windows else counts.index(windows)
        assert smallest_pad_end(AxisSpec(k, s, d, pb), length, windows, rounding) == expected


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_length_independent_queries_agree_with_trying_every_length(spec):
    def windows(rounding, auto_pad="explicit"):
        unpadded = AxisSpec(spec.kernel, spec.stride, spec.dilation)
        resolved = unpadded if auto_pad == "valid" else spec
        return [resolved.window(length, rounding) for length in LENGTHS if resolved.count(length, rounding) >= 1]

    assert overhang_possible(spec) == any(overhangs(w) for r in ("ceil", "ceil_torch") for w in windows(r))
    for rounding in ROUNDINGS:
        assert keeps_a_window_ceil_torch_drops(spec, rounding) == any(
            spec.count(length, rounding) > spec.count(length, "ceil_torch") for length in LENGTHS)
        shortest = min(length for length in LENGTHS if spec.count(length, rounding) >= 1)
        assert shortest_length_with_a_window(spec, rounding) == shortest
        for auto_pad in ("explicit", "valid"):
            assert padding_window_possible(spec, rounding, auto_pad) == any(
                not w.real_taps().all() for w in windows(rounding, auto_pad))


@pytest.mark.parametrize("spec", [s for s in SPECS if s.pad_begin == s.pad_end == 0], ids=str)
def test_rounding_matters_with_same_pads_when_some_length_differs(spec):
    def count(length, mode, rounding):
        pads = same_pads(length, spec.kernel, spec.stride, spec.dilation, mode)
        return output_length(length, spec.kernel, spec.stride, spec.dilation, *pads, rounding)

    for mode in ("same_upper", "same_lower"):
        assert rounding_matters_with_same_pads(spec) == any(
            count(length, mode, "floor") != count(length, mode, "ceil") for length in LENGTHS)
