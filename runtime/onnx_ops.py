"""ONNX operators for the reference runtime: one attribute table per op, one normaliser, thin adapters.

Version differences are data. For each operator, `OP_VERSIONS` lists behaviour rows by the version
that introduced them (`since`); a model importing opset N uses the latest row with since <= N. A row
gives the allowed attributes (kind, default, required) and the element types allowed for the main input.
`normalize_attributes` is the one place that reads an ONNX node's attributes: unknown attribute for that
version, wrong kind, missing required attribute -> an error naming the node.

Pooling readings (these go into the README's semantics section too):

- ceil_mode=1 rounds the output size up, but a last window that would start at or after L + pad_begin
  (in the right padding) is dropped, in every version ("sliding windows that would start in the right
  padded region are ignored", AveragePool-19/22, MaxPool-22; PyTorch documents the same rule for its
  ceil_mode; onnxruntime and onnx.reference agree): ir.geometry rounding "ceil_torch".
- count_include_pad=1 divides by the taps inside the padded tensor [-pad_begin, L + pad_end), never by
  taps past it (a ceil overhang): divisor "padded" (as PyTorch's avg_pool, whose divisor is clipped to
  the padded input, and onnxruntime). count_include_pad=0, and AveragePool-1 (which has no
  such attribute and always excludes pads), divide by the real input taps: divisor "real".
- auto_pad SAME_UPPER/SAME_LOWER: out = ceil(L / s), total pad (out - 1) * s + (k - 1) * d + 1 - L (at
  least 0), the odd element at the end (UPPER) or the beginning (LOWER); ceil_mode does not change it
  (AveragePool-19/22: "SAME_UPPER or SAME_LOWER: output_spatial_shape[i] = ceil(input_spatial_shape[i] /
  strides_spatial_shape[i])", one formula for both modes; onnxruntime agrees). Dilation counts, as the
  spec's pad_shape formula says; onnxruntime 1.31 pads for the undilated kernel, and fails ("padding
  values must be non-negative") where the formula is negative (stride > effective kernel: no padding).
- auto_pad VALID: no padding and out = floor((L - ek) / s) + 1 even when ceil_mode=1. The spec's VALID
  formula (every version) is ceil((L - ek + 1) / s), which is that same number, and it is stated
  without reference to ceil_mode; onnx.reference agrees for MaxPool (its AveragePool refuses ceil_mode
  with auto_pad). onnxruntime 1.31 instead applies ceil
  rounding to VALID (L=3, k=2, s=2 gives 2 windows, the second a half-window); poolir follows the spec.
- Windows with no real input element (possible when a pad >= the kernel extent; onnxruntime refuses
  such pads, "Pad should be smaller than kernel"): MaxPool gives -inf (integers: the type's minimum),
  the identity of max, with index -1 (no element was selected); AveragePool with count_include_pad=0
  gives NaN (0 / 0 real elements, as onnx.reference's nanmean); with count_include_pad=1 it gives 0
  (a sum of zero padding over a non-zero count, as onnx.reference); LpPool gives 0 (an empty sum).
- MaxPool Indices (opset 8+): flat index over N, C and the spatial dims of the input; storage_order=1
  makes only the spatial part column-major; padding is never selected; ties go to the first element in
  row-major scan order of the window.
- LpPool: (sum over real elements |x|^p)^(1/p); p is a float in version 1 (default 2.0) and an int from
  version 2 (default 2); ceil_mode and dilations from 18. p <= 0 is refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import ml_dtypes
import numpy as np
import onnx
from onnx import numpy_helper

from poolir.ir.errors import UsageError
from poolir.ir.geometry import pool_windows
from poolir.runtime import tensor_ops

# ---------------------------------------------------------------------------------------------------
# Attribute and version tables

INT, INTS, FLOAT, FLOATS, STRING, STRINGS, TENSOR, SPARSE = (
    "int", "ints", "float", "floats", "string", "strings", "tensor", "sparse_tensor")

_PROTO_KINDS = {
    onnx.AttributeProto.INT: INT, onnx.AttributeProto.INTS: INTS, onnx.AttributeProto.FLOAT: FLOAT,
    onnx.AttributeProto.FLOATS: FLOATS, onnx.AttributeProto.STRING: STRING,
    onnx.AttributeProto.STRINGS: STRINGS, onnx.AttributeProto.TENSOR: TENSOR,
    onnx.AttributeProto.SPARSE_TENSOR: SPARSE,
}

F16, BF16, F32, F64 = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32),
                       np.dtype(np.float64))
I8, U8 = np.dtype(np.int8), np.dtype(np.uint8)
FLOAT_TYPES = frozenset({F16, F32, F64})
FLOAT_TYPES_BF16 = FLOAT_TYPES | {BF16}


@dataclass(frozen=True, slots=True)
class Attribute:
    """One attribute of one op version: its kind, default (None: absent unless given) and whether required."""

    kind: str
    default: Any = None
    required: bool = False


REMOVED = Attribute("removed")  # in a row's changes: the attribute no longer exists from this version


@dataclass(frozen=True, slots=True)
class OpVersion:
    """The behaviour of an op from version `since` until the next row.

    dtypes: element types allowed for the main input (type constraint T); None = not restricted here.
    """

    op_type: str
    since: int
    attributes: Mapping[str, Attribute]
    dtypes: frozenset | None
    max_outputs: int

    @property
    def label(self) -> str:
        return f"{self.op_type}-{self.since}"


OP_VERSIONS: dict[str, tuple[OpVersion, ...]] = {}


def _define(op_type: str, rows: Sequence[tuple], *, dtypes: frozenset | None = None, max_outputs: int = 1) -> None:
    """Register an op's version rows. Each row: (since, attribute changes[, dtypes[, max_outputs]]).

    A row inherits everything from the previous one and applies its changes, so a new opset is a row.
    Registering an op twice fails at import time.
    """
    if op_type in OP_VERSIONS:
        raise RuntimeError(f"ONNX op {op_type} is defined twice")
    attributes: dict[str, Attribute] = {}
    versions = []
    for row in rows:
        since, changes = row[0], row[1]
        dtypes = row[2] if len(row) > 2 and row[2] is not None else dtypes
        max_outputs = row[3] if len(row) > 3 else max_outputs
        for name, attribute in changes.items():
            if attribute is REMOVED:
                attributes.pop(name, None)
            else:
                attributes[name] = attribute
        versions.append(OpVersion(op_type, since, dict(attributes), dtypes, max_outputs))
    OP_VERSIONS[op_type] = tuple(versions)


_POOL_COMMON = {"auto_pad": Attribute(STRING, "NOTSET"), "kernel_shape": Attribute(INTS, required=True),
                "pads": Attribute(INTS), "strides": Attribute(INTS)}

_define("AveragePool", [
    (1, _POOL_COMMON, FLOAT_TYPES),                         # always excludes pads from the divisor
    (7, {"count_include_pad": Attribute(INT, 0)}),
    (10, {"ceil_mode": Attribute(INT, 0)}),
    (11, {}),                                               # same attributes; pads wording clarified
    (19, {"dilations": Attribute(INTS)}),
    (22, {}, FLOAT_TYPES_BF16),
])
_define("MaxPool", [
    (1, _POOL_COMMON, FLOAT_TYPES, 1),
    (8, {"storage_order": Attribute(INT, 0)}, None, 2),     # the optional Indices output appears
    (10, {"ceil_mode": Attribute(INT, 0), "dilations": Attribute(INTS)}),
    (11, {}),
    (12, {}, FLOAT_TYPES | {I8, U8}),
    (22, {}, FLOAT_TYPES_BF16 | {I8, U8}),
])
_define("LpPool", [
    # LpPool-1 marks kernel_shape optional but gives it no meaning when absent; poolir requires it.
    (1, {**_POOL_COMMON, "p": Attribute(FLOAT, 2.0)}, FLOAT_TYPES),
    (2, {"p": Attribute(INT, 2)}),
    (11, {}),
    (18, {"ceil_mode": Attribute(INT, 0), "dilations": Attribute(INTS)}),
    (22, {}, FLOAT_TYPES_BF16),
])
_define("GlobalAveragePool", [(1, {}, FLOAT_TYPES), (22, {}, FLOAT_TYPES_BF16)])
_define("GlobalMaxPool", [(1, {}, FLOAT_TYPES), (22, {}, FLOAT_TYPES_BF16)])
_define("GlobalLpPool", [(1, {"p": Attribute(FLOAT, 2.0)}, FLOAT_TYPES), (2, {"p": Attribute(INT, 2)}),
                         (22, {}, FLOAT_TYPES_BF16)])

# Non-pooling ops: the ones a converter emits when writing IR back to ONNX, and a few neighbours.
# Their element types are not restricted here (numpy computes any of them). Versions before the first
# row use legacy semantics (e.g. broadcast/axis attributes before opset 7) and are unsupported.
for _op in ("Abs", "Neg", "Floor", "Ceil", "Sqrt", "Exp", "Log", "Reciprocal", "Relu"):
    _define(_op, [(6, {})])
_define("Sign", [(9, {})])
_define("Not", [(1, {})])
for _op in ("Add", "Sub", "Mul", "Div", "Pow", "Equal", "Less", "Greater", "And", "Or", "Xor"):
    _define(_op, [(7, {})])
_define("LessOrEqual", [(12, {})])
_define("GreaterOrEqual", [(12, {})])
for _op in ("Max", "Min", "Sum", "Mean"):
    _define(_op, [(6, {})])
_define("Mod", [(10, {"fmod": Attribute(INT, 0)})])
_define("Where", [(9, {})])
_define("Identity", [(1, {})])
_define("Pad", [
    (2, {"mode": Attribute(STRING, "constant"), "pads": Attribute(INTS, required=True), "value": Attribute(FLOAT, 0.0)}),
    (11, {"pads": REMOVED, "value": REMOVED}),               # pads, constant_value (and axes from 18) are inputs
])
_define("Transpose", [(1, {"perm": Attribute(INTS)})])
_define("Reshape", [(5, {}), (14, {"allowzero": Attribute(INT, 0)})])
_define("Concat", [(4, {"axis": Attribute(INT, required=True)})])
_define("Split", [
    (2, {"axis": Attribute(INT, 0), "split": Attribute(INTS)}, None, 2 ** 31),
    (13, {"split": REMOVED}),                                 # split sizes become an input
    (18, {"num_outputs": Attribute(INT)}),
])
_define("Slice", [(1, {"starts": Attribute(INTS, required=True), "ends": Attribute(INTS, required=True),
                       "axes": Attribute(INTS)}),
                  (10, {"starts": REMOVED, "ends": REMOVED, "axes": REMOVED})])
_define("Squeeze", [(1, {"axes": Attribute(INTS)}), (13, {"axes": REMOVED})])
_define("Unsqueeze", [(1, {"axes": Attribute(INTS, required=True)}), (13, {"axes": REMOVED})])
_define("Gather", [(1, {"axis": Attribute(INT, 0)})])
_define("Shape", [(1, {}), (15, {"start": Attribute(INT, 0), "end": Attribute(INT)})])
# saturate and round_mode only concern float8/float4 targets, which poolir does not support.
_define("Cast", [(6, {"to": Attribute(INT, required=True)}), (19, {"saturate": Attribute(INT, 1)}),
                 (24, {"round_mode": Attribute(STRING, "up")})])
_define("CastLike", [(15, {}), (19, {"saturate": Attribute(INT, 1)}), (24, {"round_mode": Attribute(STRING, "up")})])
_define("Constant", [
    (1, {"value": Attribute(TENSOR, required=True)}),
    (11, {"value": Attribute(TENSOR), "sparse_value": Attribute(SPARSE)}),  # exactly one value attribute
    (12, {"value_float": Attribute(FLOAT), "value_floats": Attribute(FLOATS), "value_int": Attribute(INT),
          "value_ints": Attribute(INTS), "value_string": Attribute(STRING), "value_strings": Attribute(STRINGS)}),
])
_define("ConstantOfShape", [(9, {"value": Attribute(TENSOR)})])
_define("Expand", [(8, {})])
_define("Clip", [(6, {"min": Attribute(FLOAT, -math.inf), "max": Attribute(FLOAT, math.inf)}),
                 (11, {"min": REMOVED, "max": REMOVED})])
for _op, _input_axes_since in (("ReduceSum", 13), ("ReduceMean", 18), ("ReduceMax", 18), ("ReduceMin", 18),
                               ("ReduceProd", 18), ("ReduceL1", 18), ("ReduceL2", 18),
                               ("ReduceSumSquare", 18), ("ReduceLogSum", 18), ("ReduceLogSumExp", 18)):
    _define(_op, [(1, {"axes": Attribute(INTS), "keepdims": Attribute(INT, 1)}),
                  (_input_axes_since, {"axes": REMOVED, "noop_with_empty_axes": Attribute(INT, 0)})])

POOLING_OPS = ("AveragePool", "MaxPool", "LpPool", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")


def op_version(op_type: str, opset: int) -> OpVersion | None:
    """The behaviour row in effect for `op_type` in a model importing `opset`; None if unsupported."""
    chosen = None
    for row in OP_VERSIONS.get(op_type, ()):
        if row.since <= opset:
            chosen = row
    return chosen


def first_opset(op_type: str) -> int | None:
    """The first opset in which poolir runs `op_type`; None for an op it does not know."""
    rows = OP_VERSIONS.get(op_type)
    return rows[0].since if rows else None


def first_opset_with(op_type: str, attribute: str) -> int | None:
    """The first opset whose `op_type` has `attribute` (ceil_mode of MaxPool: 10); None if no version has it.

    The converter asks this instead of restating version facts."""
    for row in OP_VERSIONS.get(op_type, ()):
        if attribute in row.attributes:
            return row.since
    return None


def attribute_value(attribute: onnx.AttributeProto) -> tuple[str, Any]:
    """(kind, Python value) of an ONNX attribute; ints as tuples, strings decoded, tensors as numpy."""
    kind = _PROTO_KINDS.get(attribute.type, "unknown")
    if kind == INT:
        return kind, int(attribute.i)
    if kind == INTS:
        return kind, tuple(int(v) for v in attribute.ints)
    if kind == FLOAT:
        return kind, float(attribute.f)
    if kind == FLOATS:
        return kind, tuple(float(v) for v in attribute.floats)
    if kind == STRING:
        return kind, attribute.s.decode("utf-8", errors="replace")
    if kind == STRINGS:
        return kind, tuple(s.decode("utf-8", errors="replace") for s in attribute.strings)
    if kind == TENSOR:
        return kind, numpy_helper.to_array(attribute.t)
    return kind, attribute


def normalize_attributes(node: onnx.NodeProto, version: OpVersion) -> dict[str, Any]:
    """The node's attributes checked against its version row, with defaults filled in.

    Raises UsageError (the caller locates it at the node): unknown attribute for this version, wrong
    kind (e.g. a float p for LpPool-2), missing required attribute. Attributes absent without a default
    are absent from the result.
    """
    values: dict[str, Any] = {}
    for attribute in node.attribute:
        spec = version.attributes.get(attribute.name)
        if spec is None:
            allowed = ", ".join(sorted(version.attributes)) or "none"
            raise UsageError(f"attribute '{attribute.name}' is not defined for {version.label} "
                             f"(allowed: {allowed})")
        kind, value = attribute_value(attribute)
        if kind != spec.kind:
            raise UsageError(f"attribute '{attribute.name}' of {version.label} must be of kind {spec.kind}, "
                             f"got {kind}")
        values[attribute.name] = value
    for name, spec in version.attributes.items():
        if name not in values:
            if spec.required:
                raise UsageError(f"required attribute '{name}' of {version.label} is missing")
            if spec.default is not None:
                values[name] = spec.default
    return values


# ---------------------------------------------------------------------------------------------------
# Pooling: ONNX attributes -> kernel parameters

_AUTO_PADS = {"NOTSET": "explicit", "SAME_UPPER": "same_upper", "SAME_LOWER": "same_lower", "VALID": "valid"}


@dataclass(frozen=True, slots=True)
class OnnxPool:
    """A windowed ONNX pooling node, read and validated; shape-independent.

    family: "max" | "avg" | "lp". rounding and auto_pad use ir.geometry's names. divisor (avg only):
    "real" or "padded". with_indices: MaxPool's second output is requested.
    """

    family: str
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads_begin: tuple[int, ...]
    pads_end: tuple[int, ...]
    rounding: str
    auto_pad: str
    divisor: str = "real"
    p: float = 2.0
    column_major_indices: bool = False
    with_indices: bool = False

    @property
    def spatial_rank(self) -> int:
        return len(self.kernel)

    def check_rank(self, rank: int) -> None:
        if rank != self.spatial_rank + 2:
            raise UsageError(f"input rank {rank} does not match kernel_shape with {self.spatial_rank} "
                             f"axes (expected rank {self.spatial_rank + 2}: N, C and {self.spatial_rank} spatial)")

    def windows(self, input_shape: Sequence[int]):
        """ir.geometry windows for an input of this shape (N, C, spatial...). Raises UsageError."""
        self.check_rank(len(input_shape))
        return pool_windows(tuple(input_shape[2:]), self.kernel, self.strides, self.dilations, self.pads_begin,
                            self.pads_end, self.rounding, self.auto_pad)


def _flag(attrs: Mapping[str, Any], name: str) -> bool:
    value = attrs.get(name, 0)
    if value not in (0, 1):
        raise UsageError(f"attribute '{name}' = {value}: must be 0 or 1")
    return bool(value)


def _per_axis(attrs: Mapping[str, Any], name: str, rank: int, minimum: int, default: int) -> tuple[int, ...]:
    values = attrs.get(name)
    if values is None:
        return (default,) * rank
    if len(values) != rank:
        raise UsageError(f"attribute '{name}' has {len(values)} values but kernel_shape has {rank} axes")
    for value in values:
        if value < minimum:
            raise UsageError(f"attribute '{name}' = {list(values)}: every value must be >= {minimum}")
    return tuple(values)


def onnx_pool(version: OpVersion, attrs: Mapping[str, Any], output_count: int) -> OnnxPool:
    """Read a windowed pooling node (AveragePool, MaxPool, LpPool) from its normalised attributes.

    Raises UsageError naming the attribute and the rule (the caller locates it at the node).
    """
    family = {"AveragePool": "avg", "MaxPool": "max", "LpPool": "lp"}[version.op_type]
    kernel = attrs["kernel_shape"]
    rank = len(kernel)
    if rank < 1:
        raise UsageError("attribute 'kernel_shape' is empty: at least one spatial axis is needed")
    kernel = _per_axis(attrs, "kernel_shape", rank, 1, 1)
    strides = _per_axis(attrs, "strides", rank, 1, 1)
    dilations = _per_axis(attrs, "dilations", rank, 1, 1)
    pads = attrs.get("pads")
    if pads is None:
        pads = (0,) * (2 * rank)
    if len(pads) != 2 * rank:
        raise UsageError(f"attribute 'pads' has {len(pads)} values but kernel_shape has {rank} axes "
                         f"(expected {2 * rank}: all begins, then all ends)")
    if any(v < 0 for v in pads):
        raise UsageError(f"attribute 'pads' = {list(pads)}: every value must be >= 0")
    auto_pad_text = attrs.get("auto_pad", "NOTSET")
    if auto_pad_text not in _AUTO_PADS:
        raise UsageError(f"attribute 'auto_pad' = {auto_pad_text!r}: must be one of {', '.join(_AUTO_PADS)}")
    auto_pad = _AUTO_PADS[auto_pad_text]
    if auto_pad != "explicit" and any(pads):
        raise UsageError(f"attribute 'pads' = {list(pads)} cannot be combined with auto_pad={auto_pad_text}")
    ceil_mode = _flag(attrs, "ceil_mode")
    # VALID ignores ceil_mode: the spec's VALID formula ceil((L - ek + 1) / s) is the floor rounding.
    # SAME ignores it too (ir.geometry always uses floor with the SAME pads, giving ceil(L / s)).
    rounding = "ceil_torch" if ceil_mode and auto_pad == "explicit" else "floor"
    divisor = "padded" if _flag(attrs, "count_include_pad") else "real"
    p = _lp_exponent(attrs["p"]) if family == "lp" else 2.0
    column_major = _flag(attrs, "storage_order")
    with_indices = output_count >= 2
    if with_indices and version.max_outputs < 2:
        raise UsageError(f"{version.label} has one output (the Indices output exists from MaxPool-8)")
    return OnnxPool(family, kernel, strides, dilations, tuple(pads[:rank]), tuple(pads[rank:]), rounding,
                    auto_pad, divisor, p, column_major, with_indices)


def global_p(version: OpVersion, attrs: Mapping[str, Any]) -> float:
    return _lp_exponent(attrs.get("p", 2.0))


def _lp_exponent(value) -> float:
    """LpPool's p, a float (version 1) or an int (version 2 on); refused unless finite and > 0."""
    p = float(value)
    if not p > 0 or math.isinf(p):
        raise UsageError(f"attribute 'p' = {value}: must be a finite number > 0")
    return p


