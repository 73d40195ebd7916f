"""Layer schemas: one table row per (layer type, op version) drives reading, validation and writing.

A layer's `version` attribute names an OpenVINO *opset* ("opset8"), not an op version. An opset
contains the newest version of each op introduced at or before it, so `AvgPool` with version
"opset8" is AvgPool-1 and with "opset16" is AvgPool-16. `op_version(type, version)` resolves that,
and the resolved `OpVersion` lists the attributes that version has, in the order OpenVINO writes
them, with their kinds, defaults and allowed values; plus how many input and output ports it has.

A new op version is one row here (and, if its shape rule changes, a branch in ir/infer.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from poolir.ir.element_types import DTYPES
from poolir.ir.errors import UnsupportedError, UsageError
from poolir.ir.model import Dim, Shape

# The newest OpenVINO opset this table knows. A version beyond it is refused rather than guessed.
LATEST_OPSET = 16

REQUIRED = object()  # marker: the attribute has no default


@dataclass(frozen=True, slots=True)
class AttrKind:
    """How one kind of attribute value is parsed from and formatted to XML text."""

    name: str
    parse: Callable[[str], Any]
    format: Callable[[Any], str]


def _parse_int(text: str) -> int:
    text = text.strip()
    if not re.fullmatch(r"[+-]?\d+", text):
        raise UsageError(f"{text!r} is not an integer")
    return int(text)


def _parse_ints(text: str) -> tuple[int, ...]:
    # OpenVINO writes "2, 2"; hand-written files use "2,2" or "2 , 2". An empty string is an empty list.
    if not text.strip():
        return ()
    return tuple(_parse_int(item) for item in text.split(","))


def _parse_bool(text: str) -> bool:
    # OpenVINO writes "true"/"false"; its reader also accepts "1"/"0" and any letter case.
    lowered = text.strip().lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0"):
        return False
    raise UsageError(f"{text!r} is not a boolean (true or false)")


def _parse_float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise UsageError(f"{text!r} is not a number") from None


def _parse_element_type(text: str) -> str:
    text = text.strip()
    if text not in DTYPES:
        raise UsageError(f"{text!r} is not a supported element type ({', '.join(DTYPES)})")
    return text


def parse_dim(text: str) -> Dim:
    """OpenVINO's dimension syntax: "8", "?" or "-1", "1..8", "..8", "1..". Raises UsageError."""
    text = text.strip()
    if text in ("?", "-1"):
        return Dim.dynamic()
    if ".." in text:
        low, _, high = text.partition("..")
        try:
            low_value = int(low) if low.strip() else 0
            high_value = int(high) if high.strip() else None
        except ValueError:
            raise UsageError(f"dimension {text!r} is not an integer range") from None
        if low_value < 0 or (high_value is not None and high_value < low_value):
            raise UsageError(f"dimension range {text!r} is empty or negative")
        return Dim(low_value, high_value)
    value = _parse_int(text)
    if value < 0:
        raise UsageError(f"dimension {value} is negative (use -1 or ? for a dynamic dimension)")
    return Dim.static(value)


def _parse_partial_shape(text: str) -> Shape:
    text = text.strip()
    if not text:
        return ()
    if text in ("...", "[...]"):
        raise UnsupportedError("a shape of dynamic rank ('...') is not supported: every tensor needs a known rank")
    return tuple(parse_dim(item) for item in text.strip("[]").split(","))


def _format_partial_shape(shape: Shape) -> str:
    return ",".join(str(dim) for dim in shape)  # OpenVINO writes Parameter shapes without spaces


def _parse_static_shape(text: str) -> Shape:
    shape = _parse_partial_shape(text)
    if not all(dim.is_static for dim in shape):
        raise UsageError(f"shape {text!r} must be static")
    return shape


def _format_ints(values: Any) -> str:
    return ", ".join(str(int(v)) for v in values)


INT = AttrKind("int", _parse_int, lambda v: str(int(v)))
INTS = AttrKind("ints", _parse_ints, _format_ints)
BOOL = AttrKind("bool", _parse_bool, lambda v: "true" if v else "false")
STR = AttrKind("str", lambda text: text, str)
FLOAT = AttrKind("float", _parse_float, repr)
ELEMENT_TYPE = AttrKind("element_type", _parse_element_type, str)
PARTIAL_SHAPE = AttrKind("partial_shape", _parse_partial_shape, _format_partial_shape)
STATIC_SHAPE = AttrKind("static_shape", _parse_static_shape, lambda shape: _format_ints(d.min for d in shape))


