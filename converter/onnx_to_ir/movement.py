"""ONNX data-movement nodes -> IR: ops that pass a tensor on or rearrange it without arithmetic.

Identity becomes no layer: its output is its input's IR tensor (the driver gives a graph output that is
also a graph input, or a second name of one tensor, its own copy). Constant and ConstantOfShape are folded
by the driver when their inputs are constant (driver.fold); a ConstantOfShape of a computed shape becomes
Broadcast of its value.

Where ONNX and OpenVINO give one name two meanings:

- Reshape: ONNX allowzero=0 (the only meaning before opset 14) copies the input dim where the shape has a
  0, which is IR special_zero=true; allowzero=1 makes 0 a real zero-length dim, special_zero=false.
- Split: ONNX splits evenly by the output count (or Split-18's num_outputs, ceil-sized parts with a smaller
  last one); IR Split needs an even split, so uneven parts become VariadicSplit with the lengths.
- Slice: IR Slice-8 is ONNX Slice-10+'s definition (clamped starts/ends, negative steps, INT_MAX ends);
  Slice-1's attributes become its inputs.
- Pad: negative pads crop (ONNX), first: a Slice-8 then the Pad of the positive amounts (pads computed at run
  time: computed_bounds.py).
- Shape start/end (opset 15) slice ShapeOf's output with Slice-8 under the same clamping rules.
- Gather-8 takes negative indices like ONNX (Gather-1 and -7 do not).
- Expand is Broadcast-3 with mode bidirectional (ONNX Expand broadcasts both ways).
- Flatten (every version; a negative axis from 11, asked of the row) is a Reshape to
  [prod(dims[:axis]), prod(dims[axis:])]: a constant target when the dims are static; -1 for the one dynamic
  side when the other side's product is static and not zero (then -1 is exactly total / product); otherwise
  the two products are computed from ShapeOf (Slice, ReduceProd, Concat), exact for zero-length dims too.
"""

from __future__ import annotations

import numpy as np

from poolir.converter.onnx_to_ir.max_pool_indices import exact_divmod
from poolir.converter.onnx_to_ir.node import OnnxNode, Value, value_of
from poolir.converter.onnx_to_ir.computed_bounds import full_rank_bounds, pad_by_computed_pads
from poolir.ir.element_types import dtype_of
from poolir.ir.errors import ConversionError, InvalidModelError, UnsupportedError, UsageError
from poolir.runtime import onnx_ops
from poolir.runtime.kernels.movement import even_split_sizes, padding_sources
from poolir.runtime.onnx_ops.movement import num_outputs_problem
from poolir.ir.shapes import checked_axes, checked_axis

_INDEX_TYPES = ("i32", "i64")


def identity(node: OnnxNode) -> list[Value]:
    return [node.single_input()]


def _known(node: OnnxNode, value: Value) -> np.ndarray | None:
    """A tensor's value when shape inference knows it (a Const, or shape arithmetic on static dims)."""
    return node.builder.info(value.ref).value


def _ints(node: OnnxNode, value: Value, what: str) -> list[int]:
    known = _known(node, value)
    if known is None:
        raise ConversionError(f"{what} must be constant to convert to IR")
    return [int(v) for v in np.asarray(known).reshape(-1)]


def _i64(node: OnnxNode, values) -> Value:
    array = np.asarray(values, dtype=np.int64)
    return Value(node.const(array), "i64", tuple(array.shape))


def _by_attribute(node: OnnxNode, name: str) -> bool:
    """Whether the node's version row has `name` as an attribute (before it became an input)."""
    return name in node.version.attributes


def _axis(axis: int, rank: int, what: str = "attribute 'axis'") -> int:
    return checked_axis(axis, rank, what)


def _index_input(value: Value, what: str) -> None:
    if value.element_type not in _INDEX_TYPES:
        raise InvalidModelError(f"{what} must be int32 or int64, got {value.element_type}")


