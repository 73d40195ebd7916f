"""Random *valid* multi-node ONNX graphs (3-10 nodes, opsets 11-22) for a differential fuzzer of how the ops
compose: shape values flowing through Shape/Gather/Slice/Concat/Unsqueeze/ConstantOfShape into
Reshape/Expand/Tile/Pad/Slice, broadcasting chains, Casts, fan-out/fan-in through Split/Concat, pooling and
convolution after reshapes, dynamic input dims, outputs that also feed other nodes, unused outputs.

`draw(seed)` gives a Graph (model + feeds), or None when the drawn graph is not valid: onnx.checker, strict
shape inference and onnxruntime must accept it, and no intermediate may hold a non-finite value or a float that
a Cast to an integer type cannot hold (undefined behaviour). `compare(graph, tmp)` runs every path and returns
the differences found:

    poolir (ONNX)                       vs onnxruntime
    OpenVINO on poolir's IR             vs onnxruntime
    poolir (IR)                         vs OpenVINO on poolir's IR
    onnxruntime on IR -> ONNX           vs onnxruntime on the original

Run many: `python -m tests.runtime.graph_fuzz [FIRST_SEED] [COUNT]` (prints each finding and a summary).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32, F16, I32, I64, BOOL = (np.dtype(t) for t in (np.float32, np.float16, np.int32, np.int64, np.bool_))
# How far an engine that sums or rounds in another order may stray, relative to the output's magnitude.
TOLERANCE = {F32: 1e-5, F16: 4e-3}


@dataclass
class Tensor:
    name: str
    shape: list[int]          # the run-time dims (the feeds are drawn in these)
    dtype: np.dtype
    value: np.ndarray | None = None   # known at build time (constants and shape arithmetic)
    exact: bool = True   # every engine computes the same bits (no transcendental, no reordered sum, no f16)


@dataclass
class Graph:
    seed: int
    opset: int
    model: onnx.ModelProto
    feeds: dict
    ops: list
    half: bool = False   # an f16 tensor somewhere: onnxruntime and OpenVINO skip some of its roundings


@dataclass
class Builder:
    rng: np.random.Generator
    opset: int
    nodes: list = field(default_factory=list)
    inputs: list = field(default_factory=list)
    initializers: list = field(default_factory=list)
    feeds: dict = field(default_factory=dict)
    pool: list = field(default_factory=list)   # tensors a node may consume
    count: int = 0

    # -- drawing
    def int(self, low, high):
        return int(self.rng.integers(low, high + 1))

    def pick(self, options):
        return options[int(self.rng.integers(len(options)))]

    def coin(self, p=0.5):
        return bool(self.rng.random() < p)

    def fresh(self, prefix="t"):
        self.count += 1
        return f"{prefix}{self.count}"

    def values(self, shape, dtype):
        if dtype == BOOL:
            return self.rng.random(shape) < 0.5
        if dtype.kind == "i":
            return self.rng.integers(-6, 7, size=shape).astype(dtype)
        x = self.rng.standard_normal(shape) * 2
        return np.where(self.rng.random(shape) < 0.3, np.round(x * 2) / 2, x).astype(dtype)

    # -- graph pieces
    def feed(self, shape, dtype, dynamic=()):
        name = self.fresh("in")
        dims = [f"d{name}_{i}" if i in dynamic else d for i, d in enumerate(shape)]
        self.inputs.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(dtype), dims))
        self.feeds[name] = self.values(shape, dtype)
        tensor = Tensor(name, list(shape), dtype)
        self.pool.append(tensor)
        return tensor

    def const(self, array, as_node=False):
        array = np.asarray(array)
        name = self.fresh("c")
        if as_node:
            self.nodes.append(helper.make_node("Constant", [], [name], name=f"n_{name}",
                                               value=numpy_helper.from_array(array, name)))
        else:
            self.initializers.append(numpy_helper.from_array(array, name))
        return Tensor(name, list(array.shape), array.dtype, array)

    def ints(self, values):
        return self.const(np.array(values, np.int64), as_node=self.coin(0.3))

    def node(self, op, inputs, shape, dtype, value=None, outputs=1, keep=True, **attrs):
        names = [self.fresh() for _ in range(outputs)]
        self.nodes.append(helper.make_node(op, [t.name if t else "" for t in inputs], names,
                                           name=f"n_{names[0]}", **attrs))
        shapes = shape if outputs > 1 else [shape]
        exact = op not in INEXACT and all(t is None or t.exact for t in inputs) and dtype != F16
        made = [Tensor(n, list(s), dtype, value, exact) for n, s in zip(names, shapes)]
        if keep:
            self.pool.extend(made)
        return made if outputs > 1 else made[0]

    def choose(self, test=lambda t: True):
        options = [t for t in self.pool if test(t)]
        return self.pick(options[-4:] + options) if options else None  # favour recent tensors: chains

    def axes_arg(self, op, axes, first_input_opset):
        """Axes as an input (from `first_input_opset`) or an attribute."""
        if self.opset >= first_input_opset:
            return [self.ints(axes)], {}
        return [], {"axes": list(axes)}


# Ops whose last bits differ between engines (transcendentals, sums in another order, a Divide OpenVINO may
# turn into a product by the reciprocal): a Floor, Ceil, comparison or Cast to an integer after one can turn
# an ulp into a whole unit, so those take exact tensors only.
INEXACT = {"Erf", "Tanh", "Sigmoid", "Exp", "Softmax", "LogSoftmax", "LRN", "LayerNormalization",
           "BatchNormalization", "MatMul", "Gemm", "Conv", "AveragePool", "GlobalAveragePool", "ReduceMean",
           "ReduceSum", "ReduceProd", "Pow", "HardSwish", "HardSigmoid", "Gelu", "Mean", "Sum", "Reciprocal",
           "Sqrt", "Div", "LeakyRelu", "PRelu", "Mul"}
FLOAT = lambda t: t.dtype.kind == "f"  # noqa: E731
STEADY = lambda t: t.exact or t.dtype.kind != "f"  # noqa: E731
SMALL = lambda t: int(np.prod(t.shape)) <= 512  # noqa: E731


def _broadcast_partner(b: Builder, x: Tensor):
    """A shape that broadcasts with x's to x's: a suffix of it with some dims set to 1."""
    shape = x.shape[b.int(0, len(x.shape)):] if b.coin(0.4) else list(x.shape)
    return [1 if b.coin(0.3) else d for d in shape]


def unary(b: Builder):
    x = b.choose(FLOAT)
    if x is None:
        return False
    steady = ["Floor", "Ceil"] if x.exact else []
    ops = ["Relu", "Sigmoid", "Tanh", "Abs", "Neg", *steady, "Identity", "Erf", "LeakyRelu", "Exp"]
    ops += ["HardSwish"] if b.opset >= 14 else []
    ops += ["Gelu"] if b.opset >= 20 else []
    op = b.pick(ops)
    if op == "Exp":
        x = b.node("Tanh", [x], x.shape, x.dtype)
    if op == "Identity" and b.coin(0.5):
        x = b.node("Identity", [x], x.shape, x.dtype)
    b.node(op, [x], x.shape, x.dtype, **({"alpha": 0.125} if op == "LeakyRelu" else {}))
    return True


def binary(b: Builder):
    x = b.choose(lambda t: t.dtype != BOOL)
    ops = ["Add", "Sub", "Mul", "Max", "Min"] + (["Div"] if x.dtype.kind == "f" else [])
    if x.dtype.kind == "i" and b.opset < 12:
        ops = ["Add", "Sub", "Mul"]
    op = b.pick(ops)
    partners = [t for t in b.pool if t is not x and t.dtype == x.dtype and len(t.shape) <= len(x.shape)
                and all(p in (1, q) for p, q in zip(t.shape[::-1], x.shape[::-1]))]
    if partners and op != "Div" and b.coin(0.5):
        y = b.pick(partners)
    else:
        values = b.values(_broadcast_partner(b, x), x.dtype)
        if op == "Div":
            values = np.where(np.abs(values) < 0.5, 1.5, values).astype(x.dtype)
        y = b.const(values, as_node=b.coin(0.2))
    first, second = (y, x) if b.coin(0.3) and op != "Div" else (x, y)
    b.node(op, [first, second], x.shape, x.dtype)
    return True


def compare_select(b: Builder):
    x = b.choose(lambda t: STEADY(t) and t.dtype in (F32, I32, I64))
    if x is None:
        return False
    op = b.pick(["Less", "Greater", "Equal"] + (["LessOrEqual", "GreaterOrEqual"] if b.opset >= 12 else []))
    threshold = b.const(np.array(b.pick([0, 1, -1]), x.dtype).reshape([1] * b.int(0, len(x.shape))))
    mask = b.node(op, [x, threshold], x.shape, BOOL)
    use = b.pick(["Where", "Where", "Not", "Cast", "Xor"])
    if use == "Where":
        other = b.const(b.values(_broadcast_partner(b, x), x.dtype))
        b.node("Where", [mask, x, other] if b.coin() else [mask, other, x], x.shape, x.dtype)
    elif use == "Not":
        b.node("Not", [mask], x.shape, BOOL)
    elif use == "Xor":
        b.node("Xor", [mask, b.const(b.values(_broadcast_partner(b, x), BOOL))], x.shape, BOOL)
    else:
        to = b.pick([F32, I64, I32])
        b.node("Cast", [mask], x.shape, to, to=helper.np_dtype_to_tensor_dtype(to))
    return True


def cast(b: Builder):
    x = b.choose()
    targets = {F32: [F16, I32, I64] if x.exact else [F16], F16: [F32], I32: [F32, I64, BOOL], I64: [F32, I32, F16],
               BOOL: [F32, I64]}[x.dtype]
    to = b.pick(targets)
    value = None if x.value is None else x.value.astype(to)
    if b.opset >= 15 and b.coin(0.2):
        like = b.const(np.zeros([0], to))
        b.node("CastLike", [x, like], x.shape, to, value)
    else:
        b.node("Cast", [x], x.shape, to, value, to=helper.np_dtype_to_tensor_dtype(to))
    return True


def shape_of(b: Builder, x: Tensor) -> Tensor:
    """Shape(x), sometimes with start/end (opset 15), or Shape then Slice/Gather pieces re-concatenated."""
    dims = np.array(x.shape, np.int64)
    if b.opset >= 15 and b.coin(0.3) and len(dims) > 1:
        start = b.int(-len(dims), 0)
        return b.node("Shape", [x], [len(dims[start:])], I64, dims[start:], keep=False, start=start) if start else \
            b.node("Shape", [x], [len(dims)], I64, dims, keep=False)
    return b.node("Shape", [x], [len(dims)], I64, dims, keep=False)


def reshape(b: Builder):
    x = b.choose(SMALL)
    rank, total = len(x.shape), int(np.prod(x.shape))
    kind = b.pick(["flatten_dynamic", "const", "zero", "split_dim"])
    if kind == "flatten_dynamic" and rank >= 1:
        keep = b.int(0, rank - 1)
        dims = shape_of(b, x)
        if dims.value.shape[0] != rank:
            dims = b.node("Shape", [x], [rank], I64, np.array(x.shape), keep=False)
        if keep:
            head = b.node("Slice", [dims, b.ints([0]), b.ints([keep])], [keep], I64, dims.value[:keep], keep=False)
            target = b.node("Concat", [head, b.ints([-1])], [keep + 1], I64, None, keep=False, axis=0)
        else:
            target = b.ints([-1])
        shape = list(x.shape[:keep]) + [int(np.prod(x.shape[keep:]))]
    elif kind == "zero" and rank >= 2:
        shape = list(x.shape[:1]) + [int(np.prod(x.shape[1:]))]
        target = b.ints([0, -1])
    elif kind == "split_dim":
        axis = b.int(0, rank - 1) if rank else None
        if axis is None or x.shape[axis] % 2:
            return False
        shape = x.shape[:axis] + [2, x.shape[axis] // 2] + x.shape[axis + 1:]
        target = b.ints(shape)
    else:
        factors = [f for f in (1, 2, 3, 4, 6) if total % f == 0]
        f = b.pick(factors)
        shape = b.pick([[total], [f, total // f], [1, f, total // f], [total // f, 1, f, 1]])
        target = b.ints([-1 if i == 0 and b.coin(0.3) else d for i, d in enumerate(shape)])
    b.node("Reshape", [x, target], shape, x.dtype)
    return True


def expand(b: Builder):
    x = b.choose(lambda t: SMALL(t) and t.dtype != BOOL)
    if b.coin(0.5):  # expand a broadcastable constant to x's run-time shape
        small = b.const(b.values(_broadcast_partner(b, x), x.dtype))
        out = b.node("Expand", [small, shape_full(b, x)], x.shape, x.dtype)
        if b.coin():
            b.node(b.pick(["Add", "Mul"]), [x, out], x.shape, x.dtype)
        return True
    target = [d if d != 1 else b.pick([1, 2, 3]) for d in x.shape]
    prefix = [b.int(1, 2)] if b.coin(0.3) else []
    b.node("Expand", [x, b.ints(prefix + [1 if b.coin(0.2) and d == t else t for d, t in zip(x.shape, target)])],
           prefix + target, x.dtype)
    return True


def shape_full(b, x):
    return b.node("Shape", [x], [len(x.shape)], I64, np.array(x.shape, np.int64), keep=False)


def constant_of_shape(b: Builder):
    x = b.choose(SMALL)
    dtype = b.pick([F32, F32, I64, I32, x.dtype])
    fill = numpy_helper.from_array(np.array([b.pick([0, 1, 3])], dtype), "value")
    filled = b.node("ConstantOfShape", [shape_full(b, x)], x.shape, dtype,
                    **({"value": fill} if b.coin(0.8) or dtype != F32 else {}))
    if dtype == x.dtype and x.dtype != BOOL:
        b.node(b.pick(["Add", "Sub", "Mul"]), [x, filled], x.shape, x.dtype)
    return True


def tile(b: Builder):
    x = b.choose(lambda t: len(t.shape) >= 1 and int(np.prod(t.shape)) <= 128)
    if x is None:
        return False
    repeats = [b.pick([1, 1, 2, 3]) for _ in x.shape]
    if b.coin(0.4):  # one repeat from a dim of another tensor's shape
        src = b.choose(lambda t: len(t.shape) >= 1 and 1 <= max(t.shape) <= 4)
        if src is None:
            return False
        axis = int(np.argmax(src.shape))
        dim = b.node("Gather", [shape_full(b, src), b.ints([axis])], [1], I64, None, keep=False, axis=0)
        where = b.int(0, len(x.shape) - 1)
        pieces = [p for p in (b.ints(repeats[:where]) if where else None, dim,
                              b.ints(repeats[where + 1:]) if where + 1 < len(x.shape) else None) if p]
        repeats[where] = src.shape[axis]
        reps = b.node("Concat", pieces, [len(x.shape)], I64, None, keep=False, axis=0) if len(pieces) > 1 else dim
    else:
        reps = b.ints(repeats)
    b.node("Tile", [x, reps], [d * r for d, r in zip(x.shape, repeats)], x.dtype)
    return True


def transpose(b: Builder):
    x = b.choose(lambda t: len(t.shape) >= 2)
    if x is None:
        return False
    perm = [int(p) for p in b.rng.permutation(len(x.shape))]
    b.node("Transpose", [x], [x.shape[p] for p in perm], x.dtype, perm=perm)
    return True


def unsqueeze_squeeze(b: Builder):
    x = b.choose(lambda t: len(t.shape) <= 4)
    if b.coin() or 1 not in x.shape:
        axis = b.int(-len(x.shape) - 1, len(x.shape))
        shape = list(x.shape)
        shape.insert(axis if axis >= 0 else len(shape) + 1 + axis, 1)
        extra, attrs = b.axes_arg("Unsqueeze", [axis], 13)
        b.node("Unsqueeze", [x] + extra, shape, x.dtype, **attrs)
        return True
    ones = [i for i, d in enumerate(x.shape) if d == 1]
    axis = b.pick(ones)
    if b.coin(0.2):
        shape, extra, attrs = [d for d in x.shape if d != 1], [], {}
    else:
        shape = x.shape[:axis] + x.shape[axis + 1:]
        extra, attrs = b.axes_arg("Squeeze", [axis - len(x.shape) if b.coin() else axis], 13)
    b.node("Squeeze", [x] + extra, shape, x.dtype, **attrs)
    return True


def concat(b: Builder):
    x = b.choose(lambda t: len(t.shape) >= 1)
    if x is None:
        return False
    axis = b.int(0, len(x.shape) - 1)
    same = [t for t in b.pool if t.dtype == x.dtype and len(t.shape) == len(x.shape)
            and all(p == q for i, (p, q) in enumerate(zip(t.shape, x.shape)) if i != axis)]
    parts = [x] + [b.pick(same) for _ in range(b.int(0, 2))]
    if b.coin(0.4) or len(parts) == 1:
        shape = list(x.shape)
        shape[axis] = b.int(1, 3)
        parts.insert(b.int(0, len(parts)), b.const(b.values(shape, x.dtype), as_node=b.coin(0.2)))
    shape = list(x.shape)
    shape[axis] = sum(p.shape[axis] for p in parts)
    b.node("Concat", parts, shape, x.dtype, axis=axis - len(x.shape) if b.coin(0.3) else axis)
    return True


def split(b: Builder):
    x = b.choose(lambda t: len(t.shape) >= 1 and max(t.shape) >= 2)
    if x is None:
        return False
    axis = b.pick([i for i, d in enumerate(x.shape) if d >= 2])
    length = x.shape[axis]
    count = b.int(2, min(3, length))
    if b.coin() or (b.opset >= 18 and b.coin()):
        if length % count and b.opset < 18:
            count = 2 if length % 2 == 0 else length
            if count > 3:
                return False
        if b.opset >= 18:
            step = -(-length // count)
            sizes = [min(step, length - i * step) for i in range(count)]
            if sizes[-1] <= 0:
                return False
            extra, attrs = [], {"num_outputs": count}
        else:
            if length % count:
                return False
            sizes, extra, attrs = [length // count] * count, [], {}
    else:
        cuts = sorted(int(c) for c in b.rng.choice(np.arange(1, length), size=count - 1, replace=False))
        sizes = [q - p for p, q in zip([0] + cuts, cuts + [length])]
        extra, attrs = ([b.ints(sizes)], {}) if b.opset >= 13 else ([], {"split": sizes})
    shapes = [x.shape[:axis] + [s] + x.shape[axis + 1:] for s in sizes]
    outs = b.node("Split", [x] + extra, shapes, x.dtype, outputs=count, keep=False, axis=axis, **attrs)
    for out in outs:
        if b.coin(0.7):
            b.pool.append(out)     # the rest stay unused
    if b.coin(0.5) and len(outs) >= 2 and outs[0].shape == outs[1].shape and x.dtype != BOOL:
        b.node(b.pick(["Add", "Mul", "Max"]), [outs[1], outs[0]], outs[0].shape, x.dtype)
    return True


def slice_(b: Builder):
    x = b.choose(lambda t: len(t.shape) >= 1)
    if x is None:
        return False
    axes = sorted(int(a) for a in b.rng.choice(len(x.shape), size=b.int(1, len(x.shape)), replace=False))
    starts, ends, steps, shape = [], [], [], list(x.shape)
    for a in axes:
        n, step = x.shape[a], b.pick([1, 1, 1, 2, -1])
        start, end = b.int(-n, n - 1), b.int(-n - 1, n)
        if step == -1 and b.coin(0.3):
            start, end = -1, -(2**63)
        elif b.coin(0.2):
            end = 2**63 - 1 if step > 0 else -(2**63)
        chosen = range(n)[slice(start, end if abs(end) < 2**62 else None, step)]
        if len(chosen) == 0:
            return False
        shape[a] = len(chosen)
        starts.append(start), ends.append(end), steps.append(step)
    ins = [x, b.ints(starts), b.ints(ends)]
    if any(s != 1 for s in steps) or b.coin():
        ins += [b.ints([a - len(x.shape) if b.coin(0.3) else a for a in axes]), b.ints(steps)]
    elif axes != list(range(len(axes))) or b.coin():
        ins += [b.ints(axes)]
    if len(ins) == 3 and axes != list(range(len(axes))):
        return False
    b.node("Slice", ins, shape, x.dtype)
    return True


def slice_by_shape(b: Builder):
    """Slice x along an axis to another tensor's run-time length (ends from Shape + Gather)."""
    x = b.choose(lambda t: len(t.shape) >= 1)
    y = b.choose(lambda t: len(t.shape) >= 1 and t is not x)
    if x is None or y is None:
        return False
    axis, yaxis = b.int(0, len(x.shape) - 1), b.int(0, len(y.shape) - 1)
    end = b.node("Gather", [shape_full(b, y), b.ints([yaxis])], [1], I64, None, keep=False, axis=0)
    shape = list(x.shape)
    shape[axis] = min(x.shape[axis], y.shape[yaxis])
    b.node("Slice", [x, b.ints([0]), end, b.ints([axis])], shape, x.dtype)
    return True


