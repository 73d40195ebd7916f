"""IR files produced by OpenVINO during the test run: poolir reads them, infers the same dims OpenVINO
declared, writes them back byte for byte, and OpenVINO reads poolir's files with the same output shapes.

Each ONNX pooling model is converted with OpenVINO's own ONNX frontend (tests/peers.py), so the IR
is whatever the installed OpenVINO emits, never a hand-copied file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

from poolir import ir
from tests.peers import openvino_convert_to_xml, openvino_core

F32, F16, F64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE


def onnx_pool(op: str, attrs: dict, shape: tuple, dtype: int = F32, opset: int = 22, outputs: int = 1):
    x = helper.make_tensor_value_info("x", dtype, ["N" if d == -1 else d for d in shape])
    ys = [helper.make_tensor_value_info("y", dtype, None)]
    if outputs == 2:
        ys.append(helper.make_tensor_value_info("indices", TensorProto.INT64, None))
    node = helper.make_node(op, ["x"], [y.name for y in ys], **attrs)
    graph = helper.make_graph([node], op.lower(), [x], ys)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


# name -> (ONNX op, attributes, input shape, dtype, opset, outputs)
MODELS = {
    "avgpool_2d": ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), (1, 3, 9, 9), F32, 11, 1),
    "avgpool_ceil_dynamic_batch": ("AveragePool", dict(kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
                                   (-1, 2, 7, 7), F32, 22, 1),
    "avgpool_same_upper_include_pad_f16": ("AveragePool", dict(kernel_shape=[3], auto_pad="SAME_UPPER",
                                                               count_include_pad=1, strides=[2]), (-1, 2, 9), F16, 19, 1),
    "avgpool_dilations_3d_f64": ("AveragePool", dict(kernel_shape=[2, 2, 2], dilations=[2, 1, 2]), (1, 1, 6, 5, 6),
                                 F64, 19, 1),
    "maxpool_opset1": ("MaxPool", dict(kernel_shape=[2, 2]), (1, 1, 6, 6), F32, 1, 1),
    "maxpool_indices": ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), (-1, 3, 8, 8), F32,
                        12, 2),
    "maxpool_indices_storage_order": ("MaxPool", dict(kernel_shape=[2, 2], storage_order=1), (2, 3, 5, 4), F32, 12, 2),
    "maxpool_same_lower_dilations_ceil_f16": ("MaxPool", dict(kernel_shape=[2, 2], auto_pad="SAME_LOWER",
                                                              dilations=[2, 2], ceil_mode=1), (-1, 2, 7, 7), F16, 12, 2),
    "maxpool_1d_f64": ("MaxPool", dict(kernel_shape=[3], strides=[2]), (-1, 1, 10), F64, 22, 1),
    "lppool_opset1_float_p": ("LpPool", dict(kernel_shape=[2, 2], p=3.0), (1, 2, 6, 6), F32, 1, 1),
    "lppool_p1": ("LpPool", dict(kernel_shape=[2, 2], p=1, strides=[2, 2]), (-1, 2, 6, 6), F32, 11, 1),
    "lppool_p2_f16": ("LpPool", dict(kernel_shape=[3], p=2), (-1, 2, 8), F16, 18, 1),
    "lppool_p3_3d": ("LpPool", dict(kernel_shape=[2, 2, 2], p=3), (1, 1, 4, 4, 4), F64, 22, 1),
    "global_average": ("GlobalAveragePool", {}, (-1, 3, 5, 5), F32, 22, 1),
    "global_max_f16": ("GlobalMaxPool", {}, (-1, 3, 4, 6), F16, 1, 1),
    "global_lp_p2": ("GlobalLpPool", dict(p=2), (2, 3, 4, 4), F32, 2, 1),
    "global_lp_p3_f64": ("GlobalLpPool", dict(p=3), (1, 2, 5), F64, 22, 1),
}

# Every layer type the installed OpenVINO emits for these models; the union is checked below so that
# a new OpenVINO emitting something poolir does not know fails loudly here.
EXPECTED_TYPES = {"Parameter", "Const", "Result", "AvgPool", "MaxPool", "Abs", "Power", "Multiply", "ConvertLike",
                  "Convert", "Transpose", "ReduceMean", "ReduceMax", "ReduceSum", "Sqrt", "Split", "Reshape", "Concat"}


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("openvino_ir")
    paths = {}
    for name, (op, attrs, shape, dtype, opset, outputs) in MODELS.items():
        paths[name] = openvino_convert_to_xml(onnx_pool(op, attrs, shape, dtype, opset, outputs), folder / f"{name}.xml")
    return paths


def _ov_output_shapes(path: Path) -> list[str]:
    model = openvino_core().read_model(str(path))
    return [str(output.get_partial_shape()) for output in model.outputs]


def _bin(path: Path) -> bytes:
    weights = path.with_suffix(".bin")
    return weights.read_bytes() if weights.exists() else b""


@pytest.mark.parametrize("name", list(MODELS))
def test_openvino_ir_reads_infers_and_rewrites_identically(converted, tmp_path: Path, name: str) -> None:
    source = converted[name]
    model = ir.read_model(source)
    # Inference agrees with every dim and element type OpenVINO declared.
    assert [str(w) for w in ir.check(model)] == []
    # Re-serialising OpenVINO's own file reproduces it byte for byte (same layout, order and .bin).
    xml_bytes, bin_bytes = ir.serialize(model)
    assert xml_bytes == source.read_bytes()
    assert bin_bytes == _bin(source)
    # And poolir's file read back and written again is identical too.
    again = tmp_path / "again.xml"
    ir.write_model(model, again)
    assert ir.serialize(ir.read_model(again)) == (xml_bytes, bin_bytes)
    # OpenVINO reads poolir's files (v11 and v10) with the same output shapes as its own.
    expected = _ov_output_shapes(source)
    assert _ov_output_shapes(again) == expected
    v10 = tmp_path / "v10.xml"
    ir.write_model(model, v10, version=10)
    assert _ov_output_shapes(v10) == expected
    assert ir.read_model(v10).version == 10


def test_every_emitted_layer_type_is_covered(converted) -> None:
    seen: dict[str, set[str]] = {}
    for path in converted.values():
        for layer in ir.read_model(path).layers:
            seen.setdefault(layer.type, set()).add(layer.version)
    assert set(seen) == EXPECTED_TYPES, sorted(seen)
    assert seen["AvgPool"] == {"opset1", "opset16"}  # ONNX dilations need AvgPool-16
    assert seen["MaxPool"] >= {"opset1", "opset8"}


def test_openvino_ir_values_match_openvino_consts(converted) -> None:
    """Const payloads read from OpenVINO's .bin equal what OpenVINO itself holds."""
    source = converted["lppool_opset1_float_p"]
    model = ir.read_model(source)
    ours = sorted(float(np.ravel(layer.data)[0]) for layer in model.layers_of_type("Const")
                  if layer.attrs["element_type"] == "f32")
    theirs = sorted(float(np.ravel(op.get_data())[0]) for op in openvino_core().read_model(str(source)).get_ops()
                    if op.get_type_name() == "Constant" and op.get_element_type().get_type_name() == "f32")
    assert ours == theirs


