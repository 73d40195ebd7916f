"""IRProgram: every supported non-pooling layer against OpenVINO, names, dynamic dims, bad graphs."""

from __future__ import annotations

import numpy as np
import openvino as ov
import openvino.opset1 as ov1
import openvino.opset3 as ov3
import openvino.opset8 as ov8
import openvino.opset12 as ov12
import openvino.opset15 as ov15
import pytest

from poolir.ir.errors import InvalidModelError, PoolirError, UnsupportedError
from poolir.ir.model import Dim, Edge, Layer, Model, Port
from poolir.runtime.ir_executor import IRProgram
from tests.runtime.ir_cases import OV_TYPES, assert_matches_openvino, read_ir, save_ir

RNG = np.random.default_rng(7)
X = RNG.standard_normal((2, 3, 4)).astype(np.float32)
Y = RNG.standard_normal((2, 3, 4)).astype(np.float32)
B = RNG.standard_normal((3, 1)).astype(np.float32)  # broadcasts against (2, 3, 4)
I = RNG.integers(-9, 10, (2, 3, 4)).astype(np.int32)
J = np.array([3, -3, 2, -2], np.int32)


def c(values, dtype=np.int64):
    return ov1.constant(np.array(values, dtype=dtype))


# name -> (build(*params) -> node, inputs). Each input becomes a Parameter named in0, in1, ...
LAYERS = {
    "Abs": (lambda x: ov1.absolute(x), [X]),
    "Sqrt": (lambda x: ov1.sqrt(ov1.absolute(x)), [X]),
    "Floor": (lambda x: ov1.floor(x), [X * 3]),
    "Ceiling": (lambda x: ov1.ceiling(x), [X * 3]),
    "Abs-i8": (lambda a: ov1.absolute(a), [np.array([-128, -5, 0, 5, 127], np.int8)]),
    "Sqrt-i32": (lambda a: ov1.sqrt(a), [np.array([0, 1, 2, 3, 8, 15, 24, 26], np.int32)]),
    "Power-i32": (lambda a, b: ov1.power(a, b), [np.array([0, 1, 2, 3, 8, -1, 24, -2], np.int32),
                                                 np.array([2, -1, -1, 0, 3, -1, 2, 3], np.int32)]),
    "Power": (lambda x: ov1.power(ov1.absolute(x), ov1.constant(np.float32(1 / 3))), [X]),
    "Power-broadcast": (lambda x, b: ov1.power(ov1.absolute(x), b), [X, B]),
    "Add": (lambda x, b: ov1.add(x, b), [X, B]),
    "Subtract": (lambda x, y: ov1.subtract(x, y), [X, Y]),
    "Multiply": (lambda x, b: ov1.multiply(x, b), [X, B]),
    "Divide-float": (lambda x, y: ov1.divide(x, y), [X, Y]),
    "FloorMod-int": (lambda i, j: ov1.floor_mod(i, j), [I, J]),
    "FloorMod-float": (lambda x, b: ov1.floor_mod(x, b), [X * 5, B]),
    "Maximum": (lambda x, y: ov1.maximum(x, y), [X, Y]),
    "Minimum": (lambda x, b: ov1.minimum(x, b), [X, B]),
    "Convert-f32-i32": (lambda x: ov1.convert(x, "i32"), [X * 10]),
    "Convert-f32-f16": (lambda x: ov1.convert(x, "f16"), [X]),
    "Convert-i32-f32": (lambda i: ov1.convert(i, "f32"), [I]),
    "ConvertLike": (lambda x, i: ov1.convert_like(x, i), [X * 10, I]),
    "Reshape": (lambda x: ov1.reshape(x, c([3, -1]), special_zero=False), [X]),
    "Reshape-special-zero": (lambda x: ov1.reshape(x, c([0, -1]), special_zero=True), [X]),
    "Squeeze": (lambda x: ov1.squeeze(ov1.reshape(x, c([2, 1, 12, 1]), False), c([1, -1])), [X]),
    "Squeeze-no-axes": (lambda x: ov15.squeeze(ov1.reshape(x, c([2, 1, 12, 1]), False)), [X]),
    "Unsqueeze": (lambda x: ov1.unsqueeze(x, c([0, -1])), [X]),
    "Concat": (lambda x, y: ov1.concat([x, y, x], -2), [X, Y]),
    "Split": (lambda x: ov1.split(x, c(-1), 2), [X]),
    "VariadicSplit": (lambda x: ov1.variadic_split(x, c(2), c([1, -1, 2])), [X]),
    "Transpose": (lambda x: ov1.transpose(x, c([2, 0, 1])), [X]),
    "Slice": (lambda x: ov8.slice(x, c([3, 0]), c([-100, 3]), c([-2, 2]), c([2, 1])), [X]),
    "Slice-no-axes": (lambda x: ov8.slice(x, c([1, -2]), c([2, 100]), c([1, 1])), [X]),
    "StridedSlice": (lambda x: ov1.strided_slice(x, c([0, 1, 3]), c([2, 3, 0]), c([1, 1, -1]),
                                                   begin_mask=[1, 0, 0], end_mask=[0, 0, 1]), [X]),
    "StridedSlice-shrink": (lambda x: ov1.strided_slice(x, c([1, 0, 2]), c([2, 3, 3]), c([1, 1, 1]),
                                                          begin_mask=[0, 1, 0], end_mask=[0, 1, 0],
                                                          shrink_axis_mask=[1, 0, 1]), [X]),
    "StridedSlice-new-axis": (lambda x: ov1.strided_slice(x, c([0, 0, 1]), c([0, 2, 3]), c([1, 1, 1]),
                                                            begin_mask=[0, 0, 0], end_mask=[0, 0, 0],
                                                            new_axis_mask=[1, 0, 0]), [X]),
    "StridedSlice-ellipsis": (lambda x: ov1.strided_slice(x, c([0, 1]), c([0, 3]), c([1, 2]),
                                                            begin_mask=[0, 0], end_mask=[0, 0],
                                                            ellipsis_mask=[1, 0]), [X]),
    "Gather": (lambda x: ov8.gather(x, c([[2, -1], [0, 1]]), c(2)), [X]),
    "Gather-batch": (lambda x: ov8.gather(x, c([[0, 2], [1, 1]]), c(1), batch_dims=1), [X]),
    "ShapeOf": (lambda x: ov3.shape_of(x, "i32"), [X]),
    "Broadcast-numpy": (lambda b: ov3.broadcast(b, c([2, 3, 4])), [B]),
    "Broadcast-bidirectional": (lambda b: ov3.broadcast(b, c([2, 1, 4]), broadcast_spec="BIDIRECTIONAL"), [B]),
    "Broadcast-explicit": (lambda b: ov3.broadcast(ov1.reshape(b, c([3]), False), c([2, 3, 4]), c([1]),
                                                   broadcast_spec="EXPLICIT"), [B]),
    "Pad-1-constant": (lambda x: ov1.pad(x, c([0, 1, 2]), c([1, 0, 1]), "constant", ov1.constant(np.float32(7))), [X]),
    "Pad-1-reflect": (lambda x: ov1.pad(x, c([0, 1, 2]), c([1, 0, 1]), "reflect"), [X]),
    "Pad-1-edge": (lambda x: ov1.pad(x, c([0, 1, 2]), c([1, 0, 1]), "edge"), [X]),
    "Pad-1-symmetric": (lambda x: ov1.pad(x, c([0, 1, 2]), c([1, 0, 1]), "symmetric"), [X]),
    "Pad-12-negative": (lambda x: ov12.pad(x, c([0, -1, 2]), c([1, 0, -1]), "constant"), [X]),
    "ReduceMean": (lambda x: ov1.reduce_mean(x, c([2, 1]), True), [X]),
    "ReduceMax": (lambda x: ov1.reduce_max(x, c([-1]), False), [X]),
    "ReduceMin": (lambda x: ov1.reduce_min(x, c([0]), True), [X]),
    "ReduceSum": (lambda x: ov1.reduce_sum(x, c([0, 2]), False), [X]),
    "ReduceProd": (lambda x: ov1.reduce_prod(x, c([1]), True), [X]),
    "ReduceL1": (lambda x: ov8.reduce_l1(x, c([2]), True), [X]),
    "ReduceL2": (lambda x: ov8.reduce_l2(x, c([1, 2]), True), [X]),
    "ReduceSum-empty-axes": (lambda x: ov1.reduce_sum(x, ov.op.Constant(ov.Type.i64, ov.Shape([0]), []), True),
                             [X]),
}


