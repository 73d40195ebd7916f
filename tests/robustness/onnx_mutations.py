"""Mutations of whole ONNX networks for network_fuzz.py: node attributes, initializers (dims, raw_data length,
data type), external data references (absolute, '..', missing, a symlink out, lying offset/length), value_info
and graph input/output declarations that lie, opset imports, and the graph's wiring.

Each mutation changes the ModelProto (loaded without its external data, which stays a file beside it) and may
add files to the mutant's folder; it returns a short description of what it did.
"""

from __future__ import annotations

import random
from pathlib import Path

import onnx
from onnx import AttributeProto, TensorProto, helper

from tests.robustness.network_mutations import INTS

TYPES = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.BFLOAT16, TensorProto.INT64,
         TensorProto.INT32, TensorProto.INT8, TensorProto.UINT8, TensorProto.BOOL, TensorProto.STRING,
         TensorProto.UNDEFINED, TensorProto.COMPLEX64, TensorProto.FLOAT8E4M3FN, 999)


def _node(rng, model):
    node = rng.choice(list(model.graph.node))
    return node, f"node {node.name!r} ({node.op_type})"


def onnx_attribute(rng, model, folder) -> str:
    node, label = _node(rng, model)
    attributes = list(node.attribute)
    if not attributes or rng.random() < 0.15:
        name = rng.choice(("axis", "group", "kernel_shape", "pads", "strides", "perm", "to", "epsilon", "bogus"))
        node.attribute.append(helper.make_attribute(name, rng.choice((1, -1, [0, 1], 2.5, "x"))))
        return f"{label} attribute {name} added"
    attribute = rng.choice(attributes)
    choice = rng.randrange(6)
    if choice == 0:
        node.attribute.remove(attribute)
        return f"{label} attribute {attribute.name} removed"
    if attribute.type == AttributeProto.INT and choice < 4:
        attribute.i = rng.choice(INTS[1:-4] + (2**63 - 1, -(2**63)))
        return f"{label} {attribute.name}={attribute.i}"
    if attribute.type == AttributeProto.INTS and choice < 4:
        values = list(attribute.ints)
        if choice == 1 and values:
            values[rng.randrange(len(values))] = rng.choice(INTS[1:-4])
        else:
            length = max(0, rng.choice((0, len(values) - 1, len(values) + 1, 70)))
            values = [rng.choice((0, 1, 2, 3, -1)) for _ in range(length)]
        attribute.ClearField("ints")
        attribute.ints.extend(values)
        return f"{label} {attribute.name}={values}"
    if attribute.type == AttributeProto.FLOAT and choice < 4:
        attribute.f = rng.choice((0.0, -1.0, float("nan"), float("inf"), 1e38, -1e-45))
        return f"{label} {attribute.name}={attribute.f}"
    if attribute.type == AttributeProto.STRING and choice < 4:
        attribute.s = rng.choice((b"", b"SAME_UPPER", b"VALID", b"bogus", b"\xff\xfe", b"constant", b"reflect"))
        return f"{label} {attribute.name}={attribute.s!r}"
    # the wrong attribute type
    replacement = helper.make_attribute(attribute.name, rng.choice((1.5, "abc", [1.0, 2.0], 3, [1, 2, 3])))
    node.attribute.remove(attribute)
    node.attribute.append(replacement)
    return f"{label} {attribute.name} of the wrong type ({AttributeProto.AttributeType.Name(replacement.type)})"


