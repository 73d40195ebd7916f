"""IR layer type -> its ONNX converter, one registry per family, checked at import against ir.schema.

Every IR layer type with a schema (ir.schema.SCHEMAS) has a converter here or is listed in NOT_CONVERTED
with the reason; a converter for a type without a schema fails too. FOLDS are the patterns a family
writes as one ONNX node (OpenVINO's LpPool decomposition, a Global pool), keyed by the layer type where
the pattern starts and tried before that layer's own converter.
"""

from __future__ import annotations

from typing import Callable

from poolir.converter.ir_to_onnx import (activation, attention, convolution, elementwise, generation, io, matmul,
                                         movement, normalization, pointwise, pooling, rearrange, reduction, resize,
                                         scatter, transposed_convolution)
from poolir.converter.ir_to_onnx.context import Context
from poolir.converter.registry import RegistryError, check_coverage, merge_families
from poolir.ir.model import Layer
from poolir.ir.schema import SCHEMAS

LayerConverter = Callable[[Context, Layer], None]
Fold = Callable[[Context, Layer], bool]  # True when it wrote the layer (and the layers it folded)

CONVERTERS: dict[str, LayerConverter] = merge_families("IR layer type", {
    "io": io.CONVERTERS,
    "pooling": pooling.CONVERTERS,
    "elementwise": elementwise.CONVERTERS,
    "movement": movement.CONVERTERS,
    "reduction": reduction.CONVERTERS,
    "convolution": convolution.CONVERTERS,
    "matmul": matmul.CONVERTERS,
    "normalization": normalization.CONVERTERS,
    "activation": activation.CONVERTERS,
    "pointwise": pointwise.CONVERTERS,
    "rearrange": rearrange.CONVERTERS,
    "transposed_convolution": transposed_convolution.CONVERTERS,
    "resize": resize.CONVERTERS,
    "generation": generation.CONVERTERS,
    "scatter": scatter.CONVERTERS,
    "attention": attention.CONVERTERS,
})
FOLDS: dict[str, Fold] = merge_families("IR layer type", {"pooling": pooling.FOLDS, "pointwise": pointwise.FOLDS,
                                                          "normalization": normalization.FOLDS})

# Every layer type poolir reads converts today.
NOT_CONVERTED: dict[str, str] = {}


def check_registry(converters: dict[str, LayerConverter] = CONVERTERS,
                   not_converted: dict[str, str] = NOT_CONVERTED) -> None:
    """Raise RegistryError naming every IR layer type without a converter or reason, or with one but no schema;
    a fold must start at a layer type that has a converter of its own."""
    check_coverage("IR layer type", SCHEMAS, converters, not_converted, "schema in ir.schema.SCHEMAS")
    unconverted = sorted(set(FOLDS) - set(converters))
    if unconverted:
        raise RegistryError(f"IR layer type {', '.join(unconverted)}: a fold starts there, but no converter")


check_registry()