def empty_max_value(dtype: np.dtype):
    """MaxPool's value for a window with no real input element: -inf, or an integer type's minimum."""
    dtype = np.dtype(dtype)
    return np.iinfo(dtype).min if dtype.kind in "iu" else -np.inf


# Values for windows without any real input element (see the module docstring).
EMPTY_AVERAGE_EXCLUDE_PAD = np.nan
EMPTY_AVERAGE_INCLUDE_PAD = 0.0


@dataclass(slots=True)
class NodeContext:
    """What an adapter may know about its node at planning time."""

    node: onnx.NodeProto
    version: OpVersion
    attrs: dict[str, Any]
    label: str  # node_label(...) for messages
    input_types: list[np.dtype | None]  # per input, None when unknown before running
    input_shapes: list[tuple[int | None, ...] | None]
    constants: list[np.ndarray | None]  # per input: its value when it is an initializer or a Constant
    output_count: int


Step = Callable[..., tuple]
ADAPTERS: dict[str, Callable[[NodeContext], Step]] = {}


def adapter(*op_types: str):
    """Register the planning function of one or more op types; a duplicate fails at import time."""
    def register(function):
        for op_type in op_types:
            if op_type in ADAPTERS:
                raise RuntimeError(f"an adapter for ONNX op {op_type} is registered twice")
            if op_type not in OP_VERSIONS:
                raise RuntimeError(f"ONNX op {op_type} has an adapter but no version table")
            ADAPTERS[op_type] = function
        return function
    return register


