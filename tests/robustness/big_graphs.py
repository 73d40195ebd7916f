"""Generators of large hostile graphs (built in the tests, never committed): the graph-size cases of the
security pass, each of which once took quadratic time. See test_graph_size.py."""

from __future__ import annotations

from pathlib import Path

import onnx
from onnx import TensorProto, helper


def _port(port_id: int, dims=(1, 2), names: str = "") -> str:
    named = f' names="{names}"' if names else ""
    return f'<port id="{port_id}" precision="FP32"{named}>' + "".join(f"<dim>{d}</dim>" for d in dims) + "</port>"


def _parameter(layer_id: int, name: str) -> str:
    return (f'<layer id="{layer_id}" name="{name}" type="Parameter" version="opset1"><data shape="1,2" '
            f'element_type="f32"/><output>{_port(0, names=name)}</output></layer>')


def _result(layer_id: int, name: str, dims=(1, 2)) -> str:
    return (f'<layer id="{layer_id}" name="{name}" type="Result" version="opset1"><input>{_port(0, dims)}</input>'
            "</layer>")


def _net(layers: list[str], edges: list[tuple[int, int, int, int]]) -> str:
    edge_text = "".join(f'<edge from-layer="{a}" from-port="{b}" to-layer="{c}" to-port="{d}"/>'
                        for a, b, c, d in edges)
    return f'<?xml version="1.0"?>\n<net name="big" version="11"><layers>{"".join(layers)}</layers>' \
           f"<edges>{edge_text}</edges></net>\n"


def concat_of_many_inputs(folder: Path, count: int) -> Path:
    """One Parameter feeding a Concat through `count` input ports (an IR Concat with `count` inputs)."""
    concat_inputs = "".join(_port(i) for i in range(count))
    concat = (f'<layer id="1" name="cat" type="Concat" version="opset1"><data axis="1"/><input>{concat_inputs}'
              f"</input><output>{_port(count, (1, 2 * count), 'y')}</output></layer>")
    edges = [(0, 0, 1, i) for i in range(count)] + [(1, count, 2, 0)]
    path = folder / f"concat_{count}.xml"
    path.write_text(_net([_parameter(0, "x"), concat, _result(2, "y_result", (1, 2 * count))], edges))
    return path


def parameter_to_many_results(folder: Path, count: int) -> Path:
    """One Parameter feeding `count` Result layers, each returned under its own layer name (the Parameter's port
    has no tensor name: two Results on one named tensor are refused, ir.validate.check_names)."""
    layers = [_parameter(0, "x").replace(' names="x"', "")] + [_result(i + 1, f"r{i}") for i in range(count)]
    path = folder / f"fanout_{count}.xml"
    path.write_text(_net(layers, [(0, 0, i + 1, 0) for i in range(count)]))
    return path


def identity_chain_reversed(folder: Path, count: int) -> Path:
    """An ONNX chain of `count` Identity nodes stored in reverse order (each node before its producer)."""
    nodes = [helper.make_node("Identity", [f"t{i}"], [f"t{i + 1}"], name=f"n{i}") for i in range(count)]
    graph = helper.make_graph(list(reversed(nodes)), "chain",
                              [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [1, 2])],
                              [helper.make_tensor_value_info(f"t{count}", TensorProto.FLOAT, [1, 2])])
    path = folder / f"chain_{count}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10), path)
    return path


def many_parameters_to_results(folder: Path, count: int) -> Path:
    """`count` Parameters, each feeding its own Result (distinct input and output names)."""
    layers = [_parameter(i, f"x{i}") for i in range(count)]
    layers += [_result(count + i, f"r{i}") for i in range(count)]
    path = folder / f"pairs_{count}.xml"
    path.write_text(_net(layers, [(i, 0, count + i, 0) for i in range(count)]))
    return path