def transpose(node: OnnxNode) -> list[Value]:
    x, attrs = node.checked_single_input()
    rank = len(x.shape)
    perm = attrs.get("perm")
    perm = list(reversed(range(rank))) if perm is None else list(perm)
    if sorted(_axis(p, rank, "perm entry") for p in perm) != list(range(rank)) or len(perm) != rank:
        raise InvalidModelError(f"perm {perm} is not a permutation of the {rank} axes")
    return node.layer("Transpose", [x, _i64(node, perm)], name=node.name)


def reshape(node: OnnxNode) -> list[Value]:
    attrs = node.attributes()
    x, shape = node.checked_inputs(2, 2)
    _index_input(shape, "the shape input")
    special_zero = not attrs.get("allowzero", 0)  # module docstring
    return node.layer("Reshape", [x, shape], {"special_zero": special_zero}, name=node.name)


def concat(node: OnnxNode) -> list[Value]:
    attrs = node.attributes()
    inputs = node.checked_inputs(1, None)
    rank = len(inputs[0].shape)
    return node.layer("Concat", inputs, {"axis": _axis(attrs["axis"], rank)}, name=node.name)


def split(node: OnnxNode) -> list[Value]:
    attrs = node.attributes()
    x, given = (node.checked_inputs(1, 1 if _by_attribute(node, "split") else 2, optional=(1,)) + [None])[:2]
    axis = _axis(attrs.get("axis", 0), len(x.shape))
    parts = len(node.node.output)
    sizes = attrs.get("split")
    if given is not None:
        _index_input(given, "the split input")
        if _known(node, given) is None:
            return _split_computed(node, x, axis, given, parts)
        sizes = _ints(node, given, "the split input")
    num_outputs = attrs.get("num_outputs")
    if sizes is None and num_outputs is not None:
        problem = num_outputs_problem(num_outputs, parts)
        if problem:
            raise InvalidModelError(problem)
        length = x.shape[axis]
        if length is None:
            return _split_even_computed(node, x, axis, parts)
        sizes = even_split_sizes(length, num_outputs)
        if len(sizes) != parts:
            raise InvalidModelError(f"axis {axis} of length {length} gives {len(sizes)} parts, not {parts}")
    axis_value = _i64(node, axis)
    if sizes is None:
        return node.layer("Split", [x, axis_value], {"num_splits": parts}, name=node.name)
    if len(sizes) != parts:
        raise InvalidModelError(f"split has {len(sizes)} sizes for {parts} outputs")
    return node.layer("VariadicSplit", [x, axis_value, _i64(node, sizes)], name=node.name)


def _split_computed(node: OnnxNode, x: Value, axis: int, given: Value, parts: int) -> list[Value]:
    """Split by lengths computed at run time (poolir's ONNX of a PyTorch-frontend ShuffleNetV2 IR derives them from
    Shape): VariadicSplit takes them as an input too. Valid ONNX lengths are >= 0 and add up to the axis, and mean
    the same there; OpenVINO reads a -1, which ONNX does not allow, as the rest."""
    if given.shape != (parts,):
        raise ConversionError(f"the split input computed at run time must hold one length per output ({parts}), "
                              f"its shape is {list(given.shape)}")
    return node.layer("VariadicSplit", [x, _i64(node, axis), given], name=node.name)


def _split_even_computed(node: OnnxNode, x: Value, axis: int, parts: int) -> list[Value]:
    """Split-18 num_outputs on an axis whose length L is known at run time only (the dynamo exporter's
    ShuffleNetV2 chunk with dynamic H and W: the channel count comes out of a computed Reshape): ONNX's parts
    are ceil(L / n) long, the last the rest. VariadicSplit by [c] * (n - 1) + [-1], with c = (L + n - 1) // n
    computed from ShapeOf by an exact divmod under OpenVINO's arithmetic (max_pool_indices.exact_divmod, for
    L < 2**31). Where ONNX has fewer than n parts (L = 6, n = 4), the model is invalid there; OpenVINO gives an
    empty last part."""
    name = node.name

    def binary(kind: str, left, right, layer_name: str):
        operand = node.const(right, "i64") if isinstance(right, int) else right
        return node.add(kind, [left, operand], {"auto_broadcast": "numpy"}, f"{name}/{layer_name}")[0]

    shape = node.add("ShapeOf", [x.ref], {"output_type": "i64"}, f"{name}/shape")[0]
    length = node.add("Gather", [shape, node.const([axis], "i64"), node.const(0, "i64")],
                      name=f"{name}/length", newest=True)[0]
    chunk, _ = exact_divmod(binary, binary("Add", length, parts - 1, "rounded_up"), parts, f"{name}/chunk")
    lengths = node.add("Concat", [chunk] * (parts - 1) + [node.const([-1], "i64")], {"axis": 0},
                       f"{name}/lengths")[0]
    return node.layer("VariadicSplit", [x, _i64(node, axis), Value(lengths, "i64", (parts,))], name=name)