def _openvino_api_models():
    """Graphs built with OpenVINO's Python API and saved by OpenVINO: forms its serializer chooses itself."""
    import openvino as ov
    import openvino.opset1 as ov1
    import openvino.opset12 as ov12

    def empty_axes(x):  # OpenVINO writes an empty Const with size="1" and one byte in the .bin
        return ov1.reduce_sum(x, ov.op.Constant(ov.Type.i64, ov.Shape([0]), []), True)

    def reflect_pad(x):  # OpenVINO gives Pad a pad_value input in every pad_mode
        return ov12.pad(x, np.array([0, 0, 1, 2]), np.array([0, 0, 2, 1]), "reflect")

    return {"empty_const": empty_axes, "pad_value_in_reflect_mode": reflect_pad}


@pytest.mark.parametrize("name", list(_openvino_api_models()))
def test_openvino_serializer_forms_are_read(tmp_path: Path, name: str) -> None:
    import openvino as ov
    import openvino.opset1 as ov1

    x = ov1.parameter([1, 2, 4, 4], np.float32, name="x")
    node = _openvino_api_models()[name](x)
    source = tmp_path / "source.xml"
    ov.save_model(ov.Model([node], [x], name), str(source), compress_to_fp16=False)
    model = ir.read_model(source)
    assert ir.check(model) == []
    assert ir.serialize(model) == (source.read_bytes(), _bin(source))
