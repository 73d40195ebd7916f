"""The real engines, as test oracles: onnxruntime and OpenVINO, called one way everywhere.

Tests import these helpers instead of calling the peers directly, so that every cross-check
runs the peers with the same settings (one thread, no graph optimisation that could change numbers).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import onnx

_core = None
# onnx >= 1.23 stamps IR version 14 on new models; onnxruntime 1.31 reads up to 13. Every pooling op
# version (up to opset 22) is expressible in IR version 10, so lowering the stamp changes nothing else.
ORT_MAX_IR_VERSION = 10


def onnxruntime_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run an ONNX model with onnxruntime on the CPU; returns outputs by name."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    if model.ir_version > ORT_MAX_IR_VERSION:
        model = onnx.ModelProto.FromString(model.SerializeToString())
        model.ir_version = ORT_MAX_IR_VERSION
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


def openvino_core():
    global _core
    if _core is None:
        import openvino as ov

        _core = ov.Core()
    return _core


def openvino_run_xml(xml_path: str | os.PathLike, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Read an IR file with OpenVINO, compile it for the CPU in f32 precision and run it.

    Outputs are keyed by the tensor name of each output (falling back to its index as a string).
    """
    core = openvino_core()
    model = core.read_model(os.fspath(xml_path))
    return _openvino_infer(model, feeds)


def openvino_run_onnx(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """OpenVINO's own ONNX frontend + CPU plugin, for comparison with poolir's conversion."""
    import openvino as ov

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "model.onnx")
        onnx.save(model, path)
        converted = ov.convert_model(str(path))
        return _openvino_infer(converted, feeds)


def openvino_convert_to_xml(model: onnx.ModelProto, xml_path: str | os.PathLike) -> Path:
    """OpenVINO's own ONNX -> IR conversion, saved without fp16 compression."""
    import openvino as ov

    xml_path = Path(xml_path)
    onnx_path = xml_path.with_suffix(".onnx")
    onnx.save(model, onnx_path)
    ov.save_model(ov.convert_model(str(onnx_path)), str(xml_path), compress_to_fp16=False)
    return xml_path


def _openvino_infer(model, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import openvino as ov

    core = openvino_core()
    # f32 inference precision: the CPU plugin would otherwise run bf16/f16 on some machines.
    compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32", "NUM_STREAMS": "1",
                                                 "INFERENCE_NUM_THREADS": "1"})
    request = compiled.create_infer_request()
    inputs = {}
    for port in compiled.inputs:
        name = port.get_any_name()
        inputs[name] = ov.Tensor(np.ascontiguousarray(feeds[name]))
    results = request.infer(inputs)
    outputs = {}
    for index, port in enumerate(compiled.outputs):
        names = port.get_names()
        key = sorted(names)[0] if names else str(index)
        outputs[key] = np.array(results[port])
    return outputs