def slice_(node: OnnxNode) -> list[Value]:
    attrs = node.attributes()
    if _by_attribute(node, "starts"):  # Slice-1: attributes
        x = node.single_input()
        starts, ends = list(attrs["starts"]), list(attrs["ends"])
        axes = attrs.get("axes")
        if len(starts) != len(ends) or (axes is not None and len(axes) != len(starts)):
            raise InvalidModelError("starts, ends and axes must have one value per sliced axis")
        inputs = [x, _i64(node, starts), _i64(node, ends), _i64(node, [1] * len(starts))]
        if axes is not None:
            inputs.append(_i64(node, axes))
    else:
        x, starts, ends, axes, steps = node.checked_inputs(3, 5, optional=(3, 4))
        for value, what in ((starts, "starts"), (ends, "ends"), (axes, "axes"), (steps, "steps")):
            if value is not None:
                _index_input(value, what)
        if steps is None:
            count = starts.shape[0] if len(starts.shape) == 1 else None
            if count is None:
                raise ConversionError("Slice without steps needs starts of a known length")
            steps = _i64(node, [1] * count)
        if axes is not None and _known(node, axes) is None:
            # OpenVINO crashes on a Slice-8 with computed axes: name every axis instead (computed_bounds.py)
            starts, ends, steps = full_rank_bounds(node, len(x.shape), axes,
                                                   {"starts": starts, "ends": ends, "steps": steps})
            axes = None
        inputs = [x, starts, ends, steps] + ([axes] if axes is not None else [])
    return node.layer("Slice", inputs, name=node.name)


def squeeze(node: OnnxNode) -> list[Value]:
    attrs = node.attributes()
    x, axes = (node.checked_inputs(1, 1 if _by_attribute(node, "axes") else 2, optional=(1,)) + [None])[:2]
    if "axes" in attrs:
        axes = _i64(node, attrs["axes"])
    _check_known_axes(node, axes, len(x.shape))
    if axes is None:
        if any(d is None for d in x.shape):
            raise ConversionError("Squeeze without axes on a dynamic shape: ONNX squeezes the dims that turn "
                                  "out to be 1, which an IR cannot state")
        return node.layer("Squeeze", [x], name=node.name)
    return node.layer("Squeeze", [x, axes], name=node.name)


def unsqueeze(node: OnnxNode) -> list[Value]:
    attrs = node.attributes()
    if _by_attribute(node, "axes"):
        x = node.single_input()
        axes = _i64(node, attrs["axes"])
    else:
        x, axes = node.checked_inputs(2, 2)
    _check_known_axes(node, axes, len(x.shape), added=True)
    return node.layer("Unsqueeze", [x, axes], name=node.name)


def _check_known_axes(node: OnnxNode, axes: Value | None, rank: int, added: bool = False) -> None:
    """Squeeze/Unsqueeze axes known now, checked as the runtime checks them (ir.shapes.checked_axes), so the
    refusal names this node rather than the IR layer it would become; Unsqueeze's rank counts the added axes."""
    known = None if axes is None else node.builder.info(axes.ref).value
    if axes is not None and known is None:  # refused here, naming the node, not by the IR layer's shape rule
        raise ConversionError("the axes input must be constant to convert to IR (poolir's IR shape inference "
                              "takes Squeeze/Unsqueeze dims from constant axes)")
    if known is not None:
        values = [int(v) for v in np.asarray(known).reshape(-1)]
        checked_axes(values, rank + len(values) if added else rank,
                     "attribute 'axes'" if _by_attribute(node, "axes") else "input 'axes'")