def pad(b: Builder):
    x = b.choose(lambda t: len(t.shape) >= 1 and t.dtype != BOOL and SMALL(t))
    if x is None:
        return False
    mode = b.pick(["constant", "constant", "reflect", "edge"])
    rank = len(x.shape)
    pads = []
    for side in range(2):
        for d in x.shape:
            low = -(d - 1) if b.coin(0.15) else 0
            high = {"reflect": d - 1, "edge": 2, "constant": 2}[mode]
            pads.append(b.int(max(low, -1), min(high, 2)))
    begin, end = pads[:rank], pads[rank:]
    if mode == "reflect":
        if any(d + min(p, 0) + min(q, 0) < 1 or max(p, q) > d + min(p, 0) + min(q, 0) - 1
               for d, p, q in zip(x.shape, begin, end)):
            return False
    shape = [d + p + q for d, p, q in zip(x.shape, begin, end)]
    if min(shape) < 1:
        return False
    ins = [x, b.ints(pads)]
    if mode == "constant" and b.coin():
        ins.append(b.const(np.array(b.pick([0, 1, -2]), x.dtype)))
    b.node("Pad", ins, shape, x.dtype, mode=mode)
    return True


def reduce(b: Builder):
    x = b.choose(lambda t: len(t.shape) >= 1 and t.dtype in (F32, F16, I32, I64))
    if x is None or (x.dtype.kind == "i" and len(x.shape) == 3):
        # OpenVINO 2026.4's CPU plugin: an integer Reduce* of a rank-3 tensor feeding an integer elementwise
        # layer computes the first row only (zeros elsewhere), with poolir's IR and with its own frontend's.
        return False
    op = b.pick(["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"] + (["ReduceProd"] if x.dtype.kind == "f" else []))
    rank = len(x.shape)
    axes = sorted(int(a) for a in b.rng.choice(rank, size=b.int(1, rank), replace=False))
    keep = b.int(0, 1)
    shape = [1 if i in axes else d for i, d in enumerate(x.shape) if keep or i not in axes]
    extra, attrs = b.axes_arg(op, [a - rank if b.coin(0.3) else a for a in axes], 13 if op == "ReduceSum" else 18)
    b.node(op, [x] + extra, shape, x.dtype, keepdims=keep, **attrs)
    return True