def _build(name: str, tmp_path):
    build, inputs = LAYERS[name]
    params = [ov1.parameter(list(a.shape), OV_TYPES[a.dtype], name=f"in{k}") for k, a in enumerate(inputs)]
    node = build(*params)
    path = save_ir(node.outputs(), params, tmp_path / "layer.xml")
    return path, {f"in{k}": a for k, a in enumerate(inputs)}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_matches_openvino(name, tmp_path):
    path, feeds = _build(name, tmp_path)
    assert_matches_openvino(path, feeds, context=name)


def test_strided_slice_new_axis_with_shrink():
    # x[1, newaxis, 2:3] in numpy terms. OpenVINO's shape inference agrees ([1, 1, 4]) but its CPU plugin
    # returns x[0, 1, 1] followed by uninitialised values for this mask combination (a plugin bug), so
    # the expectation here is numpy's indexing, which is what the StridedSlice spec describes.
    from poolir.ir.builder import GraphBuilder

    builder = GraphBuilder("m")
    x = builder.parameter("x", "f32", (2, 3, 4))
    begin, end, stride = (builder.const(np.array(v, np.int64)) for v in ([1, 0, 2], [2, 0, 3], [1, 1, 1]))
    (sliced,) = builder.add("StridedSlice", "opset1", [x, begin, end, stride], name="slice", attrs={
        "begin_mask": (0, 0, 0), "end_mask": (0, 0, 0), "new_axis_mask": (0, 1, 0), "shrink_axis_mask": (1, 0, 0),
        "ellipsis_mask": ()})
    builder.result(sliced, name="y")
    out = IRProgram(builder.build()).execute({"x": X})
    np.testing.assert_array_equal(out["y"], X[1, np.newaxis, 2:3])


