"""IR -> ONNX: the ONNX model, as the ONNX specs define it (run by onnxruntime), equals OpenVINO's result for the IR.

Expected values: OpenVINO running the IR (for IR written by hand or by OpenVINO's own converter), and for
round trips the spec-only oracle of test_onnx_to_ir_oracle.py. onnxruntime runs the converted ONNX except
where it has no kernel (old op versions, LpPool float64, ...); then poolir's runtime runs it. (poolir writes
explicit pads for static dims, so onnxruntime's SAME-with-dilations and VALID-with-ceil bugs never apply.)
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from poolir import ir
from poolir import runtime
from poolir.converter import ir_to_onnx, onnx_to_ir
from poolir.ir.builder import GraphBuilder
from poolir.ir.element_types import dtype_of
from poolir.ir.errors import ConversionError, UsageError
from tests.converter.test_onnx_to_ir_oracle import (KNOWN_ONNXRUNTIME_BUGS, PoolCase, assert_outputs_match,
                                                    pool_case_grid)
from tests.peers import onnxruntime_run, openvino_convert_to_xml, openvino_run_xml

GRID = pool_case_grid(200)


def checked(model: onnx.ModelProto) -> onnx.ModelProto:
    onnx.checker.check_model(model, full_check=True)
    return model


def run_onnx(model: onnx.ModelProto, feeds: dict) -> tuple[dict, str]:
    """(outputs, who ran them): onnxruntime, or poolir's runtime where onnxruntime lacks the kernel."""
    try:
        return onnxruntime_run(model, feeds), "onnxruntime"
    except Exception as error:
        if "NOT_IMPLEMENTED" not in str(error) and "InsertedPrecisionFreeCast" not in str(error):
            raise
    return runtime.run(model, feeds), "poolir runtime"


def fnames(model: onnx.ModelProto) -> list[str]:
    return [node.op_type for node in model.graph.node]


# --- round trips: ONNX -> IR -> ONNX -------------------------------------------------------------------

@pytest.mark.parametrize("case", GRID, ids=lambda c: c.id)
def test_round_trip_runs_like_the_source(case: PoolCase):
    x = case.feed()
    back = checked(ir_to_onnx(onnx_to_ir(case.model())))
    got, who = run_onnx(back, {"x": x})
    assert_outputs_match(got, case.expected(x), case.dtype, f"ONNX -> IR -> ONNX run by {who}")


@pytest.mark.parametrize("case", GRID[::4], ids=lambda c: c.id)
def test_round_trip_at_the_source_opset(case: PoolCase):
    x = case.feed()
    opset = max(case.opset, 7)
    try:
        back = checked(ir_to_onnx(onnx_to_ir(case.model()), opset=opset))
    except ConversionError as error:  # e.g. the column-major index arithmetic needs Mod (opset 10)
        assert f"opset {opset}" in str(error)
        return
    assert back.opset_import[0].version == opset
    assert_outputs_match(runtime.run(back, {"x": x}), case.expected(x), case.dtype, "round trip at the source opset")


def test_known_onnxruntime_bugs_are_real():
    """The oracle, not onnxruntime, is the reference where these differ (see KNOWN_ONNXRUNTIME_BUGS)."""
    same = PoolCase("MaxPool", 12, (1, 1, 7), {"kernel_shape": [3], "dilations": [2], "strides": [2],
                                               "auto_pad": "SAME_UPPER"})
    x = np.arange(1, 8, dtype=np.float32).reshape(1, 1, 7)
    assert same.expected(x)["y"].ravel().tolist() == [3, 5, 7, 7]
    assert onnxruntime_run(same.model(), {"x": x})["y"].ravel().tolist() != [3, 5, 7, 7], \
        KNOWN_ONNXRUNTIME_BUGS["same_dilations"]
    valid = PoolCase("MaxPool", 12, (1, 1, 3), {"kernel_shape": [2], "strides": [2], "auto_pad": "VALID", "ceil_mode": 1})
    x = np.arange(1, 4, dtype=np.float32).reshape(1, 1, 3)
    assert valid.expected(x)["y"].ravel().tolist() == [2]
    assert onnxruntime_run(valid.model(), {"x": x})["y"].ravel().tolist() != [2], KNOWN_ONNXRUNTIME_BUGS["valid_ceil"]


