"""ScaledDotProductAttention-13 (IR) and its conversion to ONNX, against OpenVINO's CPU plugin on layers built with
its own API (f32 inference precision) and onnxruntime running the converted model. Each OpenVINO fact in
ir/ops/attention.py's docstring has its own test with the probe that showed it. float32 agrees within a few ulps
of the largest output (the engines sum in other orders); float16 within one float16 ulp."""

from __future__ import annotations

import random

import numpy as np
import onnx
import openvino as ov
import openvino.opset1 as ov1
import pytest
from openvino.utils.node_factory import NodeFactory

from poolir import ir
from poolir.converter import ir_to_onnx
from poolir.ir.element_types import element_type_of
from poolir.ir.errors import ConversionError, InvalidModelError, PoolirError, UnsupportedError
from tests.peers import onnxruntime_run, openvino_run_xml
from tests.runtime.ir_cases import OV_TYPES, run_poolir, save_ir

NAMES = ("query", "key", "value", "mask", "scale", "sink")
TYPES = {**OV_TYPES, np.dtype(np.bool_): ov.Type.boolean}
F32_ULPS = 16          # of the largest |output|: the grid's worst is 1.5, the swin block's 9 (exp and sums differ)


def attention_ir(path, arrays, *, causal=False, constant=()):
    """An IR of one ScaledDotProductAttention over `arrays` (query, key, value[, mask[, scale[, sink]]]); each a
    Parameter named after its role, or a Const when its index is in `constant`. Returns (xml, feeds)."""
    params, nodes, feeds = [], [], {}
    for index, array in enumerate(arrays):
        array = np.asarray(array)
        if index in constant:
            nodes.append(ov1.constant(array).output(0))
            continue
        param = ov1.parameter(list(array.shape), TYPES[array.dtype], name=NAMES[index])
        params.append(param)
        nodes.append(param.output(0))
        feeds[NAMES[index]] = array
    node = NodeFactory("opset13").create("ScaledDotProductAttention", nodes, {"causal": causal})
    return save_ir([node.output(0)], params, path), feeds


def run_both(xml, feeds):
    """(OpenVINO's output, poolir's output) of the one-output model."""
    want = openvino_run_xml(xml, feeds)
    got = run_poolir(xml, feeds)
    ((name, expected),) = want.items()
    return expected, got[name]


