"""Differential grid: runtime.run on ONNX pooling nodes vs onnxruntime (tests/peers.py), every op version.

The grid (tests/runtime/onnx_grid.py) covers 1D/2D/3D, asymmetric pads, ceil_mode, count_include_pad,
dilations, auto_pad with strides > 1 and dilations, storage_order, Indices, every element type each
version allows, and every version row of AveragePool, MaxPool, LpPool and the global pools.

onnxruntime 1.31 is not always right and cannot run everything. Where it is wrong or missing, the
oracle is onnxruntime on an *equivalent* model, rewritten here by the rule quoted below (each rule
depends only on the spec text, not on poolir):

1. Versions onnxruntime does not implement (AveragePool-1, LpPool-1, GlobalLpPool-1 and -22): run the
   nearest version with the same meaning. AveragePool-1 = AveragePool-7 with count_include_pad=0 (v1 has
   no such attribute; its divisor excludes pads); LpPool-1 / GlobalLpPool-1 with an integral float p =
   version 2 with that int p; GlobalLpPool-22 = GlobalLpPool-2 (22 only adds bfloat16).
   LpPool-1 with a non-integral p (1.5): sum |x|^p = AveragePool(|x|^p, count_include_pad=1) * kernel
   volume (no ceil_mode in v1, so every window lies inside the padded tensor), then ^(1/p).
2. SAME_UPPER / SAME_LOWER with dilations > 1: onnxruntime computes the SAME padding from the undilated
   kernel. The spec (AveragePool-19/22, MaxPool-10+, LpPool-18+) says "pad_shape[i] = (output_spatial_shape[i]
   - 1) * strides_spatial_shape[i] + ((kernel_spatial_shape[i] - 1) * dilations[i] + 1) -
   input_spatial_shape[i]" with output = ceil(input / stride). Oracle: explicit pads from that formula.
3. SAME with stride > effective kernel: the formula above is negative and onnxruntime fails ("padding
   values must be non-negative"); pads are ">= 0" ("it can take any value greater than or equal to 0"),
   so a negative total means no padding. Oracle: explicit pads max(0, formula).
4. VALID with ceil_mode=1: onnxruntime rounds up; the spec's VALID output size is "ceil((input - ((kernel
   - 1) * dilations + 1) + 1) / strides)" = floor((input - ek) / s) + 1, stated for auto_pad regardless
   of ceil_mode. Oracle: the same node with ceil_mode=0.
5. Element types onnxruntime has no kernel for (bfloat16 everywhere, float16/float64 for some ops; at
   opset 1 its own float16 fallback builds an invalid Cast):
   onnxruntime in float32 on the same values, rounded to the type. Max pooling is exact under this
   (every value is representable); averages and Lp norms are compared with the type's tolerance.
Windows without any real input element are refused by onnxruntime ("Pad should be smaller than kernel");
test_onnx_semantics.py pins poolir's answers for them with hand-worked values.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from poolir import runtime
from tests.peers import onnxruntime_run
from tests.runtime.onnx_grid import BF16, GridCase, global_cases, windowed_cases

CASES = windowed_cases() + global_cases()
SAME = ("SAME_UPPER", "SAME_LOWER")


def _spec_same_pads(case: GridCase) -> list[int]:
    """Explicit pads for auto_pad SAME_* by the spec's formula (rules 2 and 3 of the module docstring)."""
    attrs = case.attrs
    rank = len(attrs["kernel_shape"])
    strides = attrs.get("strides", [1] * rank)
    dilations = attrs.get("dilations", [1] * rank)
    begins, ends = [], []
    for axis in range(rank):
        length = case.shape[2 + axis]
        out = math.ceil(length / strides[axis])
        total = max(0, (out - 1) * strides[axis] + (attrs["kernel_shape"][axis] - 1) * dilations[axis] + 1 - length)
        small, large = total // 2, total - total // 2
        begin, end = (small, large) if attrs["auto_pad"] == "SAME_UPPER" else (large, small)
        begins.append(begin)
        ends.append(end)
    return begins + ends


def _needs_explicit_same(case: GridCase) -> bool:
    attrs = case.attrs
    if attrs.get("auto_pad") not in SAME:
        return False
    rank = len(attrs["kernel_shape"])
    strides = attrs.get("strides", [1] * rank)
    dilations = attrs.get("dilations", [1] * rank)
    stride_beyond_kernel = any(strides[a] > (attrs["kernel_shape"][a] - 1) * dilations[a] + 1 for a in range(rank))
    return any(d > 1 for d in dilations) or stride_beyond_kernel


