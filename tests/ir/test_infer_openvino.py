"""Pooling shape inference against OpenVINO, the oracle for IR shapes.

A seeded grid of AvgPool/MaxPool attributes (every op version, rank 1-3, auto_pad, rounding,
dilations, pads, tiny and dynamic inputs): poolir's inferred output dims must equal the dims
OpenVINO's own node computes, and poolir must refuse exactly what OpenVINO refuses. A subset goes
through files: poolir writes the IR, OpenVINO reads it and reports the same output shapes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from poolir import ir
from poolir.ir.builder import GraphBuilder
from poolir.ir.errors import PoolirError
from tests.peers import openvino_core

ROUNDINGS = {"opset1": ("floor", "ceil"), "opset8": ("floor", "ceil"), "opset14": ("floor", "ceil", "ceil_torch"),
             "opset16": ("floor", "ceil", "ceil_torch")}
AUTO_PADS = ("explicit", "same_upper", "same_lower", "valid")


@dataclass(frozen=True)
class PoolCase:
    op: str  # AvgPool or MaxPool
    version: str
    shape: tuple[int, ...]  # -1 = dynamic
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...] | None
    pads_begin: tuple[int, ...]
    pads_end: tuple[int, ...]
    rounding: str
    auto_pad: str
    exclude_pad: bool = True

    def attrs(self) -> dict:
        attrs = {"kernel": self.kernel, "strides": self.strides, "pads_begin": self.pads_begin,
                 "pads_end": self.pads_end, "rounding_type": self.rounding, "auto_pad": self.auto_pad}
        if self.op == "AvgPool":
            attrs["exclude-pad"] = self.exclude_pad
        if self.dilations is not None:
            attrs["dilations"] = self.dilations
        return attrs


def _grid(count: int, seed: int) -> list[PoolCase]:
    rng = random.Random(seed)
    versions = [("AvgPool", "opset1"), ("AvgPool", "opset14"), ("AvgPool", "opset16"),
                ("MaxPool", "opset1"), ("MaxPool", "opset8"), ("MaxPool", "opset14")]
    cases = []
    for index in range(count):
        op, version = versions[index % len(versions)]
        rank = rng.choice((1, 2, 2, 3))
        has_dilations = (op, version) in {("AvgPool", "opset16"), ("MaxPool", "opset8"), ("MaxPool", "opset14")}

        def axis_values(low: int, high: int) -> tuple[int, ...]:
            return tuple(rng.randint(low, high) for _ in range(rank))

        spatial = tuple(-1 if rng.random() < 0.08 else rng.randint(1, 9) for _ in range(rank))
        cases.append(PoolCase(op, version, (rng.choice((1, 2, -1)), 2, *spatial), axis_values(1, 4),
                              axis_values(1, 3), axis_values(1, 3) if has_dilations else None,
                              axis_values(0, 2), axis_values(0, 2), rng.choice(ROUNDINGS[version]),
                              rng.choice(AUTO_PADS), rng.random() < 0.7))
    return cases


CASES = _grid(900, seed=2026)


def _openvino_shape(case: PoolCase) -> str | None:
    """OpenVINO's output shape for the case, or None when OpenVINO refuses the node."""
    import openvino as ov
    import openvino.opset1 as ov1
    import openvino.opset8 as ov8
    import openvino.opset14 as ov14
    import openvino.opset16 as ov16

    data = ov1.parameter(ov.PartialShape([ov.Dimension() if d == -1 else d for d in case.shape]), np.float32)
    args = (case.strides, case.pads_begin, case.pads_end, case.kernel)
    try:
        if case.op == "AvgPool":
            if case.version == "opset16":
                node = ov16.avg_pool(data, *args, case.exclude_pad, case.rounding, case.auto_pad, case.dilations)
            else:
                module = ov14 if case.version == "opset14" else ov1
                node = module.avg_pool(data, *args, case.exclude_pad, case.rounding, case.auto_pad)
        elif case.version == "opset1":
            node = ov1.max_pool(data, *args, case.rounding, case.auto_pad)
        else:
            module = ov14 if case.version == "opset14" else ov8
            node = module.max_pool(data, case.strides, case.dilations, case.pads_begin, case.pads_end, case.kernel,
                                   case.rounding, case.auto_pad)
    except RuntimeError:
        return None
    return str(node.get_output_partial_shape(0))


def _poolir_shape(case: PoolCase) -> str | None:
    builder = GraphBuilder("grid")
    x = builder.parameter("x", "f32", case.shape)
    try:
        outputs = builder.add(case.op, case.version, [x], case.attrs())
    except PoolirError:
        return None
    shape = builder.info(outputs[0]).shape
    return "[" + ",".join(str(d) for d in shape) + "]"


@pytest.mark.parametrize("chunk", range(6))
def test_pool_shapes_equal_openvino(chunk: int) -> None:
    mismatches = []
    for case in CASES[chunk::6]:
        expected, got = _openvino_shape(case), _poolir_shape(case)
        if expected != got:
            mismatches.append((case, expected, got))
    assert mismatches == []


