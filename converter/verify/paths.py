"""The paths of a model: which engines run which form of it, and what each produced or why it could not run.

    .onnx   runtime(onnx)            the ONNX graph, ONNX semantics            (the reference)
            runtime(onnx->ir)        converter.onnx_to_ir, OpenVINO semantics
            runtime(onnx->ir->onnx)  and back with converter.ir_to_onnx
            onnxruntime(onnx), onnxruntime(onnx->ir->onnx)        with --peer onnxruntime
            openvino(onnx->ir)       poolir's IR run by OpenVINO   with --peer openvino
    .xml    runtime(ir)              the IR, OpenVINO semantics                (the reference)
            runtime(ir->onnx)        converter.ir_to_onnx, ONNX semantics
            onnxruntime(ir->onnx)    with --peer onnxruntime
            openvino(ir)             the IR file itself run by OpenVINO       with --peer openvino

A conversion is computed once and shared by every path that needs it; a refusal (ConversionError,
UnsupportedError) or another PoolirError on the way is that path's outcome, not an exception. The
conversions are the public `converter.onnx_to_ir` / `converter.ir_to_onnx`, looked up when called.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from poolir import converter, ir, runtime
from poolir.converter.ir_to_onnx import NEWEST_WRITTEN_OPSET
from poolir.converter.peers import onnxruntime_run, openvino_run_xml, openvino_v10_output_names
from poolir.ir.errors import ConversionError, PoolirError, UnsupportedError, UsageError

PEERS = ("onnxruntime", "openvino")


@dataclass(slots=True)
class PathOutcome:
    """What one path produced: outputs by name, or why it produced none."""

    name: str
    outputs: dict[str, np.ndarray] | None = None
    status: str = "ran"  # ran | refused | error
    detail: str | None = None
    note: str | None = None  # how the path's outputs were read, when that is not the obvious way


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


def _run_path(name: str, run: Callable[[], dict[str, np.ndarray]], *, peer: bool) -> PathOutcome:
    try:
        return PathOutcome(name, _arrays(run()))
    except (_Refused, PoolirError) as error:
        refusal = error if isinstance(error, _Refused) else _refusal(error)
        return PathOutcome(name, status=refusal.status, detail=refusal.detail)
    except Exception as error:  # noqa: BLE001 - a peer engine failing is a finding to report, not a crash
        if not peer:
            raise
        text = str(error).strip().splitlines()
        return PathOutcome(name, status="error", detail=f"{type(error).__name__}: {text[0] if text else ''}")


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
               workdir: Path, input_shapes: Mapping[str, Sequence[int]] | None = None) -> list[PathOutcome]:
    """The paths of an ONNX model (see the module docstring); the first is the reference. `input_shapes`
    (--input-shape) are fixed by the conversion too, so that every path runs the shape the feeds have."""
    to_ir = _lazy(lambda: converter.onnx_to_ir(model, input_shapes=dict(input_shapes or {})))
    back = _lazy(lambda: converter.ir_to_onnx(to_ir(), opset=NEWEST_WRITTEN_OPSET))
    outcomes = [PathOutcome("runtime(onnx)", _arrays(runtime.run(model, feeds)))]
    outcomes.append(_run_path("runtime(onnx->ir)", lambda: runtime.run(to_ir(), feeds), peer=False))
    outcomes.append(_run_path("runtime(onnx->ir->onnx)", lambda: runtime.run(back(), feeds), peer=False))
    if "onnxruntime" in peers:
        outcomes.append(_run_path("onnxruntime(onnx)", lambda: onnxruntime_run(model, feeds), peer=True))
        outcomes.append(_run_path("onnxruntime(onnx->ir->onnx)", lambda: onnxruntime_run(back(), feeds),
                                  peer=True))
    if "openvino" in peers:
        def openvino_on_poolir_ir():
            xml_path = workdir / "onnx_to_ir.xml"
            ir.write_model(to_ir(), xml_path)
            return openvino_run_xml(xml_path, feeds, output_names)

        outcomes.append(_run_path("openvino(onnx->ir)", openvino_on_poolir_ir, peer=True))
    return outcomes


def ir_paths(model, xml_path: Path, feeds: Mapping[str, np.ndarray], peers: Sequence[str],
             output_names: Sequence[str]) -> list[PathOutcome]:
    """The paths of an IR model (see the module docstring); the first is the reference."""
    back = _lazy(lambda: converter.ir_to_onnx(model, opset=NEWEST_WRITTEN_OPSET))
    outcomes = [PathOutcome("runtime(ir)", _arrays(runtime.run(model, feeds)))]
    outcomes.append(_run_path("runtime(ir->onnx)", lambda: runtime.run(back(), feeds), peer=False))
    if "onnxruntime" in peers:
        outcomes.append(_run_path("onnxruntime(ir->onnx)", lambda: onnxruntime_run(back(), feeds), peer=True))
    if "openvino" in peers:
        outcome = _run_path("openvino(ir)", lambda: openvino_run_xml(xml_path, feeds, output_names), peer=True)
        if model.version == 10 and outcome.outputs is not None:
            _by_position(outcome, openvino_v10_output_names(model))
        outcomes.append(outcome)
    return outcomes


def _by_position(outcome: PathOutcome, names: list[tuple[str, str]]) -> None:
    """OpenVINO's outputs of an IR v10 model under poolir's names: v10 has no tensor names, so OpenVINO
    names each output after its layer (peers.openvino_v10_output_names); pair them by position instead."""
    pairs = [(ours, theirs) for ours, theirs in names if theirs in outcome.outputs and ours != theirs]
    if not pairs:
        return
    theirs_to_ours = {theirs: ours for ours, theirs in pairs}
    outcome.outputs = {theirs_to_ours.get(name, name): array for name, array in outcome.outputs.items()}
    outcome.note = ("IR v10 has no tensor names and OpenVINO names its outputs after their layers; compared "
                    "by position: " + ", ".join(f"{ours} = {theirs}" for ours, theirs in pairs))