def onnx_initializer(rng, model, folder) -> str:
    tensor = rng.choice(list(model.graph.initializer))
    choice = rng.randrange(5)
    if choice == 0:
        dims = list(tensor.dims)
        if dims and rng.random() < 0.6:
            dims[rng.randrange(len(dims))] = rng.choice((0, -1, 1, 2**31, 2**40, dims[0] + 1))
        else:
            dims = dims[:-1] if dims and rng.random() < 0.5 else dims + [rng.choice((1, 2))]
        tensor.ClearField("dims")
        tensor.dims.extend(dims)
        return f"initializer {tensor.name!r} dims={dims}"
    if choice == 1 and tensor.HasField("raw_data"):
        length = len(tensor.raw_data)
        tensor.raw_data = tensor.raw_data[:rng.randrange(length + 1)] if rng.random() < 0.6 else \
            tensor.raw_data + bytes(rng.randrange(1, 9))
        return f"initializer {tensor.name!r} raw_data {len(tensor.raw_data)} bytes (was {length})"
    if choice == 2:
        tensor.data_type = rng.choice(TYPES)
        return f"initializer {tensor.name!r} data_type={tensor.data_type}"
    if choice == 3 and tensor.HasField("raw_data") and len(tensor.raw_data) >= 4:
        data = bytearray(tensor.raw_data)
        for _ in range(rng.randint(1, 8)):
            at = rng.randrange(len(data) - 3)
            data[at:at + 4] = rng.choice((b"\x00\x00\xc0\x7f", b"\x00\x00\x80\xff", b"\xff\xff\xff\x7f"))
        tensor.raw_data = bytes(data)
        return f"initializer {tensor.name!r} NaN/inf/huge values"
    tensor.name = rng.choice(("", "x", model.graph.initializer[0].name, tensor.name + "_renamed"))
    return f"an initializer renamed to {tensor.name!r}"


def onnx_external_data(rng, model, folder: Path) -> str:
    external = [t for t in model.graph.initializer if t.data_location == TensorProto.EXTERNAL]
    if not external:
        tensor = rng.choice(list(model.graph.initializer))  # a tensor moved to a file that is not there
        tensor.data_location = TensorProto.EXTERNAL
        tensor.ClearField("raw_data")
        tensor.external_data.add(key="location", value="missing.data")
        return f"initializer {tensor.name!r} points at missing external data"
    tensor = rng.choice(external)
    entries = {entry.key: entry for entry in tensor.external_data}
    location = entries["location"].value
    choice = rng.randrange(7)
    if choice == 0:
        entries["location"].value = str((folder / location).resolve())
    elif choice == 1:
        entries["location"].value = "../" + location
        (folder.parent / location).write_bytes((folder / location).read_bytes()[:64])
    elif choice == 2:
        entries["location"].value = "nowhere.data"
    elif choice == 3:
        outside = folder.parent / "outside.data"
        outside.write_bytes((folder / location).read_bytes())
        (folder / "link.data").symlink_to(outside)
        entries["location"].value = "link.data"
    elif choice == 4:
        entries["location"].value = rng.choice(("/etc/passwd", "/dev/zero", ".", "", "sub/../" + location))
    elif choice == 5 and "offset" in entries:
        entries["offset"].value = str(rng.choice((-1, 1, 2**62, 10**9, int(entries["offset"].value) + 3)))
    elif "length" in entries:
        entries["length"].value = str(rng.choice((0, -4, 2**62, int(entries["length"].value) * 2)))
    return f"initializer {tensor.name!r} external data {' '.join(f'{e.key}={e.value}' for e in tensor.external_data)}"


