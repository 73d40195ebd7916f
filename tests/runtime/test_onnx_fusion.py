"""The ONNX executor's one fusion (runtime.onnx_fusion): BatchNormalization folded into the Conv before it.

Oracles: onnxruntime on the same graphs (it folds too), poolir's unfused plan (Session(fuse=False), every node as
written, the semantics the rest of the suite pins), and what `observe` sees: a folded Conv's output is never
computed, an unfolded one is. Where folding must not happen (the Conv's output read twice or a graph output,
statistics computed at run time, float16, per-element statistics), the fused plan is bit-equal to the unfused one.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from poolir import runtime
from poolir.ir.errors import PoolirError
from tests.networks.peers import agree
from tests.peers import onnxruntime_run

ELEMENT = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.float16: TensorProto.FLOAT16}


def _model(dtype=np.float32, *, bias=True, group=1, extra_reader=False, conv_is_output=False,
           statistics_input=False, spatial=None, statistics_shape=None, seed=0):
    """x [1, 8, 9, 9] -> Conv (3x3, pads 1, 8 filters) 'y' -> BatchNormalization 'z' (+ what the options add)."""
    rng = np.random.default_rng(seed)
    channels, filters = 8, 8
    weights = rng.standard_normal((filters, channels // group, 3, 3)).astype(dtype)
    inits = [numpy_helper.from_array(weights, "W")]
    conv_inputs = ["x", "W"]
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(filters).astype(dtype), "B"))
        conv_inputs.append("B")
    shape = statistics_shape or (filters,)
    stats = {"scale": rng.uniform(0.5, 2, shape), "beta": rng.standard_normal(shape),
             "mean": rng.standard_normal(shape), "var": rng.uniform(0.1, 3, shape)}
    graph_inputs = [helper.make_tensor_value_info("x", ELEMENT[dtype], [1, channels, 9, 9])]
    for name, value in stats.items():
        if statistics_input and name == "mean":
            graph_inputs.append(helper.make_tensor_value_info(name, ELEMENT[dtype], list(shape)))
        else:
            inits.append(numpy_helper.from_array(value.astype(dtype), name))
    nodes = [helper.make_node("Conv", conv_inputs, ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=group),
             helper.make_node("BatchNormalization", ["y", *stats], ["z"], epsilon=1e-3,
                              **({} if spatial is None else {"spatial": spatial}))]
    outputs = [helper.make_tensor_value_info("z", ELEMENT[dtype], None)]
    if extra_reader:
        nodes.append(helper.make_node("Relu", ["y"], ["r"]))
        outputs.append(helper.make_tensor_value_info("r", ELEMENT[dtype], None))
    if conv_is_output:
        outputs.append(helper.make_tensor_value_info("y", ELEMENT[dtype], None))
    graph = helper.make_graph(nodes, "conv_bn", graph_inputs, outputs, inits)
    opset = 7 if spatial is not None else 15
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    feeds = {"x": rng.standard_normal((1, channels, 9, 9)).astype(dtype)}
    if statistics_input:
        feeds["mean"] = stats["mean"].astype(dtype)
    return model, feeds


def _run(model, feeds, fuse):
    seen = []
    outputs = runtime.Session(model, fuse=fuse).run(feeds, lambda name, value: seen.append(name))
    return outputs, seen


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bias,group", [(True, 1), (False, 1), (True, 8), (False, 2)])
def test_folded_conv_agrees_with_onnxruntime_and_the_unfused_plan(dtype, bias, group):
    model, feeds = _model(dtype, bias=bias, group=group)
    fused, seen = _run(model, feeds, fuse=True)
    unfused, seen_unfused = _run(model, feeds, fuse=False)
    assert "y" not in seen and "y" in seen_unfused       # folded: the Conv's own output is never computed
    if dtype == np.float32:  # onnxruntime has no float64 Conv kernel
        expected = onnxruntime_run(model, feeds)["z"]
        for got in (fused["z"], unfused["z"]):
            ok, max_abs, _ = agree(got, expected, dtype)
            assert ok, f"differs from onnxruntime by {max_abs}"
    ok, max_abs, _ = agree(fused["z"], unfused["z"], dtype)
    assert ok, max_abs
    assert fused["z"].dtype == unfused["z"].dtype == dtype


@pytest.mark.parametrize("case", [dict(extra_reader=True), dict(conv_is_output=True), dict(statistics_input=True),
                                  dict(dtype=np.float16), dict(spatial=0, statistics_shape=(8, 9, 9))])
def test_no_folding_where_it_could_show(case):
    model, feeds = _model(**case, bias=False)   # a Conv bias would be packed into the product (rounding)
    fused, seen = _run(model, feeds, fuse=True)
    unfused, _ = _run(model, feeds, fuse=False)
    assert "y" in seen                                   # the Conv ran as written
    for name in unfused:
        np.testing.assert_array_equal(fused[name], unfused[name])


@pytest.mark.parametrize("fuse", [True, False])
def test_per_channel_statistics_under_spatial_0_are_refused_fused_or_not(fuse):
    """spatial=0 wants one statistic per element of a sample: [8] is wrong there, and folding must not hide it."""
    model, feeds = _model(spatial=0)
    with pytest.raises(PoolirError, match=r"expected \[8, 9, 9\]"):
        runtime.Session(model, fuse=fuse).run(feeds)


def test_folding_drops_the_replaced_constants():
    """The fused plan holds the folded weights instead of the originals, not beside them (peak memory)."""
    model, _ = _model()
    program = runtime.Session(model)._program
    assert not program._constants          # folded, then packed with the bias (BiasedWeights): one matrix in all
    (step,) = [step for step, *_ in program._steps]
    assert step.weights.matrix.shape == (1, 8, 8 * 9 + 1)


def test_folded_name_never_collides_with_a_graph_tensor():
    model, feeds = _model()
    # a later node produces the name the folding would pick first
    model.graph.node.append(helper.make_node("Identity", ["z"], ["z (folded W)"]))
    model.graph.output.append(helper.make_tensor_value_info("z (folded W)", TensorProto.FLOAT, None))
    fused, _ = _run(model, feeds, fuse=True)
    np.testing.assert_array_equal(fused["z (folded W)"], fused["z"])
    ok, _, _ = agree(fused["z"], _run(model, feeds, fuse=False)[0]["z"])
    assert ok


def _with_relu(model, source: str, name: str = "r"):
    model.graph.node.append(helper.make_node("Relu", [source], [name]))
    model.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    return model


def test_relu_after_a_conv_runs_in_place_bit_for_bit():
    """Conv -> Relu fuses into one step that clips the Conv's fresh result in place: the same bits as the two nodes."""
    model, feeds = _model(bias=False)
    model.graph.node.pop()                               # no BatchNormalization: x -> Conv 'y' -> Relu 'r'
    model.graph.output.pop()
    _with_relu(model, "y")
    fused, seen = _run(model, feeds, fuse=True)
    unfused, seen_unfused = _run(model, feeds, fuse=False)
    assert "y" not in seen and "y" in seen_unfused
    np.testing.assert_array_equal(fused["r"], unfused["r"])
    assert (fused["r"] >= 0).all() and (fused["r"] == 0).any()


