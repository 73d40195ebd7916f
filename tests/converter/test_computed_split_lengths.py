"""VariadicSplit whose split_lengths are computed (ShapeOf arithmetic, as OpenVINO's PyTorch frontend writes
ShuffleNetV2's channel split): the IR is read, poolir runs it, and its ONNX runs on onnxruntime, all equal
to OpenVINO on the same IR. The IRs are built and written by OpenVINO itself."""

from __future__ import annotations

import numpy as np
import openvino as ov
import openvino.opset1 as ov1
import openvino.opset3 as ov3
import openvino.opset8 as ov8
import pytest
from onnx import TensorProto, helper

from poolir import ir
from poolir.converter import ir_to_onnx, onnx_to_ir
from poolir.ir.errors import PoolirError
from tests.peers import onnxruntime_run, openvino_run_xml
from tests.runtime.ir_cases import run_poolir, save_ir


def c(values, dtype=np.int32):
    return ov1.constant(np.array(values, dtype=dtype))


def _channel_split_ir(path, shape, rest_first: bool):
    """x -> VariadicSplit(x, 1, [C // 2 + (C % 2 > 1), -1]) with C from ShapeOf, as torch.chunk's lowering."""
    x = ov1.parameter(shape, ov.Type.f32, name="x")
    channels = ov8.gather(ov3.shape_of(x, "i32"), c(1, np.int64), c(0))
    half = ov1.add(ov1.divide(channels, c(2)), ov1.convert(ov1.greater(ov1.mod(channels, c(2)), c(1)), "i32"))
    half = ov1.unsqueeze(half, c(0))
    lengths = ov1.concat([c([-1]), half] if rest_first else [half, c([-1])], 0)
    split = ov1.variadic_split(ov1.relu(x), c(1, np.int64), lengths)
    return save_ir([ov1.multiply(split.output(0), c(2.0, np.float32)).output(0), split.output(1)], [x], path)


@pytest.mark.parametrize("shape,feed,rest_first", [
    ([1, 6, 3, 3], (1, 6, 3, 3), False),
    ([1, 7, 2, 2], (1, 7, 2, 2), True),
    ([1, 6, -1, -1], (1, 6, 5, 4), False),
    ([-1, -1, 2, 2], (2, 9, 2, 2), True),
])
def test_computed_split_lengths_read_run_and_convert(shape, feed, rest_first, tmp_path):
    path = _channel_split_ir(tmp_path / "split.xml", shape, rest_first)
    model = ir.read_model(path)  # used to fail: "VariadicSplit split_lengths must be constant"
    x = np.random.default_rng(3).standard_normal(feed).astype(np.float32)
    expected = openvino_run_xml(path, {"x": x})
    ran = run_poolir(path, {"x": x})
    onnx_model = ir_to_onnx(model)
    converted = onnxruntime_run(onnx_model, {"x": x})
    if -1 not in shape:  # static dims: the ShapeOf arithmetic folds (comparisons too), the lengths are constants
        assert "Where" not in {node.op_type for node in onnx_model.graph.node}
    for got in (ran, converted):
        assert sorted(got) == sorted(expected)
        for name, want in expected.items():
            np.testing.assert_array_equal(got[name], want, err_msg=name)


@pytest.mark.parametrize("shape,feed,rest_first", [([1, 6, -1, -1], (1, 6, 5, 4), False),
                                                   ([-1, -1, 2, 2], (2, 9, 2, 2), True)])
def test_computed_split_lengths_come_back_from_onnx_as_variadic_split(shape, feed, rest_first, tmp_path):
    """IR -> ONNX -> IR: the ONNX Split's lengths are computed (Shape arithmetic), and ONNX -> IR makes them a
    VariadicSplit input again (it used to refuse: "the split input must be constant to convert to IR")."""
    path = _channel_split_ir(tmp_path / "split.xml", shape, rest_first)
    back = onnx_to_ir(ir_to_onnx(ir.read_model(path)))
    assert "VariadicSplit" in {layer.type for layer in back.layers}
    ir.write_model(back, tmp_path / "back.xml")
    x = np.random.default_rng(4).standard_normal(feed).astype(np.float32)
    expected = list(openvino_run_xml(path, {"x": x}).values())
    for got in (openvino_run_xml(tmp_path / "back.xml", {"x": x}), run_poolir(tmp_path / "back.xml", {"x": x})):
        assert len(got) == len(expected)
        for want, value in zip(expected, got.values()):  # by position: the Results have no tensor names
            np.testing.assert_array_equal(value, want)


