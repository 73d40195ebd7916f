"""runtime.kernels against onnxruntime on a random grid of single-node ONNX pooling models.

The ONNX attributes are mapped to kernel parameters here with the readings fixed in issue 3:
ceil_mode=1 is geometry rounding "ceil_torch", count_include_pad=1 is divisor "padded" (0: "real"),
SAME_UPPER/SAME_LOWER/VALID are geometry auto_pad values, storage_order=1 is a column-major spatial index.
Cases whose windows hold no real input element are left out: what ONNX means there is the executors'
decision (tested with them), not the kernels'.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from poolir.ir.geometry import pool_windows
from poolir.runtime.kernels import IndexLayout, avg_pool, global_pool, lp_pool, max_pool, separable
from poolir.runtime.kernels.window_plan import axis_plan
from tests.peers import onnxruntime_run

ONNX_TYPES = {np.float16: TensorProto.FLOAT16, np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE,
              np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8}
# The newest version of each op that onnxruntime 1.31 implements for float16/float64 as well as float32
# (its AveragePool-22, LpPool-22 and Global*Pool-22 kernels are float32 only); the semantics are the same.
OPSETS = {"MaxPool": 22, "AveragePool": 19, "LpPool": 18, "GlobalAveragePool": 18, "GlobalMaxPool": 18,
          "GlobalLpPool": 18}
AUTO_PADS = {"NOTSET": "explicit", "SAME_UPPER": "same_upper", "SAME_LOWER": "same_lower", "VALID": "valid"}


@dataclass(frozen=True)
class Case:
    op: str
    dtype: type
    spatial: tuple[int, ...]
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads_begin: tuple[int, ...]
    pads_end: tuple[int, ...]
    auto_pad: str = "NOTSET"
    ceil_mode: int = 0
    count_include_pad: int = 0
    storage_order: int = 0
    with_indices: bool = False
    p: int = 2

    def __str__(self):
        extra = {"MaxPool": f"so{self.storage_order}{'-idx' if self.with_indices else ''}",
                 "AveragePool": f"cip{self.count_include_pad}", "LpPool": f"p{self.p}"}[self.op]
        return (f"{self.op}-{np.dtype(self.dtype).name}-L{self.spatial}-k{self.kernel}-s{self.strides}"
                f"-d{self.dilations}-pb{self.pads_begin}-pe{self.pads_end}-{self.auto_pad}-ceil{self.ceil_mode}-{extra}")

    @property
    def peer_dtype(self):
        """onnxruntime's CPU AveragePool and LpPool exist for float32 only: other float types are checked
        against onnxruntime's float32 result on the same (exactly representable) values."""
        return self.dtype if self.op == "MaxPool" else np.float32

    def onnxruntime_same_differs(self) -> bool:
        """Where onnxruntime 1.31 resolves SAME_UPPER/SAME_LOWER differently from issue 3's reading.

        - It sizes the padding with the undilated kernel: an 8-long axis with k=3, d=2, s=1 gives 6 outputs,
          not ceil(8 / 1) = 8 as the spec formula (which uses the dilated kernel) says.
        - It does not clamp a negative total pad at 0: L=3, k=1, s=3 gives total (1 - 1) * 3 + 1 - 3 = -2, so
          its window starts at input 1 (pad_begin -1, a crop); issue 3 fixes max(0, total), as TensorFlow's
          SAME (where the mode comes from) does, so the window starts at 0.
        """
        for length, kernel, stride, dilation in zip(self.spatial, self.kernel, self.strides, self.dilations):
            output = -(-length // stride)
            if dilation != 1 or (output - 1) * stride + kernel - length < 0:
                return True
        return False

    def windows(self):
        rounding = "ceil_torch" if self.ceil_mode else "floor"
        return pool_windows(self.spatial, self.kernel, self.strides, self.dilations, self.pads_begin,
                            self.pads_end, rounding, AUTO_PADS[self.auto_pad])

    def onnx_model(self) -> onnx.ModelProto:
        attrs = dict(kernel_shape=self.kernel, strides=self.strides, auto_pad=self.auto_pad)
        if self.auto_pad == "NOTSET":
            attrs["pads"] = self.pads_begin + self.pads_end
        elif self.auto_pad.startswith("SAME") and self.onnxruntime_same_differs():
            # The kernel is still checked: onnxruntime gets the SAME pads written out explicitly.
            windows = self.windows()
            attrs["auto_pad"] = "NOTSET"
            attrs["pads"] = tuple(w.pad_begin for w in windows) + tuple(w.pad_end for w in windows)
        if self.op != "LpPool" or any(d != 1 for d in self.dilations):
            attrs["dilations"] = self.dilations
        if self.ceil_mode:
            attrs["ceil_mode"] = 1
        outputs = ["y"]
        if self.op == "MaxPool":
            attrs["storage_order"] = self.storage_order
            if self.with_indices:
                outputs.append("indices")
        elif self.op == "AveragePool":
            attrs["count_include_pad"] = self.count_include_pad
        else:
            attrs["p"] = self.p
        node = helper.make_node(self.op, ["x"], outputs, **attrs)
        elem = ONNX_TYPES[self.peer_dtype]
        shape = [2, 3, *self.spatial]
        outs = [helper.make_tensor_value_info("y", elem, None)]
        if len(outputs) == 2:
            outs.append(helper.make_tensor_value_info("indices", TensorProto.INT64, None))
        graph = helper.make_graph([node], "pool", [helper.make_tensor_value_info("x", elem, shape)], outs)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSETS[self.op])], ir_version=10)