@dataclass(frozen=True, slots=True)
class Attr:
    name: str
    kind: AttrKind
    default: Any = REQUIRED  # a value, REQUIRED, or a callable(attrs read so far) -> value
    choices: tuple[str, ...] | None = None

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def default_for(self, attrs: dict[str, Any]) -> Any:
        return self.default(attrs) if callable(self.default) else self.default


@dataclass(frozen=True, slots=True)
class OpVersion:
    """One version of one layer type: the opset that introduced it, its attributes and port counts."""

    type: str
    since: int  # first opset containing this version; the version is spelled "opset<since>"
    attrs: tuple[Attr, ...] = ()
    inputs: tuple[int, int | None] = (1, 1)  # (min, max) input ports; max None = any number
    outputs: tuple[int, int | None] = (1, 1)

    @property
    def version(self) -> str:
        return f"opset{self.since}"

    @property
    def label(self) -> str:
        return f"{self.type}-{self.since}"

    def attr(self, name: str) -> Attr:
        for attr in self.attrs:
            if attr.name == name:
                return attr
        raise KeyError(name)


def _ones_like_kernel(attrs: dict[str, Any]) -> tuple[int, ...]:
    return (1,) * len(attrs.get("kernel", ()))


ROUNDING_V1 = ("floor", "ceil")
ROUNDING_V14 = ("floor", "ceil", "ceil_torch")
AUTO_PAD = ("explicit", "same_upper", "same_lower", "valid")  # OpenVINO 2026 refuses "notset"
AUTO_BROADCAST = ("none", "numpy")  # "pdpd" exists in OpenVINO but no pooling model uses it
INDEX_TYPES = ("i32", "i64")


def _avg_pool(since: int, rounding: tuple[str, ...], dilations: bool) -> OpVersion:
    attrs = [Attr("kernel", INTS), Attr("strides", INTS), Attr("pads_begin", INTS), Attr("pads_end", INTS),
             Attr("exclude-pad", BOOL), Attr("auto_pad", STR, "explicit", AUTO_PAD),
             Attr("rounding_type", STR, "floor", rounding)]
    if dilations:
        attrs.append(Attr("dilations", INTS, _ones_like_kernel))  # OpenVINO writes it last
    return OpVersion("AvgPool", since, tuple(attrs))


def _max_pool(since: int, rounding: tuple[str, ...], indices: bool) -> OpVersion:
    if not indices:
        return OpVersion("MaxPool", since, (
            Attr("strides", INTS), Attr("pads_begin", INTS), Attr("pads_end", INTS), Attr("kernel", INTS),
            Attr("rounding_type", STR, "floor", rounding), Attr("auto_pad", STR, "explicit", AUTO_PAD)))
    return OpVersion("MaxPool", since, (
        Attr("strides", INTS), Attr("dilations", INTS, _ones_like_kernel), Attr("pads_begin", INTS),
        Attr("pads_end", INTS), Attr("kernel", INTS), Attr("rounding_type", STR, "floor", rounding),
        Attr("auto_pad", STR, "explicit", AUTO_PAD), Attr("index_element_type", STR, "i64", INDEX_TYPES),
        Attr("axis", INT, 0)), outputs=(2, 2))


def _binary(layer_type: str, *extra: Attr) -> OpVersion:
    return OpVersion(layer_type, 1, (Attr("auto_broadcast", STR, "numpy", AUTO_BROADCAST), *extra), inputs=(2, 2))


def _reduce(layer_type: str, since: int = 1) -> OpVersion:
    return OpVersion(layer_type, since, (Attr("keep_dims", BOOL, False),), inputs=(2, 2))


PAD_MODES = ("constant", "edge", "reflect", "symmetric")