def test_onnx_split_by_computed_lengths_runs_like_onnxruntime(tmp_path):
    """An ONNX Split whose `split` input is computed (Shape of another input) becomes VariadicSplit on that
    input; OpenVINO and poolir run the IR as onnxruntime runs the ONNX."""
    graph = helper.make_graph(
        [helper.make_node("Shape", ["y"], ["lengths"]),
         helper.make_node("Split", ["x", "lengths"], ["a", "b"], axis=1)],
        "split", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, "n"]),
                  helper.make_tensor_value_info("y", TensorProto.FLOAT, ["p", "q"])],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in ("a", "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    feeds = {"x": np.arange(16, dtype=np.float32).reshape(2, 8), "y": np.zeros((3, 5), np.float32)}
    expected = onnxruntime_run(model, feeds)
    ir.write_model(onnx_to_ir(model), tmp_path / "split.xml")
    for got in (openvino_run_xml(tmp_path / "split.xml", feeds), run_poolir(tmp_path / "split.xml", feeds)):
        assert sorted(got) == ["a", "b"]
        for name in ("a", "b"):
            np.testing.assert_array_equal(got[name], expected[name])


def test_mod_takes_the_dividends_sign(tmp_path):
    a = np.array([-7, 7, -7, 7, 5, -16777217], np.int32)
    b = np.array([2, -2, -2, 2, 3, 50176], np.int32)
    pa, pb = ov1.parameter([6], ov.Type.i32, name="a"), ov1.parameter([6], ov.Type.i32, name="b")
    path = save_ir([ov1.mod(pa, pb).output(0)], [pa, pb], tmp_path / "mod.xml")
    feeds = {"a": a, "b": b}
    (want,) = openvino_run_xml(path, feeds).values()
    np.testing.assert_array_equal(want[:5], [-1, 1, -1, 1, 2])  # hand-worked: C fmod
    np.testing.assert_array_equal(list(run_poolir(path, feeds).values())[0], want)
    # The CPU plugin computes it in float32 (exact -18433 becomes -18432); ONNX Mod is exact, equal below 2**24.
    converted = onnxruntime_run(ir_to_onnx(ir.read_model(path)), feeds)
    np.testing.assert_array_equal(list(converted.values())[0][:5], want[:5])


def _computed(x_shape, build):
    """x and a scalar i32 parameter n (fed 1) -> build(x, n): an axis or bound OpenVINO cannot fold."""
    x = ov1.parameter(x_shape, ov.Type.f32, name="x")
    n = ov1.parameter([], ov.Type.i32, name="n")
    node = build(x, n)
    return [node.output(i) for i in range(len(node.outputs()))], [x, n]


@pytest.mark.parametrize("case,build", [
    ("Split axis", lambda x, n: ov1.split(x, n, 2)),
    ("VariadicSplit axis", lambda x, n: ov1.variadic_split(x, n, c([1, -1]))),
    ("StridedSlice bounds", lambda x, n: ov1.strided_slice(x, ov1.unsqueeze(n, c(0)), c([3]), c([1]), [0], [0])),
    ("StridedSlice shrink", lambda x, n: ov1.strided_slice(x, ov1.concat([c([0]), ov1.unsqueeze(n, c(0))], 0),
                                                           c([1, 3]), c([1, 1]), [0, 0], [0, 0],
                                                           shrink_axis_mask=[1, 0])),
])
def test_computed_axes_and_bounds_are_read_and_run(case, build, tmp_path):
    """OpenVINO accepts these inputs computed; reading infers the rank and leaves the dims to run time, the
    runtime uses the run-time values, and ONNX conversion refuses naming the input (an ONNX attribute)."""
    path = save_ir(*_computed([2, 4, 3], build), tmp_path / "case.xml")
    model = ir.read_model(path)
    feeds = {"x": np.random.default_rng(2).standard_normal((2, 4, 3)).astype(np.float32), "n": np.array(1, np.int32)}
    expected = openvino_run_xml(path, feeds)
    ran = run_poolir(path, feeds)
    assert len(ran) == len(expected)
    for (name, want), got in zip(expected.items(), ran.values()):
        np.testing.assert_array_equal(got, want, err_msg=f"{case} {name}")
    if case.startswith(("Gather", "Split", "VariadicSplit")):
        with pytest.raises(PoolirError, match="not constant"):
            ir_to_onnx(model)


def test_computed_gather_axis_is_read_but_not_run(tmp_path):
    """OpenVINO reads a Gather whose axis is computed but refuses to compile it (EliminateGather's 'const_op'
    check), so there are no OpenVINO numbers to match: poolir reads it (rank known) and refuses to run it."""
    outputs, params = _computed([2, 4, 3], lambda x, n: ov8.gather(x, c([2, 0]), n))
    path = save_ir(outputs, params, tmp_path / "gather.xml")
    model = ir.read_model(path)
    with pytest.raises(RuntimeError, match="const_op"):
        openvino_run_xml(path, {"x": np.zeros((2, 4, 3), np.float32), "n": np.array(1, np.int32)})
    with pytest.raises(PoolirError, match="Gather axis computed at run time"):
        run_poolir(path, {"x": np.zeros((2, 4, 3), np.float32), "n": np.array(1, np.int32)})
    with pytest.raises(PoolirError, match="not constant"):
        ir_to_onnx(model)


@pytest.mark.parametrize("length", [7, 8, 9, 3])
def test_onnx_split_num_outputs_on_a_dynamic_axis_runs_like_onnxruntime(length, tmp_path):
    """Split-18 num_outputs=3 on an axis of unknown length (the dynamo exporter's ShuffleNetV2 chunk with dynamic
    H and W): parts of ceil(L / 3), the last the rest (L = 7: 3, 3, 1), computed at run time into a
    VariadicSplit (it used to be refused: "Split num_outputs on a dynamic axis 1 has no IR equivalent")."""
    graph = helper.make_graph(
        [helper.make_node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3)], "split",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, "n", 2])],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in ("a", "b", "c")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    ir.write_model(onnx_to_ir(model), tmp_path / "split.xml")
    feeds = {"x": np.arange(4 * length, dtype=np.float32).reshape(2, length, 2)}
    expected = onnxruntime_run(model, feeds)
    assert [expected[name].shape[1] for name in "abc"] == [-(-length // 3)] * 2 + [length - 2 * -(-length // 3)]
    for got in (openvino_run_xml(tmp_path / "split.xml", feeds), run_poolir(tmp_path / "split.xml", feeds)):
        for name in "abc":
            np.testing.assert_array_equal(got[name], expected[name])
