"""Layer schemas: one row per (layer type, op version) drives reading, validation and writing.

A layer's `version` attribute names an OpenVINO *opset* ("opset8"), not an op version. An opset
contains the newest version of each op introduced at or before it, so `AvgPool` with version
"opset8" is AvgPool-1 and with "opset16" is AvgPool-16. `op_version(type, version)` resolves that,
and the resolved `OpVersion` lists the attributes that version has, in the order OpenVINO writes
them, with their kinds, defaults and allowed values; plus how many input and output ports it has.

The rows live with their operator family (ir/ops/<family>.py); a new op version is one row there.
This module looks rows up and applies them: typed attributes from XML text (`parse_attrs`), from a
builder (`normalize_attrs`), and back to text (`format_attrs`).
"""

from __future__ import annotations

from typing import Any, Callable

from poolir.ir.attributes import OpVersion
from poolir.ir.errors import UnsupportedError, UsageError
from poolir.ir.model import opset_number
from poolir.ir.ops import SCHEMAS

__all__ = [
    "LATEST_OPSET", "SCHEMAS", "first_version_allowing", "first_version_with", "format_attrs", "is_known",
    "known_op_version", "normalize_attrs", "op_version", "parse_attrs", "refuse_unknown_layers",
    "supported_types", "supported_versions", "unknown_layer_types",
]

# The newest OpenVINO opset this table knows. A version beyond it is refused rather than guessed.
LATEST_OPSET = 16


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
    opset = opset_number(version or "")
    candidates = [v for v in SCHEMAS[layer_type] if v.since <= opset]
    if not candidates or opset > LATEST_OPSET:
        raise UnsupportedError(f"version {version!r} of {layer_type} is not supported "
                               f"(supported: {supported_versions(layer_type)})")
    return candidates[-1]


def known_op_version(layer_type: str, version: str | None) -> OpVersion | None:
    """The op version `version` selects for `layer_type`, or None when this table does not know the type or
    that version of it (a layer the reader keeps as it is: see `is_known`)."""
    if layer_type not in SCHEMAS:
        return None
    opset = opset_number(version or "")
    candidates = [v for v in SCHEMAS[layer_type] if v.since <= opset]
    return candidates[-1] if candidates and opset <= LATEST_OPSET else None


def is_known(layer: Any) -> bool:
    """Whether `layer` (an ir.Layer) has a schema row. An unknown layer (a type, or a version of a type, this
    table lacks) is read and written as it stands: its attrs are the raw strings of its <data> element in file
    order, its ports and declared dims are kept, and shape inference trusts its declared output ports. `run` and
    `convert` refuse it (`refuse_unknown_layers`)."""
    return known_op_version(layer.type, layer.version) is not None


def unknown_layer_types(layers: Any, handled: Callable[[Any], bool] | None = None) -> dict[str, int]:
    """"Type-version" -> how many layers of it, in first-seen order, for the layers among `layers` that are
    unknown, or (with `handled`, a caller's predicate such as "has an executor") known but not handled."""
    counts: dict[str, int] = {}
    for layer in layers:
        if not is_known(layer) or (handled is not None and not handled(layer)):
            key = f"{layer.type}-{layer.version}"
            counts[key] = counts.get(key, 0) + 1
    return counts


def refuse_unknown_layers(layers: Any, file: str | None = None, handled: Callable[[Any], bool] | None = None) -> None:
    """Raise one UnsupportedError listing every unknown (or unhandled) layer type once, with its count:
    "unsupported layer types: Foo-opset3 (2 layers), Bar-opset1". (The supported list, 70 types and growing, is
    the README's; in a message it buried the few names that matter.)"""
    counts = unknown_layer_types(layers, handled)
    if counts:
        listed = ", ".join(key if n == 1 else f"{key} ({n} layers)" for key, n in counts.items())
        raise UnsupportedError(f"unsupported layer types: {listed}", file=file)


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

    Raises UsageError naming the attribute; callers locate it at the file and layer. An unknown
    attribute is named before any value is parsed.
    """
    _refuse_unknown(schema, raw)
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
    """Check typed attributes (from a file or from the builder) against the schema and its value check; fill
    defaults.

    Returns a new dict in schema order. Raises UsageError naming the attribute and what is allowed.
    """
    _refuse_unknown(schema, attrs)
    values: dict[str, Any] = {}
    for attr in schema.attrs:
        if attr.name in attrs:
            values[attr.name] = attr.coerce(attrs[attr.name])
        elif attr.required:
            raise UsageError(f"required attribute {attr.name!r} of {schema.label} is missing")
    for attr in schema.attrs:  # defaults may depend on other attributes (dilations on kernel)
        if attr.name not in values:
            values[attr.name] = attr.coerce(attr.default_for(values))
    result: dict[str, Any] = {}
    for attr in schema.attrs:
        value = values[attr.name]
        if attr.choices is not None and value not in attr.choices:
            raise UsageError(f"attribute {attr.name!r} = {value!r} is not allowed in {schema.label} "
                             f"(allowed: {', '.join(attr.choices)})")
        result[attr.name] = value
    if schema.value_check is not None:
        schema.value_check(result)
    return result


def _refuse_unknown(schema: OpVersion, names: dict[str, Any]) -> None:
    known = {attr.name for attr in schema.attrs}
    unknown = [name for name in names if name not in known]
    if unknown:
        allowed = ", ".join(sorted(known)) or "none"
        raise UsageError(f"attribute {unknown[0]!r} is not an attribute of {schema.label} (allowed: {allowed})")


def format_attrs(schema: OpVersion, attrs: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, text) pairs in schema order, for the writer."""
    return [(attr.name, attr.kind.format(attrs[attr.name])) for attr in schema.attrs if attr.name in attrs]
