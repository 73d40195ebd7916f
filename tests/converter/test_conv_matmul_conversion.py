"""Conv, Gemm and MatMul conversions, each direction checked by the engines that own the two worlds.

- ONNX -> IR: poolir's IR run by OpenVINO vs the ONNX model run by onnxruntime (onnx.reference where
  onnxruntime has no kernel: tests/runtime/test_conv_matmul_onnx.py's `oracle`), on the same seeded grids.
- IR -> ONNX: OpenVINO's own IR of an ONNX model (openvino.convert_model + save_model) converted by poolir
  and run by onnxruntime vs OpenVINO on that IR.
- ONNX -> IR -> ONNX under onnxruntime vs onnxruntime on the source.
- OpenVINO's files (fp16-compressed weights as it writes them by default) read and written back byte for byte.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from poolir import converter, ir, runtime
from poolir.ir.errors import PoolirError
from tests.peers import onnxruntime_run, openvino_convert_to_xml, openvino_run_xml
from tests.runtime.test_conv_matmul_onnx import conv_case, gemm_case, matmul_case, oracle


def _tolerance(dtype):
    return dict(rtol=3e-3, atol=3e-3) if dtype == np.float16 else dict(rtol=2e-5, atol=2e-5)


def _compare(got: dict, want: dict, names=("y",)):
    for name in names:
        g, w = got[name], want[name]
        assert g.shape == w.shape, name
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), **_tolerance(w.dtype))


def _cases():
    return ([("conv", s) for s in range(0, 200, 3)] + [("gemm", s) for s in range(0, 80, 2)]
            + [("matmul", s) for s in range(33)])


def _marked(cases, every: int):
    """Every `every`-th case runs always; the rest are marked slow (convert_model costs ~1 s a model)."""
    return [pytest.param(*case, marks=() if index % every == 0 else pytest.mark.slow)
            for index, case in enumerate(cases)]


def _build(kind, seed):
    if kind == "conv":
        model, feeds, _ = conv_case(seed)
        return model, feeds
    return (gemm_case if kind == "gemm" else matmul_case)(seed)


@pytest.mark.parametrize("kind, seed", _marked(_cases(), 2))
def test_onnx_to_ir_runs_in_openvino_as_onnxruntime_runs_the_onnx(kind, seed, tmp_path):
    model, feeds = _build(kind, seed)
    want = oracle(model, feeds)
    irm = converter.onnx_to_ir(model)
    path = tmp_path / "m.xml"
    ir.write_model(irm, path)
    _compare(openvino_run_xml(path, feeds, ["y"]), want)
    # and ONNX -> IR -> ONNX under onnxruntime (newest written opset)
    back = converter.ir_to_onnx(irm)
    if not (kind == "conv" and feeds["x"].dtype == np.float64):  # onnxruntime has no float64 Conv
        _compare(onnxruntime_run(back, feeds), want)


def _openvino_ir(model, tmp_path):
    """OpenVINO's own IR of `model`, without fp16 compression (so the numbers are the ONNX model's)."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    model.ir_version = 8
    return openvino_convert_to_xml(model, tmp_path / "ov.xml")


@pytest.mark.parametrize("kind, seed", _marked([c for c in _cases() if c[1] % 2 == 0], 5))
def test_openvino_ir_to_onnx_runs_in_onnxruntime_as_openvino_runs_the_ir(kind, seed, tmp_path):
    model, feeds = _build(kind, seed)
    if any(a.dtype != np.float32 for a in feeds.values()):
        pytest.skip("float32 only: OpenVINO's frontend keeps f16/f64 graphs in types onnxruntime's Conv lacks")
    try:
        path = _openvino_ir(model, tmp_path)
    except Exception as error:  # OpenVINO's frontend has no converter for a legacy op version
        pytest.skip(f"OpenVINO's ONNX frontend refuses the model: {str(error).splitlines()[0][:100]}")
    want = openvino_run_xml(path, feeds)
    onx = converter.ir_to_onnx(ir.read_model(path))
    got = onnxruntime_run(onx, feeds)
    assert len(got) == len(want) == 1
    _compare({"y": next(iter(got.values()))}, {"y": next(iter(want.values()))})
    # poolir's own IR runtime on OpenVINO's IR
    _compare({"y": next(iter(runtime.run(ir.read_model(path), feeds).values()))}, {"y": next(iter(want.values()))})


