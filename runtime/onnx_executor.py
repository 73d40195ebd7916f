"""Executes ONNX graphs with ONNX operator semantics (the attribute readings live in runtime.onnx_ops).

`OnnxProgram(model)` does all the work that does not depend on the feeds, once:
- resolves the default-domain opset and each node's version row; an unsupported op (or domain, or a
  version older than poolir's first row) is an UnsupportedError listing EVERY such node of the model;
- reads initializers and evaluates Constant nodes;
- orders the nodes topologically (a dangling input or a cycle is an InvalidModelError naming the node);
- normalises and validates every node's attributes and binds it to its kernel (runtime.onnx_ops);
  geometry is resolved now when onnx's shape inference knows the input shape, else on the first run
  with a new shape;
- computes when each intermediate value can be released, to keep peak memory low;
- finds the steps whose values depend on the input shapes only (runtime.onnx_shape_values).

`execute(feeds)` then only walks the list of bound steps, skipping the shape-only ones when it has run the same
input shapes before.
"""

from __future__ import annotations

import inspect
import math
from typing import Any, Mapping

import numpy as np
import onnx
from onnx import numpy_helper

from poolir.ir.budget import bytes_in_use
from poolir.ir.errors import (BudgetError, FeedError, InvalidModelError, PoolirError, UnsupportedError, UsageError,
                              node_label)
from poolir.runtime.live_memory import LiveBytes, check_planned_peak, tensor_bytes
from poolir.runtime.onnx_external_data import refuse_external_data
from poolir.runtime.onnx_functions import inline_functions
from poolir.runtime.onnx_fusion import (IN_PLACE, ActivationInPlace, folded_conv_weights, fresh_result,
                                      single_use_outputs)
from poolir.runtime.planned_sizes import check_value_sizes, with_input_shapes
from poolir.runtime.onnx_model import (data_propagation_is_bounded, declared_output_types, default_opset,
                                      in_dependency_order, order_nodes, refuse_unsupported, shape_inference_hazard)
from poolir.runtime.onnx_ops.control_flow import IfStep
from poolir.runtime.onnx_ops.convolution import ConvStep
from poolir.runtime.onnx_ops.element_types import onnx_dtype
from poolir.runtime.onnx_ops.movement import constant_value
from poolir.runtime.onnx_shape_values import MAX_SIGNATURES, ShapeValues
from poolir.runtime.onnx_ops.registry import (ADAPTERS, NodeContext, arity_problem, first_opset, normalize_attributes,
                                             op_version)
from poolir.runtime.program import TensorSpec


def _declared_shape(tensor_type: onnx.TypeProto.Tensor) -> tuple[int | None, ...] | None:
    """A tensor type's dims (None for a dim without a value), or None when it declares no shape."""
    if not tensor_type.HasField("shape"):
        return None
    return tuple(d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim)


# Initializers with more elements than this are given to shape inference as typed inputs, not as data: their
# values never decide a shape, and inference copies (and serialises) every initializer it is given, which
# made planning a ResNet-50 peak at 6x its weights.
_INFERENCE_INITIALIZER_LIMIT = 4096


