"""IR MatMul -> ONNX MatMul (or Gemm).

- No transposes, or transposes only on 1-D operands (which OpenVINO ignores, ir/ops/matmul.py): MatMul.
- Both operands 2-D with a transpose: Gemm with transA / transB and no C (BLAS flags, no copy in any
  runtime), in an opset where Gemm's C is optional; before it, Transpose + MatMul.
- Otherwise a Transpose (last two axes swapped) before MatMul for each flagged operand of rank >= 2.

Einsum-7 -> ONNX Einsum (from opset 12) with the equation written explicitly: as it stands when ONNX reads it
alike, else with every ellipsis spelled as letters (ir.ops.matmul.einsum_terms), which is how an OpenVINO-only
equation keeps its meaning: ellipses of different lengths broadcast as size-1 labels do in ONNX, and an ellipsis
left out of the output is summed as any absent label is. An operand whose dim is 1 where another operand's dim of
the same label is larger is first Expanded to it: onnxruntime broadcasts such a label as OpenVINO does, but ONNX's
shape inference takes the first operand's dim, so the written output shape would contradict it. Integer Einsum is
refused (OpenVINO computes it in float32 or saturates; ONNX is exact).
"""

from __future__ import annotations

from poolir.converter.ir_to_onnx.context import Context
from poolir.converter.ir_to_onnx.opsets import check_writes, first_opset_where
from poolir.ir.element_types import is_integer
from poolir.ir.errors import ConversionError, InvalidModelError
from poolir.ir.model import Layer
from poolir.ir.ops.matmul import einsum_terms, integer_einsum_problem, parse_einsum
from poolir.runtime.onnx_ops.matmul import c_is_optional


def matmul(context: Context, layer: Layer) -> None:
    a_info, b_info = context.input_info(layer, 0), context.input_info(layer, 1)
    check_writes(context, "MatMul", a_info.element_type)
    ranks = (len(a_info.shape), len(b_info.shape))
    flags = (layer.attrs["transpose_a"] and ranks[0] >= 2, layer.attrs["transpose_b"] and ranks[1] >= 2)
    inputs = [context.input(layer, 0), context.input(layer, 1)]
    output = context.name_output(layer, 0)
    gemm_since = first_opset_where("Gemm", c_is_optional)
    if any(flags) and ranks == (2, 2) and gemm_since is not None and context.opset >= gemm_since:
        check_writes(context, "Gemm", a_info.element_type)
        context.node_into("Gemm", inputs, [output], layer.name, transA=int(flags[0]), transB=int(flags[1]))
        return
    for index, (flag, rank) in enumerate(zip(flags, ranks)):
        if flag:
            perm = [*range(rank - 2), rank - 1, rank - 2]
            inputs[index] = context.node("Transpose", [inputs[index]], f"{layer.name}/transpose_{'ab'[index]}",
                                         perm=perm)[0]
    context.node_into("MatMul", inputs, [output], layer.name)


def einsum(context: Context, layer: Layer) -> None:
    infos = [context.input_info(layer, index) for index in range(len(layer.inputs))]
    element_type = infos[0].element_type
    if is_integer(element_type):
        raise ConversionError(integer_einsum_problem(element_type))
    check_writes(context, "Einsum", element_type)
    equation = parse_einsum(layer.attrs["equation"], "ir")
    ranks = [len(info.shape) for info in infos]
    try:
        as_onnx = parse_einsum(equation.text(), "onnx")
        einsum_terms(as_onnx, ranks)
        text = as_onnx.text()
    except InvalidModelError:   # ellipses only OpenVINO reads: spelled as letters
        terms, output = einsum_terms(equation, ranks)
        text = ",".join(terms) + "->" + output
    terms, _ = einsum_terms(equation, ranks)
    largest: dict[str, int] = {}
    for term, info in zip(terms, infos):
        for label, dim in zip(term, info.shape):
            largest[label] = max(largest.get(label, 1), dim.value or 1)
    inputs = []
    for index, (term, info) in enumerate(zip(terms, infos)):
        source = context.input(layer, index)
        dims = [largest[label] if dim.value == 1 else dim.value for label, dim in zip(term, info.shape)]
        if dims != [dim.value for dim in info.shape]:
            check_writes(context, "Expand", element_type, "Einsum broadcasting a size-1 label")
            source = context.node("Expand", [source, context.int64s(dims, f"{layer.name}/shape_{index}")],
                                  f"{layer.name}/broadcast_{index}")[0]
        inputs.append(source)
    context.node_into("Einsum", inputs, [context.name_output(layer, 0)], layer.name, equation=text)


CONVERTERS = {"MatMul": matmul, "Einsum": einsum}
