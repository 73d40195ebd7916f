"""Random *valid* single-node ONNX models of the non-pooling operators, every opset version from the op's first
to 22, for the differential fuzzer (test_valid_op_fuzz.py): draw(seed) -> Case.

Values are small and finite; the corners where an engine is known to differ from the spec are left out here,
each named (onnxruntime's INT_MAX end with a negative Slice step, OpenVINO's NaN rules, its run-time i64 as i32,
its float32 f64), so a difference that remains is a finding. Refusals are expected only where they are designed
(types IR lacks, LRN's even size, Pad wrap, training mode, run-time axes or pads).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
import onnx.defs
from onnx import helper, numpy_helper

FLOATS = (np.float32,) * 4 + (np.float64, np.float16)
INTEGERS = (np.int32, np.int64, np.int8, np.uint8)
INT64_MIN = -2**63
# Exact comparison: these only move, select or compare values (or are integer arithmetic).
EXACT = {"Abs", "Sign", "Clip", "Relu", "Concat", "Split", "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze",
         "Identity", "Dropout", "Constant", "ConstantOfShape", "Shape", "Gather", "GatherND", "Slice", "Cast", "Pad",
         "Where", "ReduceMax"}


@dataclass
class Case:
    op: str
    opset: int
    rng: np.random.Generator
    inputs: list = field(default_factory=list)    # graph inputs (ValueInfoProto)
    feeds: dict = field(default_factory=dict)
    initializers: list = field(default_factory=list)
    names: list = field(default_factory=list)     # the node's inputs ("" for an omitted one)
    attrs: dict = field(default_factory=dict)
    outputs: int = 1

    def int(self, low: int, high: int) -> int:
        return int(self.rng.integers(low, high + 1))

    def pick(self, options):
        return options[int(self.rng.integers(len(options)))]

    def coin(self, p: float = 0.5) -> bool:
        return bool(self.rng.random() < p)

    def shape(self, rank: int, low: int = 1, high: int = 4) -> list[int]:
        return [self.int(low, high) for _ in range(rank)]

    def values(self, shape, dtype) -> np.ndarray:
        dtype = np.dtype(dtype)
        if dtype == np.bool_:
            return self.rng.random(shape) < 0.5
        if dtype.kind in "iu":
            low = max(np.iinfo(dtype).min, -12)
            return self.rng.integers(low, min(np.iinfo(dtype).max, 12) + 1, size=shape).astype(dtype)
        x = self.rng.standard_normal(shape) * 2
        return np.where(self.rng.random(shape) < 0.3, np.round(x * 2) / 2, x).astype(dtype)

    def add(self, array, how: str = "feed") -> str:
        """An input of the node: a graph input ("feed"), an initializer ("init") or left out ("absent")."""
        if how == "absent":
            self.names.append("")
            return ""
        name, array = f"in{len(self.names)}", np.asarray(array)
        if how == "feed":
            self.inputs.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(array.dtype),
                                                             array.shape))
            self.feeds[name] = array
        else:
            self.initializers.append(numpy_helper.from_array(array, name))
        self.names.append(name)
        return name

    def param(self, array, p_feed: float = 0.15) -> str:
        return self.add(array, "feed" if self.coin(p_feed) else "init")

    def model(self) -> onnx.ModelProto:
        node = helper.make_node(self.op, self.names, [f"y{i}" for i in range(self.outputs)], name="node")
        for key, value in self.attrs.items():
            kind = None if not isinstance(value, list) or value else (
                onnx.AttributeProto.FLOATS if "float" in key else onnx.AttributeProto.INTS)
            node.attribute.append(helper.make_attribute(key, value, attr_type=kind))
        graph = helper.make_graph([node], "g", self.inputs, [onnx.ValueInfoProto(name=f"y{i}")
                                                             for i in range(self.outputs)], self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        model.ir_version = 8
        return model


def _axes(c: Case, rank: int, count: int, negative: bool) -> list[int]:
    axes = [int(a) for a in c.rng.choice(rank, size=count, replace=False)]
    return [a - rank if negative and c.coin(0.4) else a for a in axes]


def conv(c: Case):
    rank, groups = c.int(1, 3), c.pick((1, 1, 2, 3))
    per_group, per_out = c.int(1, 2), c.int(1, 2)
    kernel = c.shape(rank, 1, 3)
    strides, dilations = c.shape(rank, 1, 2), c.shape(rank, 1, 2)
    auto = c.pick(("NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"))
    if auto.startswith("SAME"):
        dilations = [1] * rank  # onnxruntime: "Dilation not supported for AutoPadType::SAME_UPPER"
    pads = c.shape(2 * rank, 0, 2) if auto == "NOTSET" else [0] * 2 * rank
    reach = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    dims = [c.int(max(1, r - pads[i] - pads[i + rank]), 7) for i, r in enumerate(reach)]
    dtype = c.pick(FLOATS[:5])
    c.add(c.values([c.int(1, 2), groups * per_group] + dims, dtype))
    c.param(c.values([groups * per_out, per_group] + kernel, dtype), 0.2)
    if c.coin():
        c.param(c.values([groups * per_out], dtype), 0.2)
    c.attrs.update(kernel_shape=kernel, strides=strides, dilations=dilations, group=groups, auto_pad=auto)
    if auto == "NOTSET":
        c.attrs["pads"] = pads


def gemm(c: Case):
    dtype, (m, k, n) = c.pick(FLOATS[:5]), c.shape(3, 1, 5)
    trans_a, trans_b = c.int(0, 1), c.int(0, 1)
    c.add(c.values([k, m] if trans_a else [m, k], dtype))
    c.param(c.values([n, k] if trans_b else [k, n], dtype), 0.5)
    shapes = [(m, n), (1, n), (n,), (m, 1), (1, 1), ()] + ([None] if c.opset >= 11 else [])
    chosen = c.pick(shapes)
    if chosen is not None:
        c.param(c.values(list(chosen), dtype), 0.3)
        if c.opset < 7 and tuple(chosen) != (m, n):
            c.attrs["broadcast"] = 1
    c.attrs.update(transA=trans_a, transB=trans_b, alpha=c.pick((1.0, -0.5, 0.0, 1.75)), beta=c.pick((1.0, 0.0, 2.0)))


def matmul(c: Case):
    dtype = c.pick(FLOATS[:5] + ((np.int32, np.int64) if c.opset >= 9 else ()))
    k, batch = c.int(1, 4), c.shape(c.int(0, 2), 1, 3)
    a = c.pick(([k], batch + [c.int(1, 4), k], [c.int(1, 3), k]))
    b = c.pick(([k], [k, c.int(1, 4)], [1] * len(batch) + [k, c.int(1, 4)]))
    c.add(c.values(a, dtype))
    c.param(c.values(b, dtype), 0.5)


def unary(c: Case):
    integers = {"Abs": INTEGERS, "Sign": INTEGERS, "Relu": (np.int32, np.int8) if c.opset >= 14 else ()}
    dtype = c.pick(FLOATS + integers.get(c.op, ()))
    c.add(c.values(c.shape(c.int(0, 4)), dtype))
    if c.op == "HardSigmoid":
        c.attrs.update(alpha=c.pick((0.2, -0.7, 0.45)), beta=c.pick((0.5, -0.25, 1.25)))
    if c.op in ("Elu", "Celu", "Selu") and c.coin():
        c.attrs.update(alpha=c.pick((0.5, 1.0, 2.5)))


def clip(c: Case):
    dtype = c.pick(FLOATS + (INTEGERS if c.opset >= 12 else ()))
    c.add(c.values(c.shape(c.int(0, 4)), dtype))
    low, high = (c.values([], dtype) if c.coin(0.7) else None for _ in range(2))
    if c.opset < 11:
        c.attrs.update({k: float(v) for k, v in (("min", low), ("max", high)) if v is not None})
    elif low is not None or high is not None:
        c.add(low if low is not None else 0, "absent" if low is None else "init")
        if high is not None:
            c.param(high, 0.3)


def batch_norm(c: Case):
    dtype, rank = c.pick(FLOATS[:5]), c.pick((2, 3, 4, 5))
    shape = [c.int(1, 2), c.int(1, 4)] + c.shape(rank - 2, 1, 3)
    spatial = 0 if c.opset < 9 and c.coin(0.3) else 1
    c.add(c.values(shape, dtype))
    for i in range(4):
        stats = c.values(shape[1:2] if spatial else shape[1:], dtype)
        c.param((np.abs(stats) + 0.25).astype(dtype) if i == 3 else stats)
    c.attrs.update({"epsilon": c.pick((1e-5, 0.0, 0.5))}, **({"spatial": spatial} if c.opset < 9 else {}),
                   **({"is_test": 1} if c.opset < 7 else {}), **({"consumed_inputs": [0] * 5} if c.opset < 6 else {}))


def lrn(c: Case):
    c.add(c.values([c.int(1, 2), c.int(1, 6), c.int(1, 3), c.int(1, 3)], c.pick(FLOATS[:5])))
    c.attrs.update(size=c.pick((1, 3, 5, 2)), alpha=c.pick((1e-4, 0.5)), beta=c.pick((0.75, 1.0)),
                   bias=c.pick((1.0, 2.0, 1.5)))


def softmax(c: Case):
    rank = c.int(1, 4)
    c.add(c.values(c.shape(rank), c.pick(FLOATS)))
    c.attrs["axis"] = c.int(-rank if c.opset >= 11 else 0, rank - 1)


def any_type(c: Case):
    return c.pick(FLOATS + INTEGERS + (np.bool_,))


def concat(c: Case):
    rank, dtype = c.int(1, 4), any_type(c)
    base, axis = c.shape(rank), c.int(-rank, rank - 1) if c.opset >= 11 else c.int(0, rank - 1)
    for _ in range(c.int(1, 3)):
        base[axis] = c.int(0 if c.coin(0.1) else 1, 3)
        c.add(c.values(base, dtype), c.pick(("feed", "init")))
    c.attrs["axis"] = axis


def split(c: Case):
    rank = c.int(1, 3)
    shape, axis = c.shape(rank, 1, 6), c.int(-rank if c.opset >= 11 else 0, rank - 1)
    c.add(c.values(shape, any_type(c)))
    cuts = sorted(int(v) for v in c.rng.integers(0, shape[axis] + 1, size=c.int(0, 2)))
    parts = [b - a for a, b in zip([0] + cuts, cuts + [shape[axis]])]
    c.outputs = len(parts)
    if c.opset >= 18 and c.coin(0.3):
        c.outputs = c.int(1, shape[axis])
        c.attrs["num_outputs"] = c.outputs
    elif c.opset >= 13:
        c.param(np.array(parts, np.int64), 0.0)
    else:
        c.attrs["split"] = parts
    c.attrs["axis"] = axis


def reshape(c: Case):
    shape = c.shape(c.int(0, 4))
    c.add(c.values(shape, any_type(c)))
    size, target = int(np.prod(shape)), []
    while size > 1 and c.coin(0.6):
        factor = c.pick([d for d in range(1, size + 1) if size % d == 0])
        target.append(factor)
        size //= factor
    target = [d if not (c.coin(0.3) and i < len(shape) and shape[i] == d) else 0 for i, d in enumerate(target + [size])]
    if c.coin(0.4):
        target[c.int(0, len(target) - 1)] = -1
    c.param(np.array(target, np.int64))


def flatten(c: Case):
    rank = c.int(1, 4)
    c.add(c.values(c.shape(rank), any_type(c)))
    c.attrs["axis"] = c.int(-rank if c.opset >= 11 else 0, rank)


def transpose(c: Case):
    rank = c.int(1, 5)
    c.add(c.values(c.shape(rank), any_type(c)))
    c.attrs["perm"] = [int(p) for p in c.rng.permutation(rank)]


def squeeze(c: Case):
    shape = [c.pick((1, 1, 2, 3)) for _ in range(c.int(1, 4))]
    rank = len(shape) + (1 if c.op == "Unsqueeze" else 0)
    c.add(c.values(shape, any_type(c)))
    ones = [i for i, d in enumerate(shape) if d == 1] if c.op == "Squeeze" else list(range(rank))
    if not ones:
        return
    axes = _axes(c, rank, 1, c.opset >= 11) if c.op == "Unsqueeze" else [
        a - len(shape) if c.opset >= 11 and c.coin(0.4) else a for a in ones[:c.int(1, len(ones))]]
    if c.opset >= 13:
        c.param(np.array(axes, np.int64), 0.0)
    else:
        c.attrs["axes"] = axes


def arithmetic(c: Case):
    dtype = c.pick(FLOATS + (np.int32, np.int64) + ((np.int8, np.uint8) if c.opset >= 14 else ()))
    out = c.shape(c.int(0, 3))
    for _ in range(2 if c.op != "Sum" else c.int(1, 3)):
        broadcasts = c.opset >= (8 if c.op == "Sum" else 7)
        shape = [1 if c.coin(0.3) else d for d in out[c.int(0, len(out)):]] if broadcasts else out
        x = c.values(shape, dtype if c.op != "Sum" else np.float32)
        if c.op == "Div" and x.dtype.kind in "iu" and c.names:
            x[x == 0] = 1
        c.add(x, c.pick(("feed", "init")))


def reduce(c: Case):
    rank = c.int(1, 4)
    c.add(c.values(c.shape(rank), c.pick(FLOATS + (np.int32, np.int64))))
    axes = _axes(c, rank, c.int(1, rank), c.opset >= 11) if c.coin(0.8) else []
    if c.opset >= 18:
        if axes:
            c.param(np.array(axes, np.int64), 0.0)
        c.attrs["noop_with_empty_axes"] = c.int(0, 1)
    elif axes:
        c.attrs["axes"] = axes
    c.attrs["keepdims"] = c.int(0, 1)


def dropout(c: Case):
    dtype = c.pick(FLOATS)
    c.add(c.values(c.shape(c.int(1, 3)), dtype))
    c.outputs = 2 if c.opset >= 12 else 1  # onnxruntime's mask before 12 is all false (README)
    if c.opset < 7:
        c.attrs["is_test"] = 1
    elif c.opset >= 12 and c.coin():
        c.param(np.array(0.25, dtype), 0.0)


def constant(c: Case):
    if c.op == "ConstantOfShape":
        c.param(np.array(c.shape(c.int(0, 3), 0 if c.coin(0.1) else 1, 3), np.int64), 0.0)
        c.attrs["value"] = numpy_helper.from_array(c.values([1], any_type(c)))
    elif c.opset >= 12 and c.coin():
        key, value = c.pick((("value_float", 1.5), ("value_ints", [3, -1]), ("value_int", -7), ("value_floats", [])))
        c.attrs[key] = value
    else:
        c.attrs["value"] = numpy_helper.from_array(c.values(c.shape(c.int(0, 3)), any_type(c)))


def shape_(c: Case):
    rank = c.int(0, 4)
    c.add(c.values(c.shape(rank), any_type(c)))
    if c.opset >= 15:
        c.attrs.update(start=c.int(-rank - 1, rank + 1), end=c.int(-rank - 1, rank + 1))


def gather(c: Case):
    rank = c.int(1, 3)
    shape = c.shape(rank, 1, 4)
    c.add(c.values(shape, any_type(c)))
    if c.op == "Gather":
        axis = c.int(-rank, rank - 1)
        c.param(c.rng.integers(-shape[axis], shape[axis], size=c.shape(c.int(0, 2))).astype(np.int64), 0.5)
        c.attrs["axis"] = axis
        return
    batch = c.int(0, min(1, rank - 1)) if c.opset >= 12 else 0
    last = c.int(1, rank - batch)
    lead = shape[:batch] + c.shape(c.int(0, 1), 1, 3)
    c.param(np.stack([c.rng.integers(-shape[batch + j], shape[batch + j], size=lead) for j in range(last)], -1), 0.5)
    if c.opset >= 12:
        c.attrs["batch_dims"] = batch


def slice_(c: Case):
    rank = c.int(1, 3)
    shape = c.shape(rank, 1, 5)
    c.add(c.values(shape, any_type(c)))
    axes = _axes(c, rank, c.int(1, rank), c.opset >= 11)
    steps = [c.pick((1, 1, 2, -1, -2)) if c.opset >= 10 else 1 for _ in axes]
    # onnxruntime reads an end of INT_MAX with a negative step as "through index 0" (the spec clamps it to the
    # last element: test_valid_op_differential.py); INT64_MIN is the backward sentinel the spec recommends.
    starts = [c.pick((c.int(-6, 6), INT64_MIN, 2**63 - 1)) for _ in axes]
    ends = [c.pick((c.int(-6, 6), INT64_MIN if s < 0 else 2**63 - 1)) for s in steps]
    if c.opset < 10:
        c.attrs.update(starts=starts, ends=ends, axes=axes)
        return
    for values in (starts, ends, axes, steps):
        c.param(np.array(values, np.int64), 0.0 if values is starts or values is ends else 0.15)


def cast(c: Case):
    source = any_type(c)
    c.add(c.values(c.shape(c.int(0, 3)), source))
    c.attrs["to"] = helper.np_dtype_to_tensor_dtype(np.dtype(any_type(c)))


def pad(c: Case):
    rank = c.int(1, 3)
    shape = c.shape(rank, 2, 4)
    c.add(c.values(shape, any_type(c)))
    mode = c.pick(("constant", "reflect", "edge"))
    high = {"constant": 3, "reflect": 1, "edge": 4}[mode]
    pads = [c.int(-1, high) for _ in range(2 * rank)]
    c.attrs["mode"] = mode
    if c.opset < 11:
        c.attrs["pads" if c.opset >= 2 else "paddings"] = [max(p, 0) for p in pads]
    else:
        c.param(np.array(pads, np.int64), 0.0)


def power(c: Case):
    dtype = c.pick(FLOATS + ((np.int32, np.int64) if c.opset >= 12 else ()))
    c.add(np.clip(c.values(c.shape(c.int(0, 3)), dtype), -5, 5))
    exponent = c.values([], dtype if c.opset < 12 or c.coin() else np.int64)
    c.add(np.clip(exponent, 0 if dtype not in FLOATS else -2, 4).astype(exponent.dtype), "init")


def where(c: Case):
    out = c.shape(c.int(0, 3))
    dtype = any_type(c)
    for i in range(3):
        shape = [1 if c.coin(0.3) else d for d in out[c.int(0, len(out)):]]
        c.add(c.values(shape, np.bool_ if i == 0 else dtype), c.pick(("feed", "init")))


OPS = {"Conv": conv, "Gemm": gemm, "MatMul": matmul, "Relu": unary, "Sigmoid": unary, "HardSigmoid": unary,
       "HardSwish": unary, "Abs": unary, "Sign": unary, "Clip": clip, "BatchNormalization": batch_norm, "LRN": lrn,
       "Softmax": softmax, "Concat": concat, "Split": split, "Reshape": reshape, "Flatten": flatten,
       "Transpose": transpose, "Squeeze": squeeze, "Unsqueeze": squeeze, "Add": arithmetic, "Sub": arithmetic,
       "Mul": arithmetic, "Div": arithmetic, "Sum": arithmetic, "ReduceMean": reduce, "ReduceMax": reduce,
       "Identity": unary, "Dropout": dropout, "Constant": constant, "ConstantOfShape": constant, "Shape": shape_,
       "Gather": gather, "GatherND": gather, "Slice": slice_, "Cast": cast, "Pad": pad, "Pow": power, "Where": where,
       "Elu": unary, "Selu": unary, "Celu": unary, "Softplus": unary, "Softsign": unary, "Mish": unary}


def versions(op: str) -> list[int]:
    return sorted({s.since_version for s in onnx.defs.get_all_schemas_with_history()
                   if s.domain == "" and s.name == op and s.since_version <= 22})


def draw(seed: int) -> Case:
    """One model: an op, then one of its versions, then an opset in that version's range."""
    rng = np.random.default_rng(seed)
    op = sorted(OPS)[int(rng.integers(len(OPS)))]
    since = versions(op)
    index = int(rng.integers(len(since)))
    last = since[index + 1] - 1 if index + 1 < len(since) else 22
    case = Case(op, int(rng.integers(since[index], last + 1)), rng)
    OPS[op](case)
    return case