# --- IR written by OpenVINO's own converter --------------------------------------------------------------

FRONTEND_CASES = GRID[::8] + [
    # The cases OpenVINO's frontend converts wrongly: its IR still means what OpenVINO computes, and the
    # ONNX written from it must reproduce exactly that.
    PoolCase("MaxPool", 12, (1, 1, 4, 4), {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [0, 0, 1, 1], "ceil_mode": 1}),
    PoolCase("AveragePool", 19, (1, 1, 6), {"kernel_shape": [3], "strides": [2], "pads": [1, 1], "ceil_mode": 1,
                                            "count_include_pad": 1}),
    PoolCase("LpPool", 18, (1, 2, 5), {"kernel_shape": [2], "strides": [2], "ceil_mode": 1, "p": 3}),
    PoolCase("MaxPool", 12, (1, 1, 5, 5), {"kernel_shape": [2, 2], "strides": [2, 2], "storage_order": 1}, indices=True),
    PoolCase("LpPool", 18, (1, 2, 6, 6), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "p": 2}),
    PoolCase("GlobalLpPool", 2, (1, 3, 4, 4), {"p": 3}),
]


@pytest.mark.parametrize("case", FRONTEND_CASES, ids=lambda c: c.id)
def test_openvino_written_ir_to_onnx_equals_openvino(case: PoolCase, tmp_path):
    x = case.feed()
    try:
        xml = openvino_convert_to_xml(case.model(), tmp_path / "frontend.xml")
    except Exception as error:
        pytest.skip(f"OpenVINO's frontend refuses this model: {str(error).splitlines()[0][:120]}")
    expected = openvino_run_xml(xml, {"x": x})
    try:
        back = checked(ir_to_onnx(ir.read_model(xml)))
    except ConversionError as error:
        # Refused only where OpenVINO computes a window of padding alone (the frontend's MaxPool ceil bug):
        # OpenVINO's output holds the lowest float there, which no ONNX pooling node produces.
        assert "no input element" in str(error)
        assert any((v == np.finfo(np.float32).min).any() or np.isnan(v).any() for v in expected.values())
        return
    got, who = run_onnx(back, {"x": x})
    names = [o.name for o in back.graph.output]
    assert len(names) == len(expected)
    for name, want in zip(names, expected.values()):
        assert got[name].shape == want.shape, f"{who}: {name}"
        np.testing.assert_allclose(got[name].astype(np.float64), want.astype(np.float64), rtol=2e-3 if
                                   case.dtype == onnx.TensorProto.FLOAT16 else 1e-5, atol=1e-5, err_msg=who)


def test_openvino_lp_decomposition_folds_into_one_lppool(tmp_path):
    case = PoolCase("LpPool", 18, (1, 2, 6, 6), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "p": 3})
    back = checked(ir_to_onnx(ir.read_model(openvino_convert_to_xml(case.model(), tmp_path / "lp.xml"))))
    assert fnames(back) == ["LpPool"]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in back.graph.node[0].attribute}
    assert attrs["p"] == 3 and attrs["kernel_shape"] == [3, 3] and attrs["pads"] == [1, 1, 1, 1]


def test_lp_decomposition_with_ceil_overhang_and_no_pads_is_not_folded(tmp_path):
    # OpenVINO's AvgPool (exclude-pad=false, no pads) divides the overhanging window by its real taps, so
    # "* prod(k)" is not the Lp sum there: folding would change the numbers; the layers map one by one.
    case = PoolCase("LpPool", 18, (1, 2, 5), {"kernel_shape": [2], "strides": [2], "ceil_mode": 1, "p": 3})
    back = checked(ir_to_onnx(ir.read_model(openvino_convert_to_xml(case.model(), tmp_path / "lp.xml"))))
    assert "LpPool" not in fnames(back) and "AveragePool" in fnames(back)


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
def test_reduce_over_spatial_axes_becomes_the_global_pool(op, tmp_path):
    case = PoolCase(op, 22, ("N", 3, 4, 5))
    back = checked(ir_to_onnx(ir.read_model(openvino_convert_to_xml(case.model(), tmp_path / "g.xml"))))
    assert fnames(back) == [op]
    assert back.graph.input[0].type.tensor_type.shape.dim[0].dim_param  # the batch stays symbolic