def softmax(b: Builder):
    x = b.choose(lambda t: FLOAT(t) and len(t.shape) >= 1)
    if x is None:
        return False
    axis = b.int(-len(x.shape), len(x.shape) - 1)
    b.node(b.pick(["Softmax", "LogSoftmax"]), [x], x.shape, x.dtype, axis=axis)
    return True


def matmul(b: Builder):
    x = b.choose(lambda t: FLOAT(t) and len(t.shape) >= 1)
    if x is None:
        return False
    n = b.int(1, 4)
    k = x.shape[-1]
    w = b.const(b.values([k, n] if len(x.shape) > 1 or b.coin() else [k], x.dtype))
    shape = x.shape[:-1] + ([n] if len(w.shape) == 2 else [])
    if len(x.shape) == 2 and b.coin(0.4):
        bias = b.const(b.values(b.pick([[n], [1, n], [x.shape[0], n]]), x.dtype))
        b.node("Gemm", [x, w, bias], shape, x.dtype, alpha=0.5)
    else:
        b.node("MatMul", [x, w], shape, x.dtype)
    return True


def as_image(b: Builder, x: Tensor) -> Tensor:
    """x as a 4-D [1, C, H, W] tensor: itself if it already is 3/4-D, else a Reshape."""
    if len(x.shape) == 4:
        return x
    if len(x.shape) == 3 and b.coin():
        extra, attrs = b.axes_arg("Unsqueeze", [0], 13)
        return b.node("Unsqueeze", [x] + extra, [1] + x.shape, x.dtype, keep=False, **attrs)
    total = int(np.prod(x.shape))
    c = b.pick([f for f in (1, 2, 3) if total % f == 0])
    rest = total // c
    h = b.pick([f for f in range(1, 9) if rest % f == 0])
    shape = [1, c, h, rest // h]
    return b.node("Reshape", [x, b.ints([1, c, h, -1] if b.coin() else shape)], shape, x.dtype, keep=False)


def pool_conv(b: Builder):
    x = b.choose(lambda t: FLOAT(t) and 2 <= int(np.prod(t.shape)) <= 256)
    if x is None:
        return False
    x = as_image(b, x)
    _, c, h, w = x.shape
    op = b.pick(["MaxPool", "AveragePool", "Conv", "GlobalAveragePool", "GlobalMaxPool", "BatchNormalization"])
    if op.startswith("Global"):
        b.node(op, [x], [x.shape[0], c, 1, 1], x.dtype)
        return True
    if op == "BatchNormalization":
        scale, bias, mean = (b.const(b.values([c], x.dtype)) for _ in range(3))
        var = b.const((np.abs(b.values([c], x.dtype)) + 0.5).astype(x.dtype))
        b.node(op, [x, scale, bias, mean, var], x.shape, x.dtype, epsilon=1e-3)
        return True
    kernel = [b.int(1, min(3, h)), b.int(1, min(3, w))]
    strides = [b.int(1, 2), b.int(1, 2)]
    pads = [b.int(0, k - 1) for k in kernel * 2]
    out = [(d + pads[i] + pads[i + 2] - kernel[i]) // strides[i] + 1 for i, d in enumerate((h, w))]
    attrs = dict(kernel_shape=kernel, strides=strides, pads=pads)
    if op == "Conv":
        m = b.int(1, 3)
        weights = b.const(b.values([m, c] + kernel, x.dtype))
        ins = [x, weights] + ([b.const(b.values([m], x.dtype))] if b.coin() else [])
        b.node("Conv", ins, [x.shape[0], m] + out, x.dtype, **attrs)
        return True
    if op == "AveragePool":
        attrs["count_include_pad"] = b.int(0, 1)
    b.node(op, [x], x.shape[:2] + out, x.dtype, **attrs)
    return True


def flatten(b: Builder):
    x = b.choose(lambda t: len(t.shape) >= 1)
    axis = b.int(0, len(x.shape))
    b.node("Flatten", [x], [int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:]))], x.dtype,
           axis=axis - len(x.shape) if b.coin(0.3) and axis else axis)
    return True