def _integer_division_ir(tmp_path, python_division: bool, constant_numerator: bool):
    # [-7, 7, 7, -7] / [2, 2, -2, 3]: floor gives [-4, 3, -4, -3], truncation [-3, 3, -3, -2].
    numerator = np.array([-7, 7, 7, -7], np.int32)
    param = ov1.parameter([4], ov.Type.i32, name="x")
    source = ov1.constant(numerator) if constant_numerator else param
    quotient = ov1.add(ov1.divide(source, ov1.constant(np.array([2, 2, -2, 3], np.int32))),
                       ov1.multiply(param, ov1.constant(np.array(0, np.int32))))
    path = save_ir(quotient.outputs(), [param], tmp_path / "divide.xml")
    text = path.read_text()
    assert 'm_pythondiv="true"' in text
    path.write_text(text.replace('m_pythondiv="true"', f'm_pythondiv="{str(python_division).lower()}"'))
    return path, {"x": numerator}


FLOORED, TRUNCATED = [-4, 3, -4, -3], [-3, 3, -3, -2]


def test_integer_divide_floors_with_python_division(tmp_path):
    # Divide-1 spec: m_pythondiv=true floors. OpenVINO's reference implementation, which its constant
    # folding runs, agrees: with a constant numerator OpenVINO's own answer is the floor.
    path, feeds = _integer_division_ir(tmp_path, python_division=True, constant_numerator=True)
    (result,) = assert_matches_openvino(path, feeds, context="folded").values()
    assert result.tolist() == FLOORED


def test_integer_divide_on_run_time_inputs_truncates_as_the_cpu_plugin(tmp_path):
    # The same Divide on a run-time input: OpenVINO's CPU kernel truncates (float32 division, see
    # runtime/kernels/elementwise.py), contradicting its own spec and reference; poolir computes the same.
    path, feeds = _integer_division_ir(tmp_path, python_division=True, constant_numerator=False)
    (result,) = assert_matches_openvino(path, feeds, context="run time").values()
    assert result.tolist() == TRUNCATED


@pytest.mark.parametrize("constant_numerator", [True, False])
def test_integer_divide_without_python_division_truncates(tmp_path, constant_numerator):
    path, feeds = _integer_division_ir(tmp_path, python_division=False, constant_numerator=constant_numerator)
    (result,) = assert_matches_openvino(path, feeds, context="pythondiv=false").values()
    assert result.tolist() == TRUNCATED


def test_compressed_weights_are_widened_once_and_still_observed(tmp_path):
    # What ov.save_model writes by default: f16 weights behind a Convert. poolir folds the Convert when it
    # plans (as OpenVINO folds it when it compiles): same values as OpenVINO's, no Convert step left, and
    # the folded tensor is still handed to `observe` (poolir verify locates divergences through it).
    param = ov1.parameter([1, 3, 6, 6], ov.Type.f32, name="x")
    weights = ov1.convert(ov1.constant(RNG.standard_normal((4, 3, 3, 3)).astype(np.float16)), "f32")
    weights.output(0).get_tensor().set_names({"weights32"})
    conv = ov1.convolution(param, weights, [1, 1], [1, 1], [1, 1], [1, 1])
    path = save_ir([conv.output(0)], [param], tmp_path / "compressed.xml")
    model = read_ir(path)
    assert any(layer.type == "Convert" for layer in model.layers)
    feeds = {"x": RNG.standard_normal((1, 3, 6, 6)).astype(np.float32)}
    assert_matches_openvino(path, feeds, context="f16 weights")
    program = IRProgram(model)
    assert not any(step.layer.type == "Convert" for step in program._steps)
    seen = {}
    program.execute(feeds, observe=lambda name, value: seen.setdefault(name, value.dtype))
    assert seen.get("weights32") == np.float32