def check_dtype(version: OpVersion, dtype: np.dtype) -> None:
    if version.dtypes is not None and np.dtype(dtype) not in version.dtypes:
        allowed = ", ".join(sorted(_type_name(t) for t in version.dtypes))
        raise UsageError(f"input type {_type_name(dtype)} is not allowed for {version.label} (allowed: {allowed})")


def _type_name(dtype) -> str:
    dtype = np.dtype(dtype)
    return "bfloat16" if dtype == BF16 else dtype.name


# ---------------------------------------------------------------------------------------------------
# Pooling adapters


class WindowedPoolStep:
    """AveragePool / MaxPool / LpPool bound to the kernels; geometry is resolved once per input shape."""

    __slots__ = ("pool", "version", "_plans", "_run")

    def __init__(self, pool: OnnxPool, version: OpVersion):
        from poolir.runtime import kernels

        self.pool = pool
        self.version = version
        self._plans: dict[tuple, tuple] = {}  # (shape, dtype) -> windows
        if pool.family == "max":
            layout = (kernels.IndexLayout(dtype=np.int64, flatten_from=0,
                                          spatial_column_major=pool.column_major_indices, empty_index=-1)
                      if pool.with_indices else None)

            def run(x, windows):
                result = kernels.max_pool(x, windows, indices=layout, empty_value=empty_max_value(x.dtype))
                return result if pool.with_indices else (result,)
        elif pool.family == "avg":
            empty = EMPTY_AVERAGE_INCLUDE_PAD if pool.divisor == "padded" else EMPTY_AVERAGE_EXCLUDE_PAD

            def run(x, windows):
                return (kernels.avg_pool(x, windows, divisor=pool.divisor, empty_value=empty),)
        else:
            def run(x, windows):
                return (kernels.lp_pool(x, windows, p=pool.p),)
        self._run = run

    def plan(self, shape: tuple[int, ...], dtype: np.dtype):
        """Check the type and resolve the geometry for one input shape; cached."""
        key = (shape, np.dtype(dtype))
        windows = self._plans.get(key)
        if windows is None:
            check_dtype(self.version, dtype)
            windows = self._plans[key] = self.pool.windows(shape)
        return windows

    def __call__(self, x: np.ndarray) -> tuple:
        windows = self._plans.get((x.shape, x.dtype))
        if windows is None:
            windows = self.plan(x.shape, x.dtype)
        return self._run(x, windows)


