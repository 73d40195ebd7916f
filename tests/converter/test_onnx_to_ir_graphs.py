"""ONNX -> IR whole-graph behaviour: constant folding, shared weights, initializers listed as inputs, names,
progress, scalars. Each case is a small ONNX model, converted by poolir and checked by the oracles of
test_onnx_to_ir_families.check (OpenVINO on poolir's .xml, onnxruntime on the ONNX and on the round trip)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from poolir.converter.onnx_to_ir import onnx_to_ir
from poolir.ir.errors import PoolirError
from tests.converter.test_onnx_to_ir_families import check, make_model, single

# -- whole graphs ------------------------------------------------------------------------------------------

def test_view_batch_flatten(tmp_path):
    """x.view(x.size(0), -1) as the TorchScript exporter writes it: Shape, Gather, Unsqueeze, Concat, Reshape,
    with a dynamic batch (kept as layers) and a static one (folded to one Const shape)."""
    for batch in ("n", 2):
        nodes = [
            helper.make_node("Shape", ["x"], ["s"]),
            helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.array(0, np.int64))),
            helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
            helper.make_node("Constant", [], ["ax"], value=numpy_helper.from_array(np.array([0], np.int64))),
            helper.make_node("Unsqueeze", ["n", "ax"], ["n1"]),
            helper.make_node("Constant", [], ["m1"], value=numpy_helper.from_array(np.array([-1], np.int64))),
            helper.make_node("Concat", ["n1", "m1"], ["shape"], axis=0),
            helper.make_node("Reshape", ["x", "shape"], ["y"]),
        ]
        model = make_model(nodes, [("x", T.FLOAT, (batch, 3, 4, 4))], [("y", T.FLOAT)], opset=13)
        converted = check(model, tmp_path, {"x": np.random.default_rng(0).standard_normal((2, 3, 4, 4),
                                                                                           ).astype(np.float32)})
        kinds = [layer.type for layer in converted.layers]
        if batch == 2:
            assert sorted(kinds) == ["Const", "Parameter", "Reshape", "Result"], kinds
        else:
            assert "ShapeOf" in kinds


def test_split_concat(tmp_path):
    nodes = [helper.make_node("Split", ["x"], ["a", "b", "c"], axis=1),
             helper.make_node("Concat", ["c", "a", "b"], ["y"], axis=1),
             helper.make_node("Add", ["a", "b"], ["z"])]
    model = make_model(nodes, [("x", T.FLOAT, (2, 6, 3))], [("y", T.FLOAT), ("z", T.FLOAT), ("b", T.FLOAT)])
    check(model, tmp_path)


def test_constant_folding(tmp_path):
    """ConstantOfShape, arithmetic on constants and Identity chains fold to Consts; the result is unchanged."""
    nodes = [
        helper.make_node("Constant", [], ["shape"], value=numpy_helper.from_array(np.array([2, 3], np.int64))),
        helper.make_node("ConstantOfShape", ["shape"], ["ones"],
                         value=numpy_helper.from_array(np.array([1.5], np.float32))),
        helper.make_node("Identity", ["ones"], ["ones1"]),
        helper.make_node("Mul", ["ones1", "w"], ["scaled"]),
        helper.make_node("Sqrt", ["scaled"], ["root"]),
        helper.make_node("Add", ["x", "root"], ["y"]),
    ]
    w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    model = make_model(nodes, [("x", T.FLOAT, (2, 3))], [("y", T.FLOAT)], initializers=[w])
    converted = check(model, tmp_path)
    assert sorted(layer.type for layer in converted.layers) == ["Add", "Const", "Parameter", "Result"]


def test_huge_constant_of_shape_not_folded(tmp_path):
    """A ConstantOfShape of 10^8 elements is not computed by the converter (it stays a Broadcast layer)."""
    nodes = [helper.make_node("Constant", [], ["shape"],
                              value=numpy_helper.from_array(np.array([10 ** 4, 10 ** 4], np.int64))),
             helper.make_node("ConstantOfShape", ["shape"], ["big"]),
             helper.make_node("Shape", ["big"], ["y"])]
    model = make_model(nodes, [], [("y", T.INT64), ("big", T.FLOAT)])  # `big` is read (a layer nothing reads is dropped)
    converted = onnx_to_ir(model)
    assert "Broadcast" in {layer.type for layer in converted.layers}


def test_identical_initializers_share_one_const(tmp_path):
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    inits = [numpy_helper.from_array(w, "w1"), numpy_helper.from_array(w.copy(), "w2"),
             numpy_helper.from_array(w.astype(np.float64), "w3")]
    nodes = [helper.make_node("Add", ["x", "w1"], ["a"]), helper.make_node("Mul", ["a", "w2"], ["y"]),
             helper.make_node("Cast", ["w3"], ["w3f"], to=T.FLOAT), helper.make_node("Sub", ["y", "w3f"], ["z"])]
    model = make_model(nodes, [("x", T.FLOAT, (3, 4))], [("y", T.FLOAT), ("z", T.FLOAT)], initializers=inits)
    converted = check(model, tmp_path)
    consts = [layer for layer in converted.layers if layer.type == "Const"]
    assert len(consts) == 1  # w1 and w2 share; w3 cast to f32 folds to the same bytes
    xml = (tmp_path / "m.xml").read_text()
    assert xml.count('type="Const"') == 1
    assert (tmp_path / "m.bin").stat().st_size == w.nbytes


def test_initializer_listed_as_input_is_a_constant(tmp_path):
    """IR version 3 model-zoo files list weights among the graph inputs too."""
    w = numpy_helper.from_array(np.full((3,), 2.0, np.float32), "w")
    model = make_model([helper.make_node("Mul", ["x", "w"], ["y"])], [("x", T.FLOAT, (2, 3)), ("w", T.FLOAT, (3,))],
                       [("y", T.FLOAT)], initializers=[w])
    converted = check(model, tmp_path, {"x": np.ones((2, 3), np.float32)})
    assert [layer.type for layer in converted.layers].count("Parameter") == 1


def test_names_kept_and_output_that_is_an_input(tmp_path):
    nodes = [helper.make_node("Identity", ["in put"], ["same"]), helper.make_node("Abs", ["in put"], ["out:0"]),
             helper.make_node("Split", ["in put"], ["p", "q"], axis=0)]
    model = make_model(nodes, [("in put", T.FLOAT, (4, 3))],
                       [("same", T.FLOAT), ("out:0", T.FLOAT), ("q", T.FLOAT), ("p", T.FLOAT)])
    check(model, tmp_path)


@pytest.mark.parametrize("index", [2, -2, 1])
def test_tile_by_a_static_dim_of_a_dynamic_shape(index, tmp_path):
    """Tile(x, Concat(Gather(Shape(x), [2]), [1, 1, 2])) with x [2,1,3,?]: the picked dim is static, but the
    Gather stayed a run-time layer, so the repeats went to the Tile-per-axis chain, and OpenVINO 2026.4's CPU
    plugin tiled the last axis wrong (x[0,0,0] = [0,1,2] gave [0,1,2,3,4,5], not [0,1,2,0,1,2]). Dims that are
    static are a Const now, as OpenVINO's own frontend folds them (found by the graph fuzzer)."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "i"], ["g"], axis=0),
             helper.make_node("Concat", ["g", "rest"], ["r"], axis=0), helper.make_node("Tile", ["x", "r"], ["y"])]
    constants = [numpy_helper.from_array(np.array([index]), "i"), numpy_helper.from_array(np.array([1, 1, 2]), "rest")]
    model = make_model(nodes, [("x", T.FLOAT, (2, 1, 3, "d"))], [("y", T.FLOAT)], opset=21, initializers=constants)
    converted = check(model, tmp_path, {"x": np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3)})
    assert "ShapeOf" not in [layer.type for layer in converted.layers]


