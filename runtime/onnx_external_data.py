"""ONNX tensors whose data lives in another file ("external data"), loaded safely or refused.

PyTorch's exporters write large initializers next to the .onnx (`location` = "model.onnx.data"). onnx's own
helpers resolve `location` against the *current folder* when they know no base folder, and follow `..`,
absolute paths and symlinks: a hostile model could pull any readable file into an output. So poolir loads
external data itself, once, when it reads the .onnx (runtime.onnx_model.load_onnx), and the model every
consumer sees (the executor, the converter, onnxruntime and OpenVINO in `verify`) holds the bytes inline.

A location is accepted only when it is a relative path inside the model's own folder: no `..`, not absolute,
no symlink leading out of the folder, a regular file; `offset` and `length` must lie inside the file and
`length` must be the tensor's size. Anything else is an InvalidModelError naming the model and the tensor.
A ModelProto given through the Python API with external data still unloaded has no folder to resolve
against and is refused (load it with onnx.load(path), or pass the path).
"""

from __future__ import annotations

import math
import os
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Iterator

import onnx

from poolir.ir.attributes import parse_integer
from poolir.ir.budget import check_bytes
from poolir.ir.errors import InvalidModelError, printable
from poolir.ir.files import open_regular

_PACKED_4BIT = {getattr(onnx.TensorProto, name) for name in ("INT4", "UINT4", "FLOAT4E2M1")
                if hasattr(onnx.TensorProto, name)}


def _graph_tensors(graph: onnx.GraphProto) -> Iterator[onnx.TensorProto]:
    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield sparse.values
        yield sparse.indices
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("t"):
                yield attribute.t
            yield from attribute.tensors
            if attribute.HasField("g"):
                yield from _graph_tensors(attribute.g)
            for subgraph in attribute.graphs:
                yield from _graph_tensors(subgraph)


def external_tensors(model: onnx.ModelProto) -> list[onnx.TensorProto]:
    """Every tensor of the model (initializers, Constant values, subgraphs) whose data is external."""
    return [t for t in _graph_tensors(model.graph) if t.data_location == onnx.TensorProto.EXTERNAL]


def refuse_external_data(model: onnx.ModelProto, source=None) -> None:
    """Raise when a tensor's data is still external (there is no model folder to resolve it safely) or a
    tensor declares a negative dim (numpy would read -1 as "whatever is left")."""
    for tensor in _graph_tensors(model.graph):
        if any(d < 0 for d in tensor.dims):
            raise InvalidModelError(f"tensor '{printable(tensor.name)}' declares a negative dim in "
                                    f"{list(tensor.dims)[:8]}", file=source)
    tensors = external_tensors(model)
    if tensors:
        raise InvalidModelError(f"tensor '{printable(tensors[0].name)}' keeps its data in an external file that was "
                                "not loaded; give the model as a path (its folder is where the data is looked for)",
                                file=source)


def load_external_data(model: onnx.ModelProto, folder: str | os.PathLike, source=None) -> None:
    """Load every external tensor from `folder` into the model (raw_data), checking everything; see the module."""
    total = 0
    for tensor in external_tensors(model):
        total += _load(tensor, Path(folder), source)
        check_bytes(total, "the external data of the model:", file=source)


def _expected_size(tensor: onnx.TensorProto, where: str, source) -> int:
    try:
        itemsize = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
    except Exception:
        raise InvalidModelError(f"{where}: element type {tensor.data_type} cannot be stored externally",
                                file=source) from None
    if tensor.data_type == onnx.TensorProto.STRING:
        raise InvalidModelError(f"{where}: a string tensor cannot be stored externally", file=source)
    if any(d < 0 for d in tensor.dims):
        raise InvalidModelError(f"{where}: a negative dim in {list(tensor.dims)[:8]}", file=source)
    count = math.prod(tensor.dims)
    return (count + 1) // 2 if tensor.data_type in _PACKED_4BIT else count * itemsize


def _load(tensor: onnx.TensorProto, folder: Path, source) -> int:
    where = f"tensor '{printable(tensor.name)}'"
    info = {entry.key: entry.value for entry in tensor.external_data}
    location = info.get("location", "")
    shown = printable(location, 100)
    if not location or "\0" in location:
        raise InvalidModelError(f"{where}: the external data has no usable location", file=source)
    parts = [PurePosixPath(location), PureWindowsPath(location)]
    if any(p.is_absolute() or p.anchor for p in parts) or any(".." in p.parts for p in parts):
        raise InvalidModelError(f"{where}: external data location '{shown}' must be a relative path inside the "
                                "model's folder (no '..', not absolute)", file=source)
    path = folder / location
    real_folder = os.path.realpath(folder)
    real_path = os.path.realpath(path)
    if os.path.commonpath([real_folder, real_path]) != real_folder:
        raise InvalidModelError(f"{where}: external data location '{shown}' leads out of the model's folder "
                                "(through a symlink)", file=source)
    offset = parse_integer(info.get("offset", "0") or "0")
    length_text = info.get("length")
    length = parse_integer(length_text) if length_text not in (None, "") else None
    if offset is None or offset < 0 or (length_text not in (None, "") and (length is None or length < 0)):
        raise InvalidModelError(f"{where}: external data offset {printable(info.get('offset'), 40)!r} / length "
                                f"{printable(length_text, 40)!r} must be integers >= 0", file=source)
    expected = _expected_size(tensor, where, source)
    check_bytes(expected, f"{where}: external data of", file=source)
    with open_regular(path, error=InvalidModelError, file=source, what=f"{where}: external data") as handle:
        size = os.fstat(handle.fileno()).st_size
        length = size - offset if length is None else length
        if length != expected:
            raise InvalidModelError(f"{where}: external data length {length} bytes does not match its shape "
                                    f"{list(tensor.dims)[:8]} ({expected} bytes)", file=source)
        if offset + length > size:
            raise InvalidModelError(f"{where}: external data at offset {offset} with length {length} lies past the "
                                    f"end of '{shown}' ({size} bytes)", file=source)
        handle.seek(offset)
        data = handle.read(length)
    if len(data) != length:
        raise InvalidModelError(f"{where}: external data '{shown}' is shorter than declared", file=source)
    tensor.raw_data = data
    del tensor.external_data[:]
    tensor.data_location = onnx.TensorProto.DEFAULT
    return length


__all__ = ["external_tensors", "load_external_data", "refuse_external_data"]