def _conv_model(attrs, x_shape, w_shape, *, group=1, bias=True, opset=13):
    r = np.random.default_rng(5)
    inits = [numpy_helper.from_array(r.standard_normal(w_shape).astype(np.float32), "w")]
    names = ["x", "w"]
    if bias:
        inits.append(numpy_helper.from_array(r.standard_normal(w_shape[0]).astype(np.float32), "b"))
        names.append("b")
    node = helper.make_node("Conv", names, ["y"], group=group, **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


@pytest.mark.parametrize("name, model", [
    ("conv", _conv_model({"pads": [1, 1, 1, 1], "strides": [2, 2]}, [1, 4, 9, 9], [6, 4, 3, 3])),
    ("same_dilated", _conv_model({"auto_pad": "SAME_UPPER", "dilations": [2, 2]}, [1, 4, 8, 8], [6, 4, 3, 3],
                                 bias=False)),
    ("grouped", _conv_model({"pads": [1, 0, 1, 0]}, [1, 4, 8, 8], [6, 2, 3, 3], group=2)),
    ("depthwise", _conv_model({"pads": [1, 1, 1, 1]}, [1, 4, 8, 8], [4, 1, 3, 3], group=4)),
])
def test_openvino_files_round_trip_byte_for_byte(name, model, tmp_path):
    import openvino as ov

    onnx_path = tmp_path / f"{name}.onnx"
    onnx.save(model, onnx_path)
    xml = tmp_path / f"{name}.xml"
    ov.save_model(ov.convert_model(str(onnx_path)), str(xml))  # default: f16 Const + Convert weights
    model_ir = ir.read_model(xml)
    out = tmp_path / "again.xml"
    ir.write_model(model_ir, out)
    assert out.read_bytes() == xml.read_bytes()
    assert out.with_suffix(".bin").read_bytes() == xml.with_suffix(".bin").read_bytes()


def test_grouped_conv_with_computed_weights_gets_a_reshape_layer(tmp_path):
    """Weights that are a graph input (not constant) are reshaped by a Reshape layer; OpenVINO agrees."""
    r = np.random.default_rng(3)
    node = helper.make_node("Conv", ["x", "w"], ["y"], group=2, pads=[1, 1, 1, 1])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6]),
                                            helper.make_tensor_value_info("w", TensorProto.FLOAT, [6, 2, 3, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    feeds = {"x": r.standard_normal((1, 4, 6, 6)).astype(np.float32),
             "w": r.standard_normal((6, 2, 3, 3)).astype(np.float32)}
    irm = converter.onnx_to_ir(model)
    assert "Reshape" in [layer.type for layer in irm.layers]
    ir.write_model(irm, tmp_path / "m.xml")
    _compare(openvino_run_xml(tmp_path / "m.xml", feeds, ["y"]), onnxruntime_run(model, feeds))


def test_conv_with_weights_of_dynamic_shape_is_refused_naming_the_node():
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="the_conv")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6]),
                                            helper.make_tensor_value_info("w", TensorProto.FLOAT, ["m", 4, 3, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    with pytest.raises(PoolirError, match="the_conv.*static|static.*the_conv"):
        converter.onnx_to_ir(model)


@pytest.mark.parametrize("opset", [7, 10, 11, 22])
@pytest.mark.parametrize("flags", [(False, True), (True, False), (True, True)])
def test_ir_matmul_with_transposes_to_onnx_at_old_and_new_opsets(opset, flags, tmp_path):
    """2-D MatMul with transposes becomes Gemm where Gemm's C is optional, Transpose + MatMul before."""
    import openvino.opset1 as ov1
    from tests.runtime.ir_cases import single_layer_ir

    r = np.random.default_rng(opset)
    a = r.standard_normal((5, 3) if flags[0] else (3, 5)).astype(np.float32)
    b = r.standard_normal((4, 5) if flags[1] else (5, 4)).astype(np.float32)
    path = single_layer_ir(lambda p: ov1.matmul(p, ov1.constant(b), *flags), a.shape, a.dtype, tmp_path / "m.xml")
    onx = converter.ir_to_onnx(ir.read_model(path), opset=opset)
    ops = [n.op_type for n in onx.graph.node]
    assert ("Gemm" in ops) == (opset >= 11)
    want = openvino_run_xml(path, {"x": a})
    got = onnxruntime_run(onx, {"x": a})
    _compare({"y": next(iter(got.values()))}, {"y": next(iter(want.values()))})


@pytest.mark.parametrize("c_shape,a_dims", [((2, 4), ("m", 3)), ((2, 1), ("m", 3)), (("c", 4), (2, 3))])
def test_gemm_c_against_a_dynamic_dim(c_shape, a_dims, tmp_path):
    """Gemm's C [2, 4] with M dynamic is valid where M is 2 at run time; ONNX -> IR refused it ("C of shape
    [2, 4] does not broadcast unidirectionally to [M, N] = [None, 4]"; found by the graph fuzzer)."""
    inputs = [helper.make_tensor_value_info("a", TensorProto.FLOAT, a_dims)]
    initializers = [numpy_helper.from_array(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), "b")]
    if "c" in c_shape:
        inputs.append(helper.make_tensor_value_info("c", TensorProto.FLOAT, c_shape))
    else:
        initializers.append(numpy_helper.from_array(np.arange(np.prod(c_shape), dtype=np.float32).reshape(c_shape),
                                                    "c"))
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], alpha=0.5, beta=2.0)
    model = helper.make_model(helper.make_graph([node], "g", inputs, [onnx.ValueInfoProto(name="y")], initializers),
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    feeds = {"a": np.arange(6, dtype=np.float32).reshape(2, 3)}
    if "c" in c_shape:
        feeds["c"] = np.full((2, 4), 0.25, np.float32)
    expected = onnxruntime_run(model, feeds)
    xml = tmp_path / "gemm.xml"
    ir.write_model(converter.onnx_to_ir(model), xml)
    _compare(openvino_run_xml(xml, feeds, ["y"]), expected)
    _compare(runtime.run(ir.read_model(xml), feeds), expected)
    _compare(runtime.run(model, feeds), expected)
