"""Regressions of the mutants on which the whole-network fuzzer's `poolir verify` reported a MISMATCH between
paths (poolir's ONNX run, its IR conversion, onnxruntime, OpenVINO): each as a small fixed model, judged by
onnxruntime, OpenVINO or a hand-worked value, never by poolir against itself."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from poolir import ir, runtime
from tests.peers import onnxruntime_run
from tests.robustness.cli_check import invoke_cli, one_line_error


def _reshape_onnx(path, target=None) -> onnx.ModelProto:
    """x [2, 4] reshaped by `target` (an initializer), or by a graph input `shape` when target is None."""
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])]
    initializers = []
    if target is None:
        inputs.append(helper.make_tensor_value_info("shape", TensorProto.INT64, [2]))
    else:
        initializers.append(numpy_helper.from_array(np.array(target, np.int64), "shape"))
    graph = helper.make_graph([helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")], "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, path)
    return model


# -- a Reshape target value below -1 ([-1, 256] mutated to [0, -256], a Flatten's [-1] to [-2]) ran in poolir's ONNX
# runtime (numpy reads every negative dim as -1), so verify compared it with the converter's refusal --------------
@pytest.mark.parametrize("target, fragment", [([1, -8], "value -8 is below -1"), ([-2, 4], "value -2 is below -1"),
                                              ([-1, -1], "more than one -1")])
def test_an_onnx_reshape_target_onnxruntime_refuses_is_refused(tmp_path, target, fragment):
    path = tmp_path / "m.onnx"
    model = _reshape_onnx(path, target)
    with pytest.raises(Exception, match="Invalid dimension value|cannot be less than -1|more than one|-1"):
        onnxruntime_run(model, {"x": np.zeros((2, 4), np.float32)})
    for command in (["run", path], ["verify", path]):
        one_line_error(invoke_cli(command[0], command), path, "'reshape'", fragment)


@pytest.mark.parametrize("target, fragment", [([-2, 4], "value -2 is below -1"), ([-1, -1], "more than one -1")])
def test_an_onnx_reshape_target_fed_at_run_time_is_refused_as_onnxruntime_refuses_it(tmp_path, target, fragment):
    path = tmp_path / "m.onnx"
    model = _reshape_onnx(path)
    feeds = {"x": np.zeros((2, 4), np.float32), "shape": np.array(target, np.int64)}
    with pytest.raises(Exception, match="cannot be less than -1|At most one dimension can be -1"):
        onnxruntime_run(model, feeds)
    np.savez(tmp_path / "in.npz", **feeds)
    one_line_error(invoke_cli("run", ["run", path, "--inputs", tmp_path / "in.npz"]), path, "'reshape'", fragment)


def test_an_ir_reshape_target_fed_at_run_time_is_checked_by_the_same_rule(tmp_path):
    """OpenVINO 2026.4 refuses such a target when it is constant ("Output pattern dim[0] has invalid bounds",
    as poolir's shape inference does) but not when it is fed: [-2, 4] on 8
    elements returned an empty [0, 0] and [-1, -1] crashed the process, so there is no engine answer to match;
    poolir's IR runtime refuses what its shape inference refuses for a constant target."""
    b = ir.GraphBuilder("reshape")
    x = b.parameter("x", "f32", (8,))
    shape = b.parameter("shape", "i64", (2,))
    b.result(b.add("Reshape", "opset1", [x, shape], {"special_zero": True}, name="reshape")[0], "y")
    path = tmp_path / "m.xml"
    ir.write_model(b.build(), path)
    for target, fragment in (([-2, 4], "value -2 is below -1"), ([-1, -1], "more than one -1"),
                             ([8, 0], "copies input dim 1, the input has rank 1")):
        np.savez(tmp_path / "in.npz", x=np.zeros(8, np.float32), shape=np.array(target, np.int64))
        result = invoke_cli("run", ["run", path, "--inputs", tmp_path / "in.npz"])
        one_line_error(result, path, "'reshape'", fragment)


# -- an Add of f32 and u8 (a Cast's `to` mutated) ran in poolir's ONNX runtime as numpy promotes, where onnxruntime
# and OpenVINO refuse the model and poolir's converter refused it too -------------------------------------------
@pytest.mark.parametrize("op_type, count", [("Add", 2), ("Mul", 2), ("Max", 2), ("Mean", 3), ("Mod", 2),
                                            ("Equal", 2), ("Where", 3)])
def test_onnx_inputs_bound_to_one_type_must_share_it_as_onnxruntime_requires(tmp_path, op_type, count):
    names = [f"i{k}" for k in range(count)]
    types = [TensorProto.FLOAT, *[TensorProto.UINT8] * (count - 1)]
    if op_type == "Where":
        types = [TensorProto.BOOL, TensorProto.FLOAT, TensorProto.UINT8]
    graph = helper.make_graph([helper.make_node(op_type, names, ["y"], name="mixed")], "g",
                              [helper.make_tensor_value_info(n, t, [3]) for n, t in zip(names, types)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    feeds = {n: np.array([1, 2, 3], helper.tensor_dtype_to_np_dtype(t)) for n, t in zip(names, types)}
    with pytest.raises(Exception, match="bound to different types|is invalid"):
        onnxruntime_run(model, feeds)
    np.savez(tmp_path / "in.npz", **feeds)
    one_line_error(invoke_cli("run", ["run", path, "--inputs", tmp_path / "in.npz"]), path, "'mixed'",
                   "different element types (float32, uint8)")


def test_onnx_pow_takes_an_exponent_of_another_type_as_onnxruntime_does(tmp_path):
    graph = helper.make_graph([helper.make_node("Pow", ["x", "e"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
                               helper.make_tensor_value_info("e", TensorProto.INT32, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    feeds = {"x": np.array([1.5, 2, 3], np.float32), "e": np.array([2, 3, -1], np.int32)}
    np.testing.assert_array_equal(runtime.run(model, feeds)["y"], onnxruntime_run(model, feeds)["y"])
