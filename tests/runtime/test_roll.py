"""Roll-7 (IR) against OpenVINO's CPU plugin and its spec's worked examples, and its ONNX form (Slice, Slice, Concat
per rolled axis, the split computed from Shape and Mod when the shift or the length is known only at run time)
run by onnxruntime. Roll moves elements: every comparison is exact."""

from __future__ import annotations

import random

import numpy as np
import onnx
import openvino.opset1 as ov1
import openvino.opset7 as ov7
import pytest

from poolir import ir, runtime
from poolir.converter import ir_to_onnx
from poolir.ir.errors import ConversionError, InvalidModelError
from tests.peers import onnxruntime_run, openvino_run_xml
from tests.runtime.ir_cases import OV_TYPES, assert_matches_openvino, save_ir


def _roll_ir(path, shape, dtype, shift, axes, *, computed_shift=False, dims=None):
    """IR with x (declared dims `dims`, default `shape`) rolled by a constant (or Parameter "shift") along constant
    axes."""
    x = ov1.parameter(list(dims or shape), OV_TYPES[np.dtype(dtype)], name="x")
    params = [x]
    if computed_shift:
        shift_node = ov1.parameter(list(np.shape(shift)), OV_TYPES[np.asarray(shift).dtype], name="shift")
        params.append(shift_node)
    else:
        shift_node = ov1.constant(np.asarray(shift))
    node = ov7.roll(x, shift_node, ov1.constant(np.asarray(axes)))
    return save_ir([node.output(0)], params, path)


SPEC_DATA = np.arange(1, 13, dtype=np.float32).reshape(4, 3)


@pytest.mark.parametrize("shift,axes,want", [
    ([1], [0], [[10, 11, 12], [1, 2, 3], [4, 5, 6], [7, 8, 9]]),
    ([-1, 2], [0, 1], [[5, 6, 4], [8, 9, 7], [11, 12, 10], [2, 3, 1]]),
    ([1, 2, 1], [0, 1, 0], [[8, 9, 7], [11, 12, 10], [2, 3, 1], [5, 6, 4]]),   # axis 0 twice: shifted by 1 + 1
])
def test_the_specs_examples(shift, axes, want, tmp_path):
    xml = _roll_ir(tmp_path / "model.xml", (4, 3), np.float32, np.array(shift, np.int64), np.array(axes, np.int64))
    got = next(iter(runtime.Session(ir.read_model(xml)).run({"x": SPEC_DATA}).values()))
    np.testing.assert_array_equal(got, want)


def _grid(count=60, seed=2):
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        rank = rng.randint(1, 4)
        shape = tuple(rng.randint(1, 5) for _ in range(rank))
        named = rng.randint(1, 3)
        axes = [rng.randint(-rank, rank - 1) for _ in range(named)]
        # sums of up to three stay inside int32, where the CPU plugin adds them (wrapping past 2^31)
        shifts = [rng.choice((0, 1, -1, 2, 7, -9, 13, 2**29 + 3)) for _ in range(named)]
        index_type = rng.choice((np.int32, np.int64))
        cases.append((shape, rng.choice((np.float32, np.int64, np.uint8, np.float16)), shifts, axes, index_type,
                      rng.random() < 0.4, rng.random() < 0.3))
    return cases


@pytest.mark.parametrize("case", _grid(), ids=str)
def test_against_openvino_and_as_onnx(case, tmp_path):
    """Negative axes, an axis named twice, shifts beyond the length and negative; a constant or computed shift, and
    static or dynamic declared dims; then the ONNX form run by onnxruntime."""
    shape, dtype, shifts, axes, index_type, computed, dynamic = case
    shift, axis = np.array(shifts, index_type), np.array(axes, index_type)
    dims = tuple(-1 for _ in shape) if dynamic else None
    xml = _roll_ir(tmp_path / "model.xml", shape, dtype, shift, axis, computed_shift=computed, dims=dims)
    x = (np.random.default_rng(len(str(case))).standard_normal(shape) * 50).astype(dtype)
    feeds = {"x": x, "shift": shift} if computed else {"x": x}
    got = next(iter(assert_matches_openvino(xml, feeds, rtol=0, atol=0).values()))
    back = ir_to_onnx(ir.read_model(xml), opset=13)
    onnx.checker.check_model(back, full_check=True)
    np.testing.assert_array_equal(next(iter(onnxruntime_run(back, feeds).values())), got)