@pytest.mark.parametrize("layer_type", ["ReduceMax", "ReduceMean"])
@pytest.mark.parametrize("element_type", ["i32", "i64"])
def test_integer_reduce_over_spatial_axes_stays_a_reduction(layer_type, element_type, tmp_path):
    """An integer Reduce* over every spatial axis was written as a Global pool, which ONNX defines for floats
    only: onnxruntime refused the model ("Type 'tensor(int32)' of input parameter ... of operator
    (GlobalMaxPool) ... is invalid"; found by the graph fuzzer). It stays the Reduce*."""
    builder = GraphBuilder("hand")
    x = builder.parameter("x", element_type, [2, 3, 2, 2])
    (y,) = builder.add(layer_type, "opset1", [x, builder.const(np.array([2, 3], np.int64))],
                       attrs={"keep_dims": True}, name="reduce")
    builder.result(y, name="y")
    model = builder.build()
    back = checked(ir_to_onnx(model))
    assert fnames(back) == [layer_type]
    feeds = {"x": (np.arange(24).reshape(2, 3, 2, 2) * 7 % 11 - 5).astype(dtype_of(element_type))}
    path = tmp_path / "r.xml"
    ir.write_model(model, path)
    np.testing.assert_array_equal(onnxruntime_run(back, feeds)["y"], openvino_run_xml(path, feeds, ["y"])["y"])


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
@pytest.mark.parametrize("begin,end", [([0, 1, 2], [1, 0, 0]), ([0, -1, 1], [1, 2, -2]), ([-1, 0, 0], [0, -1, 1])])
@pytest.mark.parametrize("index_type", ["i64", "i32"])
def test_pad_by_computed_pads(mode, begin, end, index_type, tmp_path):
    """A Pad-12 whose pads are computed at run time (poolir's ONNX -> IR writes one for an ONNX Pad with computed
    pads) was refused: "the pads_begin are not constant" (found by the graph fuzzer's round trips). It is an ONNX
    Pad by the positive amounts and a Slice for the negative ones, OpenVINO's order."""
    builder = GraphBuilder("hand")
    x = builder.parameter("x", "f32", [2, 3, 4])
    refs = [builder.parameter(name, index_type, [3]) for name in ("begin", "end")]
    value = [builder.const(np.array(2.5, np.float32))] if mode == "constant" else []
    (y,) = builder.add("Pad", "opset12", [x, *refs, *value], attrs={"pad_mode": mode}, name="pad")
    builder.result(y, name="y")
    model = builder.build()
    path = tmp_path / "pad.xml"
    ir.write_model(model, path)
    feeds = {"x": np.arange(24, dtype=np.float32).reshape(2, 3, 4), "begin": np.array(begin, dtype_of(index_type)),
             "end": np.array(end, dtype_of(index_type))}
    expected = openvino_run_xml(path, feeds, ["y"])["y"]
    back = checked(ir_to_onnx(model))
    np.testing.assert_array_equal(onnxruntime_run(back, feeds)["y"], expected)
    np.testing.assert_array_equal(runtime.run(model, feeds)["y"], expected)


def test_pad_by_computed_pads_refused_before_opset_11():
    builder = GraphBuilder("hand")
    x = builder.parameter("x", "f32", [2, 3])
    (y,) = builder.add("Pad", "opset12", [x, builder.parameter("b", "i64", [2]), builder.parameter("e", "i64", [2])],
                       attrs={"pad_mode": "edge"}, name="pad")
    builder.result(y, name="y")
    with pytest.raises(ConversionError, match="pads computed at run time needs ONNX Pad's pads input, from opset 11"):
        ir_to_onnx(builder.build(), opset=10)