def gather(node: OnnxNode) -> list[Value]:
    attrs = node.attributes()
    data, indices = node.checked_inputs(2, 2)
    _index_input(indices, "the indices input")
    axis = _axis(attrs.get("axis", 0), len(data.shape))
    if (dims := _static_dims_picked(node, data, indices)) is not None:
        return [Value(node.const(dims), "i64", dims.shape)]
    return node.layer("Gather", [data, indices, _i64(node, axis)], {"batch_dims": 0}, name=node.name,
                      newest=True)  # Gather-8: negative indices count from the end, as in ONNX


def _static_dims_picked(node: OnnxNode, data: Value, indices: Value) -> np.ndarray | None:
    """The dims a Gather of Shape(x) picks by constant indices, when every picked dim of x is static though
    others are not (x.view(x.size(1), -1) on a dynamic batch): a Const, as OpenVINO's own frontend folds it.
    Besides being smaller, this keeps a shape value OpenVINO would only half know out of the IR: its CPU
    plugin tiles wrong by repeats that contain such a value (Tile-per-axis chains, rearrange.py)."""
    source = node.builder.shape_source(data.ref)
    picked = node.builder.info(indices.ref).value
    if source is None or picked is None or data.element_type != "i64":
        return None
    shape = node.builder.info(source).shape
    picked = np.asarray(picked, np.int64)
    if not np.all((-len(shape) <= picked) & (picked < len(shape))):
        return None  # the layer refuses it, naming the index
    dims = [shape[int(i)].value for i in picked.ravel()]
    if None in dims:
        return None
    return np.asarray(dims, np.int64).reshape(picked.shape)


def shape(node: OnnxNode) -> list[Value]:
    x, attrs = node.single_input(), node.attributes()
    start, end = attrs.get("start", 0), attrs.get("end")
    if start == 0 and end is None:
        return node.layer("ShapeOf", [x], {"output_type": "i64"}, name=node.name)
    (full,) = node.layer("ShapeOf", [x], {"output_type": "i64"}, name=f"{node.name}/shape")
    rank = len(x.shape)
    end = rank if end is None else end
    bounds = [min(max(v + rank if v < 0 else v, 0), rank) for v in (start, end)]  # ONNX clamps both
    return node.layer("Slice", [full, _i64(node, [bounds[0]]), _i64(node, [bounds[1]]), _i64(node, [1])],
                      name=node.name)


def flatten(node: OnnxNode) -> list[Value]:
    x, attrs = node.checked_single_input()
    rank = len(x.shape)
    axis = attrs.get("axis", 1)
    lowest = -rank if node.version.since >= 11 else 0  # runtime.onnx_ops' Flatten rows: negative from 11
    if not lowest <= axis <= rank:
        raise InvalidModelError(f"attribute 'axis' = {axis} is out of range for rank {rank} ({lowest}..{rank})")
    axis = axis + rank if axis < 0 else axis
    sides = [x.shape[:axis], x.shape[axis:]]
    products = [None if None in dims else int(np.prod(dims, dtype=np.int64)) for dims in sides]
    if None not in products:
        target = _i64(node, products)
    elif products.count(None) == 1 and next(p for p in products if p is not None) != 0:
        target = _i64(node, [-1 if p is None else p for p in products])  # exactly total / the static product
    else:
        (dims,) = node.layer("ShapeOf", [x], {"output_type": "i64"}, name=f"{node.name}/shape")
        parts = []
        for index, (start, end) in enumerate(((0, axis), (axis, rank))):
            if start == end:  # an empty side: its product is 1
                parts.append(_i64(node, [1]))
                continue
            (side,) = node.layer("Slice", [dims, _i64(node, [start]), _i64(node, [end]), _i64(node, [1])],
                                 name=f"{node.name}/dims{index}")
            parts += node.layer("ReduceProd", [side, _i64(node, [0])], {"keep_dims": True},
                                name=f"{node.name}/product{index}")
        (target,) = node.layer("Concat", parts, {"axis": 0}, name=f"{node.name}/target")
    return node.layer("Reshape", [x, target], {"special_zero": False}, name=node.name)


