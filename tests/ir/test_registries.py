"""The operator registries of ir/ops: what each family declares, and the import-time checks that they agree.

The checks run on copies of the real tables with one entry removed or added, so a failure here means the
check itself stopped catching the mistake it exists for.
"""

from __future__ import annotations

import pytest

from poolir.ir import ops
from poolir.ir.attributes import OpVersion
from poolir.ir.registry import RegistryError, ShapeRules, check_coverage, index_schema_rows, merge_shape_rules


def test_a_schema_type_without_a_shape_rule_fails_naming_the_type() -> None:
    rules = dict(ops.SHAPE_RULES)
    del rules["MaxPool"]
    with pytest.raises(RegistryError, match=r"no shape rule for MaxPool$"):
        check_coverage(ops.SCHEMAS, rules)


def test_a_shape_rule_without_a_schema_fails_naming_the_type() -> None:
    schemas = {name: rows for name, rows in ops.SCHEMAS.items() if name not in ("Gather", "Pad")}
    with pytest.raises(RegistryError, match=r"a shape rule but no schema for Gather, Pad$"):
        check_coverage(schemas, ops.SHAPE_RULES)


def test_the_real_registries_cover_each_other() -> None:
    check_coverage(ops.SCHEMAS, ops.SHAPE_RULES)  # what ir/ops/__init__.py runs at import
    assert set(ops.SCHEMAS) == set(ops.SHAPE_RULES)


def test_a_layer_type_registered_twice_in_a_family_fails() -> None:
    rules = ShapeRules()
    rules.register("Abs")(lambda layer, inputs: [])
    with pytest.raises(RegistryError, match="duplicate shape rule for Abs"):
        rules.register("Sqrt", "Abs")(lambda layer, inputs: [])


def test_a_layer_type_with_rules_in_two_families_fails() -> None:
    other = ShapeRules()
    other.register("AvgPool")(lambda layer, inputs: [])
    with pytest.raises(RegistryError, match="duplicate shape rule for AvgPool"):
        merge_shape_rules([ops.pooling.SHAPE_RULES, other])


def test_a_duplicate_schema_row_fails() -> None:
    rows = [*ops.pooling.SCHEMA_ROWS, OpVersion("AvgPool", 16)]
    with pytest.raises(RegistryError, match="duplicate schema row AvgPool-16"):
        index_schema_rows(rows)


def test_schema_rows_are_indexed_oldest_first() -> None:
    rows = index_schema_rows([OpVersion("Pad", 12), OpVersion("Pad", 1)])
    assert [row.since for row in rows["Pad"]] == [1, 12]


@pytest.mark.parametrize("family", ops.FAMILIES, ids=lambda module: module.__name__.rsplit(".", 1)[-1])
def test_each_family_holds_the_rules_of_its_own_rows(family) -> None:
    """A reader finds an operator by its family's name: its schema rows and its shape rule sit in one module."""
    assert {row.type for row in family.SCHEMA_ROWS} == set(family.SHAPE_RULES)
