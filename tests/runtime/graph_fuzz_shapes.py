"""graph_fuzz's steps that move data and compute with shapes: Shape/Gather/Slice/Concat/Unsqueeze values into
Reshape/Expand/Tile/Slice, ConstantOfShape, Transpose, Split/Concat fan-out and fan-in, constant chains.
Each step adds one small subgraph to the Builder and returns whether it did."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from tests.runtime.graph_fuzz_builder import BOOL, F32, FLOAT, I32, I64, SMALL, Builder, Tensor, broadcast_partner


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
        small = b.const(b.values(broadcast_partner(b, x), x.dtype))
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


def dim_of(b, x, axis: int):
    """x's dim on `axis` as a one-element int64 tensor computed at run time (Shape, then Gather)."""
    return b.node("Gather", [shape_full(b, x), b.ints([axis])], [1], I64, keep=False, axis=0)


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
    small = b.const(b.values(broadcast_partner(b, x), dtype))
    b.node("Expand", [small, target], x.shape, dtype)
    return True


def gather_computed(b: Builder):
    """Gather at an index computed from a dim: the last element along an axis (Shape - 1)."""
    x = b.choose(lambda t: len(t.shape) >= 1)
    if x is None:
        return False
    axis = b.int(0, len(x.shape) - 1)
    n = dim_of(b, x, axis)
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


def constant_chain(b: Builder):
    """A subgraph of constants only (the converter folds it) meeting a run-time tensor."""
    x = b.choose(lambda t: t.dtype in (F32, I64, I32) and SMALL(t))
    if x is None:
        return False
    partner = broadcast_partner(b, x)
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


def slice_computed(b: Builder):
    """Slice from the middle of an axis: starts = d // 2 computed at run time, ends to the end."""
    x = b.choose(lambda t: len(t.shape) >= 1)
    if x is None:
        return False
    axis = b.int(0, len(x.shape) - 1)
    d = dim_of(b, x, axis)
    start = b.node("Div", [d, b.const(np.array([2], np.int64))], [1], I64, keep=False)
    shape = list(x.shape)
    shape[axis] -= x.shape[axis] // 2
    b.node("Slice", [x, start, b.ints([2**63 - 1]), b.ints([axis])], shape, x.dtype)
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
