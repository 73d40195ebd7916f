"""IR Convolution-1, GroupConvolution-1 and MatMul-1 pinned against OpenVINO.

Each case is one layer built with OpenVINO's opset API (weights as a Const), saved as IR by OpenVINO,
then run by OpenVINO's CPU plugin at f32 precision (the oracle, tests/peers.py) and by poolir
(ir.read_model + runtime.Session). The grids draw rank 1-3, strides, dilations, zero / asymmetric / large
pads, auto_pad explicit / same_upper / same_lower / valid (same_* and valid with non-zero pads, which must
be ignored), grouped and depthwise weights, f32 and f16; MatMul draws 1-D operands, batch broadcasting
and every transpose flag combination.
"""

from __future__ import annotations

import numpy as np
import openvino.opset1 as ov1
import pytest

from tests.runtime.ir_cases import assert_matches_openvino, single_layer_ir


def conv_case(seed: int):
    r = np.random.default_rng(30_000 + seed)
    rank = int(r.choice([1, 2, 2, 3]))
    grouped = seed % 3 == 0
    groups = int(r.integers(1, 4)) if grouped else 1
    depthwise = grouped and r.random() < 0.4
    c_per = 1 if depthwise else int(r.integers(1, 4))
    m_per = 1 if depthwise else int(r.integers(1, 4))
    kernel = [int(k) for k in r.integers(1, 4, rank)]
    strides = [int(s) for s in r.integers(1, 4, rank)]
    dilations = [int(d) for d in r.integers(1, 3, rank)]
    auto_pad = str(r.choice(["explicit", "explicit", "same_upper", "same_lower", "valid"]))
    pads_begin = [int(p) for p in r.integers(0, 4, rank)]
    pads_end = [int(p) for p in r.integers(0, 4, rank)]
    spatial = [max((k - 1) * d + 1, int(r.integers(1, 9 if rank < 3 else 6))) for k, d in zip(kernel, dilations)]
    dtype = np.float16 if seed % 7 == 0 else np.float32
    shape = [int(r.integers(1, 3)), c_per * groups, *spatial]
    if grouped:
        weights = r.standard_normal([groups, m_per, c_per, *kernel]).astype(dtype)
    else:
        weights = r.standard_normal([m_per * 2, c_per * groups, *kernel]).astype(dtype)
    x = r.standard_normal(shape).astype(dtype)

    def build(param):
        make = ov1.group_convolution if grouped else ov1.convolution
        return make(param, ov1.constant(weights), strides, pads_begin, pads_end, dilations, auto_pad)
    return build, x, f"{'group' if grouped else 'conv'}-{rank}d-{shape}-w{list(weights.shape)}-s{strides}-d{dilations}-" \
                     f"p{pads_begin}{pads_end}-{auto_pad}-{np.dtype(dtype).name}"


@pytest.mark.parametrize("seed", range(120))
def test_convolution_grid(seed, tmp_path):
    build, x, text = conv_case(seed)
    path = single_layer_ir(build, x.shape, x.dtype, tmp_path / "conv.xml")
    tolerance = dict(rtol=3e-3, atol=3e-3) if x.dtype == np.float16 else dict(rtol=1e-5, atol=1e-5)
    assert_matches_openvino(path, {"x": x}, context=text, **tolerance)


MATMUL_SHAPES = [((3,), (3,)), ((3,), (3, 4)), ((4, 3), (3,)), ((2, 3), (3, 5)), ((2, 4, 3), (3, 5)),
                 ((3,), (2, 3, 4)), ((2, 1, 4, 3), (5, 3, 6)), ((1, 2, 3), (4, 1, 3, 2)), ((2, 3, 4), (4,))]


@pytest.mark.parametrize("index", range(4 * len(MATMUL_SHAPES)))
def test_matmul_grid(index, tmp_path):
    """Every transpose combination: a flagged operand of rank >= 2 is given already transposed, so the
    product exists; a 1-D operand keeps its shape (OpenVINO ignores the flag there)."""
    shape_a, shape_b = MATMUL_SHAPES[index % len(MATMUL_SHAPES)]
    transpose_a, transpose_b = bool(index // len(MATMUL_SHAPES) & 1), bool(index // len(MATMUL_SHAPES) & 2)
    r = np.random.default_rng(40_000 + index)

    def swapped(shape, flag):
        return (*shape[:-2], shape[-1], shape[-2]) if flag and len(shape) >= 2 else shape
    a = r.standard_normal(swapped(shape_a, transpose_a)).astype(np.float32)
    b = r.standard_normal(swapped(shape_b, transpose_b)).astype(np.float32)

    def build(param):
        return ov1.matmul(param, ov1.constant(b), transpose_a, transpose_b)
    path = single_layer_ir(build, a.shape, a.dtype, tmp_path / "matmul.xml")
    actual = assert_matches_openvino(path, {"x": a}, context=f"{a.shape} x {b.shape} ta={transpose_a} tb={transpose_b}")
    # and numpy.matmul after the flagged transposes (hand rule of ir/ops/matmul.py), shape included
    want = np.matmul(np.swapaxes(a, -1, -2) if transpose_a and a.ndim >= 2 else a,
                     np.swapaxes(b, -1, -2) if transpose_b and b.ndim >= 2 else b)
    (got,) = actual.values()
    assert got.shape == want.shape
