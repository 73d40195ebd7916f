"""The values of an ONNX graph that depend on its input shapes only, computed once per shape signature.

PyTorch's exporters compute reshape targets from the input's shape at run time when an axis is dynamic
(TorchScript: Shape -> Gather -> Unsqueeze -> Concat -> Reshape; the dynamo exporter: Shape -> Slice -> Concat),
dozens of small numpy calls per run. Such a value is the same on every run with the same input shapes, so a
program runs those steps on the first run with a shape signature, keeps the values that the rest of the graph
reads, and on later runs with that signature skips the steps and takes the kept values.

A value is shape-derived when a Shape step computes it from a tensor whose shape the input shapes decide, or a
step whose inputs are all constants or shape-derived (with at least one shape-derived) does: every ONNX op
poolir runs is deterministic, so such a value is a function of the input shapes alone. A tensor's shape is
decided by the input shapes unless a step on its way takes a shape from the values of a computed tensor
(a Reshape to a target read from the data, say, or a Slice at a computed start): SHAPE_FROM_VALUES lists those
inputs, and the Shape of such a tensor is computed on every run. Only small values are kept (a ConstantOfShape of the whole input
is shape-derived too, but holding it between runs would cost memory): a signature with a large one is not kept,
and its runs compute everything, as without the cache.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import numpy as np

SHAPE_SOURCES = frozenset({"Shape"})
# The inputs whose values (not only shapes) decide an op's output shape, for the ops poolir runs (every other
# op's output shape follows from its input shapes and attributes).
_AXES = (1,)
SHAPE_FROM_VALUES: dict[str, tuple[int, ...]] = {
    "ConstantOfShape": (0,), "Expand": (1,), "Pad": (1, 3), "Range": (0, 1, 2), "Reshape": (1,),
    "Slice": (1, 2, 3, 4), "Split": (1,),
    "Squeeze": _AXES, "Unsqueeze": _AXES, "Tile": (1,),
    "Resize": (1, 2, 3), "Upsample": (1,),  # scales and sizes (Resize-10 and Upsample-9: scales at 1)
    **{reduce: _AXES for reduce in ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
                                    "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare")},
}
# An If's condition picks the branch, and the branch may shape its outputs from any outer value it reads.
EVERY_INPUT = frozenset({"If"})
MAX_KEPT_ELEMENTS = 4096  # per value; shape vectors and the scalars computed from them are far smaller
MAX_SIGNATURES = 16  # a program run on ever new shapes keeps the values of the latest ones only


def _shaping_inputs(op_type: str, count: int) -> Iterable[int]:
    return range(count) if op_type in EVERY_INPUT else SHAPE_FROM_VALUES.get(op_type, ())


class ShapeValues:
    """Which steps compute shape-derived values, and those values per input-shape signature."""

    def __init__(self, steps: Sequence[tuple[str, Sequence[str], Sequence[str]]], constants: Iterable[str],
                 graph_outputs: Iterable[str]):
        """`steps`: (op_type, input names, output names) in execution order."""
        constants = set(constants)
        derived: set[str] = set()
        value_shaped: set[str] = set()  # tensors whose shapes the values of a computed tensor decide
        positions = set()
        for position, (op_type, inputs, outputs) in enumerate(steps):
            named = [name for name in inputs if name]
            known = (name in derived or name in constants for name in named)
            if (op_type in SHAPE_SOURCES and not value_shaped.intersection(named)) or (
                    any(name in derived for name in named) and all(known)):
                positions.add(position)
                derived.update(name for name in outputs if name)
            elif value_shaped.intersection(named) or any(
                    index < len(inputs) and inputs[index] and inputs[index] not in derived | constants
                    for index in _shaping_inputs(op_type, len(inputs))):
                value_shaped.update(name for name in outputs if name)
        read_elsewhere = {name for position, (_, inputs, _) in enumerate(steps) if position not in positions
                          for name in inputs}
        self.positions = frozenset(positions)
        # The values the other steps (or the caller) read: what a signature keeps.
        self.kept_names = frozenset(name for name in derived if name in read_elsewhere or name in set(graph_outputs))
        self._kept: dict[tuple, dict[str, np.ndarray] | None] = {}

    def __bool__(self) -> bool:
        return bool(self.positions)

    @staticmethod
    def signature(feeds: Mapping[str, np.ndarray]) -> tuple:
        return tuple(sorted((name, np.shape(value)) for name, value in feeds.items()))

    def lookup(self, signature: tuple) -> dict[str, np.ndarray] | None:
        """The kept values of a signature seen before (None: compute them)."""
        return self._kept.get(signature)

    def known(self, signature: tuple) -> bool:
        return signature in self._kept

    def keep(self, signature: tuple, values: Mapping[str, np.ndarray]) -> None:
        """Keep a run's shape-derived values for its signature, unless one is large (then the signature is
        remembered as not kept, and its runs compute everything)."""
        small = all(np.size(values[name]) <= MAX_KEPT_ELEMENTS for name in self.kept_names if name in values)
        complete = all(name in values for name in self.kept_names)
        if len(self._kept) >= MAX_SIGNATURES:
            self._kept.pop(next(iter(self._kept)))
        self._kept[signature] = {name: values[name] for name in self.kept_names} if small and complete else None
