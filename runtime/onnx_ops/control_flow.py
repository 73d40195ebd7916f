"""If: runs one of two subgraphs, chosen by a one-element boolean condition.

PyTorch's TorchScript exporter writes one from opset 11 where a squeeze(dim) may or may not apply (nn.LocalResponse-
Norm's `squeeze(1)`: Shape, Gather, Equal, If). The branches read outer values by name (runtime.onnx_subgraphs);
the program that plans the node runs the chosen branch (NodeContext.run_graph), so a branch holds any op poolir
runs, an If included. The ONNX -> IR converter takes the branch a constant condition chooses
(converter.onnx_to_ir.driver).
"""

from __future__ import annotations

import onnx

from poolir.ir.errors import UnsupportedError, UsageError
from poolir.runtime.kernels.condition import condition_value
from poolir.runtime.onnx_ops.registry import GRAPH, Attribute, NodeContext, adapter, define
from poolir.runtime.onnx_subgraphs import implicit_inputs

# If-1 .. If-21 differ only in the element types their outputs may have.
define("If", [(1, {"then_branch": Attribute(GRAPH, required=True),
                   "else_branch": Attribute(GRAPH, required=True)})], max_outputs=1 << 16)


def check_branch(graph: onnx.GraphProto, name: str, output_count: int) -> None:
    """A branch gives as many outputs as the node has, and declares no inputs: it reads outer values by name
    (onnx's checker and onnxruntime refuse a branch with inputs)."""
    if len(graph.input):
        raise UsageError(f"{name} declares {len(graph.input)} inputs; an If branch takes none")
    if len(graph.output) != output_count:
        raise UsageError(f"{name} has {len(graph.output)} outputs, the node {output_count}")


class IfStep:
    """Called with the condition, then the outer values the branches read (`outer`, in that order)."""

    def __init__(self, context: NodeContext):
        if context.run_graph is None:
            raise UnsupportedError("If runs only inside a planned program")
        self.run_graph = context.run_graph
        self.branches = (context.attrs["else_branch"], context.attrs["then_branch"])
        self.outer = implicit_inputs(context.node)
        for name, branch in zip(("else_branch", "then_branch"), self.branches):
            check_branch(branch, name, context.output_count)

    def __call__(self, condition, *outer):
        branch = self.branches[condition_value(condition)]
        results = self.run_graph(branch, dict(zip(self.outer, outer)))
        return tuple(results[value.name] for value in branch.output)


@adapter("If")
def _if(context: NodeContext) -> IfStep:
    return IfStep(context)
