"""runtime.live_memory: the live set of a run, planned and tracked (hand-worked cases)."""

from __future__ import annotations

import numpy as np
import pytest

from poolir.ir.budget import bytes_in_use, check_allocation, set_max_memory
from poolir.ir.errors import BudgetError
from poolir.runtime.live_memory import LiveBytes, planned_peak


def test_a_view_counts_with_its_base_once():
    live = LiveBytes()
    base = np.zeros(100, np.float32)  # 400 bytes
    view = base.reshape(10, 10)[2:]
    live.add(base)
    live.add(view)
    assert live.total == 400
    live.remove(base)
    assert live.total == 400  # the view still holds the block
    live.remove(view)
    assert live.total == 0


def test_the_planned_peak_counts_outputs_while_inputs_live_and_frees_after_the_last_use():
    # resident 10; step 0 makes a (100); step 1 makes b (50) from a, freeing a; step 2 makes c (70) from b.
    sizes = {"a": 100, "b": 50, "c": 70}
    steps = [(["a"], []), (["b"], ["a"]), (["c"], ["b"])]
    assert planned_peak(steps, sizes.get, 10) == (160, 1)  # 10 + a + b at step 1; then 10 + b + c = 130
    assert planned_peak(steps, sizes.get, 10, limit=100) == (110, 0)  # the first step over 100 is named


def test_an_allocation_must_fit_beside_the_live_tensors():
    set_max_memory(1000)
    try:
        check_allocation((100,), 4, "the output")  # 400 of 1000
        with bytes_in_use(700):
            with pytest.raises(BudgetError, match=r"the output \[100\] needs 400 bytes, which beside 700 bytes of "
                                                  r"live tensors exceeds the memory budget of 1000 bytes"):
                check_allocation((100,), 4, "the output")
    finally:
        set_max_memory(None)