def assert_close(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    scale = float(np.nanmax(np.abs(want.astype(np.float64)), initial=0.0))
    ulp = np.finfo(want.dtype).eps
    limit = (1 if want.dtype == np.float16 else F32_ULPS) * ulp * max(scale, 1.0)
    assert np.nanmax(np.abs(got.astype(np.float64) - want.astype(np.float64)), initial=0.0) <= limit


def as_onnx_on_onnxruntime(xml, feeds, opset=18):
    model = ir_to_onnx(ir.read_model(xml), opset=opset)
    onnx.checker.check_model(model, full_check=True)
    return onnxruntime_run(model, feeds)[model.graph.output[0].name]


# -- a grid against OpenVINO, and the converted model on onnxruntime ---------------------------------------------

def _grid(count=60, seed=13):
    """Random layers: rank 3 to 5, batch dims broadcast between query, key and value, no mask, a float or boolean
    mask of any rank from 2 that broadcasts (also widening L or the batch), the scalar 0, causal (L above and below
    S), a constant, 1-element or run-time scale, a sink, float32 and float16."""
    rng = random.Random(seed)
    cases = []
    for index in range(count):
        rank = rng.choice((3, 4, 4, 5))
        batch = [rng.randint(1, 3) for _ in range(rank - 2)]
        rows, columns, head, width = rng.randint(1, 6), rng.randint(1, 7), rng.choice((1, 4, 8, 16)), rng.randint(1, 6)

        def thin(dims):
            return [d if rng.random() < 0.7 else 1 for d in dims]
        shapes = [thin(batch) + [rows, head], thin(batch) + [columns, head], thin(batch) + [columns, width]]
        causal = rng.random() < 0.2
        mask = rng.choice((None, "float", "float", "bool", "zero"))
        if mask in ("float", "bool"):
            mask_rank = rng.randint(2, rank + (rng.random() < 0.15))      # one rank more widens the batch
            full = ([rng.choice((1, 2))] if mask_rank > rank else []) + thin(batch)
            mask_rows = rows if rows > 1 or rng.random() < 0.7 else 3       # 3 rows over L = 1 widens L
            shapes.append(full[len(full) - (mask_rank - 2):] + [rng.choice((mask_rows, 1)), rng.choice((columns, 1))])
        elif mask == "zero" or rng.random() < 0.3:
            shapes.append([])
        scale = rng.choice((None, "const", "one", "param")) if len(shapes) == 4 else None
        if scale is not None:
            shapes.append([1] if scale == "one" else [])
        if len(shapes) == 5 and rng.random() < 0.3:
            shapes.append(thin(batch) + [rng.choice((rows, 1)), 1])
        dtype = np.float16 if index % 5 == 4 else np.float32
        cases.append((tuple(map(tuple, shapes)), causal, mask, scale, np.dtype(dtype).name))
    return cases


def _arrays(case, seed=0):
    shapes, causal, mask, scale, dtype = case
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(shape).astype(dtype) for shape in shapes[:3]]
    if len(shapes) > 3:
        if mask == "bool":
            arrays.append(rng.random(shapes[3]) < 0.8)
        elif mask == "float":
            arrays.append((rng.standard_normal(shapes[3]) * 2).astype(dtype))
        else:
            arrays.append(np.zeros(shapes[3], dtype))
    if len(shapes) > 4:
        arrays.append(np.full(shapes[4], 0.37, dtype))
    if len(shapes) > 5:
        arrays.append(rng.standard_normal(shapes[5]).astype(dtype))
    constant = {3} if mask == "zero" else set()
    if scale in ("const", "one"):
        constant.add(4)
    return arrays, constant


@pytest.mark.parametrize("case", _grid(), ids=str)
def test_against_openvino_and_as_onnx_on_onnxruntime(case, tmp_path):
    arrays, constant = _arrays(case)
    xml, feeds = attention_ir(tmp_path / "model.xml", arrays, causal=case[1], constant=constant)
    try:
        ir.read_model(xml)
    except UnsupportedError as error:       # a sink wider or narrower than the scores: neither engine runs it
        assert "sink" in str(error)
        with pytest.raises(RuntimeError, match="ScaledDotProductAttentionDecomposition"):
            openvino_run_xml(xml, feeds)
        return
    want, got = run_both(xml, feeds)
    assert_close(got, want)
    assert_close(as_onnx_on_onnxruntime(xml, feeds), want)


def test_the_swin_block_shapes(tmp_path):
    """swin_t as OpenVINO converts its dynamo export: 64 windows x 3 heads of 49 tokens, head size 32, a [3, 49, 49]
    float mask (the relative position bias) and a constant scale."""
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((64, 3, 49, 32)).astype(np.float32) for _ in range(3))
    bias = rng.standard_normal((3, 49, 49)).astype(np.float32)
    xml, feeds = attention_ir(tmp_path / "model.xml", [q, k, v, bias, np.float32(1.0)], constant={3, 4})
    want, got = run_both(xml, feeds)
    assert_close(got, want)
    assert_close(as_onnx_on_onnxruntime(xml, feeds, opset=17), want)


# -- OpenVINO's facts, one by one ----------------------------------------------------------------------------------

def _qkv(shape_q=(1, 2, 4, 8), shape_k=(1, 2, 5, 8), shape_v=(1, 2, 5, 3), seed=3):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for shape in (shape_q, shape_k, shape_v)]