@adapter("AveragePool", "MaxPool", "LpPool")
def plan_windowed_pool(ctx: NodeContext) -> Step:
    pool = onnx_pool(ctx.version, ctx.attrs, ctx.output_count)
    step = WindowedPoolStep(pool, ctx.version)
    if ctx.input_types[0] is not None:
        check_dtype(ctx.version, ctx.input_types[0])
    shape = ctx.input_shapes[0]
    if shape is not None:
        pool.check_rank(len(shape))
        if all(d is not None for d in shape) and ctx.input_types[0] is not None:
            step.plan(tuple(shape), ctx.input_types[0])
    return step


@adapter("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
def plan_global_pool(ctx: NodeContext) -> Step:
    from poolir.runtime import kernels

    kind = {"GlobalAveragePool": "avg", "GlobalMaxPool": "max", "GlobalLpPool": "lp"}[ctx.version.op_type]
    p = global_p(ctx.version, ctx.attrs) if kind == "lp" else 2.0
    version = ctx.version
    if ctx.input_types[0] is not None:
        check_dtype(version, ctx.input_types[0])
    shape = ctx.input_shapes[0]
    if shape is not None and len(shape) < 3:
        raise UsageError(f"input rank {len(shape)}: {version.op_type} needs N, C and at least one spatial axis")
    checked: set = set()

    def run(x):
        if x.dtype not in checked:
            check_dtype(version, x.dtype)
            if x.ndim < 3:
                raise UsageError(f"input rank {x.ndim}: {version.op_type} needs N, C and at least one spatial axis")
            checked.add(x.dtype)
        return (kernels.global_pool(x, kind, spatial_rank=x.ndim - 2, p=p),)
    return run


# ---------------------------------------------------------------------------------------------------
# Elementwise and data-movement adapters (numpy in runtime.tensor_ops)

_UNARY = {
    "Abs": np.abs, "Neg": np.negative, "Sign": np.sign, "Not": np.logical_not, "Relu": lambda x: np.maximum(x, 0),
    "Floor": np.floor, "Ceil": np.ceil,
}
_UNARY_FLOAT = {"Sqrt": np.sqrt, "Exp": np.exp, "Log": np.log, "Reciprocal": np.reciprocal}
_BINARY = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": tensor_ops.divide, "Pow": tensor_ops.power,
    "Equal": np.equal, "Less": np.less, "Greater": np.greater, "LessOrEqual": np.less_equal,
    "GreaterOrEqual": np.greater_equal, "And": np.logical_and, "Or": np.logical_or, "Xor": np.logical_xor,
}
_KEEP_TYPE = {"Add", "Sub", "Mul"}  # numpy may promote mixed scalars; ONNX requires one type T


