"""IR ScaledDotProductAttention-13 -> ONNX MatMul, Transpose, Mul, Add (Where for a boolean mask), Softmax, MatMul.

The nodes compute what OpenVINO's CPU plugin computes (ir/ops/attention.py), step for step in float32 (float16 and
bfloat16 are cast to float32 first and the result back once, as the plugin rounds once):
  - a constant or absent scale multiplies the key before the product (Mul, Transpose, MatMul), 1 / sqrt(E) folded
    as the plugin folds it; a scale computed at run time multiplies the product;
  - the causal triangle is a constant [L, S] of 0 and -inf (static L and S); a boolean mask becomes
    Where(mask, 0, -inf) and a float mask is added as it is, both broadcasting as OpenVINO's do;
  - Softmax along the last axis (in opsets before 13 too: its 2-D coercion at axis rank - 1 is the same rows);
  - a sink is expanded to [N.., L, 1], concatenated after the scores and sliced off after the Softmax.
ONNX's Attention (opset 23) is newer than the opsets poolir writes.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from poolir.converter.element_types import onnx_element_type
from poolir.converter.ir_to_onnx.context import Context
from poolir.converter.ir_to_onnx.opsets import check_writes
from poolir.ir.element_types import dtype_of
from poolir.ir.errors import ConversionError
from poolir.ir.model import Layer
from poolir.ir.ops.attention import KEY, MASK, QUERY, SCALE, SINK, VALUE
from poolir.runtime.kernels.attention import default_scale

_LOW = ("f16", "bf16")  # computed in float32 and rounded once
_SINK_SLICE_SINCE = 13  # Slice with inputs (10) and Softmax along one axis: the sink's slice is one node from here


def attention(context: Context, layer: Layer) -> None:
    causal = layer.attrs["causal"]
    query, key, value = (context.input_info(layer, index) for index in (QUERY, KEY, VALUE))
    element_type = query.element_type
    low = element_type in _LOW
    work = np.dtype(np.float32) if low else dtype_of(element_type)
    for op_type in ("MatMul", "Softmax", "Add", "Mul"):
        check_writes(context, op_type, "f32" if low else element_type, f"ScaledDotProductAttention ({op_type})")
    name = layer.name
    count = len(layer.inputs)

    def node(op_type: str, inputs: list[str], what: str, **attrs) -> str:
        return context.node(op_type, inputs, f"{name}/{what}", **attrs)[0]

    def constant(array, what: str) -> str:
        return context.initializer(np.asarray(array, work), f"{name}/{what}")

    def operand(index: int, what: str) -> str:
        source = context.input(layer, index)
        if low and context.input_info(layer, index).element_type != "boolean":
            check_writes(context, "Cast", element_type, f"ScaledDotProductAttention on {element_type}")
            return node("Cast", [source], f"{what}_f32", to=TensorProto.FLOAT)
        return source

    q, k, v = operand(QUERY, "query"), operand(KEY, "key"), operand(VALUE, "value")
    scale_value = context.constant(layer, SCALE) if count > SCALE else None
    if count > SCALE and scale_value is None:       # computed at run time: it multiplies the product
        key_scale, product_scale = None, operand(SCALE, "scale")
    else:
        if scale_value is None:
            head = query.shape[-1].value
            if head is None:
                raise ConversionError("the default scale 1 / sqrt(E) needs a static head size E, got "
                                      f"{query.shape[-1]}")
            scale_value = default_scale(head, dtype_of(element_type))
        key_scale, product_scale = constant(np.ravel(scale_value)[0], "scale"), None
    rank_k = len(key.shape)
    if key_scale is not None:
        k = node("Mul", [k, key_scale], "scaled_key")
    key_t = node("Transpose", [k], "key_t", perm=[*range(rank_k - 2), rank_k - 1, rank_k - 2])
    scores = node("MatMul", [q, key_t], "scores")
    if product_scale is not None:
        scores = node("Mul", [scores, product_scale], "scaled_scores")
    bias = _bias(context, layer, causal, query, key, constant, node, operand)
    ranks = [len(query.shape), rank_k]
    if bias is not None:
        scores = node("Add", [scores, bias], "masked_scores")
        ranks.append(2 if causal else len(context.input_info(layer, MASK).shape))
    axis = max(ranks) - 1       # the scores' last axis (the value may add batch dims only to the output)
    if count > SINK:
        scores = _with_sink(context, layer, scores, query, node, operand)
    weights = node("Softmax", [scores], "weights", axis=axis)
    if count > SINK:
        columns = key.shape[-2].value
        weights = node("Slice", [weights, context.int64s([0], f"{name}/starts"),
                                 context.int64s([columns], f"{name}/ends"), context.int64s([axis], f"{name}/axes")],
                       "weights_without_sink")
    output = context.name_output(layer, 0)
    if low:
        result = node("MatMul", [weights, v], "f32")
        context.node_into("Cast", [result], [output], name, to=onnx_element_type(element_type))
    else:
        context.node_into("MatMul", [weights, v], [output], name)


def _bias(context: Context, layer: Layer, causal: bool, query, key, constant, node, operand) -> str | None:
    """The tensor added to the scores (the causal triangle or the mask), or None when nothing is."""
    if causal:
        rows, columns = query.shape[-2].value, key.shape[-2].value
        if rows is None or columns is None:
            raise ConversionError(f"causal attention needs static L and S to write its mask, got L = "
                                  f"{query.shape[-2]}, S = {key.shape[-2]}")
        return constant(np.triu(np.full((rows, columns), -np.inf), 1), "causal_mask")
    if len(layer.inputs) <= MASK:
        return None
    mask_info = context.input_info(layer, MASK)
    known = context.constant(layer, MASK)
    if known is not None and known.ndim == 0 and mask_info.element_type != "boolean" and known == 0:
        return None     # the spec's scalar 0: no mask (adding it would change nothing either)
    if mask_info.element_type == "boolean":
        check_writes(context, "Where", "f32", "ScaledDotProductAttention with a boolean mask")
        return node("Where", [context.input(layer, MASK), constant(0, "attend"), constant(-np.inf, "masked")],
                    "mask_bias")
    return operand(MASK, "mask")


def _with_sink(context: Context, layer: Layer, scores: str, query, node, operand) -> str:
    """The scores with the sink as one more column: the sink broadcast to the query's [N.., L, 1], which are the
    scores' dims but the last whenever OpenVINO runs the layer (ir/ops/attention.py)."""
    context.check_opset(_SINK_SLICE_SINCE, f"ScaledDotProductAttention with a sink needs Slice and Softmax along "
                                           f"one axis, from opset {_SINK_SLICE_SINCE}")
    target = [d.value for d in query.shape[:-1]] + [1]
    if None in target or context.input_info(layer, KEY).shape[-2].value is None:
        raise ConversionError(f"a sink needs static batch dims, L and S, got the query's {list(query.shape)}")
    sink = node("Expand", [operand(SINK, "sink"), context.int64s(target, f"{layer.name}/sink_shape")], "sink_rows")
    return node("Concat", [scores, sink], "scores_and_sink", axis=len(target) - 1)


CONVERTERS = {"ScaledDotProductAttention": attention}
