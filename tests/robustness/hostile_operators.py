"""Hostile files for the whole-model operators, ONNX and IR: tiny files whose operators would allocate
gigabytes from values only the run computes (repeats, shapes, pads, indices fed from a file), kernels larger than
their input, extreme slices and ranks. Each case is (id, builder, expected exit code, expected message fragment);
a builder writes the model and its input files into a folder and returns the command line's arguments."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from poolir import ir
from poolir.ir.budget import set_max_memory

BUDGET = "exceeds the memory budget"
BIG = 100_000  # 100000 x 100000 f32 is 40 GB: far beyond the 2 GiB default budget and the 3 GB test cap


def _onnx(folder: Path, nodes, inputs, initializers=(), opset: int = 18, feeds=None) -> list:
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                              [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, None)],
                              initializer=list(initializers))
    path = folder / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10), path)
    return ["run", path, *_feeds(folder, feeds)]


def _ir(folder: Path, build, feeds=None) -> list:
    b = ir.GraphBuilder("hostile")
    b.result(build(b), "y")
    path = folder / "m.xml"
    set_max_memory("1T")  # the builder infers (and checks) shapes too; the file is what is under test
    try:
        ir.write_model(b.build(), path)
    finally:
        set_max_memory(None)
    return ["run", path, *_feeds(folder, feeds)]


def _feeds(folder: Path, feeds) -> list:
    args = []
    for name, array in (feeds or {}).items():
        np.save(folder / f"{name}.npy", array)
        args += ["--input", f"{name}={folder / f'{name}.npy'}"]
    return args


def _i64(*values) -> np.ndarray:
    return np.array(values, np.int64)


F, I64 = TensorProto.FLOAT, TensorProto.INT64
ONNX_CASES = [
    ("tile-huge-repeats", lambda d: _onnx(d, [helper.make_node("Tile", ["x", "r"], ["y"])],
                                          [("x", F, [2, 2]), ("r", I64, [2])], feeds={"r": _i64(BIG, BIG)}),
     2, "node '#0' (Tile): the tiled output [200000,200000] needs 160000000000 bytes"),
    ("constant-of-shape-1e12", lambda d: _onnx(d, [helper.make_node("ConstantOfShape", ["s"], ["y"])],
                                               [("s", I64, [2])], feeds={"s": _i64(10**6, 10**6)}),
     2, "(ConstantOfShape): the filled output [1000000,1000000] needs 4000000000000 bytes"),
    ("expand-huge", lambda d: _onnx(d, [helper.make_node("Expand", ["x", "s"], ["y"])],
                                    [("x", F, [1]), ("s", I64, [2])], feeds={"s": _i64(BIG, BIG)}),
     2, "(Expand): the broadcast output [100000,100000] needs 40000000000 bytes"),
    ("pad-huge", lambda d: _onnx(d, [helper.make_node("Pad", ["x", "p"], ["y"])],
                                 [("x", F, [1, 1]), ("p", I64, [4])], feeds={"p": _i64(BIG, BIG, BIG, BIG)}),
     2, "(Pad): the padded output [200001,200001] needs"),
    ("gather-huge", lambda d: _onnx(d, [helper.make_node("ConstantOfShape", ["s"], ["i"],  # computed indices
                                                         value=helper.make_tensor("v", I64, [1], [0])),
                                        helper.make_node("Gather", ["x", "i"], ["y"])],
                                    [("x", F, [10, BIG]), ("s", I64, [1])], feeds={"s": _i64(20000)}),
     2, "(Gather): the gathered output [20000,100000] needs 8000000000 bytes"),
    ("gather-out-of-range", lambda d: _onnx(d, [helper.make_node("Gather", ["x", "i"], ["y"])],
                                            [("x", F, [3]), ("i", I64, [1])], feeds={"i": _i64(5)}),
     2, "(Gather): cannot execute for the given inputs: index 5 is out of bounds for axis 0 with size 3"),
    ("concat-growth", lambda d: _onnx(d, [helper.make_node("ConstantOfShape", ["s"], ["c"]),
                                          helper.make_node("Concat", ["c"] * 64, ["y"], axis=0)],
                                      [("s", I64, [1])], feeds={"s": _i64(10**7)}),
     2, "(Concat): the concatenated output [640000000] needs 2560000000 bytes"),
    ("reshape-huge-dims", lambda d: _onnx(d, [helper.make_node("Reshape", ["x", "s"], ["y"])],
                                          [("x", F, [4]), ("s", I64, [2])], feeds={"s": _i64(10**9, 10**9)}),
     2, "(Reshape): cannot execute for the given inputs: cannot reshape array of size 4 into shape"),
    ("reshape-rank-70", lambda d: _onnx(d, [helper.make_node("Reshape", ["x", "s"], ["y"])],
                                        [("x", F, [4]), ("s", I64, [70])], feeds={"s": np.ones(70, np.int64)}),
     2, "tensor 'y' has rank 70; poolir supports at most 32 dims"),
    ("conv-giant-kernel", lambda d: _onnx(d, [helper.make_node("Conv", ["x", "w"], ["y"])],
                                          [("x", F, [1, 1, 1200, 1200])],
                                          [onnx.numpy_helper.from_array(np.ones((1, 1, 600, 600), np.float32), "w")]),
     2, "(Conv): a scratch array (convolution columns, pooling passes) [1,1,360000,601,601] needs"),
    ("conv-giant-group", lambda d: _onnx(d, [helper.make_node("Conv", ["x", "w"], ["y"], group=2**40)],
                                         [("x", F, [1, 2, 4, 4])],
                                         [onnx.numpy_helper.from_array(np.ones((2, 1, 1, 1), np.float32), "w")]),
     2, "group"),
    ("split-huge-count", lambda d: _onnx(d, [helper.make_node("Split", ["x"], ["y", "z"], axis=0,
                                                              num_outputs=2**40)], [("x", F, [4])]),
     2, "node '#0' (Split): attribute 'num_outputs' = 1099511627776: must equal the node's output count (2)"),
    ("slice-extremes", lambda d: _onnx(d, [helper.make_node("Slice", ["x", "b", "e", "a", "t"], ["y"])],
                                       [("x", F, [5]), ("b", I64, [1]), ("e", I64, [1]), ("a", I64, [1]),
                                        ("t", I64, [1])],
                                       feeds={"b": _i64(2**63 - 1), "e": _i64(-2**63), "a": _i64(0),
                                              "t": _i64(-2**63)}),
     0, "y: shape [1]"),
    ("slice-step-zero", lambda d: _onnx(d, [helper.make_node("Slice", ["x", "b", "e", "a", "t"], ["y"])],
                                        [("x", F, [5]), ("b", I64, [1]), ("e", I64, [1]), ("a", I64, [1]),
                                         ("t", I64, [1])],
                                        feeds={"b": _i64(0), "e": _i64(5), "a": _i64(0), "t": _i64(0)}),
     2, "(Slice)"),
    ("range-1e12", lambda d: _onnx(d, [helper.make_node("Range", ["s", "l", "t"], ["y"])],
                                   [("s", F, []), ("l", F, []), ("t", F, [])],
                                   feeds={"s": np.float32(0), "l": np.float32(1e12), "t": np.float32(1)}),
     2, "node '#0' (Range): the Range output [999999995904] needs 3999999983616 bytes"),  # float32(1e12)
    ("scatter-nd-out-of-range", lambda d: _onnx(d, [helper.make_node("ScatterND", ["x", "i", "u"], ["y"])],
                                                [("x", F, [3]), ("i", I64, [1, 1]), ("u", F, [1])],
                                                feeds={"i": np.array([[-4]], np.int64)}),
     2, "node '#0' (ScatterND): the scatter index [-4] is out of range for data dims [3]"),
    ("live-set-over-budget", lambda d: _onnx(d, [helper.make_node("Relu", ["x"], [f"r{i}"]) for i in range(5)]
                                             + [helper.make_node("Sum", [f"r{i}" for i in range(5)], ["y"])],
                                             [("x", F, [12000, 12000])]),
     2, "node '#2' (Relu): the tensors live at once at this step need 2304000000 bytes"),
]


def _ir_tile(b):
    return b.add("Tile", "opset1", [b.parameter("x", "f32", (2, 2)), b.parameter("r", "i64", (2,))])[0]


def _ir_broadcast(b):
    return b.add("Broadcast", "opset3", [b.parameter("x", "f32", (1,)), b.parameter("s", "i64", (2,))],
                 {"mode": "numpy"})[0]


def _ir_pad(b):
    x, p = b.parameter("x", "f32", (1, 1)), b.parameter("p", "i64", (2,))
    return b.add("Pad", "opset12", [x, p, p], {"pad_mode": "constant"})[0]


def _ir_gather(b):
    x, i = b.parameter("x", "f32", (10, BIG)), b.parameter("i", "i64", (None,))
    return b.add("Gather", "opset8", [x, i, b.const(np.array(0, np.int64))], {"batch_dims": 0})[0]


def _ir_reshape(b):
    x, s = b.parameter("x", "f32", (4,)), b.parameter("s", "i64", (2,))
    return b.add("Reshape", "opset1", [x, s], {"special_zero": False})[0]


def _ir_convolution(b):
    x = b.parameter("x", "f32", (1, 1, 1200, 1200))
    w = b.const(np.ones((1, 1, 600, 600), np.float32))
    return b.add("Convolution", "opset1", [x, w], {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [0, 0],
                                                   "pads_end": [0, 0], "auto_pad": "explicit"})[0]


def _ir_concat(b):
    x = b.parameter("x", "f32", (10**7,))
    return b.add("Concat", "opset1", [x] * 64, {"axis": 0})[0]


def _ir_range(b):
    return b.add("Range", "opset4", [b.const(np.array(0, np.int64)), b.parameter("l", "i64", ()),
                                     b.const(np.array(1, np.int64))], {"output_type": "i64"})[0]


def _ir_live_set(b):
    """Five 576 MB ReLUs of one input, summed: each tensor fits the 2 GiB budget, five at once do not."""
    x = b.parameter("x", "f32", (12000, 12000))
    relus = [b.add("ReLU", "opset1", [x])[0] for _ in range(5)]
    total = relus[0]
    for relu in relus[1:]:
        total = b.add("Add", "opset1", [total, relu])[0]
    return total


IR_CASES = [
    ("ir-tile-huge-repeats", lambda d: _ir(d, _ir_tile, {"r": _i64(BIG, BIG)}),
     2, "(id 2, Tile): the tiled output [200000,200000] needs 160000000000 bytes"),
    ("ir-broadcast-huge", lambda d: _ir(d, _ir_broadcast, {"s": _i64(BIG, BIG)}),
     2, "(id 2, Broadcast): the broadcast output [100000,100000] needs 40000000000 bytes"),
    ("ir-pad-huge", lambda d: _ir(d, _ir_pad, {"p": _i64(BIG, BIG)}),
     2, "(id 2, Pad): the padded output [200001,200001] needs"),
    ("ir-gather-huge", lambda d: _ir(d, _ir_gather, {"i": np.zeros(20000, np.int64)}),
     2, "(id 3, Gather): the inferred output [20000,100000] of f32: 8000000000 bytes exceeds the memory budget"),
    ("ir-reshape-huge-dims", lambda d: _ir(d, _ir_reshape, {"s": _i64(10**9, 10**9)}),
     2, "(id 2, Reshape): "),
    ("ir-conv-giant-kernel", lambda d: _ir(d, _ir_convolution),
     2, "(id 2, Convolution): a scratch array (convolution columns, pooling passes) [1,1,360000,601,601] needs"),
    ("ir-concat-growth", lambda d: _ir(d, _ir_concat),
     2, "(id 1, Concat): the inferred output [640000000] of f32: 2560000000 bytes exceeds the memory budget"),
    ("ir-range-huge", lambda d: _ir(d, _ir_range, {"l": np.array(2**50, np.int64)}),
     2, "(id 3, Range): the Range output [1125899906842624] needs 9007199254740992 bytes"),
    ("ir-live-set-over-budget", lambda d: _ir(d, _ir_live_set),
     2, "(id 3, ReLU): the tensors live at once at this step need 2304000000 bytes"),
]