@adapter(*_UNARY)
def plan_unary(ctx: NodeContext) -> Step:
    function = _UNARY[ctx.version.op_type]
    return lambda x: (np.asarray(function(x)).astype(x.dtype, copy=False),)


@adapter(*_UNARY_FLOAT)
def plan_unary_float(ctx: NodeContext) -> Step:
    function = _UNARY_FLOAT[ctx.version.op_type]
    return lambda x: (tensor_ops.unary_float(function, x),)


@adapter(*_BINARY)
def plan_binary(ctx: NodeContext) -> Step:
    function = _BINARY[ctx.version.op_type]
    if ctx.version.op_type in _KEEP_TYPE:
        return lambda a, b: (np.asarray(function(a, b)).astype(a.dtype, copy=False),)
    return lambda a, b: (np.asarray(function(a, b)),)


@adapter("Max", "Min", "Sum", "Mean")
def plan_variadic(ctx: NodeContext) -> Step:
    op_type = ctx.version.op_type

    def run(*xs):
        if op_type == "Mean":
            work = tensor_ops.accumulation_dtype(xs[0].dtype)
            total = sum(x.astype(work) for x in xs) / len(xs)
            return (np.asarray(total).astype(xs[0].dtype),)
        function = {"Max": np.maximum, "Min": np.minimum, "Sum": np.add}[op_type]
        result = xs[0]
        for x in xs[1:]:
            result = function(result, x)
        return (np.asarray(result).astype(xs[0].dtype, copy=False),)
    return run


