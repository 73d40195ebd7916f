"""The vocabulary of layer schemas: attribute kinds, `Attr` and the `OpVersion` row.

A family module (ir/ops/<family>.py) writes its schema rows with these; ir/schema.py looks rows up
and applies them (parse, normalise, format). An attribute kind says how a value is parsed from and
formatted to XML text, and how a builder value is coerced to the typed form the reader produces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from poolir.ir.element_types import DTYPES
from poolir.ir.errors import InvalidModelError, UnsupportedError, UsageError, printable
from poolir.ir.model import Dim, Shape

REQUIRED = object()  # marker: the attribute has no default


@dataclass(frozen=True, slots=True)
class AttrKind:
    """How one kind of attribute value is parsed from and formatted to XML text."""

    name: str
    parse: Callable[[str], Any]
    format: Callable[[Any], str]


# An integer in a file: ASCII digits only (int() also takes '٣'), at most 20 of them (uint64; Python refuses
# int() of more than 4300 digits with a ValueError, and no dim, id or kernel needs more).
INTEGER_PATTERN = re.compile(r"[+-]?[0-9]{1,20}", re.ASCII)


def parse_integer(text: str) -> int | None:
    """The int that `text` spells (spaces around allowed), or None when it is not one (see INTEGER_PATTERN)."""
    text = str(text).strip()
    return int(text) if INTEGER_PATTERN.fullmatch(text) else None


def _parse_int(text: str) -> int:
    value = parse_integer(text)
    if value is None:
        raise UsageError(f"{printable(text.strip(), 60)!r} is not an integer (at most 20 ASCII digits)")
    return value


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
        low_value = parse_integer(low) if low.strip() else 0
        high_value = parse_integer(high) if high.strip() else None
        if low_value is None or (high.strip() and high_value is None):
            raise UsageError(f"dimension {printable(text, 60)!r} is not an integer range")
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
# A choice OpenVINO writes in capitals (MVN eps_mode INSIDE_SQRT, Gelu approximation_mode ERF): held lowercase
# like every choice, written back as OpenVINO writes it, so its files round-trip byte for byte.
UPPER_STR = AttrKind("upper_str", lambda text: text, lambda value: str(value).upper())
# OpenVINO writes a float attribute as a C++ double with 17 significant digits (%.17g: alpha 1e-4 held as a
# float32 is "9.9999997473787516e-05", 1.0 is "1"), so that is how poolir writes one back.
FLOAT = AttrKind("float", _parse_float, lambda value: "%.17g" % value)
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

    def coerce(self, value: Any) -> Any:
        """A builder value in the typed form the reader produces (tuples of int, lowercase choices)."""
        kind = self.kind
        if kind is INTS:
            return _parse_ints(value) if isinstance(value, str) else tuple(int(v) for v in value)
        if kind is INT:
            return int(value)
        if kind is BOOL:
            return _parse_bool(value) if isinstance(value, str) else bool(value)
        if kind in (STR, UPPER_STR):
            return str(value).lower() if self.choices is not None else str(value)
        if kind in (PARTIAL_SHAPE, STATIC_SHAPE) and isinstance(value, str):
            return kind.parse(value)
        return value


# Checks of attribute values that kinds and choices cannot express (pooling: every stride >= 1).
ValueCheck = Callable[[Mapping[str, Any]], None]


@dataclass(frozen=True, slots=True)
class OpVersion:
    """One version of one layer type: the opset that introduced it, its attributes and port counts.

    `value_check`, when given, raises UsageError for typed attribute values out of range; graph
    validation (ir.validate) runs it after the attributes are normalised.
    """

    type: str
    since: int  # first opset containing this version; the version is spelled "opset<since>"
    attrs: tuple[Attr, ...] = ()
    inputs: tuple[int, int | None] = (1, 1)  # (min, max) input ports; max None = any number
    outputs: tuple[int, int | None] = (1, 1)
    value_check: ValueCheck | None = None

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

    def check_port_count(self, direction: str, count: int) -> None:
        """Raise InvalidModelError when `count` "input" or "output" ports are outside this version's range."""
        low, high = self.inputs if direction == "input" else self.outputs
        if count < low or (high is not None and count > high):
            expected = f"{low}" if low == high else f"{low} to {high if high is not None else 'any number of'}"
            verb = "takes" if direction == "input" else "has"
            raise InvalidModelError(f"has {count} {direction} ports, {self.label} {verb} {expected}")
