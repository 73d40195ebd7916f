"""One network under construction, named the way one of PyTorch's two ONNX exporters names things.

`Net` is a thin layer over onnx.helper: it collects nodes and initializers, draws weights from its seed, and
names nodes, values and parameters in its exporter's style, so that a graph built here reads like an export:

    torchscript   torch.onnx.export(..., dynamo=False), opset 17, IR version 8. Nodes are named by their module
                  scope, `/layer1/layer1.0/conv1/Conv` (a repeat in one scope gets `_1`, `_2`), each output
                  `<node name>_output_0`. Parameters keep their module path (`fc.weight`); the weights that
                  constant folding makes (a BatchNorm folded into the Conv before it) are called
                  `onnx::Conv_<n>` after torch's value numbers. Small tensors (Reshape targets, exponents) are
                  Constant nodes. Everything is stored inside the .onnx file.
    dynamo        torch.onnx.export(..., dynamo=True), opset 18, IR version 10. Nodes are `node_<Op>_<n>`, one
                  counter for the whole graph; the value an ATen op produces carries the FX node's name
                  (`conv2d`, `conv2d_1`, `relu`, `add_3`, `getitem`), the helpers an op needed are `val_<n>`.
                  Parameters and buffers keep their module path (`layer1.0.bn1.running_var`), small tensors are
                  Constant nodes, and the parameters are saved as external data (`<model>.onnx.data` beside
                  the .onnx), as export(..., external_data=True) saves them.

Both styles draw the same numbers in the same order from one seed, so a network's two styles compute the same
function: only the representation differs.
"""

from __future__ import annotations

import contextlib
import itertools
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

INPUT_NAME = "x"


@dataclass(frozen=True)
class ExporterStyle:
    name: str
    opset: int
    ir_version: int
    producer_version: str


STYLES = {
    "torchscript": ExporterStyle("torchscript", opset=17, ir_version=8, producer_version="2.5.0"),
    "dynamo": ExporterStyle("dynamo", opset=18, ir_version=10, producer_version="2.8.0"),
}


