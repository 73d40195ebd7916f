"""OpenVINO's If-8 whose condition only a run decides: both bodies are planned as programs of their own, and each run
executes the body its condition takes.

An If whose condition inference knows never gets here: ir.branches splices the body it takes into the graph. This
is the other case, a condition computed from the data (a ReduceSum compared with a constant), as OpenVINO's ONNX
frontend keeps an ONNX If. OpenVINO's semantics (the If-8 spec):

- input port 0 is the condition, a boolean scalar (runtime.kernels.condition);
- each body's port map says which of the If's other input ports feeds each of its Parameters, and which of its
  Results gives each output port; every Parameter of a body must be fed and every output port given;
- a body's Parameter declares the element type and dims it takes, and a Result's tensor becomes the output port's,
  which the If declares too; a run checks both, so what a body computes is what inference trusted the If to give.

Bodies nest (a body may hold an If) at most MAX_NESTING deep.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from poolir.ir.branches import if_branch
from poolir.ir.element_types import dtype_of
from poolir.ir.errors import InvalidModelError, UnsupportedError, layer_label
from poolir.ir.model import Layer, Model, Port, shape_str
from poolir.runtime.kernels.condition import condition_value

MAX_NESTING = 16


class IfStep:
    """Called with the If's inputs in port order; returns its outputs in port order. `plan(body, nesting)` builds a
    program (runtime.ir_executor.IRProgram) with `parameter_names` and `result_names` by layer id."""

    def __init__(self, model: Model, layer: Layer, plan: Callable[[Model, int], object], nesting: int):
        where = layer_label(layer.name, layer.id, layer.type)
        if nesting >= MAX_NESTING:
            raise UnsupportedError(f"If bodies nested more than {MAX_NESTING} deep", file=model.source, where=where)
        self.where, self.file = where, model.source
        self.position = {port.id: index for index, port in enumerate(layer.inputs)}
        self.output_ports = layer.outputs
        self.bodies = []  # else, then
        for branch in ("else", "then"):
            taken = if_branch(model, layer, branch)
            program = plan(taken.body, nesting + 1)
            fed = set(taken.inputs.values())
            unfed = [layer_id for layer_id in program.parameter_names if layer_id not in fed]
            if unfed:
                raise InvalidModelError(f"the {branch}_body's Parameter {unfed[0]} is fed by no input port of the If",
                                        file=model.source, where=where)
            ungiven = [port.id for port in layer.outputs if port.id not in taken.outputs]
            if ungiven:
                raise InvalidModelError(f"the {branch}_body gives no value for output port {ungiven[0]} of the If",
                                        file=model.source, where=where)
            if 0 in taken.inputs:
                raise InvalidModelError(f"the {branch}_port_map feeds a Parameter from port 0, the condition",
                                        file=model.source, where=where)
            specs = {spec.name: spec for spec in program.inputs}
            feeds = tuple((self.position[port], program.parameter_names[parameter],
                           specs[program.parameter_names[parameter]]) for port, parameter in taken.inputs.items())
            results = tuple(program.result_names[taken.outputs[port.id]] for port in layer.outputs)
            self.bodies.append((branch, program, feeds, results))

    def __call__(self, values: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
        branch, program, feeds, results = self.bodies[condition_value(values[self.position.get(0, 0)])]
        given = {}
        for position, name, spec in feeds:
            value = values[position]
            declared = spec.shape
            if value.dtype != spec.dtype or (declared is not None and (
                    len(declared) != value.ndim or any(d is not None and d != n for d, n in zip(declared, value.shape)))):
                raise InvalidModelError(f"the {branch}_body's Parameter '{name}' takes {spec.dtype} "
                                        f"{spec.shape_text()}, and its input port holds {value.dtype} "
                                        f"{shape_str(value.shape)}", file=self.file, where=self.where)
            given[name] = value
        computed = program.execute(given)
        outputs = tuple(computed[name] for name in results)
        for port, value in zip(self.output_ports, outputs):
            _check_output(port, value, branch, self.file, self.where)
        return outputs


def _check_output(port: Port, value: np.ndarray, branch: str, file, where: str) -> None:
    """What a body computes must be what the If declares (the element type, and each static dim): inference planned
    the graph after the If from the declaration."""
    dtype = dtype_of(str(port.element_type)) if port.element_type else value.dtype
    dims = port.shape
    if value.dtype != dtype or len(dims) != value.ndim or any(
            dim.is_static and dim.value != n for dim, n in zip(dims, value.shape)):
        raise InvalidModelError(f"the {branch}_body computes output port {port.id} as {value.dtype} "
                                f"{shape_str(value.shape)}, and the If declares {dtype} {shape_str(dims)}", file=file,
                                where=where)


__all__ = ["MAX_NESTING", "IfStep"]
