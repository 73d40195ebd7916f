"""The second half of ir_api_cases' generators: data movement, indexing, reductions, pooling, Pad, Broadcast,
Convert and Const of every element type, and small chains of layers."""

from __future__ import annotations

import numpy as np
import openvino.opset1 as o1
import openvino.opset3 as o3
import openvino.opset4 as o4
import openvino.opset5 as o5
import openvino.opset7 as o7
import openvino.opset8 as o8
import openvino.opset12 as o12
import openvino.opset14 as o14
import openvino.opset15 as o15
import openvino.opset16 as o16

from tests.runtime.ir_api_cases import FLOATS, NP_TYPES, NUMBERS, Ctx, random_shape

ANY = NUMBERS + ("boolean",)


def _i64(c: Ctx, values, element_type: str | None = None):
    return c.const(np.array(values, NP_TYPES[element_type or c.pick(("i64", "i32"))]))


def concat(c: Ctx):
    shape = random_shape(c, c.ints(1, 4))
    axis = c.ints(-len(shape), len(shape) - 1)
    element_type = c.pick(ANY)
    parts = []
    for _ in range(c.ints(1, 4)):
        part = list(shape)
        part[axis] = c.ints(0 if c.rng.random() < 0.1 else 1, 4)
        parts.append(c.param(part, element_type) if c.rng.random() < 0.7 else c.const(c.values(part, element_type)))
    c.note(axis=axis, type=element_type)
    return [o1.concat(parts, axis)]


def split(c: Ctx):
    shape = random_shape(c, c.ints(1, 4), 1, 6)
    axis = c.ints(-len(shape), len(shape) - 1)
    x = c.param(shape, c.pick(ANY))
    if c.rng.random() < 0.5:
        parts = c.pick([d for d in range(1, shape[axis] + 1) if shape[axis] % d == 0])
        c.note(split=parts, axis=axis, shape=shape)
        return list(o1.split(x, _i64(c, axis), parts).outputs())
    lengths, left = [], shape[axis]
    while left > 0 and len(lengths) < 4:
        lengths.append(c.ints(0, left))
        left -= lengths[-1]
    lengths.append(left)
    if c.rng.random() < 0.5:
        lengths[c.ints(0, len(lengths) - 1)] = -1
    c.note(lengths=lengths, axis=axis, shape=shape)
    return list(o1.variadic_split(x, _i64(c, axis), _i64(c, lengths)).outputs())


def reshape(c: Ctx):
    shape = random_shape(c, c.ints(0, 4))
    total = int(np.prod(shape))
    target = []
    left = total
    for _ in range(c.ints(0, 3)):
        divisors = [d for d in range(1, left + 1) if left % d == 0]
        target.append(c.pick(divisors))
        left //= target[-1]
    target.append(left)
    special_zero = bool(c.ints(0, 1))
    if special_zero:
        target = [0 if i < len(shape) and d == shape[i] and c.rng.random() < 0.5 else d for i, d in enumerate(target)]
    if c.rng.random() < 0.5:
        spot = c.ints(0, len(target) - 1)
        if target[spot] != 0:  # -1 where no 0 copies a dim: the product stays the input's
            target[spot] = -1
    c.note(shape=shape, target=target, special_zero=special_zero)
    return [o1.reshape(c.param(shape, c.pick(ANY)), _i64(c, target), special_zero)]


def transpose(c: Ctx):
    shape = random_shape(c)
    order = list(c.rng.permutation(len(shape))) if c.rng.random() < 0.8 else []
    c.note(shape=shape, order=order)
    return [o1.transpose(c.param(shape, c.pick(ANY)), _i64(c, [int(v) for v in order]))]


