"""runtime.kernels.ufunc_buffer: which operands get which numpy ufunc buffer (hand-worked cases)."""

from __future__ import annotations

import numpy as np
import pytest

from poolir.runtime.kernels.ufunc_buffer import fitted, merged_run


@pytest.mark.parametrize("shapes, run, total", [
    ([(1, 256, 56, 56), (1, 256, 1, 1)], 56 * 56, 256 * 56 * 56),   # per channel: H and W merge, C does not
    ([(256, 3136), (1, 3136)], 3136, 256 * 3136),                     # one row for every channel
    ([(4, 5), (4, 5)], 20, 20),                                       # equal contiguous shapes merge completely
    ([(4, 5), ()], 20, 20),                                           # a scalar breaks nothing
    ([(2, 1, 5), (1, 3, 1)], 5, 30),                                  # the output is [2, 3, 5]
    ([(8, 1, 1), (8, 6, 7)], 42, 336),
    ([(3, 1, 4, 1), (1, 5, 1, 1)], 4, 60),                            # size-1 output axes are skipped
])
def test_a_broadcast_operand_stops_the_merge_where_its_pattern_changes(shapes, run, total):
    assert merged_run(*shapes) == (run, total)


def _bufsize_inside(*operands) -> int:
    with fitted(*operands):
        return np.getbufsize()


def test_a_buffer_of_one_run_only_for_runs_between_the_crossover_and_the_buffer():
    default = np.getbufsize()
    zeros = lambda *shape: np.zeros(shape, np.float32)  # noqa: E731
    assert _bufsize_inside(zeros(1, 256, 56, 56), zeros(1, 256, 1, 1)) == 3136       # run 3136: a buffer of one run
    assert _bufsize_inside(zeros(64, 784), zeros(1, 784)) == default                  # too small to pay
    assert _bufsize_inside(zeros(256, 784), zeros(1, 784)) == 784                    # a row, run 784
    assert _bufsize_inside(zeros(512, 784)[::2], zeros(256, 784)) == default         # strided, not broadcast
    assert _bufsize_inside(zeros(1, 1024, 7, 7), zeros(1, 1024, 1, 1)) == default    # run 49: copying is faster
    assert _bufsize_inside(zeros(1, 64, 112, 112), zeros(1, 64, 1, 1)) == default    # run 12544: no buffering
    assert _bufsize_inside(zeros(1, 256, 56, 56), zeros(1, 256, 56, 56)) == default  # everything merges
    assert _bufsize_inside(zeros(1, 256, 56, 56), 2.0) == default                    # a scalar
    assert _bufsize_inside(zeros(1024, 392), zeros(1024, 1)) == 400                 # rounded up to 16s
    assert np.getbufsize() == default


def test_the_buffer_is_restored_when_the_block_raises():
    default = np.getbufsize()
    with pytest.raises(ZeroDivisionError):
        with fitted(np.zeros((1, 256, 56, 56), np.float32), np.zeros((1, 256, 1, 1), np.float32)):
            raise ZeroDivisionError
    assert np.getbufsize() == default