def gather(b: Builder):
    x = b.choose(lambda t: len(t.shape) >= 1)
    if x is None:
        return False
    axis = b.int(0, len(x.shape) - 1)
    n = x.shape[axis]
    indices = b.rng.integers(-n, n, size=b.pick([[], [2], [1], [2, 2]]))
    b.node("Gather", [x, b.ints(indices)], x.shape[:axis] + list(indices.shape) + x.shape[axis + 1:], x.dtype,
           axis=axis)
    return True


def shape_as_data(b: Builder):
    """Shape values as data: Cast(Shape(x)) into float arithmetic with x, or ReduceProd of the shape."""
    x = b.choose(lambda t: len(t.shape) >= 1 and FLOAT(t))
    if x is None:
        return False
    dims = shape_full(b, x)
    last = b.node("Gather", [dims, b.ints(-1 if b.coin() else [-1])], [], I64, None, keep=False, axis=0)
    scale = b.node("Cast", [last], [], x.dtype, to=helper.np_dtype_to_tensor_dtype(x.dtype), keep=False)
    b.node("Div" if b.coin() else "Mul", [x, scale], x.shape, x.dtype)
    return True


def clip(b: Builder):
    x = b.choose(FLOAT)
    if x is None:
        return False
    low = b.const(np.array(-1.0, x.dtype)) if b.coin(0.8) else None
    high = b.const(np.array(b.pick([0.5, 2.0, 6.0]), x.dtype)) if b.coin(0.8) else None
    b.node("Clip", [x, low, high] if high else ([x, low] if low else [x]), x.shape, x.dtype)
    return True