def test_conv_batch_norm_relu_fuse_into_one_step():
    model, feeds = _model()
    model.graph.output.pop()
    _with_relu(model, "z")
    fused, seen = _run(model, feeds, fuse=True)
    unfused, seen_unfused = _run(model, feeds, fuse=False)
    assert seen == ["r"] and seen_unfused == ["y", "z", "r"]
    ok, max_abs, _ = agree(fused["r"], unfused["r"])
    assert ok, max_abs
    ok, max_abs, _ = agree(fused["r"], onnxruntime_run(model, feeds)["r"])
    assert ok, max_abs


def test_relu_reads_a_conv_output_that_something_else_reads_too():
    """The Conv's output is read by the Relu and by the BatchNormalization: neither may take it over."""
    model, feeds = _with_relu(_model(bias=False)[0], "y"), _model(bias=False)[1]
    fused, seen = _run(model, feeds, fuse=True)
    unfused, _ = _run(model, feeds, fuse=False)
    assert "y" in seen
    for name in unfused:
        np.testing.assert_array_equal(fused[name], unfused[name])


def test_hard_swish_after_a_conv_runs_in_place_bit_for_bit():
    model, feeds = _model(bias=False)
    model.graph.node.pop()
    model.graph.output.pop()
    model.graph.node.append(helper.make_node("HardSwish", ["y"], ["h"]))
    model.graph.output.append(helper.make_tensor_value_info("h", TensorProto.FLOAT, None))
    model.opset_import[0].version = 15
    fused, seen = _run(model, feeds, fuse=True)
    unfused, seen_unfused = _run(model, feeds, fuse=False)
    assert seen == ["h"] and seen_unfused == ["y", "h"]
    np.testing.assert_array_equal(fused["h"], unfused["h"])
    ok, max_abs, _ = agree(fused["h"], onnxruntime_run(model, feeds)["h"])
    assert ok, max_abs


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, "bfloat16"])
@pytest.mark.parametrize("kernel", ["relu", "hard_swish"])
def test_activation_kernels_in_place_equal_their_fresh_results(kernel, dtype):
    import ml_dtypes
    from poolir.runtime.kernels import activation

    dtype = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    x = np.concatenate([np.linspace(-8, 8, 2001), [0.0, -0.0, np.inf, -np.inf, np.nan, -3.0, 3.0]]).astype(dtype)
    inside = x.copy()
    with np.errstate(all="ignore"):          # -inf * 0 is NaN, as in a run (Session.run silences it too)
        expected = getattr(activation, kernel)(x)
        got = getattr(activation, kernel)(inside, out=inside)
    assert got is inside and got.dtype == dtype
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))    # every bit, signed zeros too


