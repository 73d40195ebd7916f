"""The ONNX poolir writes runs on onnxruntime wherever an exact form exists, and equals OpenVINO on the IR.

Expected values: OpenVINO running the IR (hand-built IR: OpenVINO's meaning), and for ONNX -> IR -> ONNX the
spec-only oracle of test_onnx_to_ir_oracle.py. Every converted model here is run by onnxruntime, never by
poolir. The gaps poolir cannot avoid (onnxruntime_gaps.py) are pinned against the installed onnxruntime.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper

from poolir import ir
from poolir.converter import ir_to_onnx, onnx_to_ir
from poolir.converter.cli import main
from poolir.converter.ir_to_onnx.onnxruntime_gaps import onnxruntime_lacks, onnxruntime_warnings
from poolir.ir.errors import ConversionError
from tests.converter.test_ir_to_onnx import _pool_ir
from tests.converter.test_onnx_to_ir_oracle import PoolCase, assert_outputs_match
from tests.peers import onnxruntime_run, openvino_run_xml


def _onnxruntime_equals_openvino(model: ir.Model, x: np.ndarray, tmp_path, opset: int = 22) -> onnx.ModelProto:
    path = tmp_path / "hand.xml"
    ir.write_model(model, path)
    expected = openvino_run_xml(path, {"x": x})
    back = ir_to_onnx(model, opset=opset)
    onnx.checker.check_model(back, full_check=True)
    got = onnxruntime_run(back, {"x": x})
    for name, want in expected.items():
        assert got[name].shape == want.shape, name
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got[name], want, rtol=1e-6, atol=1e-6, err_msg=name)
        else:
            np.testing.assert_array_equal(got[name], want, err_msg=name)
    assert onnxruntime_warnings(back) == []
    return back


def _ops(model: onnx.ModelProto) -> list[str]:
    return [node.op_type for node in model.graph.node]


def _no_pool_pad_reaches_the_kernel(model: onnx.ModelProto) -> bool:
    for node in model.graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        kernel, pads = attrs.get("kernel_shape"), attrs.get("pads", [])
        if kernel and any(p >= kernel[i % len(kernel)] for i, p in enumerate(pads)):
            return False
    return True


# --- pads >= kernel (the spec allows them; onnxruntime refuses "Pad should be smaller than kernel") ---------

def _x(shape, dtype=np.float32):
    return (np.random.default_rng(7).permutation(int(np.prod(shape))).reshape(shape) - 20).astype(dtype)


# L=7, k=2, d=3, pads (2, 3): every window holds an input element (dilated taps), pads_begin 2 >= k = 2.
DILATED = {"kernel": (2, 2), "strides": (1, 2), "dilations": (3, 1), "pads_begin": (2, 0), "pads_end": (3, 0)}


@pytest.mark.parametrize("exclude", [True, False])
def test_avgpool_pads_as_large_as_the_kernel(exclude, tmp_path):
    model = _pool_ir("AvgPool", "opset16", {**DILATED, "exclude-pad": exclude, "rounding_type": "floor"},
                     (1, 2, 7, 6))
    back = _onnxruntime_equals_openvino(model, _x((1, 2, 7, 6)), tmp_path)
    assert _ops(back)[0] == "Pad" and _no_pool_pad_reaches_the_kernel(back)
    # exclude-pad: the pool divides the padded sums by prod(k); a constant prod(k) / real taps corrects that
    assert ("Mul" in _ops(back)) == exclude


@pytest.mark.parametrize("element_type, dtype, axis", [("f32", np.float32, 0), ("f16", np.float16, 2),
                                                       ("i8", np.int8, 1), ("u8", np.uint8, 0)])
def test_maxpool_with_indices_and_pads_as_large_as_the_kernel(element_type, dtype, axis, tmp_path):
    model = _pool_ir("MaxPool", "opset8", {**DILATED, "rounding_type": "ceil", "axis": axis,
                                           "index_element_type": "i64"}, (2, 2, 7, 6), element_type, outputs=(0, 1))
    back = _onnxruntime_equals_openvino(model, _x((2, 2, 7, 6), dtype), tmp_path)
    assert "Pad" in _ops(back) and _no_pool_pad_reaches_the_kernel(back)


def test_maxpool_without_indices_and_pads_as_large_as_the_kernel(tmp_path):
    model = _pool_ir("MaxPool", "opset1", {"kernel": (2,), "strides": (1,), "pads_begin": (2,), "pads_end": (2,),
                                           "rounding_type": "floor"}, (1, 1, 5))
    # Windows wholly in the padding: OpenVINO outputs its floor there; the Pad of that value reproduces it.
    back = _onnxruntime_equals_openvino(model, _x((1, 1, 5)), tmp_path)
    assert _ops(back) == ["Pad", "MaxPool"]


@pytest.mark.parametrize("case", [
    PoolCase("AveragePool", 19, (1, 2, 7, 6), {"kernel_shape": [2, 3], "dilations": [3, 2], "pads": [2, 3, 3, 4],
                                              "count_include_pad": 0}),
    PoolCase("AveragePool", 19, (1, 2, 7, 6), {"kernel_shape": [2, 3], "dilations": [3, 2], "pads": [2, 3, 3, 4],
                                              "count_include_pad": 1, "ceil_mode": 1, "strides": [2, 2]}),
    PoolCase("MaxPool", 12, (2, 2, 7, 6), {"kernel_shape": [2, 3], "dilations": [3, 2], "pads": [2, 0, 3, 4],
                                          "storage_order": 1}, indices=True),
    PoolCase("MaxPool", 12, (2, 2, 7), {"kernel_shape": [2], "dilations": [3], "pads": [3, 2]}, indices=True,
             dtype=TensorProto.INT8),
    PoolCase("LpPool", 18, (1, 2, 7, 6), {"kernel_shape": [2, 2], "dilations": [3, 3], "pads": [2, 3, 3, 2], "p": 3}),
    # SAME with dilations resolves to pads >= kernel: k=2, d=3, s=1 -> total 3 = (1, 2) with SAME_UPPER
    PoolCase("MaxPool", 12, (1, 2, 7), {"kernel_shape": [2], "dilations": [3], "auto_pad": "SAME_UPPER"}),
    PoolCase("AveragePool", 19, (1, 2, 7), {"kernel_shape": [2], "dilations": [3], "auto_pad": "SAME_LOWER"}),
], ids=lambda case: case.id)
def test_round_trip_with_pads_onnxruntime_refuses_runs_on_onnxruntime(case: PoolCase):
    x = case.feed()
    back = ir_to_onnx(onnx_to_ir(case.model()))
    assert _no_pool_pad_reaches_the_kernel(back)
    assert_outputs_match(onnxruntime_run(back, {"x": x}), case.expected(x), case.dtype, "round trip by onnxruntime")


# --- Global pools onnxruntime has no kernel for ---------------------------------------------------------------

@pytest.mark.parametrize("p, dtype", [(1, TensorProto.FLOAT), (2, TensorProto.FLOAT), (2, TensorProto.DOUBLE)])
def test_global_lp_pool_at_opset_22_becomes_the_reduction(p, dtype):
    case = PoolCase("GlobalLpPool", 2, (1, 3, 4, 5), {"p": p}, dtype=dtype)
    x = case.feed()
    back = ir_to_onnx(onnx_to_ir(case.model()))
    assert _ops(back) == [f"ReduceL{p}"]
    assert_outputs_match(onnxruntime_run(back, {"x": x}), case.expected(x), case.dtype, "GlobalLpPool by onnxruntime")
    assert _ops(ir_to_onnx(onnx_to_ir(case.model()), opset=21)) == (["GlobalLpPool"] if dtype != TensorProto.DOUBLE
                                                                     else ["ReduceL2"])


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
def test_double_global_pools_stay_reductions(op):
    case = PoolCase(op, 22, (1, 3, 4, 5), dtype=TensorProto.DOUBLE)
    x = case.feed()
    back = ir_to_onnx(onnx_to_ir(case.model()))
    assert _ops(back)[0].startswith("Reduce")
    assert_outputs_match(onnxruntime_run(back, {"x": x}), case.expected(x), case.dtype, f"{op} by onnxruntime")


# --- the gaps that stay, pinned against the installed onnxruntime, and said by `poolir convert` --------------

@pytest.mark.parametrize("op, opset, dtype", [
    ("GlobalLpPool", 22, TensorProto.FLOAT), ("GlobalLpPool", 21, TensorProto.FLOAT),
    ("AveragePool", 22, TensorProto.DOUBLE), ("AveragePool", 22, TensorProto.FLOAT),
    ("MaxPool", 7, TensorProto.DOUBLE), ("MaxPool", 8, TensorProto.DOUBLE), ("LpPool", 18, TensorProto.DOUBLE),
    ("GlobalMaxPool", 13, TensorProto.DOUBLE), ("MaxPool", 12, TensorProto.INT8), ("MaxPool", 22, TensorProto.BFLOAT16),
])
def test_onnxruntime_gap_table_matches_the_installed_onnxruntime(op, opset, dtype):
    attrs = {"kernel_shape": [2]} if not op.startswith("Global") else {}
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", dtype, [1, 1, 4])],
                              [helper.make_tensor_value_info("y", dtype, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    try:
        onnxruntime_run(model, {"x": np.ones((1, 1, 4), helper.tensor_dtype_to_np_dtype(dtype))})
        runs = True
    except Exception as error:
        assert "NOT_IMPLEMENTED" in str(error) or "bfloat16" in str(error).lower() or "type" in str(error).lower()
        runs = False
    assert onnxruntime_lacks(op, opset, dtype) == (not runs)


def test_convert_warns_when_onnxruntime_will_not_run_the_result(tmp_path):
    model = _pool_ir("AvgPool", "opset1", {"kernel": (2,), "strides": (1,), "pads_begin": (0,), "pads_end": (0,),
                                           "exclude-pad": True, "rounding_type": "floor"}, (1, 1, 5), "f64")
    source = tmp_path / "double.xml"
    ir.write_model(model, source)
    result = CliRunner().invoke(main, ["convert", str(source), "-o", str(tmp_path / "double.onnx"), "--opset", "19"])
    assert result.exit_code == 0, result.output
    assert "warning" in result.stderr and "onnxruntime has no kernel" in result.stderr and "double" in result.stderr
    assert onnx.load(tmp_path / "double.onnx").opset_import[0].version == 19  # the requested opset is kept



def test_pads_as_large_as_the_kernel_need_dilations_so_the_index_mapping_has_its_opset():
    # A window holding an input element with pads_begin >= kernel needs dilated taps (MaxPool dilations: opset
    # 10), and Mod, which maps the Pad's indices back, is opset 10 too: no opset has the one without the other.
    model = _pool_ir("MaxPool", "opset8", {**DILATED, "rounding_type": "floor", "axis": 0,
                                           "index_element_type": "i64"}, (1, 1, 7, 6), outputs=(0, 1))
    with pytest.raises(ConversionError, match="dilations.*opset 10"):
        ir_to_onnx(model, opset=9)
    assert "Mod" in _ops(ir_to_onnx(model, opset=10))