_ROWS: tuple[OpVersion, ...] = (
    OpVersion("Parameter", 1, (Attr("shape", PARTIAL_SHAPE), Attr("element_type", ELEMENT_TYPE)),
              inputs=(0, 0)),
    OpVersion("Const", 1, (Attr("element_type", ELEMENT_TYPE), Attr("shape", STATIC_SHAPE),
                           Attr("offset", INT), Attr("size", INT)), inputs=(0, 0)),
    OpVersion("Result", 1, outputs=(0, 0)),
    _avg_pool(1, ROUNDING_V1, dilations=False),
    _avg_pool(14, ROUNDING_V14, dilations=False),
    _avg_pool(16, ROUNDING_V14, dilations=True),
    _max_pool(1, ROUNDING_V1, indices=False),
    _max_pool(8, ROUNDING_V1, indices=True),
    _max_pool(14, ROUNDING_V14, indices=True),
    # Pad-1 and Pad-12 share attributes; 12 allows negative pads (cropping).
    OpVersion("Pad", 1, (Attr("pad_mode", STR, REQUIRED, PAD_MODES),), inputs=(3, 4)),
    OpVersion("Pad", 12, (Attr("pad_mode", STR, REQUIRED, PAD_MODES),), inputs=(3, 4)),
    _binary("Add"), _binary("Subtract"), _binary("Multiply"),
    _binary("Divide", Attr("m_pythondiv", BOOL, True)),
    _binary("FloorMod"), _binary("Maximum"), _binary("Minimum"), _binary("Power"),
    OpVersion("Abs", 1), OpVersion("Sqrt", 1), OpVersion("Floor", 1),
    OpVersion("Convert", 1, (Attr("destination_type", ELEMENT_TYPE),)),
    OpVersion("ConvertLike", 1, inputs=(2, 2)),
    OpVersion("Reshape", 1, (Attr("special_zero", BOOL),), inputs=(2, 2)),
    OpVersion("Squeeze", 1, inputs=(1, 2)),
    OpVersion("Squeeze", 15, (Attr("allow_axis_skip", BOOL, False),), inputs=(1, 2)),
    OpVersion("Unsqueeze", 1, inputs=(2, 2)),
    OpVersion("Concat", 1, (Attr("axis", INT),), inputs=(1, None)),
    OpVersion("Split", 1, (Attr("num_splits", INT),), inputs=(2, 2), outputs=(1, None)),
    OpVersion("VariadicSplit", 1, inputs=(3, 3), outputs=(1, None)),
    OpVersion("Transpose", 1, inputs=(2, 2)),
    OpVersion("Slice", 8, inputs=(4, 5)),
    OpVersion("StridedSlice", 1, (Attr("begin_mask", INTS), Attr("end_mask", INTS),
                                  Attr("new_axis_mask", INTS, ()), Attr("shrink_axis_mask", INTS, ()),
                                  Attr("ellipsis_mask", INTS, ())), inputs=(3, 4)),
    OpVersion("Gather", 1, inputs=(3, 3)),
    OpVersion("Gather", 7, (Attr("batch_dims", INT, 0),), inputs=(3, 3)),
    OpVersion("Gather", 8, (Attr("batch_dims", INT, 0),), inputs=(3, 3)),
    OpVersion("ShapeOf", 1),
    OpVersion("ShapeOf", 3, (Attr("output_type", STR, "i64", INDEX_TYPES),)),
    OpVersion("Broadcast", 1, (Attr("mode", STR, "numpy", ("numpy", "explicit")),), inputs=(2, 3)),
    OpVersion("Broadcast", 3, (Attr("mode", STR, "numpy", ("numpy", "explicit", "bidirectional")),),
              inputs=(2, 3)),
    _reduce("ReduceMean"), _reduce("ReduceMax"), _reduce("ReduceMin"), _reduce("ReduceSum"),
    _reduce("ReduceProd"), _reduce("ReduceL1", 4), _reduce("ReduceL2", 4),
)


def _index(rows: tuple[OpVersion, ...]) -> dict[str, tuple[OpVersion, ...]]:
    table: dict[str, list[OpVersion]] = {}
    for row in rows:
        versions = table.setdefault(row.type, [])
        if any(existing.since == row.since for existing in versions):
            raise RuntimeError(f"duplicate schema row {row.label}")  # a bug in this table, at import
        versions.append(row)
    return {name: tuple(sorted(versions, key=lambda v: v.since)) for name, versions in table.items()}


SCHEMAS: dict[str, tuple[OpVersion, ...]] = _index(_ROWS)


def supported_types() -> str:
    return ", ".join(sorted(SCHEMAS))


def supported_versions(layer_type: str) -> str:
    versions = SCHEMAS[layer_type]
    return ", ".join(f"opset{v.since}..{LATEST_OPSET}" if v is versions[-1] else
                     f"opset{v.since}..{versions[i + 1].since - 1}" for i, v in enumerate(versions))


