"""OpenVINO-style IR: data model, XML + .bin reading and writing, layer schemas, shape inference."""

from ir.errors import (ConversionError, FeedError, InvalidModelError, PoolirError, UnsupportedError,
                       UsageError)
from ir.model import Dim, Edge, Layer, Model, Port, Shape

__all__ = [
    "ConversionError", "Dim", "Edge", "FeedError", "InvalidModelError", "Layer", "Model", "PoolirError",
    "Port", "Shape", "UnsupportedError", "UsageError",
]
