"""The one way poolir loads an ONNX model and resolves what it imports: used by run, convert, inspect and verify.

- `load_onnx(path)` reads and decodes the file (and, with check=True, runs onnx.checker leniently: check_onnx);
- `default_opset(model)` is the opset of the default domain, refused when poolir's tables do not know it;
- `refuse_unsupported(model, opset, supports)` raises one error listing every node a consumer (the
  executor, the converter) cannot handle, each op once, in one wording.
"""

from __future__ import annotations

import heapq
import math
import os
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
from onnx import numpy_helper

from poolir.ir.errors import InvalidModelError, PoolirError, UnsupportedError, UsageError, node_label, printable
from poolir.ir.files import read_regular
from poolir.ir.ops.matmul import parse_einsum
from poolir.runtime.onnx_external_data import load_external_data
from poolir.runtime.onnx_functions import check_functions
from poolir.runtime.onnx_ops.element_types import onnx_dtype
from poolir.runtime.onnx_opsets import DEFAULT_DOMAINS, imported_opsets
from poolir.runtime.onnx_subgraphs import nested_nodes, node_reads

# The newest default-domain opset whose operator versions poolir's tables were checked against (onnx 1.23).
# A newer opset may redefine an op without poolir noticing, so it is refused.
MAX_OPSET = 28


def load_onnx(path: str | os.PathLike, *, check: bool = False, warn: Callable[[str], None] | None = None):
    """Read and decode an .onnx file. A missing, unreadable or malformed file raises a PoolirError.

    check=True also runs onnx.checker (convert and inspect), leniently (check_onnx): a finding that does not
    change the model's meaning is told to `warn`, naming the value; one that does is an InvalidModelError.
    Running (run, verify, Session) does not check: the executor validates every node it runs itself."""
    path = Path(path)
    data = read_regular(path)
    if not data:
        raise InvalidModelError("the file is empty", file=path)
    try:
        model = onnx.load_model_from_string(data)
    except Exception as error:  # protobuf's DecodeError and friends: a malformed file
        raise InvalidModelError(f"not a readable ONNX model ({type(error).__name__}: {error})", file=path) from None
    # Tensors stored in another file are loaded now, from the model's own folder only (never the current one).
    load_external_data(model, path.parent, source=path)
    if model.ir_version > onnx.IR_VERSION:  # a newer format may mean other things; onnx's checker refuses it too
        raise UnsupportedError(f"ONNX IR version {model.ir_version} is newer than this onnx package reads "
                               f"({onnx.IR_VERSION})", file=path)
    check_graph_names(model, path)
    try:
        imported_opsets(model)
        check_functions(model)
    except PoolirError as error:
        raise error.located(file=path) from None
    model, moved = in_dependency_order(model, path)  # one reading of node order for every command
    if check:
        for finding in ([moved] if moved else []) + check_onnx(model, path):
            if warn is not None:
                warn(finding)
    return model


def check_onnx(model, source: str | os.PathLike | None = None) -> list[str]:
    """Run onnx.checker as onnxruntime reads a model: return the findings that leave the meaning unchanged
    (warnings naming the value), raise InvalidModelError for the rest.

    onnx 1.23's checker requires every graph input, output and value_info to declare an element type and
    a shape. A declaration is a claim that the graph's nodes decide anyway (onnxruntime runs a model whose
    outputs declare no shape), so a missing or incomplete one is a warning: the value is read as unknown.
    An input without an element type is an error (nothing says what to feed)."""
    findings: list[str] = []
    try:
        onnx.checker.check_model(model)
        return findings
    except (onnx.checker.ValidationError, ValueError) as error:  # ValueError: a string field that is not UTF-8
        first_error = error
    relaxed = onnx.ModelProto()
    relaxed.CopyFrom(model)
    graph = relaxed.graph
    relaxed, moved = in_dependency_order(relaxed, source)
    graph = relaxed.graph
    if moved is not None:
        findings.append(moved)
    for kind, values in (("input", graph.input), ("output", graph.output), ("value", graph.value_info)):
        for value in values:
            tensor = value.type.tensor_type
            if value.type.WhichOneof("value") not in (None, "tensor_type"):
                continue
            missing = []
            if not tensor.elem_type and kind != "input":
                missing.append("element type")
                tensor.elem_type = onnx.TensorProto.FLOAT  # only for the check: the claim is ignored
            if not tensor.HasField("shape"):
                missing.append("shape")
                tensor.shape.SetInParent()
            if missing:
                findings.append(f"{kind} '{printable(value.name)}' declares no {' and no '.join(missing)}; "
                                "read as unknown")
    try:
        onnx.checker.check_model(relaxed)
    except (onnx.checker.ValidationError, ValueError) as error:
        # What is left once the forgiven findings are relaxed (the first error may be one of those).
        text = str(error).strip() or str(first_error).strip()
        first_line = text.splitlines()[0] if text else "invalid"
        raise InvalidModelError(f"invalid ONNX model: {first_line}", file=source) from None
    return findings


