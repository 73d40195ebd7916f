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
import random
import zlib
from dataclasses import dataclass, field

import numpy as np
import onnx
import pytest
from onnx import helper

# Where onnxruntime 1.31 disagrees with the ONNX specs (each found by a grid case and checked by hand):
KNOWN_ONNXRUNTIME_BUGS = {
    # L=7, k=3, d=2, s=2, SAME_UPPER: spec (and OpenVINO) [3, 5, 7, 7]; onnxruntime [4, 6, 6].
    "same_dilations": "SAME pads are computed without the dilation (k instead of (k-1)*d+1)",
    # L=3, k=2, s=2, VALID, ceil_mode=1: spec [2]; onnxruntime [2, 3].
    "valid_ceil": "auto_pad=VALID applies ceil_mode (a second, half window)",
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
        if out < 1:
            raise ValueError(f"axis {axis}: no window fits (output length {out})")
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


# --- the shared case grid: single-node ONNX pooling models, fixed seed ----------------------------

FAMILY = {"AveragePool": "avg", "MaxPool": "max", "LpPool": "lp", "GlobalAveragePool": "avg",
          "GlobalMaxPool": "max", "GlobalLpPool": "lp"}
VERSIONS = {"AveragePool": (1, 7, 10, 11, 19, 22), "MaxPool": (1, 8, 10, 11, 12, 22), "LpPool": (1, 2, 11, 18, 22),
            "GlobalAveragePool": (1, 22), "GlobalMaxPool": (1, 22), "GlobalLpPool": (1, 2, 22)}
NUMPY_TYPES = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.FLOAT16: np.float16,
               onnx.TensorProto.DOUBLE: np.float64, onnx.TensorProto.INT8: np.int8, onnx.TensorProto.UINT8: np.uint8}


@dataclass(frozen=True)
class PoolCase:
    op: str
    opset: int
    shape: tuple  # ints, "N" for a symbolic batch
    attrs: dict = field(default_factory=dict, hash=False)
    indices: bool = False
    dtype: int = onnx.TensorProto.FLOAT

    @property
    def id(self) -> str:
        attrs = ",".join(f"{k}={v}" for k, v in sorted(self.attrs.items()))
        kind = onnx.TensorProto.DataType.Name(self.dtype).lower()
        return f"{self.op}{self.opset}-{'x'.join(map(str, self.shape))}-{kind}{'-idx' if self.indices else ''}-{attrs}"

    def model(self) -> onnx.ModelProto:
        outputs = ["y", "indices"] if self.indices else ["y"]
        node = helper.make_node(self.op, ["x"], outputs, name="pool", **self.attrs)
        rank = len(self.shape)
        infos = [helper.make_tensor_value_info("y", self.dtype, [None] * rank)]
        if self.indices:
            infos.append(helper.make_tensor_value_info("indices", onnx.TensorProto.INT64, [None] * rank))
        graph = helper.make_graph([node], "pool_case", [helper.make_tensor_value_info("x", self.dtype, list(self.shape))],
                                  infos)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)], ir_version=10)

    def feed(self, batch: int = 2) -> np.ndarray:
        shape = [batch if d == "N" else d for d in self.shape]
        rng = np.random.default_rng(zlib.crc32(self.id.encode()))
        dtype = NUMPY_TYPES[self.dtype]
        if np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
        # Distinct values on a grid of quarters: exact in float16, no ties for the argmax.
        values = rng.permutation(np.prod(shape)).reshape(shape) / 4.0 - np.prod(shape) / 8.0
        return values.astype(dtype)

    def expected(self, x: np.ndarray) -> dict[str, np.ndarray]:
        family = FAMILY[self.op]
        p = self.attrs.get("p", 2)
        if self.op.startswith("Global"):
            return {"y": onnx_global_reference(x, family, p)}
        a = self.attrs
        values, indices = onnx_pool_reference(
            x, family, a["kernel_shape"], a.get("strides"), a.get("dilations"), a.get("pads"),
            a.get("auto_pad", "NOTSET"), a.get("ceil_mode", 0),
            a.get("count_include_pad", 0), p, a.get("storage_order", 0))
        return {"y": values, "indices": indices} if self.indices else {"y": values}

    def onnxruntime_known_wrong(self) -> str | None:
        """Why onnxruntime 1.31 gets this case wrong (checked by the grid tests), or None."""
        a = self.attrs
        dilated = any(d != 1 for d in a.get("dilations", ()))
        if a.get("auto_pad", "NOTSET").startswith("SAME") and dilated:
            return KNOWN_ONNXRUNTIME_BUGS["same_dilations"]
        if a.get("auto_pad") == "VALID" and a.get("ceil_mode"):
            return KNOWN_ONNXRUNTIME_BUGS["valid_ceil"]
        return None