def _random_cases(op: str, count: int, seed: int, dtypes, long_kernels: bool = False,
                  tap_grid: bool = False) -> list[Case]:
    """Random cases; `long_kernels` draws kernels 4..9 on longer axes (the doubling reduction); `tap_grid`
    draws dilations that are multiples of strides > 1 (pooled on one input phase, window_plan.on_tap_grid)."""
    rng = np.random.default_rng(seed)
    cases = []
    while len(cases) < count:
        rank = int(rng.integers(1, 3 if long_kernels else 4))
        if long_kernels:
            spatial = tuple(int(v) for v in rng.integers(8, 20, rank))
            kernel = tuple(int(v) for v in rng.integers(4, 10, rank))
        else:
            spatial = tuple(int(v) for v in rng.integers(3 if rank == 3 else 4, 10 if rank < 3 else 7, rank))
            kernel = tuple(int(v) for v in rng.integers(1, 4, rank))
        strides = tuple(int(v) for v in rng.integers(2 if tap_grid else 1, 4, rank))
        dilations = tuple(int(v) for v in rng.integers(1, 3, rank))
        if tap_grid:
            spatial = tuple(int(v) for v in rng.integers(5, 14, rank))
            dilations = tuple(s * int(rng.integers(1, 3)) for s in strides)
        # onnxruntime requires every pad to be smaller than the kernel on its axis.
        pads_begin = tuple(int(rng.integers(0, k)) for k in kernel)
        pads_end = tuple(int(rng.integers(0, k)) for k in kernel)
        auto_pad = str(rng.choice(["NOTSET"] * 5 + ["SAME_UPPER", "SAME_LOWER", "VALID"]))
        # VALID with ceil_mode=1 is a contested reading (issue 3); the executors decide and test it.
        ceil_mode = int(rng.integers(0, 2)) if auto_pad != "VALID" else 0
        case = Case(op, dtypes[int(rng.integers(0, len(dtypes)))], spatial, kernel, strides, dilations,
                    pads_begin, pads_end, auto_pad, ceil_mode,
                    count_include_pad=int(rng.integers(0, 2)), storage_order=int(rng.integers(0, 2)),
                    with_indices=bool(rng.integers(0, 2)), p=int(rng.choice([1, 2, 3])))
        try:
            windows = case.windows()
        except Exception:      # no output window at all: not a pooling case
            continue
        if any((w.real_taps() == 0).any() for w in windows):
            continue
        if any(max(w.pad_begin, w.pad_end) >= w.kernel for w in windows):
            continue      # SAME pads of a dilated kernel can reach the kernel size, which onnxruntime refuses
        cases.append(case)
    return cases


