"""Small valid IR models (built with ir.builder, serialized by ir.serialize) that the fuzzers mutate.

Together they use every pooling layer version and the layers OpenVINO's ONNX frontend emits around
pooling (Const, Pad, Multiply, Power, Reduce*, Reshape, ShapeOf, Gather, Concat), so a mutation can
reach every attribute kind the reader parses.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from poolir import ir
from poolir.ir.builder import GraphBuilder


@dataclass(frozen=True)
class BaseIR:
    name: str
    xml: bytes
    weights: bytes


def _avg_pool_scaled() -> GraphBuilder:
    b = GraphBuilder("avg")
    x = b.parameter("x", "f32", (1, 2, 5, 5))
    (pooled,) = b.add("AvgPool", "opset1", [x], {"kernel": (3, 3), "strides": (2, 2), "pads_begin": (1, 1),
                                                  "pads_end": (1, 1), "exclude-pad": False,
                                                  "rounding_type": "ceil"}, name="pool")
    two = b.const(np.full((1, 1, 1, 1), 2.0, np.float32), name="two")
    (scaled,) = b.add("Multiply", "opset1", [pooled, two], name="scale")
    b.result(scaled, "y")
    return b


def _max_pool_indices() -> GraphBuilder:
    b = GraphBuilder("max")
    x = b.parameter("x", "f16", (1, 1, 6, 7))
    values, indices = b.add("MaxPool", "opset14", [x], {"kernel": (2, 3), "strides": (2, 1), "dilations": (1, 2),
                                                        "pads_begin": (0, 1), "pads_end": (1, 0),
                                                        "rounding_type": "ceil_torch", "axis": 2,
                                                        "index_element_type": "i32"}, name="pool")
    b.result(values, "values")
    b.result(indices, "indices")
    return b


def _max_pool_same_dynamic() -> GraphBuilder:
    b = GraphBuilder("same")
    x = b.parameter("x", "u8", (-1, 3, -1))
    (pooled,) = b.add("MaxPool", "opset1", [x], {"kernel": (3,), "strides": (2,), "pads_begin": (0,),
                                                 "pads_end": (0,), "auto_pad": "same_upper"}, name="pool")
    b.result(pooled, "y")
    return b


def _avg_pool_3d_dilated() -> GraphBuilder:
    b = GraphBuilder("avg3d")
    x = b.parameter("x", "f64", (1, 1, 3, 4, 5))
    (pooled,) = b.add("AvgPool", "opset16", [x], {"kernel": (2, 2, 2), "strides": (1, 2, 1), "dilations": (1, 1, 2),
                                                  "pads_begin": (0, 1, 0), "pads_end": (1, 0, 1),
                                                  "exclude-pad": True, "rounding_type": "floor"}, name="pool")
    b.result(pooled, "y")
    return b


def _lp_pool_decomposed() -> GraphBuilder:
    """OpenVINO's LpPool: Abs, Power p, Pad, AvgPool (include pad), Multiply by the kernel size, Power 1/p."""
    b = GraphBuilder("lp")
    x = b.parameter("x", "f32", (1, 2, 4, 4))
    (magnitude,) = b.add("Abs", "opset1", [x])
    (powered,) = b.add("Power", "opset1", [magnitude, b.const(np.float32(3.0))])
    (padded,) = b.add("Pad", "opset12", [powered, b.const(np.array([0, 0, 1, 1], np.int64)),
                                         b.const(np.array([0, 0, 1, 0], np.int64)), b.const(np.float32(0.0))],
                      {"pad_mode": "constant"})
    (pooled,) = b.add("AvgPool", "opset14", [padded], {"kernel": (2, 2), "strides": (2, 2), "pads_begin": (0, 0),
                                                       "pads_end": (0, 0), "exclude-pad": False})
    (summed,) = b.add("Multiply", "opset1", [pooled, b.const(np.float32(4.0))])
    (root,) = b.add("Power", "opset1", [summed, b.const(np.float32(1 / 3))])
    b.result(root, "y")
    return b


def _global_and_reshape() -> GraphBuilder:
    b = GraphBuilder("global")
    x = b.parameter("x", "f32", (2, 3, 4, 4))
    (mean,) = b.add("ReduceMean", "opset1", [x, b.const(np.array([2, 3], np.int64))], {"keep_dims": True})
    (shape,) = b.add("ShapeOf", "opset3", [mean], {"output_type": "i64"})
    (first,) = b.add("Gather", "opset8", [shape, b.const(np.array([0, 1], np.int64)), b.const(np.int64(0))])
    (target,) = b.add("Concat", "opset1", [first, b.const(np.array([1], np.int64))], {"axis": 0})
    (flat,) = b.add("Reshape", "opset1", [mean, target], {"special_zero": False})
    (largest,) = b.add("ReduceMax", "opset1", [x, b.const(np.array([1], np.int64))], {"keep_dims": False})
    b.result(flat, "mean")
    b.result(largest, "max")
    return b


BUILDERS = (_avg_pool_scaled, _max_pool_indices, _max_pool_same_dynamic, _avg_pool_3d_dilated,
            _lp_pool_decomposed, _global_and_reshape)


@cache
def bases() -> tuple[BaseIR, ...]:
    found = []
    for make in BUILDERS:
        for version in (11, 10):
            xml, weights = ir.serialize(make().build(version=version))
            found.append(BaseIR(f"{make.__name__.strip('_')}_v{version}", xml, weights))
    return tuple(found)
