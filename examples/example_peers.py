"""The peers that give or cross-check an example's expected values: onnxruntime and OpenVINO, never poolir."""

from __future__ import annotations

import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import onnx


# ----------------------------------------------------------------------------------------------------
# Peers (oracles and cross-checks)

from example_cases import MAX_LISTED_ELEMENTS, Example


def onnxruntime_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


def _openvino_infer(ov_model, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import openvino as ov

    import ml_dtypes

    compiled = ov.Core().compile_model(ov_model, "CPU", {"INFERENCE_PRECISION_HINT": "f32",
                                                         "INFERENCE_NUM_THREADS": "1"})
    inputs = {}
    for port in compiled.inputs:
        array = np.ascontiguousarray(feeds[port.get_any_name()])
        if array.dtype == ml_dtypes.bfloat16:  # OpenVINO's Python API takes bfloat16 as raw 16-bit words
            tensor = ov.Tensor(ov.Type.bf16, ov.Shape(list(array.shape)))
            tensor.data.view(np.uint16)[...] = array.view(np.uint16)
            inputs[port.get_any_name()] = tensor
        else:
            inputs[port.get_any_name()] = ov.Tensor(array)
    results = compiled.create_infer_request().infer(inputs)
    outputs = {}
    for port in compiled.outputs:
        array = np.array(results[port])
        if port.get_element_type() == ov.Type.bf16:
            array = array.view(ml_dtypes.bfloat16)
        outputs[port.get_any_name()] = array
    return outputs


def openvino_run_xml(xml_text: str, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import openvino as ov

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "model.xml")
        path.write_text(xml_text)
        return _openvino_infer(ov.Core().read_model(str(path)), feeds)


def openvino_convert_and_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """OpenVINO's own ONNX frontend (what `ovc`/`convert_model` produces), run on the CPU."""
    import openvino as ov

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "model.onnx")
        onnx.save(model, path)
        return _openvino_infer(ov.convert_model(str(path)), feeds)


def compare(actual: dict[str, np.ndarray], expected: dict[str, np.ndarray], rtol: float, atol: float) -> str | None:
    """None when every expected output is matched; else what differs first (for the manifest)."""
    for name, want in expected.items():
        if name not in actual:
            return f"output {name!r} missing"
        got = np.asarray(actual[name])
        if got.shape != want.shape:
            return f"output {name!r}: shape {list(got.shape)} instead of {list(want.shape)}"
        if not np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True):
            error = np.abs(got.astype(np.float64) - want.astype(np.float64))
            index = np.unravel_index(int(np.argmax(error)), error.shape)
            return (f"output {name!r}: max abs error {error.max():.6g} at {list(map(int, index))} "
                    f"({got[index].item()} instead of {want[index].item()})")
    return None


def cross_check(example: Example, peer: str, what: str, run) -> None:
    tolerance = example.tolerance or {}
    rtol, atol = tolerance.get("rtol", 1e-5), tolerance.get("atol", 1e-6)
    entry: dict[str, Any] = {"peer": peer, "what": what}
    try:
        outputs = run()
    except Exception as error:  # a peer refusing a model is a finding, recorded as such
        entry.update(status="refused", detail=f"{type(error).__name__}: {str(error).splitlines()[0][:300]}")
    else:
        difference = compare(outputs, example.expected, rtol, atol)
        entry["status"] = "agrees" if difference is None else "differs"
        if difference is not None:
            entry["detail"] = difference
            if all(v.size <= MAX_LISTED_ELEMENTS for v in outputs.values()):
                entry["outputs"] = {k: np.asarray(v).tolist() for k, v in outputs.items()}
    example.cross_checks.append(entry)


def cross_check_onnx(example: Example) -> None:
    model, feeds = example.onnx_model, example.inputs
    cross_check(example, f"onnxruntime {version('onnxruntime')}", "onnxruntime runs model.onnx",
                lambda: onnxruntime_run(model, feeds))
    if example.cross_checks[-1]["status"] == "refused" and "onnxruntime(onnx)" not in example.expected_refused:
        # `poolir verify --peer onnxruntime` runs the same model: that row is expected to fail the same way.
        detail = example.cross_checks[-1]["detail"]
        example.expected_refused["onnxruntime(onnx)"] = (
            f"onnxruntime {version('onnxruntime')} has no kernel for this operator version"
            if "NOT_IMPLEMENTED" in detail else f"onnxruntime {version('onnxruntime')} refuses the model (see cross_checks)")
    cross_check(example, f"openvino {version('openvino')}",
                "OpenVINO's own ONNX frontend (convert_model) converts model.onnx, CPU plugin runs it",
                lambda: openvino_convert_and_run(model, feeds))
    if example.cross_checks[-1]["status"] == "refused":
        example.expected_refused["openvino(onnx)"] = (
            f"OpenVINO {version('openvino')}'s convert_model refuses the model (see cross_checks)")
    if example.cross_checks[-1]["status"] == "differs":
        # `poolir verify --peer openvino` runs OpenVINO's converter as the path openvino(onnx): it differs the same way.
        example.known_deviations["openvino(onnx)"] = (
            f"OpenVINO {version('openvino')}'s convert_model computes something else here (see cross_checks)")