# --- IR written by hand: OpenVINO's meaning, rewritten or refused ----------------------------------------------

def _pool_ir(layer_type: str, version: str, attrs: dict, shape, element_type="f32", outputs=(0,)) -> ir.Model:
    builder = GraphBuilder("hand")
    x = builder.parameter("x", element_type, shape)
    refs = builder.add(layer_type, version, [x], attrs=attrs, name="pool")
    for index in outputs:
        builder.result(refs[index], name="y" if index == 0 else "indices")
    return builder.build()


def _compare_with_openvino(model: ir.Model, x: np.ndarray, tmp_path, opset: int = 22) -> onnx.ModelProto:
    path = tmp_path / "hand.xml"
    ir.write_model(model, path)
    expected = openvino_run_xml(path, {"x": x})
    back = checked(ir_to_onnx(model, opset=opset))
    got, who = run_onnx(back, {"x": x})
    for name, want in expected.items():
        assert got[name].shape == want.shape, f"{who}: {name}"
        np.testing.assert_allclose(got[name], want, rtol=1e-6, err_msg=f"{who}: {name}")
    return back


def test_avgpool_include_pad_ceil_overhang_becomes_pad_plus_averagepool(tmp_path):
    # L=6, k=3, s=2, pads (1,1), ceil: OpenVINO divides the last window [x5, pad, past] by 3.
    model = _pool_ir("AvgPool", "opset1", {"kernel": (3,), "strides": (2,), "pads_begin": (1,), "pads_end": (1,),
                                           "exclude-pad": False, "rounding_type": "ceil"}, (1, 1, 6))
    x = np.arange(1, 7, dtype=np.float32).reshape(1, 1, 6) * 10
    back = _compare_with_openvino(model, x, tmp_path)
    assert fnames(back) == ["Pad", "AveragePool"]


def test_avgpool_no_pads_exclude_false_ceil_divides_by_real_taps(tmp_path):
    model = _pool_ir("AvgPool", "opset1", {"kernel": (3,), "strides": (2,), "pads_begin": (0,), "pads_end": (0,),
                                           "exclude-pad": False, "rounding_type": "ceil"}, (1, 1, 6))
    back = _compare_with_openvino(model, np.arange(1, 7, dtype=np.float32).reshape(1, 1, 6), tmp_path)
    assert fnames(back) == ["AveragePool"]


@pytest.mark.parametrize("axis, index_type", [(0, "i32"), (1, "i64"), (2, "i32"), (-1, "i64")])
def test_maxpool_indices_axis_and_type(axis, index_type, tmp_path):
    model = _pool_ir("MaxPool", "opset8", {"kernel": (2, 2), "strides": (2, 2), "pads_begin": (0, 0),
                                           "pads_end": (1, 1), "axis": axis, "index_element_type": index_type},
                     (2, 3, 5, 5), outputs=(0, 1))
    x = np.random.default_rng(1).permutation(150).reshape(2, 3, 5, 5).astype(np.float32)
    _compare_with_openvino(model, x, tmp_path)


@pytest.mark.parametrize("element_type, dtype, floor", [
    ("f32", np.float32, np.finfo(np.float32).min),
    ("f16", np.float16, -np.inf),
    ("i8", np.int8, -128),
    ("u8", np.uint8, 0),
])
def test_maxpool_window_of_padding_becomes_pad_of_openvinos_floor(element_type, dtype, floor, tmp_path):
    # L=4, k=2, s=2, pads (0,1), ceil: OpenVINO keeps a third window made of padding only, whose value is
    # its floor (f32: -3.4e38, f16: -inf, i8: -128, u8: 0). Pad(that value) + MaxPool reproduces it:
    # x = [1, 2, 3, 4] -> [2, 4, floor].
    model = _pool_ir("MaxPool", "opset1", {"kernel": (2,), "strides": (2,), "pads_begin": (0,), "pads_end": (1,),
                                           "rounding_type": "ceil"}, (1, 1, 4), element_type=element_type)
    x = np.arange(1, 5, dtype=dtype).reshape(1, 1, 4)
    back = _compare_with_openvino(model, x, tmp_path)
    assert fnames(back) == ["Pad", "MaxPool"]
    got, _ = run_onnx(back, {"x": x})
    assert got["y"].ravel().tolist() == [2, 4, floor]