def test_f16_and_f64_pooling_chain(tmp_path):
    # The LpPool chain OpenVINO's ONNX frontend writes, in f16 and in f64.
    for dtype in (np.float16, np.float64):
        param = ov1.parameter([1, 2, 5, 5], OV_TYPES[np.dtype(dtype)], name="x")
        powered = ov1.power(ov1.absolute(param), ov1.constant(np.array(3, dtype)))
        pooled = ov1.avg_pool(powered, [1, 1], [1, 1], [0, 0], [2, 2], True, "floor")
        scaled = ov1.multiply(pooled, ov1.constant(np.array(4, dtype)))
        root = ov1.power(scaled, ov1.constant(np.array(1 / 3, dtype)))
        path = save_ir(root.outputs(), [param], tmp_path / f"lp_{np.dtype(dtype).name}.xml")
        x = RNG.standard_normal((1, 2, 5, 5)).astype(dtype)
        assert_matches_openvino(path, {"x": x}, rtol=2e-3 if dtype == np.float16 else 1e-5, atol=1e-3,
                                context=np.dtype(dtype).name)


def test_dynamic_dims_are_resolved_per_run(tmp_path):
    param = ov1.parameter(ov.PartialShape([-1, 2, -1, ov.Dimension(3, 9)]), ov.Type.f32, name="x")
    pooled = ov8.max_pool(param, [2, 2], [1, 1], [1, 0], [0, 1], [3, 2], "ceil", "explicit", axis=1)
    mean = ov1.reduce_mean(pooled.output(0), c([2, 3]), True)
    path = save_ir([pooled.output(0), pooled.output(1), mean.output(0)], [param], tmp_path / "dyn.xml")
    for shape in ((1, 2, 5, 7), (3, 2, 8, 3), (1, 2, 6, 9)):
        assert_matches_openvino(path, {"x": RNG.standard_normal(shape).astype(np.float32)}, context=str(shape))


# --- names and graph checks on hand-built models ------------------------------------------------------

def _static(*dims):
    return tuple(Dim.static(d) for d in dims)


def _chain(param_names=("x",), result_names=("y",), layer_type="Abs", extra_layers=(), extra_edges=()):
    layers = [
        Layer(0, "input_layer", "Parameter", "opset1", {"element_type": "f32", "shape": _static(2)}, [],
              [Port(0, "f32", _static(2), tuple(param_names))]),
        Layer(1, "op", layer_type, "opset1", {}, [Port(0, "f32", _static(2))],
              [Port(1, "f32", _static(2), tuple(result_names))]),
        Layer(2, "output_layer", "Result", "opset1", {}, [Port(0, "f32", _static(2))], []),
        *extra_layers,
    ]
    edges = [Edge(0, 0, 1, 0), Edge(1, 1, 2, 0), *extra_edges]
    return Model("hand", 11, layers, edges, source="hand.xml")


def test_tensor_names_name_inputs_and_outputs():
    program = IRProgram(_chain(("x", "x_alias"), ("y", "y_alias")))
    assert [spec.name for spec in program.inputs] == ["x"] and program.outputs == ["y"]
    out = program.execute({"x": np.array([-1.5, 2], np.float32)})
    np.testing.assert_array_equal(out["y"], [1.5, 2])


def test_layer_names_when_ports_have_no_names():
    program = IRProgram(_chain((), ()))
    assert [spec.name for spec in program.inputs] == ["input_layer"] and program.outputs == ["output_layer"]


def test_outputs_never_alias_feeds():
    model = _chain(layer_type="Floor")
    feed = np.array([1.0, 2.0], np.float32)
    out = IRProgram(model).execute({"x": feed})
    out["y"][0] = 99
    assert feed[0] == 1.0


def test_parameter_straight_to_result_is_a_copy():
    model = _chain()
    model.layers[1:2] = []
    model.edges = [Edge(0, 0, 2, 0)]
    feed = np.array([1.0, 2.0], np.float32)
    out = IRProgram(model).execute({"x": feed})
    assert list(out) == ["x"]  # the Result is named by the tensor feeding it: the Parameter's
    out["x"][0] = 99
    assert feed[0] == 1.0


