"""ConvTranspose (ONNX) and ConvolutionBackpropData / GroupConvolutionBackpropData (IR), and their conversions, against
independent oracles: a brute-force scatter written here from the definition, the onnx package's backend cases,
onnxruntime over a seeded grid of geometries (auto_pad, output_shape, output_padding, groups, 1-3 spatial axes),
OpenVINO's CPU plugin on its own layers, and the converted models run by the engine of the other world."""

from __future__ import annotations

import random

import numpy as np
import onnx
import openvino as ov
import openvino.opset1 as ov1
import pytest
from onnx import helper, numpy_helper

from poolir import ir, runtime
from poolir.converter import ir_to_onnx, onnx_to_ir
from poolir.ir.errors import PoolirError
from poolir.runtime.kernels.transposed_convolution import conv_transpose
from tests.backend_cases import feeds_of, node_cases
from tests.peers import onnxruntime_run, openvino_convert_to_xml, openvino_run_xml

ATOL = 2e-5


def _scatter(x, w, strides, dilations, begin, out, groups):
    """The definition, one product at a time: x[n, c, o] * w[c, m, t] lands at o * s + t * d - begin."""
    n, c, *spatial = x.shape
    per_in, per_out, *kernel = w.shape[0] // groups, w.shape[1], *w.shape[2:]
    y = np.zeros((n, groups * per_out, *out))
    for channel in range(c):
        g = channel // per_in
        for o in np.ndindex(*spatial):
            for t in np.ndindex(*kernel):
                p = tuple(oo * s + tt * d - b for oo, s, tt, d, b in zip(o, strides, t, dilations, begin))
                if all(0 <= pp < length for pp, length in zip(p, out)):
                    y[(slice(None), slice(g * per_out, (g + 1) * per_out), *p)] += (
                        x[(slice(None), channel, *o)][:, None] * w[(channel, slice(None), *t)][None])
    return y


def test_kernel_is_the_definition():
    rng = random.Random(0)
    data = np.random.default_rng(0)
    for _ in range(40):
        rank, groups = rng.randint(1, 3), rng.choice((1, 2))
        spatial = [rng.randint(1, 4) for _ in range(rank)]
        kernel = [rng.randint(1, 3) for _ in range(rank)]
        strides, dilations = [rng.randint(1, 3) for _ in range(rank)], [rng.randint(1, 2) for _ in range(rank)]
        begin = [rng.randint(-1, 2) for _ in range(rank)]
        out = [max(0, s * (n - 1) + d * (k - 1) + 1 - b + rng.randint(-2, 2))
               for s, n, d, k, b in zip(strides, spatial, dilations, kernel, begin)]
        x = data.standard_normal((2, 2 * groups, *spatial))
        w = data.standard_normal((2 * groups, rng.randint(1, 3), *kernel))
        got = conv_transpose(x, w, None, strides=strides, dilations=dilations, pads_begin=begin, output=out,
                             groups=groups)
        np.testing.assert_allclose(got, _scatter(x, w, strides, dilations, begin, out, groups), atol=1e-12)


def test_an_infinite_weight_meets_only_real_inputs():
    """Only real products are formed: a zero-inserting implementation would add 0 * inf = NaN between them."""
    x = np.ones((1, 1, 3), np.float32)
    w = np.array([[[np.inf]]], np.float32)
    y = conv_transpose(x, w, None, strides=[2], dilations=[1], pads_begin=[0], output=[5])
    np.testing.assert_array_equal(y, [[[np.inf, 0, np.inf, 0, np.inf]]])


BACKEND_CASES = node_cases(("convtranspose",), ("ConvTranspose",))


@pytest.mark.parametrize("name", sorted(BACKEND_CASES))
def test_onnx_backend_case(name):
    case = BACKEND_CASES[name]
    _, outputs = case.data_sets[0]
    got = runtime.run(case.model, feeds_of(case))[case.model.graph.output[0].name]
    np.testing.assert_allclose(got, outputs[0], rtol=1e-5, atol=1e-5)


