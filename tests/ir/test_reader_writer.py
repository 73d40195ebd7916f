"""Reading and writing details: attribute spellings, dims syntax, versions, names, rt_info, Const types.

Expected values are hand-worked from OpenVINO's IR format (and, where noted, OpenVINO's reader).
"""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from poolir import ir
from poolir.ir.builder import GraphBuilder
from poolir.ir.errors import InvalidModelError, UnsupportedError, UsageError
from poolir.ir.model import Dim
from poolir.ir.attributes import parse_dim
from poolir.ir.schema import op_version
from tests.peers import openvino_core

POOL_XML = """<?xml version="1.0"?>
<net name="spellings" version="{version}">
	<rt_info>
		<framework value="hand &amp; written" />
	</rt_info>
	<layers>
		<layer id="5" name="in" type="Parameter" version="opset1">
			<data shape="{shape}" element_type="f32"/>
			<output>
				<port id="0" precision="FP32" names="in,other\\,name">
					<dim>-1</dim><dim>2</dim><dim>8</dim><dim>8</dim>
					<rt_info><attribute name="layout" version="0" layout="[N,C,H,W]"/></rt_info>
				</port>
			</output>
		</layer>
		<layer id="7" name="pool" type="{pool_type}" version="{pool_version}" extra="kept">
			<rt_info><attribute name="fused_names" version="0" value="a,b"/></rt_info>
			<data {data}/>
			<input><port id="0"><dim>-1</dim><dim>2</dim><dim>8</dim><dim>8</dim></port></input>
			<output><port id="1" names="out"><dim>-1</dim><dim>2</dim><dim>4</dim><dim>4</dim></port></output>
		</layer>
		<layer id="9" name="sink" type="Result" version="opset1">
			<input><port id="0"><dim>-1</dim><dim>2</dim><dim>4</dim><dim>4</dim></port></input>
		</layer>
	</layers>
	<edges>
		<edge from-layer="5" from-port="0" to-layer="7" to-port="0"/>
		<edge from-layer="7" from-port="1" to-layer="9" to-port="0"/>
	</edges>
</net>
"""
DATA = 'kernel="2 ,2" strides="2,2" pads_begin="0, 0" pads_end="0,0" exclude-pad="True" rounding_type="FLOOR"'


def write(tmp_path: Path, *, version: int = 11, shape: str = "?,2,8,8", pool_type: str = "AvgPool",
          pool_version: str = "opset1", data: str = DATA, name: str = "model.xml") -> Path:
    path = tmp_path / name
    path.write_text(POOL_XML.format(version=version, shape=shape, pool_type=pool_type, pool_version=pool_version,
                                    data=data))
    return path


def test_spellings_are_read_as_openvino_reads_them(tmp_path: Path) -> None:
    path = write(tmp_path)
    model = ir.read_model(path)
    pool = model.layer(7)
    assert pool.attrs == {"kernel": (2, 2), "strides": (2, 2), "pads_begin": (0, 0), "pads_end": (0, 0),
                          "exclude-pad": True, "auto_pad": "explicit", "rounding_type": "floor"}
    assert model.layer(5).outputs[0].names == ("in", "other,name")
    assert pool.element_attrs == {"extra": "kept"}
    assert pool.inputs[0].element_type is None  # no precision written: unknown, not guessed
    assert ir.check(model) == []
    # OpenVINO accepts the file poolir writes from it with the same output shape.
    rewritten = tmp_path / "rewritten.xml"
    ir.write_model(model, rewritten)
    assert str(openvino_core().read_model(str(rewritten)).outputs[0].get_partial_shape()) == "[?,2,4,4]"


def test_rt_info_and_names_survive_the_round_trip(tmp_path: Path) -> None:
    model = ir.read_model(write(tmp_path))
    xml, _ = ir.serialize(model)
    text = xml.decode()
    assert '<framework value="hand &amp; written" />' in text
    assert '<attribute name="fused_names" version="0" value="a,b" />' in text
    assert '<attribute name="layout" version="0" layout="[N,C,H,W]" />' in text
    assert 'names="in,other\\,name"' in text
    again = tmp_path / "again.xml"
    again.write_bytes(xml)
    assert ir.serialize(ir.read_model(again)) == (xml, b"")
    reread = ir.read_model(again)
    assert reread.layer(7).rt_info == model.layer(7).rt_info
    assert reread.rt_info == model.rt_info


def test_ir_v10_is_read_and_written(tmp_path: Path) -> None:
    model = ir.read_model(write(tmp_path, version=10))
    assert model.version == 10
    assert model.layer(5).outputs[0].names == ()  # v10 has no tensor names
    assert b'version="10"' in ir.serialize(model)[0]
    assert b'version="11"' in ir.serialize(model, version=11)[0]
    with pytest.raises(UsageError):
        ir.serialize(model, version=9)


