"""One node of an ONNX reference, recomputed by poolir's runtime from given values of its inputs.

locate.py asks this of the first node where a path diverges when every input of that node agreed with the
reference: fed the path's own input tensors, does poolir compute the path's output? If so, the node is not
where the path computes something else; it amplifies differences that were inside the tolerance at its inputs.

Only ONNX references are recomputed: an ONNX node is a graph of its own once its inputs are graph inputs
(weights and Constant nodes come along as they are). An IR layer would need its ports rebuilt as Parameters
with the path's dtypes; IR references are not checked (`recompute` returns None).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import onnx
from onnx import helper

from poolir import runtime
from poolir.ir.errors import PoolirError


def recompute(model, tensor: str, inputs: Mapping[str, np.ndarray],
              feeds: Mapping[str, np.ndarray]) -> np.ndarray | None:
    """`tensor` as poolir computes it from `inputs` (values of the producing node's computed inputs; the
    model's inputs come from `feeds`, weights from the model), or None when it cannot be recomputed alone."""
    if not isinstance(model, onnx.ModelProto):
        return None
    graph = model.graph
    node = next((n for n in graph.node if tensor in n.output), None)
    if node is None or node.domain not in ("", "ai.onnx") or any(a.g.node or a.graphs for a in node.attribute):
        return None
    initializers = {init.name: init for init in graph.initializer}
    constants = {name: n for n in graph.node if n.op_type == "Constant" for name in n.output}
    graph_inputs, weights, constant_nodes, feed = [], [], [], {}
    for name in dict.fromkeys(i for i in node.input if i):
        value = inputs.get(name, feeds.get(name))
        if value is not None:
            value = np.asarray(value)
            feed[name] = value
            graph_inputs.append(helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(value.dtype), value.shape))
        elif name in initializers:
            weights.append(initializers[name])
        elif name in constants:
            constant_nodes.append(constants[name])
        else:
            return None
    outputs = [onnx.ValueInfoProto(name=name) for name in node.output if name]
    single = helper.make_graph([*constant_nodes, node], "recompute", graph_inputs, outputs, weights)
    single_model = helper.make_model(single, opset_imports=list(model.opset_import), ir_version=model.ir_version)
    try:
        with np.errstate(all="ignore"):
            return runtime.run(single_model, feed).get(tensor)
    except (PoolirError, ValueError, TypeError, KeyError):
        return None


__all__ = ["recompute"]
