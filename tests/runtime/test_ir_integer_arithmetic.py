"""Integer Add, Subtract, Multiply, Divide, FloorMod against OpenVINO at magnitudes where float32 is inexact.

OpenVINO 2026.4's CPU plugin runs i64 as i32 and computes integer Divide and FloorMod in float32 on run-time
inputs; it folds layers with constant inputs with its exact reference implementation. poolir's IR runtime must
compute the same in both cases (runtime/kernels/elementwise.py: openvino_cpu_integer), so that a converted
IR whose index arithmetic OpenVINO gets wrong is wrong under poolir too (issue 14).
"""

from __future__ import annotations

import numpy as np
import openvino as ov
import openvino.opset1 as ov1
import pytest

from poolir import ir
from poolir.converter import ir_to_onnx
from tests.peers import onnxruntime_run
from tests.runtime.ir_cases import OV_TYPES, assert_matches_openvino, save_ir

RNG = np.random.default_rng(14)
# Hand-picked edges (2**24 neighbours, the i32 limits, values that wrap when i64 runs as i32) and random
# values of three magnitudes: full range, around 2**26 (float32 steps of 8), small.
EDGE_A = [2**24 - 1, 2**24 + 1, 2**24 + 3, 19267583, 2**31 - 1, -2**31, 7, -7, 0, 5]
EDGE_B = [50176, 7, 7, 7, 7, -1, 0, 2, 3, 0]


def _operands(dtype):
    limit = 2**40 if dtype == np.int64 else 2**31 - 1
    a = np.concatenate([EDGE_A, RNG.integers(-limit, limit, 3000), RNG.integers(-2**26, 2**26, 3000),
                        RNG.integers(-300, 300, 3000)]).astype(dtype)
    b = np.concatenate([EDGE_B, RNG.integers(-limit, limit, 3000), RNG.integers(1, 60000, 3000),
                        RNG.integers(-9, 9, 3000)]).astype(dtype)
    return a, b


LAYERS = {"Add": ov1.add, "Subtract": ov1.subtract, "Multiply": ov1.multiply, "Divide": ov1.divide,
          "FloorMod": ov1.floor_mod, "Mod": ov1.mod}


@pytest.mark.parametrize("dtype", [np.int32, np.int64], ids=["i32", "i64"])
@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_run_time_integer_arithmetic_matches_openvino(layer, dtype, tmp_path):
    """poolir's IR run, and for i32 the ONNX IR -> ONNX writes run by onnxruntime (Divide, FloorMod and Mod in
    float32 as the plugin computes them; an i64 past int32, which the plugin wraps, is not modelled there)."""
    a, b = _operands(dtype)
    params = [ov1.parameter([a.size], OV_TYPES[np.dtype(dtype)], name=n) for n in ("a", "b")]
    path = save_ir(LAYERS[layer](*params).outputs(), params, tmp_path / "layer.xml")
    got = assert_matches_openvino(path, {"a": a, "b": b}, context=f"{layer} {np.dtype(dtype)}")
    if dtype == np.int32:
        (converted,) = onnxruntime_run(ir_to_onnx(ir.read_model(path)), {"a": a, "b": b}).values()
        np.testing.assert_array_equal(converted, list(got.values())[0], err_msg=f"{layer} converted")


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8], ids=["i32", "i64", "i8"])
@pytest.mark.parametrize("layer", ["Floor", "Ceiling"])
def test_integer_floor_and_ceiling_go_through_float32(layer, dtype, tmp_path):
    """OpenVINO's IR of PyTorch's size arithmetic (a Floor after an integer Divide; Ceiling, which poolir refused):
    the plugin takes i32/i64 through float32 (16777217 -> 16777216, 2**31 - 1 -> INT32_MIN), and so do poolir's IR
    run and the ONNX IR -> ONNX writes."""
    info = np.iinfo(dtype)
    x = np.clip(np.array([2**24 + 1, 2**31 - 1, -7, 0, 5, -2**24 - 3]), info.min, info.max).astype(dtype)
    param = ov1.parameter([x.size], OV_TYPES[np.dtype(dtype)], name="x")
    path = save_ir((ov1.floor if layer == "Floor" else ov1.ceiling)(param).outputs(), [param], tmp_path / "r.xml")
    (got,) = assert_matches_openvino(path, {"x": x}, context=layer).values()
    (converted,) = onnxruntime_run(ir_to_onnx(ir.read_model(path)), {"x": x}).values()
    np.testing.assert_array_equal(converted, got)


