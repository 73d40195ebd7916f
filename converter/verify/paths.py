"""The paths of a model: which engines run which form of it, and what each produced or why it could not run.

    .onnx   runtime(onnx)            the ONNX graph, ONNX semantics            (the reference)
            runtime(onnx->ir)        converter.onnx_to_ir, OpenVINO semantics
            runtime(onnx->ir->onnx)  and back with converter.ir_to_onnx
            onnxruntime(onnx), onnxruntime(onnx->ir->onnx)        with --peer onnxruntime
            openvino(onnx)           OpenVINO's own converter (convert_model) on the ONNX   with --peer openvino
            openvino(onnx->ir)       poolir's IR run by OpenVINO                            with --peer openvino
    .xml    runtime(ir)              the IR, OpenVINO semantics                (the reference)
            runtime(ir->onnx)        converter.ir_to_onnx, ONNX semantics
            onnxruntime(ir->onnx)    with --peer onnxruntime
            openvino(ir)             the IR file itself run by OpenVINO       with --peer openvino
    .xml --source MODEL.onnx         an IR made by anyone, checked against the ONNX it came from:
            runtime(onnx)            the source ONNX, ONNX semantics          (the reference)
            runtime(ir), runtime(ir->onnx), onnxruntime(onnx), onnxruntime(ir->onnx), openvino(ir)

A conversion is computed once and shared by every path that needs it; a refusal (ConversionError,
UnsupportedError) or another PoolirError on the way is that path's outcome, not an exception. A peer without a
kernel for an operator of the model is "unsupported" (peers.unsupported_by_peer), for any model alike. The
conversions are the public `converter.onnx_to_ir` / `converter.ir_to_onnx`, looked up when called.

Each path that ran carries a Probe: the tensor names it exposes and their values for given feeds, which
locate.py uses to find the first node where the path diverges.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from poolir import converter, ir
from poolir.converter.ir_to_onnx import NEWEST_WRITTEN_OPSET
from poolir.converter import peers as engines
from poolir.converter.verify import peer_process
from poolir.converter.verify.peer_process import PeerCrash, PeerFailure
from poolir.converter.verify.locate import Probe, graph_nodes, runtime_probe
from poolir.ir.errors import ConversionError, PoolirError, UnsupportedError, UsageError
from poolir.ir.model import shape_str

PEERS = ("onnxruntime", "openvino")


@dataclass(slots=True)
class PathOutcome:
    """What one path produced: outputs by name, or why it produced none."""

    name: str
    outputs: dict[str, np.ndarray] | None = None
    status: str = "ran"  # ran | refused | error | unsupported
    detail: str | None = None
    note: str | None = None  # how the path's outputs were read, when that is not the obvious way
    probe: Probe | None = None  # how to look inside the path (locate.py); None: it did not run


class _Refused(Exception):
    """A path could not be taken because an earlier step of it (a conversion) refused or failed."""

    def __init__(self, status: str, detail: str):
        super().__init__(detail)
        self.status, self.detail = status, detail


def _refusal(error: PoolirError) -> _Refused:
    """A converter refusing (it will not change the meaning, and says why), or another user error on the way."""
    return _Refused("refused" if isinstance(error, (ConversionError, UnsupportedError)) else "error", str(error))


def _lazy(compute: Callable[[], Any]) -> Callable[[], Any]:
    """Compute once on first use; remember a refusal so that every dependent path reports it."""
    cache: dict[str, Any] = {}

    def get():
        if "value" not in cache:
            try:
                cache["value"] = compute()
            except _Refused as refusal:
                cache["value"] = refusal
            except PoolirError as error:
                cache["value"] = _refusal(error)
        if isinstance(cache["value"], _Refused):
            raise cache["value"]
        return cache["value"]

    return get


def _arrays(outputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
    return {name: np.asarray(value) for name, value in outputs.items()}


def _run_path(name: str, run: Callable[[], dict[str, np.ndarray]], *, probe: Probe | None = None,
              step: Callable[[str], None] | None = None) -> PathOutcome:
    if step is not None:
        step(name)
    try:
        return PathOutcome(name, _arrays(run()), probe=probe)
    except (_Refused, PoolirError) as error:
        refusal = error if isinstance(error, _Refused) else _refusal(error)
        return PathOutcome(name, status=refusal.status, detail=refusal.detail)
    except PeerFailure as failure:  # a peer engine failing is a finding to report, not a crash
        engine = name.split("(")[0]
        if failure.unsupported:
            return PathOutcome(name, status="unsupported", detail=f"not supported by {engine}: {failure.summary}")
        return PathOutcome(name, status="error", detail=failure.summary)
    except PeerCrash as crash:
        return PathOutcome(name, status="error", detail=f"{name.split('(')[0]}: {crash}")


def _onnxruntime_path(name: str, get_model: Callable[[], Any], feeds, step) -> PathOutcome:
    return _run_path(name, lambda: peer_process.onnxruntime_run(get_model(), feeds), step=step,
                     probe=Probe(lambda: set(graph_nodes(get_model())),
                                 lambda wanted: peer_process.onnxruntime_tensors(get_model(), feeds, wanted)))


def _openvino_path(name: str, get_source: Callable[[], tuple[str, Any]], feeds, output_names, step) -> PathOutcome:
    """`get_source` says where OpenVINO's model comes from: ("onnx", model) its own conversion of an ONNX model,
    ("xml", path) an IR file it reads (peer_process: the engine runs in a child process)."""
    return _run_path(name, lambda: peer_process.openvino_run(get_source(), feeds, output_names),
                     step=step, probe=Probe(lambda: peer_process.openvino_tensor_names(get_source()),
                                            lambda wanted: peer_process.openvino_tensors(get_source(), feeds, wanted)))


def _runtime_path(name: str, get_model: Callable[[], Any], feeds, step) -> PathOutcome:
    probe = runtime_probe(get_model, feeds)
    return _run_path(name, lambda: probe.session().run(feeds), probe=probe, step=step)


def check_peers(peers: Sequence[str]) -> tuple[str, ...]:
    """Validate --peer values; a peer that is not installed is a usage error with the install hint."""
    for peer in peers:
        if peer not in PEERS:
            raise UsageError(f"unknown peer {peer!r} (known: {', '.join(PEERS)})")
        if importlib.util.find_spec(peer) is None:
            raise UsageError(f"--peer {peer}: {peer} is not installed (pip install {peer}, or "
                             f"pip install 'poolir[test]')")
    return tuple(dict.fromkeys(peers))


def onnx_paths(model, feeds: Mapping[str, np.ndarray], peers: Sequence[str], output_names: Sequence[str],
               workdir: Path, input_shapes: Mapping[str, Sequence[int]] | None = None,
               step: Callable[[str], None] | None = None) -> list[PathOutcome]:
    """The paths of an ONNX model (see the module docstring); the first is the reference. `input_shapes`
    (--input-shape) are fixed by the conversion too, so that every path runs the shape the feeds have."""
    conversion_notes: list[str] = []
    to_ir = _lazy(lambda: _onnx_to_ir_for(model, feeds, input_shapes, conversion_notes))
    back = _lazy(lambda: converter.ir_to_onnx(to_ir(), opset=NEWEST_WRITTEN_OPSET))
    reference = runtime_probe(lambda: model, feeds, keep=True)
    outcomes = [PathOutcome("runtime(onnx)", _arrays(reference.session().run(feeds)), probe=reference)]
    outcomes.append(_runtime_path("runtime(onnx->ir)", to_ir, feeds, step))
    if conversion_notes:
        outcomes[-1].note = conversion_notes[0]
    outcomes.append(_runtime_path("runtime(onnx->ir->onnx)", back, feeds, step))
    if "onnxruntime" in peers:
        outcomes.append(_onnxruntime_path("onnxruntime(onnx)", lambda: model, feeds, step))
        outcomes.append(_onnxruntime_path("onnxruntime(onnx->ir->onnx)", back, feeds, step))
    if "openvino" in peers:
        def poolir_ir_read_by_openvino():
            xml_path = workdir / "onnx_to_ir.xml"
            if not xml_path.exists():
                ir.write_model(to_ir(), xml_path)
            return "xml", xml_path

        # OpenVINO's models are made again for each use (the run, and the search when the path diverges), not
        # kept: a verify holds no engine's copy of the weights beyond the run that needs it.
        outcomes.append(_openvino_path("openvino(onnx)", lambda: ("onnx", model), feeds,
                                       output_names, step))
        outcomes.append(_openvino_path("openvino(onnx->ir)", poolir_ir_read_by_openvino, feeds, output_names,
                                       step))
    return outcomes


def _onnx_to_ir_for(model, feeds: Mapping[str, np.ndarray], input_shapes, notes: list[str]):
    """converter.onnx_to_ir keeping the dynamic dims; when it refuses them (an exact IR for every length needs the
    length), the conversion for the shapes of this run's feeds, as --input-shape would fix them, said in `notes`."""
    shapes = dict(input_shapes or {})
    try:
        return converter.onnx_to_ir(model, input_shapes=shapes)
    except ConversionError as refusal:
        run_shapes = {name: tuple(np.shape(value)) for name, value in feeds.items()}
        if all(tuple(shapes.get(name, ())) == shape for name, shape in run_shapes.items()):
            raise
        converted = converter.onnx_to_ir(model, input_shapes=run_shapes)
        notes.append("converted for this run's input shapes ("
                     + ", ".join(f"{name}{shape_str(shape)}" for name, shape in run_shapes.items())
                     + f"); with dynamic dims: {refusal}")
        return converted


