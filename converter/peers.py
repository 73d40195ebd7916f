"""The real engines, onnxruntime and OpenVINO, called one way everywhere: by `poolir verify --peer`
and by the tests, which use them as oracles.

Both run on the CPU with one thread and settings that cannot change the numbers: onnxruntime without
graph optimisation, OpenVINO with f32 inference precision (its CPU plugin would otherwise run bf16 or
f16 on machines that have them). Neither engine is a dependency of poolir itself (the test extra installs
them): they are the only imports made inside functions, when a peer is called, and `poolir verify` checks
they are installed before it uses them.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import tempfile
from pathlib import Path
from typing import Iterable, Mapping

import ml_dtypes
import numpy as np
import onnx

# onnx >= 1.23 stamps IR version 14 on new models; onnxruntime 1.31 reads up to 13. Every pooling op
# version (up to opset 22) is expressible in IR version 10, so lowering the stamp changes nothing else.
ONNXRUNTIME_MAX_IR_VERSION = 10
OPENVINO_CPU_CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "NUM_STREAMS": "1", "INFERENCE_NUM_THREADS": "1"}


def onnxruntime_run(model, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run an onnx.ModelProto with onnxruntime on the CPU, one thread, no graph optimisation."""
    import onnxruntime as ort

    if model.ir_version > ONNXRUNTIME_MAX_IR_VERSION:
        model = onnx.ModelProto.FromString(model.SerializeToString())
        model.ir_version = ONNXRUNTIME_MAX_IR_VERSION
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, dict(feeds))))


@contextlib.contextmanager
def openvino_telemetry_off():
    """`import openvino` and openvino.convert_model report to an analytics server from a forked process
    (openvino_telemetry: on unless a consent file in the home folder says no, off when CI=true). poolir contacts
    no server and leaves the home folder alone: CI=true for the import and each conversion, then as it was."""
    saved = os.environ.get("CI")
    os.environ["CI"] = "true"
    try:
        yield
    finally:
        if saved is None:
            del os.environ["CI"]
        else:
            os.environ["CI"] = saved


def openvino_module():
    """The openvino module, imported with its telemetry off (importing it sends an event too)."""
    with openvino_telemetry_off():
        import openvino
    return openvino


@functools.lru_cache(maxsize=1)
def openvino_core():
    """One OpenVINO Core per process: creating one loads the plugins, which costs more than a small model."""
    return openvino_module().Core()


def openvino_run_xml(xml_path: str | os.PathLike, feeds: Mapping[str, np.ndarray],
                     output_names: Iterable[str] = ()) -> dict[str, np.ndarray]:
    """Read an IR file with OpenVINO and run it on the CPU; outputs keyed by tensor name.

    An output port may carry several tensor names; the one among `output_names` is used when present,
    else the first in sorted order, else the name of its Result layer (what poolir's runtime returns it under:
    OpenVINO's PyTorch frontend leaves a network's outputs without tensor names).
    """
    core = openvino_core()
    return _openvino_infer(core.read_model(os.fspath(xml_path)), feeds, output_names)


def openvino_v10_output_names(model) -> list[tuple[str, str]]:
    """(poolir's name, OpenVINO's name) of each output of an IR v10 `ir.Model`, in the order of its Results.

    IR v10 has no tensor names, so OpenVINO 2026.4 names an output after the layer that produces it, with
    ".<output index>" when that layer has several outputs (a MaxPool "pool" with indices: "pool.0",
    "pool.1"); poolir names it after its Result layer (runtime/ir_executor.py). It also returns an i64
    output of a v10 IR as i32 (openvino_v10_i64_outputs).
    """
    return [(ours, theirs) for ours, theirs, _ in _v10_outputs(model)]


def openvino_v10_i64_outputs(model) -> set[str]:
    """poolir's names of the outputs of an IR v10 `ir.Model` that it declares i64: OpenVINO 2026.4 returns
    them as i32."""
    return {ours for ours, _, element_type in _v10_outputs(model) if element_type == "i64"}