@adapter("Mod")
def plan_mod(ctx: NodeContext) -> Step:
    fmod = bool(ctx.attrs.get("fmod", 0))
    return lambda a, b: (tensor_ops.modulo(a, b, fmod),)


@adapter("Where")
def plan_where(ctx: NodeContext) -> Step:
    def run(c, a, b):
        if c.dtype != np.bool_:  # the spec's condition is a bool tensor: np.where would take any truthiness
            raise UsageError(f"the condition (input 0) must be bool, not {c.dtype}")
        return (np.where(c, a, b),)
    if ctx.input_types and ctx.input_types[0] is not None and ctx.input_types[0] != np.bool_:
        raise UsageError(f"the condition (input 0) must be bool, not {ctx.input_types[0]}")
    return run


@adapter("Identity")
def plan_identity(ctx: NodeContext) -> Step:
    return lambda x: (x,)


@adapter("Clip")
def plan_clip(ctx: NodeContext) -> Step:
    if "min" in ctx.version.attributes:
        low, high = ctx.attrs["min"], ctx.attrs["max"]
        return lambda x: (np.clip(x, low, high).astype(x.dtype, copy=False),)

    def run(x, low=None, high=None):
        result = x
        if low is not None:
            result = np.maximum(result, low)
        if high is not None:
            result = np.minimum(result, high)
        return (np.asarray(result).astype(x.dtype, copy=False),)
    return run