def test_a_fully_masked_row_is_nan(tmp_path):
    """Every score of row 1 masked (boolean false, or -inf): softmax of all -inf is NaN (-inf - -inf), in
    OpenVINO as in the spec's pseudo-code; the other rows are untouched. onnxruntime's Softmax agrees."""
    q, k, v = _qkv()
    for mask in (np.ones((4, 5), bool), np.zeros((4, 5), np.float32)):
        mask[1] = False if mask.dtype == bool else -np.inf
        xml, feeds = attention_ir(tmp_path / "model.xml", [q, k, v, mask])
        want, got = run_both(xml, feeds)
        assert np.isnan(want[:, :, 1]).all() and not np.isnan(want[:, :, [0, 2, 3]]).any()
        assert_close(got, want)
        assert_close(as_onnx_on_onnxruntime(xml, feeds), want)


def test_nan_or_plus_inf_in_the_mask_makes_its_row_nan(tmp_path):
    q, k, v = _qkv()
    for bad in (np.nan, np.inf):
        mask = np.zeros((4, 5), np.float32)
        mask[2, 3] = bad
        xml, feeds = attention_ir(tmp_path / "model.xml", [q, k, v, mask])
        want, got = run_both(xml, feeds)
        assert np.isnan(want[:, :, 2]).all() and not np.isnan(want[:, :, [0, 1, 3]]).any()
        assert_close(got, want)


def test_a_false_boolean_scalar_masks_everything_and_a_true_one_nothing(tmp_path):
    q, k, v = _qkv()
    for flag in (False, True):
        xml, feeds = attention_ir(tmp_path / "model.xml", [q, k, v, np.array(flag)])
        want, got = run_both(xml, feeds)
        assert np.isnan(want).all() != flag
        assert_close(got, want)


def test_the_mask_widens_the_output_as_numpy_broadcasting_does(tmp_path):
    """A [7, 1, 1, 4, 5] mask over [1, 2, 4, 5] scores makes [7, 1, 2, 4, Ev]; a mask of 3 rows over a query of
    1 row makes 3 output rows (OpenVINO's shape and values both)."""
    q, k, v = _qkv()
    rng = np.random.default_rng(4)
    xml, feeds = attention_ir(tmp_path / "wide.xml", [q, k, v, rng.standard_normal((7, 1, 1, 4, 5)).astype(np.float32)])
    want, got = run_both(xml, feeds)
    assert want.shape == (7, 1, 2, 4, 3)
    assert_close(got, want)
    q1 = q[:, :, :1]
    xml, feeds = attention_ir(tmp_path / "rows.xml", [q1, k, v, rng.standard_normal((3, 5)).astype(np.float32)])
    want, got = run_both(xml, feeds)
    assert want.shape == (1, 2, 3, 3)
    assert_close(got, want)
    assert_close(as_onnx_on_onnxruntime(xml, feeds), want)


def test_causal_ignores_the_mask_whatever_its_shape(tmp_path):
    """causal: row i attends to columns 0..i (top-left aligned, also when L > S); a mask of a shape that would not
    even broadcast is ignored, by OpenVINO's shape inference and its plugin."""
    q, k, v = _qkv(shape_q=(1, 2, 7, 8))
    xml, feeds = attention_ir(tmp_path / "model.xml", [q, k, v, np.zeros((9, 9), np.float32)], causal=True)
    want, got = run_both(xml, feeds)
    assert_close(got, want)
    np.testing.assert_allclose(want[:, :, 0], v[:, :, 0], rtol=1e-6)     # row 0 sees column 0 alone
    assert_close(as_onnx_on_onnxruntime(xml, feeds), want)


def _overflowing(key_huge: bool):
    """Scores one of which overflows float32 in one order of scaling only. key_huge: q = [1e-20, 0],
    k0 = [1e30, 0], scale 1e10: k0 * scale = inf (NaN row), q.k0 * scale = 1e20 (weights [1, 0], output v0 = 1).
    Otherwise q = [3e38, 0], k0 = [10, 0], scale 0.01: q.k0 = inf (NaN row), k0 * scale = 0.1 (output 1)."""
    q = np.array([[[[1e-20, 0.0]]]] if key_huge else [[[[3e38, 0.0]]]], np.float32)
    k = np.array([[[[1e30, 0.0], [0.0, 0.0]]]] if key_huge else [[[[10.0, 0.0], [1.0, 0.0]]]], np.float32)
    v = np.array([[[[1.0], [2.0]]]], np.float32)
    return [q, k, v, np.zeros((1, 2), np.float32), np.float32(1e10 if key_huge else 0.01)]