def op_version(layer_type: str, version: str) -> OpVersion:
    """The op version that `version` ("opsetN") selects for `layer_type`. Raises UnsupportedError."""
    if layer_type not in SCHEMAS:
        raise UnsupportedError(f"layer type {layer_type!r} is not supported (supported: {supported_types()})")
    match = re.fullmatch(r"opset(\d+)", version or "")
    opset = int(match.group(1)) if match else 0
    candidates = [v for v in SCHEMAS[layer_type] if v.since <= opset]
    if not candidates or opset > LATEST_OPSET:
        raise UnsupportedError(f"version {version!r} of {layer_type} is not supported "
                               f"(supported: {supported_versions(layer_type)})")
    return candidates[-1]


def first_version_with(layer_type: str, attr: str) -> int | None:
    """The first opset whose `layer_type` has attribute `attr`, or None (AvgPool dilations: 16).

    A version fact is asked of this table, never restated (ceil_torch is a rounding_type choice: see
    `first_version_allowing`)."""
    for row in SCHEMAS.get(layer_type, ()):
        if any(a.name == attr for a in row.attrs):
            return row.since
    return None


def first_version_allowing(layer_type: str, attr: str, value: str) -> int | None:
    """The first opset whose `layer_type` accepts `value` for the choice attribute `attr`
    (MaxPool rounding_type ceil_torch: 14), or None."""
    for row in SCHEMAS.get(layer_type, ()):
        for a in row.attrs:
            if a.name == attr and a.choices is not None and value in a.choices:
                return row.since
    return None


def parse_attrs(schema: OpVersion, raw: dict[str, str]) -> dict[str, Any]:
    """Typed attributes from the text of a <data> element, defaults filled in, in schema order.

    Raises UsageError naming the attribute; callers locate it at the file and layer.
    """
    known = {attr.name for attr in schema.attrs}
    unknown = [name for name in raw if name not in known]
    if unknown:
        allowed = ", ".join(sorted(known)) or "none"
        raise UsageError(f"attribute {unknown[0]!r} is not an attribute of {schema.label} (allowed: {allowed})")
    attrs: dict[str, Any] = {}
    for attr in schema.attrs:
        if attr.name in raw:
            text = raw[attr.name]
            try:
                attrs[attr.name] = attr.kind.parse(text)
            except UsageError as error:
                raise UsageError(f"attribute {attr.name!r} = {text!r}: {error.problem}") from None
    return normalize_attrs(schema, attrs)


def normalize_attrs(schema: OpVersion, attrs: dict[str, Any]) -> dict[str, Any]:
    """Check typed attributes (from a file or from the builder) against the schema; fill defaults.

    Returns a new dict in schema order. Raises UsageError naming the attribute and what is allowed.
    """
    known = {attr.name for attr in schema.attrs}
    for name in attrs:
        if name not in known:
            allowed = ", ".join(sorted(known)) or "none"
            raise UsageError(f"attribute {name!r} is not an attribute of {schema.label} (allowed: {allowed})")
    values: dict[str, Any] = {}
    for attr in schema.attrs:
        if attr.name in attrs:
            values[attr.name] = _coerce(attr, attrs[attr.name])
        elif attr.required:
            raise UsageError(f"required attribute {attr.name!r} of {schema.label} is missing")
    for attr in schema.attrs:  # defaults may depend on other attributes (dilations on kernel)
        if attr.name not in values:
            values[attr.name] = _coerce(attr, attr.default_for(values))
    result: dict[str, Any] = {}
    for attr in schema.attrs:
        value = values[attr.name]
        if attr.choices is not None and value not in attr.choices:
            raise UsageError(f"attribute {attr.name!r} = {value!r} is not allowed in {schema.label} "
                             f"(allowed: {', '.join(attr.choices)})")
        result[attr.name] = value
    return result


def _coerce(attr: Attr, value: Any) -> Any:
    """Builder values to the typed form the reader produces (tuples of int, lowercase strings)."""
    kind = attr.kind
    if kind is INTS:
        if isinstance(value, str):
            return _parse_ints(value)
        return tuple(int(v) for v in value)
    if kind is INT:
        return int(value)
    if kind is BOOL:
        return _parse_bool(value) if isinstance(value, str) else bool(value)
    if kind is STR:
        return str(value).lower() if attr.choices is not None else str(value)
    if kind in (PARTIAL_SHAPE, STATIC_SHAPE) and isinstance(value, str):
        return kind.parse(value)
    return value


def format_attrs(schema: OpVersion, attrs: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, text) pairs in schema order, for the writer."""
    return [(attr.name, attr.kind.format(attrs[attr.name])) for attr in schema.attrs if attr.name in attrs]
