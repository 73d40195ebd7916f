"""`poolir convert`: both directions through the command line, exit codes, messages, atomic outputs."""

from __future__ import annotations

import os
import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import helper

from poolir import ir
from poolir.converter.cli import main
from tests.peers import onnxruntime_run, openvino_run_xml


def _save_pool(path, op="MaxPool", attrs=None, shape=("N", 2, 5, 5), opset=13, outputs=("y",)) -> None:
    attrs = attrs or {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [0, 0, 1, 1], "ceil_mode": 1}
    node = helper.make_node(op, ["x"], list(outputs), name="pool", **attrs)
    infos = [helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT if o == "y" else onnx.TensorProto.INT64,
                                           [None] * len(shape)) for o in outputs]
    graph = helper.make_graph([node], "net", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, list(shape))],
                              infos)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10), path)


def invoke(*args):
    return CliRunner().invoke(main, ["convert", *map(str, args)])


def test_onnx_to_ir_to_onnx(tmp_path):
    source, xml, back = tmp_path / "m.onnx", tmp_path / "m.xml", tmp_path / "back.onnx"
    _save_pool(source, outputs=("y", "indices"))
    result = invoke(source, "-o", xml)
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "m.bin").exists()  # no Const data, no .bin
    x = np.random.default_rng(3).permutation(150).reshape(3, 2, 5, 5).astype(np.float32)
    expected = onnxruntime_run(onnx.load(source), {"x": x})
    got = openvino_run_xml(xml, {"x": x})
    for name in ("y", "indices"):
        np.testing.assert_array_equal(got[name], expected[name])
    result = invoke(xml, "-o", back, "--opset", 12)
    assert result.exit_code == 0, result.output
    converted = onnx.load(back)
    assert converted.opset_import[0].version == 12
    for name, value in onnxruntime_run(converted, {"x": x}).items():
        np.testing.assert_array_equal(value, expected[name])


def test_bin_written_when_the_ir_has_constants_and_ir_version_10(tmp_path):
    source, xml = tmp_path / "lp.onnx", tmp_path / "lp.xml"
    _save_pool(source, "LpPool", {"kernel_shape": [2, 2], "p": 3}, shape=(1, 2, 4, 4), opset=18)
    result = invoke(source, "-o", xml, "--ir-version", "10")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "lp.bin").exists()
    assert ir.read_model(xml).version == 10


def test_input_shape_fixes_a_dynamic_length(tmp_path):
    # MaxPool k=2, s=3, pads 1, dilation 3: at L = 2 the one window holds only padding (ONNX -inf, OpenVINO its
    # lowest finite value), so no IR is exact for every length; at L = 6 the windows are (pad, 3) and (3, 6).
    source, xml = tmp_path / "pool.onnx", tmp_path / "pool.xml"
    _save_pool(source, "MaxPool", {"kernel_shape": [2], "strides": [3], "pads": [1, 1], "dilations": [3]},
               shape=(1, 1, "L"))
    refused = invoke(source, "-o", xml)
    assert refused.exit_code == 2
    assert "pool.onnx: node 'pool' (MaxPool):" in refused.output and "--input-shape" in refused.output
    assert not xml.exists()
    result = invoke(source, "-o", xml, "--input-shape", "x=1,1,6")
    assert result.exit_code == 0, result.output
    got = openvino_run_xml(xml, {"x": np.arange(1, 7, dtype=np.float32).reshape(1, 1, 6)})
    np.testing.assert_allclose(got["y"].ravel(), [3.0, 6.0])


@pytest.mark.parametrize("args, message", [
    (("--opset", "12"), "--opset applies to IR -> ONNX"),
    (("--input-shape", "x=1,2,a"), "is not a positive integer"),
    (("--input-shape", "1,2"), "expected NAME=1,3,224,224"),
    (("--input-shape", "z=1,2,5,5"), "no input called"),
])
def test_usage_errors_exit_2_with_one_line(tmp_path, args, message):
    source = tmp_path / "m.onnx"
    _save_pool(source)
    result = invoke(source, "-o", tmp_path / "m.xml", *args)
    assert result.exit_code == 2
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "m.xml").exists()