@pytest.mark.parametrize("scale_known,folded", [(True, False), (False, False), (True, True)])
def test_where_openvino_applies_the_scale(scale_known, folded, tmp_path):
    """A constant scale multiplies the key before the product (key huge -> NaN, query huge -> 1), a scale fed at run
    time multiplies the product (the other way round), and a layer of constants only is folded by OpenVINO's
    reference, the product first."""
    for key_huge in (True, False):
        arrays = _overflowing(key_huge)
        constant = {0, 1, 2, 3, 4} if folded else ({4} if scale_known else set())
        xml, feeds = attention_ir(tmp_path / "model.xml", arrays, constant=constant)
        key_first = scale_known and not folded
        want, got = run_both(xml, feeds)
        assert np.isnan(want).all() == (key_huge == key_first)
        assert_close(got, want)
        if not folded:
            assert_close(as_onnx_on_onnxruntime(xml, feeds), want)


def test_empty_sources_give_zeros_and_an_empty_head_the_mean_of_the_values(tmp_path):
    """Hand-worked, as OpenVINO's CPU plugin is no oracle here (it returns uninitialised memory: zeros in one probe,
    -1.4e15 and denormals in the next). S = 0: softmax over nothing, then an empty product: zeros. E = 0: the empty
    key scaled by 1 / sqrt(0) is still empty, every score is 0, the weights are uniform: the mean of the values."""
    q, k, v = _qkv(shape_q=(1, 1, 2, 4), shape_k=(1, 1, 0, 4), shape_v=(1, 1, 0, 3))
    xml, feeds = attention_ir(tmp_path / "s0.xml", [q, k, v])
    np.testing.assert_array_equal(next(iter(run_poolir(xml, feeds).values())), np.zeros((1, 1, 2, 3), np.float32))
    q, k, v = _qkv(shape_q=(1, 1, 2, 0), shape_k=(1, 1, 3, 0), shape_v=(1, 1, 3, 2))
    xml, feeds = attention_ir(tmp_path / "e0.xml", [q, k, v])
    np.testing.assert_allclose(next(iter(run_poolir(xml, feeds).values())),
                               np.broadcast_to(v.mean(axis=2, keepdims=True), (1, 1, 2, 2)), rtol=1e-6)


def test_a_sink_joins_the_softmax_and_is_dropped(tmp_path):
    """sink [N.., L or 1, 1]: one more score per row in the softmax, no value: the weights of a row sum to less
    than 1 (a sink of +30 takes almost all the weight: the output is near 0)."""
    q, k, v = _qkv()
    sink = np.full((1, 2, 1, 1), 30.0, np.float32)
    xml, feeds = attention_ir(tmp_path / "model.xml", [q, k, v, np.zeros((4, 5), np.float32), np.float32(0.5), sink])
    want, got = run_both(xml, feeds)
    assert np.abs(want).max() < 1e-9
    assert_close(got, want)
    assert_close(as_onnx_on_onnxruntime(xml, feeds), want)


def test_float16_computes_in_float32_and_rounds_once(tmp_path):
    """OpenVINO's float16 attention (40 x 40, head 64) is within one float16 ulp of float32 math rounded once;
    the converted model casts to float32 and back, so onnxruntime rounds once too."""
    rng = np.random.default_rng(6)
    q, k, v = (rng.standard_normal((2, 3, 40, 64)).astype(np.float16) for _ in range(3))
    xml, feeds = attention_ir(tmp_path / "model.xml", [q, k, v])
    want, got = run_both(xml, feeds)
    assert_close(got, want)
    assert_close(as_onnx_on_onnxruntime(xml, feeds), want)


