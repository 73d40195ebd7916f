"""IR pooling semantics pinned against OpenVINO: a seeded random grid over every layer version.

Each case is one AvgPool or MaxPool layer built with OpenVINO's opset API, saved as IR by OpenVINO,
then run by OpenVINO's CPU plugin (the oracle, tests/peers.py) and by poolir (`ir.read_model` +
`runtime.Session`). The grid draws from: AvgPool-1/14/16 and MaxPool-1/8/14; every rounding_type the
version allows; exclude-pad; zero, symmetric, asymmetric and large (>= kernel) pads; auto_pad valid,
same_upper and same_lower (with non-zero pads that must be ignored); dilations; strides; 1-D/2-D/3-D;
MaxPool indices with every `axis` (negative too) and both index element types. Max inputs are small
integers (many ties) with occasional NaN and -inf; average inputs are normal.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.runtime.ir_cases import assert_matches_openvino, avg_pool_node, max_pool_node, single_layer_ir

ROUNDINGS = {("avg", 1): ("floor", "ceil"), ("avg", 14): ("floor", "ceil", "ceil_torch"),
             ("avg", 16): ("floor", "ceil", "ceil_torch"), ("max", 1): ("floor", "ceil"),
             ("max", 8): ("floor", "ceil"), ("max", 14): ("floor", "ceil", "ceil_torch")}
PADDINGS = ("zero", "symmetric", "asymmetric", "large", "valid", "same_upper", "same_lower")


@dataclasses.dataclass(frozen=True)
class Case:
    kind: str  # "avg" or "max"
    version: int
    shape: tuple[int, ...]
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads_begin: tuple[int, ...]
    pads_end: tuple[int, ...]
    rounding: str
    auto_pad: str
    exclude_pad: bool
    axis: int
    index_type: str
    seed: int

    def __str__(self) -> str:
        text = (f"{self.kind}{self.version}-{len(self.kernel)}d-{self.shape}-k{self.kernel}-s{self.strides}-"
                f"d{self.dilations}-p{self.pads_begin}{self.pads_end}-{self.rounding}-{self.auto_pad}")
        if self.kind == "avg":
            return text + f"-excl{int(self.exclude_pad)}"
        return text + (f"-axis{self.axis}-{self.index_type}" if self.version > 1 else "")

    def build(self, x):
        common = dict(kernel=self.kernel, strides=self.strides, pads_begin=self.pads_begin, pads_end=self.pads_end,
                      rounding=self.rounding, auto_pad=self.auto_pad, dilations=self.dilations)
        if self.kind == "avg":
            return avg_pool_node(self.version, x, exclude_pad=self.exclude_pad, **common)
        return max_pool_node(self.version, x, axis=self.axis, index_type=self.index_type, **common)

    def input(self) -> np.ndarray:
        rng = np.random.default_rng(self.seed)
        if self.kind == "avg":
            return rng.standard_normal(self.shape).astype(np.float32)
        x = rng.integers(-4, 5, self.shape).astype(np.float32)
        if rng.random() < 0.2:
            flat = x.reshape(-1)
            flat[rng.integers(0, flat.size, 2)] = [np.nan, -np.inf]
        return x


def draw_case(rng: np.random.Generator, seed: int, *, include_pad_ceil: bool = False) -> Case:
    """One random case; include_pad_ceil draws only AvgPool exclude-pad=false with a ceil rounding
    (where OpenVINO's divisor differs most from ONNX's)."""
    while True:
        kind = "avg" if include_pad_ceil else str(rng.choice(["avg", "max"]))
        version = int(rng.choice([1, 14, 16] if kind == "avg" else [1, 8, 14]))
        has_dilations = (kind, version) in (("avg", 16), ("max", 8), ("max", 14))
        rank = int(rng.integers(1, 4))
        kernel = tuple(int(k) for k in rng.integers(1, 4, rank))
        strides = tuple(int(s) for s in rng.integers(1, 4, rank))
        dilations = tuple(int(d) for d in rng.integers(1, 3, rank)) if has_dilations else (1,) * rank
        effective = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
        padding = str(rng.choice(PADDINGS))
        if padding == "zero":
            begin = end = (0,) * rank
        elif padding == "symmetric":
            begin = end = tuple(int(rng.integers(0, e)) if e > 1 else 0 for e in effective)
        elif padding == "asymmetric":
            begin = tuple(int(rng.integers(0, 3)) for _ in range(rank))
            end = tuple(int(rng.integers(0, 3)) for _ in range(rank))
        elif padding == "large":
            begin = tuple(e + int(rng.integers(0, 2)) for e in effective)
            end = tuple(e + int(rng.integers(0, 2)) - int(rng.integers(0, 2)) for e in effective)
        else:  # auto_pad: the explicit pads are junk that OpenVINO ignores
            begin = tuple(int(rng.integers(0, 3)) for _ in range(rank))
            end = tuple(int(rng.integers(0, 3)) for _ in range(rank))
        auto_pad = padding if padding in ("valid", "same_upper", "same_lower") else "explicit"
        exclude_pad = bool(rng.integers(0, 2)) if kind == "avg" and not include_pad_ceil else False
        explicit = auto_pad == "explicit"
        if kind == "avg" and exclude_pad and explicit and any(
                b >= e or p >= e for b, p, e in zip(begin, end, effective)):
            continue  # OpenVINO refuses this layer (pinned separately in test_ir_rules.py)
        spatial = []
        for k in range(rank):
            pads = begin[k] + end[k] if explicit else 0
            low = max(1, effective[k] - pads)
            spatial.append(int(rng.integers(low, low + 5)))
        shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4)), *spatial)
        full_rank = len(shape)
        roundings = [r for r in ROUNDINGS[(kind, version)] if r != "floor" or not include_pad_ceil]
        return Case(kind, version, shape, kernel, strides, dilations, begin, end,
                    str(rng.choice(roundings)), auto_pad, exclude_pad,
                    int(rng.integers(-full_rank, full_rank)), str(rng.choice(["i32", "i64"])), seed)


def grid(count: int, seed: int, **options) -> list[Case]:
    rng = np.random.default_rng(seed)
    return [draw_case(rng, seed * 100_000 + i, **options) for i in range(count)]


CASES = grid(360, seed=3) + grid(80, seed=5, include_pad_ceil=True)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_pooling_layer_matches_openvino(case: Case, tmp_path):
    path = single_layer_ir(case.build, case.shape, np.float32, tmp_path / "case.xml")
    assert_matches_openvino(path, {"x": case.input()}, context=str(case))


def test_grid_covers_the_breadth():
    """The sampled grid really contains every version x rounding, every padding kind, every rank."""
    seen_versions = {(c.kind, c.version, c.rounding) for c in CASES}
    assert seen_versions == {(kind, version, r) for (kind, version), rs in ROUNDINGS.items() for r in rs}
    assert {c.auto_pad for c in CASES} == {"explicit", "valid", "same_upper", "same_lower"}
    assert {len(c.kernel) for c in CASES} == {1, 2, 3}
    assert any(max(c.dilations) > 1 for c in CASES)
    assert any(c.exclude_pad for c in CASES) and any(c.kind == "avg" and not c.exclude_pad for c in CASES)
    assert {c.axis for c in CASES if c.kind == "max" and c.version > 1} >= set(range(-5, 5))
    assert any(c.kind == "max" and any(b > k for b, k in zip(c.pads_begin, c.kernel)) for c in CASES)


# Element types: OpenVINO's CPU plugin accepts every one of these for AvgPool and MaxPool (bf16 through
# Convert layers, see ir_cases.single_layer_ir). Integer inputs are small (no overflow questions); bf16
# inputs are exact in bf16 so the Convert in front of the layer does not round them.
DTYPES = {"f16": np.float16, "f64": np.float64, "i8": np.int8, "u8": np.uint8, "i32": np.int32,
          "i64": np.int64, "bf16": "bf16"}
DTYPE_CASES = [(name, case) for name in DTYPES for case in grid(14, seed=40 + len(name) + sorted(DTYPES).index(name))]


def _typed_input(case: Case, dtype) -> np.ndarray:
    rng = np.random.default_rng(case.seed)
    if dtype == "bf16":
        return (rng.integers(-40, 41, case.shape) / 8).astype(np.float32)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(case.shape).astype(dtype)
    low = 0 if np.dtype(dtype).kind == "u" else -5
    return rng.integers(low, 10, case.shape).astype(dtype)


@pytest.mark.parametrize("dtype_name, case", DTYPE_CASES, ids=[f"{n}-{c}" for n, c in DTYPE_CASES])
def test_pooling_element_types_match_openvino(dtype_name, case: Case, tmp_path):
    dtype = DTYPES[dtype_name]
    via_bf16 = dtype == "bf16"
    # OpenVINO's CPU plugin cannot compute MaxPool indices on bf16 ("evaluate() is not implemented"):
    # there, only the values are compared.
    path = single_layer_ir(case.build, case.shape, np.float32 if via_bf16 else dtype, tmp_path / "case.xml",
                           via_bf16=via_bf16, all_outputs=not via_bf16)
    tolerance = 1e-2 if dtype_name in ("f16", "bf16") else 1e-5
    assert_matches_openvino(path, {"x": _typed_input(case, dtype)}, rtol=tolerance, atol=tolerance,
                            context=f"{dtype_name} {case}")