def test_bad_inputs_exit_2(tmp_path):
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x00not a model")
    assert invoke(garbage, "-o", tmp_path / "g.xml").exit_code == 2
    source = tmp_path / "m.onnx"
    _save_pool(source)
    wrong_pair = invoke(source, "-o", tmp_path / "m.onnx2")
    assert wrong_pair.exit_code == 2 and "expected .onnx -> .xml or .xml -> .onnx" in wrong_pair.output
    assert invoke(source, "-o", source).exit_code == 2
    unsupported = tmp_path / "sin.onnx"  # Sin: neither run nor converted by poolir
    graph = helper.make_graph([helper.make_node("Sin", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 2])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 2])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10), unsupported)
    result = invoke(unsupported, "-o", tmp_path / "sin.xml")
    assert result.exit_code == 2 and "unsupported operators: Sin (ai.onnx, opset 13)" in result.output


def test_refused_ir_leaves_no_output(tmp_path):
    xml = tmp_path / "hand.xml"
    builder = ir.GraphBuilder("hand")
    x = builder.parameter("x", "f32", (1, 1, 4))
    # A ceil window wholly in the padding, with the indices used: no exact ONNX form (ir_to_onnx).
    values, indices = builder.add("MaxPool", "opset8", [x], attrs={
        "kernel": (2,), "strides": (2,), "pads_begin": (0,), "pads_end": (1,), "rounding_type": "ceil",
        "dilations": (1,), "axis": 0, "index_element_type": "i64"}, name="pool")
    builder.result(values, name="y")
    builder.result(indices, name="indices")
    ir.write_model(builder.build(), xml)
    result = invoke(xml, "-o", tmp_path / "hand.onnx")
    assert result.exit_code == 2
    assert "hand.xml: layer 'pool' (id 1, MaxPool):" in result.output
    assert not (tmp_path / "hand.onnx").exists()


def test_output_that_is_a_hard_link_to_the_input_is_refused(tmp_path):
    # The same check as every command's (ir.atomic.refuse_overwriting_inputs): path, symlink or hard link.
    xml = tmp_path / "hand.xml"
    builder = ir.GraphBuilder("hand")
    x = builder.parameter("x", "f32", (1, 1, 4))
    (y,) = builder.add("MaxPool", "opset1", [x], attrs={"kernel": (2,), "strides": (2,), "pads_begin": (0,),
                                                        "pads_end": (0,)}, name="pool")
    builder.result(y, name="y")
    ir.write_model(builder.build(), xml)
    before = xml.read_bytes()
    link = tmp_path / "same.onnx"
    os.link(xml, link)
    result = invoke(xml, "-o", link)
    assert result.exit_code == 2 and "is the input" in result.output
    assert xml.read_bytes() == before


def test_progress_shows_the_step_under_way_once_the_conversion_is_slow():
    """A long read or write is one step with no node counts: a timer shows it once `after` has passed, and the
    steps that follow appear at once; nothing appears for a fast conversion, and the line is cleared at the end."""
    import io
    import threading

    from poolir.converter.cmd_convert import ConvertProgress

    fast = io.StringIO()
    progress = ConvertProgress(fast, after=60)
    progress.step("reading m.onnx")
    progress(1, 1)
    progress.finish()
    assert fast.getvalue() == ""

    slow, shown = io.StringIO(), threading.Event()
    progress = ConvertProgress(slow, after=0.01)
    original = progress._write
    progress._write = lambda: (original(), shown.set())
    progress.step("reading m.onnx")
    assert shown.wait(10), "the timer never showed the step"
    progress(3, 5)
    progress.step("writing m.xml, m.bin (1.2 MB)")
    progress.finish()
    lines = slow.getvalue().split("\r\033[K")
    assert lines == ["", "reading m.onnx", "converting node 3/5", "writing m.xml, m.bin (1.2 MB)", ""]


def test_ir_to_onnx_counts_layers():
    from poolir.converter import ir_to_onnx
    from poolir.converter.onnx_to_ir import onnx_to_ir

    node = helper.make_node("Relu", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])])
    model = onnx_to_ir(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    calls = []
    ir_to_onnx(model, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1, 3), (2, 3), (3, 3)]  # Parameter, ReLU, Result