def onnx_value_info(rng, model, folder) -> str:
    pools = [("input", model.graph.input), ("output", model.graph.output), ("value_info", model.graph.value_info)]
    kind, infos = rng.choice([p for p in pools if len(p[1])] or pools[:1])
    if kind == "value_info" or not len(infos) or rng.random() < 0.2:  # a lie about an intermediate
        node = rng.choice(list(model.graph.node))
        name = node.output[0]
        model.graph.value_info.append(helper.make_tensor_value_info(
            name, rng.choice(TYPES[:9]), rng.choice(([1], [2, 3], [], None, [0, 0, 0, 0], ["n", 7]))))
        return f"value_info for {name!r} lies"
    info = rng.choice(list(infos))
    tensor_type = info.type.tensor_type
    choice = rng.randrange(4)
    if choice == 0:
        tensor_type.elem_type = rng.choice(TYPES)
        return f"graph {kind} {info.name!r} elem_type={tensor_type.elem_type}"
    dims = tensor_type.shape.dim
    if choice == 1 and len(dims):
        dim = dims[rng.randrange(len(dims))]
        value = rng.choice((0, 1, 2, 5, 1000, -1, 2**40, "n", ""))
        if isinstance(value, str):
            dim.dim_param = value
        else:
            dim.dim_value = value
        return f"graph {kind} {info.name!r} a dim = {value!r}"
    if choice == 2:
        if len(dims) and rng.random() < 0.5:
            del dims[-1]
        else:
            dims.add().dim_value = 1
        return f"graph {kind} {info.name!r} rank {len(dims)}"
    info.name = rng.choice(("", "ghost", model.graph.node[0].output[0]))
    return f"graph {kind} renamed to {info.name!r}"


def onnx_opset(rng, model, folder) -> str:
    imports = model.opset_import
    choice = rng.randrange(5)
    if choice == 0:
        del imports[:]
        imports.append(helper.make_opsetid("com.example", 1))
    elif choice == 1:
        imports[0].version = rng.choice((0, 1, 6, 7, 9, 11, 13, 18, 23, 24, 1000, -1))
    elif choice == 2:
        imports.append(helper.make_opsetid("", rng.choice((1, 13, 1000))))
    elif choice == 3:
        model.ir_version = rng.choice((0, 1, 3, 11, 100, -1))
        return f"ir_version={model.ir_version}"
    else:
        node, label = _node(rng, model)
        node.domain = rng.choice(("com.microsoft", "ai.onnx.ml", "bogus", "ai.onnx"))
        return f"{label} domain={node.domain!r}"
    return "opset_import " + ", ".join(f"{o.domain or 'ai.onnx'}:{o.version}" for o in imports)


def onnx_wiring(rng, model, folder) -> str:
    nodes = model.graph.node
    node, label = _node(rng, model)
    choice = rng.randrange(6)
    if choice == 0 and len(node.input):
        node.input[rng.randrange(len(node.input))] = rng.choice(("ghost", "", nodes[-1].output[0]))
        return f"{label} input now {list(node.input)}"
    if choice == 1:
        index = list(nodes).index(node)
        del nodes[index]
        return f"{label} removed"
    if choice == 2:
        node.op_type = rng.choice(("Conv", "Gemm", "MatMul", "Concat", "Split", "Reshape", "Softmax", "Gather",
                                   "Pad", "Slice", "Where", "Cast", "Tile", "Expand", "Relu", "LRN", "Bogus", ""))
        return f"node {node.name!r} op_type now {node.op_type!r}"
    if choice == 3:
        order = list(nodes)
        rng.shuffle(order)
        del nodes[:]
        nodes.extend(order)
        return "nodes in a random order"
    if choice == 4:
        other = rng.choice(list(nodes))
        node.output[0] = other.output[0]
        return f"{label} output {node.output[0]!r} written twice"
    node.input.append(rng.choice(list(model.graph.input)).name if rng.random() < 0.5 else "")
    return f"{label} one input too many"


STRINGS = {"auto_pad": (b"NOTSET", b"SAME_UPPER", b"SAME_LOWER", b"VALID"), "mode": (b"constant", b"reflect", b"edge",
                                                                            b"wrap", b"DCR", b"CRD"),
           "direction": (b"LEFT", b"RIGHT")}


