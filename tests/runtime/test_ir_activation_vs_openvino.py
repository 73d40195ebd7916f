"""IR activation layers pinned against OpenVINO: each layer built with OpenVINO's opset API, saved as IR by
OpenVINO, run by OpenVINO's CPU plugin (the oracle) and by poolir. A seeded grid over layer types, element
types, shapes and parameters, then the facts runtime/ir_ops/activation.py states (NaN handling, integer
Clamp, PReLU's channel slope, SoftMax-1's non-negative axis, HSwish's rounding)."""

from __future__ import annotations

import random

import numpy as np
import openvino.opset1 as ov1
import openvino.opset4 as ov4
import openvino.opset5 as ov5
import openvino.opset8 as ov8
import pytest

from poolir import ir
from poolir.ir.errors import PoolirError
from tests.runtime.ir_cases import assert_matches_openvino, run_poolir, single_layer_ir
from tests.peers import openvino_run_xml

FLOATS = (np.float32, np.float16)


def _const(value, dtype):
    return ov1.constant(np.asarray(value, dtype=dtype), dtype=np.dtype(dtype).type)


def _builders(rng: random.Random, dtype, shape):
    """layer name -> (build function, whether the layer takes this dtype)."""
    rank = len(shape)
    low = rng.choice((-2.5, -1.0, 0.0, -1.5))
    high = low + rng.choice((0.0, 0.5, 2.0, 3.7))
    slope_shape = rng.choice([(1,), (shape[1],) if rank >= 2 else (1,), shape[-1:], shape])
    slope = np.random.default_rng(rng.randrange(1000)).standard_normal(slope_shape)
    axis = rng.randrange(-rank, rank)
    return {
        "ReLU": lambda x: ov1.relu(x),
        "Clamp": lambda x: ov1.clamp(x, low, high),
        "Sigmoid": lambda x: ov1.sigmoid(x),
        "Tanh": lambda x: ov1.tanh(x),
        "HardSigmoid": lambda x: ov1.hard_sigmoid(x, _const(rng.choice((0.2, 1 / 6, 0.7)), dtype),
                                                  _const(rng.choice((0.5, 0.1)), dtype)),
        "HSwish": lambda x: ov4.hswish(x),
        "HSigmoid": lambda x: ov5.hsigmoid(x),
        # openvino.opset4.swish without beta makes an f32 beta, which an f16 Swish refuses
        "Swish": lambda x: (ov4.swish(x) if rng.random() < 0.5 and dtype == "float32" else
                            ov4.swish(x, _const(rng.choice((1.0, 1.7)), dtype))),
        "PReLU": lambda x: ov1.prelu(x, _const(slope if np.dtype(dtype).kind == "f" else np.round(slope * 3),
                                               dtype)),
        "SoftMax-1": lambda x: ov1.softmax(x, axis % rank),
        "SoftMax-8": lambda x: ov8.softmax(x, axis),
        "LogSoftmax": lambda x: ov5.log_softmax(x, axis),
    }


LAYERS = ("ReLU", "Clamp", "Sigmoid", "Tanh", "HardSigmoid", "HSwish", "HSigmoid", "Swish", "PReLU", "SoftMax-1",
          "SoftMax-8", "LogSoftmax")
INTEGER_LAYERS = ("ReLU", "Clamp", "PReLU")


def _grid(count=96, seed=7):
    rng = random.Random(seed)
    cases = []
    for index in range(count):
        layer = LAYERS[index % len(LAYERS)]
        dtypes = (*FLOATS, np.int32) if layer in INTEGER_LAYERS else FLOATS
        dtype = rng.choice(dtypes)
        shape = tuple(rng.randint(1, 5) for _ in range(rng.randint(1, 4)))
        cases.append((layer, np.dtype(dtype).name, shape, rng.randrange(2 ** 31)))
    return cases


@pytest.mark.parametrize("layer,dtype,shape,seed", _grid(), ids=str)
def test_grid_against_openvino(layer, dtype, shape, seed, tmp_path):
    rng = random.Random(seed)
    build = _builders(rng, dtype, shape)[layer]
    path = single_layer_ir(build, shape, dtype, tmp_path / "model.xml")
    data = np.random.default_rng(seed).standard_normal(shape) * 4
    x = np.round(data).astype(dtype) if np.dtype(dtype).kind == "i" else data.astype(dtype)
    # f32: OpenVINO's exp/tanh/sigmoid are vectorised approximations, a few ulps from the rounded truth;
    # f16 computes in f32 and rounds once (an f16 ulp is 1e-3).
    rtol, atol = (1e-5, 1e-6) if dtype == "float32" else (2e-3, 2e-3)
    assert_matches_openvino(path, {"x": x}, rtol=rtol, atol=atol, context=f"{layer} {dtype} {shape}")


def test_grid_covers_every_layer_type():
    assert {layer for layer, *_ in _grid()} == set(LAYERS)
    assert {(layer, "int32") for layer, dtype, *_ in _grid() if dtype == "int32"} == {
        (layer, "int32") for layer in INTEGER_LAYERS}


SPECIAL = np.array([np.nan, -np.inf, np.inf, -3, 0.5, 3], np.float32)