@pytest.mark.parametrize("shape", [(3, 1), ()])
def test_expand_to_the_empty_shape_keeps_the_input(shape, tmp_path):
    """Expand(x, []) broadcasts x with a shape of no dims: x unchanged. Written as a Broadcast to an empty
    target, it crashed OpenVINO 2026.4's CPU plugin (SIGSEGV in compile_model, also for the same IR built with
    OpenVINO's own opset API); poolir writes no layer for it (found by the graph fuzzer, seed 202439)."""
    nodes = [helper.make_node("ReduceMin", ["x"], ["m"], keepdims=0), helper.make_node("Expand", ["m", "e"], ["y"]),
             helper.make_node("Expand", ["x", "e"], ["z"])]
    empty = numpy_helper.from_array(np.zeros((0,), np.int64), "e")
    model = make_model(nodes, [("x", T.FLOAT, shape)], [("y", T.FLOAT), ("z", T.FLOAT)], opset=13,
                       initializers=[empty])
    feeds = {"x": np.arange(1, 1 + int(np.prod(shape)), dtype=np.float32).reshape(shape)}
    converted = check(model, tmp_path, feeds)
    assert "Broadcast" not in [layer.type for layer in converted.layers]


@pytest.mark.parametrize("outputs", ["cba", "bca", "ca", "acb", "ac"])
def test_identity_chain_outputs_listed_before_their_source(outputs, tmp_path):
    """a = Relu(x), b = Identity(a), c = Identity(b), all graph outputs: one IR port carries 'a', so the
    others are copies. With 'c' listed before 'a', the Result of 'c' took the port and the copy for 'a' gave
    a second port the name 'a': "the tensor name 'a' is also the name of an output of layer 'Relu_0'"
    (found by the graph fuzzer, tests/runtime/graph_fuzz.py)."""
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Identity", ["a"], ["b"]),
             helper.make_node("Identity", ["b"], ["c"])]
    model = make_model(nodes, [("x", T.FLOAT, (2, 3))], [(name, T.FLOAT) for name in outputs], opset=14)
    check(model, tmp_path)


