"""Whole-network bases for network_fuzz.py, written into a folder once per session.

For every torchvision-shaped network of tests/networks (both exporter styles; the dynamo style keeps its weights
in external data) and two operator zoos made here (an ONNX graph and an IR graph, each holding one or more layers
of every family the classic CNNs need beyond pooling), the folder gets:

    <name>.<style>/model.onnx (+ .onnx.data)   the network as PyTorch's exporter writes it
    <name>.<style>/ov.xml + ov.bin              OpenVINO 2026.4's IR of it (f16 weights with Convert in the
                                                torchscript style, f32 in the dynamo style)
    <name>.<style>/pl.xml + pl.bin              poolir's IR of it (IR v11; v10 for every other network)
    <name>.<style>/back.onnx                    poolir's ONNX of OpenVINO's IR

Every base is a valid model (each file passes `poolir run`): a mutant's refusal is the mutation's doing.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from poolir import ir
from poolir.ir.builder import GraphBuilder


@dataclass(frozen=True)
class Base:
    name: str  # "resnet_basic.dynamo/ov.xml"
    path: Path

    @property
    def kind(self) -> str:
        return self.path.suffix[1:]


def onnx_operator_zoo() -> onnx.ModelProto:
    """One valid opset-17 graph with the non-pooling ONNX operators of the classic CNNs, every one on the path to
    an output: grouped Conv, BatchNormalization, LRN, Clip, Split, Concat, Transpose, Softmax, Reshape, MatMul,
    Gemm, Unsqueeze, Expand, Tile, Pad, Slice, Squeeze, GatherND, comparisons and logic, Where, Cast, LogSoftmax,
    ReduceSum, Shape and Gather, HardSwish, PRelu, GlobalAveragePool, Flatten."""
    rng = np.random.default_rng(0)
    weights = []

    def const(name, array):
        weights.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def f32(*shape):
        return rng.normal(0, 0.3, shape).astype(np.float32)

    i64 = lambda *values: np.array(values, np.int64)  # noqa: E731
    n = helper.make_node
    nodes = [
        n("Conv", ["x", const("w1", f32(8, 4, 3, 3)), const("b1", f32(8))], ["c1"], name="conv", pads=[1, 1, 1, 1]),
        n("HardSwish", ["c1"], ["h1"], name="hswish"),
        n("PRelu", ["h1", const("slope", f32(8, 1, 1))], ["p1"], name="prelu"),
        n("Conv", ["p1", const("w2", f32(8, 2, 3, 3))], ["g1"], name="group_conv", group=4, strides=[2, 2],
          pads=[1, 1, 1, 1]),
        n("BatchNormalization", ["g1", const("bn_s", f32(8) + 1), const("bn_b", f32(8)), const("bn_m", f32(8)),
                                 const("bn_v", np.abs(f32(8)) + 0.5)], ["bn"], name="bn", epsilon=1e-3),
        n("LRN", ["bn"], ["lrn"], name="lrn", size=3, alpha=1e-3, beta=0.75, bias=1.0),
        n("Clip", ["lrn", const("lo", np.float32(-2)), const("hi", np.float32(2))], ["clip"], name="clip"),
        n("Split", ["clip", const("split", i64(3, 5))], ["s0", "s1"], name="split", axis=1),
        n("Concat", ["s1", "s0"], ["cat"], name="concat", axis=1),
        n("Transpose", ["cat"], ["t"], name="transpose", perm=[0, 2, 3, 1]),
        n("Softmax", ["t"], ["sm"], name="softmax", axis=-1),
        n("Shape", ["sm"], ["shape"], name="shape"),
        n("Gather", ["shape", const("first", np.int64(0))], ["batch"], name="gather", axis=0),
        n("Unsqueeze", ["batch", const("ax0", i64(0))], ["batch1"], name="unsqueeze_batch"),
        n("Concat", ["batch1", const("minus1", i64(-1))], ["flat_shape"], name="flat_shape", axis=0),
        n("Reshape", ["sm", "flat_shape"], ["flat"], name="reshape"),
        n("MatMul", ["flat", const("wm", f32(128, 10))], ["mm"], name="matmul"),
        n("Gemm", ["mm", const("wg", f32(6, 10)), const("bg", f32(6))], ["gm"], name="gemm", transB=1),
        n("Unsqueeze", ["gm", const("ax2", i64(2))], ["uq"], name="unsqueeze"),
        n("Expand", ["uq", const("expand", i64(1, 6, 3))], ["ex"], name="expand"),
        n("Tile", ["ex", const("reps", i64(1, 1, 2))], ["tl"], name="tile"),
        n("Pad", ["tl", const("pads", i64(0, 1, 0, 0, 1, 0))], ["pd"], name="pad"),
        n("Slice", ["pd", const("st", i64(1)), const("en", i64(7)), const("ax1", i64(1))], ["sl"], name="slice"),
        n("Squeeze", ["sl", const("ax0b", i64(0))], ["sq"], name="squeeze"),
        n("GatherND", ["sq", const("nd", np.array([[0, 1], [2, 3], [5, 5]], np.int64))], ["gnd"], name="gathernd"),
        n("Greater", ["sq", const("zero", np.float32(0))], ["pos"], name="greater"),
        n("Equal", ["sq", const("half", np.float32(0.5))], ["eq"], name="equal"),
        n("Not", ["eq"], ["ne"], name="not"),
        n("And", ["pos", "ne"], ["both"], name="and"),
        n("Neg", ["sq"], ["neg"], name="neg"),
        n("Where", ["both", "sq", "neg"], ["wh"], name="where"),
        n("Cast", ["wh"], ["half16"], name="to_f16", to=TensorProto.FLOAT16),
        n("Cast", ["half16"], ["back32"], name="to_f32", to=TensorProto.FLOAT),
        n("LogSoftmax", ["back32"], ["ls"], name="logsoftmax", axis=1),
        n("ReduceSum", ["ls", const("ax1b", i64(1))], ["rs"], name="reducesum", keepdims=0),
        n("GlobalAveragePool", ["p1"], ["gap"], name="gap"),
        n("Flatten", ["gap"], ["pooled"], name="flatten"),
    ]
    outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
               for name, shape in (("rs", [6]), ("gnd", [3]), ("pooled", [1, 8]))]
    graph = helper.make_graph(nodes, "operator_zoo", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                   [1, 4, 8, 8])],
                              outputs, initializer=weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


def ir_operator_zoo() -> ir.Model:
    """One valid IR v11 graph with the IR layers OpenVINO writes that the ONNX zoo does not produce directly:
    ShuffleChannels, StridedSlice, VariadicSplit, Select, Broadcast, AdaptiveAvgPool, AdaptiveMaxPool, SoftMax-8,
    Swish, Convert (f16 weights), GroupConvolution, Convolution, MatMul, ShapeOf, Gather, Squeeze, FloorMod,
    comparisons, LogicalAnd, Tile, GatherND, ReduceL2."""
    rng = np.random.default_rng(1)
    b = GraphBuilder("ir_operator_zoo")
    i64 = lambda *values: b.const(np.array(values, np.int64))  # noqa: E731
    x = b.parameter("x", "f32", (1, 8, 6, 6))
    (w16,) = b.add("Convert", "opset1", [b.const(rng.normal(0, 0.3, (8, 8, 1, 1)).astype(np.float16))],
                   {"destination_type": "f32"}, name="weights_to_f32")
    (conv,) = b.add("Convolution", "opset1", [x, w16], {"strides": (1, 1), "dilations": (1, 1), "pads_begin": (0, 0),
                                                        "pads_end": (0, 0), "auto_pad": "explicit"}, name="conv")
    (group,) = b.add("GroupConvolution", "opset1", [conv, b.const(rng.normal(0, 0.3, (4, 2, 2, 3, 3)).astype(
        np.float32))], {"strides": (1, 1), "dilations": (1, 1), "pads_begin": (1, 1), "pads_end": (1, 1),
                        "auto_pad": "explicit"}, name="group_conv")
    (shuffled,) = b.add("ShuffleChannels", "opset1", [group], {"axis": 1, "group": 2}, name="shuffle")
    (swish,) = b.add("Swish", "opset4", [shuffled], name="swish")
    first, second = b.add("VariadicSplit", "opset1", [swish, b.const(np.int64(1)), i64(3, 5)], name="vsplit")
    (sliced,) = b.add("StridedSlice", "opset1", [second, i64(0, 0, 1, 0), i64(1, 5, 6, 6), i64(1, 2, 2, 1)],
                      {"begin_mask": (0, 0, 0, 0), "end_mask": (0, 0, 0, 0), "new_axis_mask": (),
                       "shrink_axis_mask": (), "ellipsis_mask": ()}, name="strided")
    (adaptive_avg,) = b.add("AdaptiveAvgPool", "opset8", [sliced, i64(2, 2)], name="adaptive_avg")
    adaptive_max, _ = b.add("AdaptiveMaxPool", "opset8", [first, i64(3, 2)], {"index_element_type": "i64"},
                            name="adaptive_max")
    (softmax,) = b.add("SoftMax", "opset8", [adaptive_max], {"axis": -1}, name="softmax")
    (shape,) = b.add("ShapeOf", "opset3", [softmax], {"output_type": "i64"}, name="shape")
    (batch,) = b.add("Gather", "opset8", [shape, i64(0, 1), b.const(np.int64(0))], {"batch_dims": 0}, name="gather")
    (target,) = b.add("Concat", "opset1", [batch, i64(-1)], {"axis": 0}, name="target")
    (flat,) = b.add("Reshape", "opset1", [softmax, target], {"special_zero": False}, name="reshape")
    (mm,) = b.add("MatMul", "opset1", [flat, b.const(rng.normal(0, 0.3, (4, 6)).astype(np.float32))],
                  {"transpose_a": False, "transpose_b": True}, name="matmul")
    (wide,) = b.add("Broadcast", "opset3", [mm, i64(2, 3, 4)], {"mode": "numpy"}, name="broadcast")
    (tiled,) = b.add("Tile", "opset1", [wide, i64(1, 2, 1)], name="tile")
    (squeezed,) = b.add("Squeeze", "opset1", [adaptive_avg, i64(0)], name="squeeze")
    (modded,) = b.add("FloorMod", "opset1", [tiled, b.const(np.float32(0.75))], name="floormod")
    (greater,) = b.add("Greater", "opset1", [tiled, b.const(np.float32(0))], name="greater")
    (less,) = b.add("Less", "opset1", [tiled, b.const(np.float32(1))], name="less")
    (both,) = b.add("LogicalAnd", "opset1", [greater, less], name="and")
    (chosen,) = b.add("Select", "opset1", [both, tiled, modded], {"auto_broadcast": "numpy"}, name="select")
    (picked,) = b.add("GatherND", "opset8", [squeezed, b.const(np.array([[0, 1], [2, 0]], np.int64))],
                      {"batch_dims": 0}, name="gathernd")
    (norm,) = b.add("ReduceL2", "opset4", [chosen, i64(2)], {"keep_dims": False}, name="reduce_l2")
    b.result(norm, "norm")
    b.result(picked, "picked")
    return b.build(version=11)


def _write_onnx_base(folder: Path, model) -> Path:
    if isinstance(model, onnx.ModelProto):
        path = folder / "model.onnx"
        onnx.save(model, path)
        return path
    written = Path(model)  # the dynamo style: <name>.onnx + <name>.onnx.data; the data file keeps its name
    shutil.move(written, folder / "model.onnx")
    return folder / "model.onnx"


def build_bases(folder: Path, names=None) -> list[Base]:
    """Write every base into `folder` (see the module docstring); `names`: network names (default: all)."""
    from poolir import converter
    from tests.networks import torchvision
    from tests.networks.peers import openvino_ir_of

    folder = Path(folder)
    bases = []
    chosen = [n for n in torchvision.NETWORKS if names is None or n in names]
    for index, (name, style) in enumerate([(n, s) for n in chosen for s in torchvision.styles()] +
                                          [("onnx_operator_zoo", "torchscript")]):
        where = folder / f"{name}.{style}"
        where.mkdir(parents=True, exist_ok=True)
        model = onnx_operator_zoo() if name == "onnx_operator_zoo" else torchvision.build(name, style, 0, where)
        source = _write_onnx_base(where, model)
        openvino_ir_of(source, where, compress_to_fp16=style == "torchscript", name="ov")
        ir.write_model(converter.onnx_to_ir(onnx.load(source)), where / "pl.xml", version=11 - index % 2)
        back = converter.ir_to_onnx(ir.read_model(where / "ov.xml"))
        onnx.save(back, where / "back.onnx")
        bases += [Base(f"{where.name}/{p.name}", p) for p in (source, where / "ov.xml", where / "pl.xml",
                                                                 where / "back.onnx")]
    zoo = folder / "ir_operator_zoo"
    zoo.mkdir(exist_ok=True)
    ir.write_model(ir_operator_zoo(), zoo / "pl.xml")
    onnx.save(converter.ir_to_onnx(ir.read_model(zoo / "pl.xml")), zoo / "back.onnx")
    bases += [Base("ir_operator_zoo/pl.xml", zoo / "pl.xml"), Base("ir_operator_zoo/back.onnx", zoo / "back.onnx")]
    return bases
