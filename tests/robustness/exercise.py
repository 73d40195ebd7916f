"""Drive one (possibly hostile) model through every poolir entry point that takes it.

Each step goes through `survive`, so a step may refuse with a PoolirError but never crash. When a step
accepts the model, the next step gets it: parse -> write and read back -> plan -> run -> convert.
Runs are skipped for models whose tensors would exceed SMALL_ELEMENTS (huge but legal shapes are
covered by test_memory.py under a memory cap).

The value comparisons here (ONNX run vs its converted IR run, IR run vs its converted ONNX run) are
consistency checks between poolir's independent readings of the two worlds, as `poolir verify` makes; they
are not oracles. The oracles for the same paths are onnxruntime and OpenVINO, in tests/converter and
tests/runtime.
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np
import onnx

from poolir import ir
from poolir import runtime
from poolir.ir.errors import PoolirError
from tests.robustness.harness import survive

SMALL_ELEMENTS = 1 << 20
DYNAMIC_DIM = 3


def feeds_for(specs, rng: np.random.Generator, *, specials: bool = False) -> dict[str, np.ndarray] | None:
    """Random feeds matching `specs` (dynamic dims = 3); None when they would be too large."""
    feeds = {}
    for spec in specs:
        shape = tuple(DYNAMIC_DIM if d is None else d for d in (spec.shape or ()))
        if math.prod(shape) > SMALL_ELEMENTS:
            return None
        dtype = np.dtype(spec.dtype)
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            # Not the type's lowest value: OpenVINO's MaxPool gives it index 0 wherever it wins (it is the
            # "empty window" value there), ONNX its real index; a known difference the converters cannot
            # express without the data (test_feeds.py pins the float form, NaN and -inf).
            array = rng.integers(info.min + 1, info.max, size=shape, dtype=dtype, endpoint=True)
        elif dtype == np.bool_:
            array = rng.integers(0, 2, size=shape).astype(np.bool_)
        else:
            array = rng.uniform(-4, 4, size=shape)
            if specials and array.size:
                flat = array.reshape(-1)
                picks = rng.integers(0, flat.size, size=max(1, flat.size // 4))
                flat[picks] = rng.choice([np.nan, np.inf, -np.inf], size=picks.size)
            array = array.astype(dtype)
        feeds[spec.name] = array
    return feeds


def _inferred_small(model: ir.Model) -> bool:
    inference = ir.infer_model(model)
    for info in inference.outputs.values():
        size = math.prod(d.min if d.is_static else DYNAMIC_DIM for d in info.shape)
        if size > SMALL_ELEMENTS:
            return False
    return True



def exercise_ir(xml: bytes, weights: bytes | None, *, source: str = "fuzz.xml", seed: int = 0,
                specials: bool = False) -> None:
    model = survive("ir.parse", lambda: ir.parse_model(xml, weights, source=source), names=source)
    if isinstance(model, PoolirError):
        return
    # A model poolir accepted can be written and read back as the same model.
    written = survive("ir.serialize", lambda: ir.serialize(model))
    if not isinstance(written, PoolirError):
        again = survive("ir.reparse", lambda: ir.parse_model(written[0], written[1], source="rewritten.xml"))
        if isinstance(again, PoolirError):
            raise AssertionError(f"poolir wrote a file it refuses to read: {again}")
    small = survive("ir.infer", lambda: _inferred_small(model))
    session = survive("ir.plan", lambda: runtime.Session(model))
    feeds = ir_outputs = None
    if not isinstance(session, PoolirError) and small is True:
        feeds = feeds_for(session.inputs, np.random.default_rng(seed), specials=specials)
        if feeds is not None:
            ir_outputs = survive("ir.run", lambda: session.run(feeds))
    if small is not True:
        return
    from poolir.converter.ir_to_onnx import ir_to_onnx

    converted = survive("ir.to_onnx", lambda: ir_to_onnx(model))
    if isinstance(converted, PoolirError):
        return
    try:
        onnx.checker.check_model(converted, full_check=True)
    except Exception as error:
        raise AssertionError(f"ir_to_onnx wrote an invalid ONNX model: {error}") from error
    max_pool_with_specials = specials and any(layer.type == "MaxPool" for layer in model.layers)
    if isinstance(ir_outputs, dict) and not max_pool_with_specials:
        # The converter's promise, checked on the fuzzed model: the ONNX it wrote means what the IR means.
        onnx_outputs = survive("ir.to_onnx.run", lambda: runtime.run(converted, feeds))
        if isinstance(onnx_outputs, PoolirError):
            raise AssertionError(f"the converted ONNX refuses the feeds the IR took: {onnx_outputs}")
        # Outputs are compared by name. Known issue: in a hostile file a dead layer's tensor name can collide
        # with a Result's fallback name, and the ONNX then calls that output "max_1"; such outputs are skipped.
        assert len(onnx_outputs) == len(ir_outputs), (list(onnx_outputs), list(ir_outputs))
        for name in ir_outputs.keys() & onnx_outputs.keys():
            assert_same_values(onnx_outputs[name], ir_outputs[name], name, model)


def exercise_onnx(model: onnx.ModelProto, *, seed: int = 0, specials: bool = False) -> None:
    """Run and convert an ONNX model (usually with mutated pooling attributes)."""
    session = survive("onnx.plan", lambda: runtime.Session(model))
    feeds = onnx_outputs = None
    if not isinstance(session, PoolirError):
        feeds = feeds_for(session.inputs, np.random.default_rng(seed), specials=specials)
        if feeds is not None:
            onnx_outputs = survive("onnx.run", lambda: session.run(feeds))
    from poolir.converter.onnx_to_ir import onnx_to_ir

    converted = survive("onnx.to_ir", lambda: onnx_to_ir(model))
    if isinstance(converted, PoolirError):
        return
    written = survive("onnx.to_ir.serialize", lambda: ir.serialize(converted))
    if not isinstance(written, PoolirError):
        again = survive("onnx.to_ir.reparse", lambda: ir.parse_model(written[0], written[1], source="converted.xml"))
        if isinstance(again, PoolirError):
            raise AssertionError(f"poolir wrote a converted IR it refuses to read: {again}")
    max_pool_with_specials = specials and any(node.op_type == "MaxPool" for node in model.graph.node)
    if isinstance(onnx_outputs, dict) and not max_pool_with_specials:
        # Not for MaxPool over NaN/-inf: ONNX MaxPool propagates NaN and keeps -inf in poolir, OpenVINO ignores
        # NaN and clamps to the lowest finite value, and the converter cannot express the difference
        # (test_feeds.py pins both behaviours).
        # The converted IR runs with OpenVINO's semantics, the ONNX model with ONNX's: the converter's promise
        # is that they agree (two independent readings of the attributes, see DESIGN.md).
        ir_outputs = survive("onnx.to_ir.run", lambda: runtime.run(converted, feeds))
        if isinstance(ir_outputs, PoolirError):
            raise AssertionError(f"the converted IR refuses the feeds the ONNX model took: {ir_outputs}")
        for name, expected in onnx_outputs.items():
            assert_same_values(ir_outputs[name], expected, name, model)


def assert_same_values(actual: np.ndarray, expected: np.ndarray, name: str, model=None) -> None:
    assert actual.shape == expected.shape and actual.dtype == expected.dtype, (
        f"{name}: {actual.dtype}{list(actual.shape)} != {expected.dtype}{list(expected.shape)} in {model}")
    if expected.dtype.kind in "iub":
        np.testing.assert_array_equal(actual, expected, err_msg=name)
    else:
        tolerance = {2: 2e-3, 4: 2e-6, 8: 1e-12}[expected.dtype.itemsize]
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=tolerance,
                                   atol=tolerance, equal_nan=True, err_msg=name)


def run_checked(model, feeds: Mapping[str, np.ndarray]):
    return survive("run", lambda: runtime.run(model, feeds))
