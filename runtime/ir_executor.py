"""Execute an `ir.Model` the way OpenVINO does: `IRProgram(model).execute(feeds)`.

The constructor validates the graph and plans it once: a topological order, one closure per layer
(attributes read, versions resolved and constants converted here, never per run), and a slot for
every tensor. `execute` only walks the plan, and frees each intermediate tensor after its last reader.
What depends on the input shape (pooling windows) is cached by shape inside the pooling ops
(runtime.ir_ops.pooling), so dynamic dims cost one resolution each.

Names: each Parameter is fed by the tensor name of its output port (the first of `names`, IR v11),
falling back to the layer name; each Result is returned under the tensor name of the port feeding it,
falling back to the Result layer's name.

Semantics are OpenVINO's (its operation specs, and its CPU plugin's behaviour where the specs are
silent): each layer type is bound to its kernel by a builder in runtime.ir_ops (one module per family,
registered in `runtime.ir_ops.registry.BUILDERS`). Parameter, Const and Result are planned here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from poolir.ir.budget import bytes_in_use
from poolir.ir.element_types import DTYPES, dtype_of
from poolir.ir.errors import InvalidModelError, PoolirError, UnsupportedError, layer_label
from poolir.ir.infer import Inference, infer_model, infer_with_inputs
from poolir.ir.model import Layer, Model, observed_port_names
from poolir.ir.branches import is_if, with_constant_branches
from poolir.ir.schema import refuse_unknown_layers
from poolir.ir.shapes import TensorInfo
from poolir.ir.validate import topological_order, validate_graph
from poolir.runtime.ir_if import IfStep
from poolir.runtime.ir_ops.registry import BUILDERS, EXECUTOR_LAYER_TYPES, LayerFn, LayerInfo, supported_layer_types
from poolir.runtime.live_memory import LiveBytes, check_planned_peak, tensor_bytes
from poolir.runtime.program import TensorSpec


@dataclass(frozen=True, slots=True)
class _Step:
    layer: Layer
    run: LayerFn
    inputs: tuple[int, ...]  # slots read
    outputs: tuple[int, ...]  # slots written
    releases: tuple[int, ...] = ()  # slots whose last reader is this step: freed after it runs


class IRProgram:
    """An IR model, validated and planned once; `execute(feeds)` runs it."""

    def __init__(self, model: Model, *, nesting: int = 0):
        model = with_constant_branches(model)  # an If-8 whose condition inference knows: the body it takes
        self.model = model
        self.file = model.source
        self._check_supported([layer for layer in model.layers if not is_if(layer)])  # every one at once
        self.parameter_names: dict[int, str] = {}  # layer id -> feed name (runtime.ir_if feeds a body by these)
        self.parameter_infos: dict[int, TensorInfo] = {}  # layer id -> the element type and dims it declares
        self.result_names: dict[int, str] = {}  # Result layer id -> output name
        # ir/validate.py: duplicate ids, dangling or doubled edges, unconnected ports, port counts, the schema
        # (op version, typed attributes, allowed values, defaults) and attribute ranges; then the order.
        validate_graph(model)
        self._observed = observed_port_names(model)  # what `observe` reports each output port under
        order = topological_order(model)
        layers = {layer.id: layer for layer in model.layers}
        producers = {(edge.to_layer, edge.to_port): (edge.from_layer, edge.from_port) for edge in model.edges}

        slot_of: dict[tuple[int, int], int] = {}
        for layer in order:
            for port in layer.outputs:
                slot_of[(layer.id, port.id)] = len(slot_of)
        self._slot_count = len(slot_of)
        consumed = {(edge.from_layer, edge.from_port) for edge in model.edges}

        self._constants: dict[int, np.ndarray] = {}
        self._parameters: list[tuple[str, int]] = []  # (feed name, slot)
        self.inputs: list[TensorSpec] = []
        self.outputs: list[str] = []
        self._results: list[tuple[str, int]] = []
        self._steps: list[_Step] = []
        folded: set[int] = set()  # ids of layers OpenVINO computes at compile time (LayerInfo.folded)
        result_ids: list[int] = []
        inference = infer_model(model)  # before the builders: LayerInfo.dynamic is read from it
        for layer in order:
            where = layer_label(layer.name, layer.id, layer.type)
            try:
                inputs = tuple(slot_of[producers[(layer.id, port.id)]] for port in layer.inputs)
                outputs = tuple(slot_of[(layer.id, port.id)] for port in layer.outputs)
                if layer.type == "Parameter":
                    self._plan_parameter(layer, outputs)
                elif layer.type == "Const":
                    self._plan_const(layer, outputs)
                elif layer.type == "Result":
                    self._plan_result(layer, producers[(layer.id, layer.inputs[0].id)], layers, inputs)
                    result_ids.append(layer.id)
                elif is_if(layer):  # decided at run time (one a constant decides was spliced above)
                    condition = inference.inputs[(layer.id, layer.inputs[0].id)] if layer.inputs else None
                    declared = [inference.outputs[(layer.id, port.id)] for port in layer.outputs]
                    self._steps.append(_Step(layer, IfStep(model, layer, condition, declared, _plan_body, nesting),
                                             inputs, outputs))
                else:
                    sources = [layers[producers[(layer.id, p.id)][0]] for p in layer.inputs]
                    if _folded_by_openvino(layer, sources, folded):
                        folded.add(layer.id)
                    info = LayerInfo(layer, frozenset(i for i, port in enumerate(layer.outputs)
                                                       if (layer.id, port.id) in consumed), layer.id in folded,
                                     frozenset(i for i, s in enumerate(sources) if s.type == "Const" or s.id in folded),
                                     nesting > 0 or any(not dim.is_static for port in layer.inputs
                                                        for dim in inference.inputs[(layer.id, port.id)].shape),
                                     frozenset(i for i, s in enumerate(sources)
                                               if s.type == "Parameter" and not nesting))
                    self._steps.append(_Step(layer, BUILDERS[layer.type](info), inputs, outputs))
            except PoolirError as error:
                raise error.located(file=self.file, where=where) from None
        # Outputs in the file's order of the Result layers, as OpenVINO lists them, not in execution order.
        position = {layer.id: i for i, layer in enumerate(model.layers)}
        by_file = sorted(range(len(result_ids)), key=lambda i: position[result_ids[i]])
        self._results = [self._results[i] for i in by_file]
        self.outputs = [self.outputs[i] for i in by_file]
        self._feed_slots = frozenset(slot for _, slot in self._parameters)
        if not self._results:
            raise InvalidModelError("the model has no Result layer", file=self.file)
        self._slot_of = slot_of
        self._steps = self._with_releases(self._steps)
        self._check_peak(inference)  # the live set at each step, from the static shapes
        self._folded_outputs: list[tuple[str, int]] = []
        self._fold_constants(inference)
        self._check_peak(inference)  # again: what was folded is now held for the whole run

    def _check_peak(self, inference: Inference) -> None:
        """Refuse a plan whose tensors live at once (constants, feeds, unreleased intermediates) exceed the budget."""
        sizes = {slot: tensor_bytes(tuple(dim.value for dim in info.shape), DTYPES.get(info.element_type))
                 for key, info in inference.outputs.items() if (slot := self._slot_of.get(key)) is not None}
        resident = sum(sizes.get(slot, 0) for slot in (*self._constants, *(slot for _, slot in self._parameters)))
        steps = self._steps
        check_planned_peak([(step.outputs, step.releases) for step in steps], lambda slot: sizes.get(slot, 0),
                           resident, lambda at: layer_label(steps[at].layer.name, steps[at].layer.id,
                                                            steps[at].layer.type), self.file)

    def _fold_constants(self, inference: Inference) -> None:
        """Compute once, here, every layer whose inputs are all constants, as OpenVINO folds them when it
        compiles: OpenVINO's own IRs store weights as f16 Consts behind a Convert, which a run would otherwise
        widen again each time (MobileNetV3-Large's IR: 32.6 ms a run, 22.5 ms for its f32 twin). The layer's
        kernel is the one a run calls (LayerInfo.folded already selects OpenVINO's folding semantics), so the
        values are the same. A layer whose output would exceed 4x its constant inputs (a Broadcast, a Tile),
        or whose size is not known, stays a step: folding must not make the resident set balloon (the plan is
        checked against the budget again afterwards)."""
        sizes = {slot: tensor_bytes(tuple(dim.value for dim in info.shape), DTYPES.get(info.element_type))
                 for key, info in inference.outputs.items() if (slot := self._slot_of.get(key)) is not None}
        kept = []
        for step in self._steps:
            constant = step.inputs and all(slot in self._constants for slot in step.inputs)
            inputs_bytes = sum(self._constants[slot].nbytes for slot in step.inputs) if constant else 0
            if not constant or not all(0 < sizes.get(slot, 0) <= 4 * inputs_bytes for slot in step.outputs):
                kept.append(step)
                continue
            where = layer_label(step.layer.name, step.layer.id, step.layer.type)
            try:
                with np.errstate(all="ignore"):  # as in Session.run: NaN, inf and wrapped integers are results
                    results = step.run([self._constants[slot] for slot in step.inputs])
            except PoolirError as error:
                raise error.located(file=self.file, where=where) from None
            except (ValueError, IndexError) as error:   # as a run reports them (execute)
                raise InvalidModelError(f"cannot compute this layer of constants: {error}", file=self.file,
                                        where=where) from None
            except MemoryError as error:
                raise UnsupportedError(f"not enough memory to compute this layer of constants ({error})",
                                       file=self.file, where=where) from None
            for port, slot, value in zip(step.layer.outputs, step.outputs, results):
                value = np.require(value, requirements="C")
                value.flags.writeable = False
                self._constants[slot] = value
                self._folded_outputs.extend((name, slot) for name in self._observed[(step.layer.id, port.id)])
        read = {slot for step in kept for slot in step.inputs} | {slot for _, slot in self._results}
        self._constants = {slot: data for slot, data in self._constants.items() if slot in read}
        self._folded_outputs = [(name, slot) for name, slot in self._folded_outputs if slot in self._constants]
        self._steps = self._with_releases(kept)

    def _with_releases(self, steps: list[_Step]) -> list[_Step]:
        """Each step with the slots it reads or writes for the last time (not Results' nor constants'),
        so an intermediate tensor is freed right after its last use and peak memory stays near the
        largest live set, not the sum of every tensor."""
        keep = {slot for _, slot in self._results} | set(self._constants)
        last_use: dict[int, int] = {}
        for position, step in enumerate(steps):
            for slot in (*step.inputs, *step.outputs):
                last_use[slot] = position
        releases: dict[int, list[int]] = {}
        for slot, position in last_use.items():
            if slot not in keep:
                releases.setdefault(position, []).append(slot)
        return [_Step(step.layer, step.run, step.inputs, step.outputs, tuple(releases.get(position, ())))
                for position, step in enumerate(steps)]

    # ----------------------------------------------------------------------------------------------
    # Planning

    def _check_supported(self, layers: list[Layer]) -> None:
        # Unknown types and versions (kept by the reader, ir.schema.is_known) and known types without an
        # executor, each type once with its count.
        refuse_unknown_layers(layers, self.file, lambda layer: layer.type in EXECUTOR_LAYER_TYPES
                              or layer.type in BUILDERS)

    def _plan_parameter(self, layer: Layer, outputs: tuple[int, ...]) -> None:
        port = layer.outputs[0]
        name = port.names[0] if port.names else layer.name  # unique: ir.validate.check_names
        element_type = layer.attrs.get("element_type") or port.element_type
        if element_type is None:
            raise InvalidModelError("the Parameter has no element_type")
        shape = layer.attrs.get("shape", port.shape)
        if isinstance(shape, str):
            raise InvalidModelError(f"the Parameter's shape {shape!r} was not parsed")
        dims = tuple(dim.value for dim in shape)
        ranged = any(not dim.is_static and (dim.min > 0 or dim.max is not None) for dim in shape)
        self.inputs.append(TensorSpec(name, dtype_of(str(element_type)), dims, tuple(shape) if ranged else None,
                                      tuple(port.names[1:])))
        self._parameters.append((name, outputs[0]))
        self.parameter_names[layer.id] = name
        self.parameter_infos[layer.id] = TensorInfo(str(element_type), tuple(shape))

    def _plan_const(self, layer: Layer, outputs: tuple[int, ...]) -> None:
        if layer.data is None:
            raise InvalidModelError("the Const layer has no data")
        data = np.asarray(layer.data)
        element_type = layer.attrs.get("element_type") or layer.outputs[0].element_type
        if element_type is not None:
            data = data.astype(dtype_of(str(element_type)), copy=False)
        data = np.require(data, requirements="C")  # keeps a 0-d Const 0-d (ascontiguousarray makes it [1])
        data.flags.writeable = False  # shared by every run: no layer may write into it
        self._constants[outputs[0]] = data

    def _plan_result(self, layer: Layer, source: tuple[int, int], layers: dict[int, Layer],
                     inputs: tuple[int, ...]) -> None:
        port = layers[source[0]].port(source[1])
        name = port.names[0] if port.names else layer.name  # unique: ir.validate.check_names
        self.outputs.append(name)
        self._results.append((name, inputs[0]))
        self.result_names[layer.id] = name

    # ----------------------------------------------------------------------------------------------
    # Running

    def execute(self, feeds: Mapping[str, np.ndarray], observe=None) -> dict[str, np.ndarray]:
        dynamic = {s.name: tuple(np.shape(feeds[s.name])) for s in self.inputs if None in (s.shape or (None,))
                   and s.name in feeds}
        if dynamic and dynamic != getattr(self, "_checked_shapes", None):  # sizes against the budget, first
            self._check_peak(infer_with_inputs(self.model, dynamic))
            self._checked_shapes = dynamic
        values: list[np.ndarray | None] = [None] * self._slot_count
        live = LiveBytes()  # what the run holds: each kernel's own allocations must fit beside it
        for slot, data in self._constants.items():
            values[slot] = data
            live.add(data)
        for name, slot in self._parameters:
            values[slot] = np.asarray(feeds[name])
            live.add(values[slot])
        if observe is not None:  # what a run no longer computes, folded when planning (_fold_constants)
            for name, slot in self._folded_outputs:
                observe(name, values[slot])
        for step in self._steps:
            try:
                with bytes_in_use(live.total):
                    results = step.run([values[slot] for slot in step.inputs])
                for slot, value in zip(step.outputs, results):
                    values[slot] = value
                    live.add(value)
                live.check(None, None)
            except PoolirError as error:
                raise error.located(file=self.file, where=layer_label(step.layer.name, step.layer.id,
                                                                      step.layer.type)) from None
            except (ValueError, IndexError) as error:
                # numpy refusing a shape or an index at run time: the feeds' dims do not fit the graph.
                raise InvalidModelError(f"cannot execute with these input shapes: {error}", file=self.file,
                                        where=layer_label(step.layer.name, step.layer.id,
                                                          step.layer.type)) from None
            if observe is not None:  # each output by its tensor names, an unnamed one by its layer's (IR v10)
                for port, value in zip(step.layer.outputs, results):
                    for name in self._observed[(step.layer.id, port.id)]:
                        observe(name, value)
            for slot in step.releases:
                live.remove(values[slot])
                values[slot] = None
        outputs = {}
        for name, slot in self._results:
            value = values[slot]
            # Results never alias a constant, a feed or a view of one: the caller owns what it gets.
            aliased = slot in self._constants or slot in self._feed_slots or not value.flags.owndata
            outputs[name] = value.copy() if aliased else value
        return outputs


def _plan_body(body: Model, nesting: int) -> IRProgram:
    return IRProgram(body, nesting=nesting)


def _folded_by_openvino(layer: Layer, sources: list[Layer], folded: set[int]) -> bool:
    """Whether OpenVINO's constant folding computes `layer` when it compiles the model: every input is a
    Const or folded itself, or the layer is a ShapeOf of an input whose (declared) dims are all static."""
    if layer.type == "ShapeOf" and layer.inputs:
        return all(dim.is_static for dim in layer.inputs[0].shape)
    return bool(sources) and all(source.type == "Const" or source.id in folded for source in sources)


__all__ = ["IRProgram", "supported_layer_types"]
