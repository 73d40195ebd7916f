"""onnxruntime and OpenVINO as oracles for whole networks, and the tolerance their outputs are compared with.

Both engines run on the CPU with settings that cannot change the numbers behind our back: onnxruntime with one
thread and no graph optimisation (no fusions that reorder sums), OpenVINO with f32 inference precision (its CPU
plugin would otherwise pick bf16 or f16 where the hardware has them), one stream and one thread. These are the
settings `poolir.converter.peers` uses for single operators; this module adds what whole networks need: models
given as a path with their weights in external data files, OpenVINO's own ONNX -> IR conversion saved to a
folder (optionally with f16-compressed weights), the IR layer types that conversion writes, and `agree`.

`agree(a, b, dtype)` compares one output of two engines:

    ok  iff  |a - b| <= atol + rtol * |b|  everywhere,  with  atol = rtol * max|b|

so the absolute slack scales with the output's magnitude (logits of size 30 and probabilities of size 1e-3
are judged alike) and nothing near zero needs an absolute number picked per network. `rtol` is per dtype:

    float32  3e-4   Two correct f32 engines differ only in summation order (oneDNN and MLAS block their
                    reductions differently, OpenVINO fuses bias and activation into the convolution). One
                    reduction of K products is off by about sqrt(K) * 2^-24 * sum|terms|: K = 4608 (a 3x3x512
                    ResNet-50 convolution) gives 4e-6 of the magnitude, and layers add at random, so logits come
                    out within a few 1e-6 of their size (measured: DenseNet-121's 121 layers, 4e-6). A softmax
                    turns the logits' absolute error into a relative one: dp_i = p_i (dz_i - sum_j p_j dz_j),
                    so |dp| / max p <= 2 max|dz|, which is the logits' relative error times their range: 4e-6 *
                    10 * 2 = 8e-5 here (measured: ResNet-50 and BN-Inception softmaxes, three weight seeds by
                    three inputs each, at most 7.1e-5), and a trained network's logits reach 20 to 30, so 2.4e-4.
    float16  1e-2   An IR saved with compress_to_fp16 rounds every weight to 11 significant bits (relative
                    error up to 2^-12 = 2.4e-4 each); measured on the small networks' logits: up to 7e-4.
    bfloat16 5e-2   8 significant bits: 2^-9 = 2e-3 per weight.
    float64  1e-9

A wrong pooling window is nothing like that: one element more or less in a 3x3 average moves that output by
about a ninth of its size, a window shifted by one row swaps in a different value. Measured (test_peers.py):
SqueezeNet with one MaxPool's ceil_mode flipped moves its logits by 3e-2 and 8e-2 of their size even though a
global average pool dilutes the changed border; count_include_pad flipped on a padded 3x3 AvgPool, 0.5; on one
of BN-Inception's 3x3 AvgPools, seventy layers before the softmax, 0.6. The closest is a hundred times rtol.
Different shapes never agree, and neither do NaN or infinity anywhere in either output.
"""

from __future__ import annotations

import os
import tempfile
import xml.etree.ElementTree as ElementTree
from collections import Counter
from pathlib import Path
from typing import Mapping

import numpy as np
import onnx

from poolir.converter.peers import openvino_core, openvino_module, openvino_telemetry_off

# onnx >= 1.23 stamps IR version 14 on new models; onnxruntime 1.31 reads fewer. Lowering the stamp of a model
# built here changes nothing else (every op used exists at IR version 10).
ONNXRUNTIME_MAX_IR_VERSION = 10
OPENVINO_CPU_CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "NUM_STREAMS": "1", "INFERENCE_NUM_THREADS": "1"}

RTOL = {np.dtype(np.float32): 3e-4, np.dtype(np.float16): 1e-2, np.dtype(np.float64): 1e-9}
RTOL_BFLOAT16 = 5e-2


