"""The contested ONNX pooling readings, pinned with hand-worked values, and attribute validation.

Each decision is documented in runtime/onnx_ops/pooling.py's module docstring. Cases where onnxruntime
disagrees or refuses are marked; the expected values are worked out by hand from the spec text.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from poolir import runtime
from poolir.ir.errors import FeedError, InvalidModelError, UnsupportedError

NAN, INF = math.nan, math.inf


def pool_model(op_type, attrs, shape, *, opset=22, elem=TensorProto.FLOAT, outputs=("y",), name="pool"):
    node = helper.make_node(op_type, ["x"], list(outputs), name=name, **attrs)
    out_info = [helper.make_tensor_value_info(o, elem if i == 0 else TensorProto.INT64, None)
                for i, o in enumerate(outputs)]
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", elem, list(shape))], out_info)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def run1(op_type, attrs, x, **kw):
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    return runtime.run(pool_model(op_type, attrs, x.shape, elem=elem, **kw), {"x": x})


X123 = np.array([[[1.0, 2.0, 3.0]]], np.float32)


# ---------------------------------------------------------------------------------------------------
# Windows without any real input element (pads >= kernel). onnxruntime refuses these pads ("Pad should
# be smaller than kernel"). Windows for kernel 2, pads (2, 2) over [1, 2, 3] start at -2 .. 3:
#   [-2,-1] empty, [-1,0] {1}, [0,1] {1,2}, [1,2] {2,3}, [2,3] {3}, [3,4] empty.


def test_empty_window_max_is_minus_infinity_with_index_minus_one():
    result = run1("MaxPool", {"kernel_shape": [2], "pads": [2, 2]}, X123, outputs=("y", "i"))
    np.testing.assert_array_equal(result["y"], [[[-INF, 1, 2, 3, 3, -INF]]])
    np.testing.assert_array_equal(result["i"], [[[-1, 0, 1, 2, 2, -1]]])


@pytest.mark.parametrize("dtype, lowest", [(np.uint8, 0), (np.int8, -128)])
def test_empty_window_max_of_integers_is_the_type_minimum(dtype, lowest):
    result = run1("MaxPool", {"kernel_shape": [2], "pads": [2, 2]}, X123.astype(dtype))
    np.testing.assert_array_equal(result["y"], np.array([[[lowest, 1, 2, 3, 3, lowest]]], dtype))


def test_empty_window_average_excluding_pads_is_nan():
    # 0 real elements / 0: onnx.reference (nanmean) gives the same NaN.
    result = run1("AveragePool", {"kernel_shape": [2], "pads": [2, 2]}, X123)
    np.testing.assert_array_equal(result["y"], np.array([[[NAN, 1, 1.5, 2.5, 3, NAN]]], np.float32))


def test_empty_window_average_including_pads_is_zero():
    # sum of padding zeros / 2 taps inside the padded tensor; onnx.reference agrees.
    result = run1("AveragePool", {"kernel_shape": [2], "pads": [2, 2], "count_include_pad": 1}, X123)
    np.testing.assert_array_equal(result["y"], np.array([[[0, 0.5, 1.5, 2.5, 1.5, 0]]], np.float32))


def test_empty_window_lp_is_zero():
    result = run1("LpPool", {"kernel_shape": [2], "pads": [2, 2]}, X123)
    np.testing.assert_allclose(result["y"], [[[0, 1, math.sqrt(5), math.sqrt(13), 3, 0]]], rtol=1e-6)


# ---------------------------------------------------------------------------------------------------
# auto_pad


@pytest.mark.parametrize("op_type, expected", [("MaxPool", [2.0]), ("AveragePool", [1.5])])
def test_valid_ignores_ceil_mode(op_type, expected):
    # L=3, k=2, s=2: the spec's VALID size ceil((3 - 2 + 1) / 2) = 1. onnxruntime 1.31 gives 2 windows.
    attrs = {"kernel_shape": [2], "strides": [2], "auto_pad": "VALID", "ceil_mode": 1}
    np.testing.assert_array_equal(run1(op_type, attrs, X123)["y"], [[expected]])


@pytest.mark.parametrize("auto_pad, expected", [("SAME_UPPER", [3, 5, 5]), ("SAME_LOWER", [2, 4, 6])])
def test_same_padding_counts_dilation(auto_pad, expected):
    # L=6, k=2, d=2 (ek=3), s=2: out=ceil(6/2)=3, total=(3-1)*2+3-6=1. UPPER pads (0,1): taps
    # (0,2) (2,4) (4,6=pad); LOWER pads (1,0): taps (-1=pad,1) (1,3) (3,5). onnxruntime ignores the
    # dilation here (pads 0, 2 windows for LOWER).
    x = np.arange(1, 7, dtype=np.float32).reshape(1, 1, 6)
    attrs = {"kernel_shape": [2], "strides": [2], "dilations": [2], "auto_pad": auto_pad}
    np.testing.assert_array_equal(run1("MaxPool", attrs, x)["y"], [[expected]])


def test_same_with_ceil_mode_keeps_ceil_of_length_over_stride():
    # L=5, k=2, s=2, SAME_UPPER: out=3, total=(3-1)*2+2-5=1 -> pads (0,1); ceil_mode does not add a window.
    x = np.arange(1, 6, dtype=np.float32).reshape(1, 1, 5)
    attrs = {"kernel_shape": [2], "strides": [2], "auto_pad": "SAME_UPPER", "ceil_mode": 1, "count_include_pad": 1}
    np.testing.assert_array_equal(run1("AveragePool", attrs, x)["y"], [[[1.5, 3.5, 2.5]]])


def test_same_with_stride_beyond_kernel_pads_nothing():
    # L=6, k=2, s=3: formula (2-1)*3+2-6 = -1 -> no padding; onnxruntime before 19 fails on this.
    x = np.arange(1, 7, dtype=np.float32).reshape(1, 1, 6)
    attrs = {"kernel_shape": [2], "strides": [3], "auto_pad": "SAME_UPPER"}
    np.testing.assert_array_equal(run1("AveragePool", attrs, x, opset=11)["y"], [[[1.5, 4.5]]])


# ---------------------------------------------------------------------------------------------------
# ceil_mode and the divisor


def test_ceil_mode_drops_a_window_starting_in_the_right_padding():
    # L=4, k=2, s=2, pads (0,1): ceil gives 3 windows, but the third would start at 4 = L + pad_begin.
    x = np.arange(1, 5, dtype=np.float32).reshape(1, 1, 4)
    for opset in (10, 11, 19, 22):
        attrs = {"kernel_shape": [2], "strides": [2], "pads": [0, 1], "ceil_mode": 1}
        np.testing.assert_array_equal(run1("AveragePool", attrs, x, opset=opset)["y"], [[[1.5, 3.5]]])


@pytest.mark.parametrize("include, expected", [(0, [2.0, 4.0, 5.0]), (1, [2.0, 4.0, 2.5])])
def test_ceil_overhang_divisor_stops_at_the_padded_extent(include, expected):
    # L=5, k=3, s=2, pads (0,1), ceil: windows at 0, 2, 4; the last reads x[4], one pad, one tap past
    # the padded tensor. include-pad divides by 2 (x[4] and the pad), exclude-pad by 1.
    x = np.arange(1, 6, dtype=np.float32).reshape(1, 1, 5)
    attrs = {"kernel_shape": [3], "strides": [2], "pads": [0, 1], "ceil_mode": 1, "count_include_pad": include}
    np.testing.assert_array_equal(run1("AveragePool", attrs, x)["y"], [[expected]])


def test_average_pool_1_always_excludes_pads():
    attrs = {"kernel_shape": [2], "pads": [1, 1]}
    np.testing.assert_array_equal(run1("AveragePool", attrs, X123, opset=1)["y"], [[[1, 1.5, 2.5, 3]]])


# ---------------------------------------------------------------------------------------------------
# Indices


def test_indices_flatten_over_batch_and_channels_column_major_spatial():
    x = np.zeros((2, 1, 2, 2), np.float32)
    x[1, 0] = [[0, 9], [3, 1]]
    x[0, 0] = [[5, 0], [0, 0]]
    attrs = {"kernel_shape": [2, 2], "storage_order": 1}
    result = run1("MaxPool", attrs, x, outputs=("y", "i"))
    # batch 1: 9 at (h=0, w=1) -> column-major spatial 0 + 1*2 = 2, plus 1 * (1*2*2) = 6
    np.testing.assert_array_equal(result["i"].reshape(-1), [0, 6])
    result = run1("MaxPool", {"kernel_shape": [2, 2]}, x, outputs=("y", "i"))
    np.testing.assert_array_equal(result["i"].reshape(-1), [0, 5])


def test_indices_ties_take_the_first_in_row_major_order():
    x = np.full((1, 1, 3, 3), 7, np.uint8)
    result = run1("MaxPool", {"kernel_shape": [2, 2], "pads": [1, 1, 0, 0]}, x, outputs=("y", "i"))
    # windows start at (-1,-1), (-1,0), (0,-1), (0,0): first real tap of each
    np.testing.assert_array_equal(result["i"].reshape(-1), [0, 0, 1, 0, 0, 1, 3, 3, 4])


# ---------------------------------------------------------------------------------------------------
# LpPool p


def test_lp_pool_1_takes_a_float_p():
    x = np.array([[[1.0, 8.0]]], np.float32)
    result = run1("LpPool", {"kernel_shape": [2], "p": 1.5}, x, opset=1)
    np.testing.assert_allclose(result["y"], [[[(1 + 8 ** 1.5) ** (1 / 1.5)]]], rtol=1e-6)


def test_global_lp_pool_int_p():
    x = np.array([[[1.0, -2.0, 2.0]]], np.float32)
    np.testing.assert_allclose(run1("GlobalLpPool", {"p": 3}, x)["y"], [[[17 ** (1 / 3)]]], rtol=1e-6)


# ---------------------------------------------------------------------------------------------------
# Validation: errors name the node and the rule, at Session construction


@pytest.mark.parametrize("op_type, opset, attrs, fragment", [
    ("AveragePool", 7, {"kernel_shape": [2], "ceil_mode": 1}, "attribute 'ceil_mode' is not defined for AveragePool-7"),
    ("AveragePool", 1, {"kernel_shape": [2], "count_include_pad": 1}, "'count_include_pad' is not defined for AveragePool-1"),
    ("MaxPool", 8, {"kernel_shape": [2], "dilations": [1]}, "'dilations' is not defined for MaxPool-8"),
    ("LpPool", 11, {"kernel_shape": [2], "ceil_mode": 1}, "'ceil_mode' is not defined for LpPool-11"),
    ("LpPool", 2, {"kernel_shape": [2], "p": 2.0}, "attribute 'p' of LpPool-2 must be of kind int, got float"),
    ("LpPool", 1, {"kernel_shape": [2], "p": 2}, "attribute 'p' of LpPool-1 must be of kind float, got int"),
    ("MaxPool", 22, {"strides": [1]}, "required attribute 'kernel_shape' of MaxPool-22 is missing"),
    ("MaxPool", 22, {"kernel_shape": [2, 2]}, "input rank 3 does not match kernel_shape with 2 axes"),
    ("MaxPool", 22, {"kernel_shape": [2], "pads": [1]}, "'pads' has 1 values"),
    ("MaxPool", 22, {"kernel_shape": [2], "strides": [0]}, "'strides' = [0]: every value must be >= 1"),
    ("MaxPool", 22, {"kernel_shape": [0]}, "'kernel_shape' = [0]: every value must be >= 1"),
    ("MaxPool", 22, {"kernel_shape": [2], "dilations": [1, 1]}, "'dilations' has 2 values"),
    ("MaxPool", 22, {"kernel_shape": [2], "pads": [-1, 0]}, "'pads' = [-1, 0]: every value must be >= 0"),
    ("MaxPool", 22, {"kernel_shape": [2], "auto_pad": "SAME"}, "'auto_pad' = 'SAME': must be one of"),
    ("MaxPool", 22, {"kernel_shape": [2], "auto_pad": "VALID", "pads": [1, 0]}, "cannot be combined with auto_pad"),
    ("MaxPool", 22, {"kernel_shape": [2], "storage_order": 2}, "'storage_order' = 2: must be 0 or 1"),
    ("MaxPool", 22, {"kernel_shape": [2], "ceil_mode": 3}, "'ceil_mode' = 3: must be 0 or 1"),
    ("AveragePool", 22, {"kernel_shape": [2], "count_include_pad": -1}, "'count_include_pad' = -1"),
    ("LpPool", 22, {"kernel_shape": [2], "p": 0}, "'p' = 0: must be a finite number > 0"),
    ("GlobalLpPool", 22, {"p": -1}, "'p' = -1: must be a finite number > 0"),
    ("MaxPool", 22, {"kernel_shape": [9]}, "is shorter than the effective kernel 9"),
])
def test_invalid_attributes_are_refused_naming_the_node(op_type, opset, attrs, fragment):
    model = pool_model(op_type, attrs, [1, 1, 4], opset=opset)
    with pytest.raises(InvalidModelError) as caught:
        runtime.Session(model)
    assert f"node 'pool' ({op_type})" in str(caught.value)
    assert fragment in str(caught.value)


@pytest.mark.parametrize("op_type, opset, elem, fragment", [
    ("MaxPool", 11, TensorProto.INT8, "input type int8 is not allowed for MaxPool-11"),
    ("AveragePool", 19, TensorProto.BFLOAT16, "input type bfloat16 is not allowed for AveragePool-19"),
    ("AveragePool", 22, TensorProto.UINT8, "input type uint8 is not allowed for AveragePool-22"),
    ("GlobalMaxPool", 1, TensorProto.BFLOAT16, "input type bfloat16 is not allowed for GlobalMaxPool-1"),
])
def test_types_outside_the_version_constraint_are_refused(op_type, opset, elem, fragment):
    attrs = {} if op_type.startswith("Global") else {"kernel_shape": [2]}
    with pytest.raises(InvalidModelError, match=fragment):
        runtime.Session(pool_model(op_type, attrs, [1, 1, 4], opset=opset, elem=elem))


def test_indices_output_needs_maxpool_8():
    with pytest.raises(InvalidModelError, match="2 outputs, but MaxPool-1 has at most 1"):
        runtime.Session(pool_model("MaxPool", {"kernel_shape": [2]}, [1, 1, 4], opset=7, outputs=("y", "i")))


def test_dynamic_shape_geometry_errors_at_run_name_the_node():
    model = pool_model("MaxPool", {"kernel_shape": [3]}, [1, 1, "L"])
    session = runtime.Session(model)
    assert session.inputs[0].shape == (1, 1, None)
    np.testing.assert_array_equal(session.run({"x": X123})["y"], [[[3.0]]])
    with pytest.raises(FeedError, match=r"node 'pool' \(MaxPool\): .*output length 0 < 1"):
        session.run({"x": X123[..., :2]})


def test_unsupported_ops_are_listed_together():
    nodes = [helper.make_node("MaxRoiPool", ["x", "r"], ["a"], pooled_shape=[1, 1]),
             helper.make_node("Add", ["a", "a"], ["b"]),
             helper.make_node("Custom", ["b"], ["y"], domain="my.domain")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2]),
                                           helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 6), helper.make_opsetid("my.domain", 3)],
                              ir_version=10)
    with pytest.raises(UnsupportedError) as caught:
        runtime.Session(model)
    message = str(caught.value)
    assert "MaxRoiPool (ai.onnx, opset 6)" in message
    assert "Add (ai.onnx, opset 6; supported from opset 7)" in message
    assert "Custom (my.domain, opset 3)" in message


def test_newer_opset_than_known_is_refused():
    with pytest.raises(UnsupportedError, match="opset 99 is newer"):
        runtime.Session(pool_model("MaxPool", {"kernel_shape": [2]}, [1, 1, 4], opset=99))


def test_dangling_input_and_cycle_are_refused():
    nodes = [helper.make_node("Relu", ["x", ], ["a"], name="r1"), helper.make_node("Add", ["a", "ghost"], ["y"], name="add")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)], ir_version=10)
    with pytest.raises(InvalidModelError, match=r"node 'add' \(Add\): input 'ghost' is produced by no node"):
        runtime.Session(model)
    nodes = [helper.make_node("Relu", ["b"], ["a"], name="r1"), helper.make_node("Add", ["a", "x"], ["b"], name="add")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("b", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)], ir_version=10)
    with pytest.raises(InvalidModelError, match="is part of a cycle"):
        runtime.Session(model)


# ---------------------------------------------------------------------------------------------------
# The version tables against onnx's own operator schemas (an independent oracle for the data)


def test_version_tables_match_onnx_schemas():
    from poolir.runtime.onnx_ops import OP_VERSIONS, POOLING_OPS, op_version

    type_names = {"tensor(float16)": np.float16, "tensor(float)": np.float32, "tensor(double)": np.float64,
                  "tensor(bfloat16)": ml_dtypes.bfloat16, "tensor(int8)": np.int8, "tensor(uint8)": np.uint8}
    for op_type, rows in OP_VERSIONS.items():
        for opset in range(rows[0].since, 29):
            schema = onnx.defs.get_schema(op_type, opset)
            row = op_version(op_type, opset)
            assert set(row.attributes) == set(schema.attributes), (op_type, opset)
            for name, attribute in row.attributes.items():
                if (op_type, row.since, name) == ("LpPool", 1, "kernel_shape"):
                    continue  # optional in the schema but meaningless when absent: poolir requires it
                assert attribute.required == schema.attributes[name].required, (op_type, opset, name)
            if op_type in POOLING_OPS:
                allowed = next(c for c in schema.type_constraints if c.type_param_str == "T").allowed_type_strs
                assert row.dtypes == {np.dtype(type_names[t]) for t in allowed}, (op_type, opset)
                assert row.max_outputs == schema.max_output, (op_type, opset)
                for name, attribute in row.attributes.items():
                    default = schema.attributes[name].default_value
                    if default.name:
                        assert attribute.default == onnx.helper.get_attribute_value(default) or \
                            attribute.default == onnx.helper.get_attribute_value(default).decode(), (op_type, name)


@pytest.mark.parametrize("inputs, fragment", [
    (["x", "x", "x"], "Add-14 takes 2 inputs, got 3"),
    (["x"], "Add-14 takes 2 inputs, got 1"),
    (["", "x"], "input 0 of Add-14 is required but left out"),
])
def test_input_counts_are_checked_at_construction(inputs, fragment):
    graph = helper.make_graph([helper.make_node("Add", inputs, ["y"], name="add")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)], ir_version=10)
    with pytest.raises(InvalidModelError) as caught:
        runtime.Session(model)
    assert "node 'add' (Add)" in str(caught.value) and fragment in str(caught.value)