MAX_CASES = _random_cases("MaxPool", 120, 1, [np.float32, np.float64, np.float16, np.int8, np.uint8])
AVG_CASES = _random_cases("AveragePool", 90, 2, [np.float32, np.float64, np.float16, ml_dtypes.bfloat16])
LP_CASES = _random_cases("LpPool", 50, 3, [np.float32, np.float64, np.float16, ml_dtypes.bfloat16])
LONG_CASES = (_random_cases("MaxPool", 20, 4, [np.float32, np.int8], long_kernels=True)
              + _random_cases("AveragePool", 20, 5, [np.float32, np.float64], long_kernels=True)
              + _random_cases("LpPool", 10, 6, [np.float32], long_kernels=True))
# Stride 2 with output * stride == length (the phase-split pass, axis_pass._split_phases): pads 1 read phases 1
# and 0 (the last row of phase 1 lies past a whole integer lane), ceil without pads phase 0 only.
PHASE_CASES = [Case(op, dtype, (12, 12), (3, 3), (2, 2), (1, 1), pads, pads, ceil_mode=ceil, count_include_pad=0)
               for op, dtypes in (("MaxPool", (np.float32, np.float16, np.int8, np.float64)),
                                  ("AveragePool", (np.float32, np.float16)), ("LpPool", (np.float32,)))
               for dtype in dtypes for pads, ceil in (((1, 1), 0), ((0, 0), 1))]
TAP_GRID_CASES = (_random_cases("MaxPool", 30, 7, [np.float32, np.float64, np.float16, np.int8], tap_grid=True)
                  + _random_cases("AveragePool", 20, 8, [np.float32, np.float16], tap_grid=True)
                  + _random_cases("LpPool", 10, 9, [np.float32], tap_grid=True))

# Stride 1 and every window inside the input on two or three axes: each pass reduces the whole flat input and one
# copy picks the outputs (separable._flat_passes); dilated and long (doubling) kernels included.
FLAT_CASES = [Case(op, dtype, spatial, kernel, (1,) * len(spatial), dilations, (0,) * len(spatial),
                   (0,) * len(spatial), p=3)
              for op, dtypes in (("MaxPool", (np.float32, np.int8, np.float16)), ("AveragePool", (np.float32, np.float64)),
                                 ("LpPool", (np.float32,)))
              for dtype in dtypes
              for spatial, kernel, dilations in (((9, 11), (7, 7), (1, 1)), ((8, 9), (2, 3), (2, 1)),
                                                 ((6, 7, 8), (2, 3, 5), (1, 2, 1)), ((12, 5), (5, 1), (2, 1)))]


def test_flat_cases_take_the_flat_path():
    for case in FLAT_CASES:
        windows = tuple(case.windows())
        passes = sum(not axis_plan(w).is_identity for w in windows)
        reduction = separable._reduction((2, 3, *case.spatial), np.dtype(case.dtype), windows, np.maximum,
                                         separable.CHUNK_BYTES)
        assert (reduction.flat is not None) == (passes >= 2), case


def _input(case: Case) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(str(case).encode()))
    shape = (2, 3, *case.spatial)
    if case.dtype in (np.int8, np.uint8):
        info = np.iinfo(case.dtype)
        return rng.integers(info.min, info.max, shape, endpoint=True).astype(case.dtype)
    if case.op == "MaxPool":
        # Few distinct values so that ties (first tap wins) are common.
        return rng.integers(-4, 5, shape).astype(case.dtype)
    # float32 values, so that a float64 input means exactly what onnxruntime's float32 run sees.
    return rng.standard_normal(shape).astype(np.float32).astype(case.dtype)


def _tolerance(dtype) -> dict:
    """The float32 result rounded to a narrower type is off by at most half its spacing."""
    if dtype == np.float16:
        return dict(rtol=1e-3, atol=1e-3)
    if dtype == ml_dtypes.bfloat16:
        return dict(rtol=8e-3, atol=8e-3)
    return dict(rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", MAX_CASES + [c for c in LONG_CASES + TAP_GRID_CASES + PHASE_CASES + FLAT_CASES if c.op == "MaxPool"],
                         ids=str)
