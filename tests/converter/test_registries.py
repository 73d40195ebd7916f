"""The converter registries check each other at import: every IR layer type with a schema has an IR -> ONNX
converter, every ONNX op in the runtime's table an ONNX -> IR converter, or either is listed as not convertible
with the reason; a converter for a type the tables do not know fails too. These tests run the same checks on
copies with an entry missing or added, and see them fail naming it."""

from __future__ import annotations

import pytest

from poolir.converter.ir_to_onnx import registry as ir_to_onnx_registry
from poolir.converter.onnx_to_ir import registry as onnx_to_ir_registry
from poolir.converter.registry import RegistryError
from poolir.ir.schema import SCHEMAS
from poolir.runtime.onnx_ops import OP_VERSIONS

REGISTRIES = {"ir_to_onnx": ir_to_onnx_registry, "onnx_to_ir": onnx_to_ir_registry}


def _without(mapping: dict, key: str) -> dict:
    return {k: v for k, v in mapping.items() if k != key}


@pytest.mark.parametrize("direction", REGISTRIES)
def test_the_registries_as_shipped_pass_their_checks(direction):
    REGISTRIES[direction].check_registry()


def test_every_schema_type_and_every_table_op_is_covered():
    ir_side = ir_to_onnx_registry
    assert set(SCHEMAS) == set(ir_side.CONVERTERS) | set(ir_side.NOT_CONVERTED)
    onnx_side = onnx_to_ir_registry
    assert set(OP_VERSIONS) == set(onnx_side.CONVERTERS) | set(onnx_side.NOT_CONVERTED) | onnx_side.BY_THE_DRIVER


@pytest.mark.parametrize("missing", ["MaxPool", "Parameter", "ReduceL2", "StridedSlice"])
def test_an_ir_layer_type_without_a_converter_fails_naming_it(missing):
    converters = _without(ir_to_onnx_registry.CONVERTERS, missing)
    with pytest.raises(RegistryError, match=rf"IR layer type {missing}: no converter"):
        ir_to_onnx_registry.check_registry(converters, {})


def test_an_ir_layer_type_listed_as_not_convertible_passes_and_needs_a_reason():
    converters = _without(ir_to_onnx_registry.CONVERTERS, "Broadcast")
    ir_to_onnx_registry.check_registry(converters, {"Broadcast": "mode explicit has no ONNX form"})
    with pytest.raises(RegistryError, match="Broadcast: listed as not convertible without a reason"):
        ir_to_onnx_registry.check_registry(converters, {"Broadcast": " "})


def test_an_ir_converter_for_a_type_without_a_schema_fails_naming_it():
    converters = {**ir_to_onnx_registry.CONVERTERS, "DeformableConvolution": lambda context, layer: None}
    with pytest.raises(RegistryError, match="IR layer type DeformableConvolution: a converter or a reason, but no schema"):
        ir_to_onnx_registry.check_registry(converters, {})


def test_an_ir_type_with_a_converter_and_a_reason_fails():
    with pytest.raises(RegistryError, match="IR layer type MaxPool: a converter, and listed as not convertible"):
        ir_to_onnx_registry.check_registry(ir_to_onnx_registry.CONVERTERS, {"MaxPool": "why"})


@pytest.mark.parametrize("missing", ["MaxPool", "GlobalLpPool", "Identity"])
def test_an_onnx_op_without_a_converter_fails_naming_it(missing):
    converters = _without(onnx_to_ir_registry.CONVERTERS, missing)
    with pytest.raises(RegistryError, match=rf"ONNX op {missing}: no converter"):
        onnx_to_ir_registry.check_registry(converters, onnx_to_ir_registry.NOT_CONVERTED)


@pytest.mark.parametrize("op", ["Exp", "Equal", "ReduceLogSum", "Where"])
def test_an_onnx_op_listed_as_not_convertible_passes_and_dropping_the_reason_fails(op):
    converters = _without(onnx_to_ir_registry.CONVERTERS, op)
    onnx_to_ir_registry.check_registry(converters, {op: "not yet converted to IR"})
    with pytest.raises(RegistryError, match=rf"ONNX op {op}: no converter"):
        onnx_to_ir_registry.check_registry(converters, {})


def test_every_onnx_op_the_runtime_runs_converts_to_ir():
    assert onnx_to_ir_registry.NOT_CONVERTED == {}