def test_a_scalar_shift_rolls_every_axis_as_the_spec_says(tmp_path):
    """Shift 5 along axes [0, 1] is shift [5, 5] (OpenVINO 2026.4's CPU plugin refuses to compile the scalar form,
    so its 1-D form is the oracle)."""
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    scalar = _roll_ir(tmp_path / "scalar.xml", (4, 3), np.float32, np.int64(5), np.array([0, 1], np.int64))
    pairs = _roll_ir(tmp_path / "pairs.xml", (4, 3), np.float32, np.array([5, 5], np.int64),
                     np.array([0, 1], np.int64))
    with pytest.raises(RuntimeError, match="shiftDims"):
        openvino_run_xml(scalar, {"x": x})
    want = next(iter(openvino_run_xml(pairs, {"x": x}).values()))
    np.testing.assert_array_equal(next(iter(runtime.Session(ir.read_model(scalar)).run({"x": x}).values())), want)
    back = ir_to_onnx(ir.read_model(scalar))
    np.testing.assert_array_equal(next(iter(onnxruntime_run(back, {"x": x}).values())), want)


def test_a_shift_beyond_int32_is_taken_modulo_the_length(tmp_path):
    """2^40 + 1 on 4 rows is a roll by 1 (the spec's arithmetic); OpenVINO's CPU plugin, which computes shifts in
    int32, rolls by 3 (and wraps a sum past 2^31: [7, 2^31 - 1] on one axis)."""
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    xml = _roll_ir(tmp_path / "model.xml", (4, 3), np.float32, np.array([2**40 + 1], np.int64), np.array([0], np.int64))
    got = next(iter(runtime.Session(ir.read_model(xml)).run({"x": x}).values()))
    np.testing.assert_array_equal(got, x[[3, 0, 1, 2]])
    np.testing.assert_array_equal(next(iter(openvino_run_xml(xml, {"x": x}).values())), x[[1, 2, 3, 0]])


def test_an_axis_out_of_range_is_refused(tmp_path):
    """A computed (here: run-time) axis past the rank: OpenVINO ignores it, poolir refuses naming the layer."""
    x = ov1.parameter([4, 3], OV_TYPES[np.dtype(np.float32)], name="x")
    axes = ov1.parameter([1], OV_TYPES[np.dtype(np.int64)], name="axes")
    xml = save_ir([ov7.roll(x, ov1.constant(np.array([1], np.int64)), axes).output(0)], [x, axes],
                  tmp_path / "model.xml")
    feeds = {"x": SPEC_DATA, "axes": np.array([2], np.int64)}
    with pytest.raises(InvalidModelError, match="Roll.*a Roll axis = 2 is out of range for rank 2"):
        runtime.Session(ir.read_model(xml)).run(feeds)
    with pytest.raises(ConversionError, match="axes computed at run time"):
        ir_to_onnx(ir.read_model(xml))


def test_the_onnx_form_slices_and_concatenates(tmp_path):
    """A constant shift on static dims: one Slice, Slice, Concat per rolled axis, none for an axis rolled by a
    multiple of its length; a computed shift needs opset 10 (Slice with computed bounds)."""
    xml = _roll_ir(tmp_path / "model.xml", (4, 3), np.float32, np.array([1, 6], np.int64), np.array([0, 1], np.int64))
    ops = [node.op_type for node in ir_to_onnx(ir.read_model(xml)).graph.node]
    assert sorted(ops) == ["Concat", "Slice", "Slice"]
    computed = _roll_ir(tmp_path / "computed.xml", (4, 3), np.float32, np.array([1], np.int64),
                        np.array([0], np.int64), computed_shift=True)
    with pytest.raises(ConversionError, match="from opset 10"):
        ir_to_onnx(ir.read_model(computed), opset=9)
