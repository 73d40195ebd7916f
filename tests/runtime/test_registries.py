"""The runtime's registries check each other when their packages are imported.

runtime.onnx_ops: every ONNX op with a version table has an adapter, and every adapter has a table.
runtime.ir_ops: every IR layer type with a schema (ir.schema.SCHEMAS) has a builder, except the types the
executor plans itself (Parameter, Const, Result), and every builder has a schema.
Each check is run here on a copy of the real registry that lacks one entry, and must name that entry.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from poolir.ir.schema import SCHEMAS
from poolir.runtime.ir_ops.registry import BUILDERS, EXECUTOR_LAYER_TYPES, check_builders_match_schemas
from poolir.runtime.onnx_ops.registry import (ADAPTERS, OP_VERSIONS, Attribute, INT, adapter,
                                              check_adapters_match_tables, define)


def _without(registry: dict, key: str) -> dict:
    copy = dict(registry)
    del copy[key]
    return copy


# --- ONNX: version tables <-> adapters ----------------------------------------------------------------

def test_the_onnx_registries_match():
    check_adapters_match_tables(OP_VERSIONS, ADAPTERS)
    assert set(OP_VERSIONS) == set(ADAPTERS)


@pytest.mark.parametrize("op_type", ["MaxPool", "GlobalLpPool", "Relu", "Pad", "Constant", "ReduceLogSumExp"])
def test_an_op_with_a_table_but_no_adapter_is_named(op_type):
    with pytest.raises(RuntimeError, match=rf"version table but no adapter: {op_type}$"):
        check_adapters_match_tables(OP_VERSIONS, _without(ADAPTERS, op_type))


@pytest.mark.parametrize("op_type", ["AveragePool", "Cast", "Split", "ReduceSum"])
def test_an_adapter_without_a_table_is_named(op_type):
    with pytest.raises(RuntimeError, match=rf"adapter but no version table: {op_type}$"):
        check_adapters_match_tables(_without(OP_VERSIONS, op_type), ADAPTERS)


def test_defining_an_op_twice_fails():
    with pytest.raises(RuntimeError, match="ONNX op MaxPool is defined twice"):
        define("MaxPool", [(1, {"axis": Attribute(INT, 0)})])
    assert OP_VERSIONS["MaxPool"][0].since == 1 and "axis" not in OP_VERSIONS["MaxPool"][0].attributes


def test_registering_an_adapter_twice_fails():
    before = ADAPTERS["Relu"]
    with pytest.raises(RuntimeError, match="adapter for ONNX op Relu is registered twice"):
        adapter("Relu")(lambda ctx: None)
    assert ADAPTERS["Relu"] is before


# --- IR: schemas <-> builders -----------------------------------------------------------------------------

def test_the_ir_registries_match():
    check_builders_match_schemas(BUILDERS, SCHEMAS)
    assert set(BUILDERS) | set(EXECUTOR_LAYER_TYPES) == set(SCHEMAS)


@pytest.mark.parametrize("layer_type", ["AvgPool", "MaxPool", "Divide", "StridedSlice", "ReduceL2"])
def test_a_layer_type_with_a_schema_but_no_builder_is_named(layer_type):
    with pytest.raises(RuntimeError, match=rf"schema but no builder: {layer_type}$"):
        check_builders_match_schemas(_without(BUILDERS, layer_type), SCHEMAS)


@pytest.mark.parametrize("layer_type", ["MaxPool", "Convert", "Gather"])
def test_a_builder_without_a_schema_is_named(layer_type):
    with pytest.raises(RuntimeError, match=rf"builders without a layer schema: {layer_type}$"):
        check_builders_match_schemas(BUILDERS, _without(SCHEMAS, layer_type))


@pytest.mark.parametrize("layer_type", EXECUTOR_LAYER_TYPES)
def test_the_executors_own_layer_types_need_no_builder_and_take_none(layer_type):
    check_builders_match_schemas(BUILDERS, SCHEMAS)  # they have schemas and no builder: fine
    with pytest.raises(RuntimeError, match=rf"layer types the executor plans itself: {layer_type}$"):
        check_builders_match_schemas({**BUILDERS, layer_type: BUILDERS["Abs"]}, SCHEMAS)


# --- the checks run when the packages are imported ---------------------------------------------------------

@pytest.mark.parametrize("package, registry, entry, message", [
    ("poolir.runtime.onnx_ops", "poolir.runtime.onnx_ops.registry.ADAPTERS", "LpPool",
     "ONNX ops with a version table but no adapter: LpPool"),
    ("poolir.runtime.ir_ops", "poolir.runtime.ir_ops.registry.BUILDERS", "AvgPool",
     "IR layer types with a schema but no builder: AvgPool"),
])
def test_importing_the_package_runs_the_check(package, registry, entry, message):
    # In a fresh interpreter: drop one registration, then execute the package's __init__ again (its family
    # modules stay imported, so they do not register the entry back).
    module, name = registry.rsplit(".", 1)
    script = textwrap.dedent(f"""
        import importlib
        import {package} as package
        import {module} as registry
        del registry.{name}[{entry!r}]
        try:
            importlib.reload(package)
        except RuntimeError as error:
            print(error)
        else:
            print("no error")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == message