def ir_paths(model, xml_path: Path, feeds: Mapping[str, np.ndarray], peers: Sequence[str],
             output_names: Sequence[str], source=None, step: Callable[[str], None] | None = None) -> list[PathOutcome]:
    """The paths of an IR model (see the module docstring); the first is the reference: the IR itself, or the
    ONNX model it came from when `source` (an onnx.ModelProto) is given."""
    back = _lazy(lambda: converter.ir_to_onnx(model, opset=NEWEST_WRITTEN_OPSET))
    outcomes = []
    if source is not None:
        reference = runtime_probe(lambda: source, feeds, keep=True)
        outcomes.append(PathOutcome("runtime(onnx)", _arrays(reference.session().run(feeds)), probe=reference))
        outcomes.append(_runtime_path("runtime(ir)", lambda: model, feeds, step))
    else:
        reference = runtime_probe(lambda: model, feeds, keep=True)
        outcomes.append(PathOutcome("runtime(ir)", _arrays(reference.session().run(feeds)), probe=reference))
    outcomes.append(_runtime_path("runtime(ir->onnx)", back, feeds, step))
    if "onnxruntime" in peers:
        if source is not None:
            outcomes.append(_onnxruntime_path("onnxruntime(onnx)", lambda: source, feeds, step))
        outcomes.append(_onnxruntime_path("onnxruntime(ir->onnx)", back, feeds, step))
    if "openvino" in peers:
        outcome = _openvino_path("openvino(ir)", lambda: ("xml", xml_path), feeds, output_names, step)
        if model.version == 10 and outcome.outputs is not None:
            _as_v10_declares(outcome, engines.openvino_v10_output_names(model),
                             engines.openvino_v10_i64_outputs(model))
        outcomes.append(outcome)
    return outcomes


