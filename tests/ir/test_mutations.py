"""Seeded random mutations of valid IR files: reading never fails with anything but a one-line PoolirError,
and whatever is accepted re-writes to identical bytes.
"""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from poolir import ir
from poolir.ir.builder import GraphBuilder
from poolir.ir.errors import PoolirError
from tests.ir.test_hostile import BASE_BIN, BASE_XML

VALUES = ["a&#10;b", "&#13;", "0", "-1", "1", "", "abc", "99999999999", "2,2", "1,1,1", "-5,3", "?", "1..", "f16",
          "i32", "boolean", "true", "opset3", "opset8", "ceil_torch", "same_lower", "valid", "nan", "3.5", "0,0,0,0",
          " ", "u1", "bf16", "MaxPool", "Abs"]
ATTRIBUTE = re.compile(r'([\w-]+)="([^"]*)"')


def _sources() -> list[tuple[str, bytes]]:
    b = GraphBuilder("maxpool")
    x = b.parameter("x", "f16", (-1, 2, 7, 7))
    outs = b.add("MaxPool", "opset8", [x], {"kernel": (3, 3), "strides": (2, 2), "pads_begin": (1, 1),
                                            "pads_end": (1, 1), "rounding_type": "ceil"})
    (shape,) = b.add("ShapeOf", "opset3", [outs[0]])
    (flat,) = b.add("Reshape", "opset1", [outs[1], b.const(np.asarray([0, -1], np.int64))], {"special_zero": True})
    b.result(outs[0], "y")
    b.result(flat, "indices")
    b.result(shape, "shape")
    xml, weights = ir.serialize(b.build())
    return [(BASE_XML, BASE_BIN), (xml.decode(), weights)]


SOURCES = _sources()


def _mutate(rng: random.Random, xml: str) -> str:
    for _ in range(rng.randint(1, 3)):
        attributes = list(ATTRIBUTE.finditer(xml))
        dims = list(re.finditer(r"<dim>([^<]*)</dim>", xml))
        kind = rng.random()
        if kind < 0.7:
            match = rng.choice(attributes)
            xml = xml[:match.start(2)] + rng.choice(VALUES) + xml[match.end(2):]
        elif kind < 0.85 and dims:
            match = rng.choice(dims)
            xml = xml[:match.start(1)] + rng.choice(VALUES) + xml[match.end(1):]
        else:
            lines = xml.split("\n")
            del lines[rng.randrange(len(lines))]
            xml = "\n".join(lines)
    return xml


@pytest.mark.parametrize("seed", range(4))
def test_mutated_files_fail_cleanly_or_round_trip(seed: int) -> None:
    rng = random.Random(seed)
    accepted = 0
    for _ in range(150):
        xml, weights = rng.choice(SOURCES)
        xml = _mutate(rng, xml)
        if rng.random() < 0.1:
            weights = weights[:rng.randrange(len(weights) + 1)]
        try:
            model = ir.parse_model(xml.encode(), weights, source="mutant.xml")
        except PoolirError as error:
            assert "\n" not in str(error) and "\r" not in str(error), str(error)
            assert str(error).startswith("mutant.xml: "), str(error)
            continue
        accepted += 1
        written = ir.serialize(model)
        assert ir.serialize(ir.parse_model(*written, source="again.xml")) == written
    assert 0 < accepted < 150