def order_nodes(graph, available: set, source: str | os.PathLike | None = None) -> list[tuple[int, object]]:
    """(file index, node) in an order where every input is produced before it is read: the one reading of node
    order for every command (run, verify, convert, inspect). `available`: the names known before any node
    (initializers, graph inputs, "" for an omitted optional input); a dangling input or a cycle is an
    InvalidModelError naming the node.

    ONNX requires the file order to be topological (onnx.checker refuses another); onnxruntime and OpenVINO
    read any order in dependency order, and so does poolir (convert and inspect warn). Kahn's algorithm, the
    ready node earliest in the file first, so a sorted graph keeps its order: linear in the graph's size up to
    the heap's log, whatever the file order."""
    available = set(available)
    nodes = list(graph.node)
    waiting = [0] * len(nodes)
    consumers: dict[str, list[int]] = {}
    for index, node in enumerate(nodes):
        missing = {name for name in node_reads(node) if name not in available}
        waiting[index] = len(missing)
        for name in missing:
            consumers.setdefault(name, []).append(index)
    ready = [index for index, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    ordered = []
    while ready:
        index = heapq.heappop(ready)
        node = nodes[index]
        ordered.append((index, node))
        for name in node.output:
            if name in available:
                continue
            available.add(name)
            for consumer in consumers.pop(name, ()):
                waiting[consumer] -= 1
                if waiting[consumer] == 0:
                    heapq.heappush(ready, consumer)
    if len(ordered) != len(nodes):
        done = {index for index, _ in ordered}
        remaining = [index for index in range(len(nodes)) if index not in done]
        index, node = remaining[0], nodes[remaining[0]]
        missing = [name for name in node_reads(node) if name not in available]
        produced_later = {out for i in remaining for out in nodes[i].output}
        problem = ("is part of a cycle" if all(m in produced_later for m in missing)
                   else "is produced by no node, initializer or graph input")
        raise InvalidModelError(f"input '{printable(missing[0])}' {problem}", file=source,
                                where=node_label(node.name or f"#{index}", node.op_type))
    return ordered


def in_dependency_order(model, source: str | os.PathLike | None = None):
    """(model, None) when its nodes are in topological order, else (a copy with them in dependency order
    (order_nodes), a one-line finding naming the first node that was listed too late)."""
    graph = model.graph
    available = {"", *(init.name for init in graph.initializer), *(value.name for value in graph.input)}
    ordered = order_nodes(graph, available, source)  # a cycle or a dangling input: an error naming the node
    moved = next(((index, node) for position, (index, node) in enumerate(ordered) if index != position), None)
    if moved is None:
        return model, None
    index, node = moved
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    del copy.graph.node[:]
    copy.graph.node.extend(node for _, node in ordered)
    label = node_label(node.name or f"#{index}", node.op_type)
    return copy, (f"the nodes are not in topological order, as ONNX requires ({label} is listed after a node that "
                  "reads its output); read in dependency order, as onnxruntime and OpenVINO do")


def declared_output_types(graph) -> dict[str, np.dtype]:
    """Graph output name -> the numpy dtype it declares (outputs declaring none, or a type numpy cannot hold, are
    left out): what a run and a conversion must give it, as onnxruntime's type inference requires."""
    declared = {}
    for value in graph.output:
        tensor = value.type.tensor_type if value.type.HasField("tensor_type") else None
        if tensor is not None and tensor.elem_type:
            try:
                declared[value.name] = onnx_dtype(tensor.elem_type)
            except UsageError:
                continue
    return declared


def check_graph_names(model, source=None) -> None:
    """One reading for every command: graph input and output names are non-empty text and unique (onnx.checker,
    which only convert and inspect run, refuses the same)."""
    graph = model.graph
    for what, values in (("input", graph.input), ("output", graph.output)):
        seen: set = set()
        for value in values:
            if isinstance(value.name, bytes):
                raise InvalidModelError(f"a graph {what} name {printable(value.name)!r} is not valid UTF-8 text",
                                        file=source)
            if not value.name:  # "" is ONNX's name for an omitted optional input, never a graph's value
                raise InvalidModelError(f"a graph {what} has an empty name", file=source)
            if value.name in seen:
                raise InvalidModelError(f"two graph {what}s are named '{printable(value.name)}'", file=source)
            seen.add(value.name)


def default_opset(model, source: str | os.PathLike | None = None) -> int:
    """The default-domain opset the model imports; raises when absent or newer than MAX_OPSET."""
    opset = imported_opsets(model).get("")
    if opset is None:
        raise InvalidModelError("the model imports no opset for the default ONNX domain (ai.onnx)", file=source)
    if opset > MAX_OPSET:
        raise UnsupportedError(f"opset {opset} is newer than the newest opset poolir knows ({MAX_OPSET})",
                               file=source)
    return opset


def refuse_unsupported(model, opset: int, supports: Callable[[str], bool],
                       first_opset: Callable[[str], int | None] = lambda op_type: None, *,
                       source: str | os.PathLike | None = None, doing: str = "") -> None:
    """Raise one UnsupportedError listing every op of the graph's nodes that `supports(op_type)` rejects.

    Each op appears once: `Conv (ai.onnx, opset 9, 26 nodes)`, plus `; supported from opset N` when
    `first_opset(op_type)` says a newer opset would do. A node outside the default domain is never
    supported. `doing` prefixes the message ("cannot convert: ").
    """
    opsets = imported_opsets(model)
    counts: dict[tuple[str, str, int], int] = {}
    for node in nested_nodes(model.graph):  # the nodes of an If's branches too
        in_default = (node.domain or "") in DEFAULT_DOMAINS
        if in_default and supports(node.op_type):
            continue
        domain = "ai.onnx" if in_default else node.domain
        key = (node.op_type, domain, opset if in_default else opsets.get(node.domain, 0))
        counts[key] = counts.get(key, 0) + 1
    if not counts:
        return
    described = []
    for (op_type, domain, version), count in counts.items():
        first = first_opset(op_type) if domain == "ai.onnx" else None
        later = f"; supported from opset {first}" if first is not None and first > version else ""
        nodes = f", {count} nodes" if count > 1 else ""
        described.append(f"{op_type} ({domain}, opset {version}{nodes}{later})")
    raise UnsupportedError(f"{doing}unsupported operators: {', '.join(described)}", file=source)


def shape_inference_hazard(model) -> str | None:
    """Why onnx.shape_inference.infer_shapes would never return on `model`, or None: onnx 1.23's Einsum inference
    loops forever on a '.' outside an ellipsis ('i.j', '..ij') and on a '-' that does not start '->' ('ij-',
    'ij-->i'). So a model holding an Einsum equation poolir refuses is not inferred; the message names the node
    and poolir's own reading of the problem (ir.ops.matmul.parse_einsum)."""
    for index, node in enumerate(model.graph.node):
        if node.op_type == "Einsum" and node.domain in DEFAULT_DOMAINS:
            for attribute in node.attribute:
                if attribute.name == "equation":
                    try:
                        parse_einsum(attribute.s.decode("utf-8", errors="replace"), "onnx")
                    except PoolirError as error:
                        return f"{node_label(node.name or f'#{index}', node.op_type)}: {error.problem}"
    return None


# onnx.shape_inference's data_prop computes the values of shape computations (Shape, then these ops) as lists of
# dims. A Reshape of such a value to a constant [n] makes n dims, in quadratic time (n = 10**6: 14 s and 480 MB;
# a hostile 2**31 - 1: 22 GB), and a broadcast with a large constant as many: SHAPE_DATA_LIMIT bounds both (a
# shape has at most 32 dims). Slice's bounds are left out: INT64_MAX is the usual "to the end".
_DATA_PROPAGATING = ("Add", "Sub", "Mul", "Div", "Cast", "Concat", "Gather", "Reshape", "Squeeze", "Unsqueeze",
                     "Identity", "Slice")
SHAPE_DATA_LIMIT = 64


def data_propagation_is_bounded(model) -> bool:
    """Whether onnx.shape_inference.infer_shapes(model, data_prop=True) only builds small shape values: no shape
    computation reads a constant of more than SHAPE_DATA_LIMIT elements, and every Reshape of a shape value has a
    constant target of at most SHAPE_DATA_LIMIT elements. When not, infer without data_prop."""
    graph = model.graph
    constants = {init.name: init for init in graph.initializer}
    constants.update((node.output[0], attribute.t) for node in graph.node if node.op_type == "Constant"
                     and len(node.output) for attribute in node.attribute if attribute.name == "value")
    shape_values: set[str] = set()
    for node in graph.node:
        if node.op_type in ("Shape", "Size"):
            shape_values.update(node.output)
            continue
        if node.op_type not in _DATA_PROPAGATING or not any(name in shape_values for name in node.input):
            continue
        reads = node.input[:1] if node.op_type == "Slice" else node.input
        if any(name in constants and math.prod(constants[name].dims) > SHAPE_DATA_LIMIT for name in reads):
            return False
        if node.op_type == "Reshape" and node.input[0] in shape_values:
            if len(node.input) < 2 or node.input[1] not in constants:
                return False
            try:
                target = np.asarray(numpy_helper.to_array(constants[node.input[1]]), np.float64)
            except Exception:  # an unreadable constant: not for data_prop to decode
                return False
            if np.prod(target[target > 0]) > SHAPE_DATA_LIMIT:
                return False
        shape_values.update(node.output)
    return True