def _unsqueeze0(b: Builder, scalar: Tensor) -> Tensor:
    extra, attrs = b.axes_arg("Unsqueeze", [0], 13)
    return b.node("Unsqueeze", [scalar] + extra, [1], scalar.dtype, keep=False, **attrs)


def shape_arithmetic(b: Builder):
    """The PyTorch exporters' reshape: each dim a Gather with a 0-d index, two of them multiplied (or a dim
    divided by a factor, in i64 or through i32), Unsqueezed and Concatenated into the Reshape's target."""
    x = b.choose(lambda t: len(t.shape) >= 2 and SMALL(t))
    if x is None:
        return False
    dims, rank = shape_full(b, x), len(x.shape)
    i = b.int(0, rank - 2)

    def dim(k):
        return b.node("Gather", [dims, b.ints(k if b.coin() else k - rank)], [], I64, keep=False, axis=0)
    pieces, shape = [], []
    for k in range(rank):
        if k == i + 1:
            continue
        if k == i:
            piece = b.node("Mul", [dim(i), dim(i + 1)], [], I64, keep=False)
            shape.append(x.shape[i] * x.shape[i + 1])
            if b.coin(0.3):
                narrow = b.node("Cast", [piece], [], I32, keep=False, to=TensorProto.INT32)
                narrow = b.node("Add", [narrow, b.const(np.array(0, np.int32))], [], I32, keep=False)
                piece = b.node("Cast", [narrow], [], I64, keep=False, to=TensorProto.INT64)
        else:
            piece = dim(k) if b.coin(0.7) else b.const(np.array(x.shape[k], np.int64))
            shape.append(x.shape[k])
        pieces.append(_unsqueeze0(b, piece))
    if i < rank - 2 and b.coin(0.3) and shape[-1] % 2 == 0:   # split the last dim: d / 2 and 2
        half = b.node("Div", [b.node("Gather", [dims, b.ints(-1)], [], I64, keep=False, axis=0),
                              b.const(np.array(2, np.int64))], [], I64, keep=False)
        pieces[-1] = _unsqueeze0(b, half)
        pieces.append(b.ints([2]))
        shape[-1:] = [shape[-1] // 2, 2]
    target = b.node("Concat", pieces, [len(pieces)], I64, keep=False, axis=0)
    b.node("Reshape", [x, target], shape, x.dtype)
    return True


def reshape_like(b: Builder):
    """Reshape(x, Shape(y)) for a y with as many elements."""
    x = b.choose(SMALL)
    same = [t for t in b.pool if t is not x and int(np.prod(t.shape)) == int(np.prod(x.shape))]
    if not same:
        return False
    y = b.pick(same)
    b.node("Reshape", [x, shape_full(b, y)], y.shape, x.dtype)
    return True


def expand_where(b: Builder):
    """Expand(c, Where(Equal(Shape(x), 1), ones, Shape(x))): the exporters' expand_as."""
    x = b.choose(lambda t: len(t.shape) >= 1 and SMALL(t))
    if x is None:
        return False
    dims = shape_full(b, x)
    rank = b.node("Shape", [dims], [1], I64, keep=False)
    ones = b.node("ConstantOfShape", [rank], [len(x.shape)], I64, keep=False,
                  value=numpy_helper.from_array(np.array([1], np.int64), "value"))
    minus = b.node("Mul", [ones, b.const(np.array(-1, np.int64))], [len(x.shape)], I64, keep=False)
    equal = b.node("Equal", [dims, minus], [len(x.shape)], BOOL, keep=False)
    target = b.node("Where", [equal, ones, dims], [len(x.shape)], I64, keep=False)
    dtype = b.pick([F32, x.dtype])
    small = b.const(b.values(_broadcast_partner(b, x), dtype))
    b.node("Expand", [small, target], x.shape, dtype)
    return True


def gather_computed(b: Builder):
    """Gather at an index computed from a dim: the last element along an axis (Shape - 1)."""
    x = b.choose(lambda t: len(t.shape) >= 1)
    if x is None:
        return False
    axis = b.int(0, len(x.shape) - 1)
    n = b.node("Gather", [shape_full(b, x), b.ints([axis])], [1], I64, keep=False, axis=0)
    last = b.node("Sub", [n, b.const(np.array([b.int(1, x.shape[axis])], np.int64))], [1], I64, keep=False)
    if b.coin():
        last = b.node("Squeeze", [last] + b.axes_arg("Squeeze", [0], 13)[0], [], I64, keep=False,
                      **b.axes_arg("Squeeze", [0], 13)[1]) if b.opset < 13 else \
            b.node("Squeeze", [last, b.ints([0])], [], I64, keep=False)
        shape = x.shape[:axis] + x.shape[axis + 1:]
    else:
        shape = list(x.shape)
        shape[axis] = 1
    b.node("Gather", [x, last], shape, x.dtype, axis=axis)
    return True


def more_elementwise(b: Builder):
    x = b.choose(FLOAT)
    if x is None:
        return False
    op = b.pick(["Sum", "Mean", "Max3", "Sqrt", "Reciprocal", "Pow", "PRelu", "HardSigmoid", "Dropout", "Sign"])
    if op in ("Sum", "Mean", "Max3"):
        others = [b.const(b.values(_broadcast_partner(b, x), x.dtype)) for _ in range(b.int(1, 2))]
        b.node("Max" if op == "Max3" else op, [x] + others, x.shape, x.dtype)
    elif op in ("Sqrt", "Reciprocal"):
        positive = b.node("Add", [b.node("Abs", [x], x.shape, x.dtype, keep=False),
                                  b.const(np.array(0.5, x.dtype))], x.shape, x.dtype, keep=False)
        b.node(op, [positive], x.shape, x.dtype)
    elif op == "Pow":
        exponent = b.const(np.array(b.pick([2.0, 3.0, 0.5]), x.dtype if b.coin() else F32))
        base = b.node("Abs", [x], x.shape, x.dtype, keep=False) if float(exponent.value) == 0.5 else x
        b.node("Pow", [base, exponent], x.shape, x.dtype)
    elif op == "PRelu":
        slope = b.const(b.values(_broadcast_partner(b, x), x.dtype))
        b.node("PRelu", [x, slope], x.shape, x.dtype)
    elif op == "HardSigmoid":
        b.node(op, [x], x.shape, x.dtype, alpha=0.25, beta=0.4)
    else:
        b.node(op, [x], x.shape, x.dtype)
    return True


def normalization(b: Builder):
    x = b.choose(lambda t: t.dtype == F32 and len(t.shape) >= 2)
    if x is None:
        return False
    if b.opset >= 17 and b.coin():
        axis = b.int(-len(x.shape) + 1, len(x.shape) - 1)
        norm = x.shape[axis:]
        scale = b.const(b.values(norm, x.dtype))
        ins = [x, scale] + ([b.const(b.values(norm, x.dtype))] if b.coin() else [])
        b.node("LayerNormalization", ins, x.shape, x.dtype, axis=axis, epsilon=1e-3)
        return True
    x = as_image(b, x)
    # size 5 on a dynamic channel dim: OpenVINO 2026.4's CPU plugin returns an empty tensor or fails
    # ("Primitive descriptor was not found"), with poolir's IR and its own frontend's; not drawn.
    b.node("LRN", [x], x.shape, x.dtype, size=b.pick([1, 3]), alpha=1e-2, beta=0.75, bias=1.0)
    return True


def integer_mod(b: Builder):
    x = b.choose(lambda t: t.dtype in (I32, I64))
    if x is None:
        return False
    divisor = b.const(np.array(b.pick([2, 3, -3, 5]), x.dtype).reshape([1] * b.int(0, len(x.shape))))
    b.node("Mod", [x, divisor], x.shape, x.dtype, fmod=b.int(0, 1))
    return True


def windows(b: Builder):
    """Pooling and convolution with the window attributes that compose badly: dilations, ceil_mode, auto_pad,
    groups, MaxPool's Indices (used or not), LpPool."""
    x = b.choose(lambda t: t.dtype == F32 and 2 <= int(np.prod(t.shape)) <= 256)
    if x is None:
        return False
    x = as_image(b, x)
    _, c, h, w = x.shape
    op = b.pick(["MaxPool", "MaxPool", "AveragePool", "Conv", "LpPool"])
    kernel = [b.int(1, min(3, h)), b.int(1, min(3, w))]
    dilations = [b.int(1, 2) if (k - 1) * 2 + 1 <= d else 1 for k, d in zip(kernel, (h, w))]
    if op in ("AveragePool", "LpPool") and b.opset < 19 or op == "LpPool" and b.opset < 18:
        dilations = [1, 1]
    strides = [b.int(1, 2), b.int(1, 2)]
    auto = b.pick(["NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"])
    reach = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    attrs = dict(kernel_shape=kernel, strides=strides, auto_pad=auto)
    if auto.startswith("SAME"):
        dilations = [1, 1]
        reach = kernel
        # onnxruntime refuses SAME with a stride longer than the kernel (a negative pad; README)
        strides = [min(s, k) for s, k in zip(strides, kernel)]
        attrs["strides"] = strides
    if dilations != [1, 1]:
        attrs["dilations"] = dilations
    ceil = b.int(0, 1) if op != "Conv" and auto == "NOTSET" and (op != "LpPool" or b.opset >= 18) else 0
    pads = [0, 0, 0, 0]
    if auto == "NOTSET":
        pads = [b.int(0, r - 1) for r in reach * 2]
        attrs["pads"] = pads
    if ceil:
        attrs["ceil_mode"] = 1
    out = []
    for i, d in enumerate((h, w)):
        if auto.startswith("SAME"):
            out.append(-(-d // strides[i]))
        elif auto == "VALID":
            out.append((d - reach[i]) // strides[i] + 1)
        else:
            span = d + pads[i] + pads[i + 2] - reach[i]
            n = (-(-span // strides[i]) if ceil else span // strides[i]) + 1
            if ceil and (n - 1) * strides[i] >= d + pads[i]:
                n -= 1
            out.append(n)
    if min(out) < 1 or any(d < r for d, r in zip((h, w), reach)):
        return False
    if op == "Conv":
        groups = b.pick([g for g in (1, 2, 3) if c % g == 0])
        m = groups * b.int(1, 2)
        ins = [x, b.const(b.values([m, c // groups] + kernel, x.dtype))]
        if b.coin():
            ins.append(b.const(b.values([m], x.dtype)))
        b.node("Conv", ins, [x.shape[0], m] + out, x.dtype, group=groups, **attrs)
        return True
    if op == "LpPool":
        b.node(op, [x], x.shape[:2] + out, x.dtype, p=b.pick([1, 2]), **attrs)
        return True
    if op == "AveragePool":
        attrs["count_include_pad"] = b.int(0, 1)
        b.node(op, [x], x.shape[:2] + out, x.dtype, **attrs)
        return True
    if b.coin(0.4) and dilations == [1, 1] and not ceil:
        y, indices = b.node(op, [x], [x.shape[:2] + out] * 2, x.dtype, outputs=2, keep=False, **attrs)
        b.pool.append(y)
        indices.dtype = I64
        if b.coin():
            b.pool.append(indices)
        return True
    b.node(op, [x], x.shape[:2] + out, x.dtype, **attrs)
    return True


def constant_chain(b: Builder):
    """A subgraph of constants only (the converter folds it) meeting a run-time tensor."""
    x = b.choose(lambda t: t.dtype in (F32, I64, I32) and SMALL(t))
    if x is None:
        return False
    partner = _broadcast_partner(b, x)
    shape = b.ints(partner)
    filled = b.node("ConstantOfShape", [shape], partner, x.dtype, keep=False,
                    value=numpy_helper.from_array(np.array([b.pick([1, 2])], x.dtype), "value"))
    other = b.const(b.values(partner, x.dtype))
    mixed = b.node(b.pick(["Add", "Mul", "Sub"]), [filled, other], partner, x.dtype, keep=False)
    if b.coin():
        mixed = b.node("Identity", [mixed], partner, x.dtype, keep=False)
    if b.coin(0.3) and len(partner) >= 2:
        perm = [int(p) for p in b.rng.permutation(len(partner))]
        mixed = b.node("Transpose", [mixed], [partner[p] for p in perm], x.dtype, keep=False, perm=perm)
        back = [perm.index(i) for i in range(len(perm))]
        mixed = b.node("Transpose", [mixed], partner, x.dtype, keep=False, perm=back)
    b.node(b.pick(["Add", "Max", "Min"]) if b.opset >= 12 or x.dtype.kind == "f" else "Add", [x, mixed],
           x.shape, x.dtype)
    return True


def pad_computed(b: Builder):
    """Pad whose pads are computed from a dim at run time: [0.., d // 2, 0.., 1]."""
    x = b.choose(lambda t: len(t.shape) >= 1 and t.dtype != BOOL and SMALL(t))
    if x is None:
        return False
    rank, axis = len(x.shape), b.int(0, len(x.shape) - 1)
    d = b.node("Gather", [shape_full(b, x), b.ints([axis])], [1], I64, keep=False, axis=0)
    half = b.node("Div", [d, b.const(np.array([2], np.int64))], [1], I64, keep=False)
    begin = [b.ints([0] * axis)] if axis else []
    rest = [b.ints([0] * (rank - axis - 1 + rank - 1) + [1])]
    pads = b.node("Concat", begin + [half] + rest, [2 * rank], I64, keep=False, axis=0)
    shape = list(x.shape)
    shape[axis] += x.shape[axis] // 2
    shape[-1] += 1
    mode = b.pick(["constant", "edge"])
    b.node("Pad", [x, pads], shape, x.dtype, mode=mode)
    return True


def slice_computed(b: Builder):
    """Slice from the middle of an axis: starts = d // 2 computed at run time, ends to the end."""
    x = b.choose(lambda t: len(t.shape) >= 1)
    if x is None:
        return False
    axis = b.int(0, len(x.shape) - 1)
    d = b.node("Gather", [shape_full(b, x), b.ints([axis])], [1], I64, keep=False, axis=0)
    start = b.node("Div", [d, b.const(np.array([2], np.int64))], [1], I64, keep=False)
    shape = list(x.shape)
    shape[axis] -= x.shape[axis] // 2
    b.node("Slice", [x, start, b.ints([2**63 - 1]), b.ints([axis])], shape, x.dtype)
    return True


def logic(b: Builder):
    x = b.choose(lambda t: t.dtype == BOOL)
    if x is None:
        y = b.choose(lambda t: STEADY(t) and t.dtype in (F32, I64, I32))
        if y is None:
            return False
        x = b.node("Greater", [y, b.const(np.array(0, y.dtype))], y.shape, BOOL, keep=False)
    op = b.pick(["And", "Or", "Xor", "Not", "Equal"])
    if op == "Not":
        b.node(op, [x], x.shape, BOOL)
    else:
        b.node(op, [x, b.const(b.values(_broadcast_partner(b, x), BOOL))], x.shape, BOOL)
    return True


def dropout(b: Builder):
    x = b.choose(FLOAT)
    if x is None:
        return False
    if b.coin() and b.opset >= 12:
        y, mask = b.node("Dropout", [x], [x.shape, x.shape], x.dtype, outputs=2, keep=False)
        mask.dtype = BOOL
        b.pool.append(y)
        if b.coin():
            b.pool.append(mask)
        return True
    b.node("Dropout", [x], x.shape, x.dtype)
    return True


def gather_nd(b: Builder):
    x = b.choose(lambda t: len(t.shape) >= 2)
    if x is None:
        return False
    depth = b.int(1, min(2, len(x.shape)))
    count = b.int(1, 3)
    indices = np.stack([b.rng.integers(-d, d, size=count) for d in x.shape[:depth]], axis=-1)
    b.node("GatherND", [x, b.ints(indices)], [count] + x.shape[depth:], x.dtype)
    return True


STEPS = [unary, unary, binary, binary, binary, compare_select, cast, reshape, reshape, expand, constant_of_shape,
         tile, transpose, unsqueeze_squeeze, concat, concat, split, slice_, slice_by_shape, pad, reduce, softmax,
         matmul, pool_conv, pool_conv, flatten, gather, shape_as_data, clip, shape_arithmetic, shape_arithmetic,
         reshape_like, expand_where, gather_computed, more_elementwise, more_elementwise, normalization, integer_mod,
         windows, windows, constant_chain, pad_computed, slice_computed, logic, dropout, gather_nd]


def build(seed: int):
    rng = np.random.default_rng(seed)
    opset = int(rng.choice([11, 12, 13, 13, 14, 15, 16, 17, 18, 18, 19, 20, 21, 22]))
    b = Builder(rng, opset)
    dtype = b.pick([F32] * 6 + [F16, I64, I32])
    rank = b.int(1, 4)
    shape = [b.int(1, 5) for _ in range(rank)]
    dynamic = {i for i in range(rank) if b.coin(0.2)} if b.coin(0.35) else set()
    first = b.feed(shape, dtype, dynamic)
    if b.coin(0.3):  # a second input of a broadcastable or unrelated shape
        b.feed(_broadcast_partner(b, first) if b.coin() else [b.int(1, 4) for _ in range(b.int(1, 3))],
               b.pick([dtype, F32, BOOL]))
    target = b.int(3, 10)
    attempts = 0
    while len([n for n in b.nodes if n.op_type != "Constant"]) < target and attempts < 60:
        attempts += 1
        step = b.pick(STEPS)
        mark = (len(b.nodes), len(b.initializers), len(b.pool), b.count)
        try:
            done = step(b)
        except (ValueError, IndexError, ZeroDivisionError, AttributeError, TypeError):
            done = False
        if not done:   # roll back a half-built step
            del b.nodes[mark[0]:], b.initializers[mark[1]:], b.pool[mark[2]:]
    produced = [t for t in b.pool if t.name not in b.feeds]
    if not produced:
        return None
    outputs = {produced[-1].name}
    for t in produced[:-1]:
        if b.coin(0.25):
            outputs.add(t.name)   # an output that also feeds later nodes, or a dead end
    graph = helper.make_graph(b.nodes, "fuzz", b.inputs, [onnx.ValueInfoProto(name=n) for n in sorted(outputs)],
                              b.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model, b.feeds, opset


def _typed_outputs(model: onnx.ModelProto) -> onnx.ModelProto:
    inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    known = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    for output in model.graph.output:
        if output.name in known and known[output.name].type.HasField("tensor_type"):
            output.CopyFrom(known[output.name])
    onnx.checker.check_model(model, full_check=True)
    return model, any(v.type.tensor_type.elem_type == TensorProto.FLOAT16
                      for v in list(inferred.graph.value_info) + list(inferred.graph.input)
                      + list(inferred.graph.output))


def _well_defined(model, feeds) -> bool:
    """Every intermediate finite, and every float Cast to an integer type in range (else undefined)."""
    import onnxruntime

    from tests.peers import onnxruntime_run

    onnxruntime.set_default_logger_severity(4)  # a refused model is expected here, not news
    probe = onnx.ModelProto.FromString(model.SerializeToString())
    names = {o.name for o in probe.graph.output}
    for node in probe.graph.node:
        for out in node.output:
            if out and out not in names:
                probe.graph.output.append(onnx.ValueInfoProto(name=out))
                names.add(out)
    values = onnxruntime_run(probe, feeds)
    for node in probe.graph.node:
        if node.op_type in ("Cast", "CastLike") and node.input[0] in values:
            source = np.asarray(values[node.input[0]])
            target = np.asarray(values[node.output[0]])
            if source.dtype.kind == "f" and target.dtype.kind in "iu" and source.size and (
                    not np.isfinite(source).all() or np.abs(source.astype(np.float64)).max() >= 2**31 - 128):
                return False
            if source.dtype.kind == "f" and target.dtype == F16 and np.abs(source).max(initial=0) > 60000:
                return False
    for value in values.values():
        value = np.asarray(value)
        if value.dtype.kind == "f" and not np.isfinite(value).all():
            return False
        if value.dtype == F16 and np.abs(value).max(initial=0) > 1000:   # f16 rounding chains blow up
            return False
    return True


def draw(seed: int) -> Graph | None:
    built = build(seed)
    if built is None:
        return None
    model, feeds, opset = built
    try:
        model, half = _typed_outputs(model)
        if not _well_defined(model, feeds):
            return None
    except Exception:  # noqa: BLE001 - invalid by the checker, inference or onnxruntime: not a valid model
        return None
    return Graph(seed, opset, model, feeds, sorted({n.op_type for n in model.graph.node}), half)


# -- comparing

def difference(got, expected, scale_floor: float = 1.0, slack: float = 1.0, half: bool = False) -> str | None:
    got, expected = np.asarray(got), np.asarray(expected)
    if got.shape != expected.shape:
        return f"shape {list(got.shape)} != {list(expected.shape)}"
    if got.dtype != expected.dtype:
        return f"dtype {got.dtype} != {expected.dtype}"
    if expected.dtype.kind != "f":
        if np.array_equal(got, expected):
            return None
        bad = np.argwhere(got != expected)[0]
        return f"at {list(bad)}: {got[tuple(bad)]} != {expected[tuple(bad)]}"
    tolerance = TOLERANCE[F16 if half else expected.dtype] * slack
    scale = max(scale_floor, float(np.abs(expected.astype(np.float64)).max(initial=0)))
    error = np.abs(got.astype(np.float64) - expected)
    if (error <= tolerance * scale + tolerance * np.abs(expected.astype(np.float64))).all():
        return None
    bad = np.unravel_index(int(np.argmax(error)), error.shape)
    return f"largest difference {error.max():.3g} at {list(bad)} (scale {scale:.3g}): {got[bad]} != {expected[bad]}"


@dataclass
class Outcome:
    findings: list = field(default_factory=list)   # (path, message)
    refused: str | None = None                       # the converter's refusal, if any
    back_refused: str | None = None
    paths: int = 0


def compare(graph: Graph, tmp) -> Outcome:
    from poolir import ir, runtime
    from poolir.converter.ir_to_onnx import ir_to_onnx
    from poolir.converter.onnx_to_ir import onnx_to_ir
    from poolir.ir.errors import PoolirError
    from tests.peers import onnxruntime_run, openvino_run_xml

    outcome = Outcome()
    model, feeds = graph.model, graph.feeds
    expected = onnxruntime_run(model, feeds)
    # f16 chains: onnxruntime rounds each node to f16, so do poolir and OpenVINO; allow a few f16 ulps per node.
    slack = 4.0 if any(v.dtype == F16 for v in expected.values()) else 1.0

    def check(path, got, reference, slack=slack):
        outcome.paths += 1
        for name, value in reference.items():
            if name not in got:
                outcome.findings.append((path, f"{name}: missing"))
            elif (problem := difference(got[name], value, slack=slack, half=graph.half)):
                outcome.findings.append((path, f"{name}: {problem}"))

    try:
        check("poolir(onnx) vs onnxruntime", runtime.run(model, feeds), expected)
    except PoolirError as error:
        outcome.findings.append(("poolir(onnx)", f"refused: {error}"))
    except Exception as error:  # noqa: BLE001
        outcome.findings.append(("poolir(onnx)", f"crashed: {type(error).__name__}: {error}"))
    try:
        converted = onnx_to_ir(model)
    except PoolirError as error:
        outcome.refused = str(error)
        return outcome
    except Exception as error:  # noqa: BLE001
        outcome.findings.append(("onnx->ir", f"crashed: {type(error).__name__}: {error}"))
        return outcome
    xml = tmp / "m.xml"
    ir.write_model(converted, xml)
    try:
        openvino = openvino_run_xml(xml, feeds, list(expected))
    except Exception as error:  # noqa: BLE001
        outcome.findings.append(("openvino(onnx->ir)", f"failed: {type(error).__name__}: {str(error)[:300]}"))
        openvino = None
    if openvino is not None:
        check("openvino(onnx->ir) vs onnxruntime", openvino, expected, slack * 4)
    try:
        mine = runtime.run(ir.read_model(xml), feeds)
        check("poolir(onnx->ir) vs openvino", mine, openvino if openvino is not None else expected, slack * 4)
    except Exception as error:  # noqa: BLE001
        outcome.findings.append(("poolir(onnx->ir)", f"failed: {type(error).__name__}: {error}"))
    try:
        back = ir_to_onnx(ir.read_model(xml), opset=max(graph.opset, 11))
    except PoolirError as error:
        outcome.back_refused = str(error)
        return outcome
    except Exception as error:  # noqa: BLE001
        outcome.findings.append(("ir->onnx", f"crashed: {type(error).__name__}: {error}"))
        return outcome
    try:
        check("onnxruntime(onnx->ir->onnx) vs onnxruntime", onnxruntime_run(back, feeds), expected, slack * 4)
    except Exception as error:  # noqa: BLE001
        outcome.findings.append(("onnxruntime(onnx->ir->onnx)", f"failed: {type(error).__name__}: {str(error)[:300]}"))
    return outcome


def main(argv: list[str]) -> int:
    import collections
    import re
    import tempfile
    from pathlib import Path

    first = int(argv[0]) if argv else 0
    count = int(argv[1]) if len(argv) > 1 else 200
    trace = "--trace" in argv
    stats, refusals = collections.Counter(), collections.Counter()
    with tempfile.TemporaryDirectory() as folder:
        for seed in range(first, first + count):
            if trace:
                print(f"seed {seed}", file=sys.stderr, flush=True)   # the last one names an engine's crash
            graph = draw(seed)
            if graph is None:
                stats["invalid"] += 1
                continue
            stats["valid"] += 1
            outcome = compare(graph, Path(folder))
            stats["paths"] += outcome.paths
            if outcome.refused:
                stats["refused"] += 1
                print(f"seed {seed} opset {graph.opset}: onnx->ir refused: {outcome.refused}", flush=True)
            if outcome.back_refused:
                stats["back_refused"] += 1
                refusals["ir->onnx: " + re.sub(r"^.*?\((id \d+, )?", "(", outcome.back_refused)[:100]] += 1
            for path, message in outcome.findings:
                stats["findings"] += 1
                print(f"seed {seed} opset {graph.opset} {graph.ops}: {path}: {message}", flush=True)
    print(dict(stats))
    for text, n in refusals.most_common(30):
        print(f"  {n:4d} {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
