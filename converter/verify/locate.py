"""Where a path diverges: the first node, in the reference's topological order, whose output differs.

    location = locate(reference_probe, reference_model, "openvino(onnx)", path_probe, feeds, options)
    location.divergence.node, .op, .attributes, .tensor, .max_abs_error, ...

The method, for every engine alike: the path is asked for intermediate tensors *by name*, marked as extra
outputs (onnxruntime: extra graph outputs; OpenVINO: Model.add_outputs; poolir's runtime: Session.run's
`observe`), and each is compared with the reference's tensor of the same name as the reference computes it,
in the reference's topological order. The first tensor that differs is reported with the node that produces
it in the reference graph. Every earlier tensor the path exposes agreed, so every input of that node that the
path exposes agrees: the divergence is pinned to the node that causes it, not to the ones it propagates to.
Names are what both worlds keep: OpenVINO's ONNX frontend keeps ONNX tensor names on its ports, and so does
poolir's converter (GraphBuilder.name_tensor), and IR -> ONNX keeps IR port names.

Why not single-node subgraphs fed with the reference's inputs: a conversion does not map one node to one node
(OpenVINO fuses Conv+Add+ReLU and folds constants, poolir writes one ONNX node as several IR layers), so a
reference node often has no single counterpart to feed in the path's world, while the tensor between two
nodes keeps its name; and compiling an engine session per node costs more than running the whole network a
few times. What this gives up: a node an engine fused away exposes no tensor. Then the first diverging tensor
the path does expose is reported, with the inputs of its node the path did not expose (`unobserved_inputs`),
so a reader knows the cause may sit just before it. Upstream differences of summation order reach the node
with its inputs, but they stay inside the scaled tolerance (compare.py) that judges every tensor.

Only the tensors a diverging model output depends on are searched: a tensor no such output reads (the mask of
an inference Dropout, an output that agrees) may differ without being the cause.

A node can also diverge without computing anything differently: an ill-conditioned node (a Softmax over logits
of 1e10, a constant-weight network's) turns upstream differences of summation order, inside the tolerance,
into a large one. So when every input of the diverging node agreed, poolir recomputes that node from the
path's own input tensors (ONNX references; node_recompute.py): if that gives the path's output, the node is
reported as amplifying (`Divergence.amplified`), and the cause is upstream rounding, not the node.

Memory stays bounded: the reference is streamed node by node (the runtime frees each tensor after its last
use, `observe` sees it before), and the path is asked for the tensors in chunks of at most CHUNK_BYTES (from a
first, recording pass of the reference), one run per chunk; a chunk's tensors are dropped as they are compared,
and the search stops at the first divergence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import onnx

from poolir import runtime
from poolir.converter.verify.compare import COMPUTED_AS, Mismatch, ToleranceOptions, compare, tolerance_for
from poolir.converter.verify.node_recompute import recompute
from poolir.ir.budget import max_memory
from poolir.ir.model import observed_port_names
from poolir.runtime import onnx_ops
from poolir.runtime.onnx_model import default_opset

# The most bytes of a path's intermediate tensors held at once (a quarter of the memory budget when smaller):
# ResNet-50's intermediates at batch 1 are about 200 MB in all, so it takes one or two runs.
CHUNK_BYTES = 256 * 2**20
ATTRIBUTE_TEXT_LIMIT = 120  # an attribute value longer than this (a big tensor, a long list) is shortened


class Probe:
    """How to look inside a path: the tensor names it exposes, and their values for given names."""

    def __init__(self, names: Callable[[], set[str]], tensors: Callable[[Sequence[str]], dict[str, np.ndarray]]):
        self.names = names
        self.tensors = tensors


class _Collected(Exception):
    """Raised from `observe` to end a run early: everything asked for has been seen."""


class _RuntimeProbe(Probe):
    """poolir's runtime on one model, intermediate tensors through Session.run's `observe`. Only the reference
    keeps its Session (`keep=True`: the search runs it several times); a path's Session is planned for each
    use and dropped, so a verify does not hold the weights of every path's plan at once."""

    def __init__(self, get_model: Callable[[], Any], feeds: Mapping[str, np.ndarray] | None, keep: bool):
        self._get_model, self._feeds, self._keep, self._session = get_model, feeds, keep, None
        super().__init__(lambda: set(graph_nodes(self._get_model())), self._tensors)

    def session(self) -> runtime.Session:
        if self._session is not None:
            return self._session
        # Unfused: a path of poolir's runtime exposes every tensor, and computes every node as written.
        session = runtime.Session(self._get_model(), fuse=False)
        if self._keep:
            self._session = session
        return session

    def _tensors(self, wanted: Sequence[str]) -> dict[str, np.ndarray]:
        wanted, got = set(wanted), {}

        def observe(name: str, value: np.ndarray) -> None:
            if name in wanted:
                got[name] = value
                if len(got) == len(wanted):
                    raise _Collected

        try:
            self.session().run(self._feeds, observe)
        except _Collected:
            pass
        return got


