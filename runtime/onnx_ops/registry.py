"""The ONNX operator table: one version table per op, one attribute normaliser, one adapter registry.

Version differences are data. For each operator, `OP_VERSIONS` lists behaviour rows by the version
that introduced them (`since`); a model importing opset N uses the latest row with since <= N. A row
gives the allowed attributes (kind, default, required) and the element types allowed for the main input.
`normalize_attributes` is the one place that reads an ONNX node's attributes: unknown attribute for that
version, wrong kind, missing required attribute -> an error naming the node.

Each family module (pooling, elementwise, movement, reduction) `define`s its ops' rows and registers
their `adapter`s; the package checks at import that both registries name the same ops
(`check_adapters_match_tables`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import onnx
from onnx import numpy_helper

from poolir.ir.errors import UsageError

INT, INTS, FLOAT, FLOATS, STRING, STRINGS, TENSOR, SPARSE, GRAPH = (
    "int", "ints", "float", "floats", "string", "strings", "tensor", "sparse_tensor", "graph")

_PROTO_KINDS = {
    onnx.AttributeProto.INT: INT, onnx.AttributeProto.INTS: INTS, onnx.AttributeProto.FLOAT: FLOAT,
    onnx.AttributeProto.FLOATS: FLOATS, onnx.AttributeProto.STRING: STRING,
    onnx.AttributeProto.STRINGS: STRINGS, onnx.AttributeProto.TENSOR: TENSOR,
    onnx.AttributeProto.SPARSE_TENSOR: SPARSE, onnx.AttributeProto.GRAPH: GRAPH,
}


@dataclass(frozen=True, slots=True)
class Attribute:
    """One attribute of one op version: its kind, default (None: absent unless given) and whether required."""

    kind: str
    default: Any = None
    required: bool = False


REMOVED = Attribute("removed")  # in a row's changes: the attribute no longer exists from this version


@dataclass(frozen=True, slots=True)
class OnnxOpVersion:
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


OP_VERSIONS: dict[str, tuple[OnnxOpVersion, ...]] = {}


def define(op_type: str, rows: Sequence[tuple], *, dtypes: frozenset | None = None, max_outputs: int = 1) -> None:
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
        versions.append(OnnxOpVersion(op_type, since, dict(attributes), dtypes, max_outputs))
    OP_VERSIONS[op_type] = tuple(versions)


def arity_problem(label: str, low: int, high: int | None, count: int) -> str | None:
    """The one wording of a node with too few or too many inputs (`Clip-13 takes 1 to 3 inputs, got 4`), or None;
    `high` None: any number from `low`. Asked by the runtime's planner and the ONNX -> IR converter alike."""
    if low <= count and (high is None or count <= high):
        return None
    expected = str(low) if low == high else f"{low} to {high}" if high is not None else f"at least {low}"
    return f"{label} takes {expected} input{'' if expected == '1' else 's'}, got {count}"


def op_version(op_type: str, opset: int) -> OnnxOpVersion | None:
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
    if kind == GRAPH:
        return kind, attribute.g
    return kind, attribute


def normalize_attributes(node: onnx.NodeProto, version: OnnxOpVersion) -> dict[str, Any]:
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


@dataclass(slots=True)
class NodeContext:
    """What an adapter may know about its node at planning time."""

    node: onnx.NodeProto
    version: OnnxOpVersion
    attrs: dict[str, Any]
    label: str  # node_label(...) for messages
    input_types: list[np.dtype | None]  # per input, None when unknown before running
    input_shapes: list[tuple[int | None, ...] | None]
    constants: list[np.ndarray | None]  # per input: its value when it is an initializer or a Constant
    output_count: int
    # Runs a subgraph (an If's branch) with the outer values it reads: given by the program that plans the node.
    run_graph: Callable[[onnx.GraphProto, dict[str, np.ndarray]], dict[str, np.ndarray]] | None = None


Step = Callable[..., tuple]
ADAPTERS: dict[str, Callable[[NodeContext], Step]] = {}


def adapter(*op_types: str):
    """Register the planning function of one or more op types; a duplicate fails at import time."""
    def register(function):
        for op_type in op_types:
            if op_type in ADAPTERS:
                raise RuntimeError(f"an adapter for ONNX op {op_type} is registered twice")
            ADAPTERS[op_type] = function
        return function
    return register


def check_adapters_match_tables(tables: Mapping[str, Any], adapters: Mapping[str, Any]) -> None:
    """Every op with a version table has an adapter, and every adapter has a version table.

    Called when the package is imported, so a forgotten adapter or table is an import error naming the op.
    """
    without_adapter = sorted(set(tables) - set(adapters))
    if without_adapter:
        raise RuntimeError(f"ONNX ops with a version table but no adapter: {', '.join(without_adapter)}")
    without_table = sorted(set(adapters) - set(tables))
    if without_table:
        raise RuntimeError(f"ONNX ops with an adapter but no version table: {', '.join(without_table)}")


def int_values(array) -> list[int]:
    """A tensor input (pads, axes, a shape, ...) as a list of Python ints."""
    return [int(v) for v in np.asarray(array).reshape(-1)]


__all__ = ["ADAPTERS", "Attribute", "FLOAT", "FLOATS", "INT", "INTS", "NodeContext", "OP_VERSIONS", "OnnxOpVersion",
           "REMOVED", "SPARSE", "STRING", "STRINGS", "Step", "TENSOR", "adapter", "attribute_value",
           "check_adapters_match_tables", "define", "first_opset", "first_opset_with", "int_values",
           "normalize_attributes", "op_version"]