def squeeze_unsqueeze(c: Ctx):
    shape = [d if c.rng.random() < 0.6 else 1 for d in random_shape(c, c.ints(1, 4))]
    kind = c.pick(("squeeze1", "squeeze15", "unsqueeze"))
    x = c.param(shape, c.pick(ANY))
    if kind == "unsqueeze":
        rank = len(shape) + c.ints(1, 2)
        axes = sorted(set(c.ints(-rank, rank - 1, rank - len(shape))), key=lambda a: a % rank)
        if c.dynamic:  # a repeated position on a dynamic dim: OpenVINO 2026.4 returns an empty tensor, then crashes
            axes = list({a % rank: a for a in axes}.values())
        c.note(kind=kind, shape=shape, axes=axes)
        return [o1.unsqueeze(x, _i64(c, axes))]
    ones = [i for i, d in enumerate(shape) if d == 1]
    axes = [a - len(shape) if c.rng.random() < 0.3 else a for a in ones if c.rng.random() < 0.7]
    if kind == "squeeze1" or c.rng.random() < 0.5:
        c.note(kind=kind, shape=shape, axes=axes)
        build = o1.squeeze if kind == "squeeze1" else o15.squeeze
        return [build(x, _i64(c, axes))] if axes or c.rng.random() < 0.5 else [build(x, _i64(c, []))]
    skip = bool(c.ints(0, 1))
    if skip and shape:
        axes.append(c.ints(0, len(shape) - 1))
    c.note(kind=kind, shape=shape, axes=axes, allow_axis_skip=skip)
    return [o15.squeeze(x, _i64(c, sorted(set(axes))) if axes else None, skip)]


def slice8(c: Ctx):
    shape = random_shape(c, c.ints(1, 4), 1, 7)
    axes = list(c.rng.permutation(len(shape))[:c.ints(1, len(shape))])
    start, stop, step = [], [], []
    for axis in axes:
        dim = shape[axis]
        start.append(c.pick((c.ints(-dim - 2, dim + 2), 0, -1, 2**31)))
        stop.append(c.pick((c.ints(-dim - 2, dim + 2), 2**62, -2**62, -1)))
        step.append(c.pick((1, 1, 2, 3, -1, -2)))
        if c.dynamic and step[-1] < 0 and stop[-1] < -dim:
            # backwards past the start on a dynamic dim: OpenVINO 2026.4 crashes (SIGSEGV)
            stop[-1] = -dim if c.rng.random() < 0.5 else -1
    use_axes = c.rng.random() < 0.7
    if not use_axes:
        start, stop, step = start[:len(shape)], stop[:len(shape)], step[:len(shape)]
        axes = list(range(len(start)))
    axes = [int(a) - len(shape) if c.rng.random() < 0.3 else int(a) for a in axes]
    c.note(shape=shape, start=start, stop=stop, step=step, axes=axes if use_axes else None)
    x = c.param(shape, c.pick(ANY))
    return [o8.slice(x, _i64(c, start, "i64"), _i64(c, stop, "i64"), _i64(c, step), _i64(c, axes) if use_axes
                     else None)]


def strided_slice(c: Ctx):
    shape = random_shape(c, c.ints(1, 4), 1, 6)
    n = c.ints(1, len(shape) + 2)
    begin = [c.ints(-7, 7) for _ in range(n)]
    end = [c.ints(-7, 7) for _ in range(n)]
    strides = [c.pick((1, 1, 2, -1, -2, 3)) for _ in range(n)]
    masks = {name: c.ints(0, 1, n) if c.rng.random() < 0.5 else [0] * n for name in ("begin", "end", "new_axis",
                                                                                   "shrink", "ellipsis")}
    if any(masks["new_axis"]) and any(masks["shrink"]):
        # OpenVINO 2026.4 returns garbage for the two together, or crashes (SIGABRT): README, "Layout"
        masks["shrink"] = [0] * n
    if sum(masks["ellipsis"]) > 1:  # at most one ellipsis
        first = masks["ellipsis"].index(1)
        masks["ellipsis"] = [int(i == first) for i in range(n)]
    for i in range(n):  # an ellipsis that is also a new axis or a shrink crashes OpenVINO 2026.4 (SIGABRT)
        if masks["ellipsis"][i]:
            masks["new_axis"][i] = masks["shrink"][i] = 0
    while n > 1 and n - sum(masks["new_axis"]) - sum(masks["ellipsis"]) > len(shape):
        # more specs than dims: OpenVINO 2026.4 accepts the layer and crashes running it (SIGSEGV)
        n -= 1
        begin, end, strides = begin[:n], end[:n], strides[:n]
        masks = {name: mask[:n] for name, mask in masks.items()}
    for i in range(n):
        if masks["shrink"][i] and not masks["new_axis"][i]:
            strides[i] = 1  # a shrunk axis takes one element at begin
        if c.dynamic and strides[i] < 0 and end[i] < -min(shape):
            end[i] = -1  # backwards past the start on a dynamic dim: OpenVINO 2026.4 crashes (SIGSEGV), as Slice
    c.note(shape=shape, begin=begin, end=end, strides=strides, **{k + "_mask": v for k, v in masks.items()})
    x = c.param(shape, c.pick(ANY))
    return [o1.strided_slice(x, _i64(c, begin), _i64(c, end), _i64(c, strides), masks["begin"], masks["end"],
                             masks["new_axis"], masks["shrink"], masks["ellipsis"])]


