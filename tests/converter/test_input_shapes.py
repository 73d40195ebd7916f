"""converter/input_shapes.py: the one --input-shape parser (poolir, polygraphy and ovc spellings)."""

from __future__ import annotations

import pytest

from poolir.converter.input_shapes import parse_input_shape
from poolir.ir.errors import UsageError


@pytest.mark.parametrize("text, expected", [
    ("x=1,3,224,224", ("x", (1, 3, 224, 224))),
    ("x:[1,3,224,224]", ("x", (1, 3, 224, 224))),
    ("x[1,3,224,224]", ("x", (1, 3, 224, 224))),
    ("x=?,3,-1,7", ("x", (-1, 3, -1, 7))),
    ("x:[1, 3, ?, ?]", ("x", (1, 3, -1, -1))),
    ("input:0=1,2", ("input:0", (1, 2))),          # a TensorFlow-style name keeps its colon
    ("a=b=1,2", ("a=b", (1, 2))),                  # the last '=' separates the dims
    ("data.1[8]", ("data.1", (8,))),
])
def test_the_three_spellings(text, expected):
    assert parse_input_shape(text) == expected


@pytest.mark.parametrize("text, problem", [
    ("1,2,3", "expected NAME=1,3,224,224, NAME:[1,3,224,224] or NAME[1,3,224,224]"),
    ("=1,2", "expected NAME="),
    ("x[1,2", "expected NAME="),
    ("x=1,,2", "dim '' is not a positive integer"),
    ("x=0,2", "dim '0' is not a positive integer"),
    ("x=1.5", "dim '1.5' is not a positive integer"),
])
def test_bad_values_say_what_is_expected(text, problem):
    with pytest.raises(UsageError, match="--input-shape") as caught:
        parse_input_shape(text)
    assert problem in str(caught.value)


def test_a_dynamic_dim_only_where_the_command_can_keep_it():
    with pytest.raises(UsageError, match="dim \\? left dynamic"):
        parse_input_shape("x=1,?", allow_dynamic=False)