def run_onnxruntime(model_or_path, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """onnxruntime on the CPU, one thread, no graph optimisation; outputs by graph output name.

    A path is loaded by onnxruntime itself, so external data files are found beside it."""
    return onnxruntime_runner(model_or_path)(feeds)


def onnxruntime_runner(model_or_path):
    """One onnxruntime session, as a function feeds -> outputs, for running a big model more than once."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    if isinstance(model_or_path, onnx.ModelProto):
        model = model_or_path
        if model.ir_version > ONNXRUNTIME_MAX_IR_VERSION:
            model = onnx.ModelProto.FromString(model.SerializeToString())
            model.ir_version = ONNXRUNTIME_MAX_IR_VERSION
        source = model.SerializeToString()
    else:
        source = os.fspath(model_or_path)
    session = ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]

    def run(feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return dict(zip(names, session.run(names, dict(feeds))))

    return run


def run_openvino_onnx(model_or_path, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """OpenVINO's own ONNX frontend (Core.read_model of the .onnx) and CPU plugin; outputs by the ONNX graph's
    output names."""
    with _onnx_file(model_or_path) as path:
        wanted = [output.name for output in onnx.load(path, load_external_data=False).graph.output]
        return _infer(openvino_core().read_model(os.fspath(path)), feeds, wanted)


def run_openvino_xml(xml_path, feeds: Mapping[str, np.ndarray], output_names=()) -> dict[str, np.ndarray]:
    """An IR file (.xml + .bin) read and run by OpenVINO on the CPU; outputs by tensor name (the one among
    `output_names` when a port has several)."""
    return _infer(openvino_core().read_model(os.fspath(xml_path)), feeds, list(output_names))


def openvino_ir_of(model_or_path, folder, compress_to_fp16: bool = True, name: str = "model") -> Path:
    """OpenVINO's ONNX -> IR conversion (openvino.convert_model + openvino.save_model) into `folder`.

    save_model compresses f32 weights to f16 by default (each weight becomes an f16 Const and a Convert to f32,
    so the model still computes in f32 but with rounded weights): pass compress_to_fp16=False for exact weights.
    Returns the .xml path; the .bin is beside it."""
    ov = openvino_module()
    xml_path = Path(folder) / f"{name}.xml"
    with _onnx_file(model_or_path) as path, openvino_telemetry_off():
        converted = ov.convert_model(os.fspath(path))
    ov.save_model(converted, os.fspath(xml_path), compress_to_fp16=compress_to_fp16)
    return xml_path


def ir_layer_types(xml_path) -> Counter:
    """(type, version) -> count for every layer of an IR file, e.g. ("Convolution", "opset1")."""
    root = ElementTree.parse(os.fspath(xml_path)).getroot()
    return Counter((layer.get("type"), layer.get("version")) for layer in root.iter("layer"))


def rtol_for(dtype) -> float:
    import ml_dtypes

    if np.dtype(dtype) == np.dtype(ml_dtypes.bfloat16):
        return RTOL_BFLOAT16
    return RTOL[np.dtype(dtype)]


def agree(a: np.ndarray, b: np.ndarray, dtype=np.float32) -> tuple[bool, float, float]:
    """Whether two engines' outputs agree within what summation order explains for `dtype` (see the module
    docstring). Returns (ok, max_abs, max_rel): the largest absolute difference, and that difference as a
    fraction of the output's magnitude max|b|. Shapes that differ give (False, inf, inf)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return False, float("inf"), float("inf")
    # A non-finite value agrees only with the same value at the same place (an overflow both engines make, such
    # as a convolution over OpenVINO's -3.4e38 padding windows giving -inf); the finite rest is compared below.
    nonfinite = ~(np.isfinite(a) & np.isfinite(b))
    if nonfinite.any():
        x, y = a[nonfinite], b[nonfinite]
        if not ((x == y) | (np.isnan(x) & np.isnan(y))).all():
            return False, float("nan"), float("nan")
        a, b = a[~nonfinite], b[~nonfinite]
    if a.size == 0:
        return True, 0.0, 0.0
    rtol = rtol_for(dtype)
    scale = float(np.abs(b).max())
    difference = np.abs(a - b)
    max_abs = float(difference.max())
    max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else float("inf"))
    ok = bool((difference <= rtol * scale + rtol * np.abs(b)).all())
    return ok, max_abs, max_rel


class _onnx_file:
    """A path to the model on disk: the given path itself, or a temporary copy of a ModelProto
    (OpenVINO's convert_model takes files, not ModelProto objects)."""

    def __init__(self, model_or_path):
        self._model = model_or_path if isinstance(model_or_path, onnx.ModelProto) else None
        self._path = None if self._model is not None else Path(model_or_path)
        self._tmp = None

    def __enter__(self) -> Path:
        if self._model is None:
            return self._path
        self._tmp = tempfile.TemporaryDirectory(prefix="poolir-networks-")
        path = Path(self._tmp.name, "model.onnx")
        onnx.save(self._model, path)
        return path

    def __exit__(self, *exc) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()


def _infer(model, feeds: Mapping[str, np.ndarray], wanted: list[str]) -> dict[str, np.ndarray]:
    ov = openvino_module()
    compiled = openvino_core().compile_model(model, "CPU", OPENVINO_CPU_CONFIG)
    inputs = {port.get_any_name(): ov.Tensor(np.require(feeds[port.get_any_name()], requirements="C"))  # 0-d stays
              for port in compiled.inputs}
    results = compiled.create_infer_request().infer(inputs)
    outputs = {}
    for index, port in enumerate(compiled.outputs):
        names = port.get_names()
        chosen = next((n for n in wanted if n in names), min(names) if names else str(index))
        outputs[chosen] = np.array(results[port])
    return outputs
