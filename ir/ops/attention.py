"""ScaledDotProductAttention-13, OpenVINO's attention layer (IR only: ONNX's Attention, opset 23, is newer than the
opsets poolir writes): its schema and shape rule.

Inputs query [N.., L, E], key [N.., S, E], value [N.., S, Ev] (rank >= 3; the batch dims N.. broadcast numpy-style),
then optional attention_mask, scale and sink; attribute causal. The spec computes, in the element type T:

    scores = query @ key^T * scale            scale: the input, or 1 / sqrt(E) (float32 for an f32 query)
    scores += triu(-inf, 1) over [L, S]       if causal (attention_mask is then ignored, whatever its type or shape)
    scores += attention_mask                  a float mask; a boolean one adds 0 where true and -inf where false
    weights = softmax(concat(scores, sink))   along the last axis; sink [N.., L, 1] or broadcasting to it
    output = weights[..., :S] @ value         -> [N.., L, Ev]

The mask broadcasts numpy-style against the scores, so it may widen them: a mask of rank above the query's adds
batch dims, and a mask row count L' over a query's L = 1 makes L' output rows (OpenVINO 2026.4's CPU plugin gives
both, [7, 1, 1, 4, 5] against [2, 3, 4, 5] scores making [7, 2, 3, 4, Ev]); a scalar mask (the spec's "0: no mask")
is added as any mask is (a false boolean scalar masks every score). The scale is a scalar or a 1-element 1-D tensor.
A sink is broadcast to the query's dims [N.., L, 1]: OpenVINO cannot compile one when key, value or mask widen the
scores beyond them (refused as unsupported).
The mask is T or boolean, the scale and the sink T; T a floating type.
Runtime facts, each probed on OpenVINO's CPU plugin at f32 precision (pinned in tests/runtime/test_attention.py):
  - a row every score of which is masked (-inf) is NaN, as the pseudo-code's softmax gives; so is a row holding a
    NaN or +inf mask value (inf - inf);
  - a constant or absent scale is folded into the key before the product (q @ (k * scale)^T: a key of 1e30 with
    scale 1e10 overflows to inf), a scale computed at run time multiplies the product, and a layer whose inputs
    are all constant is folded by OpenVINO's reference (the product first);
  - S = 0 or E = 0: the plugin returns uninitialised memory (zeros in one probe, -1.4e15 in the next); poolir gives
    zeros for S = 0 (an empty product) and the mean of the values for E = 0 (the empty key stays empty whatever the
    default scale 1 / sqrt(0), every score is 0);
  - float16 computes in float32 and rounds once; float64 computes in float32 (poolir computes it in float64).
"""

from __future__ import annotations

from poolir.ir.attributes import BOOL, Attr, OpVersion
from poolir.ir.errors import InvalidModelError, UnsupportedError
from poolir.ir.model import Dim, Layer, shape_str
from poolir.ir.registry import ShapeRules
from poolir.ir.shapes import TensorInfo, broadcast_shapes

FLOAT_TYPES = ("f16", "bf16", "f32", "f64")
QUERY, KEY, VALUE, MASK, SCALE, SINK = range(6)

SCHEMA_ROWS: tuple[OpVersion, ...] = (
    OpVersion("ScaledDotProductAttention", 13, (Attr("causal", BOOL),), inputs=(3, 6)),
)

SHAPE_RULES = ShapeRules()


def _broadcast(a, b, what: str):
    try:
        return broadcast_shapes(tuple(a), tuple(b))
    except InvalidModelError:
        raise InvalidModelError(f"{what}: {shape_str(a)} and {shape_str(b)} do not broadcast") from None


def _same(a: Dim, b: Dim, what: str) -> Dim:
    if a.is_static and b.is_static and a.min != b.min:
        raise InvalidModelError(f"{what} differ: {a.min} and {b.min}")
    return a if a.is_static else b


@SHAPE_RULES.register("ScaledDotProductAttention")
def infer_attention(layer: Layer, inputs: list[TensorInfo]) -> list[TensorInfo]:
    query, key, value = inputs[:3]
    causal = layer.attrs["causal"]
    element_type = query.element_type
    if element_type not in FLOAT_TYPES:
        raise InvalidModelError(f"the query is {element_type}, expected a floating type")
    for index, info in enumerate(inputs[1:], 1):
        mask_types = (element_type, "boolean") if index == MASK else (element_type,)
        if info.element_type not in mask_types and not (index == MASK and causal):
            raise InvalidModelError(f"input {index} is {info.element_type}, expected {' or '.join(mask_types)} "
                                    "(OpenVINO refuses mixed types)")
    for name, info in (("query", query), ("key", key), ("value", value)):
        if len(info.shape) < 3:
            raise InvalidModelError(f"the {name} {shape_str(info.shape)} has rank {len(info.shape)}, at least 3 "
                                    "is needed")
    scores = _broadcast(query.shape[:-2], key.shape[:-2], "the batch dims of query and key")   # of the scores
    _same(query.shape[-1], key.shape[-1], "the embedding sizes E of query and key")
    source = _same(key.shape[-2], value.shape[-2], "the source lengths S of key and value")
    rows = query.shape[-2]
    if len(inputs) > MASK and not causal and inputs[MASK].shape:
        mask = inputs[MASK].shape
        if len(mask) < 2:
            raise InvalidModelError(f"the attention mask {shape_str(mask)} has rank 1; a scalar or rank >= 2 is "
                                    "needed")
        (rows, columns) = _broadcast((rows, source), mask[-2:], "the mask's last two dims and [L, S]")
        if columns != source and source.is_static and columns.is_static:
            raise InvalidModelError(f"the mask {shape_str(mask)} has {columns.min} columns for S = {source.min}")
        scores = _broadcast(scores, mask[:-2], "the batch dims of the scores and the mask")
    if len(inputs) > SCALE and not (len(inputs[SCALE].shape) == 0 or [d.value for d in inputs[SCALE].shape] == [1]):
        raise InvalidModelError(f"the scale {shape_str(inputs[SCALE].shape)} must be a scalar or hold one element")
    if len(inputs) > SINK:
        sink = inputs[SINK].shape
        target = (*query.shape[:-1], Dim.static(1))
        if len(sink) != len(query.shape) or sink[-1].value not in (1, None):
            raise InvalidModelError(f"the sink {shape_str(sink)} must have the query's rank and one column")
        if _broadcast(target, sink, "the sink and [N.., L, 1]") != target:
            raise UnsupportedError(f"a sink {shape_str(sink)} wider than the query's {shape_str(target)}: OpenVINO's "
                                   "CPU plugin cannot broadcast it to the query's dims")
        if (*scores, rows) != tuple(query.shape[:-1]):
            raise UnsupportedError(f"a sink with scores [{', '.join(map(str, (*scores, rows)))}, S] wider than the "
                                   f"query {shape_str(query.shape)}: OpenVINO's CPU plugin broadcasts the sink to the "
                                   "query's dims and cannot compile the concatenation")
    batch = _broadcast(scores, value.shape[:-2], "the batch dims of the scores and the value")
    return [TensorInfo(element_type, (*batch, rows, value.shape[-1]))]


__all__ = ["FLOAT_TYPES", "KEY", "MASK", "QUERY", "SCALE", "SCHEMA_ROWS", "SHAPE_RULES", "SINK", "VALUE",
           "infer_attention"]
