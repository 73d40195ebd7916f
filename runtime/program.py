"""What every executor provides to the Session: its declared inputs (`TensorSpec`) and the `Program` protocol.

The executors (runtime.onnx_executor, runtime.ir_executor) import these; the Session imports the executors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True, slots=True)
class TensorSpec:
    """A declared model input: name, numpy dtype and shape (an int per static dim, None when dynamic)."""

    name: str
    dtype: np.dtype
    shape: tuple[int | None, ...] | None  # None: the model does not declare the rank

    def shape_text(self) -> str:
        if self.shape is None:
            return "unknown"
        return "[" + ",".join("?" if d is None else str(d) for d in self.shape) + "]"


@runtime_checkable
class Program(Protocol):
    """What every executor provides. `execute` receives feeds already checked by the Session."""

    inputs: list[TensorSpec]
    outputs: list[str]

    def execute(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]: ...


__all__ = ["Program", "TensorSpec"]
