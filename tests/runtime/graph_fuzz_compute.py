"""graph_fuzz's steps that compute: elementwise ops and broadcasting, comparisons and Where, Casts, reductions,
Softmax, MatMul, pooling and convolution windows after reshapes, Pad by constant and computed pads, normalisations,
logic, Dropout. Each step adds one small subgraph to the Builder and returns whether it did."""

from __future__ import annotations

import numpy as np
from onnx import helper

from tests.runtime.graph_fuzz_builder import (BOOL, F16, F32, FLOAT, I32, I64, SMALL, STEADY, Builder, Tensor,
                                              broadcast_partner)
from tests.runtime.graph_fuzz_shapes import dim_of


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
        values = b.values(broadcast_partner(b, x), x.dtype)
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
        other = b.const(b.values(broadcast_partner(b, x), x.dtype))
        b.node("Where", [mask, x, other] if b.coin() else [mask, other, x], x.shape, x.dtype)
    elif use == "Not":
        b.node("Not", [mask], x.shape, BOOL)
    elif use == "Xor":
        b.node("Xor", [mask, b.const(b.values(broadcast_partner(b, x), BOOL))], x.shape, BOOL)
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


def clip(b: Builder):
    x = b.choose(FLOAT)
    if x is None:
        return False
    low = b.const(np.array(-1.0, x.dtype)) if b.coin(0.8) else None
    high = b.const(np.array(b.pick([0.5, 2.0, 6.0]), x.dtype)) if b.coin(0.8) else None
    b.node("Clip", [x, low, high] if high else ([x, low] if low else [x]), x.shape, x.dtype)
    return True


def more_elementwise(b: Builder):
    x = b.choose(FLOAT)
    if x is None:
        return False
    op = b.pick(["Sum", "Mean", "Max3", "Sqrt", "Reciprocal", "Pow", "PRelu", "HardSigmoid", "Dropout", "Sign"])
    if op in ("Sum", "Mean", "Max3"):
        others = [b.const(b.values(broadcast_partner(b, x), x.dtype)) for _ in range(b.int(1, 2))]
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
        slope = b.const(b.values(broadcast_partner(b, x), x.dtype))
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
        b.node(op, [x, b.const(b.values(broadcast_partner(b, x), BOOL))], x.shape, BOOL)
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


def pad_computed(b: Builder):
    """Pad whose pads are computed from a dim at run time: [0.., d // 2, 0.., 1]."""
    x = b.choose(lambda t: len(t.shape) >= 1 and t.dtype != BOOL and SMALL(t))
    if x is None:
        return False
    rank, axis = len(x.shape), b.int(0, len(x.shape) - 1)
    d = dim_of(b, x, axis)
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
