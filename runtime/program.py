"""What every executor provides to the Session: its declared inputs (`TensorSpec`) and the `Program` protocol.

The executors (runtime.onnx_executor, runtime.ir_executor) import these; the Session imports the executors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Protocol, Sequence, TypeVar, runtime_checkable

import numpy as np

from poolir.ir.errors import FeedError
from poolir.ir.model import Dim, shape_str

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class TensorSpec:
    """A declared model input: name, numpy dtype and shape (an int per static dim, None when dynamic)."""

    name: str
    dtype: np.dtype
    shape: tuple[int | None, ...] | None  # None: the model does not declare the rank
    # The declared dims when some dynamic one is a range (IR "1..8"): a feed must fall inside (OpenVINO refuses
    # "Can't set the input tensor ... incompatible" otherwise). None: only the static dims bind.
    ranges: tuple[Dim, ...] | None = None
    # Further names of the same tensor (an IR port's `names` after the first): OpenVINO takes a feed under any of
    # them, and its PyTorch frontend gives the input's own name ("x") last ("10,25,40,x").
    aliases: tuple[str, ...] = ()

    def shape_text(self) -> str:
        """The shape in the one notation of messages (ir.model.shape_str): [?,3,32,32]."""
        if self.shape is None:
            return "unknown"
        return shape_str(self.shape)


def by_declared_name(given: Mapping[str, T], inputs: Sequence[TensorSpec], source: str | None = None) -> dict[str, T]:
    """`given` (feeds, --input-shape dims) keyed by each input's name where a key is one of its aliases. Keys that
    name no input are kept for the caller to refuse; one input given under two of its names is a FeedError."""
    canonical = {alias: spec.name for spec in inputs for alias in spec.aliases}
    if not canonical:
        return dict(given)
    named: dict[str, T] = {}
    keys: dict[str, str] = {}
    for key, value in given.items():
        name = canonical.get(key, key)
        if name in named:
            raise FeedError(f"input '{name}' is given twice, as {keys[name]!r} and {key!r} (two names of one "
                            "tensor)", file=source)
        named[name], keys[name] = value, key
    return named


@runtime_checkable
class Program(Protocol):
    """What every executor provides. `execute` receives feeds already checked by the Session;
    `observe(name, value)`, when given, is told every tensor a node computes (Session.run)."""

    inputs: list[TensorSpec]
    outputs: list[str]

    def execute(self, feeds: Mapping[str, np.ndarray], observe=None) -> dict[str, np.ndarray]: ...


__all__ = ["Program", "TensorSpec", "by_declared_name"]
