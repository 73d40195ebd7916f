"""IR model -> ONNX model: one converter per layer in topological order, folds first, then the graph."""

from __future__ import annotations

from typing import Callable

import onnx
from onnx import helper

from poolir.converter.ir_to_onnx.branches import convert_if
from poolir.converter.ir_to_onnx.context import Context
from poolir.converter.ir_to_onnx.opsets import (NEWEST_WRITTEN_OPSET, OLDEST_WRITTEN_OPSET, ONNX_IR_VERSION,
                                                WRITABLE_OPSETS)
from poolir.converter.ir_to_onnx.registry import CONVERTERS, FOLDS
from poolir.ir.errors import InvalidModelError, PoolirError, UnsupportedError, UsageError, layer_label
from poolir.ir.infer import infer_model
from poolir.ir.model import Model
from poolir.ir.branches import is_if, with_constant_branches
from poolir.ir.schema import refuse_unknown_layers
from poolir.runtime.onnx_subgraphs import node_reads


def ir_to_onnx(model: Model, opset: int = NEWEST_WRITTEN_OPSET,
               progress: Callable[[int, int], None] | None = None) -> onnx.ModelProto:
    """Convert an IR model to ONNX with the same meaning; raises ConversionError naming the layer.
    progress(done, total) is called after each layer (the command line shows it on stderr for a long run)."""
    if opset not in WRITABLE_OPSETS:
        raise UsageError(f"opset {opset} is not supported (supported: {OLDEST_WRITTEN_OPSET}..{NEWEST_WRITTEN_OPSET})")
    graph, _ = convert_graph(model, opset, progress)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ONNX_IR_VERSION,
                             producer_name="poolir")


def convert_graph(model: Model, opset: int, progress: Callable[[int, int], None] | None = None,
                  in_body: bool = False) -> tuple[onnx.GraphProto, Context]:
    """The ONNX graph of `model` (an If-8 body when `in_body`), and the context that wrote it (which layer became
    which input and output)."""
    model = with_constant_branches(model)  # an If-8 whose condition inference knows: the body it takes
    # Every layer type without a conversion at once (unknown types and versions included), before inference.
    refuse_unknown_layers([layer for layer in model.layers if not is_if(layer)], model.source,
                          lambda layer: layer.type in CONVERTERS or layer.type in FOLDS)
    if not any(layer.type == "Result" for layer in model.layers):
        # OpenVINO 2026.4 reads, compiles and runs such an IR and returns nothing; onnxruntime loads the
        # ONNX graph it would become but refuses to run it ("At least one output should be requested").
        raise InvalidModelError("the model has no Result layer, so the ONNX graph would have no outputs "
                                "and compute nothing", file=model.source)
    inference = infer_model(model)
    context = Context(model, inference, opset, in_body)
    for done, layer in enumerate(inference.order, 1):
        if progress is not None:
            progress(done, len(inference.order))
        if layer.id in context.folded:
            continue
        try:
            if is_if(layer):  # decided at run time (one a constant decides was spliced above)
                convert_if(context, layer, convert_graph)
                continue
            fold = FOLDS.get(layer.type)
            if fold is not None and fold(context, layer):
                continue
            convert = CONVERTERS.get(layer.type)
            if convert is None:
                raise UnsupportedError(f"layer type {layer.type} has no ONNX conversion "
                                       f"(supported: {', '.join(sorted(CONVERTERS))})")
            convert(context, layer)
        except PoolirError as error:
            raise error.located(file=model.source, where=layer_label(layer.name, layer.id, layer.type)) from None
    # Inputs and outputs in the order of the model's Parameter and Result layers, as the IR lists them.
    position = {layer.id: index for index, layer in enumerate(model.layers)}
    inputs = [info for _, info in sorted(context.graph_inputs, key=lambda item: position[item[0]])]
    outputs = [info for _, info in sorted(context.graph_outputs, key=lambda item: position[item[0]])]
    # Constants that only a folded pattern read (an LpPool's p, prod(k), 1/p) are dropped.
    read = {name for node in context.nodes for name in node_reads(node)} | {info.name for info in outputs}
    initializers = [tensor for tensor in context.initializers if tensor.name in read]
    graph = helper.make_graph(context.nodes, model.name or "model", inputs, outputs, initializer=initializers)
    return graph, context