def expand(node: OnnxNode) -> list[Value]:
    node.attributes()
    x, target = node.checked_inputs(2, 2)
    _index_input(target, "the shape input")
    if tuple(target.shape) == (0,):
        # Broadcasting to the empty shape [] keeps x as it is; OpenVINO 2026.4's CPU plugin crashes (SIGSEGV) compiling
        # a Broadcast to an empty target, even one written by its own opset API (found by the graph fuzzer).
        return [x]
    return node.layer("Broadcast", [x, target], {"mode": "bidirectional"}, name=node.name)


def constant(node: OnnxNode) -> list[Value]:
    """The driver folds every Constant whose value an IR Const can hold; here is what is wrong with the others."""
    try:
        value = onnx_ops.constant_value(node.attributes())
    except UsageError as error:
        raise InvalidModelError(error.problem) from None
    raise UnsupportedError(f"the Constant's value of element type {value.dtype} has no IR equivalent")


def constant_of_shape(node: OnnxNode) -> list[Value]:
    """ConstantOfShape of a computed shape: Broadcast of the value (a shape the driver knows is folded)."""
    attrs = node.attributes()
    target = node.single_input()
    _index_input(target, "the shape input")
    value = attrs.get("value")
    fill = np.zeros((), np.float32) if value is None else np.asarray(value).reshape(-1)[:1].reshape(())
    fill_value = value_of(node.builder, node.const(fill))
    return node.layer("Broadcast", [fill_value, target], {"mode": "numpy"}, name=node.name)


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}


def pad(node: OnnxNode) -> list[Value]:
    """Pad-2 (pads and value attributes), Pad-11+ (pads, constant_value inputs; axes from 18).

    onnxruntime crops (negative pads) before it pads in edge, reflect and wrap modes, so a crop is an IR Slice
    before the Pad of the positive amounts; in constant mode it crops after, as IR Pad-12 does. ONNX wrap (opset
    19; PyTorch's dynamo exporter writes it for padding_mode='circular') has no IR Pad mode: a Gather per padded
    axis of the positions np.pad copies (`padding_sources`), on axes of static length."""
    attrs = node.attributes()
    if _by_attribute(node, "pads"):
        x, pads_input, given, axes_input = node.checked_inputs(1, 1) + [None] * 3
    else:
        x, pads_input, given, axes_input = node.checked_inputs(2, 4, optional=(2, 3))
    rank = len(x.shape)
    mode = attrs.get("mode", "constant")
    if mode not in _PAD_MODES:
        raise InvalidModelError(f"Pad mode {mode!r} is not one of constant, reflect, edge, wrap")
    if "pads" in attrs:
        pads = list(attrs["pads"])
        fill = np.asarray(attrs.get("value", 0.0))
    else:
        given = None if given is not None and given.shape == (0,) else given
        if _known(node, pads_input) is None and axes_input is None:  # computed pads: computed_bounds.py
            if mode == "wrap":
                raise ConversionError("Pad mode wrap with pads computed at run time has no IR equivalent (IR Pad has "
                                      "no wrap mode; with constant pads it converts as a Gather)")
            node.check_same_element_type(x, "the input", [("constant_value", given)])
            fill = given if given is not None else Value(node.const(np.zeros((), dtype_of(x.element_type))),
                                                         x.element_type, ())
            return pad_by_computed_pads(node, x, pads_input, _PAD_MODES[mode], fill if mode == "constant" else None)
        pads = _ints(node, pads_input, "the pads input")
        fill = None if given is None else _known(node, given)
        if given is not None and fill is None:
            raise ConversionError("the constant_value input must be constant to convert to IR")
        fill = np.zeros(()) if fill is None else np.asarray(fill).reshape(-1)[0]
        if axes_input is not None:
            axes = [_axis(a, rank, "axes entry") for a in _ints(node, axes_input, "the axes input")]
            full = [0] * (2 * rank)
            for i, axis in enumerate(axes):
                full[axis], full[axis + rank] = pads[i], pads[i + len(axes)]
            pads = full
    if len(pads) != 2 * rank:
        raise InvalidModelError(f"pads has {len(pads)} values for rank {rank} (expected {2 * rank})")
    begin, end = pads[:rank], pads[rank:]
    if min(pads) < 0 and mode == "constant":  # crops after padding in onnxruntime, as OpenVINO's Pad-12 does
        fill_array = np.asarray(fill).astype(dtype_of(x.element_type))
        return node.layer("Pad", [x, _i64(node, begin), _i64(node, end),
                                  Value(node.const(fill_array), x.element_type, ())],
                          {"pad_mode": "constant"}, name=node.name, newest=True)
    if min(pads) < 0:
        grows = max(pads) > 0
        x = _cropped(node, x, begin, end, f"{node.name}/cropped" if grows else node.name)
        if not grows:
            return [x]
        begin, end = [max(0, p) for p in begin], [max(0, p) for p in end]
    dims = [x.shape[axis] for axis in range(rank)]
    if mode == "wrap" or mode == "reflect" and any(
            d is not None and max(b, e) >= d > 0 for b, e, d in zip(begin, end, dims)):
        return _padded_by_gather(node, x, begin, end, mode)
    inputs = [x, _i64(node, begin), _i64(node, end)]
    if mode == "constant":
        fill_array = np.asarray(fill).astype(dtype_of(x.element_type))
        inputs.append(Value(node.const(fill_array), x.element_type, ()))
    return node.layer("Pad", inputs, {"pad_mode": _PAD_MODES[mode]}, name=node.name)