def oracle(case: GridCase, x: np.ndarray) -> tuple[dict[str, np.ndarray], str]:
    """onnxruntime's answer for the case, through the rewrite rules of the module docstring."""
    op_type, opset, attrs, rules = case.op_type, case.opset, dict(case.attrs), []
    if _needs_explicit_same(case):
        attrs["pads"] = _spec_same_pads(case)
        del attrs["auto_pad"]
        attrs.pop("ceil_mode", None)  # SAME's output size does not depend on ceil_mode
        rules.append("2/3")
    if attrs.get("auto_pad") == "VALID" and attrs.get("ceil_mode"):
        del attrs["ceil_mode"]
        rules.append("4")
    if op_type == "AveragePool" and opset == 1:
        opset = 7
        rules.append("1")
    if op_type in ("LpPool", "GlobalLpPool") and opset == 1:
        p = attrs["p"]
        if p != int(p):
            return _lp_by_average(case, x, attrs), "1 (non-integral p)"
        attrs["p"], opset = int(p), 2
        rules.append("1")
    if op_type == "GlobalLpPool" and opset == 22:
        opset = 2
        rules.append("1")
    rewritten = GridCase(op_type, opset, case.shape, case.dtype, attrs, case.with_indices)
    return _run_ort(rewritten, x, rules)


def _run_ort(case: GridCase, x: np.ndarray, rules: list[str]) -> tuple[dict, str]:
    try:
        return onnxruntime_run(case.model(), {"x": x}), ",".join(rules)
    except Exception as error:
        # No kernel for the type, or (float16 at opset 1) a broken float32 fallback that onnxruntime
        # inserts itself: a Cast node with an opset-1 'to' attribute of the wrong kind.
        # (Rule 1 can also move bfloat16 to a version that predates it: "Type Error".)
        missing = any(sign in str(error) for sign in ("NOT_IMPLEMENTED", "InsertedPrecisionFreeCast", "Type Error"))
        if not missing or x.dtype == np.float32:
            raise
    result = onnxruntime_run(case.model(np.float32), {"x": x.astype(np.float32)})
    rounded = {name: (value.astype(x.dtype) if name == "y" else value) for name, value in result.items()}
    return rounded, ",".join([*rules, "5"])


def _lp_by_average(case: GridCase, x: np.ndarray, attrs: dict) -> dict:
    p = attrs.pop("p")
    attrs["count_include_pad"] = 1
    volume = math.prod(attrs["kernel_shape"])
    powered = (np.abs(x.astype(np.float64)) ** p).astype(np.float32)
    average = GridCase("AveragePool", 7, case.shape, np.dtype(np.float32), attrs)
    mean = onnxruntime_run(average.model(), {"x": powered})["y"].astype(np.float64)
    return {"y": ((mean * volume) ** (1.0 / p)).astype(x.dtype)}


def _tolerance(dtype: np.dtype, rules: str) -> tuple[float, float]:
    if dtype == BF16:
        return 1.6e-2, 1.6e-2
    if dtype == np.float16:
        return 2e-3, 2e-3
    if dtype == np.float64 and "5" not in rules and "non-integral" not in rules:
        return 1e-12, 1e-12
    return 2e-6, 2e-6


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_matches_onnxruntime(case: GridCase):
    x = case.input()
    ours = runtime.run(case.model(), {"x": x})
    theirs, rules = oracle(case, x)
    assert list(ours) == (["y", "indices"] if case.with_indices else ["y"])
    for name, got in ours.items():
        want = theirs[name]
        assert got.shape == want.shape, (name, rules)
        assert got.dtype == np.dtype(case.dtype if name == "y" else np.int64)
        exact = name == "indices" or case.op_type in ("MaxPool", "GlobalMaxPool") and \
            not (case.dtype == np.float64 and "5" in rules)
        if exact:
            np.testing.assert_array_equal(got, want, err_msg=f"rules {rules}")
        else:
            rtol, atol = _tolerance(np.dtype(case.dtype), rules)
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol,
                                       err_msg=f"rules {rules}")


