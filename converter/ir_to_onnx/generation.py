"""IR Range-1 and Range-4 -> ONNX Range (from opset 11), or an initializer.

An integer Range is the same in both worlds (an exact count, values start + i * step): Range-4's bounds are cast to
its output_type first (ONNX Cast truncates a float toward zero, as Range-4 does), i8 and u8 ranges (ONNX Range has
no such type) run in int32 and are cast back, which is exact since every value lies between start and stop.
A float Range OpenVINO folds (constant bounds) becomes an initializer with its values; one computed at run time is
refused: OpenVINO sums step after step where ONNX Range computes start + i * delta (runtime.ir_ops.generation).
"""

from __future__ import annotations

import numpy as np
from onnx import numpy_helper

from poolir.converter.element_types import onnx_element_type
from poolir.converter.ir_to_onnx.context import Context
from poolir.ir.errors import ConversionError
from poolir.ir.model import Layer
from poolir.runtime.ir_ops.generation import ir_range
from poolir.runtime.onnx_ops import first_opset

_ONNX_RANGE_TYPE = {"i32": "i32", "i64": "i64", "i8": "i32", "u8": "i32"}


def range_(context: Context, layer: Layer) -> None:
    output_type = context.output_info(layer, 0).element_type
    known = [context.constant(layer, index) for index in range(3)]
    if all(value is not None for value in known):
        values = ir_range(layer, *(np.asarray(value)[()] for value in known), folded=True)
        context.initializers.append(numpy_helper.from_array(values, context.name_output(layer, 0)))
        return
    if output_type not in _ONNX_RANGE_TYPE:
        raise ConversionError(f"a {output_type} Range with bounds computed at run time: OpenVINO sums step after "
                              "step where ONNX Range computes start + i * delta (ulps apart)")
    since = first_opset("Range")
    context.check_opset(since, f"Range needs ONNX Range, from opset {since}")
    compute = _ONNX_RANGE_TYPE[output_type]
    bounds = []
    for index in range(3):
        bound = context.input(layer, index)
        if context.input_info(layer, index).element_type != compute:
            (bound,) = context.node("Cast", [bound], f"{layer.name}/bound{index}", to=onnx_element_type(compute))
        bounds.append(bound)
    output = context.name_output(layer, 0)
    if compute == output_type:
        context.node_into("Range", bounds, [output], layer.name)
        return
    (wide,) = context.node("Range", bounds, f"{layer.name}/{compute}")
    context.node_into("Cast", [wide], [output], layer.name, to=onnx_element_type(output_type))


CONVERTERS = {"Range": range_}