def _cropped(node: OnnxNode, x: Value, begin: list[int], end: list[int], name: str) -> Value:
    """x without the elements negative pads remove: Slice-8 from -begin to -end on each cropped axis."""
    axes = [axis for axis, (b, e) in enumerate(zip(begin, end)) if b < 0 or e < 0]
    starts = [max(0, -begin[axis]) for axis in axes]
    stops = [end[axis] if end[axis] < 0 else np.iinfo(np.int64).max for axis in axes]
    return node.layer("Slice", [x, _i64(node, starts), _i64(node, stops), _i64(node, [1] * len(axes)),
                                _i64(node, axes)], name=name)[0]


def _padded_by_gather(node: OnnxNode, x: Value, begin: list[int], end: list[int], mode: str) -> list[Value]:
    """Each padded axis as a Gather of the positions it copies: exact for any mode np.pad has, static dims only."""
    padded = [axis for axis, (b, e) in enumerate(zip(begin, end)) if b or e]
    for number, axis in enumerate(padded):
        length = x.shape[axis]
        if length is None:
            raise ConversionError(f"Pad mode {mode} on axis {axis} of dynamic length has no IR equivalent (IR Pad "
                                  "has no wrap mode); --input-shape fixes it")
        if length == 0:
            raise InvalidModelError(f"Pad mode {mode} of axis {axis}, which is empty after the crop")
        indices = padding_sources(length, begin[axis], end[axis], mode)
        last = number == len(padded) - 1
        x = node.layer("Gather", [x, _i64(node, indices), _i64(node, axis)], {"batch_dims": 0},
                       name=node.name if last else f"{node.name}/axis{axis}", newest=True)[0]
    return [x]


CONVERTERS = {
    "Identity": identity, "Transpose": transpose, "Reshape": reshape, "Concat": concat, "Split": split,
    "Slice": slice_, "Squeeze": squeeze, "Unsqueeze": unsqueeze, "Gather": gather, "Shape": shape,
    "Expand": expand, "Flatten": flatten, "Constant": constant, "ConstantOfShape": constant_of_shape, "Pad": pad,
}
