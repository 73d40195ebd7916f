"""Regressions in poolir.ir: each test names the input that once went wrong and what happened then.

The rule each one pins is stated next to the code that enforces it; the story lives here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from poolir import ir
from poolir.ir.builder import GraphBuilder
from poolir.ir.errors import InvalidModelError, PoolirError, UsageError, node_label
from tests.ir.test_hostile import BASE_BIN, BASE_XML

PARAM = "layer 'x' (id 0, Parameter)"


def _read(tmp_path: Path, xml: str) -> ir.Model:
    path = tmp_path / "model.xml"
    path.write_text(xml)
    path.with_suffix(".bin").write_bytes(BASE_BIN)
    return ir.read_model(path)


def test_an_empty_layer_name_is_refused(tmp_path: Path) -> None:
    """A Parameter named "" was read, and the converter made an ONNX graph input called ""."""
    xml = BASE_XML.replace('<layer id="0" name="x"', '<layer id="0" name=" "', 1)
    with pytest.raises(InvalidModelError, match="the layer name is empty"):
        _read(tmp_path, xml)


@pytest.mark.parametrize("shape", ["0,4611686018427387904", "0,2147483648,2147483648"])
def test_a_zero_dim_does_not_hide_a_huge_declared_shape(tmp_path: Path, shape: str) -> None:
    """These Parameter shapes hold no element, and numpy's reshape raised ValueError on them."""
    xml = BASE_XML.replace('shape="1,1,4,4"', f'shape="{shape}"', 1)
    with pytest.raises(InvalidModelError, match="the Parameter shape .* has more than 2147483648 elements") as caught:
        _read(tmp_path, xml)
    assert PARAM in str(caught.value)


def test_a_name_xml_cannot_hold_is_refused_when_writing() -> None:
    """A converted ONNX name holding \\x17 was written to an .xml file that could then not be read back."""
    b = GraphBuilder("names")
    b.result(b.parameter("in\x17put", "f32", (1,)))
    with pytest.raises(UsageError, match="U\\+0017, which an IR .xml file cannot represent"):
        ir.serialize(b.build())


def test_a_float_gather_axis_is_refused_not_truncated() -> None:
    """An f32 Const as the Gather axis was silently truncated to an integer (an empty one raised IndexError:
    see corpus/gather_empty_axis.xml in tests/robustness)."""
    b = GraphBuilder("gather")
    x = b.parameter("x", "f32", (2, 3))
    with pytest.raises(PoolirError, match="the Gather axis must be an integer, got element type f32"):
        b.add("Gather", "opset8", [x, b.const(np.asarray([0], np.int64)), b.const(np.float32(1.5))])


def test_an_empty_pad_value_is_refused() -> None:
    """An empty f32 Const as Pad's pad_value was accepted, ran, and broke the ONNX writer's reshape to a scalar."""
    b = GraphBuilder("pad")
    x = b.parameter("x", "f32", (1, 2))
    pads = b.const(np.asarray([0, 1], np.int64))
    with pytest.raises(PoolirError, match=r"pad_value must be a scalar, got shape \[0\]"):
        b.add("Pad", "opset1", [x, pads, pads, b.const(np.zeros(0, np.float32))], {"pad_mode": "constant"})


def test_control_characters_in_a_name_keep_the_message_on_one_line() -> None:
    """An ONNX op_type "AveragePool*\\x15\\n..." made a two-line message, which the CLI prints as one line."""
    message = str(PoolirError("unsupported", file="m.onnx", where=node_label("pool", "AveragePool*\x15\nx")))
    assert message == "m.onnx: node 'pool' (AveragePool*\\x15\\nx): unsupported"