@pytest.mark.parametrize("text,dim", [
    ("8", Dim(8, 8)), ("?", Dim(0, None)), ("-1", Dim(0, None)), ("1..8", Dim(1, 8)), ("..8", Dim(0, 8)),
    ("1..", Dim(1, None)), (" 3 ", Dim(3, 3)),
])
def test_dim_syntax(text: str, dim: Dim) -> None:
    assert parse_dim(text) == dim


@pytest.mark.parametrize("text", ["-2", "8..1", "a", "1..b", ""])
def test_bad_dim_syntax(text: str) -> None:
    with pytest.raises(UsageError):
        parse_dim(text)


def test_parameter_shape_ranges(tmp_path: Path) -> None:
    model = ir.read_model(write(tmp_path, shape="1..8,2,8,8"))
    assert model.layer(5).attrs["shape"][0] == Dim(1, 8)
    assert b'shape="1..8,2,8,8"' in ir.serialize(model)[0]


@pytest.mark.parametrize("layer_type,version,since", [
    ("AvgPool", "opset1", 1), ("AvgPool", "opset8", 1), ("AvgPool", "opset13", 1), ("AvgPool", "opset14", 14),
    ("AvgPool", "opset15", 14), ("AvgPool", "opset16", 16), ("MaxPool", "opset7", 1), ("MaxPool", "opset8", 8),
    ("MaxPool", "opset13", 8), ("MaxPool", "opset16", 14), ("Gather", "opset8", 8), ("ShapeOf", "opset2", 1),
])
def test_opset_names_select_op_versions_like_openvino(layer_type: str, version: str, since: int) -> None:
    """An opset holds the newest op version introduced at or before it (checked with OpenVINO's reader:
    AvgPool in opset8 is AvgPool-1, in opset15 AvgPool-14; opset17 has no AvgPool)."""
    assert op_version(layer_type, version).since == since


@pytest.mark.parametrize("version", ["opset0", "opset17", "opsetX", "Opset1", ""])
def test_unknown_versions_are_refused_with_the_supported_list(version: str) -> None:
    with pytest.raises(UnsupportedError, match=r"supported: opset1\.\.13, opset14\.\.15, opset16\.\.16"):
        op_version("AvgPool", version)


def test_dilations_default_to_ones(tmp_path: Path) -> None:
    model = ir.read_model(write(tmp_path, pool_type="AvgPool", pool_version="opset16", data=DATA))
    assert model.layer(7).attrs["dilations"] == (1, 1)
    assert model.layer(7).attrs["rounding_type"] == "floor"


def test_ports_without_precision_get_the_inferred_one_when_written(tmp_path: Path) -> None:
    """OpenVINO's reader requires `precision` on every port; the spec's examples omit it."""
    xml, _ = ir.serialize(ir.read_model(write(tmp_path)))
    assert xml.count(b'precision="FP32"') == 4


def test_maxpool8_needs_both_output_ports(tmp_path: Path) -> None:
    path = write(tmp_path, pool_type="MaxPool", pool_version="opset8",
                 data='kernel="2,2" strides="2,2" pads_begin="0,0" pads_end="0,0"')
    with pytest.raises(InvalidModelError, match="has 1 output ports, MaxPool-8 has 2"):
        ir.read_model(path)


@pytest.mark.parametrize("dtype,element_type", [
    (np.float16, "f16"), (ml_dtypes.bfloat16, "bf16"), (np.float64, "f64"), (np.int8, "i8"), (np.uint8, "u8"),
    (np.int32, "i32"), (np.bool_, "boolean"),
])
def test_const_element_types_round_trip(tmp_path: Path, dtype, element_type: str) -> None:
    values = np.asarray([[1, 0, 3], [4, 5, 0]]).astype(dtype)
    b = GraphBuilder("c")
    b.result(b.const(values, name="k"), "out")
    path = tmp_path / "c.xml"
    ir.write_model(b.build(), path)
    layer = ir.read_model(path).layer(0)
    assert layer.attrs["element_type"] == element_type
    assert layer.data.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(layer.data, values)
    assert path.with_suffix(".bin").stat().st_size == values.nbytes


