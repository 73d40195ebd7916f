"""The pieces of graph_fuzz's random graphs: the tensors a graph under construction holds, the Builder that adds
nodes, initializers and feeds to it, and the predicates the steps pick their operands by."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper, numpy_helper

F32, F16, I32, I64, BOOL = (np.dtype(t) for t in (np.float32, np.float16, np.int32, np.int64, np.bool_))


@dataclass
class Tensor:
    name: str
    shape: list[int]          # the run-time dims (the feeds are drawn in these)
    dtype: np.dtype
    value: np.ndarray | None = None   # known at build time (constants and shape arithmetic)
    exact: bool = True   # every engine computes the same bits (no transcendental, no reordered sum, no f16)


@dataclass
class Graph:
    seed: int
    opset: int
    model: onnx.ModelProto
    feeds: dict
    ops: list
    half: bool = False   # an f16 tensor somewhere: onnxruntime and OpenVINO skip some of its roundings


@dataclass
class Builder:
    rng: np.random.Generator
    opset: int
    nodes: list = field(default_factory=list)
    inputs: list = field(default_factory=list)
    initializers: list = field(default_factory=list)
    feeds: dict = field(default_factory=dict)
    pool: list = field(default_factory=list)   # tensors a node may consume
    count: int = 0

    # -- drawing
    def int(self, low, high):
        return int(self.rng.integers(low, high + 1))

    def pick(self, options):
        return options[int(self.rng.integers(len(options)))]

    def coin(self, p=0.5):
        return bool(self.rng.random() < p)

    def fresh(self, prefix="t"):
        self.count += 1
        return f"{prefix}{self.count}"

    def values(self, shape, dtype):
        if dtype == BOOL:
            return self.rng.random(shape) < 0.5
        if dtype.kind == "i":
            return self.rng.integers(-6, 7, size=shape).astype(dtype)
        x = self.rng.standard_normal(shape) * 2
        return np.where(self.rng.random(shape) < 0.3, np.round(x * 2) / 2, x).astype(dtype)

    # -- graph pieces
    def feed(self, shape, dtype, dynamic=()):
        name = self.fresh("in")
        dims = [f"d{name}_{i}" if i in dynamic else d for i, d in enumerate(shape)]
        self.inputs.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(dtype), dims))
        self.feeds[name] = self.values(shape, dtype)
        tensor = Tensor(name, list(shape), dtype)
        self.pool.append(tensor)
        return tensor

    def const(self, array, as_node=False):
        array = np.asarray(array)
        name = self.fresh("c")
        if as_node:
            self.nodes.append(helper.make_node("Constant", [], [name], name=f"n_{name}",
                                               value=numpy_helper.from_array(array, name)))
        else:
            self.initializers.append(numpy_helper.from_array(array, name))
        return Tensor(name, list(array.shape), array.dtype, array)

    def ints(self, values):
        return self.const(np.array(values, np.int64), as_node=self.coin(0.3))

    def node(self, op, inputs, shape, dtype, value=None, outputs=1, keep=True, **attrs):
        names = [self.fresh() for _ in range(outputs)]
        self.nodes.append(helper.make_node(op, [t.name if t else "" for t in inputs], names,
                                           name=f"n_{names[0]}", **attrs))
        shapes = shape if outputs > 1 else [shape]
        exact = op not in INEXACT and all(t is None or t.exact for t in inputs) and dtype != F16
        made = [Tensor(n, list(s), dtype, value, exact) for n, s in zip(names, shapes)]
        if keep:
            self.pool.extend(made)
        return made if outputs > 1 else made[0]

    def choose(self, test=lambda t: True):
        options = [t for t in self.pool if test(t)]
        return self.pick(options[-4:] + options) if options else None  # favour recent tensors: chains

    def axes_arg(self, op, axes, first_input_opset):
        """Axes as an input (from `first_input_opset`) or an attribute."""
        if self.opset >= first_input_opset:
            return [self.ints(axes)], {}
        return [], {"axes": list(axes)}


# Ops whose last bits differ between engines (transcendentals, sums in another order, a Divide OpenVINO may
# turn into a product by the reciprocal): a Floor, Ceil, comparison or Cast to an integer after one can turn
# an ulp into a whole unit, so those take exact tensors only.
INEXACT = {"Erf", "Tanh", "Sigmoid", "Exp", "Softmax", "LogSoftmax", "LRN", "LayerNormalization",
           "BatchNormalization", "MatMul", "Gemm", "Conv", "AveragePool", "GlobalAveragePool", "ReduceMean",
           "ReduceSum", "ReduceProd", "Pow", "HardSwish", "HardSigmoid", "Gelu", "Mean", "Sum", "Reciprocal",
           "Sqrt", "Div", "LeakyRelu", "PRelu", "Mul"}


FLOAT = lambda t: t.dtype.kind == "f"  # noqa: E731


STEADY = lambda t: t.exact or t.dtype.kind != "f"  # noqa: E731


SMALL = lambda t: int(np.prod(t.shape)) <= 512  # noqa: E731


def broadcast_partner(b: Builder, x: Tensor):
    """A shape that broadcasts with x's to x's: a suffix of it with some dims set to 1."""
    shape = x.shape[b.int(0, len(x.shape)):] if b.coin(0.4) else list(x.shape)
    return [1 if b.coin(0.3) else d for d in shape]
