"""The nine "light" model-zoo graphs shipped inside the onnx package, with seeded random weights.

onnx/backend/test/data/light/light_<name>.onnx are the ONNX model zoo's classic CNNs (AlexNet, DenseNet-121,
GoogLeNet, BN-Inception, ResNet-50, ShuffleNet v1, SqueezeNet 1.0, VGG-19, ZFNet-512), converted from Caffe2 at
opset 9 and IR version 3, with every big weight replaced by a ConstantOfShape node filled with 0.02 (and some
BatchNorm statistics kept as small initializers). With those weights every output is the same whatever the input.

`light_model(name, seed)` keeps each graph exactly as written (opset 9, IR version 3, the same nodes in the same
order, the same names) and only gives the weights values:

- each ConstantOfShape weight becomes an initializer of the same name, shape and type (its `__SHAPE` initializer
  and graph input go; IR version 3 lists every initializer among the graph inputs, so the weight is listed
  where its shape was);
- every float initializer feeding Conv, Gemm, BatchNormalization, or Mul/Add through an Unsqueeze (the Caffe
  "Scale" layer after a BatchNorm), and every ConstantOfShape weight, is drawn anew by the role of the node
  that reads it (through Unsqueeze or Reshape: GoogLeNet reshapes its classifier's weight before the Gemm):

      Conv / Gemm weight   He-normal, std sqrt(2 / fan_in) (fan_in = in_channels/group * kh * kw; Gemm's K)
      Conv / Gemm bias     normal, std 0.01
      BN scale, Mul scale  uniform [0.8, 1.2]          BN bias, Add shift   normal, std 0.1
      BN mean and var      the statistics of the BatchNorm's own input on a calibration batch

  The last line is what makes a 121-layer DenseNet sane: random running statistics do not match the
  activations that reach the BatchNorm, so the scale drifts by a random factor at every layer (and doubles at
  every residual Sum) until the softmax is one-hot. A trained network's running statistics are those of its
  activations; here they are measured on one seeded N(0, 1) batch, all BatchNorms at once, by one onnxruntime
  run of a copy of the graph whose BatchNorms normalise with their batch statistics and output them.
- the classifier (the Conv or Gemm the final Softmax reads, or whose output is the graph's) is then scaled so
  that its outputs on that batch have standard deviation LOGIT_STD = 2, like a trained network's logits:
  without BatchNorm (AlexNet, VGG, GoogLeNet) He-normal layers and max pools let the scale grow layer by
  layer, and 1000 logits of standard deviation 6 make a one-hot softmax; too small a scale makes it uniform.

Other initializers (Reshape targets, a Caffe2 blob queue no node reads) are left alone.

Measured with seed 0 on one N(0, 1) input: the softmax's largest probability is between 0.03 (ZFNet) and 0.41
(ResNet-50), its entropy 3.2 to 5.6 nats (uniform: 6.9); DenseNet-121's logits have standard deviation 2.3.
Another input moves the output by 2% (SqueezeNet) to 360% (BN-Inception) of its size: random-weight networks
depend on their input less than trained ones, but always by far more than the peers' tolerance.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tests.networks.peers import run_onnxruntime

LIGHT_DIR = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
_SHAPE_SUFFIX = "__SHAPE"
_DEFAULT_BN_EPSILON = 1e-5
_RESHAPING = {"Unsqueeze", "Reshape"}
LOGIT_STD = 2.0  # the classifier's outputs on the calibration batch: a softmax neither uniform nor one-hot


def light_models() -> list[str]:
    """The names light_model accepts: "bvlc_alexnet", "densenet121", ... (the file names without light_)."""
    return sorted(path.stem.removeprefix("light_") for path in LIGHT_DIR.glob("light_*.onnx"))


def light_model(name: str, seed: int = 0) -> onnx.ModelProto:
    """The model-zoo graph `name` with seeded random weights of realistic scale (see the module docstring).

    The weights live as numpy arrays until the end: calibration feeds them to onnxruntime as the graph inputs
    they already are (IR version 3), and they are copied into the model once (VGG-19's are 550 MB)."""
    model = onnx.load(LIGHT_DIR / f"light_{name}.onnx")
    weights = _draw_weights(model.graph, np.random.default_rng(seed))
    _drop_constant_of_shape(model.graph, weights)
    _drop_initializers(model.graph, weights)
    _calibrate(model, weights, seed)
    model.graph.initializer.extend(numpy_helper.from_array(array, name) for name, array in weights.items())
    return model


def data_input(model: onnx.ModelProto, weights=()) -> onnx.ValueInfoProto:
    """The one graph input that is neither an initializer nor one of `weights` (IR version 3 lists the weights
    as inputs too)."""
    initialized = {initializer.name for initializer in model.graph.initializer} | set(weights)
    (data,) = [value for value in model.graph.input if value.name not in initialized]
    return data


def random_feeds(model: onnx.ModelProto, seed: int, weights=()) -> dict[str, np.ndarray]:
    """N(0, 1) for the data input in its declared type: what a normalised image batch looks like to the first
    layer. A symbolic dim (a real export's batch) is fed as 1."""
    data = data_input(model, weights)
    tensor = data.type.tensor_type
    shape = [dim.dim_value if dim.HasField("dim_value") else 1 for dim in tensor.shape.dim]
    dtype = helper.tensor_dtype_to_np_dtype(tensor.elem_type)
    return {data.name: np.random.default_rng(seed).standard_normal(shape).astype(dtype)}


def _draw_weights(graph: onnx.GraphProto, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Every ConstantOfShape weight and every float initializer a weight-reading node reads, drawn by role."""
    consumers = _consumers(graph)
    shapes = {init.name: tuple(int(d) for d in numpy_helper.to_array(init))
              for init in graph.initializer if init.name.endswith(_SHAPE_SUFFIX)}
    weights = {}
    for node in graph.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in shapes:
            assert node.output[0] + _SHAPE_SUFFIX == node.input[0], node.output[0]
            assert node.attribute[0].t.data_type == TensorProto.FLOAT, node.output[0]
            weights[node.output[0]] = _draw(consumers[node.output[0]], shapes[node.input[0]], rng)
    for init in graph.initializer:
        if init.data_type == TensorProto.FLOAT and init.name in consumers:
            weights[init.name] = _draw(consumers[init.name], tuple(init.dims), rng)
    return weights


def _drop_constant_of_shape(graph: onnx.GraphProto, weights: dict[str, np.ndarray]) -> None:
    """Remove the ConstantOfShape nodes that made the weights and their `__SHAPE` initializers; each weight is
    declared as a graph input where its shape was (IR version 3 lists every initializer as an input)."""
    made = {node.output[0] for node in graph.node if node.op_type == "ConstantOfShape" and node.output[0] in weights}
    kept_nodes = [node for node in graph.node if not (node.op_type == "ConstantOfShape" and node.output[0] in made)]
    shape_inputs = {name + _SHAPE_SUFFIX for name in made}
    assert not shape_inputs & {name for node in kept_nodes for name in node.input}, "a __SHAPE is read elsewhere"
    inputs = [helper.make_tensor_value_info(value.name.removesuffix(_SHAPE_SUFFIX), TensorProto.FLOAT,
                                            weights[value.name.removesuffix(_SHAPE_SUFFIX)].shape)
              if value.name in shape_inputs else value for value in graph.input]
    initializers = [init for init in graph.initializer if init.name not in shape_inputs]
    del graph.node[:], graph.input[:], graph.initializer[:]
    graph.node.extend(kept_nodes)
    graph.input.extend(inputs)
    graph.initializer.extend(initializers)


def _drop_initializers(graph: onnx.GraphProto, names) -> None:
    """Remove the initializers being redrawn (they stay declared as graph inputs)."""
    kept = [init for init in graph.initializer if init.name not in names]
    del graph.initializer[:]
    graph.initializer.extend(kept)


def _consumers(graph: onnx.GraphProto) -> dict[str, tuple]:
    """Value name -> (op_type, input index, node) of the first node that reads it, looking through the
    Unsqueeze and Reshape nodes that bring a weight to its consumer's shape (GoogLeNet reshapes its classifier's
    weight before the Gemm)."""
    found: dict[str, tuple] = {}
    for node in graph.node:
        for index, name in enumerate(node.input):
            if not (node.op_type in _RESHAPING and index == 0):
                found.setdefault(_source(graph, name), (node.op_type, index, node))
    return found


def _source(graph: onnx.GraphProto, name: str) -> str:
    """The value `name` is a reshaped view of (through Unsqueeze and Reshape), or `name` itself."""
    reshaped = {node.output[0]: node.input[0] for node in graph.node if node.op_type in _RESHAPING}
    while name in reshaped:
        name = reshaped[name]
    return name


def _classifier_outputs(graph: onnx.GraphProto) -> set[str]:
    """Outputs of the classifier layers: the values the final Softmax reads, or the graph's outputs."""
    return ({node.input[0] for node in graph.node if node.op_type == "Softmax"}
            | {output.name for output in graph.output})


def _draw(role: tuple, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    op_type, index, node = role
    attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if (op_type, index) == ("Conv", 1):
        return _he_normal(rng, shape, fan_in=int(np.prod(shape[1:])))
    if (op_type, index) == ("Gemm", 1):
        return _he_normal(rng, shape, fan_in=shape[1] if attributes.get("transB", 0) else shape[0])
    if (op_type, index) in {("Conv", 2), ("Gemm", 2)}:
        return 0.01 * rng.standard_normal(shape, dtype=np.float32)
    if (op_type, index) in {("BatchNormalization", 1), ("Mul", 1)}:
        return rng.uniform(0.8, 1.2, shape).astype(np.float32)
    if (op_type, index) in {("BatchNormalization", 2), ("Add", 1)}:
        return 0.1 * rng.standard_normal(shape, dtype=np.float32)
    if (op_type, index) == ("BatchNormalization", 3):
        return np.zeros(shape, np.float32)  # calibrated below
    if (op_type, index) == ("BatchNormalization", 4):
        return np.ones(shape, np.float32)  # calibrated below
    raise AssertionError(f"no rule for a float initializer of shape {shape} read by {op_type} input {index}")


def _he_normal(rng: np.random.Generator, shape: tuple[int, ...], fan_in: int) -> np.ndarray:
    values = rng.standard_normal(shape, dtype=np.float32)
    values *= np.float32(np.sqrt(2.0 / fan_in))
    return values


def _calibrate(model: onnx.ModelProto, weights: dict[str, np.ndarray], seed: int) -> None:
    """Set every BatchNorm's mean and var to the statistics of its input on one N(0, 1) batch, and scale each
    classifier so that its outputs (the logits) have standard deviation LOGIT_STD on that batch.

    One onnxruntime run of a copy whose BatchNorms normalise with their batch's statistics: on the calibration
    batch that copy computes exactly what the calibrated model computes, so every BatchNorm sees the input it
    will see, and the logits are the calibrated model's logits. The weights are fed as inputs."""
    classifiers = [node for node in model.graph.node
                   if node.op_type in {"Conv", "Gemm"} and node.output[0] in _classifier_outputs(model.graph)]
    calibration = onnx.ModelProto()
    calibration.CopyFrom(model)
    graph = calibration.graph
    nodes, statistics = [], []
    for node in graph.node:
        if node.op_type != "BatchNormalization":
            nodes.append(node)
            continue
        mean, var, normalising = _batch_statistics_nodes(node, graph)
        nodes.extend(normalising)
        statistics.append((node.input[3], node.input[4], mean, var))
    if not classifiers and not statistics:
        return  # SqueezeNet: no BatchNorm, and its classifier (a Conv) is followed by Relu and a global pool
    del graph.node[:], graph.output[:]
    graph.node.extend(nodes)
    graph.output.extend(helper.make_tensor_value_info(name, TensorProto.FLOAT, None)
                        for name in [node.output[0] for node in classifiers]
                        + [name for *_, mean, var in statistics for name in (mean, var)])
    feeds = {**random_feeds(model, seed + 1_000_003, weights), **weights}
    initialized = {init.name for init in graph.initializer}
    measured = run_onnxruntime(calibration, {value.name: feeds[value.name] for value in graph.input
                                             if value.name not in initialized})
    assert len({name for *names, _, _ in statistics for name in names}) == 2 * len(statistics), "shared statistics"
    for mean_name, var_name, mean, var in statistics:
        weights[mean_name] = measured[mean].reshape(-1)
        weights[var_name] = measured[var].reshape(-1)
    for node in classifiers:
        factor = np.float32(LOGIT_STD / float(measured[node.output[0]].std()))
        for name in {_source(model.graph, name) for name in node.input[1:]}:
            weights[name] = weights[name] * factor


def _batch_statistics_nodes(node: onnx.NodeProto, graph: onnx.GraphProto) -> tuple[str, str, list]:
    """Opset-9 nodes computing node's output with the batch's own mean and (biased) variance per channel."""
    x, scale, bias = node.input[:3]
    epsilon = next((a.f for a in node.attribute if a.name == "epsilon"), _DEFAULT_BN_EPSILON)
    prefix = f"calibration/{node.output[0]}"
    graph.initializer.append(numpy_helper.from_array(np.array(epsilon, np.float32), f"{prefix}/epsilon"))

    def name(suffix: str) -> str:
        return f"{prefix}/{suffix}"

    make = helper.make_node
    nodes = [
        make("ReduceMean", [x], [name("mean")], axes=[0, 2, 3], keepdims=1),
        make("Sub", [x, name("mean")], [name("centred")]),
        make("Mul", [name("centred"), name("centred")], [name("squared")]),
        make("ReduceMean", [name("squared")], [name("var")], axes=[0, 2, 3], keepdims=1),
        make("Add", [name("var"), name("epsilon")], [name("var+epsilon")]),
        make("Sqrt", [name("var+epsilon")], [name("std")]),
        make("Div", [name("centred"), name("std")], [name("normalised")]),
        make("Unsqueeze", [scale], [name("scale")], axes=[1, 2]),
        make("Unsqueeze", [bias], [name("bias")], axes=[1, 2]),
        make("Mul", [name("normalised"), name("scale")], [name("scaled")]),
        make("Add", [name("scaled"), name("bias")], [node.output[0]]),
    ]
    return name("mean"), name("var"), nodes