def runtime_probe(get_model: Callable[[], Any], feeds: Mapping[str, np.ndarray] | None = None,
                  keep: bool = False) -> _RuntimeProbe:
    return _RuntimeProbe(get_model, feeds, keep)


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """A node of the reference graph (an ONNX node or an IR layer), as a located divergence names it."""

    name: str
    op: str  # the ONNX op version ("AveragePool-11"), or IR type-version ("AvgPool-opset1")
    attributes: dict[str, Any]
    inputs: tuple[str, ...]  # tensor names ("" for an omitted optional input or an unnamed IR port)
    # the nearest named tensors the node is computed from: its inputs, or for an unnamed IR port (OpenVINO names
    # few; IR v10 none) the named tensors behind it, so that the search still reaches what lies upstream
    upstream: tuple[str, ...] = ()


def graph_nodes(model) -> dict[str, NodeInfo]:
    """Tensor name -> the node that computes it, for the tensors poolir's runtime computes (and `observe`
    reports): ONNX node outputs except Constant nodes' (folded before any run); IR ports of every layer but
    Parameter, Const and Result, by each of their names."""
    nodes: dict[str, NodeInfo] = {}
    if isinstance(model, onnx.ModelProto):
        opset = default_opset(model)
        for index, node in enumerate(model.graph.node):
            if node.op_type == "Constant":
                continue
            version = onnx_ops.op_version(node.op_type, opset) if not node.domain else None
            info = NodeInfo(node.name or f"#{index}", version.label if version is not None else node.op_type,
                            {a.name: _attribute_text(onnx.helper.get_attribute_value(a)) for a in node.attribute},
                            tuple(node.input), tuple(node.input))
            nodes.update((name, info) for name in node.output if name)
        return nodes
    producers = {(edge.to_layer, edge.to_port): (edge.from_layer, edge.from_port) for edge in model.edges}
    layers = {layer.id: layer for layer in model.layers}
    observed = observed_port_names(model)  # an unnamed port by its layer's name, as a run reports it

    def names_of(layer_id: int, port_id: int) -> tuple[str, ...]:
        return observed.get((layer_id, port_id), ())

    upstream = _named_upstream(model.layers, layers, producers, names_of)
    for layer in model.layers:
        if layer.type in ("Parameter", "Const", "Result"):
            continue
        inputs = []
        for port in layer.inputs:
            source = producers.get((layer.id, port.id))
            names = names_of(*source) if source else ()
            inputs.append(names[0] if names else "")
        info = NodeInfo(layer.name, f"{layer.type}-{layer.version}",
                        {k: _attribute_text(v) for k, v in layer.attrs.items()}, tuple(inputs), upstream[layer.id])
        nodes.update((name, info) for port in layer.outputs for name in names_of(layer.id, port.id))
    return nodes