@pytest.mark.parametrize("shapes,types,match", [
    (((4, 8), (5, 8), (5, 3)), (), "rank 2"),
    (((1, 4, 8), (1, 5, 8), (1, 5, 3), (5,)), (), "rank 1"),
    (((1, 4, 8), (1, 5, 7), (1, 5, 3)), (), "embedding sizes"),
    (((1, 4, 8), (1, 5, 8), (1, 6, 3)), (), "source lengths"),
    (((1, 4, 8), (1, 5, 8), (1, 5, 3), (4, 5), (2,)), (), "one element"),
    (((1, 4, 8), (1, 5, 8), (1, 5, 3), (4, 5)), (None, None, None, np.float16), "mixed types"),
    (((1, 4, 8), (1, 5, 8), (1, 5, 3), (4, 6)), (), "do not broadcast"),
    (((1, 4, 8), (1, 5, 8), (1, 5, 3), (4, 5), (), (4, 1)), (), "sink"),
])
def test_what_openvino_refuses_is_refused(shapes, types, match, tmp_path):
    """Each layer OpenVINO's own graph builder refuses (the oracle: building it raises), written by hand."""
    arrays = [np.zeros(shape, (types[i] if i < len(types) and types[i] else np.float32)) for i, shape in
              enumerate(shapes)]
    with pytest.raises(RuntimeError):
        attention_ir(tmp_path / "model.xml", arrays)
    with pytest.raises(InvalidModelError, match=match):
        ir.read_model(_write_raw(tmp_path / "raw.xml", arrays))


def _write_raw(path, arrays):
    """A minimal IR v11 file by hand: the Parameters, the layer with declared output dims [1], a Result."""
    layers, edges = [], []
    for i, a in enumerate(arrays):
        dims = "".join(f"<dim>{d}</dim>" for d in a.shape)
        layers.append(f'<layer id="{i}" name="{NAMES[i]}" type="Parameter" version="opset1"><data shape="'
                      f'{",".join(map(str, a.shape))}" element_type="{element_type_of(a.dtype)}"/><output>'
                      f'<port id="0" precision="FP32">{dims}</port></output></layer>')
        edges.append(f'<edge from-layer="{i}" from-port="0" to-layer="{len(arrays)}" to-port="{i}"/>')
    ports = "".join(f'<port id="{i}">{"".join(f"<dim>{d}</dim>" for d in a.shape)}</port>' for i, a in
                    enumerate(arrays))
    n = len(arrays)
    layers.append(f'<layer id="{n}" name="sdpa" type="ScaledDotProductAttention" version="opset13"><data causal='
                  f'"false"/><input>{ports}</input><output><port id="{n}" precision="FP32"><dim>1</dim></port>'
                  f'</output></layer>')
    layers.append(f'<layer id="{n + 1}" name="out" type="Result" version="opset1"><input><port id="0"><dim>1</dim>'
                  '</port></input></layer>')
    edges.append(f'<edge from-layer="{n}" from-port="{n}" to-layer="{n + 1}" to-port="0"/>')
    path.write_text(f'<?xml version="1.0"?><net name="raw" version="11"><layers>{"".join(layers)}</layers><edges>'
                    f'{"".join(edges)}</edges></net>')
    path.with_suffix(".bin").write_bytes(b"")
    return path


def test_causal_with_dynamic_lengths_is_not_converted(tmp_path):
    params = [ov1.parameter(ov.PartialShape([1, 2, -1, 8]), ov.Type.f32, name=name) for name in NAMES[:3]]
    node = NodeFactory("opset13").create("ScaledDotProductAttention", [p.output(0) for p in params], {"causal": True})
    xml = save_ir([node.output(0)], params, tmp_path / "model.xml")
    with pytest.raises(ConversionError, match="static L and S"):
        ir_to_onnx(ir.read_model(xml), opset=18)


def test_scores_beyond_the_memory_budget_are_refused_before_allocating(tmp_path):
    """100000 queries by 100000 keys of head size 1 (400 kB each) make 40 GB of scores: refused by the budget."""
    q, k, v = (np.ones((1, 100_000, 1), np.float32) for _ in range(3))
    xml, feeds = attention_ir(tmp_path / "model.xml", [q, k, v])
    with pytest.raises(PoolirError, match="memory budget"):
        run_poolir(xml, feeds)
