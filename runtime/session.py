"""`Session` and `run`: the public entry points of the reference runtime.

A Session validates and plans a model once (the executor resolves attributes, geometry and kernel
parameters in its constructor) and then runs it many times. It takes an `ir.Model`, an
`onnx.ModelProto` or a path to an `.xml` / `.onnx` file, and picks the executor:

    ONNX  -> runtime.onnx_executor.OnnxProgram   (ONNX operator semantics)
    IR    -> runtime.ir_executor.IRProgram       (what OpenVINO computes for the IR)

Feeds are checked here, once for both executors, against the program's declared inputs: the names
must match exactly (no unknown, no missing input), and each array must have the declared element type
(no silent casting), rank and static dims. Dynamic dims (None) take their size from the feed.

The first Session of a process asks glibc's malloc to keep freed memory for the next run (runtime/heap.py):
without it, a large network's intermediates were faulted in again on every run.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import onnx

from poolir import ir
from poolir.ir.errors import FeedError, UnsupportedError, UsageError
from poolir.ir.model import shape_str
from poolir.runtime.heap import keep_freed_memory
from poolir.runtime.ir_executor import IRProgram
from poolir.runtime.onnx_executor import OnnxProgram
from poolir.runtime.onnx_model import load_onnx
from poolir.runtime.program import Program, TensorSpec, by_declared_name


MODEL_SUFFIXES = {".onnx": "onnx", ".xml": "ir"}


def model_kind(path: str | os.PathLike) -> str:
    """"onnx" or "ir" from a model file's suffix; the one refusal of any other suffix."""
    suffix = Path(path).suffix.lower()
    if suffix not in MODEL_SUFFIXES:
        raise UsageError(f"cannot tell the model format from the suffix {suffix!r}: expected .onnx or .xml",
                         file=path)
    return MODEL_SUFFIXES[suffix]


def load_program(model: Any, fuse: bool = True) -> tuple[Program, str | None]:
    """Build the executor for `model` (ir.Model, onnx.ModelProto or a path); returns it and the file name.
    `fuse`: see Session."""
    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        if model_kind(path) == "onnx":
            return OnnxProgram(load_onnx(path), source=str(path), fuse=fuse), str(path)
        return IRProgram(ir.read_model(path)), str(path)
    if isinstance(model, onnx.ModelProto):
        return OnnxProgram(model, source=None, fuse=fuse), None
    if isinstance(model, ir.Model):
        return IRProgram(model), model.source
    raise UsageError(f"a model must be an ir.Model, an onnx.ModelProto or a path to .xml/.onnx, "
                     f"not {type(model).__name__}")


class Session:
    """A model validated and planned once, ready to run many times.

    `fuse` (default True) lets an ONNX plan fuse as onnxruntime and OpenVINO do (runtime.onnx_fusion): a
    BatchNormalization folded into the Conv before it, a Relu or HardSwish written into the result before it, a
    constant Conv bias added inside the matrix product. Results change by rounding only, and a fused-away tensor is
    never computed, so `observe` does not see it. With fuse=False every node runs as written."""

    def __init__(self, model: Any, *, fuse: bool = True):
        keep_freed_memory()
        self._program, self.source = load_program(model, fuse)
        self.inputs: list[TensorSpec] = list(self._program.inputs)
        self.outputs: list[str] = list(self._program.outputs)
        self._expected = {spec.name: spec for spec in self.inputs}
        self._expected_names = ", ".join(repr(spec.name) for spec in self.inputs) or "none"
        self._aliased = any(spec.aliases for spec in self.inputs)  # only IR inputs have further names

    def run(self, feeds: Mapping[str, np.ndarray],
            observe: Callable[[str, np.ndarray], None] | None = None) -> dict[str, np.ndarray]:
        """Run the model. `observe(name, value)`, when given, is called with every tensor a node (layer) computes,
        by tensor name, in execution order and before the tensor is freed: `poolir verify` streams a network's
        intermediates through it without holding them all. An exception it raises ends the run.
        An IR input may be fed under any of its tensor names (TensorSpec.aliases)."""
        if self._aliased and isinstance(feeds, Mapping):
            feeds = by_declared_name(feeds, self.inputs, self.source)
        self.check_feeds(feeds)
        try:
            # NaN and inf are results, not errors: inf - inf is NaN by IEEE 754 in both worlds, and numpy's
            # warnings about them would only be noise on stderr (the README states the NaN/inf rules).
            with np.errstate(all="ignore"):
                return self._program.execute(feeds, observe)
        except MemoryError as error:  # a legal model (below ir.MAX_ELEMENTS) can still exceed this machine
            raise UnsupportedError(f"not enough memory to run the model ({error})", file=self.source) from None

    def check_feeds(self, feeds: Mapping[str, np.ndarray]) -> None:
        """Raise FeedError unless `feeds` matches the declared inputs exactly (names, dtypes, ranks, dims)."""
        expected = self._expected
        if type(feeds) is not dict and not isinstance(feeds, Mapping):
            raise FeedError(f"feeds must be a mapping of input name to numpy array, not {type(feeds).__name__}",
                            file=self.source)
        if len(feeds) != len(expected) or any(name not in expected for name in feeds):
            unknown = [name for name in feeds if name not in expected]
            missing = [name for name in expected if name not in feeds]
            problems = []
            if unknown:
                problems.append("unknown input " + ", ".join(repr(n) for n in unknown))
            if missing:
                problems.append("missing input " + ", ".join(repr(n) for n in missing))
            raise FeedError(f"{'; '.join(problems)} (the model's inputs are: {self._expected_names})",
                            file=self.source)
        for name, array in feeds.items():
            spec = expected[name]
            where = f"input '{name}'"
            if not isinstance(array, np.ndarray):
                raise FeedError(f"expected a numpy array, got {type(array).__name__}", file=self.source,
                                where=where)
            if array.dtype != spec.dtype:
                raise FeedError(f"element type {array.dtype} does not match the declared {spec.dtype} "
                                f"(poolir never casts feeds)", file=self.source, where=where)
            if spec.shape is None:
                continue
            if array.ndim != len(spec.shape):
                raise FeedError(f"rank {array.ndim} (shape {shape_str(array.shape)}) does not match the declared "
                                f"rank {len(spec.shape)} (shape {spec.shape_text()})", file=self.source,
                                where=where)
            for axis, (actual, declared) in enumerate(zip(array.shape, spec.shape)):
                if declared is not None and actual != declared:
                    raise FeedError(f"dim {axis} is {actual} (shape {shape_str(array.shape)}) but the model declares "
                                    f"{declared} (shape {spec.shape_text()})", file=self.source, where=where)
            for axis, (actual, dim) in enumerate(zip(array.shape, spec.ranges or ())):
                if actual < dim.min or dim.max is not None and actual > dim.max:
                    raise FeedError(f"dim {axis} is {actual} (shape {shape_str(array.shape)}) but the model declares "
                                    f"the range {dim} (shape {shape_str(spec.ranges)})", file=self.source, where=where)


def run(model: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One-shot form: `Session(model).run(feeds)`."""
    return Session(model).run(feeds)


__all__ = ["MODEL_SUFFIXES", "Program", "Session", "TensorSpec", "load_program", "model_kind", "run"]
