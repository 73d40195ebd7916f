"""runtime.kernels.broadcast_rows: which operand shapes get numpy's small ufunc buffer (hand-worked cases)."""

from __future__ import annotations

import numpy as np
import pytest

from poolir.runtime.kernels.broadcast_rows import merged_run, rows_unbuffered


@pytest.mark.parametrize("shapes, run, total", [
    ([(1, 256, 56, 56), (1, 256, 1, 1)], 56 * 56, 256 * 56 * 56),   # per channel: H and W merge, C does not
    ([(256, 3136), (1, 3136)], 3136, 256 * 3136),                     # one row for every channel
    ([(4, 5), (4, 5)], 20, 20),                                       # equal shapes merge completely
    ([(4, 5), ()], 20, 20),                                           # a scalar breaks nothing
    ([(2, 1, 5), (1, 3, 1)], 5, 30),                                  # the output is [2, 3, 5]
    ([(8, 1, 1), (8, 6, 7)], 42, 336),
    ([(3, 1, 4, 1), (1, 5, 1, 1)], 4, 60),                            # size-1 output axes are skipped
])
def test_the_merged_run_is_the_trailing_axes_every_operand_broadcasts_alike(shapes, run, total):
    assert merged_run(shapes) == (run, total)


def _bufsize_inside(shapes) -> int:
    with rows_unbuffered(shapes):
        return np.getbufsize()


def test_the_small_buffer_only_for_runs_between_the_crossover_and_the_buffer():
    default = np.getbufsize()
    assert _bufsize_inside([(1, 256, 56, 56), (1, 256, 1, 1)]) == 16         # run 3136
    assert _bufsize_inside([(1, 1024, 7, 7), (1, 1024, 1, 1)]) == default    # run 49: copying is faster
    assert _bufsize_inside([(1, 64, 112, 112), (1, 64, 1, 1)]) == default    # run 12544: no buffering
    assert _bufsize_inside([(1, 256, 56, 56), (1, 256, 56, 56)]) == default  # nothing broadcast
    assert _bufsize_inside([(4, 3136), (4, 1)]) == default                   # too small to pay
    assert np.getbufsize() == default


def test_the_buffer_is_restored_when_the_block_raises():
    default = np.getbufsize()
    with pytest.raises(ZeroDivisionError):
        with rows_unbuffered([(1, 256, 56, 56), (1, 256, 1, 1)]):
            raise ZeroDivisionError
    assert np.getbufsize() == default
