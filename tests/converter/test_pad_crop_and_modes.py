"""Pad with negative pads (crops) and the modes one world lacks, in both worlds and both conversions.

The worlds crop at different times: onnxruntime crops first and pads the rest; OpenVINO's Pad-12 pads the whole
input and crops after. They part where a reflection reaches a cropped element ([1, 2, 3, 4], reflect, begin 3,
end -2: [2, 1, 2, 1, 2] in ONNX, [4, 3, 2, 1, 2] in OpenVINO; poolir's IR runtime used to give the ONNX answer).
ONNX wrap (PyTorch's dynamo exporter writes it for padding_mode='circular') and IR symmetric have no Pad mode
in the other world and convert as a Gather of the positions they copy. Oracles: OpenVINO on IRs it builds
itself, and onnxruntime.
"""

from __future__ import annotations

import itertools

import numpy as np
import openvino as ov
import openvino.opset12 as ov12
import pytest
from onnx import TensorProto, helper

from poolir import ir, runtime
from poolir.converter import ir_to_onnx, onnx_to_ir
from poolir.ir.errors import PoolirError
from tests.peers import onnxruntime_run, openvino_run_xml
from tests.runtime.ir_cases import run_poolir, save_ir

LENGTHS = (1, 4)


def _ir_pad(path, length: int, begin: int, end: int, mode: str, first_axis=(1, -1)):
    x = ov12.parameter([2, length], np.float32, name="x")
    value = np.float32(7) if mode == "constant" else None
    padded = ov12.pad(x, np.array([first_axis[0], begin], np.int64), np.array([first_axis[1], end], np.int64), mode,
                      value)
    return save_ir([padded.output(0)], [x], path)


def _ir_cases():
    for mode, length in itertools.product(("constant", "edge", "reflect", "symmetric"), LENGTHS):
        for begin, end in itertools.product(range(-length, length + 1), repeat=2):
            if min(begin, end) < 0 or mode == "symmetric":
                yield mode, length, begin, end


@pytest.mark.parametrize("mode,length,begin,end", list(_ir_cases()))
def test_ir_pad_crops_after_padding_as_openvino_and_converts_to_onnx(mode, length, begin, end, tmp_path):
    x = np.random.default_rng(length * 31 + begin * 7 + end).standard_normal((2, length)).astype(np.float32)
    try:
        path = _ir_pad(tmp_path / "pad.xml", length, begin, end, mode)
        expected = list(openvino_run_xml(path, {"x": x}).values())[0]
    except RuntimeError:        # OpenVINO refuses these pads for this mode: so must poolir
        with pytest.raises(PoolirError):
            run_poolir(tmp_path / "pad.xml", {"x": x})
        return
    ran = list(run_poolir(path, {"x": x}).values())[0]
    np.testing.assert_array_equal(ran, expected)
    converted = list(onnxruntime_run(ir_to_onnx(ir.read_model(path)), {"x": x}).values())[0]
    np.testing.assert_array_equal(converted, expected)