def test_unsupported_layers_are_listed_at_once():
    model = _chain(layer_type="SoftPlus")
    model.layers.append(Layer(3, "odd", "Frobnicate", "opset99", {}, [], [Port(0, "f32", _static(2))]))
    with pytest.raises(UnsupportedError) as error:
        IRProgram(model)
    message = str(error.value)
    # each type once, with its count when there is more than one (ir.schema.refuse_unknown_layers)
    assert message == "hand.xml: unsupported layer types: SoftPlus-opset1, Frobnicate-opset99"


def test_cycle_is_refused():
    model = _chain(layer_type="Add")
    model.layers[1].inputs.append(Port(2, "f32", _static(2)))
    model.edges.append(Edge(1, 1, 1, 2))
    with pytest.raises(InvalidModelError, match="cycle"):
        IRProgram(model)


def test_unconnected_input_port_is_refused():
    model = _chain(layer_type="Add")
    model.layers[1].inputs.append(Port(2, "f32", _static(2)))
    with pytest.raises(InvalidModelError, match=r"hand.xml: layer 'op' \(id 1, Add\): input port 2 is not connected"):
        IRProgram(model)


def test_dangling_edge_is_refused():
    model = _chain(extra_edges=[Edge(0, 0, 7, 0)])
    with pytest.raises(InvalidModelError, match="no layer with id 7"):
        IRProgram(model)


def test_run_time_shape_errors_name_the_layer():
    model = _chain(layer_type="Reshape")
    model.layers[1].attrs = {"special_zero": False}
    model.layers[1].inputs.append(Port(2, "i64", _static(1)))
    model.layers.append(Layer(3, "target", "Const", "opset1", {"element_type": "i64", "shape": _static(1),
                                                                "offset": 0, "size": 8}, [],
                              [Port(0, "i64", _static(1))], data=np.array([3], np.int64)))
    model.edges.append(Edge(3, 0, 1, 2))
    with pytest.raises(PoolirError, match=r"layer 'op' \(id 1, Reshape\)"):
        IRProgram(model).execute({"x": np.zeros(2, np.float32)})


def _one_layer(layer_type: str, version: str, attrs: dict, x: np.ndarray, constants: list[np.ndarray]) -> Model:
    """Parameter "x" and Consts feeding one layer whose output 0 is the Result "y" (hand-built)."""
    from poolir.ir.element_types import element_type_of

    shape = tuple(Dim.static(d) for d in x.shape)
    layers = [Layer(0, "x", "Parameter", "opset1", {"element_type": element_type_of(x.dtype), "shape": shape}, [],
                    [Port(0, element_type_of(x.dtype), shape, ("x",))])]
    for k, data in enumerate(constants, start=1):
        layers.append(Layer(k, f"c{k}", "Const", "opset1", {"element_type": element_type_of(data.dtype),
                                                              "shape": _static(*data.shape), "offset": 0,
                                                              "size": data.nbytes}, [],
                            [Port(0, element_type_of(data.dtype), _static(*data.shape))], data=data))
    n = len(constants) + 1
    layers.append(Layer(n, "op", layer_type, version, attrs, [Port(i) for i in range(n)], [Port(n, None, (), ("y",))]))
    layers.append(Layer(n + 1, "out", "Result", "opset1", {}, [Port(0)], []))
    edges = [Edge(i, 0, n, i) for i in range(n)] + [Edge(n, n, n + 1, 0)]
    return Model("m", 11, layers, edges)


@pytest.mark.parametrize("mode, numpy_mode", [("edge", "edge"), ("reflect", "reflect"), ("symmetric", "symmetric")])
def test_pad_modes_ignore_the_pad_value_input(mode, numpy_mode):
    # OpenVINO writes Pad with a pad_value input in every mode and ignores it outside constant mode:
    # np.pad's mode of the same name (also checked against OpenVINO in test_layer_matches_openvino).
    model = _one_layer("Pad", "opset1", {"pad_mode": mode}, X,
                       [np.array([0, 1, 2]), np.array([1, 0, 1]), np.array(7, np.float32)])
    out = IRProgram(model).execute({"x": X})
    np.testing.assert_array_equal(out["y"], np.pad(X, [(0, 1), (1, 0), (2, 1)], mode=numpy_mode))


def test_reduce_with_empty_axes_is_the_identity():
    # OpenVINO: ReduceSum with axes [] and keep_dims=true returns its input (ONNX would sum everything).
    model = _one_layer("ReduceSum", "opset1", {"keep_dims": True}, X, [np.zeros(0, np.int64)])
    np.testing.assert_array_equal(IRProgram(model).execute({"x": X})["y"], X)
