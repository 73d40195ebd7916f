"""ONNX external data (issue item 1): a tensor's `location` resolves inside the model's own folder or the model
is refused; never against the current folder, never through `..`, an absolute path or a symlink out; offset
and length are checked against the file and the tensor. PyTorch-style exports (data beside the .onnx) keep
working from any current folder, on every command and for the peers verify feeds."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from poolir import runtime
from poolir.converter.onnx_to_ir import onnx_to_ir
from poolir.ir.errors import InvalidModelError
from tests.robustness.cli_check import invoke_cli

SECRET = np.array([[7, 7, 7, 7]], np.float32)


def _model() -> onnx.ModelProto:
    weights = numpy_helper.from_array(np.arange(4, dtype=np.float32).reshape(1, 4), "w")
    nodes = [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[1]), helper.make_node("Identity", ["w"], ["z"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 4]),
                               helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4])], [weights])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


def _export(folder: Path) -> Path:
    """Like torch.export: the initializers in a file beside the .onnx."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "m.onnx"
    onnx.save_model(_model(), path, save_as_external_data=True, location="m.onnx.data", size_threshold=0)
    return path


def _hostile(folder: Path, **entries: str) -> Path:
    """The exported model with its external-data entries of 'w' replaced."""
    path = _export(folder)
    model = onnx.load(path, load_external_data=False)
    tensor = model.graph.initializer[0]
    current = {entry.key: entry.value for entry in tensor.external_data}
    current.update(entries)
    del tensor.external_data[:]
    for key, value in current.items():
        tensor.external_data.add(key=key, value=value)
    path.write_bytes(model.SerializeToString())
    return path


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """A current folder holding files a hostile model would like to read."""
    cwd = tmp_path / "cwd"
    (cwd / "subdir").mkdir(parents=True)
    for name in ("secret.txt", "subdir/x"):
        (cwd / name).write_bytes(SECRET.tobytes())
    monkeypatch.chdir(cwd)
    return cwd


def test_pytorch_style_external_data_works_from_any_current_folder(tmp_path, elsewhere):
    path = _export(tmp_path / "models")
    outputs = runtime.run(path, {"x": np.ones((1, 1, 4), np.float32)})
    np.testing.assert_array_equal(outputs["z"], np.arange(4, dtype=np.float32).reshape(1, 4))
    for args in (["run", path, "-o", elsewhere / "o.npz"], ["convert", path, "-o", elsewhere / "o.xml"],
                 ["inspect", path], ["verify", path, "--peer", "onnxruntime"]):
        assert invoke_cli("external", args).exit_code == 0


@pytest.mark.parametrize("location, problem", [
    ("secret.txt", "no such file"),  # relative to the current folder: never looked up there
    ("subdir/x", "no such file"),
    ("../cwd/secret.txt", "must be a relative path inside the model's folder"),
    ("/etc/passwd", "must be a relative path inside the model's folder"),
    ("link.bin", "leads out of the model's folder"),
    ("folder", "not a regular file"),
    ("", "no usable location"),
])
def test_external_data_outside_the_model_folder_is_refused(tmp_path, elsewhere, location, problem):
    models = tmp_path / "models"
    path = _hostile(models, location=location)
    os.symlink(elsewhere / "secret.txt", models / "link.bin")
    (models / "folder").mkdir()
    for args in (["run", path, "-o", elsewhere / "o.npz"], ["convert", path, "-o", elsewhere / "o.xml"],
                 ["inspect", path], ["verify", path, "--peer", "onnxruntime"]):
        result = invoke_cli("external", args, names=str(path))
        assert result.exit_code == 2 and problem in result.stderr and "tensor 'w'" in result.stderr
    assert not (elsewhere / "o.npz").exists() and not (elsewhere / "o.xml").exists()


@pytest.mark.parametrize("entries, problem", [
    ({"offset": "12"}, "lies past the end"),
    ({"length": "8"}, "does not match its shape"),
    ({"offset": "-1"}, "must be integers >= 0"),
    ({"offset": "9" * 5000}, "must be integers >= 0"),
    ({"offset": "8", "length": "16"}, "lies past the end"),
])
def test_external_data_offset_and_length_are_checked(tmp_path, entries, problem):
    path = _hostile(tmp_path, **entries)
    result = invoke_cli("external", ["run", path], names=str(path))
    assert result.exit_code == 2 and problem in result.stderr


def test_external_data_that_is_a_fifo_or_a_device_is_refused(tmp_path):
    path = _hostile(tmp_path, location="pipe")
    os.mkfifo(tmp_path / "pipe")
    result = invoke_cli("external", ["run", path], names=str(path))
    assert "named pipe" in result.stderr
    path = _hostile(tmp_path, location="zero")
    os.symlink("/dev/zero", tmp_path / "zero")
    assert invoke_cli("external", ["run", path], names=str(path)).exit_code == 2


def test_a_model_proto_with_unloaded_external_data_is_refused_by_the_api(tmp_path, elsewhere):
    """No folder to resolve against: refused, never read from the current folder."""
    model = onnx.load(_hostile(tmp_path, location="secret.txt"), load_external_data=False)
    for call in (lambda: runtime.Session(model), lambda: onnx_to_ir(model)):
        with pytest.raises(InvalidModelError, match="keeps its data in an external file"):
            call()


def test_a_constant_node_with_external_data_is_checked_too(tmp_path, elsewhere):
    value = helper.make_tensor("v", TensorProto.FLOAT, [1, 4], [0.0] * 4)
    value.data_location = TensorProto.EXTERNAL
    del value.float_data[:]
    value.external_data.add(key="location", value="secret.txt")
    nodes = [helper.make_node("Constant", [], ["c"], value=value), helper.make_node("Identity", ["c"], ["z"])]
    graph = helper.make_graph(nodes, "g", [], [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4])])
    path = tmp_path / "models" / "c.onnx"
    path.parent.mkdir()
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                       ir_version=10).SerializeToString())
    result = invoke_cli("external", ["run", path, "-o", elsewhere / "o.npz"], names=str(path))
    assert result.exit_code == 2 and "tensor 'v'" in result.stderr and "no such file" in result.stderr
    (path.parent / "secret.txt").write_bytes(np.ones((1, 4), np.float32).tobytes())  # in the model's folder: fine
    assert invoke_cli("external", ["run", path, "-o", elsewhere / "o.npz"]).exit_code == 0
    with np.load(elsewhere / "o.npz") as archive:
        np.testing.assert_array_equal(archive["z"], np.ones((1, 4), np.float32))
