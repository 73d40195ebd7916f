"""Model-local ONNX functions (ModelProto.functions), inlined into the main graph before it is run or converted.

PyTorch's TorchScript exporter writes one function per module class with `export_modules_as_functions`
(`torchvision.models.resnet.BasicBlock`, `torch.nn.modules.conv.Conv2d`, ...): the graph is then a single
call node, the layers live in nested function bodies, and attribute values reach them through references
(`pads` of a Conv referring to the Conv2d call's `inferred::Conv_pads`). onnxruntime and OpenVINO inline
such functions; so does poolir, as the ONNX spec defines a call:

- a node calls the function whose (domain, name, overload) match its (domain, op_type, overload); a call in the
  default domain is always the standard operator;
- the function's formal inputs and outputs are bound to the call's (a missing trailing one is "", omitted);
  every other value of the body gets a fresh name, unique in the graph, under the call's node name;
- an attribute of a body node that refers to the call's (`ref_attr_name`) takes the call's value, else the
  function's default (`attribute_proto`), else the attribute is left out;
- a function output that is one of its inputs is that input (as a graph may list an input among its outputs;
  onnxruntime refuses such a function when it loads the model);
- a body node's default-domain op runs at the model's opset. A function that imports another default-domain
  version is inlined only when each of its ops has the same version at both (onnx.defs), as onnx's checker
  requires; onnxruntime runs such a function anyway.

Hostile files: a function that calls itself, directly or not, is refused, and so are calls nested more than
MAX_CALL_DEPTH deep and a graph that would grow past MAX_INLINED_NODES (20 functions calling the next one twice
would make a million nodes). check_functions refuses all of these when the file is read, before onnx's own
checker and shape inference see the functions.
"""

from __future__ import annotations

import os

import onnx
from onnx import defs

from poolir.ir.errors import InvalidModelError, UnsupportedError, node_label, printable
from poolir.runtime.onnx_opsets import DEFAULT_DOMAINS, imported_opsets
from poolir.runtime.onnx_subgraphs import nested_nodes, subgraphs

MAX_INLINED_NODES = 1 << 18
# Calls nested deeper than this are refused, as onnx's checker refuses them ("Function call chain depth exceeds
# limit (100)"); onnxruntime crashed (a segmentation fault) on a chain of 5,000.
MAX_CALL_DEPTH = 100

_Key = tuple  # (domain, name, overload)


def check_functions(model: onnx.ModelProto, source: str | os.PathLike | None = None) -> None:
    """Refuse what inline_functions would refuse, without inlining (load_onnx: before onnx's checker and shape
    inference, which would recurse forever on a function that calls itself and expand a doubling chain)."""
    if model.functions:
        _function_plan(model, source)


def inline_functions(model: onnx.ModelProto, source: str | os.PathLike | None = None) -> onnx.ModelProto:
    """`model` itself when it has no model-local functions, else a copy with every call inlined and no functions.
    Raises InvalidModelError for a malformed or recursive function, UnsupportedError for one poolir cannot read
    at the model's opset (and for a graph that would exceed MAX_INLINED_NODES)."""
    if not model.functions:
        return model
    functions = _function_plan(model, source)
    graph = model.graph
    taken = {"", *(v.name for v in (*graph.input, *graph.output, *graph.value_info)),
             *(init.name for init in graph.initializer), *(name for node in nested_nodes(graph)
                                                           for name in (*node.input, *node.output))}
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    del copy.functions[:]
    _expand_calls(copy.graph, functions, taken)
    return copy


def _expand_calls(graph: onnx.GraphProto, functions, taken: set[str]) -> None:
    """Expand, in place, the calls among the graph's nodes, then those inside every graph its nodes hold (an If's
    branch may call a function; so may a branch inside a function's body), depth first."""
    nodes: list[onnx.NodeProto] = []
    for index, node in enumerate(graph.node):
        if _callee(node, functions) is None:
            kept = onnx.NodeProto()
            kept.CopyFrom(node)
            nodes.append(kept)
        else:
            _expand(node, node.name or f"{node.op_type}_{index}", functions, taken, nodes)
    for node in nodes:
        for inner in subgraphs(node):
            _expand_calls(inner, functions, taken)
    del graph.node[:]
    graph.node.extend(nodes)


def _function_plan(model: onnx.ModelProto, source) -> dict[_Key, onnx.FunctionProto]:
    """The function table, after every check: unique names, no call cycle, the inlined size, the opsets."""
    functions = _function_table(model, source)
    sizes = _inlined_sizes(functions, source)
    total = sum(sizes[key] if (key := _callee(node, functions)) is not None else 1
                for node in nested_nodes(model.graph))
    if total > MAX_INLINED_NODES:
        raise UnsupportedError(f"the graph would have {total} nodes once its functions are inlined, more than "
                               f"{MAX_INLINED_NODES}", file=source)
    _check_opsets(model, functions, source)
    _check_calls(model, functions, source)
    return functions