def test_float32_division_is_pinned(tmp_path):
    # The facts the converter's index arithmetic is designed around (converter/onnx_to_ir/max_pool_indices.py).
    a = np.array([19267583, 2**31 - 1, 16777217, -7, 2**31], np.int64)
    b = np.array([7, 7, 50176, 2, 1], np.int64)
    params = [ov1.parameter([5], ov.Type.i64, name=n) for n in ("a", "b")]
    outputs = [ov1.divide(*params).output(0), ov1.floor_mod(*params).output(0)]
    for output, name in zip(outputs, ("divided", "remainder")):
        output.get_tensor().set_names({name})
    path = save_ir(outputs, params, tmp_path / "d.xml")
    outs = assert_matches_openvino(path, {"a": a, "b": b}, context="pinned")
    divided, remainder = outs["divided"], outs["remainder"]
    # exact: [2752511, 306783378, 334, -4, 2147483648] and [6, 1, 18433, 1, 0]
    assert divided.tolist() == [2752512, 306783392, 334, -3, -2**31]
    assert remainder.tolist() == [0, 0, 18432, 1, 0]


def test_folded_integer_arithmetic_is_exact(tmp_path):
    # The same layers on constants: OpenVINO folds them with its reference implementation, in i64, exactly.
    # (Values stay inside i32: the folded i64 result then meets a run-time Add, and OpenVINO converts an i64
    # constant outside i32 to i32 by saturating, 2**40 -> 2**31 - 1, where a run-time i64 wraps.)
    a, b = np.array([19267583, 2**31 - 9, -7], np.int64), np.array([7, 7, 2], np.int64)
    param = ov1.parameter([3], ov.Type.i64, name="x")
    zero = ov1.multiply(param, ov1.constant(np.zeros(3, np.int64)))
    outs = [ov1.add(op(ov1.constant(a), ov1.constant(b)), zero).output(0) for op in LAYERS.values()]
    path = save_ir(outs, [param], tmp_path / "folded.xml")
    outs = assert_matches_openvino(path, {"x": np.ones(3, np.int64)}, context="folded")
    values = [v.tolist() for v in outs.values()]
    assert [2752511, 306783377, -4] in values and [6, 0, 1] in values  # floor division, floor modulo


def test_a_reshape_target_computed_with_floor_mod_of_constants_is_known(tmp_path):
    """OpenVINO's unfolded IR of ViT's TorchScript export (Core.read_model + save_model): the bounds of a Slice of
    ShapeOf are FloorMod(2, 3) and (-5 mod 3), so the Reshape after it has a known rank only if FloorMod folds, as
    OpenVINO folds it (exactly: the divisor's sign). Both bounds are checked against OpenVINO on the real run."""
    x = ov1.parameter([197, 1, 2304], ov.Type.f32, name="x")
    shape = ov1.shape_of(x)
    def constant(value):
        return ov1.constant(np.array([value], np.int64))
    start = ov1.floor_mod(constant(-5), constant(3))   # 1, where the dividend's sign (Mod) would give -2
    stop = ov1.floor_mod(constant(2), constant(3))     # 2
    kept = ov.opset8.slice(shape, start, stop, constant(1))       # [1]
    target = ov1.concat([constant(197), kept, constant(3), constant(768)], 0)
    path = save_ir([ov1.reshape(x, target, special_zero=False).output(0)], [x], tmp_path / "vit.xml")
    assert {"FloorMod", "Slice"} <= {layer.type for layer in ir.read_model(path).layers}
    outputs = assert_matches_openvino(path, {"x": RNG.standard_normal((197, 1, 2304)).astype(np.float32)})
    assert next(iter(outputs.values())).shape == (197, 1, 3, 768)


@pytest.mark.parametrize("reduce, shape", [("reduce_prod", (16,)), ("reduce_sum", (8, 2)), ("reduce_max", (4, 4)),
                                           ("reduce_min", (2, 8))])
def test_a_reduction_of_a_static_shape_folds(reduce, shape, tmp_path):
    """OpenVINO's IR of ONNX Flatten (a fuzz finding): ShapeOf, ReduceProd, Concat, Reshape; a Squeeze without axes
    after it needs the Reshape's static dims, which OpenVINO infers (the reduction folds) and poolir did not."""
    x = ov1.parameter([2, 4, 2], ov.Type.f32, name="x")
    reduced = getattr(ov1, reduce)(ov1.shape_of(x), ov1.constant(np.array([0], np.int64)), keep_dims=True)
    target = ov1.concat([reduced, ov1.constant(np.array([-1], np.int64))], 0)
    flat = ov1.reshape(x, target, special_zero=False)
    path = save_ir([ov.opset15.squeeze(flat).output(0)], [x], tmp_path / "flat.xml")  # no axes
    assert any(layer.type.startswith("Reduce") for layer in ir.read_model(path).layers)
    outputs = assert_matches_openvino(path, {"x": RNG.standard_normal((2, 4, 2)).astype(np.float32)})
    assert next(iter(outputs.values())).shape == shape
