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

Bodies nest (a body may hold an If) at most ir.branches.MAX_NESTING deep.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from poolir.ir.branches import MAX_NESTING, body_depth, check_if_ports, fits, if_branch
from poolir.ir.element_types import element_type_of
from poolir.ir.errors import InvalidModelError, UnsupportedError, layer_label
from poolir.ir.model import Layer, Model, static_shape
from poolir.ir.shapes import TensorInfo
from poolir.runtime.kernels.condition import condition_value


class IfStep:
    """Called with the If's inputs in port order; returns its outputs in port order. `plan(body, nesting)` builds a
    program (runtime.ir_executor.IRProgram) with `parameter_names`, `parameter_infos` and `result_names` by layer
    id."""

    def __init__(self, model: Model, layer: Layer, condition: TensorInfo, outputs: list[TensorInfo],
                 plan: Callable[[Model, int], object], nesting: int):
        """`condition`: what inference says feeds input 0; `outputs`: what it says the If gives (its declaration)."""
        where = layer_label(layer.name, layer.id, layer.type)
        if nesting == 0 and body_depth(layer) > MAX_NESTING:  # said once, here, not by the innermost body
            raise UnsupportedError(f"If bodies nested more than {MAX_NESTING} deep", file=model.source, where=where)
        check_if_ports(model, layer, condition)  # input 0: a boolean of one element; port ids are positions
        self.where, self.file = where, model.source
        self.outputs = [(port.id, declared) for port, declared in zip(layer.outputs, outputs)]
        self.bodies = []  # else, then
        for branch in ("else", "then"):
            taken = if_branch(model, layer, branch, every_output=True)
            program = plan(taken.body, nesting + 1)
            feeds = tuple((port, program.parameter_names[parameter], program.parameter_infos[parameter])
                          for port, parameter in taken.inputs.items())
            results = tuple(program.result_names[taken.outputs[port.id]] for port in layer.outputs)
            self.bodies.append((branch, program, feeds, results))

    def __call__(self, values: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
        branch, program, feeds, results = self.bodies[condition_value(values[0])]
        given = {}
        for position, name, declared in feeds:
            value = values[position]
            if not fits(_held(value), declared):
                raise InvalidModelError(f"the {branch}_body's Parameter '{name}' takes {declared.text()}, and its "
                                        f"input port holds {_held(value).text()}", file=self.file, where=self.where)
            given[name] = value
        computed = program.execute(given)
        outputs = tuple(computed[name] for name in results)
        for (port, declared), value in zip(self.outputs, outputs):
            if not fits(_held(value), declared):
                raise InvalidModelError(f"the {branch}_body computes output port {port} as {_held(value).text()}, "
                                        f"and the If declares {declared.text()}", file=self.file, where=self.where)
        return outputs


def _held(value: np.ndarray) -> TensorInfo:
    return TensorInfo(element_type_of(value.dtype), static_shape(value.shape))


__all__ = ["IfStep"]
