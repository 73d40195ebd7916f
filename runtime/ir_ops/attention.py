"""IR ScaledDotProductAttention-13 (ir/ops/attention.py) onto runtime.kernels.attention, with OpenVINO's CPU
plugin's order of scaling: a scale known when compiling (a Const, or none: 1 / sqrt(E)) multiplies the key before
the product, a scale computed at run time multiplies the product, and a layer OpenVINO folds (every input
constant) is computed as its reference does, the product first."""

from __future__ import annotations

from poolir.ir.ops.attention import MASK, SCALE, SINK
from poolir.runtime.ir_ops.registry import LayerFn, LayerInfo, builder
from poolir.runtime.kernels.attention import scaled_dot_product_attention


@builder("ScaledDotProductAttention")
def _attention(info: LayerInfo) -> LayerFn:
    causal = info.layer.attrs["causal"]
    scale_key_first = not info.folded and (len(info.layer.inputs) <= SCALE or SCALE in info.constant_inputs)

    def run(args):
        query, key, value = args[:3]
        mask = args[MASK] if len(args) > MASK and not causal else None
        scale = args[SCALE] if len(args) > SCALE else None
        sink = args[SINK] if len(args) > SINK else None
        return (scaled_dot_product_attention(query, key, value, mask, scale, sink, causal=causal,
                                             scale_key_first=scale_key_first),)

    return run
