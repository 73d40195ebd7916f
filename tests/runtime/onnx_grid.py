"""The attribute grid of the ONNX pooling differential tests (shared by test_onnx_differential.py).

Cases are generated deterministically: for every op version row, spatial rank 1-3 and a list of
attribute patterns, only with attributes that version defines. The patterns cover asymmetric pads,
ceil_mode with and without a window starting in the padding, count_include_pad, dilations, auto_pad
SAME_UPPER/SAME_LOWER/VALID with strides > 1 and dilations, storage_order and the Indices output.
"""

from __future__ import annotations

import itertools
import zlib
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np
import onnx
from onnx import helper

from poolir.runtime.onnx_ops import OP_VERSIONS


@dataclass(frozen=True)
class GridCase:
    op_type: str
    opset: int
    shape: tuple[int, ...]
    dtype: np.dtype
    attrs: dict = field(hash=False, compare=False)
    with_indices: bool = False

    @property
    def id(self) -> str:
        parts = [f"{self.op_type}{self.opset}", "x".join(map(str, self.shape)), np.dtype(self.dtype).name]
        for key, value in sorted(self.attrs.items()):
            text = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
            parts.append(f"{key}={text}")
        if self.with_indices:
            parts.append("indices")
        return "-".join(parts)

    def model(self, dtype: np.dtype | None = None) -> onnx.ModelProto:
        element = helper.np_dtype_to_tensor_dtype(np.dtype(dtype or self.dtype))
        outputs = ["y", "indices"] if self.with_indices else ["y"]
        node = helper.make_node(self.op_type, ["x"], outputs, **self.attrs)
        out_info = [helper.make_tensor_value_info("y", element, None)]
        if self.with_indices:
            out_info.append(helper.make_tensor_value_info("indices", onnx.TensorProto.INT64, None))
        graph = helper.make_graph([node], "grid", [helper.make_tensor_value_info("x", element, list(self.shape))],
                                  out_info)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)], ir_version=10)

    def input(self) -> np.ndarray:
        generator = np.random.default_rng(zlib.crc32(self.id.encode()))  # stable across processes
        dtype = np.dtype(self.dtype)
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            # a narrow range makes ties common, so the tie rule of Indices is exercised
            return generator.integers(max(info.min, -4), min(info.max, 6), size=self.shape, endpoint=True,
                                      dtype=dtype)
        return generator.uniform(-2.0, 2.0, size=self.shape).astype(dtype)


SHAPES = {1: (2, 3, 11), 2: (1, 2, 9, 8), 3: (1, 2, 7, 6, 5)}

# (kernel, strides, dilations, pads_begin, pads_end, auto_pad, ceil_mode) per axis pattern; values are
# per-axis and cycled over the spatial rank. pads are kept < kernel (onnxruntime refuses larger pads).
PATTERNS = [
    dict(kernel=(2,), strides=None, dilations=None, pads=None, auto_pad=None, ceil=0),
    dict(kernel=(3, 2), strides=(2, 1), dilations=None, pads=((1, 0), (0, 1)), auto_pad=None, ceil=0),
    dict(kernel=(3,), strides=(2,), dilations=None, pads=((1, 1),), auto_pad=None, ceil=1),
    dict(kernel=(2, 3), strides=(3, 2), dilations=None, pads=((0, 1), (1, 2)), auto_pad=None, ceil=1),
    dict(kernel=(2, 3), strides=(2, 3), dilations=(2, 1), pads=((1, 0), (0, 2)), auto_pad=None, ceil=1),
    dict(kernel=(3, 2), strides=(1, 2), dilations=(2, 3), pads=((2, 1), (1, 0)), auto_pad=None, ceil=0),
    dict(kernel=(3, 2), strides=(2, 3), dilations=None, pads=None, auto_pad="SAME_UPPER", ceil=0),
    dict(kernel=(2, 3), strides=(3, 2), dilations=(2, 1), pads=None, auto_pad="SAME_LOWER", ceil=0),
    dict(kernel=(3, 2), strides=(2, 2), dilations=(1, 2), pads=None, auto_pad="SAME_UPPER", ceil=1),
    dict(kernel=(2, 3), strides=(2, 2), dilations=(2, 1), pads=None, auto_pad="VALID", ceil=0),
    dict(kernel=(4, 2), strides=(3, 2), dilations=None, pads=None, auto_pad="SAME_LOWER", ceil=1),
    dict(kernel=(2, 3), strides=(2, 2), dilations=None, pads=None, auto_pad="VALID", ceil=1),
    dict(kernel=(3,), strides=(1,), dilations=(2,), pads=((2, 2),), auto_pad=None, ceil=0),
]


def _cycle(values, rank):
    return [values[i % len(values)] for i in range(rank)]


def pattern_attrs(pattern: dict, rank: int, allowed: set[str]) -> dict | None:
    """The pattern as ONNX attributes for `rank` axes, or None when the version cannot express it."""
    attrs = {"kernel_shape": _cycle(pattern["kernel"], rank)}
    if pattern["strides"]:
        attrs["strides"] = _cycle(pattern["strides"], rank)
    if pattern["dilations"]:
        if "dilations" not in allowed:
            return None
        attrs["dilations"] = _cycle(pattern["dilations"], rank)
    if pattern["pads"]:
        pairs = _cycle(pattern["pads"], rank)
        attrs["pads"] = [b for b, _ in pairs] + [e for _, e in pairs]
    if pattern["auto_pad"]:
        attrs["auto_pad"] = pattern["auto_pad"]
    if pattern["ceil"]:
        if "ceil_mode" not in allowed:
            return None
        attrs["ceil_mode"] = 1
    return attrs


def windowed_cases() -> list[GridCase]:
    cases = []
    for op_type in ("AveragePool", "MaxPool", "LpPool"):
        for version in OP_VERSIONS[op_type]:
            allowed = set(version.attributes)
            dtypes = sorted(version.dtypes, key=lambda d: d.name)
            for index, (pattern, rank) in enumerate(itertools.product(PATTERNS, (1, 2, 3))):
                attrs = pattern_attrs(pattern, rank, allowed)
                if attrs is None:
                    continue
                dtype = dtypes[index % len(dtypes)]  # every dtype of the version, spread over the patterns
                extras = [{}]
                if op_type == "AveragePool" and "count_include_pad" in allowed:
                    extras = [{"count_include_pad": 0}, {"count_include_pad": 1}]
                if op_type == "LpPool":
                    extras = [{"p": 2.0 if version.attributes["p"].kind == "float" else 2},
                              {"p": 1.5 if version.attributes["p"].kind == "float" else 3}]
                for extra in extras:
                    with_indices = op_type == "MaxPool" and version.max_outputs > 1 and index % 2 == 0
                    full = {**attrs, **extra}
                    if with_indices and index % 4 == 0 and "storage_order" in allowed:
                        full["storage_order"] = 1
                    cases.append(GridCase(op_type, version.since, SHAPES[rank], dtype, full, with_indices))
    return cases


def global_cases() -> list[GridCase]:
    cases = []
    for op_type in ("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"):
        for version in OP_VERSIONS[op_type]:
            for dtype in sorted(version.dtypes, key=lambda d: d.name):
                for rank in (1, 2, 3):
                    attrs = {}
                    if op_type == "GlobalLpPool":
                        attrs = {"p": 3.0 if version.attributes["p"].kind == "float" else 3}
                    cases.append(GridCase(op_type, version.since, SHAPES[rank], dtype, attrs))
    return cases


BF16 = np.dtype(ml_dtypes.bfloat16)