def _check_calls(model: onnx.ModelProto, functions: dict[_Key, onnx.FunctionProto], source) -> None:
    """A call gives at most as many inputs and outputs as its function declares (onnxruntime refuses more; inlined,
    the extra outputs would be values nothing computes)."""
    calls = (*nested_nodes(model.graph), *(node for function in functions.values() for node in _body_nodes(function)))
    for node in calls:
        key = _callee(node, functions)
        if key is None:
            continue
        function = functions[key]
        for kind, given, declared in (("inputs", node.input, function.input), ("outputs", node.output,
                                                                                function.output)):
            if len(given) > len(declared):
                raise InvalidModelError(f"the call gives {len(given)} {kind}; model-local function "
                                        f"'{_describe(key)}' declares {len(declared)}", file=source,
                                        where=node_label(node.name or node.op_type, node.op_type))


def _inside(node: onnx.NodeProto):
    for graph in subgraphs(node):
        yield from nested_nodes(graph)


def _describe(key: _Key) -> str:
    domain, name, overload = key
    return printable(f"{domain}.{name}" + (f":{overload}" if overload else ""))


def _function_table(model: onnx.ModelProto, source) -> dict[_Key, onnx.FunctionProto]:
    functions: dict[_Key, onnx.FunctionProto] = {}
    for function in model.functions:
        key = (function.domain, function.name, function.overload)
        if key in functions:
            raise InvalidModelError(f"two model-local functions are named '{_describe(key)}'", file=source)
        functions[key] = function
    return functions


def _callee(node: onnx.NodeProto, functions: dict[_Key, onnx.FunctionProto]) -> _Key | None:
    if (node.domain or "") in DEFAULT_DOMAINS:
        return None
    key = (node.domain, node.op_type, node.overload)
    return key if key in functions else None


def _inlined_sizes(functions: dict[_Key, onnx.FunctionProto], source) -> dict[_Key, int]:
    """Nodes each function becomes once inlined (capped just past MAX_INLINED_NODES); refuses call cycles and
    chains deeper than MAX_CALL_DEPTH. An explicit depth-first walk: a chain of thousands of functions in a
    hostile file must not exhaust Python's stack before the depth is known."""
    sizes: dict[_Key, int] = {}
    depths: dict[_Key, int] = {}  # the longest chain of calls a function starts, itself included
    for root in functions:
        if root in sizes:
            continue
        path, on_path = [root], {root}
        pending = [_body_nodes(functions[root])]
        while pending:
            node = next(pending[-1], None)
            if node is not None:
                key = _callee(node, functions)
                if key is None or key in sizes:
                    continue
                if key in on_path:
                    cycle = " -> ".join(_describe(k) for k in path[path.index(key):] + [key])
                    raise InvalidModelError(f"model-local function '{_describe(key)}' calls itself ({cycle})",
                                            file=source)
                path.append(key)
                on_path.add(key)
                pending.append(_body_nodes(functions[key]))
                continue
            pending.pop()
            done = path.pop()
            on_path.discard(done)
            callees = [_callee(n, functions) for n in _body_nodes(functions[done])]
            depths[done] = 1 + max((depths[key] for key in callees if key is not None), default=0)
            if depths[done] > MAX_CALL_DEPTH:
                raise UnsupportedError(f"model-local functions call each other more than {MAX_CALL_DEPTH} deep "
                                       f"(from '{_describe(done)}')", file=source)
            sizes[done] = min(sum(1 if key is None else sizes[key] for key in callees), MAX_INLINED_NODES + 1)
    return sizes


def _body_nodes(function: onnx.FunctionProto):
    """The function's nodes and those of the graphs they hold (a call inside an If's branch is a call too)."""
    for node in function.node:
        yield node
        yield from _inside(node)


def _check_opsets(model: onnx.ModelProto, functions: dict[_Key, onnx.FunctionProto], source) -> None:
    """A function's default-domain nodes will run at the model's opset: refuse one whose ops differ there."""
    model_opset = imported_opsets(model).get("")
    for key, function in functions.items():
        own = imported_opsets(function).get("", model_opset)
        if own == model_opset or model_opset is None:
            continue
        for node in function.node:
            if (node.domain or "") not in DEFAULT_DOMAINS:
                continue
            versions = _since(node.op_type, own), _since(node.op_type, model_opset)
            if versions[0] != versions[1] or versions[0] is None:
                raise UnsupportedError(
                    f"model-local function '{_describe(key)}' imports opset {own} and the model {model_opset}, where "
                    f"{printable(node.op_type)} is another version ({_version_text(versions[0])} and "
                    f"{_version_text(versions[1])}); a function runs at the model's opset, and onnx's checker "
                    "refuses it too", file=source, where=node_label(node.name or node.op_type, node.op_type))


def _version_text(version: int | None) -> str:
    return "none" if version is None else str(version)