def _onnx_pad(mode: str, length: int, pads: list[int], opset: int = 19, dynamic: bool = False):
    node = helper.make_node("Pad", ["x", "pads"], ["y"], mode=mode)
    shape = [3, "L" if dynamic else length]
    graph = helper.make_graph([node], "pad", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [helper.make_tensor("pads", TensorProto.INT64, [4], pads)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def _onnx_cases():
    for mode, length in itertools.product(("constant", "edge", "reflect", "wrap"), LENGTHS):
        for begin, end in itertools.product(range(-length, length + 3), repeat=2):
            if min(begin, end) < 0 or mode == "wrap" or mode == "reflect" and max(begin, end) >= length:
                yield mode, length, begin, end


def _expected_onnx(mode: str, pads: list[int], x: np.ndarray) -> np.ndarray:
    """onnxruntime's result (it raises where it refuses the pads)."""
    return list(onnxruntime_run(_onnx_pad(mode, x.shape[1], pads), {"x": x}).values())[0]


@pytest.mark.parametrize("mode,length,begin,end", list(_onnx_cases()))
def test_onnx_pad_crops_first_and_converts_to_ir_exactly(mode, length, begin, end, tmp_path):
    pads = [1, begin, -1, end]
    model = _onnx_pad(mode, length, pads)
    x = np.random.default_rng(length * 29 + begin * 5 + end).standard_normal((3, length)).astype(np.float32)
    try:
        expected = _expected_onnx(mode, pads, x)
    except Exception:  # noqa: BLE001 - onnxruntime refuses: a crop below zero, reflect past the edge, an empty axis
        if length + begin + end != 0:   # poolir refuses them too
            with pytest.raises(PoolirError):
                runtime.Session(model).run({"x": x})
            return
        # onnxruntime refuses any edge/reflect/wrap input whose crop leaves an empty axis, even with nothing to
        # pad there; poolir returns the empty result (nothing is invented), as for a constant pad.
        expected = np.zeros((3, 0), np.float32)
    np.testing.assert_array_equal(runtime.Session(model).run({"x": x})["y"], expected)
    try:
        converted = onnx_to_ir(model)
    except PoolirError:  # only that empty result: OpenVINO's Pad refuses any reflect of an empty axis
        assert expected.size == 0 and mode == "reflect"
        return
    np.testing.assert_array_equal(runtime.Session(converted).run({"x": x})["y"], expected)
    if expected.size:  # OpenVINO 2026.4's CPU plugin dies of SIGFPE on a Slice + Gather to an empty tensor
        ir.write_model(converted, tmp_path / "pad.xml")
        np.testing.assert_array_equal(list(openvino_run_xml(tmp_path / "pad.xml", {"x": x}).values())[0], expected)


def test_onnx_pad_crop_converts_with_a_dynamic_axis(tmp_path):
    model = _onnx_pad("reflect", 0, [0, -2, 0, 1], dynamic=True)
    converted = onnx_to_ir(model)
    ir.write_model(converted, tmp_path / "pad.xml")
    for length in (4, 7):
        x = np.arange(3 * length, dtype=np.float32).reshape(3, length)
        expected = list(onnxruntime_run(model, {"x": x}).values())[0]
        np.testing.assert_array_equal(runtime.Session(converted).run({"x": x})["y"], expected)
        np.testing.assert_array_equal(list(openvino_run_xml(tmp_path / "pad.xml", {"x": x}).values())[0], expected)


def test_onnx_wrap_on_a_dynamic_axis_is_refused_naming_the_fix():
    with pytest.raises(PoolirError, match="wrap on axis 1 of dynamic length.*--input-shape"):
        onnx_to_ir(_onnx_pad("wrap", 0, [0, 1, 0, 1], dynamic=True))


def test_ir_symmetric_pad_on_a_dynamic_axis_is_refused(tmp_path):
    x = ov12.parameter([2, -1], np.float32, name="x")
    padded = ov12.pad(x, np.array([0, 1], np.int64), np.array([0, 1], np.int64), "symmetric")
    path = save_ir([padded.output(0)], [x], tmp_path / "pad.xml")
    with pytest.raises(PoolirError, match="symmetric on axis 1 of dynamic length"):
        ir_to_onnx(ir.read_model(path))


def test_ir_pad_with_only_zero_pads_converts_in_every_mode(tmp_path):
    for mode in ("constant", "edge", "reflect", "symmetric"):
        path = _ir_pad(tmp_path / f"{mode}.xml", 3, 0, 0, mode, first_axis=(0, 0))
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        expected = list(ov.Core().compile_model(str(path), "CPU")({"x": x}).values())[0]
        converted = list(onnxruntime_run(ir_to_onnx(ir.read_model(path)), {"x": x}).values())[0]
        np.testing.assert_array_equal(converted, expected)