def _ints(array) -> list[int]:
    return [int(v) for v in np.asarray(array).reshape(-1)]


@adapter("Pad")
def plan_pad(ctx: NodeContext) -> Step:
    mode = ctx.attrs.get("mode", "constant")
    if mode not in ("constant", "reflect", "edge", "wrap"):
        raise UsageError(f"attribute 'mode' = {mode!r}: must be constant, reflect, edge or wrap")
    attribute_pads = ctx.attrs.get("pads")
    attribute_value_ = ctx.attrs.get("value", 0.0)

    def run(x, pads=None, constant_value=None, axes=None):
        pad_list = list(attribute_pads) if attribute_pads is not None else _ints(pads)
        axis_list = list(range(x.ndim)) if axes is None else [a % x.ndim for a in _ints(axes)]
        if len(pad_list) != 2 * len(axis_list):
            raise UsageError(f"pads has {len(pad_list)} values for {len(axis_list)} axes")
        begins, ends = [0] * x.ndim, [0] * x.ndim
        for i, axis in enumerate(axis_list):
            begins[axis], ends[axis] = pad_list[i], pad_list[i + len(axis_list)]
        value = attribute_value_ if constant_value is None or constant_value.size == 0 else constant_value.reshape(())
        return (tensor_ops.pad(x, begins, ends, mode, value),)
    return run


@adapter("Transpose")
def plan_transpose(ctx: NodeContext) -> Step:
    perm = ctx.attrs.get("perm")
    return lambda x: (np.transpose(x, perm if perm is not None else None),)


@adapter("Reshape")
def plan_reshape(ctx: NodeContext) -> Step:
    allowzero = bool(ctx.attrs.get("allowzero", 0))
    return lambda x, shape: (tensor_ops.reshape(x, _ints(shape), allowzero),)


@adapter("Concat")
def plan_concat(ctx: NodeContext) -> Step:
    axis = ctx.attrs["axis"]
    return lambda *xs: (np.concatenate(xs, axis=axis),)