def _since(op_type: str, opset: int) -> int | None:
    try:
        return defs.get_schema(op_type, opset, "").since_version
    except Exception:  # onnx.defs.SchemaError: no such op at that opset
        return None


def _expand(call: onnx.NodeProto, prefix: str, functions, taken: set[str], nodes: list[onnx.NodeProto]) -> None:
    """Append the body of the function `call` calls, with every call inside it expanded too (explicit stack)."""
    stack = [_frame(call, prefix, functions, taken, nodes)]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
            continue
        inner, inner_prefix = item
        stack.append(_frame(inner, inner_prefix, functions, taken, nodes))


def _frame(call: onnx.NodeProto, prefix: str, functions, taken: set[str], nodes: list[onnx.NodeProto]):
    """Yield (resolved nested call, its prefix) for the caller to expand; append every other body node."""
    key = _callee(call, functions)
    function = functions[key]
    names = {formal: (call.input[k] if k < len(call.input) else "") for k, formal in enumerate(function.input)}
    bound_outputs = {formal: call.output[k] for k, formal in enumerate(function.output)
                     if k < len(call.output) and call.output[k]}
    produced = {name for node in function.node for name in node.output if name}
    for formal, actual in bound_outputs.items():
        if formal not in produced:
            if formal not in names:
                raise InvalidModelError(f"model-local function '{_describe(key)}' never computes its output "
                                        f"'{printable(formal)}'", where=node_label(prefix, call.op_type))
            # An output that is one of the inputs, passed through: an Identity binds it to the call's name.
            nodes.append(onnx.helper.make_node("Identity", [names[formal]], [actual], name=f"{prefix}/{formal}"))
    names.update((formal, actual) for formal, actual in bound_outputs.items() if formal in produced)
    arguments = {attribute.name: attribute for attribute in call.attribute}
    defaults = {attribute.name: attribute for attribute in function.attribute_proto}

    def fresh(name: str) -> str:
        unique, count = f"{prefix}/{name}", 0
        while unique in taken:
            count += 1
            unique = f"{prefix}/{name}#{count}"
        taken.add(unique)
        return unique

    def renamed(name: str) -> str:
        if not name:  # an omitted optional input or output stays omitted
            return ""
        if name not in names:
            names[name] = fresh(name)
        return names[name]

    for index, body_node in enumerate(function.node):
        node = _instance(body_node, f"{prefix}/{body_node.name or f'{body_node.op_type}_{index}'}", renamed, fresh,
                         lambda reference: arguments.get(reference, defaults.get(reference)))
        if _callee(node, functions) is None:
            nodes.append(node)
        else:
            yield node, node.name


def _instance(body_node: onnx.NodeProto, name: str, renamed, fresh, argument) -> onnx.NodeProto:
    """A body node as inlined: values renamed (`renamed`), attribute references resolved (`argument`: the call's
    value or the function's default, None to leave the attribute out), and the same done inside its subgraphs (an
    If's branches), whose own values get fresh names (`fresh`) and whose outer reads are renamed like the body's."""
    node = onnx.NodeProto()
    node.CopyFrom(body_node)
    node.name = name
    node.input[:] = [renamed(value) for value in body_node.input]
    node.output[:] = [renamed(value) for value in body_node.output]
    del node.attribute[:]
    for attribute in body_node.attribute:
        if attribute.ref_attr_name:
            value = argument(attribute.ref_attr_name)
            if value is not None:
                resolved = node.attribute.add()
                resolved.CopyFrom(value)
                resolved.name = attribute.name
            continue
        copy = node.attribute.add()
        copy.CopyFrom(attribute)
        if attribute.type == onnx.AttributeProto.GRAPH:
            copy.g.CopyFrom(_graph_instance(attribute.g, name, renamed, fresh, argument))
        elif attribute.type == onnx.AttributeProto.GRAPHS:
            del copy.graphs[:]
            copy.graphs.extend(_graph_instance(graph, name, renamed, fresh, argument) for graph in attribute.graphs)
    return node


def _graph_instance(graph: onnx.GraphProto, prefix: str, outer_renamed, fresh, argument) -> onnx.GraphProto:
    local: dict[str, str] = {}

    def renamed(value: str) -> str:
        if not value:
            return ""
        if value in local:
            return local[value]
        return outer_renamed(value)

    copy = onnx.GraphProto()
    copy.CopyFrom(graph)
    for values in (copy.input, copy.initializer):
        for value in values:
            local[value.name] = value.name = fresh(value.name)
    del copy.node[:]
    for index, node in enumerate(graph.node):
        local.update((value, fresh(value)) for value in node.output if value)  # this graph's own values
        copy.node.append(_instance(node, f"{prefix}/{node.name or f'{node.op_type}_{index}'}", renamed, fresh,
                                   argument))
    for value in copy.output:
        value.name = renamed(value.name)
    del copy.value_info[:]
    return copy
