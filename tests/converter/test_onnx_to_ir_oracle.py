"""An ONNX pooling oracle written from the operator specs alone, element by element, for small tensors.

It shares no code with poolir (not ir.geometry, not runtime): it is the test-side reading of the specs,
used where onnxruntime is known to be wrong (see KNOWN_ONNXRUNTIME_BUGS), and it is itself pinned below
by the spec's own worked examples (shared/seeds 004) and by hand-worked cases.

Readings (from the task's semantics): ceil_mode=1 drops a last window that would start in the right
padding; count_include_pad=1 divides by the taps inside [-pb, L + pe); SAME gives out = ceil(L / s) with
the dilated kernel; VALID is floor whatever ceil_mode says; Indices are flat over N, C and the spatial
dims, storage_order=1 makes the spatial part column-major, ties go to the first element in row-major scan.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

# Where onnxruntime 1.31 disagrees with the ONNX specs (each found by a grid case and checked by hand):
KNOWN_ONNXRUNTIME_BUGS = {
    "same_dilations": "SAME pads are computed without the dilation (k instead of (k-1)*d+1)",
    "valid_ceil": "auto_pad=VALID applies ceil_mode (L=3, k=2, s=2 gives a second half window)",
    "avg_dilations": "AveragePool with dilations reads the wrong taps (axis L=3, k=2, d=2 averages x[0], x[1])",
    "avg_include_overhang": "count_include_pad=1 with a ceil overhang divides by taps past the padded input",
}


def onnx_pool_reference(x: np.ndarray, family: str, kernel, strides=None, dilations=None, pads=None,
                        auto_pad: str = "NOTSET", ceil_mode: int = 0, count_include_pad: int = 0,
                        p: float = 2.0, storage_order: int = 0) -> tuple[np.ndarray, np.ndarray | None]:
    """(values, indices) of one ONNX windowed pooling node; indices only for family "max"."""
    rank = len(kernel)
    spatial = x.shape[2:]
    strides = strides or [1] * rank
    dilations = dilations or [1] * rank
    pads = list(pads or [0] * (2 * rank))
    outs = []
    for axis in range(rank):
        length, k, s, d = spatial[axis], kernel[axis], strides[axis], dilations[axis]
        extent = (k - 1) * d + 1
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            out = -(-length // s)
            total = max(0, (out - 1) * s + extent - length)
            small = total // 2
            pads[axis], pads[axis + rank] = (small, total - small) if auto_pad == "SAME_UPPER" else (total - small, small)
        elif auto_pad == "VALID":
            pads[axis] = pads[axis + rank] = 0
            out = (length - extent) // s + 1
        else:
            span = length + pads[axis] + pads[axis + rank] - extent
            out = (-(-span // s) if ceil_mode else span // s) + 1
            if ceil_mode and (out - 1) * s >= length + pads[axis]:
                out -= 1
        outs.append(out)
    n, c = x.shape[:2]
    values = np.zeros((n, c, *outs), dtype=np.float64)
    indices = np.zeros((n, c, *outs), dtype=np.int64) if family == "max" else None
    flat_x = x.astype(np.float64)
    volume = math.prod(spatial)
    for position in itertools.product(*(range(o) for o in outs)):
        taps_per_axis = [[position[a] * strides[a] - pads[a] + j * dilations[a] for j in range(kernel[a])]
                         for a in range(rank)]
        real, padded = [], 0
        for tap in itertools.product(*taps_per_axis):  # row-major scan of the window
            if all(0 <= tap[a] < spatial[a] for a in range(rank)):
                real.append(tap)
            if all(-pads[a] <= tap[a] < spatial[a] + pads[a + rank] for a in range(rank)):
                padded += 1
        gathered = np.stack([flat_x[(slice(None), slice(None), *tap)] for tap in real], axis=-1) if real else None
        where = (slice(None), slice(None), *position)
        if family == "max":
            best = gathered.argmax(axis=-1)  # argmax returns the first maximum: row-major tie rule
            values[where] = gathered.max(axis=-1)
            tap_index = np.empty(best.shape, dtype=np.int64)
            for t, tap in enumerate(real):
                order = tap if storage_order == 0 else tap[::-1]
                dims = spatial if storage_order == 0 else spatial[::-1]
                tap_index[best == t] = np.ravel_multi_index(order, dims)
            base = (np.arange(n)[:, None] * c + np.arange(c)[None, :]) * volume
            indices[where] = base + tap_index
        elif family == "avg":
            total = gathered.sum(axis=-1) if real else np.zeros((n, c))
            count = padded if count_include_pad else len(real)
            values[where] = total / count if count else np.nan
        else:
            total = (np.abs(gathered) ** p).sum(axis=-1) if real else np.zeros((n, c))
            values[where] = total ** (1.0 / p)
    return values, indices


def onnx_global_reference(x: np.ndarray, family: str, p: float = 2.0) -> np.ndarray:
    axes = tuple(range(2, x.ndim))
    x = x.astype(np.float64)
    if family == "max":
        return x.max(axis=axes, keepdims=True)
    if family == "avg":
        return x.mean(axis=axes, keepdims=True)
    return (np.abs(x) ** p).sum(axis=axes, keepdims=True) ** (1.0 / p)


# --- the oracle's own proof -------------------------------------------------------------------------

def test_seed_maxpool_with_argmax_2d_precomputed_pads():
    # shared/seeds 004, "maxpool_with_argmax_2d_precomputed_pads": 5x5 arange(1..25), k=5, pads 2 -> 5x5.
    x = np.arange(1, 26, dtype=np.float32).reshape(1, 1, 5, 5)
    values, indices = onnx_pool_reference(x, "max", [5, 5], pads=[2, 2, 2, 2])
    expected = [[13, 14, 15, 15, 15], [18, 19, 20, 20, 20], [23, 24, 25, 25, 25], [23, 24, 25, 25, 25],
                [23, 24, 25, 25, 25]]
    np.testing.assert_array_equal(values[0, 0], expected)
    np.testing.assert_array_equal(indices[0, 0], np.asarray(expected) - 1)


def test_seed_maxpool_with_argmax_2d_precomputed_strides_column_major():
    # shared/seeds 004 / onnx backend "maxpool_with_argmax_2d_precomputed_strides": storage_order=1.
    x = np.arange(1, 26, dtype=np.float32).reshape(1, 1, 5, 5)
    values, indices = onnx_pool_reference(x, "max", [2, 2], strides=[2, 2], storage_order=1)
    np.testing.assert_array_equal(values[0, 0], [[7, 9], [17, 19]])
    np.testing.assert_array_equal(indices[0, 0], [[6, 16], [8, 18]])


def test_seed_maxpool_2d_ceil():
    # onnx backend "maxpool_2d_ceil": 4x4, k=3, s=2, ceil -> 2x2 [[11, 12], [15, 16]].
    x = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)
    values, _ = onnx_pool_reference(x, "max", [3, 3], strides=[2, 2], ceil_mode=1)
    np.testing.assert_array_equal(values[0, 0], [[11, 12], [15, 16]])


@pytest.mark.parametrize("include, expected", [(0, [1.5, 3.0, 5.0, 6.0]), (1, [1.0, 3.0, 5.0, 3.0])])
def test_hand_worked_average_ceil_overhang(include, expected):
    # L=6 (1..6), k=3, s=2, pads (1,1), ceil: windows start -1, 1, 3, 5 (5 < L + pb = 7: kept).
    # Last window taps 5, 6, 7: real {6}; inside [-1, 7): {5, 6} -> include divisor 2, not 3.
    x = np.arange(1, 7, dtype=np.float32).reshape(1, 1, 6)
    values, _ = onnx_pool_reference(x, "avg", [3], strides=[2], pads=[1, 1], ceil_mode=1, count_include_pad=include)
    np.testing.assert_allclose(values[0, 0], expected)


def test_hand_worked_ceil_drops_window_in_right_padding():
    # L=4, k=2, s=2, pads (0,1): ceil gives 3 windows but the third starts at 4 = L + pb: dropped.
    x = np.arange(1, 5, dtype=np.float32).reshape(1, 1, 4)
    values, _ = onnx_pool_reference(x, "max", [2], strides=[2], pads=[0, 1], ceil_mode=1)
    np.testing.assert_array_equal(values[0, 0], [2, 4])


def test_hand_worked_same_upper_with_dilation():
    # L=7, k=3, d=2, s=2: out = 4, total pad = 3*2 + 5 - 7 = 4 -> (2, 2); windows start -2, 0, 2, 4.
    x = np.arange(1, 8, dtype=np.float32).reshape(1, 1, 7)
    values, indices = onnx_pool_reference(x, "max", [3], strides=[2], dilations=[2], auto_pad="SAME_UPPER")
    np.testing.assert_array_equal(values[0, 0], [3, 5, 7, 7])
    np.testing.assert_array_equal(indices[0, 0], [2, 4, 6, 6])


def test_hand_worked_lp_and_ties():
    x = np.array([[[3.0, -4.0, 4.0]]], dtype=np.float32)
    values, _ = onnx_pool_reference(x, "lp", [2], p=2)
    np.testing.assert_allclose(values[0, 0], [5.0, math.sqrt(32)])
    _, indices = onnx_pool_reference(np.array([[[5.0, 5.0, 1.0]]]), "max", [2])
    np.testing.assert_array_equal(indices[0, 0], [0, 1])