class Net:
    """A network under construction. Layers (see layers.py) call `op`, `param`, `const` and `shape_of`."""

    def __init__(self, name: str, style: str, seed: int, input_shape=(1, 3, 64, 64)):
        if style not in STYLES:
            raise ValueError(f"style must be one of {sorted(STYLES)}, not {style!r}")
        self.name = name
        self.style = STYLES[style]
        self.rng = np.random.default_rng(seed)
        self.input_shape = tuple(input_shape)
        self.x = INPUT_NAME
        self._nodes: list[onnx.NodeProto] = []
        self._initializers: list[onnx.TensorProto] = []
        self._outputs: list[tuple[str, list | None]] = []
        self._scope: list[str] = []
        self._node_names: Counter = Counter()
        self._fx_names: Counter = Counter()
        self._node_counter = itertools.count()
        self._value_counter = itertools.count()
        self._folded_counter = itertools.count(100)
        self._shapes: dict[str, tuple[int, ...]] = {}
        self._value_info: list[onnx.ValueInfoProto] = []

    @property
    def dynamo(self) -> bool:
        return self.style.name == "dynamo"

    # -- scopes and names ---------------------------------------------------------------------------------
    @contextlib.contextmanager
    def module(self, *segments: str):
        """Inside a module: torchscript's scope segment(s) for node names, the path for parameter names.

        A container's child is written as its qualified name, as torch writes it: module("layer1", "layer1.0")."""
        self._scope.extend(segments)
        try:
            yield
        finally:
            del self._scope[len(self._scope) - len(segments):]

    def module_path(self) -> str:
        """`layer1.0.downsample.0` for the scope ["layer1", "layer1.0", "downsample", "downsample.0"]: a
        container's child, written qualified, replaces the container's segment."""
        path: list[str] = []
        for segment in self._scope:
            if path and segment.startswith(path[-1] + "."):
                path[-1] = segment
            else:
                path.append(segment)
        return ".".join(path)

    def _node_name(self, op_type: str) -> str:
        if self.dynamo:
            return f"node_{op_type}_{next(self._node_counter)}"
        base = "".join(f"/{segment}" for segment in self._scope) + f"/{op_type}"
        count = self._node_names[base]
        self._node_names[base] += 1
        return base if count == 0 else f"{base}_{count}"

    def _value_name(self, node_name: str, index: int, aten: str | None) -> str:
        if not self.dynamo:
            return f"{node_name}_output_{index}"
        if aten is None or index > 0:
            return f"val_{next(self._value_counter)}"
        count = self._fx_names[aten]
        self._fx_names[aten] += 1
        return aten if count == 0 else f"{aten}_{count}"

    # -- graph content --------------------------------------------------------------------------------------
    def op(self, op_type: str, inputs, *, aten: str | None = None, outputs: int = 1, name: str | None = None,
           **attributes):
        """Append a node; returns its output name (or the list of names when outputs > 1).

        `aten` is the FX name of the ATen op this node finishes (dynamo names the value after it); `name`
        gives the (first) output its final name, as a graph output."""
        node_name = self._node_name(op_type)
        output_names = [self._value_name(node_name, i, aten) for i in range(outputs)]
        if name is not None:
            output_names[0] = name
        self._nodes.append(helper.make_node(op_type, list(inputs), output_names, name=node_name, **attributes))
        return output_names[0] if outputs == 1 else output_names

    def rename(self, value: str, name: str) -> str:
        """Give a value nothing reads yet its final name (a graph output's)."""
        assert not any(value in node.input for node in self._nodes), f"{value} is already read"
        for node in self._nodes:
            if value in node.output:
                node.output[list(node.output).index(value)] = name
                if value in self._shapes:
                    self._shapes[name] = self._shapes.pop(value)
                return name
        raise KeyError(value)

    def param(self, leaf: str, array: np.ndarray) -> str:
        """A parameter or buffer of the current module, named by its path (`layer1.0.bn1.running_var`)."""
        path = self.module_path()
        return self._initializer(f"{path}.{leaf}" if path else leaf, array)

    def folded_param(self, consumer: str, array: np.ndarray) -> str:
        """A tensor torchscript's constant folding made (`onnx::Conv_123`)."""
        return self._initializer(f"onnx::{consumer}_{next(self._folded_counter)}", array)

    def const(self, value, dtype=np.int64) -> str:
        """A small constant as a Constant node (shapes, axes, exponents)."""
        node_name = self._node_name("Constant")
        output = f"val_{next(self._value_counter)}" if self.dynamo else f"{node_name}_output_0"
        tensor = numpy_helper.from_array(np.asarray(value, dtype=dtype))
        self._nodes.append(helper.make_node("Constant", [], [output], name=node_name, value=tensor))
        return output

    def _initializer(self, name: str, array: np.ndarray) -> str:
        assert all(init.name != name for init in self._initializers), f"two parameters named {name}"
        self._initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    # -- weights --------------------------------------------------------------------------------------------
    def he_normal(self, *shape: int) -> np.ndarray:
        """Kaiming-normal for a weight whose fan-in is the product of all dimensions but the first."""
        fan_in = int(np.prod(shape[1:]))
        return (self.rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    def uniform(self, low: float, high: float, *shape: int) -> np.ndarray:
        return self.rng.uniform(low, high, shape).astype(np.float32)

    def normal(self, std: float, *shape: int) -> np.ndarray:
        return (std * self.rng.standard_normal(shape)).astype(np.float32)

    # -- shapes ---------------------------------------------------------------------------------------------
    def shape_of(self, value: str) -> tuple[int, ...]:
        """The static shape of a value so far, by ONNX shape inference over the graph built until now."""
        if value not in self._shapes:
            # data_prop: a Reshape to a Shape computed in the graph (GroupNorm's) keeps its dims known
            inferred = onnx.shape_inference.infer_shapes(self._model(outputs=[]), data_prop=True)
            for info in [*inferred.graph.value_info, *inferred.graph.input]:
                dims = info.type.tensor_type.shape.dim
                if all(d.HasField("dim_value") for d in dims):
                    self._shapes[info.name] = tuple(d.dim_value for d in dims)
        return self._shapes[value]

    def set_shape(self, value: str, shape) -> str:
        """Declare a value's shape in the graph's value_info (as both exporters do for every value) where ONNX
        shape inference cannot see it: a Reshape to a computed shape."""
        self._value_info.append(helper.make_tensor_value_info(value, TensorProto.FLOAT, list(shape)))
        self._shapes[value] = tuple(shape)
        return value

    def channels(self, value: str) -> int:
        return self.shape_of(value)[1]

    # -- the result -----------------------------------------------------------------------------------------
    def output(self, name: str, shape=None) -> None:
        """Declare a graph output (a value made with op(..., name=...) or renamed). Its shape is ONNX shape
        inference's unless given (dims may be names, as for a dynamic axis)."""
        self._outputs.append((name, shape))

    def finish(self, folder: str | Path | None = None):
        """The checked model: a ModelProto (torchscript), or the path of the .onnx saved in `folder` with its
        parameters in `<name>.onnx.data` beside it (dynamo)."""
        model = self._model([name for name, _ in self._outputs])
        inferred = {value.name: value for value in
                    onnx.shape_inference.infer_shapes(model, strict_mode=True).graph.output}
        del model.graph.output[:]
        model.graph.output.extend(inferred[name] if shape is None else
                                  helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
                                  for name, shape in self._outputs)
        if not self.dynamo:
            onnx.checker.check_model(model, full_check=True)
            return model
        if folder is None:
            raise ValueError("the dynamo style saves its weights as external data: give a folder")
        path = Path(folder) / f"{self.name}.onnx"
        (path.parent / f"{self.name}.onnx.data").unlink(missing_ok=True)  # onnx.save appends to it
        onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                  location=f"{self.name}.onnx.data", size_threshold=0)
        onnx.checker.check_model(str(path), full_check=True)
        return path

    def _model(self, outputs: list[str]) -> onnx.ModelProto:
        graph = helper.make_graph(
            self._nodes, "main_graph",
            [helper.make_tensor_value_info(self.x, TensorProto.FLOAT, self.input_shape)],
            [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in outputs],
            initializer=self._initializers, value_info=self._value_info)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.style.opset)],
                                  producer_name="pytorch", producer_version=self.style.producer_version)
        model.ir_version = self.style.ir_version
        return model
