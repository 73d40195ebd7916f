"""What every executor provides to the Session: its declared inputs (`TensorSpec`) and the `Program` protocol.

The executors (runtime.onnx_executor, runtime.ir_executor) import these; the Session imports the executors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Protocol, runtime_checkable

import numpy as np

from poolir.ir.model import Dim, shape_str


@dataclass(frozen=True, slots=True)
class TensorSpec:
    """A declared model input: name, numpy dtype and shape (an int per static dim, None when dynamic)."""

    name: str
    dtype: np.dtype
    shape: tuple[int | None, ...] | None  # None: the model does not declare the rank
    # The declared dims when some dynamic one is a range (IR "1..8"): a feed must fall inside (OpenVINO refuses
    # "Can't set the input tensor ... incompatible" otherwise). None: only the static dims bind.
    ranges: tuple[Dim, ...] | None = None

    def shape_text(self) -> str:
        """The shape in the one notation of messages (ir.model.shape_str): [?,3,32,32]."""
        if self.shape is None:
            return "unknown"
        return shape_str(self.shape)


@runtime_checkable
class Program(Protocol):
    """What every executor provides. `execute` receives feeds already checked by the Session;
    `observe(name, value)`, when given, is told every tensor a node computes (Session.run)."""

    inputs: list[TensorSpec]
    outputs: list[str]

    def execute(self, feeds: Mapping[str, np.ndarray], observe=None) -> dict[str, np.ndarray]: ...


__all__ = ["Program", "TensorSpec"]