@pytest.mark.parametrize("name,build,expected", [
    ("ReLU", lambda x: ov1.relu(x), [0, 0, np.inf, 0, 0.5, 3]),                 # NaN -> 0
    ("Clamp", lambda x: ov1.clamp(x, -1.0, 2.0), [-1, -1, 2, -1, 0.5, 2]),       # NaN -> min
    ("HardSigmoid", lambda x: ov1.hard_sigmoid(x, _const(0.2, np.float32), _const(0.5, np.float32)),
     [1, 0, 1, 0, 0.6, 1]),                                                        # NaN -> 1
    ("Sigmoid", lambda x: ov1.sigmoid(x), [np.nan, 0, 1, 0.04742587, 0.62245935, 0.95257413]),
    ("HSwish", lambda x: ov4.hswish(x), [np.nan, np.nan, np.inf, -0.0, 0.29166666, 3]),
])
def test_nan_and_infinities_as_openvino(name, build, expected, tmp_path):
    """OpenVINO's own NaN readings (onnxruntime keeps NaN through Relu, Clip and HardSigmoid): the oracle
    confirms the hand-written row, and poolir gives it."""
    path = single_layer_ir(build, SPECIAL.shape, np.float32, tmp_path / "model.xml")
    want = np.array(expected, np.float32)
    np.testing.assert_allclose(openvino_run_xml(path, {"x": SPECIAL})[next(iter(openvino_run_xml(
        path, {"x": SPECIAL})))], want, rtol=1e-6, equal_nan=True)
    got = next(iter(run_poolir(path, {"x": SPECIAL}).values()))
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)


def test_integer_clamp_rounds_its_bounds_inward(tmp_path):
    """i32 Clamp(min=-1.5, max=2.5) clamps to [-1, 2] (ceil(min), floor(max))."""
    x = np.arange(-5, 6, dtype=np.int32)
    path = single_layer_ir(lambda p: ov1.clamp(p, -1.5, 2.5), x.shape, np.int32, tmp_path / "model.xml")
    got = assert_matches_openvino(path, {"x": x})
    np.testing.assert_array_equal(next(iter(got.values())), np.clip(x, -1, 2))


@pytest.mark.parametrize("slope_shape", [(3,), (1, 3)])
def test_prelu_slope_on_channels_or_broadcast(slope_shape, tmp_path):
    """Data (2, 3, 3): a 1-D slope of length 3 scales axis 1 (the channels); as (1, 3) it broadcasts numpy-style
    onto the last axis."""
    x = -np.ones((2, 3, 3), np.float32)
    slope = np.array([0.1, 0.2, 0.3], np.float32).reshape(slope_shape)
    path = single_layer_ir(lambda p: ov1.prelu(p, ov1.constant(slope)), x.shape, np.float32, tmp_path / "m.xml")
    got = next(iter(assert_matches_openvino(path, {"x": x}).values()))
    expected = -(slope.reshape(3, 1) if len(slope_shape) == 1 else slope) * np.ones((2, 3, 3), np.float32)
    np.testing.assert_allclose(got, expected, rtol=1e-6)


@pytest.mark.parametrize("name,build", [("HSwish", lambda p: ov4.hswish(p)), ("HSigmoid", lambda p: ov5.hsigmoid(p))])
def test_hswish_and_hsigmoid_bit_for_bit(name, build, tmp_path):
    """OpenVINO's CPU HSwish is ONNX HardSwish's formula (x * clamp(x * f32(1/6) + 0.5, 0, 1)), not its spec's
    x * min(max(x + 3, 0), 6) / 6 (1024 ulps away near x = -3); HSigmoid multiplies by 0.16666666f. poolir
    gives OpenVINO's f32 results exactly over [-8, 8]."""
    x = np.linspace(-8, 8, 20001).astype(np.float32)
    path = single_layer_ir(build, x.shape, np.float32, tmp_path / "model.xml")
    ours = next(iter(run_poolir(path, {"x": x}).values()))
    theirs = next(iter(openvino_run_xml(path, {"x": x}).values()))
    assert ulps(ours, theirs).max() == 0
    if name == "HSwish":
        spec = x * np.minimum(np.maximum(x + 3, 0), 6) / np.float32(6)
        assert ulps(spec, theirs).max() >= 1000


def ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How many f32 values lie between a and b (0: equal; -0 and +0 count as equal)."""
    def ordered(v):
        bits = np.asarray(v, np.float32).view(np.int32).astype(np.int64)
        return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)
    return np.abs(ordered(a) - ordered(b))


def test_softmax_1_refuses_a_negative_axis(tmp_path):
    path = single_layer_ir(lambda p: ov8.softmax(p, -1), (2, 3), np.float32, tmp_path / "model.xml")
    text = path.read_text().replace('version="opset8"', 'version="opset1"')
    path.write_text(text)
    with pytest.raises(PoolirError, match="non-negative"):
        run_poolir(path, {"x": np.zeros((2, 3), np.float32)})


def test_clamp_min_above_max_is_refused(tmp_path):
    path = single_layer_ir(lambda p: ov1.clamp(p, -1.0, 2.0), (3,), np.float32, tmp_path / "model.xml")
    path.write_text(path.read_text().replace('min="-1"', 'min="5"'))
    with pytest.raises(PoolirError, match="min"):
        ir.read_model(path)