def test_max_pool_matches_onnxruntime(case):
    x = _input(case)
    expected = onnxruntime_run(case.onnx_model(), {"x": x})
    windows = case.windows()
    if case.with_indices:
        y, idx = max_pool(x, windows, indices=IndexLayout(spatial_column_major=bool(case.storage_order)))
        np.testing.assert_array_equal(idx, expected["indices"])
    else:
        y = max_pool(x, windows)
    assert y.dtype == x.dtype
    np.testing.assert_array_equal(y, expected["y"])


@pytest.mark.parametrize("case", AVG_CASES + [c for c in LONG_CASES + TAP_GRID_CASES + PHASE_CASES + FLAT_CASES if c.op == "AveragePool"],
                         ids=str)
def test_avg_pool_matches_onnxruntime(case):
    x = _input(case)
    expected = onnxruntime_run(case.onnx_model(), {"x": x.astype(np.float32)})["y"]
    y = avg_pool(x, case.windows(), divisor="padded" if case.count_include_pad else "real")
    assert y.dtype == x.dtype
    tolerance = _tolerance(case.dtype)
    np.testing.assert_allclose(y.astype(np.float64), expected.astype(np.float64), **tolerance)


@pytest.mark.parametrize("case", LP_CASES + [c for c in LONG_CASES + TAP_GRID_CASES + PHASE_CASES + FLAT_CASES if c.op == "LpPool"],
                         ids=str)
def test_lp_pool_matches_onnxruntime(case):
    x = _input(case)
    expected = onnxruntime_run(case.onnx_model(), {"x": x.astype(np.float32)})["y"]
    y = lp_pool(x, case.windows(), p=case.p)
    assert y.dtype == x.dtype
    assert y.dtype == x.dtype
    tolerance = _tolerance(case.dtype)
    np.testing.assert_allclose(y.astype(np.float64), expected.astype(np.float64), **tolerance)


@pytest.mark.parametrize("op, kind", [("GlobalAveragePool", "avg"), ("GlobalMaxPool", "max"), ("GlobalLpPool", "lp")])
@pytest.mark.parametrize("shape", [(2, 3, 5), (1, 4, 3, 6), (2, 2, 3, 2, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16])
def test_global_pool_matches_onnxruntime(op, kind, shape, dtype):
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype(dtype)
    attrs = {"p": 3} if op == "GlobalLpPool" else {}
    elem = ONNX_TYPES[np.float32]   # onnxruntime's CPU Global*Pool kernels are float32 only
    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"], **attrs)], "g",
                              [helper.make_tensor_value_info("x", elem, shape)],
                              [helper.make_tensor_value_info("y", elem, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSETS[op])], ir_version=10)
    expected = onnxruntime_run(model, {"x": x.astype(np.float32)})["y"]
    y = global_pool(x, kind, spatial_rank=len(shape) - 2, p=attrs.get("p", 2.0))
    assert y.dtype == x.dtype
    tolerance = _tolerance(dtype)
    np.testing.assert_allclose(y.astype(np.float64), expected.astype(np.float64), **tolerance)


@pytest.mark.parametrize("case", MAX_CASES[:15] + AVG_CASES[:15] + LP_CASES[:10], ids=str)
def test_blocked_leading_rows_match_onnxruntime(case, monkeypatch):
    # Large inputs are pooled in blocks of leading rows; force blocks of one row on these small inputs.
    monkeypatch.setattr(separable, "CHUNK_BYTES", 1)
    x = _input(case)
    windows = case.windows()
    if case.op == "MaxPool":
        expected = onnxruntime_run(case.onnx_model(), {"x": x})
        if case.with_indices:
            y, idx = max_pool(x, windows, indices=IndexLayout(spatial_column_major=bool(case.storage_order)))
            np.testing.assert_array_equal(idx, expected["indices"])
        else:
            y = max_pool(x, windows)
        np.testing.assert_array_equal(y, expected["y"])
        return
    expected = onnxruntime_run(case.onnx_model(), {"x": x.astype(np.float32)})["y"]
    if case.op == "AveragePool":
        y = avg_pool(x, windows, divisor="padded" if case.count_include_pad else "real")
    else:
        y = lp_pool(x, windows, p=case.p)
    np.testing.assert_allclose(y.astype(np.float64), expected.astype(np.float64), **_tolerance(case.dtype))