def _model(attrs, x_shape, w_shape, dtype=np.float32, seed=0, bias=True):
    data = np.random.default_rng(seed)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    inits = [numpy_helper.from_array(data.standard_normal(w_shape).astype(dtype), "w")]
    if bias:
        filters = attrs.get("group", 1) * w_shape[1]
        inits.append(numpy_helper.from_array(data.standard_normal(filters).astype(dtype), "b"))
    node = helper.make_node("ConvTranspose", ["x", "w", "b"] if bias else ["x", "w"], ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", elem, x_shape)],
                              [helper.make_tensor_value_info("y", elem, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    model.graph.node[0].name = "up"
    return model


def _grid(count=60, seed=1):
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        rank, groups = rng.choice((1, 2, 2, 3)), rng.choice((1, 1, 2))
        spatial = [rng.randint(1, 4) for _ in range(rank)]
        kernel = [rng.randint(1, 3) for _ in range(rank)]
        strides = [rng.randint(1, 3) for _ in range(rank)]
        attrs = {"strides": strides, "dilations": [rng.randint(1, 2) for _ in range(rank)], "group": groups}
        mode = rng.choice(("NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"))
        if mode == "NOTSET":
            attrs["pads"] = [rng.randint(0, 1) for _ in range(2 * rank)]
        else:
            attrs["auto_pad"] = mode
        if rng.random() < 0.4:
            attrs["output_padding"] = [rng.randint(0, s - 1) for s in strides]
        if rng.random() < 0.3:
            full = [s * (n - 1) + d * (k - 1) + 1 for s, n, d, k in zip(strides, spatial, attrs["dilations"], kernel)]
            attrs["output_shape"] = [max(1, f - rng.randint(0, 2)) for f in full]
        cases.append((attrs, (2, 2 * groups, *spatial), (2 * groups, rng.randint(1, 3), *kernel),
                      rng.randrange(2 ** 31)))
    return cases


GRID = _grid()


def _runnable(case) -> bool:
    """Whether onnxruntime runs the case (it refuses an empty output), asked quietly: the refusals are expected."""
    import onnxruntime

    attrs, x_shape, w_shape, seed = case
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 4
    model = _model(attrs, x_shape, w_shape, seed=seed)
    try:
        session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        session.run(None, {"x": np.zeros(x_shape, np.float32)})
        return True
    except Exception:  # noqa: BLE001 - refused by onnxruntime: test_refused_as_onnxruntime
        return False


RUNNABLE = [case for case in GRID if _runnable(case)]


def test_the_grid_runs_mostly():
    assert len(RUNNABLE) >= 50


@pytest.mark.parametrize("case", RUNNABLE, ids=str)
def test_grid_against_onnxruntime_and_as_ir_for_openvino(case, tmp_path):
    attrs, x_shape, w_shape, seed = case
    model = _model(attrs, x_shape, w_shape, seed=seed)
    x = np.random.default_rng(seed + 1).standard_normal(x_shape).astype(np.float32)
    expected = onnxruntime_run(model, {"x": x})["y"]
    got = runtime.run(model, {"x": x})["y"]
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=ATOL)
    converted = onnx_to_ir(model)
    ir.write_model(converted, tmp_path / "model.xml")
    np.testing.assert_allclose(openvino_run_xml(tmp_path / "model.xml", {"x": x}, ["y"])["y"], expected,
                               rtol=1e-5, atol=ATOL)
    back = ir_to_onnx(converted)
    onnx.checker.check_model(back, full_check=True)
    np.testing.assert_allclose(onnxruntime_run(back, {"x": x})["y"], expected, rtol=1e-5, atol=ATOL)


@pytest.mark.parametrize("case", [c for c in GRID if c not in RUNNABLE], ids=str)
def test_refused_as_onnxruntime(case):
    attrs, x_shape, w_shape, seed = case
    with pytest.raises(PoolirError, match="positions|inconsistent"):
        runtime.run(_model(attrs, x_shape, w_shape, seed=seed), {"x": np.zeros(x_shape, np.float32)})


@pytest.mark.parametrize("case", RUNNABLE[:12], ids=str)
def test_openvino_ir_of_the_onnx_model_both_ways(case, tmp_path):
    """OpenVINO's own IR of the ONNX model run by poolir, and converted back to ONNX by poolir for onnxruntime."""
    attrs, x_shape, w_shape, seed = case
    model = _model(attrs, x_shape, w_shape, seed=seed)
    x = np.random.default_rng(seed + 1).standard_normal(x_shape).astype(np.float32)
    xml = openvino_convert_to_xml(model, tmp_path / "openvino.xml")
    expected = openvino_run_xml(xml, {"x": x}, ["y"])["y"]
    session = runtime.Session(ir.read_model(xml))
    np.testing.assert_allclose(next(iter(session.run({session.inputs[0].name: x}).values())), expected, rtol=1e-5,
                               atol=ATOL)
    back = ir_to_onnx(ir.read_model(xml))
    np.testing.assert_allclose(onnxruntime_run(back, {"x": x})["y"], expected, rtol=1e-5, atol=ATOL)


def _ir_layer(tmp_path, groups, mode, output_shape, padding, seed):
    rng = np.random.default_rng(seed)
    param = ov1.parameter([1, 2 * groups, 3, 4], np.float32, name="x")
    kwargs = {"strides": [2, 3], "pads_begin": [1, 0], "pads_end": [0, 1], "dilations": [1, 2], "auto_pad": mode}
    if output_shape is not None:
        kwargs["output_shape"] = ov1.constant(np.array(output_shape, np.int64))
    else:
        kwargs["output_padding"] = padding
    if groups == 1:
        node = ov1.convolution_backprop_data(param, ov1.constant(rng.standard_normal((2, 3, 3, 2)).astype(np.float32)),
                                             **kwargs)
    else:
        node = ov1.group_convolution_backprop_data(
            param, ov1.constant(rng.standard_normal((groups, 2, 3, 3, 2)).astype(np.float32)), **kwargs)
    xml = tmp_path / "model.xml"
    ov.save_model(ov.Model([node], [param]), xml, compress_to_fp16=False)
    return xml


@pytest.mark.parametrize("groups", [1, 3])
@pytest.mark.parametrize("mode,output_shape,padding", [
    ("explicit", None, [0, 0]), ("explicit", None, [1, 2]), ("same_upper", None, [1, 0]), ("valid", None, [0, 1]),
    ("explicit", [6, 10], None), ("same_upper", [6, 11], None), ("same_lower", [6, 11], None),
    ("same_upper", [5, 9], None), ("same_lower", [7, 12], None)])
def test_ir_layers_against_openvino_and_as_onnx(groups, mode, output_shape, padding, tmp_path):
    """OpenVINO's geometry (ir/ops/transposed_convolution.py): same_upper puts the odd pad in front, same_* without
    output_shape adds no pads; converted to ONNX with explicit pads, run by onnxruntime."""
    xml = _ir_layer(tmp_path, groups, mode, output_shape, padding, groups)
    x = np.random.default_rng(5).standard_normal((1, 2 * groups, 3, 4)).astype(np.float32)
    expected = next(iter(openvino_run_xml(xml, {"x": x}).values()))
    session = runtime.Session(ir.read_model(xml))
    got = next(iter(session.run({"x": x}).values()))
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=ATOL)
    back = ir_to_onnx(ir.read_model(xml))
    onnx.checker.check_model(back, full_check=True)
    np.testing.assert_allclose(onnxruntime_run(back, {"x": x})[back.graph.output[0].name], expected, rtol=1e-5,
                               atol=ATOL)


def test_dynamic_spatial_dims_convert_where_the_pads_do_not_depend_on_them(tmp_path):
    model = _model({"strides": [2, 2], "pads": [1, 0, 0, 1], "output_padding": [1, 0]}, [1, 2, "H", "W"],
                   (2, 3, 3, 3))
    x = np.random.default_rng(0).standard_normal((1, 2, 5, 3)).astype(np.float32)
    ir.write_model(onnx_to_ir(model), tmp_path / "model.xml")
    np.testing.assert_allclose(openvino_run_xml(tmp_path / "model.xml", {"x": x}, ["y"])["y"],
                               onnxruntime_run(model, {"x": x})["y"], rtol=1e-5, atol=ATOL)
    same = _model({"strides": [2, 2], "auto_pad": "SAME_UPPER"}, [1, 2, "H", "W"], (2, 3, 3, 3))
    with pytest.raises(PoolirError, match="dynamic spatial dims"):
        onnx_to_ir(same)
