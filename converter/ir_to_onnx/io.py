"""The graph boundary and constants: Parameter -> a graph input, Const -> an initializer, Result -> a graph output.

Inputs and outputs keep their IR tensor names (the first name of the port, else the layer's name).
"""

from __future__ import annotations

import numpy as np
from onnx import numpy_helper

from poolir.converter.ir_to_onnx.context import Context, port_name, value_info
from poolir.ir.model import Layer


def parameter(context: Context, layer: Layer) -> None:
    name = context.claim(port_name(layer.outputs[0]) or layer.name)
    context.tensors[(layer.id, layer.outputs[0].id)] = name
    context.graph_inputs.append((layer.id, value_info(name, context.output_info(layer, 0), dim_prefix=name)))


def const(context: Context, layer: Layer) -> None:
    name = context.name_output(layer, 0)
    data = layer.data if layer.data is not None else np.zeros(0)
    context.initializers.append(numpy_helper.from_array(np.asarray(data), name))


def result(context: Context, layer: Layer) -> None:
    producer = context.producers[(layer.id, layer.inputs[0].id)]
    source_port = context.by_id[producer[0]].port(producer[1])
    wanted = port_name(source_port) or layer.name
    tensor = context.tensors[producer]
    outputs = context.output_names
    if wanted == tensor and wanted not in outputs:
        name = tensor
    else:
        # Another name than the tensor's (a Result named apart, or a second Result of one tensor).
        name = context.claim(wanted if wanted not in outputs else layer.name)
        context.node_into("Identity", [tensor], [name], layer.name)
    context.graph_outputs.append((layer.id, value_info(name, context.input_info(layer, 0))))
    outputs.add(name)


CONVERTERS = {"Parameter": parameter, "Const": const, "Result": result}