@adapter("Split")
def plan_split(ctx: NodeContext) -> Step:
    axis = ctx.attrs.get("axis", 0)
    attribute_split = ctx.attrs.get("split")
    num_outputs = ctx.attrs.get("num_outputs")
    parts = ctx.output_count

    def run(x, split=None):
        length = x.shape[axis]
        if attribute_split is not None or split is not None:
            sizes = list(attribute_split) if attribute_split is not None else _ints(split)
        elif num_outputs is not None:
            sizes = tensor_ops.even_split_sizes(length, num_outputs)
        else:
            if length % parts:
                raise UsageError(f"axis {axis} of length {length} does not split evenly into {parts} outputs")
            sizes = [length // parts] * parts
        if any(size < 0 for size in sizes):
            raise UsageError(f"split sizes {sizes[:8]} include a negative size")
        if sum(sizes) != length:
            raise UsageError(f"split sizes {sizes} do not add up to the axis length {length}")
        return tuple(tensor_ops.split(x, axis, sizes))
    return run


@adapter("Slice")
def plan_slice(ctx: NodeContext) -> Step:
    if "starts" in ctx.version.attributes:
        starts, ends, axes = ctx.attrs["starts"], ctx.attrs["ends"], ctx.attrs.get("axes")
        return lambda x: (tensor_ops.slice_axes(x, starts, ends, axes),)

    def run(x, starts, ends, axes=None, steps=None):
        return (tensor_ops.slice_axes(x, _ints(starts), _ints(ends), None if axes is None else _ints(axes),
                                      None if steps is None else _ints(steps)),)
    return run


@adapter("Squeeze")
def plan_squeeze(ctx: NodeContext) -> Step:
    attribute_axes = ctx.attrs.get("axes")

    def run(x, axes=None):
        chosen = attribute_axes if attribute_axes is not None else (None if axes is None else _ints(axes))
        if chosen is None:
            return (np.squeeze(x),)
        return (np.squeeze(x, axis=tuple(a % x.ndim for a in chosen)),)
    return run


@adapter("Unsqueeze")
def plan_unsqueeze(ctx: NodeContext) -> Step:
    attribute_axes = ctx.attrs.get("axes")

    def run(x, axes=None):
        chosen = list(attribute_axes) if attribute_axes is not None else _ints(axes)
        rank = x.ndim + len(chosen)
        return (np.expand_dims(x, tuple(a % rank for a in chosen)),)
    return run


@adapter("Gather")
def plan_gather(ctx: NodeContext) -> Step:
    axis = ctx.attrs.get("axis", 0)

    def run(x, indices):
        wrapped = np.where(indices < 0, indices + x.shape[axis], indices)
        return (np.take(x, wrapped, axis=axis),)
    return run


@adapter("Shape")
def plan_shape(ctx: NodeContext) -> Step:
    start, end = ctx.attrs.get("start", 0), ctx.attrs.get("end")
    return lambda x: (np.array(x.shape[start:end], dtype=np.int64),)


def onnx_dtype(element_type: int) -> np.dtype:
    try:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(element_type))
    except Exception:
        raise UsageError(f"ONNX element type {element_type} is not supported") from None


@adapter("Cast")
def plan_cast(ctx: NodeContext) -> Step:
    target = onnx_dtype(ctx.attrs["to"])
    return lambda x: (tensor_ops.cast(x, target),)


@adapter("CastLike")
def plan_cast_like(ctx: NodeContext) -> Step:
    return lambda x, like: (tensor_ops.cast(x, like.dtype),)


@adapter("Constant")
def plan_constant(ctx: NodeContext) -> Step:
    value = constant_value(ctx.attrs)
    return lambda: (value,)


def constant_value(attrs: Mapping[str, Any]) -> np.ndarray:
    """The tensor of a Constant node (exactly one value attribute must be given)."""
    given = [name for name in attrs if name.startswith("value") or name == "sparse_value"]
    if len(given) != 1:
        raise UsageError(f"a Constant needs exactly one value attribute, got {given or 'none'}")
    name = given[0]
    value = attrs[name]
    if name == "sparse_value":
        raise UsageError("sparse_value Constants are not supported")
    if name == "value":
        return value
    dtype = {"value_float": np.float32, "value_floats": np.float32, "value_int": np.int64,
             "value_ints": np.int64, "value_string": object, "value_strings": object}[name]
    return np.array(value, dtype=dtype)


@adapter("ConstantOfShape")
def plan_constant_of_shape(ctx: NodeContext) -> Step:
    value = ctx.attrs.get("value")
    fill = np.zeros(1, np.float32) if value is None else value.reshape(-1)
    return lambda shape: (np.full(_ints(shape), fill[0], dtype=fill.dtype),)


@adapter("Expand")
def plan_expand(ctx: NodeContext) -> Step:
    def run(x, shape):
        target = np.broadcast_shapes(x.shape, tuple(_ints(shape)))
        return (np.array(np.broadcast_to(x, target)),)
    return run


_REDUCE_KINDS = {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max", "ReduceMin": "min",
                 "ReduceProd": "prod", "ReduceL1": "l1", "ReduceL2": "l2", "ReduceSumSquare": "sum_square",
                 "ReduceLogSum": "log_sum", "ReduceLogSumExp": "log_sum_exp"}


@adapter(*_REDUCE_KINDS)
def plan_reduce(ctx: NodeContext) -> Step:
    """axes: an attribute before opset 13 (ReduceSum) / 18 (the others), then an optional input. Empty
    or absent axes reduce every axis, unless noop_with_empty_axes=1 (then the input passes through)."""
    kind = _REDUCE_KINDS[ctx.version.op_type]
    keepdims = bool(ctx.attrs.get("keepdims", 1))
    attribute_axes = ctx.attrs.get("axes")
    noop = bool(ctx.attrs.get("noop_with_empty_axes", 0))

    def run(x, axes=None):
        chosen = list(attribute_axes) if attribute_axes is not None else ([] if axes is None else _ints(axes))
        if not chosen and noop:
            return (x,)
        if any(not -x.ndim <= axis < x.ndim for axis in chosen) or len({a % x.ndim for a in chosen}) != len(chosen):
            raise UsageError(f"axes {chosen[:8]} are out of range or repeated for an input of rank {x.ndim}")
        return (tensor_ops.reduce(x, kind, chosen, keepdims),)
    return run