def _without_large_initializers(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of `model` for shape inference: large initializers replaced by typed graph inputs."""
    graph = model.graph
    large = [init for init in graph.initializer if math.prod(init.dims) > _INFERENCE_INITIALIZER_LIMIT]
    if not large:
        return model
    light = onnx.ModelProto(ir_version=model.ir_version, opset_import=model.opset_import, functions=model.functions)
    light.graph.name = graph.name
    light.graph.node.extend(graph.node)
    light.graph.input.extend(graph.input)
    light.graph.output.extend(graph.output)
    light.graph.value_info.extend(graph.value_info)
    declared = {value.name for value in graph.input}
    names = {init.name for init in large}
    light.graph.initializer.extend(init for init in graph.initializer if init.name not in names)
    light.graph.input.extend(onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims))
                             for init in large if init.name not in declared)
    return light


def _value_info_types(model: onnx.ModelProto) -> dict[str, tuple[np.dtype | None, tuple | None]]:
    """Element type and shape (None where unknown) of every value onnx's shape inference can type."""
    graph = model.graph  # inference is a planning aid only; the run-time checks remain
    planned = _without_large_initializers(model)
    # data_prop first: shapes computed by Shape -> Mul -> Expand are known too (the memory budget checks them)
    attempts = (True, False) if data_propagation_is_bounded(planned) else (False,)
    for data_prop in attempts if shape_inference_hazard(planned) is None else ():
        try:
            graph = onnx.shape_inference.infer_shapes(planned, strict_mode=False, data_prop=data_prop).graph
            break
        except Exception:
            continue
    infos = {}
    for value in (*graph.input, *graph.value_info, *graph.output):
        tensor_type = value.type.tensor_type
        if not value.type.HasField("tensor_type"):
            continue
        try:
            dtype = onnx_dtype(tensor_type.elem_type) if tensor_type.elem_type else None
        except UsageError:
            dtype = None
        infos[value.name] = (dtype, _declared_shape(tensor_type))
    return infos


def _given(names: list[str]) -> list[str]:
    """A node's inputs without the trailing "" (omitted optional inputs): what its step is called with."""
    while names and not names[-1]:
        names = names[:-1]
    return names


def _check_inputs(step, names: list[str], label: str) -> None:
    """The node gives every input its bound step requires, and no more than it accepts."""
    parameters = inspect.signature(step).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters):
        required, accepted = 1, None
    else:
        required = sum(1 for p in parameters if p.default is inspect.Parameter.empty)
        accepted = len(parameters)
    names = _given(names)
    problem = arity_problem(label, required, accepted, len(names))
    if problem:
        raise UsageError(problem)
    missing = [position for position in range(required) if not names[position]]
    if missing:
        raise UsageError(f"input {missing[0]} of {label} is required but left out")