def _named_upstream(ordered, layers, producers, names_of) -> dict[int, tuple[str, ...]]:
    """Layer id -> the nearest named tensors its inputs are computed from (an input's own name when its port
    has one, else what its producer's inputs are computed from). Iterative: an unnamed chain is as long as the
    network (IR v10 names nothing)."""
    found: dict[int, tuple[str, ...]] = {}

    def sources(layer_id: int) -> list[tuple[int, int]]:
        return [s for s in (producers.get((layer_id, port.id)) for port in layers[layer_id].inputs) if s]

    for start in ordered:
        stack, entered = [start.id], set()
        while stack:
            layer_id = stack[-1]
            if layer_id in found:
                stack.pop()
                continue
            unnamed = [source for source, port in sources(layer_id) if not names_of(source, port)
                       and source not in found and source not in entered]  # `entered`: a cycle ends here
            if unnamed and layer_id not in entered:
                entered.add(layer_id)
                stack.extend(unnamed)
                continue
            stack.pop()
            names: dict[str, None] = {}
            for source, port in sources(layer_id):
                own = names_of(source, port)
                names.update(dict.fromkeys(own[:1] if own else found.get(source, ())))
            found[layer_id] = tuple(names)
    return found


def _attribute_text(value: Any) -> Any:
    """An attribute as JSON can hold it: numbers, strings and lists as they are, anything else as short text."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, (list, tuple)):
        items = [_attribute_text(v) for v in value]
        return items if len(str(items)) <= ATTRIBUTE_TEXT_LIMIT else f"{len(items)} values"
    if isinstance(value, (bool, int, float)) or value is None:
        return value
    if isinstance(value, onnx.TensorProto):
        return f"tensor {list(value.dims)}"
    text = str(value)
    return text if len(text) <= ATTRIBUTE_TEXT_LIMIT else text[:ATTRIBUTE_TEXT_LIMIT] + "..."


@dataclass(slots=True)
class Divergence:
    """The first node whose output differs on a path, with the error figures of that tensor."""

    node: str
    op: str
    attributes: dict[str, Any]
    tensor: str  # the diverging output tensor of `node`
    inputs: list[str]
    unobserved_inputs: list[str]  # inputs computed by nodes whose tensors the path does not expose
    shape: tuple[int, ...] | None
    expected_shape: tuple[int, ...] | None
    max_abs_error: float | None
    max_rel_error: float | None
    mismatched: int
    size: int
    first_mismatch: Mismatch | None
    tolerance: str
    detail: str | None
    # True: poolir's own kernel, fed the path's input tensors, computes the path's output (within tolerance), so
    # the node amplifies differences that agree at its inputs; None: not checked (see node_recompute.py)
    amplified: bool | None = None


@dataclass(slots=True)
class Location:
    """The search on one path: what diverged first, or how much was compared without a divergence."""

    path: str
    divergence: Divergence | None = None
    compared: int = 0  # tensors compared and found to agree before the divergence (or in all)
    exposed: int = 0  # reference tensors the path exposes by name
    tensors: int = 0  # tensors the reference computes
    runs: int = 0  # runs of the path it took
    first_output: str | None = None  # the first diverging model output, in the reference's output order
    note: str | None = None


class _Found(Exception):
    pass


def locate(reference: _RuntimeProbe, reference_model, path: str, probe: Probe, feeds: Mapping[str, np.ndarray],
           options: ToleranceOptions = ToleranceOptions(),
           step: Callable[[str], None] | None = None, outputs: Sequence[str] = ()) -> Location:
    """Find the first node of `reference_model` (run by `reference`, poolir's runtime) whose output differs on
    the path `path` (seen through `probe`), among the tensors the model outputs `outputs` (all when empty)
    depend on. See the module docstring."""
    nodes = graph_nodes(reference_model)
    order: list[tuple[str, int]] = []  # the reference's tensors in execution order, with their sizes
    reference.session().run(feeds, lambda name, value: order.append((name, np.asarray(value).nbytes)))
    exposed = probe.names()
    relevant = _ancestors(nodes, outputs)
    wanted = [(name, size) for name, size in order
              if name in exposed and name in nodes and (relevant is None or name in relevant)]
    location = Location(path, exposed=len(wanted), tensors=len(order))
    if not wanted:
        location.note = "the path exposes none of the reference's tensors by name"
        return location
    budget = min(CHUNK_BYTES, max(1, max_memory() // 4))
    chunks: list[list[str]] = [[]]
    held = 0
    for name, size in wanted:
        if chunks[-1] and held + size > budget:
            chunks.append([])
            held = 0
        chunks[-1].append(name)
        held += size
    engine = path.split("(")[0]
    agreed: set[str] = set()
    for number, chunk in enumerate(chunks, 1):
        if step is not None:
            step(f"{path}: locating ({len(wanted)} tensors" + (f", part {number}/{len(chunks)}" if len(chunks) > 1
                                                                 else "") + ")")
        values = probe.tensors(chunk)
        location.runs += 1
        last = chunk[-1]

        def observe(name: str, expected: np.ndarray) -> None:
            if name in values:
                actual = values.pop(name)
                row = _compare(name, path, actual, np.asarray(expected), engine, options)
                if row.status != "ok":
                    location.divergence = _divergence(name, nodes[name], row, agreed, nodes)
                    if not location.divergence.unobserved_inputs:
                        location.divergence.amplified = _recomputes(name, actual, reference, reference_model,
                                                                    probe, feeds, nodes, engine, options)
                    raise _Found
                agreed.add(name)
                location.compared += 1
            if name == last:
                raise _Collected

        try:
            reference.session().run(feeds, observe)
        except _Found:
            return location
        except _Collected:
            pass
    return location


def _ancestors(nodes: Mapping[str, NodeInfo], outputs: Sequence[str]) -> set[str] | None:
    """The tensors `outputs` are computed from (themselves included), or None (no restriction) when `outputs`
    is empty or names a tensor the reference graph does not compute."""
    if not outputs or any(name not in nodes for name in outputs):
        return None
    seen, pending = set(), list(outputs)
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        node = nodes.get(name)
        if node is not None:
            pending.extend(i for i in node.upstream if i and i not in seen)
    return seen


def _recomputes(name: str, actual, reference: Probe, reference_model, probe: Probe, feeds,
                nodes: Mapping[str, NodeInfo], engine: str, options: ToleranceOptions) -> bool | None:
    """Whether poolir, fed the path's own values of the node's inputs, computes the path's `actual` value of
    tensor `name` (None when that cannot be checked: see node_recompute.recompute)."""
    if not isinstance(reference_model, onnx.ModelProto):
        return None
    computed = [i for i in dict.fromkeys(nodes[name].inputs) if i and i in nodes]
    try:
        inputs = probe.tensors(computed) if computed else {}
        types = {key: value.dtype for key, value in reference.tensors(computed).items()} if computed else {}
    except Exception:  # noqa: BLE001 - a peer failing on a second run: the check is skipped, not the report
        return None
    if set(inputs) != set(computed):
        return None
    # An engine may hold a tensor in another type (OpenVINO's i32 shapes): the node takes the reference's.
    inputs = {key: np.asarray(value).astype(types.get(key, np.asarray(value).dtype), copy=False)
              for key, value in inputs.items()}
    value = recompute(reference_model, name, inputs, feeds)
    if value is None:
        return None
    return _compare(name, "", value, np.asarray(actual), engine, options).status == "ok"


def _compare(name: str, path: str, actual, expected: np.ndarray, engine: str, options: ToleranceOptions):
    actual = np.asarray(actual)
    if actual.shape == expected.shape and actual.dtype != expected.dtype:
        # An engine may keep a tensor in another type (OpenVINO's i32 for i64 shapes, f32 for f64): the values
        # are what is compared here; the model outputs' rows report a dtype difference.
        try:
            actual = actual.astype(expected.dtype)
        except (TypeError, ValueError):
            pass
    computed_as = np.dtype(COMPUTED_AS.get((engine, expected.dtype.name), expected.dtype))
    return compare(name, path, actual, expected, tolerance_for(computed_as, options.rtol, options.atol))


def _divergence(name: str, node: NodeInfo, row, agreed: set[str], nodes: Mapping[str, NodeInfo]) -> Divergence:
    unobserved = [i for i in node.inputs if i and i in nodes and i not in agreed]
    return Divergence(node.name, node.op, dict(node.attributes), name, [i for i in node.inputs if i], unobserved,
                      row.shape, row.expected_shape, row.max_abs_error, row.max_rel_error, row.mismatched,
                      int(np.prod(row.expected_shape)) if row.expected_shape is not None else 0,
                      row.first_mismatch, row.tolerance.describe() if row.tolerance else "-", row.detail)


__all__ = ["CHUNK_BYTES", "Divergence", "Location", "NodeInfo", "Probe", "graph_nodes", "locate", "runtime_probe"]