def pool_case_grid(count: int, seed: int = 20261121) -> list[PoolCase]:
    """`count` windowed cases over every op version, 1-3 spatial axes and the attribute space, plus the globals."""
    rng = random.Random(seed)
    cases = []
    windowed = [(op, v) for op in ("AveragePool", "MaxPool", "LpPool") for v in VERSIONS[op]]
    for index in range(count):
        op, version = windowed[index % len(windowed)]
        rank = rng.choice((1, 2, 2, 3))
        spatial = [rng.randint(3, 8) if rank < 3 else rng.randint(3, 6) for _ in range(rank)]
        kernel = [rng.randint(1, 4) for _ in range(rank)]
        attrs: dict = {"kernel_shape": kernel}
        if rng.random() < 0.8:
            attrs["strides"] = [rng.randint(1, 3) for _ in range(rank)]
        auto_pad = rng.choice(["NOTSET"] * 5 + ["SAME_UPPER", "SAME_LOWER", "VALID"])
        if auto_pad == "NOTSET":
            if rng.random() < 0.75:
                attrs["pads"] = [rng.randint(0, k - 1) for k in kernel] + [rng.randint(0, k - 1) for k in kernel]
        else:
            attrs["auto_pad"] = auto_pad
        has_ceil = (op == "AveragePool" and version >= 10) or (op == "MaxPool" and version >= 10) or \
            (op == "LpPool" and version >= 18)
        has_dilations = (op == "AveragePool" and version >= 19) or (op == "MaxPool" and version >= 10) or \
            (op == "LpPool" and version >= 18)
        if has_ceil and rng.random() < 0.5:
            attrs["ceil_mode"] = 1
        if has_dilations and rng.random() < 0.4:
            attrs["dilations"] = [rng.randint(1, 2) for _ in range(rank)]
        if op == "AveragePool" and version >= 7:
            attrs["count_include_pad"] = rng.randint(0, 1)
        if op == "LpPool":
            attrs["p"] = rng.choice((1.0, 2.0, 3.0)) if version == 1 else rng.choice((1, 2, 3))
        indices = op == "MaxPool" and version >= 8 and rng.random() < 0.5
        if op == "MaxPool" and version >= 8 and rng.random() < 0.5:
            attrs["storage_order"] = 1
        dtype = onnx.TensorProto.FLOAT
        roll = rng.random()
        if roll < 0.1:
            dtype = onnx.TensorProto.FLOAT16
        elif roll < 0.2:
            dtype = onnx.TensorProto.DOUBLE
        elif roll < 0.3 and op == "MaxPool" and version >= 12:
            dtype = rng.choice((onnx.TensorProto.INT8, onnx.TensorProto.UINT8))
        batch = "N" if rng.random() < 0.25 else 2
        case = PoolCase(op, version, (batch, 2, *spatial), attrs, indices, dtype)
        try:
            case.expected(case.feed())
        except ValueError:  # no window fits: an invalid model, not a conversion case
            continue
        cases.append(case)
    for op in ("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"):
        for version in VERSIONS[op]:
            for rank in (1, 2, 3):
                attrs = {}
                if op == "GlobalLpPool":
                    attrs["p"] = 3.0 if version == 1 else rng.choice((1, 2, 3))
                cases.append(PoolCase(op, version, ("N" if rank == 2 else 1, 3, *([4] * rank)), attrs))
    return cases


def tolerance(dtype: int) -> dict:
    if dtype == onnx.TensorProto.FLOAT16:
        return {"rtol": 2e-3, "atol": 2e-3}
    return {"rtol": 1e-5, "atol": 1e-5}


def assert_outputs_match(got: dict, expected: dict, dtype: int, what: str) -> None:
    for name, want in expected.items():
        assert name in got, f"{what}: output {name!r} missing (got {sorted(got)})"
        have = got[name]
        assert have.shape == want.shape, f"{what}: {name} shape {have.shape} != expected {want.shape}"
        if name == "indices":
            np.testing.assert_array_equal(have, want, err_msg=f"{what}: {name}")
        else:
            np.testing.assert_allclose(have.astype(np.float64), want, err_msg=f"{what}: {name}", equal_nan=True,
                                       **tolerance(dtype))


def test_grid_is_deterministic_and_covers_every_version():
    first, second = pool_case_grid(60), pool_case_grid(60)
    assert [c.id for c in first] == [c.id for c in second]
    covered = {(c.op, c.opset) for c in pool_case_grid(240)}
    assert covered == {(op, v) for op, versions in VERSIONS.items() for v in versions}
