"""OpenVINO-style IR: data model, XML + .bin reading and writing, layer schemas, shape inference."""

from ir.errors import (ConversionError, FeedError, InvalidModelError, PoolirError, UnsupportedError,
                       UsageError)
from ir.model import Dim, Edge, Layer, Model, Port, Shape
from ir.infer import Inference, ShapeWarning, TensorInfo, check, infer_model, pool_windows_of
from ir.reader import MAX_ELEMENTS, parse_model, read_model
from ir.writer import serialize, write_model
from ir.builder import GraphBuilder, OutputRef
from ir.schema import LATEST_OPSET, op_version

__all__ = [
    "ConversionError", "Dim", "Edge", "FeedError", "GraphBuilder", "Inference", "InvalidModelError", "Layer",
    "LATEST_OPSET", "MAX_ELEMENTS", "Model", "OutputRef", "PoolirError", "Port", "Shape", "ShapeWarning",
    "TensorInfo", "UnsupportedError", "UsageError", "check", "infer_model", "op_version", "parse_model",
    "pool_windows_of", "read_model", "serialize", "write_model",
]
