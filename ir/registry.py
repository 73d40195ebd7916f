"""The registries operator families fill, and the import-time checks that they agree.

Each family module (ir/ops/<family>.py) declares two facts per layer type:

    SCHEMA_ROWS: tuple[OpVersion, ...]     one row per op version (ir.attributes)
    SHAPE_RULES = ShapeRules()             filled by  @SHAPE_RULES.register("AvgPool", "MaxPool")

ir/ops/__init__.py collects every family's rows with `index_schema_rows` and rules with
`merge_shape_rules`, then `check_coverage` demands a rule for every type with a schema and a schema
for every type with a rule. Each of these raises `RegistryError`, naming the layer type, at import:
a duplicate or missing entry is a bug in poolir, never the user's.
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator, Mapping, TypeVar

from poolir.ir.attributes import OpVersion
from poolir.ir.model import Layer
from poolir.ir.shapes import TensorInfo

# A shape rule: the output infos of one layer from its input infos (the port count already checked).
# Raises PoolirError, unlocated; the driver (ir.infer) locates it at the file and layer.
ShapeRule = Callable[[Layer, list[TensorInfo]], list[TensorInfo]]
Key = TypeVar("Key")
Value = TypeVar("Value")


class RegistryError(RuntimeError):
    """Two registrations of one key, or a layer type with a schema but no shape rule (or the reverse)."""


def _add_once(table: dict[Key, Value], key: Key, value: Value, what: str) -> None:
    if key in table:
        raise RegistryError(f"duplicate {what} {key}")
    table[key] = value


class ShapeRules(Mapping[str, ShapeRule]):
    """One family's shape rules by layer type; registering a type twice raises RegistryError."""

    def __init__(self) -> None:
        self._rules: dict[str, ShapeRule] = {}

    def register(self, *layer_types: str) -> Callable[[ShapeRule], ShapeRule]:
        """Decorator: the function is the shape rule of each of `layer_types`."""
        def decorate(rule: ShapeRule) -> ShapeRule:
            for layer_type in layer_types:
                _add_once(self._rules, layer_type, rule, "shape rule for")
            return rule
        return decorate

    def __getitem__(self, layer_type: str) -> ShapeRule:
        return self._rules[layer_type]

    def __iter__(self) -> Iterator[str]:
        return iter(self._rules)

    def __len__(self) -> int:
        return len(self._rules)


def index_schema_rows(rows: Iterable[OpVersion]) -> dict[str, tuple[OpVersion, ...]]:
    """Layer type -> its op versions, oldest first; a second row for one (type, since) raises RegistryError."""
    by_label: dict[str, OpVersion] = {}
    for row in rows:
        _add_once(by_label, row.label, row, "schema row")
    table: dict[str, list[OpVersion]] = {}
    for row in by_label.values():
        table.setdefault(row.type, []).append(row)
    return {name: tuple(sorted(versions, key=lambda v: v.since)) for name, versions in table.items()}


def merge_shape_rules(families: Iterable[Mapping[str, ShapeRule]]) -> dict[str, ShapeRule]:
    """One table of every family's rules; a layer type with rules in two families raises RegistryError."""
    merged: dict[str, ShapeRule] = {}
    for rules in families:
        for layer_type, rule in rules.items():
            _add_once(merged, layer_type, rule, "shape rule for")
    return merged


def check_coverage(schemas: Mapping[str, object], rules: Mapping[str, ShapeRule]) -> None:
    """Raise RegistryError naming every layer type with a schema but no shape rule, or a rule but no schema."""
    problems = []
    if missing := sorted(set(schemas) - set(rules)):
        problems.append(f"no shape rule for {', '.join(missing)}")
    if orphans := sorted(set(rules) - set(schemas)):
        problems.append(f"a shape rule but no schema for {', '.join(orphans)}")
    if problems:
        raise RegistryError("; ".join(problems))
