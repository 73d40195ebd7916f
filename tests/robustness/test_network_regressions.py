"""Regressions of the defects the whole-network fuzzer (network_fuzz.py) found, each as a small fixed mutant:
the CLI keeps its contract (exit 0 with nothing but results, or exit 2 with one line naming the file) and, where
an engine is involved, agrees with what onnxruntime or OpenVINO do with the same file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from lxml import etree
from onnx import TensorProto, helper, numpy_helper

from poolir import ir
from tests.peers import onnxruntime_run, openvino_core, openvino_run_xml
from tests.robustness.cli_check import invoke_cli, one_line_error


def _onnx(path, nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs], initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    onnx.save(model, path)
    return model


# -- a mean over an empty axis printed numpy's "Mean of empty slice" warning on stderr, and gave NaN ---------------
def test_onnx_mean_over_an_empty_axis_is_zero_like_onnxruntime_and_prints_nothing(tmp_path):
    path = tmp_path / "m.onnx"
    model = _onnx(path, [helper.make_node("ReduceMean", ["x"], ["y"], axes=[1], keepdims=0)],
                  [("x", TensorProto.FLOAT, [2, 0, 3])], [("y", TensorProto.FLOAT, [2, 3])])
    feeds = {"x": np.zeros((2, 0, 3), np.float32)}
    np.savez(tmp_path / "in.npz", **feeds)
    result = invoke_cli("run", ["run", path, "--inputs", tmp_path / "in.npz", "-o", tmp_path / "out.npz"])
    assert result.exit_code == 0 and result.stderr == "", result.stderr
    # The ONNX spec: "Reduction over an empty set of values yields undefined"; onnxruntime gives 0.
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["y"], onnxruntime_run(model, feeds)["y"])


def test_ir_mean_over_an_empty_axis_is_zero_like_openvino(tmp_path):
    b = ir.GraphBuilder("mean")
    x = b.parameter("x", "f32", (2, 0, 3))
    (y,) = b.add("ReduceMean", "opset1", [x, b.const(np.array([1], np.int64))], {"keep_dims": False})
    b.result(y, "y")
    path = tmp_path / "m.xml"
    ir.write_model(b.build(), path)
    feeds = {"x": np.zeros((2, 0, 3), np.float32)}
    np.savez(tmp_path / "in.npz", **feeds)
    result = invoke_cli("run", ["run", path, "--inputs", tmp_path / "in.npz", "-o", tmp_path / "out.npz"])
    assert result.exit_code == 0 and result.stderr == "", result.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["y"], openvino_run_xml(path, feeds)["y"])


# -- BatchNormalization epsilon = inf was converted to an IR OpenVINO cannot compile ---------------------------
def _batch_norm_ir(epsilon: str) -> bytes:
    b = ir.GraphBuilder("bn")
    x = b.parameter("x", "f32", (1, 2, 3))
    per_channel = [b.const(np.array(v, np.float32)) for v in ([1, 2], [0, 1], [0, 0], [1, 1])]
    (y,) = b.add("BatchNormInference", "opset5", [x, *per_channel], {"epsilon": 1e-3}, name="bn")
    b.result(y, "y")
    xml, weights = ir.serialize(b.build())
    assert xml.count(b'epsilon="0.001"') == 1
    return xml.replace(b'epsilon="0.001"', f'epsilon="{epsilon}"'.encode()), weights


@pytest.mark.parametrize("epsilon", ["inf", "1e39"])
def test_batch_norm_epsilon_above_the_largest_f32_is_refused_as_openvino_refuses_it(tmp_path, epsilon):
    xml, weights = _batch_norm_ir(epsilon)
    path = tmp_path / "bn.xml"
    path.write_bytes(xml)
    path.with_suffix(".bin").write_bytes(weights)
    core = openvino_core()
    with pytest.raises(RuntimeError, match="out of range for f32"):  # OpenVINO reads it, its CPU plugin refuses it
        core.compile_model(core.read_model(str(path)), "CPU")
    one_line_error(invoke_cli("run", ["run", path]), path, "'bn'", "epsilon")


def test_onnx_batch_norm_with_an_infinite_epsilon_converts_to_the_formula(tmp_path):
    """OpenVINO's BatchNormInference refuses an infinite epsilon, so the conversion writes the formula's layers
    (it was refused): (x - mean) / sqrt(var + inf) * scale + B is B wherever x is finite, run by OpenVINO."""
    path = tmp_path / "bn.onnx"
    stats = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in
             (("s", [1, 2]), ("b", [0, 1]), ("m", [0, 0]), ("v", [1, 1]))]
    _onnx(path, [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn",
                                  epsilon=float("inf"))],
          [("x", TensorProto.FLOAT, [1, 2, 3])], [("y", TensorProto.FLOAT, [1, 2, 3])], stats)
    result = invoke_cli("convert", ["convert", path, "-o", tmp_path / "bn.xml"])
    assert result.exit_code == 0, result.output
    x = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    got = openvino_run_xml(tmp_path / "bn.xml", {"x": x}, ["y"])["y"]
    np.testing.assert_array_equal(got, np.array([[[0, 0, 0], [1, 1, 1]]], np.float32))


# -- a graph output named "" (ONNX's name for an omitted optional input) crashed `run` with an AttributeError -----
@pytest.mark.parametrize("what", ["output", "input"])
def test_a_graph_value_with_an_empty_name_is_refused_by_every_command(tmp_path, what):
    path = tmp_path / "m.onnx"
    names = {"input": ("", "y"), "output": ("x", "")}[what]
    _onnx(path, [helper.make_node("Relu", [names[0]], [names[1]])], [(names[0], TensorProto.FLOAT, [2])],
          [(names[1], TensorProto.FLOAT, [2])])
    for command in (["run", path], ["inspect", path], ["verify", path], ["convert", path, "-o", tmp_path / "m.xml"]):
        one_line_error(invoke_cli(command[0], command), path, f"a graph {what} has an empty name")
    assert not (tmp_path / "m.xml").exists()


# -- IR layers OpenVINO refuses that poolir read, ran, or converted into an ONNX that broke onnx's shape inference
def _write_ir(folder, build, edits=None) -> Path:
    """A valid IR from `build(b)`, then `edits`: Const name -> new values of the same size, written into the .bin
    (a Const value the builder's own checks would refuse)."""
    b = ir.GraphBuilder("edited")
    b.result(build(b), "y")
    xml, weights = ir.serialize(b.build())
    weights = bytearray(weights)
    root = etree.fromstring(xml)
    for name, values in (edits or {}).items():
        data = root.find(f".//layer[@name='{name}']/data")
        offset, blob = int(data.get("offset")), np.asarray(values).tobytes()
        assert len(blob) == int(data.get("size"))
        weights[offset:offset + len(blob)] = blob
    path = folder / "m.xml"
    path.write_bytes(xml)
    path.with_suffix(".bin").write_bytes(bytes(weights))
    return path


def _openvino_refuses(path, fragment) -> None:
    core = openvino_core()
    with pytest.raises(RuntimeError, match=fragment):
        core.compile_model(core.read_model(str(path)), "CPU")


def _refused_by_every_command(path, *fragments) -> None:
    folder = path.parent
    for command in (["run", path], ["inspect", path], ["convert", path, "-o", folder / "out.onnx"], ["verify", path]):
        one_line_error(invoke_cli(command[0], command), path, *fragments)
    assert not (folder / "out.onnx").exists()


def test_slice_naming_an_axis_twice_is_refused_as_openvino_refuses_it(tmp_path):
    def build(b):
        i64 = lambda name, *v: b.const(np.array(v, np.int64), name=name)  # noqa: E731
        x = b.parameter("x", "f32", (4, 4))
        return b.add("Slice", "opset8", [x, i64("start", 0, 1), i64("stop", 4, 3), i64("step", 1, 1),
                                         i64("axes", 0, 1)], name="slice")[0]
    path = _write_ir(tmp_path, build, {"axes": np.array([1, 1], np.int64)})
    _openvino_refuses(path, "must be unique")
    _refused_by_every_command(path, "'slice'", "axes [1, 1] name axis 1 twice")


def test_concat_of_scalars_is_refused_as_openvino_refuses_it(tmp_path):
    path = tmp_path / "m.xml"
    b = ir.GraphBuilder("concat")
    x = b.parameter("x", "f32", (1,))
    b.result(b.add("Concat", "opset1", [x, x], {"axis": 0}, name="concat")[0], "y")
    xml, _ = ir.serialize(b.build())
    root = etree.fromstring(xml)  # x becomes a scalar: shape "" and no <dim>
    parameter = root.find(".//layer[@name='x']")
    parameter.find("data").set("shape", "")
    for dim in root.iter("dim"):
        dim.getparent().remove(dim)
    path.write_bytes(etree.tostring(root))
    _openvino_refuses(path, "out-of-range dimension")
    _refused_by_every_command(path, "'concat'", "Concat needs inputs of rank >= 1")


def test_adaptive_pool_over_an_empty_spatial_axis_is_refused(tmp_path):
    """OpenVINO 2026.4 runs it and returns memory it never wrote (a different value on each run)."""
    def build(b):
        x = b.parameter("x", "f32", (1, 2, 1, 4))
        return b.add("AdaptiveAvgPool", "opset8", [x, b.const(np.array([2, 2], np.int64))], name="pool")[0]
    path = _write_ir(tmp_path, build)
    path.write_text(path.read_text().replace('shape="1,2,1,4"', 'shape="1,2,0,4"'))
    _refused_by_every_command(path, "'pool'", "every spatial dim must be >= 1")


@pytest.mark.parametrize("layer_type, a, b", [("Divide", -2**31, -1), ("Mod", 7, 0), ("Add", 2**31 - 1, 1)])
def test_folding_integer_constants_prints_no_numpy_warning(tmp_path, layer_type, a, b):
    def build(g):
        (folded,) = g.add(layer_type, "opset1", [g.const(np.array([a], np.int32)), g.const(np.array([b], np.int32))])
        return g.add("Add", "opset1", [g.parameter("x", "i32", (1,)), folded])[0]
    path = _write_ir(tmp_path, build)
    # A real process: pytest would catch the warning before it reached stderr.
    done = subprocess.run([sys.executable, "-m", "poolir", "run", str(path), "-o", str(tmp_path / "out.npz")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == "", done.stderr


PAD_GRID = [(mode, size, begin, end) for mode in ("reflect", "symmetric", "edge", "constant")
            for size, begin, end in ((3, 2, 2), (3, 3, 0), (3, 0, 3), (3, 4, 0), (1, 0, 0), (1, 1, 0), (0, 0, 0),
                                     (0, 1, 0), (3, -1, 3), (3, 3, -1), (3, 2, -1))]


@pytest.mark.parametrize("mode, size, begin, end", PAD_GRID)
def test_pad_modes_accept_the_pads_openvino_accepts(tmp_path, mode, size, begin, end):
    """numpy's reflect and symmetric pads reflect again past the edge; OpenVINO refuses those pads (and edge or
    reflect padding of an axis too short to copy from)."""
    def build(b):
        x = b.parameter("x", "f32", (2, 3))
        pads = [b.const(np.array([0, 0], np.int64), name=name) for name in ("begin", "end")]
        return b.add("Pad", "opset12", [x, *pads, b.const(np.float32(0))], {"pad_mode": mode}, name="pad")[0]
    path = _write_ir(tmp_path, build, {"begin": np.array([0, begin], np.int64), "end": np.array([0, end], np.int64)})
    path.write_text(path.read_text().replace('shape="2,3"', f'shape="2,{size}"'))
    core = openvino_core()
    try:
        core.compile_model(core.read_model(str(path)), "CPU")
        openvino_accepts = True
    except RuntimeError:
        openvino_accepts = False
    result = invoke_cli("inspect", ["inspect", path])
    assert (result.exit_code == 0) == openvino_accepts, result.stderr
    if not openvino_accepts:
        one_line_error(result, path, "'pad'", f"pad_mode {mode}")


# -- onnx's data propagation built a Reshape of a shape to [2**31 - 1] as 2**31 - 1 dims: 22 GB, minutes --------
_CAPPED = ("import resource, sys\ncap = 1500 << 20\nresource.setrlimit(resource.RLIMIT_AS, (cap, cap))\n"
           "from poolir.converter.cli import main\nsys.argv = ['poolir', *sys.argv[1:]]\nmain()\n")


def _shape_reshaped_to(path, length: int):
    """What PyTorch's dynamo exporter writes for a flatten (Shape, Squeeze, Reshape to [-1], Concat, Reshape),
    with the -1 turned into `length`."""
    nodes = [helper.make_node("Shape", ["x"], ["s"], start=0, end=1),
             helper.make_node("Squeeze", ["s"], ["batch"]),
             helper.make_node("Reshape", ["batch", "length"], ["batch1"], name="reshape_shape"),
             helper.make_node("Concat", ["batch1", "minus1"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"], name="flatten")]
    initializers = [numpy_helper.from_array(np.array([length], np.int64), "length"),
                    numpy_helper.from_array(np.array([-1], np.int64), "minus1")]
    return _onnx(path, nodes, [("x", TensorProto.FLOAT, [1, 8, 2])], [("y", TensorProto.FLOAT, None)], initializers,
                 opset=18)


def test_a_shape_reshaped_to_two_billion_dims_is_inspected_in_bounded_memory(tmp_path):
    path = tmp_path / "m.onnx"
    _shape_reshaped_to(path, 2**31 - 1)
    for command, code in (("inspect", 0), ("run", 2), ("verify", 2)):
        done = subprocess.run([sys.executable, "-c", _CAPPED, command, str(path)], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == code, done.stderr
        assert "bad_alloc" not in done.stderr and len(done.stderr.splitlines()) <= 1, done.stderr


@pytest.mark.parametrize("style", ["torchscript", "dynamo"])
def test_exported_networks_keep_onnx_data_propagation(tmp_path, style):
    """The guard leaves data_prop on for what the exporters write (the budget checks Shape -> Mul -> Expand)."""
    from poolir.runtime.onnx_model import data_propagation_is_bounded
    from tests.networks import torchvision

    for name in torchvision.NETWORKS:
        model = torchvision.proto_of(torchvision.build(name, style, 0, tmp_path))
        assert data_propagation_is_bounded(model), name
    assert data_propagation_is_bounded(_shape_reshaped_to(tmp_path / "m.onnx", -1))
    assert not data_propagation_is_bounded(_shape_reshaped_to(tmp_path / "m.onnx", 2**31 - 1))


# -- a node with a trailing omitted input ("") beyond its op's inputs crashed `run` (the step got None too) ------
def test_a_trailing_omitted_input_is_not_passed_to_the_step(tmp_path):
    path = tmp_path / "m.onnx"
    _onnx(path, [helper.make_node("Relu", ["x", ""], ["y"], name="relu")], [("x", TensorProto.FLOAT, [3])],
          [("y", TensorProto.FLOAT, [3])])
    np.save(tmp_path / "x.npy", np.array([-1, 0, 2], np.float32))
    result = invoke_cli("run", ["run", path, "--input", f"x={tmp_path / 'x.npy'}", "-o", tmp_path / "out.npz"])
    assert result.exit_code == 0, result.stderr  # run reads what it can run (onnx.checker and onnxruntime refuse)
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["y"], [0, 0, 2])  # ReLU, by hand
    one_line_error(invoke_cli("convert", ["convert", path, "-o", tmp_path / "m.xml"]), path, "input size 2")


# -- an integer Divide / FloorMod / Mod by a constant 0 was converted to an ONNX model onnxruntime refuses -------
@pytest.mark.parametrize("layer_type", ["Divide", "FloorMod", "Mod"])
def test_integer_division_by_a_constant_zero_is_not_converted(tmp_path, layer_type):
    def build(b):
        return b.add(layer_type, "opset1", [b.parameter("x", "i32", (3,)), b.const(np.array([1, 0, 2], np.int32))],
                     name="divide")[0]
    path = _write_ir(tmp_path, build)
    result = invoke_cli("convert", ["convert", path, "-o", tmp_path / "m.onnx"])
    one_line_error(result, path, "'divide'", "by a constant holding 0")
    assert not (tmp_path / "m.onnx").exists()
    # What the refusal avoids: onnxruntime does not load the ONNX that carries the same division.
    graph = helper.make_graph([helper.make_node("Mod", ["x", "d"], ["y"], fmod=0)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.INT32, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, [3])],
                              [numpy_helper.from_array(np.array([1, 0, 2], np.int32), "d")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    with pytest.raises(Exception, match="modulo by zero"):
        onnxruntime_run(model, {"x": np.array([1, 2, 3], np.int32)})


# -- a Broadcast target with a negative value was read as a dynamic dim (ONNX ConstantOfShape [-1, 2] converted) --
def test_a_negative_broadcast_target_is_refused(tmp_path):
    """OpenVINO folds a constant input and refuses, or runs and returns an empty axis ([2,3] to [-1,3]: [0,3])."""
    def build(b):
        target = b.const(np.array([2, 3], np.int64), name="target")
        return b.add("Broadcast", "opset3", [b.const(np.ones((1, 3), np.float32)), target], {"mode": "numpy"},
                     name="broadcast")[0]
    path = _write_ir(tmp_path, build, {"target": np.array([-1, 3], np.int64)})
    _openvino_refuses(path, "dynamic dimension")
    _refused_by_every_command(path, "'broadcast'", "[-1, 3] holds a negative value")


def test_constant_of_a_negative_shape_is_not_converted(tmp_path):
    path = tmp_path / "m.onnx"
    _onnx(path, [helper.make_node("ConstantOfShape", ["s"], ["y"], name="fill")], [], [("y", TensorProto.FLOAT, None)],
          [numpy_helper.from_array(np.array([-1, 2], np.int64), "s")])
    one_line_error(invoke_cli("convert", ["convert", path, "-o", tmp_path / "m.xml"]), path, "negative value")
    one_line_error(invoke_cli("run", ["run", path]), path, "negative")
    assert not (tmp_path / "m.xml").exists()


# -- an input dim declared as a range ("32..128", as OpenVINO writes dynamic dims with bounds) bound nothing -----
@pytest.mark.parametrize("shape, inside", [((1, 2, 40), True), ((2, 2, 32), True), ((3, 2, 40), False),
                                           ((1, 2, 7), False), ((1, 2, 200), False)])
def test_a_feed_outside_a_declared_dim_range_is_refused_as_openvino_refuses_it(tmp_path, shape, inside):
    def build(b):
        return b.add("ReLU", "opset1", [b.parameter("x", "f32", (1, 2, 40))], name="relu")[0]
    path = _write_ir(tmp_path, build)
    path.write_text(path.read_text().replace('shape="1,2,40"', 'shape="1..2,2,32..128"'))
    feeds = {"x": np.ones(shape, np.float32)}
    try:
        openvino_run_xml(path, feeds)
        openvino_accepts = True
    except RuntimeError as error:
        assert "incompatible" in str(error)
        openvino_accepts = False
    assert openvino_accepts == inside
    np.save(tmp_path / "x.npy", feeds["x"])
    result = invoke_cli("run", ["run", path, "--input", f"x={tmp_path / 'x.npy'}"])
    if inside:
        assert result.exit_code == 0, result.stderr
    else:
        one_line_error(result, path, "input 'x'", "but the model declares the range")


# -- "dynamic batch set to 1" was printed before a failing run's error: two lines on stderr ----------------------
def test_the_dynamic_batch_note_joins_the_error_of_a_failing_run(tmp_path):
    path = tmp_path / "m.onnx"
    weights = [numpy_helper.from_array(np.ones((2, 4, 1, 1), np.float32), "w")]
    _onnx(path, [helper.make_node("Conv", ["x", "w"], ["y"], name="conv")], [("x", TensorProto.FLOAT, ["n", 3, 2, 2])],
          [("y", TensorProto.FLOAT, None)], weights)  # 3 channels for a 4-channel filter: fails at run time
    for command in ("run", "verify"):
        one_line_error(invoke_cli(command, [command, path]), path, "'conv'")
    assert "dynamic batch set to 1" in invoke_cli("run", ["run", path]).stderr
    path_ok = tmp_path / "ok.onnx"
    _onnx(path_ok, [helper.make_node("Relu", ["x"], ["y"])], [("x", TensorProto.FLOAT, ["n", 3])],
          [("y", TensorProto.FLOAT, None)])
    for command in ("run", "verify"):
        result = invoke_cli(command, [command, path_ok])
        assert result.exit_code == 0 and "dynamic batch set to 1" in result.stderr, result.stderr


# -- a Slice whose stop Const was retyped to f64 (the U-Net's skip crop) stopped inspect with a TypeError -----------
@pytest.mark.parametrize("layer_type", ["Slice", "StridedSlice"])
def test_slice_bounds_of_a_float_type_are_refused_as_openvino_refuses_them(tmp_path, layer_type):
    def build(b):
        x = b.parameter("x", "f32", (4, 4))
        begin, end = b.const(np.array([0, 1], np.int64), name="begin"), b.const(np.array([4, 3], np.int64), name="end")
        if layer_type == "Slice":
            step, axes = b.const(np.array([1, 1], np.int64), name="step"), b.const(np.array([0, 1], np.int64))
            return b.add("Slice", "opset8", [x, begin, end, step, axes], name="slice")[0]
        return b.add("StridedSlice", "opset1", [x, begin, end, b.const(np.array([1, 1], np.int64), name="step")],
                     {"begin_mask": (0, 0), "end_mask": (0, 0)}, name="slice")[0]
    path = _write_ir(tmp_path, build)
    text = path.read_text()
    layer = text.index('name="end"')
    edited = text[:layer] + text[layer:].replace('element_type="i64"', 'element_type="f64"', 1)
    path.write_text(edited)
    _openvino_refuses(path, "integ")
    _refused_by_every_command(path, "'slice'", "element type f64, expected an integer type")