def test_maxpool_window_of_padding_with_indices_is_refused():
    # The same layer with its indices used: a Pad would shift every index, so there is no exact form.
    model = _pool_ir("MaxPool", "opset8", {"kernel": (2,), "strides": (2,), "pads_begin": (0,), "pads_end": (1,),
                                           "rounding_type": "ceil", "dilations": (1,), "axis": 0,
                                           "index_element_type": "i64"}, (1, 1, 4), outputs=(0, 1))
    with pytest.raises(ConversionError, match="layer 'pool'.*no input element"):
        ir_to_onnx(model)


def test_ceil_torch_maps_to_ceil_mode(tmp_path):
    model = _pool_ir("MaxPool", "opset14", {"kernel": (3,), "strides": (2,), "pads_begin": (1,), "pads_end": (1,),
                                            "rounding_type": "ceil_torch"}, (1, 1, 6))
    back = _compare_with_openvino(model, np.arange(6, dtype=np.float32).reshape(1, 1, 6), tmp_path)
    assert fnames(back) == ["MaxPool"]


def test_requested_opset_that_cannot_express_the_layer_is_refused():
    dilated = _pool_ir("AvgPool", "opset16", {"kernel": (2,), "strides": (1,), "pads_begin": (0,), "pads_end": (0,),
                                              "exclude-pad": True, "dilations": (2,)}, (1, 1, 6))
    with pytest.raises(ConversionError, match="dilations.*from opset 19"):
        ir_to_onnx(dilated, opset=18)
    assert ir_to_onnx(dilated, opset=19).opset_import[0].version == 19
    ceil = _pool_ir("MaxPool", "opset1", {"kernel": (2,), "strides": (2,), "pads_begin": (0,), "pads_end": (0,),
                                          "rounding_type": "ceil"}, (1, 1, -1))
    with pytest.raises(ConversionError, match="opset 10"):
        ir_to_onnx(ceil, opset=9)
    with pytest.raises(UsageError, match="opset 23"):
        ir_to_onnx(ceil, opset=23)


def test_int8_maxpool_needs_opset_12(tmp_path):
    model = _pool_ir("MaxPool", "opset1", {"kernel": (2,), "strides": (2,), "pads_begin": (0,), "pads_end": (0,)},
                     (1, 1, 4), element_type="i8")
    with pytest.raises(ConversionError, match="from opset 12"):
        ir_to_onnx(model, opset=11)
    _compare_with_openvino(model, np.array([[[-5, 3, 7, -128]]], dtype=np.int8), tmp_path, opset=12)


def test_dynamic_length_ceil_that_may_keep_a_padding_window_is_refused():
    model = _pool_ir("AvgPool", "opset1", {"kernel": (2,), "strides": (2,), "pads_begin": (0,), "pads_end": (1,),
                                           "exclude-pad": True, "rounding_type": "ceil"}, (1, 1, -1))
    with pytest.raises(ConversionError, match="dynamic spatial dims"):
        ir_to_onnx(model)


def test_every_layer_type_the_ir_package_reads_has_a_conversion():
    from poolir.converter.ir_to_onnx.registry import CONVERTERS as _CONVERTERS
    from poolir.ir.schema import SCHEMAS

    assert set(SCHEMAS) == set(_CONVERTERS)


def test_layer_without_an_exact_onnx_form_is_refused_naming_it():
    builder = GraphBuilder("shapes")
    x = builder.parameter("x", "f32", (1, 2, None))  # symmetric converts as a Gather of known positions only
    (y,) = builder.add("Pad", "opset1", [x, builder.const(np.asarray([0, 0, 1], np.int64)),
                                         builder.const(np.asarray([0, 0, 1], np.int64))],
                       attrs={"pad_mode": "symmetric"}, name="mirror")
    builder.result(y, name="y")
    with pytest.raises(ConversionError, match="layer 'mirror'.*symmetric"):
        ir_to_onnx(builder.build())