def gather(c: Ctx):
    version = c.pick((1, 7, 8))
    data_shape = random_shape(c, c.ints(1, 4))
    batch_dims = 0 if version == 1 else c.ints(0, len(data_shape) - 1)
    axis = c.ints(batch_dims, len(data_shape) - 1)
    index_shape = data_shape[:batch_dims] + random_shape(c, c.ints(0, 2))
    if version != 1 and batch_dims and c.rng.random() < 0.3:
        batch_dims -= len(index_shape) + (0 if c.rng.random() < 0.5 else 0)  # negative batch_dims
        batch_dims = max(batch_dims, -len(index_shape))
        if batch_dims + len(index_shape) > axis % len(data_shape):
            batch_dims = 0
    if c.rng.random() < 0.3:
        axis -= len(data_shape)
    if batch_dims and data_shape[0] == 1:  # OpenVINO 2026.4 crashes (SIGSEGV) on a batch of 1 with batch_dims = axis
        data_shape[0] = index_shape[0] = 2
    size = data_shape[axis]
    low = -size if version == 8 else 0
    c.note(version=version, data=data_shape, indices=index_shape, axis=axis, batch_dims=batch_dims)
    x = c.param(data_shape, c.pick(ANY))
    index_type = c.pick(("i32", "i64"))
    indices = c.param(index_shape, index_type, low=low, high=size - 1) if c.rng.random() < 0.6 \
        else c.const(c.values(index_shape, index_type, low=low, high=size - 1))
    if version == 1:
        return [o1.gather(x, indices, _i64(c, axis))]
    return [{7: o7.gather, 8: o8.gather}[version](x, indices, _i64(c, axis), batch_dims)]


def gather_nd(c: Ctx):
    version = c.pick((5, 8))
    data_shape = random_shape(c, c.ints(1, 4))
    batch_dims = c.ints(0, len(data_shape) - 1)
    depth = c.ints(1, len(data_shape) - batch_dims)
    index_shape = data_shape[:batch_dims] + random_shape(c, c.ints(0, 2)) + [depth]
    index_type = c.pick(("i32", "i64"))
    bounds = data_shape[batch_dims:batch_dims + depth]
    indices = np.stack([c.rng.integers(-b if version == 8 else 0, b, index_shape[:-1]) for b in bounds], -1)
    c.note(version=version, data=data_shape, indices=index_shape, batch_dims=batch_dims)
    x = c.param(data_shape, c.pick(ANY))
    return [{5: o5.gather_nd, 8: o8.gather_nd}[version](x, c.const(indices.astype(NP_TYPES[index_type])),
                                                         batch_dims)]


def shape_of(c: Ctx):
    version, shape = c.pick((1, 3)), random_shape(c)
    output_type = c.pick(("i32", "i64")) if version == 3 else "i64"
    c.note(version=version, shape=shape, output_type=output_type)
    x = c.param(shape, c.pick(ANY))
    return [o1.shape_of(x) if version == 1 else o3.shape_of(x, output_type)]


REDUCTIONS = {"ReduceMean": o1.reduce_mean, "ReduceMax": o1.reduce_max, "ReduceMin": o1.reduce_min,
              "ReduceSum": o1.reduce_sum, "ReduceProd": o1.reduce_prod, "ReduceL1": o4.reduce_l1,
              "ReduceL2": o4.reduce_l2}


def reduce(c: Ctx):
    op = c.pick(sorted(REDUCTIONS))
    shape = random_shape(c, c.ints(0, 4), 0 if c.rng.random() < 0.05 else 1)
    axes = sorted(set(c.ints(-len(shape), len(shape) - 1, c.ints(0, len(shape))) if shape else []),
                  key=lambda a: a % len(shape))
    axes = list({a % len(shape): a for a in axes}.values()) if shape else []
    keep = bool(c.ints(0, 1))
    element_type = c.pick(FLOATS if op in ("ReduceL2",) else NUMBERS)
    c.note(op=op, shape=shape, axes=axes, keep_dims=keep, type=element_type)
    x = c.param(shape, element_type, low=-3, high=3) if op == "ReduceProd" else c.param(shape, element_type)
    return [REDUCTIONS[op](x, _i64(c, axes), keep)]