def _v10_outputs(model) -> list[tuple[str, str, str | None]]:
    layers = {layer.id: layer for layer in model.layers}
    producers = {(edge.to_layer, edge.to_port): (edge.from_layer, edge.from_port) for edge in model.edges}
    names = []
    for result in (layer for layer in model.layers if layer.type == "Result" and layer.inputs):
        source = producers.get((result.id, result.inputs[0].id))
        if source is None:
            continue
        producer = layers[source[0]]
        index = [port.id for port in producer.outputs].index(source[1])
        port = producer.outputs[index]
        ours = port.names[0] if port.names else result.name
        names.append((ours, producer.name if len(producer.outputs) == 1 else f"{producer.name}.{index}",
                      port.element_type))
    return names


def openvino_run_onnx(model, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """OpenVINO's own ONNX frontend + CPU plugin (to compare poolir's conversion with OpenVINO's)."""
    return _openvino_infer(openvino_convert(model), feeds)


def openvino_convert(model):
    """OpenVINO's own ONNX -> ov.Model conversion (openvino.convert_model, what ovc does) of an onnx.ModelProto."""
    ov = openvino_module()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "model.onnx")
        onnx.save(model, path)
        with openvino_telemetry_off():
            return ov.convert_model(str(path))


def openvino_read(xml_path: str | os.PathLike):
    """An IR file read by OpenVINO (an ov.Model)."""
    return openvino_core().read_model(os.fspath(xml_path))


def openvino_run_model(model, feeds: Mapping[str, np.ndarray], output_names: Iterable[str] = ()):
    """Run an ov.Model (openvino_convert, openvino_read) on the CPU; outputs keyed by tensor name."""
    return _openvino_infer(model, feeds, output_names)


def openvino_tensor_names(model) -> set[str]:
    """Every tensor name of an ov.Model's ports (OpenVINO keeps an ONNX model's tensor names on them)."""
    return {name for op in model.get_ops() if op.get_type_name() not in ("Parameter", "Constant", "Result")
            for output in op.outputs() for name in output.get_names()}


def openvino_tensors(model, feeds: Mapping[str, np.ndarray], names: Iterable[str]) -> dict[str, np.ndarray]:
    """The tensors `names` of an ov.Model, computed on the CPU by marking them as extra outputs (on a copy)."""
    model = model.clone()
    names = list(names)
    model.add_outputs(names)
    return {name: value for name, value in _openvino_infer(model, feeds, names).items() if name in set(names)}


def onnxruntime_tensors(model, feeds: Mapping[str, np.ndarray], names: Iterable[str]) -> dict[str, np.ndarray]:
    """The tensors `names` of an onnx.ModelProto as onnxruntime computes them, marked as extra graph outputs (of a
    copy: onnxruntime accepts an output without a declared type)."""
    copy = onnx.ModelProto.FromString(model.SerializeToString())
    declared = {output.name for output in copy.graph.output}
    names = list(names)
    copy.graph.output.extend(onnx.ValueInfoProto(name=name) for name in names if name not in declared)
    return {name: value for name, value in onnxruntime_run(copy, feeds).items() if name in set(names)}


def unsupported_by_peer(peer: str, error: BaseException) -> bool:
    """Whether a peer's failure means it has no kernel (no conversion) for an operator of the model: onnxruntime's
    NOT_IMPLEMENTED ("Could not find an implementation for AveragePool(1) node"), OpenVINO's frontend listing
    operations it has no conversion rule for. Such a path says nothing about the model.

    OpenVINO reports both kinds through one exception (OpConversionFailure, raised in unconverted_ops_report.cpp):
    "No conversion rule found for operations: X" is a missing rule, but "Conversion is failed for: X" is its
    converter or shape inference rejecting a node it knows (a kernel larger than the padded input, a reflect pad
    past the edge), which is a finding about the model, not a gap in the peer."""
    text = f"{type(error).__name__}: {error}"
    if peer == "onnxruntime":
        return "NOT_IMPLEMENTED" in text or type(error).__name__ == "NotImplemented"
    if peer == "openvino":
        return "No conversion rule found" in text and not _openvino_failed_conversions(text)
    return False