def test_string_constant_refused_naming_the_node():
    node = helper.make_node("Constant", [], ["y"], name="words", value_strings=["a", "b"])
    with pytest.raises(PoolirError, match="words.*no IR equivalent"):
        onnx_to_ir(make_model([node], [], [("y", T.STRING)], opset=13))


def test_convert_progress_after_a_delay():
    """The command line's progress line appears only once the conversion has run longer than `after`."""
    import io

    from poolir.converter.cmd_convert import ConvertProgress

    times = iter([0.0, 0.5, 2.0, 2.1])
    stream = io.StringIO()
    progress = ConvertProgress(stream, after=1.5, clock=lambda: next(times))
    progress(1, 3)
    assert stream.getvalue() == ""
    progress(2, 3)
    progress(3, 3)
    progress.finish()
    assert "converting node 2/3" in stream.getvalue() and "converting node 3/3" in stream.getvalue()
    nodes = [helper.make_node("Abs", ["x"], ["a"]), helper.make_node("Neg", ["a"], ["y"])]
    calls = []
    onnx_to_ir(make_model(nodes, [("x", T.FLOAT, (2,))], [("y", T.FLOAT)]), progress=lambda d, t: calls.append((d, t)))
    assert calls == [(1, 2), (2, 2)]


def test_shape_of_a_huge_static_input_is_folded_without_allocating():
    model = make_model([helper.make_node("Shape", ["x"], ["y"])], [("x", T.FLOAT, (10 ** 4, 10 ** 4))],
                       [("y", T.INT64)])
    converted = onnx_to_ir(model)
    (const,) = [layer for layer in converted.layers if layer.type == "Const"]
    assert const.data.tolist() == [10 ** 4, 10 ** 4]


@pytest.mark.parametrize("op", ["Neg", "Reciprocal", "Ceil", "Mean"])
def test_scalar_inputs_stay_scalars(op, tmp_path):
    """A 0-d tensor through a decomposition with a 0-d Const stays 0-d (poolir's IR runtime once made it [1])."""
    check(single(op, [(T.FLOAT, ())]), tmp_path, {"x0": np.array(-2.5, np.float32)})


def test_axes_as_an_input_before_its_opset_is_refused():
    """Before ReduceMean-18 (and Squeeze-13) axes are an attribute; a second input there is bad input."""
    init = [numpy_helper.from_array(np.array([1], np.int64), "x1")]
    for op, opset in (("ReduceMean", 13), ("Squeeze", 11)):
        model = single(op, [(T.FLOAT, (2, 1)), (T.INT64, (1,))], opset=opset, initializers=init)
        with pytest.raises(PoolirError, match="takes 1 input, got 2"):
            onnx_to_ir(model)
