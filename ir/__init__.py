"""OpenVINO-style IR: data model, XML + .bin reading and writing, layer schemas, shape inference."""

from poolir.ir.errors import (ConversionError, FeedError, InvalidModelError, PoolirError, UnsupportedError,
                              UsageError)
from poolir.ir.model import Dim, Edge, Layer, Model, Port, Shape
from poolir.ir.shapes import TensorInfo
from poolir.ir.ops.pooling import pool_windows_of
from poolir.ir.infer import Inference, ShapeWarning, check, infer_model
from poolir.ir.limits import MAX_ELEMENTS
from poolir.ir.reader import parse_model, read_model
from poolir.ir.writer import serialize, write_model
from poolir.ir.builder import GraphBuilder, OutputRef
from poolir.ir.schema import LATEST_OPSET, op_version

__all__ = [
    "ConversionError", "Dim", "Edge", "FeedError", "GraphBuilder", "Inference", "InvalidModelError", "Layer",
    "LATEST_OPSET", "MAX_ELEMENTS", "Model", "OutputRef", "PoolirError", "Port", "Shape", "ShapeWarning",
    "TensorInfo", "UnsupportedError", "UsageError", "check", "infer_model", "op_version", "parse_model",
    "pool_windows_of", "read_model", "serialize", "write_model",
]