def peer_failure_summary(error: BaseException) -> str:
    """One line saying what a peer refused and why. OpenVINO's first line is only where its check sits in its
    sources ("Check 'false' failed at .../unconverted_ops_report.cpp:151:"); the node and the problem follow."""
    text = str(error).strip()
    failures = _openvino_failed_conversions(text)
    if failures:
        return f"{type(error).__name__}: " + "; ".join(failures)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].startswith(("Check ", "Exception from ")):
        # A Check message ends with the problem itself; "While validating node" names the node when there is one.
        node = next((line for line in lines if line.startswith("While validating node")), "")
        return f"{type(error).__name__}: {node + ' ' if node else ''}{lines[-1]}"
    return f"{type(error).__name__}: {lines[0] if lines else ''}"


_OPENVINO_FAILED_OP = re.compile(r"^-- (\S+) with a message:$", re.MULTILINE)
_OPENVINO_ONNX_NODE = re.compile(r"While validating ONNX node '<Node\((\w+)\): ([^>]*)>'")


def _openvino_failed_conversions(text: str) -> list[str]:
    """Each node OpenVINO's ONNX frontend knows but failed to convert, from its detailed log
    ("-- Pad-17 with a message:" ... "While validating ONNX node '<Node(Pad): y>'" ... the problem, last):
    "Pad-17 at node 'y': REFLECT padding mode requires ...". Empty when no node failed that way."""
    failures = []
    starts = list(_OPENVINO_FAILED_OP.finditer(text))
    for start, following in zip(starts, starts[1:] + [None]):
        block = text[start.end():following.start() if following else len(text)].split("\nSummary:")[0]
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        node = _OPENVINO_ONNX_NODE.search(block)
        where = f" at node '{node.group(2)}'" if node else ""
        problem = lines[-1] if lines else "no message"
        failures.append(f"{start.group(1)}{where}: {problem}")
    return failures


def openvino_convert_to_xml(model, xml_path: str | os.PathLike) -> Path:
    """OpenVINO's own ONNX -> IR conversion, saved without fp16 compression beside `xml_path`."""
    ov = openvino_module()
    xml_path = Path(xml_path)
    onnx_path = xml_path.with_suffix(".onnx")
    onnx.save(model, onnx_path)
    with openvino_telemetry_off():
        converted = ov.convert_model(str(onnx_path))
    ov.save_model(converted, str(xml_path), compress_to_fp16=False)
    return xml_path


def _openvino_infer(model, feeds: Mapping[str, np.ndarray], output_names: Iterable[str] = ()):
    ov = openvino_module()

    compiled = openvino_core().compile_model(model, "CPU", OPENVINO_CPU_CONFIG)
    inputs = {}
    for port in compiled.inputs:
        name = next((n for n in sorted(port.get_names()) if n in feeds), port.get_any_name())  # any of its names
        array = np.require(feeds[name], requirements="C")  # keeps a 0-d feed 0-d (ascontiguousarray makes it [1])
        if array.dtype == ml_dtypes.bfloat16:
            # OpenVINO's Python API takes bfloat16 only as raw 16-bit words of a bf16 tensor ...
            tensor = ov.Tensor(ov.Type.bf16, ov.Shape(list(array.shape)))
            tensor.data.view(np.uint16)[...] = array.view(np.uint16)
            inputs[name] = tensor
        else:
            inputs[name] = ov.Tensor(array)
    results = compiled.create_infer_request().infer(inputs)
    wanted = set(output_names)
    outputs = {}
    for port in compiled.outputs:
        names = sorted(port.get_names()) or [port.get_node().get_friendly_name()]
        chosen = next((n for n in names if n in wanted), names[0])
        array = np.array(results[port])
        # ... and hands bfloat16 results back as float16-typed words: reinterpret, do not convert.
        outputs[chosen] = array.view(ml_dtypes.bfloat16) if port.get_element_type() == ov.Type.bf16 else array
    return outputs