def _pool_geometry(c: Ctx, dilated: bool):
    spatial = c.ints(1, 3)
    kernel, strides = c.ints(1, 3, spatial), c.ints(1, 3, spatial)
    dilations = c.ints(1, 2, spatial) if dilated else [1] * spatial
    pads_begin = [c.ints(0, k - 1) for k in kernel]
    pads_end = [c.ints(0, k - 1) for k in kernel]
    sizes = [(k - 1) * d + 1 + c.ints(0, 4) for k, d in zip(kernel, dilations)]
    return spatial, kernel, strides, dilations, pads_begin, pads_end, sizes


def pooling(c: Ctx):
    kind, version = c.pick((("avg", 1), ("avg", 14), ("avg", 16), ("max", 1), ("max", 8), ("max", 14)))
    _, kernel, strides, dilations, pb, pe, sizes = _pool_geometry(c, (kind, version) in (("avg", 16),
                                                                                      ("max", 8), ("max", 14)))
    rounding = c.pick(("floor", "ceil") + (("ceil_torch",) if version >= 14 else ()))
    auto_pad = c.pick(("explicit", "explicit", "same_upper", "same_lower", "valid"))
    element_type = c.pick(FLOATS) if kind == "avg" else c.pick(("f32", "f16", "i8", "u8", "i32"))
    x = c.param([c.ints(1, 2), c.ints(1, 3), *sizes], element_type)
    c.note(kind=kind, version=version, kernel=kernel, strides=strides, dilations=dilations, pads=(pb, pe),
           rounding=rounding, auto_pad=auto_pad, type=element_type)
    if kind == "avg":
        exclude = bool(c.ints(0, 1))
        c.note(exclude_pad=exclude)
        if version == 16:
            return [o16.avg_pool(x, strides, pb, pe, kernel, exclude, rounding, auto_pad, dilations)]
        return [{1: o1.avg_pool, 14: o14.avg_pool}[version](x, strides, pb, pe, kernel, exclude, rounding, auto_pad)]
    if version == 1:
        return [o1.max_pool(x, strides, pb, pe, kernel, rounding, auto_pad)]
    index_type, axis = c.pick(("i32", "i64")), c.ints(-(len(kernel) + 2), 1)
    c.note(index_element_type=index_type, axis=axis)
    node = {8: o8.max_pool, 14: o14.max_pool}[version](x, strides, dilations, pb, pe, kernel, rounding, auto_pad,
                                                       index_type, axis)
    return list(node.outputs())


def adaptive_pool(c: Ctx):
    spatial = c.ints(1, 3)
    sizes = c.ints(1, 7, spatial)
    out = c.ints(1, 7, spatial)
    x = c.param([c.ints(1, 2), c.ints(1, 3), *sizes], c.pick(FLOATS))
    if c.rng.random() < 0.5:
        c.note(kind="avg", sizes=sizes, out=out)
        return [o8.adaptive_avg_pool(x, _i64(c, out))]
    index_type = c.pick(("i32", "i64"))
    c.note(kind="max", sizes=sizes, out=out, index_type=index_type)
    return list(o8.adaptive_max_pool(x, _i64(c, out), index_type).outputs())


def pad(c: Ctx):
    version = c.pick((1, 12))
    shape = random_shape(c, c.ints(1, 4), 1, 5)
    mode = c.pick(("constant", "edge", "reflect", "symmetric"))
    low = -2 if version == 12 else 0  # Pad-12 crops with negative pads
    begin, end = [], []
    for dim in shape:
        top = {"constant": 3, "edge": 3, "reflect": dim - 1, "symmetric": dim}[mode]
        b, e = c.ints(low, top), c.ints(low, top)
        # a crop longer than the axis crashes OpenVINO 2026.4 (Pad-12 [3, 1] with [0, 3], [0, -2]: SIGABRT)
        fits = dim + b + e >= 1 and dim + min(b, 0) + min(e, 0) >= 1
        begin.append(b if fits else 0)
        end.append(e if fits else 0)
    element_type = c.pick(NUMBERS)
    c.note(version=version, shape=shape, mode=mode, pads=(begin, end), type=element_type)
    x = c.param(shape, element_type)
    value = c.const(c.values([], element_type)) if mode == "constant" and c.rng.random() < 0.6 else None
    build = o1.pad if version == 1 else o12.pad
    return [build(x, _i64(c, begin), _i64(c, end), mode, value)]