def test_shape_and_element_wise_layers_mean_what_openvino_computes(tmp_path):
    """The non-pooling layers an IR may hold, each mapped to its ONNX op, checked against OpenVINO."""
    b = GraphBuilder("layers")
    x = b.parameter("x", "f32", (2, 3, 4, 6))
    i64 = lambda values: b.const(np.asarray(values, np.int64))  # noqa: E731
    (pooled,) = b.add("AvgPool", "opset1", [x], attrs={"kernel": (2, 2), "strides": (1, 2), "pads_begin": (0, 0),
                                                        "pads_end": (0, 0), "exclude-pad": True})
    (shape,) = b.add("ShapeOf", "opset3", [pooled], attrs={"output_type": "i32"})
    (dims,) = b.add("Gather", "opset8", [shape, b.const(np.asarray([0, -1], np.int32)), i64(0)])
    (sliced,) = b.add("Slice", "opset8", [pooled, i64([1]), i64([-1]), i64([2]), i64([3])])
    (strided,) = b.add("StridedSlice", "opset1", [x, i64([0, 1, 3]), i64([0, 3, 0]), i64([1, 1, -1])],
                       attrs={"begin_mask": (1, 0, 0), "end_mask": (1, 0, 1)})
    (wide,) = b.add("Broadcast", "opset3", [b.const(np.asarray([[1.5], [2.5]], np.float32)), i64([2, 3])])
    (flat,) = b.add("Reshape", "opset1", [strided, i64([0, -1])], attrs={"special_zero": True})
    parts = b.add("Split", "opset1", [flat, i64(1)], attrs={"num_splits": 2})
    (joined,) = b.add("Concat", "opset1", [parts[1], parts[0]], attrs={"axis": 1})
    (floor_div,) = b.add("Divide", "opset1", [b.const(np.asarray([-7, 7, -8], np.int64)), i64([2, -2, 3])])
    (floor_mod,) = b.add("FloorMod", "opset1", [b.const(np.asarray([-7.5, 7.0], np.float32)),
                                                b.const(np.asarray([2.0, -3.0], np.float32))])
    for name, ref in (("dims", dims), ("sliced", sliced), ("joined", joined), ("wide", wide),
                      ("floor_div", floor_div), ("floor_mod", floor_mod)):
        b.result(ref, name=name)
    model = b.build()
    x_value = np.random.default_rng(5).standard_normal((2, 3, 4, 6)).astype(np.float32)
    back = _compare_with_openvino(model, x_value, tmp_path)
    assert {"Shape", "Gather", "Slice", "Expand", "Reshape", "Split", "Concat", "Mod"} <= set(fnames(back))