def test_u1_const_is_unpacked_most_significant_bit_first(tmp_path: Path) -> None:
    xml = POOL_XML.split("<layers>")[0].format(version=11) + """<layers>
		<layer id="0" name="bits" type="Const" version="opset1">
			<data element_type="u1" shape="10" offset="0" size="2"/>
			<output><port id="0" precision="U1"><dim>10</dim></port></output>
		</layer>
		<layer id="1" name="out" type="Result" version="opset1">
			<input><port id="0" precision="U1"><dim>10</dim></port></input>
		</layer>
	</layers>
	<edges><edge from-layer="0" from-port="0" to-layer="1" to-port="0"/></edges>
</net>
"""
    path = tmp_path / "bits.xml"
    path.write_text(xml)
    path.with_suffix(".bin").write_bytes(bytes([0b10110000, 0b01000000]))
    model = ir.read_model(path)
    assert model.layer(0).data.tolist() == [True, False, True, True, False, False, False, False, False, True]
    _, weights = ir.serialize(model)
    assert weights == bytes([0b10110000, 0b01000000])


def test_identical_const_blobs_are_stored_once(tmp_path: Path) -> None:
    b = GraphBuilder("dedup")
    x = b.parameter("x", "f32", (2,))
    (y,) = b.add("Add", "opset1", [x, b.const(np.ones(2, np.float32))])
    (z,) = b.add("Add", "opset1", [y, b.const(np.ones(2, np.float32))])
    b.result(z, "z")
    xml, weights = ir.serialize(b.build())
    assert len(weights) == 8
    assert xml.count(b'offset="0" size="8"') == 2


def test_write_model_is_atomic_and_writes_bin_only_for_consts(tmp_path: Path) -> None:
    b = GraphBuilder("m")
    b.result(b.parameter("x", "f32", (1,)), "y")
    ir.write_model(b.build(), tmp_path / "m.xml")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.xml"]


def test_builder_names_ports_and_layers() -> None:
    b = GraphBuilder("n")
    x = b.parameter("x", "f32", (1, 1, 4))
    (a,) = b.add("Abs", "opset1", [x], name="same")
    (c,) = b.add("Abs", "opset1", [a], name="same", output_names=["inner"])
    b.result(c, "y")
    b.result(x, "x_copy")
    model = b.build()
    assert [layer.name for layer in model.layers] == ["x", "same", "same_1", "y", "x_copy"]
    assert [layer.id for layer in model.layers] == [0, 1, 2, 3, 4]
    assert model.layer(2).inputs[0].id == 0 and model.layer(2).outputs[0].id == 1
    assert model.layer(2).outputs[0].names == ("y", "inner")  # the Result's name comes first
    assert model.layer(0).outputs[0].names == ("x", "x_copy")  # the input keeps its own name first


@pytest.mark.parametrize("attrs,match", [
    ({"kernel": (2,), "strides": (1,), "pads_begin": (0,), "pads_end": (0,)}, "required attribute 'exclude-pad'"),
    ({"kernel": (2,), "strides": (1,), "pads_begin": (0,), "pads_end": (0,), "exclude-pad": True,
      "dilations": (1,)}, "'dilations' is not an attribute of AvgPool-1"),
    ({"kernel": (2,), "strides": (1,), "pads_begin": (0,), "pads_end": (0,), "exclude-pad": True,
      "rounding_type": "ceil_torch"}, "'ceil_torch' is not allowed in AvgPool-1"),
    ({"kernel": (9,), "strides": (1,), "pads_begin": (0,), "pads_end": (0,), "exclude-pad": True},
     "larger than the padded input"),
])
def test_builder_rejects_bad_attributes_at_once(attrs: dict, match: str) -> None:
    b = GraphBuilder("bad")
    x = b.parameter("x", "f32", (1, 1, 4))
    with pytest.raises(ir.PoolirError, match=match) as caught:
        b.add("AvgPool", "opset1", [x], attrs, name="p")
    assert "layer 'p' (id 1, AvgPool)" in str(caught.value)


def test_builder_refuses_duplicate_parameter_names() -> None:
    b = GraphBuilder("dup")
    b.parameter("x", "f32", (1,))
    with pytest.raises(UsageError, match="already used"):
        b.parameter("x", "f32", (1,))


def test_shape_warning_names_layer_port_and_both_dims(tmp_path: Path) -> None:
    path = write(tmp_path, data=DATA.replace('strides="2,2"', 'strides="1,1"'))
    (warning,) = ir.check(ir.read_model(path))
    assert warning.layer == "layer 'pool' (id 7, AvgPool)" and warning.port == 1
    assert str(warning).endswith("port 1: dims declared [?,2,4,4], inferred [?,2,7,7]")


def test_element_type_disagreement_is_a_warning(tmp_path: Path) -> None:
    path = write(tmp_path)
    path.write_text(path.read_text().replace('<port id="1" names="out">', '<port id="1" precision="FP16" names="out">'))
    (warning,) = ir.check(ir.read_model(path))
    assert str(warning).endswith("port 1: element type declared f16, inferred f32")