def _as_v10_declares(outcome: PathOutcome, names: list[tuple[str, str]], i64_outputs: set[str]) -> None:
    """OpenVINO's outputs of an IR v10 model under poolir's names and declared types, said in the path's note.

    v10 has no tensor names, so OpenVINO names each output after its layer (peers.openvino_v10_output_names):
    they are paired by position. And it returns an i64 output of a v10 IR as i32 (what `convert --ir-version
    10` warns of): every i32 is an i64, so the values are compared as the i64 the file declares."""
    pairs = [(ours, theirs) for ours, theirs in names if theirs in outcome.outputs and ours != theirs]
    notes = []
    if pairs:
        theirs_to_ours = {theirs: ours for ours, theirs in pairs}
        outcome.outputs = {theirs_to_ours.get(name, name): array for name, array in outcome.outputs.items()}
        notes.append("IR v10 has no tensor names and OpenVINO names its outputs after their layers; compared "
                     "by position: " + ", ".join(f"{ours} = {theirs}" for ours, theirs in pairs))
    narrowed = sorted(name for name, array in outcome.outputs.items()
                      if name in i64_outputs and np.asarray(array).dtype == np.int32)
    if narrowed:
        outcome.outputs = {name: np.asarray(array).astype(np.int64) if name in narrowed else array
                           for name, array in outcome.outputs.items()}
        notes.append("OpenVINO returns IR v10's i64 outputs as i32; compared as i64: " + ", ".join(narrowed))
    if notes:
        outcome.note = "; ".join(notes)