class OnnxProgram:
    """An ONNX graph planned for execution. Implements runtime.session.Program."""

    def __init__(self, model: onnx.ModelProto, *, source: str | None = None, fuse: bool = True):
        self.source = source
        self._fuse = fuse  # plan the fusions of runtime.onnx_fusion (Session's `fuse`)
        self._ir_version, self._opset_import = model.ir_version, list(model.opset_import)
        self._branches: dict[tuple, OnnxProgram] = {}  # _run_graph's programs
        refuse_external_data(model, source)
        model = inline_functions(model, source)
        model, _ = in_dependency_order(model, source)  # onnx shape inference (planning) reads the file order
        graph = model.graph  # never resolved against the current folder
        self.opset = default_opset(model, source)
        refuse_unsupported(model, self.opset, self._supports, first_opset, source=source)

        self._constants: dict[str, np.ndarray] = {}
        for initializer in graph.initializer:
            try:
                self._constants[initializer.name] = numpy_helper.to_array(initializer)
            except Exception as error:
                raise InvalidModelError(f"initializer '{initializer.name}' cannot be read: {error}",
                                        file=source) from None
        infos = _value_info_types(model)
        check_value_sizes(infos, source)  # every tensor whose size is known now, against the memory budget
        self.inputs = [self._input_spec(value) for value in graph.input if value.name not in self._constants]
        # Kept for the size checks of dynamic shapes, without the large initializers' data: the ModelProto
        # held its weights a second time (ResNet-50: 100 MiB) for as long as the session lived.
        self._model = _without_large_initializers(model)
        self._dynamic = [spec.name for spec in self.inputs if spec.shape is None or None in spec.shape]
        self._checked_shapes = None
        self.outputs = [value.name for value in graph.output]
        if not self.outputs:  # the ONNX checker accepts it; onnxruntime loads it but will not run it
            raise InvalidModelError("the graph declares no outputs, so there is nothing to run", file=source)
        self._declared_types = declared_output_types(graph)
        self._steps = self._plan(graph, infos)
        self._check_peak(infos)

    def _check_peak(self, infos) -> None:
        """Refuse a plan whose tensors live at once (constants, feeds, unreleased intermediates) exceed the budget."""
        def size_of(name: str) -> int:
            dtype, shape = infos.get(name, (None, None))
            return tensor_bytes(shape, dtype)
        resident = (sum(value.nbytes for value in self._constants.values() if isinstance(value, np.ndarray))
                    + sum(size_of(spec.name) for spec in self.inputs))
        check_planned_peak([(outputs, releases) for _, _, outputs, _, releases in self._steps], size_of, resident,
                           lambda at: self._steps[at][3], self.source)

    # -- validation ---------------------------------------------------------------------------------

    def _supports(self, op_type: str) -> bool:
        return op_type in ADAPTERS and op_version(op_type, self.opset) is not None

    def _input_spec(self, value: onnx.ValueInfoProto) -> TensorSpec:
        where = f"input '{value.name}'"
        if not value.type.HasField("tensor_type"):
            raise UnsupportedError("only tensor inputs are supported", file=self.source, where=where)
        tensor_type = value.type.tensor_type
        try:
            dtype = onnx_dtype(tensor_type.elem_type)
        except UsageError as error:
            raise error.located(file=self.source, where=where) from None
        return TensorSpec(value.name, dtype, _declared_shape(tensor_type))

    # -- planning -----------------------------------------------------------------------------------

    def _ordered_nodes(self, graph: onnx.GraphProto) -> list[tuple[int, onnx.NodeProto]]:
        ordered = order_nodes(graph, {"", *self._constants, *(v.name for v in graph.input)}, self.source)
        produced = {"", *self._constants, *(v.name for v in graph.input)}
        produced.update(name for _, node in ordered for name in node.output)
        for name in self.outputs:
            if name not in produced:
                raise InvalidModelError(f"graph output '{name}' is produced by no node or input", file=self.source)
        return ordered

    @staticmethod
    def _label(index: int, node: onnx.NodeProto) -> str:
        return node_label(node.name or f"#{index}", node.op_type)

    def _plan(self, graph: onnx.GraphProto, infos) -> list[tuple]:
        steps, op_types = [], []
        single_use = single_use_outputs(graph.node, self.outputs) if self._fuse else set()
        # A value read by one node only, whose step always returns a fresh array (fresh_result) -> the step's
        # position in `steps`; a Conv's (a ConvStep there, folded or not) can take a BatchNormalization.
        fresh: dict[str, int] = {}
        taken = {name for node in graph.node for name in (*node.input, *node.output)} if self._fuse else set()
        for index, node in self._ordered_nodes(graph):
            label = self._label(index, node)
            version = op_version(node.op_type, self.opset)
            outputs = list(node.output)
            while outputs and not outputs[-1]:
                outputs.pop()
            try:
                if len(outputs) > version.max_outputs:
                    raise UsageError(f"{len(outputs)} outputs, but {version.label} has at most {version.max_outputs}")
                # Every adapter may index its first input and first output: both are checked to exist first.
                if not outputs:
                    raise UsageError(f"the node has no outputs, {version.label} has at least one")
                if node.op_type != "Constant" and not any(node.input):
                    raise UsageError(f"input 0 of {version.label} is required but left out (no inputs)")
                attrs = normalize_attributes(node, version)
                if node.op_type == "Constant":  # evaluated now: its value is known before any run
                    self._constants[outputs[0]] = constant_value(attrs)
                    continue
                context = NodeContext(
                    node=node, version=version, attrs=attrs, label=label,
                    input_types=[infos.get(name, (None, None))[0] for name in node.input],
                    input_shapes=[infos.get(name, (None, None))[1] for name in node.input],
                    constants=[self._constants.get(name) for name in node.input],
                    output_count=len(outputs),
                    run_graph=self._run_graph,
                )
                step = ADAPTERS[node.op_type](context)
                _check_inputs(step, list(node.input), version.label)
            except UsageError as error:
                raise InvalidModelError(error.problem, file=self.source, where=label) from None
            except PoolirError as error:
                raise error.located(file=self.source, where=label) from None
            if (node.op_type == "BatchNormalization" and node.input[0] in fresh
                    and isinstance(steps[fresh[node.input[0]]][0], ConvStep)):
                position = fresh.pop(node.input[0])
                if self._fold_into_conv(node, attrs, steps, position, single_use, taken):
                    if outputs[0] in single_use:
                        fresh[outputs[0]] = position
                    continue
            if node.op_type in IN_PLACE and node.input[0] in fresh:
                position = fresh.pop(node.input[0])
                producer, producer_inputs, _, producer_label, _ = steps[position]
                steps[position] = [ActivationInPlace(producer, IN_PLACE[node.op_type], version), producer_inputs,
                                   outputs, f"{producer_label} + {label}", ()]
                continue
            inputs = _given(list(node.input)) + (list(step.outer) if isinstance(step, IfStep) else [])
            steps.append([step, inputs, outputs, label, ()])
            op_types.append(node.op_type)
            if outputs[0] in single_use and fresh_result(node):
                fresh[outputs[0]] = len(steps) - 1
        if self._fuse:
            for step in steps:
                self._bind_conv_constants(step, single_use)
        # Release each intermediate value after its last use (graph outputs and constants are kept).
        keep = set(self.outputs)
        last_use: dict[str, int] = {}
        for position, (_, inputs, outputs, _, _) in enumerate(steps):
            for name in (*inputs, *outputs):
                if name:
                    last_use[name] = position
        releases: dict[int, list[str]] = {}
        for name, position in last_use.items():
            if name not in keep and name not in self._constants:
                releases.setdefault(position, []).append(name)
        self._shape_values = ShapeValues([(op_type, inputs, outputs) for op_type, (_, inputs, outputs, _, _)
                                          in zip(op_types, steps)], self._constants, self.outputs)
        return [(step, tuple(inputs), tuple(outputs), label, tuple(releases.get(position, ())))
                for position, (step, inputs, outputs, label, _) in enumerate(steps)]

    def _run_graph(self, graph: onnx.GraphProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run a subgraph (an If's branch) given the outer values it reads: planned as a program of its own, once per
        graph and per shapes and types of those values, at this model's opset."""
        key = (id(graph), tuple((name, value.dtype.str, value.shape) for name, value in feeds.items()))
        program = self._branches.get(key)
        if program is None:
            if len(self._branches) >= MAX_SIGNATURES:  # a session run on ever new shapes keeps the latest only
                self._branches.clear()
            model = onnx.ModelProto(ir_version=self._ir_version, opset_import=self._opset_import)
            model.graph.CopyFrom(graph)
            model.graph.input.extend(onnx.helper.make_tensor_value_info(name, onnx.helper.np_dtype_to_tensor_dtype(
                value.dtype), value.shape) for name, value in feeds.items())
            program = self._branches[key] = OnnxProgram(model, source=self.source, fuse=self._fuse)
        return program.execute(feeds)

    def _fold_into_conv(self, node: onnx.NodeProto, attrs, steps: list, position: int, single_use: set[str],
                        taken: set[str]) -> bool:
        """Replace the Conv step that feeds this BatchNormalization by one with folded weights writing the
        BatchNormalization's output (runtime.onnx_fusion); False, changing nothing, when they do not qualify.
        The constants the fold replaced are dropped at once when nothing else reads them: the plan never holds
        a network's weights twice (ResNet-50's peak memory 1.07 -> 0.88 of onnxruntime's)."""
        if len(node.input) < 5 or attrs.get("spatial", 1) == 0:  # spatial=0: statistics per element
            return False
        step, conv_inputs, _, label, _ = steps[position]
        x, weights, bias = (list(conv_inputs) + [""] * 3)[:3]
        # The folded weights replace the Conv's own: weights another node reads too would be held twice (a
        # hostile model sharing one large W among many Conv+BN pairs would multiply the plan's memory).
        if weights not in single_use or bias and bias not in single_use or bias and bias not in self._constants:
            return False
        statistics = [self._constants.get(name) for name in node.input[1:5]]
        if any(value is None for value in statistics):
            return False
        fold = folded_conv_weights(self._constants.get(weights), self._constants.get(bias) if bias else None,
                                   *statistics, attrs["epsilon"])
        if fold is None:
            return False
        names = []
        for suffix, value in zip(("W", "B"), fold):
            name = f"{node.output[0]} (folded {suffix})"
            while name in self._constants or name in taken:   # a new name
                name += "'"
            self._constants[name] = value
            names.append(name)
            single_use.add(name)     # read by the fused step alone
        for name in (weights, bias, *node.input[1:5]):
            if name in single_use:    # the statistics may be read elsewhere; W and B are single-use here
                self._constants.pop(name, None)
        steps[position] = [step, [x, *names], [node.output[0]], label, ()]
        return True

    def _bind_conv_constants(self, step: list, single_use: set[str]) -> None:
        """A Conv step (or a fused one around it) with constant W and B takes them packed with the bias in the
        matrix product (onnx_ops.convolution.PackedConvStep), where that saves work and W and B are read by this Conv
        alone; the packed copy then replaces them in the plan."""
        outer, inputs = step[0], step[1]
        inner = outer.producer if isinstance(outer, ActivationInPlace) else outer
        # Packing copies W and B: only where the copy replaces them (see _fold_into_conv).
        if not isinstance(inner, ConvStep) or len(inputs) != 3 or not all(name in single_use for name in inputs[1:]):
            return
        packed = inner.with_constants(self._constants.get(inputs[1]), self._constants.get(inputs[2]))
        if packed is None:
            return
        if inner is outer:
            step[0] = packed
        else:
            outer.producer = packed
        step[1] = inputs[:1]
        for name in inputs[1:]:
            self._constants.pop(name, None)

    # -- execution ----------------------------------------------------------------------------------

    def execute(self, feeds: Mapping[str, np.ndarray], observe=None) -> dict[str, np.ndarray]:
        if self._dynamic:  # the sizes of this run's tensors, known from the feeds: checked before any node runs
            shapes = {name: tuple(feeds[name].shape) for name in self._dynamic}
            if shapes != self._checked_shapes:
                infos = _value_info_types(with_input_shapes(self._model, shapes))
                check_value_sizes(infos, self.source)
                self._check_peak(infos)
                self._checked_shapes = shapes
        values: dict[str, Any] = dict(self._constants)
        values.update(feeds)
        # observe is told every tensor a step computes, so a run that observes computes them all.
        signature = ShapeValues.signature(feeds) if self._shape_values and observe is None else None
        shape_values = self._shape_values.lookup(signature) if signature is not None else None
        skipped = self._shape_values.positions if shape_values is not None else frozenset()
        if shape_values is not None:
            values.update(shape_values)
        live = LiveBytes()  # what the run holds: each kernel's own allocations must fit beside it
        for value in values.values():
            live.add(value)
        values[""] = None  # an omitted optional input
        kept: dict[str, Any] = {}
        for position, (step, inputs, outputs, label, releases) in enumerate(self._steps):
            if position in skipped:
                for name in releases:
                    if name in values:
                        live.remove(values.pop(name))
                continue
            try:
                with bytes_in_use(live.total):
                    results = step(*[values[name] for name in inputs])
            except (BudgetError, InvalidModelError) as error:  # the model's fault whatever the feeds: as convert says
                raise error.located(file=self.source, where=label) from None
            except PoolirError as error:
                raise FeedError(f"for the given inputs: {error.problem}", file=self.source,
                                where=label) from None
            except (ValueError, IndexError) as error:
                raise InvalidModelError(f"cannot execute for the given inputs: {error}", file=self.source,
                                        where=label) from None
            if len(results) < len(outputs):  # e.g. a Split asked for more parts than its axis has elements
                raise InvalidModelError(f"computes {len(results)} outputs for the given inputs, but the node "
                                        f"declares {len(outputs)}", file=self.source, where=label)
            for name, result in zip(outputs, results):
                if name:
                    values[name] = result
                    live.add(result)
                    if observe is not None:
                        observe(name, result)
            live.check(self.source, label)
            if signature is not None and shape_values is None and position in self._shape_values.positions:
                kept.update((name, values[name]) for name in outputs if name in self._shape_values.kept_names)
            for name in releases:
                live.remove(values.pop(name))
        if signature is not None and not self._shape_values.known(signature):
            self._shape_values.keep(signature, kept)
        outputs = {name: values[name] for name in self.outputs}
        for name, dtype in self._declared_types.items():
            if outputs[name].dtype != dtype:  # onnxruntime refuses such a file when its type inference sees it
                raise InvalidModelError(f"graph output '{name}' is declared {dtype}, and the graph computes "
                                        f"{outputs[name].dtype}", file=self.source)
        return outputs
