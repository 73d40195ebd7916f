"""IR MatMul -> ONNX MatMul (or Gemm).

- No transposes, or transposes only on 1-D operands (which OpenVINO ignores, ir/ops/matmul.py): MatMul.
- Both operands 2-D with a transpose: Gemm with transA / transB and no C (BLAS flags, no copy in any
  runtime), in an opset where Gemm's C is optional; before it, Transpose + MatMul.
- Otherwise a Transpose (last two axes swapped) before MatMul for each flagged operand of rank >= 2.
"""

from __future__ import annotations

from poolir.converter.ir_to_onnx.context import Context
from poolir.converter.ir_to_onnx.opsets import check_writes, first_opset_where
from poolir.ir.model import Layer
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


CONVERTERS = {"MatMul": matmul}