def test_grid_exercises_refusals_and_every_rounding() -> None:
    refused = sum(_openvino_shape(case) is None for case in CASES)
    assert 10 < refused < len(CASES) // 2
    assert {(c.rounding, c.auto_pad) for c in CASES} == {
        (r, a) for r in ("floor", "ceil", "ceil_torch") for a in AUTO_PADS}


@pytest.mark.parametrize("rounding,expected", [("floor", 3), ("ceil", 4), ("ceil_torch", 3)])
def test_same_upper_keeps_rounding_type(rounding: str, expected: int) -> None:
    """OpenVINO applies rounding_type after resolving SAME pads (ONNX would give ceil(8/3) = 3 always)."""
    case = PoolCase("MaxPool", "opset14", (1, 1, 8), (1,), (3,), (1,), (0,), (0,), rounding, "same_upper")
    assert _openvino_shape(case) == f"[1,1,{expected}]"
    assert _poolir_shape(case) == f"[1,1,{expected}]"


def test_kernel_larger_than_padded_input_is_refused_even_with_ceil() -> None:
    case = PoolCase("MaxPool", "opset14", (1, 1, 2), (3,), (2,), (1,), (0,), (0,), "ceil", "explicit")
    assert _openvino_shape(case) is None
    assert _poolir_shape(case) is None


def test_pool_windows_of_reports_resolved_same_pads() -> None:
    builder = GraphBuilder("w")
    x = builder.parameter("x", "f32", (1, 1, 8, 7))
    builder.add("AvgPool", "opset16", [x], {"kernel": (3, 2), "strides": (2, 2), "dilations": (2, 1),
                                            "pads_begin": (9, 9), "pads_end": (9, 9), "exclude-pad": False,
                                            "auto_pad": "same_lower", "rounding_type": "ceil"}, name="p")
    layer = next(layer for layer in builder.build().layers if layer.name == "p")
    windows = ir.pool_windows_of(layer, (8, 7))
    # effective kernels 5 and 2; out = ceil(8/2) = 4, ceil(7/2) = 4; SAME totals 3*2+5-8 = 3 and 3*2+2-7 = 1,
    # same_lower puts the odd element first: pads (2, 1) and (1, 0); the pads 9,9 are ignored.
    assert [(w.pad_begin, w.pad_end, w.output) for w in windows] == [(2, 1, 4), (1, 0, 4)]


FILE_CASES = [case for case in CASES if _openvino_shape(case) is not None][::7]


def test_openvino_reads_poolir_pool_files_with_the_same_shapes(tmp_path: Path) -> None:
    core = openvino_core()
    for index, case in enumerate(FILE_CASES):
        builder = GraphBuilder(f"case{index}")
        x = builder.parameter("x", "f32", case.shape)
        outputs = builder.add(case.op, case.version, [x], case.attrs(), name="pool")
        for position, output in enumerate(outputs):
            builder.result(output, f"out{position}")
        path = tmp_path / f"case{index}.xml"
        ir.write_model(builder.build(), path)
        model = core.read_model(str(path))
        ours = [str(builder.info(output).shape and "[" + ",".join(str(d) for d in builder.info(output).shape) + "]")
                for output in outputs]
        assert [str(o.get_partial_shape()) for o in model.outputs] == ours, case
    assert len(FILE_CASES) > 30


@pytest.mark.parametrize("exclude_pad,shape,accepted", [
    (True, (1, 1, 7), False),  # a window of kernel 1 could sit entirely in pads_begin=1
    (False, (1, 1, 7), True),  # include-pad averages the padding zeros: allowed
])
def test_avgpool_window_entirely_in_padding(exclude_pad: bool, shape: tuple, accepted: bool) -> None:
    case = PoolCase("AvgPool", "opset16", shape, (1,), (1,), (1,), (1,), (0,), "floor", "explicit", exclude_pad)
    assert (_openvino_shape(case) is not None) == accepted
    assert (_poolir_shape(case) is not None) == accepted


def test_avgpool_window_entirely_in_padding_on_a_dynamic_axis_cannot_run(tmp_path) -> None:
    # OpenVINO's model-level shape inference lets the layer through when the length is dynamic, but its CPU
    # plugin checks the same rule from the attributes when it compiles, so no feed can ever run it: poolir
    # refuses it when reading, like the static case.
    case = PoolCase("AvgPool", "opset16", (1, 1, -1), (1,), (1,), (1,), (1,), (0,), "floor", "explicit", True)
    assert _openvino_shape(case) is not None
    assert _poolir_shape(case) is None
    import openvino as ov
    import openvino.opset16 as ov16

    data = ov16.parameter(ov.PartialShape([1, 1, ov.Dimension()]), np.float32, name="x")
    node = ov16.avg_pool(data, [1], [1], [1], [1], True, "floor", "explicit", [1])
    with pytest.raises(RuntimeError, match="exclude_pad"):
        openvino_core().compile_model(ov.Model([node], [data]), "CPU")