def _elementwise_then_relu(op: str, inputs: list[str], dtype=np.float32, opset: int = 13):
    element = {np.float32: TensorProto.FLOAT, np.int32: TensorProto.INT32}[dtype]
    graph = helper.make_graph(
        [helper.make_node(op, inputs, ["s"]), helper.make_node("Relu", ["s"], ["r"])], "g",
        [helper.make_tensor_value_info(name, element, [2, 3]) for name in dict.fromkeys(inputs)],
        [helper.make_tensor_value_info("r", element, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    rng = np.random.default_rng(3)
    feeds = {name: (rng.standard_normal((2, 3)) * 5).astype(dtype) for name in dict.fromkeys(inputs)}
    return model, feeds


@pytest.mark.parametrize("op, inputs", [("Add", ["a", "b"]), ("Sum", ["a", "b", "c"])])
def test_relu_after_add_or_sum_runs_in_place(op, inputs):
    model, feeds = _elementwise_then_relu(op, inputs)
    before = {name: value.copy() for name, value in feeds.items()}
    fused, seen = _run(model, feeds, fuse=True)
    unfused, _ = _run(model, feeds, fuse=False)
    assert seen == ["r"]
    np.testing.assert_array_equal(fused["r"], unfused["r"])
    for name, value in before.items():
        np.testing.assert_array_equal(feeds[name], value)       # the feeds are never written


def test_a_one_input_sum_returns_its_input_so_relu_never_writes_into_it():
    model, feeds = _elementwise_then_relu("Sum", ["a"])
    before = feeds["a"].copy()
    fused, seen = _run(model, feeds, fuse=True)
    assert seen == ["s", "r"]
    np.testing.assert_array_equal(feeds["a"], before)
    np.testing.assert_array_equal(fused["r"], np.maximum(before, 0))


@pytest.mark.parametrize("fuse", [True, False])
def test_the_activation_still_checks_its_element_type(fuse):
    """Relu-13 takes floats only: an int32 Add before it does not smuggle an integer ReLU in through the fusion."""
    model, feeds = _elementwise_then_relu("Add", ["a", "b"], np.int32)
    with pytest.raises(PoolirError, match="int32 is not allowed for Relu-13"):
        runtime.Session(model, fuse=fuse).run(feeds)


def _conv_model(channels: int, filters: int, kernel: int, bias: bool = True):
    rng = np.random.default_rng(channels * 100 + filters)
    inits = [numpy_helper.from_array(rng.standard_normal((filters, channels, kernel, kernel)).astype(np.float32), "W")]
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(filters).astype(np.float32), "B"))
    node = helper.make_node("Conv", ["x", "W", "B"][:2 + bias], ["y"], pads=[kernel // 2] * 4)
    graph = helper.make_graph([node], "conv",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, channels, 7, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    return model, {"x": rng.standard_normal((2, channels, 7, 6)).astype(np.float32)}


@pytest.mark.parametrize("channels, filters, kernel, packed", [(3, 8, 3, True), (8, 3, 3, True), (4, 16, 1, True),
                                                               (16, 16, 1, True), (16, 4, 1, False)])
def test_conv_bias_packed_into_the_product_where_it_saves_work(channels, filters, kernel, packed):
    """A constant bias joins the matrix product as one more column (kernels.convolution.BiasedWeights): gathered
    columns always, a 1x1 convolution when its input has at most as many channels as its output."""
    model, feeds = _conv_model(channels, filters, kernel)
    session = runtime.Session(model)
    assert ("W" in session._program._constants) is not packed      # packed: the plan holds the matrix alone
    fused = session.run(feeds)["y"]
    unfused = runtime.Session(model, fuse=False).run(feeds)["y"]
    ok, max_abs, _ = agree(fused, onnxruntime_run(model, feeds)["y"])
    assert ok, max_abs
    if packed:
        ok, max_abs, _ = agree(fused, unfused)
        assert ok, max_abs
    else:
        np.testing.assert_array_equal(fused, unfused)


def _random_chain(seed: int):
    """x -> Conv (random geometry, groups, bias) -> BatchNormalization? -> Relu/HardSwish? -> Add of a second Conv
    branch? -> Relu?: the patterns the plan fuses, in random combinations, float32."""
    rng = np.random.default_rng(seed)
    channels = int(rng.choice([2, 4, 6]))
    group = int(rng.choice([g for g in (1, 2, channels) if channels % g == 0]))
    filters = group * int(rng.integers(1, 4))
    kernel, stride, pad = int(rng.choice([1, 3])), int(rng.choice([1, 2])), int(rng.integers(0, 2))
    size = int(rng.integers(5, 10))
    inits = [numpy_helper.from_array(rng.standard_normal((filters, channels // group, kernel, kernel))
                                     .astype(np.float32), "W")]
    conv_inputs = ["x", "W"]
    if rng.random() < 0.7:
        inits.append(numpy_helper.from_array(rng.standard_normal(filters).astype(np.float32), "B"))
        conv_inputs.append("B")
    nodes = [helper.make_node("Conv", conv_inputs, ["c"], kernel_shape=[kernel, kernel], strides=[stride, stride],
                              pads=[pad] * 4, group=group)]
    last = "c"
    if rng.random() < 0.6:
        for name, value in (("s", rng.uniform(0.5, 2, filters)), ("t", rng.standard_normal(filters)),
                            ("m", rng.standard_normal(filters)), ("v", rng.uniform(0.2, 2, filters))):
            inits.append(numpy_helper.from_array(value.astype(np.float32), name))
        nodes.append(helper.make_node("BatchNormalization", [last, "s", "t", "m", "v"], ["n"]))
        last = "n"
    activation = rng.choice(["Relu", "HardSwish", ""])
    if activation:
        nodes.append(helper.make_node(str(activation), [last], ["a"]))
        last = "a"
    if rng.random() < 0.5:
        nodes.append(helper.make_node("Conv", conv_inputs, ["c2"], kernel_shape=[kernel, kernel],
                                      strides=[stride, stride], pads=[pad] * 4, group=group))
        nodes.append(helper.make_node(str(rng.choice(["Add", "Sum"])), [last, "c2"], ["sum"]))
        nodes.append(helper.make_node("Relu", ["sum"], ["out"]))
        last = "out"
    graph = helper.make_graph(nodes, f"chain{seed}",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, channels, size, size])],
                              [helper.make_tensor_value_info(last, TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)], ir_version=8)
    return model, {"x": rng.standard_normal((2, channels, size, size)).astype(np.float32)}, last


@pytest.mark.parametrize("seed", range(60))
def test_random_fusable_chains_agree_with_onnxruntime_fused_or_not(seed):
    model, feeds, output = _random_chain(seed)
    fused = runtime.Session(model).run(feeds)[output]
    unfused = runtime.Session(model, fuse=False).run(feeds)[output]
    expected = onnxruntime_run(model, feeds)[output]
    for got in (fused, unfused):
        ok, max_abs, _ = agree(got, expected)
        assert ok, f"differs from onnxruntime by {max_abs}"
    assert fused.dtype == unfused.dtype == np.float32 and fused.shape == unfused.shape


def test_weights_shared_by_two_convs_are_neither_folded_nor_packed_twice():
    """One W and B read by two Conv nodes, each followed by a BatchNormalization: folding or packing would hold a
    copy per Conv (a hostile model could share one large W among thousands). Both run as written, from the one W."""
    model, feeds = _model()
    model.graph.node.append(helper.make_node("Conv", ["x", "W", "B"], ["y2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    model.graph.node.append(helper.make_node("BatchNormalization", ["y2", "scale", "beta", "mean", "var"], ["z2"],
                                             epsilon=1e-3))
    model.graph.output.append(helper.make_tensor_value_info("z2", TensorProto.FLOAT, None))
    session = runtime.Session(model)
    constants = session._program._constants
    assert {"W", "B"} <= set(constants)
    assert sum(value.nbytes for value in constants.values()) == sum(
        numpy_helper.to_array(init).nbytes for init in model.graph.initializer)
    seen = []
    fused = session.run(feeds, lambda name, value: seen.append(name))
    assert "y" in seen and "y2" in seen
    unfused = runtime.Session(model, fuse=False).run(feeds)
    for name in ("z", "z2"):
        np.testing.assert_array_equal(fused[name], unfused[name])
