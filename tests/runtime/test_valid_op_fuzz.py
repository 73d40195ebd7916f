"""A fixed-seed differential fuzzer over valid single-node models of the non-pooling operators
(valid_op_models.py: every opset version from the op's first to 22).

Each model runs in poolir's ONNX runtime and in onnxruntime (equal bits for the exact ops, a few ulps for the
arithmetic); then poolir converts it to IR, and poolir's IR runtime and OpenVINO run that IR, both compared with
onnxruntime. A model onnxruntime cannot run is compared across poolir and OpenVINO only. A conversion may be
refused, with a PoolirError naming the node. The regressions it found are in test_valid_op_differential.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from poolir import ir, runtime
from poolir.converter.onnx_to_ir import onnx_to_ir
from poolir.ir.errors import PoolirError
from tests.peers import onnxruntime_run, openvino_run_xml
from tests.runtime.valid_op_models import EXACT, draw

SEEDS = range(600)
SUMS = {"Conv", "Gemm", "MatMul", "ReduceMean", "BatchNormalization", "LRN", "Softmax", "Sum"}
ULPS = {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 2e-6, np.dtype(np.float64): 1e-12}


def _difference(got: np.ndarray, expected: np.ndarray, exact: bool, sums: bool, f32_only: bool) -> str | None:
    if got.shape != expected.shape or got.dtype != expected.dtype:
        return f"{got.dtype}{list(got.shape)} != {expected.dtype}{list(expected.shape)}"
    if f32_only and expected.dtype == np.float64:  # OpenVINO's CPU plugin computes f64 in f32
        got, expected, exact = got.astype(np.float32), expected.astype(np.float32), False
    if exact or expected.dtype.kind != "f":
        same = np.array_equal(got, expected, equal_nan=expected.dtype.kind == "f")
        return None if same else f"{got.ravel()[:8]} != {expected.ravel()[:8]}"
    tolerance = ULPS[expected.dtype] * (8 if sums else 1) * (50 if f32_only else 1)
    # the scale of the finite values: an infinite one would make every difference tolerable (isclose still
    # wants an infinity to match an equal infinity)
    scale = max(1.0, float(np.abs(expected[np.isfinite(expected)]).max(initial=0)))
    if np.allclose(got, expected, rtol=tolerance, atol=tolerance * scale, equal_nan=True):
        return None
    return f"largest difference {np.abs(got.astype(np.float64) - expected).max():.3g} (scale {scale:.3g})"


@pytest.mark.slow
def test_valid_single_op_models_agree(tmp_path):
    problems, compared, refused = [], 0, 0
    for seed in SEEDS:
        case = draw(seed)
        model, what = case.model(), f"seed {seed} {case.op}-{case.opset}"
        try:
            expected = onnxruntime_run(model, case.feeds)
        except Exception:  # noqa: BLE001 - an op version or type onnxruntime lacks: poolir is the reference then
            expected = None
        try:
            mine = runtime.run(model, case.feeds)
        except PoolirError:
            if expected is not None:
                problems.append(f"{what}: poolir refuses what onnxruntime runs")
            continue
        reference = expected if expected is not None else mine
        exact, sums = case.op in EXACT, case.op in SUMS
        for name, value in (expected or {}).items():
            if (problem := _difference(mine[name], value, exact, sums, False)):
                problems.append(f"{what} {name}, poolir vs onnxruntime: {problem}")
        try:
            converted = onnx_to_ir(model)
        except PoolirError as error:
            refused += 1
            if not str(error).startswith(("node 'node' ", "input 'in")):
                problems.append(f"{what}: a refusal that names neither the node nor the input: {error}")
            continue
        xml = tmp_path / "m.xml"
        ir.write_model(converted, xml)
        engines = {"poolir (IR)": runtime.run(ir.read_model(xml), case.feeds),
                   "OpenVINO": openvino_run_xml(xml, case.feeds, list(reference))}
        for engine, outputs in engines.items():
            for name, value in reference.items():
                if (problem := _difference(outputs[name], value, exact, sums, engine == "OpenVINO")):
                    problems.append(f"{what} {name}, {engine} vs the ONNX model: {problem}")
        compared += 1
    assert not problems, "\n".join(problems)
    assert compared > len(SEEDS) // 2 and refused < len(SEEDS) // 4, (compared, refused)