def test_more_layers_mean_what_openvino_computes(tmp_path):
    b = GraphBuilder("more")
    x = b.parameter("x", "f32", (2, 3, 4, 5))
    i64 = lambda values: b.const(np.asarray(values, np.int64))  # noqa: E731
    (moved,) = b.add("Transpose", "opset1", [x, i64([0, 2, 3, 1])])
    (unsq,) = b.add("Unsqueeze", "opset1", [moved, i64([0])])
    (sq,) = b.add("Squeeze", "opset1", [unsq, i64([0])])
    parts = b.add("VariadicSplit", "opset1", [sq, i64(3), i64([1, -1])])
    (padded_edge,) = b.add("Pad", "opset1", [parts[1], i64([0, 1, 0, 0]), i64([0, 0, 2, 0])], attrs={"pad_mode": "edge"})
    (padded_reflect,) = b.add("Pad", "opset1", [x, i64([0, 0, 1, 2]), i64([0, 0, 2, 1])], attrs={"pad_mode": "reflect"})
    (padded_value,) = b.add("Pad", "opset12", [x, i64([0, 0, -1, 1]), i64([0, 0, 1, -2]),
                                               b.const(np.asarray(7.0, np.float32))], attrs={"pad_mode": "constant"})
    (summed,) = b.add("ReduceSum", "opset1", [x, i64([1, 3])], attrs={"keep_dims": False})
    (l1,) = b.add("ReduceL1", "opset4", [x, i64([-1])], attrs={"keep_dims": True})
    (ints,) = b.add("Convert", "opset1", [b.const(np.asarray([1, -2, 3], np.int32))], attrs={"destination_type": "f32"})
    (like,) = b.add("ConvertLike", "opset1", [ints, b.const(np.asarray([0], np.float16))])
    (top,) = b.add("Maximum", "opset1", [x, b.const(np.asarray(0.25, np.float32))])
    (low,) = b.add("Minimum", "opset1", [top, b.const(np.asarray(1.0, np.float32))])
    (root,) = b.add("Sqrt", "opset1", [low])
    (floored,) = b.add("Floor", "opset1", [x])
    (raised,) = b.add("Ceiling", "opset1", [x])
    for name, ref in (("edge", padded_edge), ("reflect", padded_reflect), ("value", padded_value), ("sum", summed),
                      ("l1", l1), ("like", like), ("root", root), ("floor", floored), ("ceiling", raised)):
        b.result(ref, name=name)
    x_value = np.random.default_rng(6).standard_normal((2, 3, 4, 5)).astype(np.float32)
    back = _compare_with_openvino(b.build(), x_value, tmp_path, opset=13)
    # Maximum/Minimum of floats are Where(Greater/Less(a, b), a, b): OpenVINO's NaN rule (b), not ONNX Max's
    assert {"Transpose", "Unsqueeze", "Squeeze", "Split", "Pad", "ReduceSum", "ReduceL1", "Cast", "Greater", "Less",
            "Where", "Sqrt", "Floor", "Ceil"} <= set(fnames(back))


@pytest.mark.parametrize("opset, expected_ops", [(11, {"Greater", "Less", "Where"}), (12, {"Max", "Min"})])
def test_integer_maximum_and_minimum_before_and_from_opset_12(opset, expected_ops, tmp_path):
    """ONNX Max and Min take integers from version 12 only (onnxruntime refuses an int64 Max-8 as an invalid graph):
    before, integer Maximum/Minimum are the same select as floats, exact for integers."""
    b = GraphBuilder("integer_extremes")
    x = b.parameter("x", "i64", (2, 5))
    (top,) = b.add("Maximum", "opset1", [x, b.const(np.asarray([0, 3, -2, 7, 1], np.int64))])
    (low,) = b.add("Minimum", "opset1", [top, b.const(np.asarray(4, np.int64))])
    b.result(low, name="y")
    x_value = np.random.default_rng(3).integers(-9, 10, (2, 5)).astype(np.int64)
    back = _compare_with_openvino(b.build(), x_value, tmp_path, opset=opset)
    assert expected_ops <= set(fnames(back))


@pytest.mark.parametrize("case", GRID[1::4], ids=lambda c: c.id)
def test_round_trip_with_dynamic_spatial_dims(case: PoolCase):
    """ONNX (symbolic spatial dims) -> IR -> ONNX: exact at the actual lengths, or refused with the reason."""
    dims = tuple(f"d{i}" for i in range(len(case.shape) - 2))
    dynamic = PoolCase(case.op, case.opset, (*case.shape[:2], *dims), case.attrs, case.indices, case.dtype)
    try:
        back = checked(ir_to_onnx(onnx_to_ir(dynamic.model())))
    except ConversionError as error:
        assert "dynamic" in str(error)
        return
    x = case.feed()
    same_dilated = any(a.name == "auto_pad" and a.s.startswith(b"SAME") for n in back.graph.node for a in n.attribute) \
        and any(d != 1 for d in case.attrs.get("dilations", ()))
    # onnxruntime computes SAME pads without the dilation (KNOWN_ONNXRUNTIME_BUGS): poolir's runtime runs those.
    got, who = (runtime.run(back, {"x": x}), "poolir runtime") if same_dilated else run_onnx(back, {"x": x})
    assert_outputs_match(got, case.expected(x), case.dtype, f"dynamic round trip run by {who}")