def test_grid_breadth():
    """The grid really covers what it claims: every version row, rank, dtype and attribute family."""
    from poolir.runtime.onnx_ops import OP_VERSIONS

    covered_versions = {(c.op_type, c.opset) for c in CASES}
    for op_type in ("AveragePool", "MaxPool", "LpPool", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"):
        for version in OP_VERSIONS[op_type]:
            assert (op_type, version.since) in covered_versions
            dtypes = {np.dtype(c.dtype) for c in CASES if (c.op_type, c.opset) == (op_type, version.since)}
            assert dtypes == set(version.dtypes), (op_type, version.since)
    attrs = [c.attrs for c in CASES]
    assert {len(c.shape) - 2 for c in CASES} == {1, 2, 3}
    assert any(a.get("ceil_mode") and a.get("dilations") and a.get("pads") for a in attrs)
    assert any(a.get("count_include_pad") == 1 and a.get("ceil_mode") for a in attrs)
    assert {a.get("auto_pad") for a in attrs} >= {"SAME_UPPER", "SAME_LOWER", "VALID"}
    assert any(a.get("auto_pad") in SAME and a.get("dilations") and max(a.get("strides", [1])) > 1 for a in attrs)
    assert any(a.get("storage_order") == 1 for a in attrs)
    assert any(c.with_indices and c.dtype in (np.int8, np.uint8) for c in CASES)
    assert any(c.with_indices and len(c.shape) == 3 and c.attrs.get("dilations") for c in CASES)


# ---------------------------------------------------------------------------------------------------
# Random attribute combinations beyond the fixed grid (derandomized: the same examples every run)

@st.composite
def random_cases(draw):
    op_type, opset = draw(st.sampled_from([("MaxPool", 22), ("MaxPool", 12), ("AveragePool", 22),
                                           ("AveragePool", 19), ("LpPool", 18), ("LpPool", 22)]))
    rank = draw(st.integers(1, 3))
    kernel = [draw(st.integers(1, 4)) for _ in range(rank)]
    strides = [draw(st.integers(1, 3)) for _ in range(rank)]
    dilations = [draw(st.integers(1, 3)) for _ in range(rank)]
    attrs = {"kernel_shape": kernel, "strides": strides, "dilations": dilations}
    auto_pad = draw(st.sampled_from(["NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"]))
    if auto_pad == "NOTSET":
        attrs["pads"] = [draw(st.integers(0, k - 1)) for k in kernel] + [draw(st.integers(0, k - 1)) for k in kernel]
    else:
        attrs["auto_pad"] = auto_pad
    if draw(st.booleans()):
        attrs["ceil_mode"] = 1
    if op_type == "AveragePool":
        attrs["count_include_pad"] = draw(st.integers(0, 1))
    if op_type == "LpPool":
        attrs["p"] = draw(st.integers(1, 4))
    with_indices = op_type == "MaxPool" and draw(st.booleans())
    if with_indices:
        attrs["storage_order"] = draw(st.integers(0, 1))
    spatial = []
    for k, d in zip(kernel, dilations):
        effective = (k - 1) * d + 1
        spatial.append(draw(st.integers(effective, effective + 7)))  # at least one window, even unpadded
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3)), *spatial)
    return GridCase(op_type, opset, shape, np.dtype(np.float32), attrs, with_indices)


def _has_window_without_real_input(case: GridCase) -> bool:
    """With dilations, a window can miss the input even when pads < kernel; onnxruntime then reports
    its own fill values (see test_onnx_semantics.py for poolir's), so such draws are not compared."""
    from poolir.ir.geometry import pool_windows

    a = case.attrs
    rank = len(a["kernel_shape"])
    pads = a.get("pads", [0] * 2 * rank)
    rounding = "ceil_torch" if a.get("ceil_mode") and "auto_pad" not in a else "floor"
    auto = {"SAME_UPPER": "same_upper", "SAME_LOWER": "same_lower", "VALID": "valid"}.get(a.get("auto_pad"),
                                                                                          "explicit")
    windows = pool_windows(case.shape[2:], a["kernel_shape"], a["strides"], a["dilations"], pads[:rank],
                           pads[rank:], rounding, auto)
    return any((w.real_taps() == 0).any() for w in windows)


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(random_cases())
def test_random_attributes_match_onnxruntime(case):
    if _has_window_without_real_input(case):
        return
    kernel = case.attrs["kernel_shape"]
    if case.attrs.get("auto_pad") in SAME and _needs_explicit_same(case) and \
            any(pad >= kernel[i % len(kernel)] for i, pad in enumerate(_spec_same_pads(case))):
        return  # rule 2's explicit pads reach the kernel size, which onnxruntime refuses
    test_matches_onnxruntime(case)