def broadcast(c: Ctx):
    version = c.pick((1, 3))
    mode = c.pick(("numpy", "explicit") + (("bidirectional",) if version == 3 else ()))
    data = random_shape(c, c.ints(0, 3), 1, 4)
    element_type = c.pick(ANY)
    if mode == "explicit":
        target = random_shape(c, len(data) + c.ints(0, 2), 1, 4)
        mapping = sorted(c.rng.choice(len(target), len(data), replace=False).tolist())
        data = [target[a] if c.rng.random() < 0.7 else 1 for a in mapping]
        c.note(version=version, mode=mode, data=data, target=target, axes_mapping=mapping)
        build = o1.broadcast if version == 1 else o3.broadcast
        return [build(c.param(data, element_type), _i64(c, target), _i64(c, mapping), mode)]
    target = [d if c.rng.random() < 0.6 else (1 if mode == "bidirectional" and c.rng.random() < 0.5 else d)
              for d in data]
    data = [1 if c.rng.random() < 0.3 else d for d in data]
    target = c.ints(1, 3, c.ints(0, 2)) + target
    if mode == "bidirectional" and c.rng.random() < 0.3:
        data, target = [1, *data], target[1:]
    target = target or [1]  # OpenVINO 2026.4's CPU plugin crashes (SIGSEGV) on a Broadcast to shape []
    c.note(version=version, mode=mode, data=data, target=target)
    build = o1.broadcast if version == 1 else o3.broadcast
    return [build(c.param(data, element_type), _i64(c, target), None, mode)]


def convert(c: Ctx):
    source, destination = c.pick(NUMBERS + ("boolean", "f64")), c.pick(NUMBERS + ("boolean", "f64"))
    shape = random_shape(c)
    c.note(source=source, destination=destination, shape=shape)
    x = c.param(shape, source, **({} if source in ("boolean", "u8") else dict(low=-300, high=300)))
    if c.rng.random() < 0.3:
        return [o1.convert_like(x, c.const(np.zeros([1], NP_TYPES[destination])))]
    return [o1.convert(x, destination)]


def constant(c: Ctx):
    element_type = c.pick(NUMBERS + ("boolean", "f64"))
    shape = random_shape(c)
    value = c.values(shape, element_type)
    c.note(type=element_type, shape=shape)
    const = c.const(value)
    if c.rng.random() < 0.5:
        return [const]  # a Const straight into a Result
    return [o1.select(c.param(shape, "boolean"), const, c.param(shape, element_type))]


def tile(c: Ctx):
    shape = random_shape(c)
    repeats = c.ints(1, 3, c.ints(0, len(shape) + 1))
    c.note(shape=shape, repeats=repeats)
    return [o1.tile(c.param(shape, c.pick(ANY)), _i64(c, repeats))]


def chain(c: Ctx):
    """Conv -> BatchNorm -> ReLU -> MaxPool -> Reshape -> MatMul -> SoftMax: a CNN in miniature."""
    n, cin, size, cout = c.ints(1, 2), c.ints(1, 3), c.ints(4, 8), c.ints(1, 4)
    x = c.param([n, cin, size, size], "f32")
    y = o1.convolution(x, c.const(c.values([cout, cin, 3, 3], "f32")), [1, 1], [1, 1], [1, 1], [1, 1])
    y = o5.batch_norm_inference(y, *(c.const(c.values([cout], "f32")) for _ in range(3)),
                                c.const(c.values([cout], "f32", low=0.1, high=2.0)), 1e-5)
    y = o8.max_pool(o1.relu(y), [2, 2], [1, 1], [0, 0], [0, 0], [2, 2], "ceil").output(0)
    y = o1.reshape(y, _i64(c, [0, -1]), True)
    features = cout * ((size + 1) // 2) ** 2
    y = o1.matmul(y, c.const(c.values([5, features], "f32")), False, True)
    return [o8.softmax(y, -1)]


CASES = {"Concat": concat, "Split": split, "Reshape": reshape, "Transpose": transpose, "Squeeze": squeeze_unsqueeze,
         "Slice": slice8, "StridedSlice": strided_slice, "Gather": gather, "GatherND": gather_nd,
         "ShapeOf": shape_of, "Reduce": reduce, "Pooling": pooling, "AdaptivePool": adaptive_pool, "Pad": pad,
         "Broadcast": broadcast, "Convert": convert, "Const": constant, "Tile": tile, "chain": chain}