def onnx_plausible_attribute(rng, model, folder) -> str:
    """An attribute's value changed to one that is often still valid: an integer one off, 0/1/-1, another word."""
    node, label = _node(rng, model)
    if not len(node.attribute):
        return f"{label} has no attribute"
    attribute = rng.choice(list(node.attribute))
    if attribute.type == AttributeProto.INT:
        attribute.i = rng.choice((attribute.i + 1, attribute.i - 1, 0, 1, -1, 2))
        return f"{label} {attribute.name}={attribute.i}"
    if attribute.type == AttributeProto.INTS and len(attribute.ints):
        values = list(attribute.ints)
        index = rng.randrange(len(values))
        values[index] = rng.choice((values[index] + 1, values[index] - 1, 0, 1, -1, 2))
        attribute.ClearField("ints")
        attribute.ints.extend(values)
        return f"{label} {attribute.name}={values}"
    if attribute.type == AttributeProto.FLOAT:
        attribute.f = rng.choice((0.0, attribute.f * 2, -attribute.f, attribute.f + 1, 1e-7))
        return f"{label} {attribute.name}={attribute.f}"
    if attribute.type == AttributeProto.STRING:
        attribute.s = rng.choice(STRINGS.get(attribute.name, (attribute.s,)))
        return f"{label} {attribute.name}={attribute.s!r}"
    return f"{label} {attribute.name} kept"


def onnx_initializer_values(rng, model, folder) -> str:
    """One value of a small integer initializer (a shape, axes, pads, split lengths, indices) changed."""
    from onnx import numpy_helper

    small = [t for t in model.graph.initializer if t.data_type in (TensorProto.INT64, TensorProto.INT32)
             and t.data_location != TensorProto.EXTERNAL and 0 < len(t.dims) <= 1 and (not t.dims or t.dims[0] <= 8)]
    small += [t for t in model.graph.initializer if t.data_type in (TensorProto.INT64, TensorProto.INT32)
              and not len(t.dims) and t.data_location != TensorProto.EXTERNAL]
    for node in model.graph.node:  # and the values of Constant nodes
        for attribute in node.attribute:
            if attribute.name == "value" and attribute.t.data_type in (TensorProto.INT64, TensorProto.INT32):
                small.append(attribute.t)
    tensor = rng.choice(small)
    values = numpy_helper.to_array(tensor).copy()
    flat = values.reshape(-1)
    if not flat.size:
        return f"tensor {tensor.name!r} is empty"
    index = rng.randrange(flat.size)
    old = int(flat[index])
    flat[index] = rng.choice((old + 1, old - 1, 0, 1, -1, -old, old * 2, 2**31 - 1))
    tensor.CopyFrom(numpy_helper.from_array(values, tensor.name))
    return f"tensor {tensor.name!r} value {index}: {old} -> {int(flat[index])}"


def onnx_input_shape(rng, model, folder) -> str:
    """A graph input's dims changed to others a network could take (another size, a symbolic dim)."""
    info = rng.choice(list(model.graph.input))
    dims = info.type.tensor_type.shape.dim
    if not len(dims):
        return f"input {info.name!r} has no dims"
    dim = dims[rng.randrange(len(dims))]
    value = rng.choice((1, 2, 3, 5, 17, 31, 64, 65, 96, "batch", "height"))
    if isinstance(value, str):
        dim.dim_param = value
    else:
        dim.dim_value = value
    return f"input {info.name!r} dims {[d.dim_value or d.dim_param for d in dims]}"


ONNX_MUTATIONS = (onnx_attribute, onnx_attribute, onnx_attribute, onnx_initializer, onnx_initializer,
                  onnx_external_data, onnx_value_info, onnx_opset, onnx_wiring) + \
    (onnx_plausible_attribute, onnx_initializer_values, onnx_input_shape) * 4


def mutate_onnx(rng: random.Random, model: onnx.ModelProto, folder: Path, count: int) -> list[str]:
    done = []
    for _ in range(count):
        mutation = rng.choice(ONNX_MUTATIONS)
        try:
            done.append(mutation(rng, model, folder))
        except (IndexError, ValueError, KeyError, OSError) as error:
            done.append(f"{mutation.__name__}: nothing to mutate ({type(error).__name__})")
    return done

