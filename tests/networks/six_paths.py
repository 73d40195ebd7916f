"""The six ways a whole network goes through poolir, each compared with the independent engine that gives that
path its meaning (issue 11). Used by test_six_paths.py and by `python -m tests.networks.paths_table`.

    1 onnx                  poolir.runtime on the ONNX                             vs onnxruntime on the ONNX
    2 onnx->ir (openvino)   poolir's ONNX -> IR (written, .xml + .bin) on OpenVINO vs onnxruntime on the ONNX
    3 onnx->ir (poolir)     that IR file read back and run by poolir.runtime       vs onnxruntime on the ONNX
    4 onnx->ir->onnx (ort)  poolir's IR -> ONNX of that IR on onnxruntime          vs onnxruntime on the ONNX;
                            and the graph outputs keep their names, order and declared shapes
    5 ov ir (poolir)        OpenVINO's own IR of the ONNX (convert_model + save_model, compress_to_fp16 False or
                            True) run by poolir.runtime                            vs OpenVINO on that IR
    6 ov ir->onnx (ort)     poolir's IR -> ONNX of OpenVINO's IR on onnxruntime    vs OpenVINO on that IR

Paths 5 and 6 are judged against OpenVINO on its own IR, not against the ONNX: the IR means what OpenVINO
computes for it, and OpenVINO's ONNX frontend computes something else than onnxruntime on two networks
(torchvision.OPENVINO_DIVERGENT). With compress_to_fp16 both sides compute in f32 from the same f16-rounded
weights, so the f32 tolerance of `agree` applies on every path.

A path that poolir refuses (a PoolirError: an unsupported operator, no exact conversion) is an Outcome with
status "refused" and the error's message; anything else raised is a bug and propagates.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

from poolir import converter, ir, runtime
from poolir.ir.errors import PoolirError
from tests.networks.peers import agree, openvino_ir_of, run_onnxruntime, run_openvino_xml

ONNX_PATHS = ("onnx", "onnx->ir (openvino)", "onnx->ir (poolir)", "onnx->ir->onnx (ort)")
OPENVINO_IR_PATHS = ("ov ir (poolir)", "ov ir->onnx (ort)")
PATHS = ONNX_PATHS + OPENVINO_IR_PATHS


@dataclass(frozen=True)
class Outcome:
    """One path on one network: "ok" or "differs" with the largest |difference| over all outputs (and that as a
    fraction of the output's magnitude), or "refused" with poolir's message."""

    status: str
    max_abs: float = 0.0
    max_rel: float = 0.0
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def cell(self) -> str:
        """The markdown table cell: `ok 1.2e-06`, `DIFFERS 0.31 (y)`, `refused: ...`."""
        if self.status == "refused":
            return f"refused: {self.detail}".replace("|", "\\|")
        number = f"{self.max_abs:.2g}" if self.max_abs else "0"
        return f"ok {number}" if self.ok else f"DIFFERS {number} ({self.detail})"


def compare(actual: dict[str, np.ndarray], expected: dict[str, np.ndarray]) -> Outcome:
    """Every expected output present and within `agree`'s tolerance: float32's, or float16's and bfloat16's for an
    output of those types (a float16 network's logits differ between engines by an ulp of float16, 1e-3 of their
    size: measured on a ResNet-18 exported after model.half(), poolir, onnxruntime and OpenVINO each 5e-4 to 9e-4
    from the float64 result)."""
    missing = sorted(set(expected) - set(actual))
    if missing:
        return Outcome("differs", float("inf"), float("inf"), f"outputs {sorted(actual)}, expected {sorted(expected)}")
    worst, failed = (0.0, 0.0), []
    for name, value in expected.items():
        ok, max_abs, max_rel = agree(actual[name], value, _tolerance_dtype(value))
        if not max_abs <= worst[0]:  # NaN (non-finite values that differ) counts as the worst
            worst = (max_abs, max_rel)
        if not ok:
            failed.append(f"{name}: {max_abs:.3g} = {max_rel:.3g} of its size")
    return Outcome("differs" if failed else "ok", *worst, "; ".join(failed))


def _tolerance_dtype(value: np.ndarray) -> np.dtype:
    import ml_dtypes

    narrow = value.dtype in (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))
    return value.dtype if narrow else np.dtype(np.float32)


def _attempt(path) -> Outcome:
    try:
        return path()
    except PoolirError as error:
        return Outcome("refused", detail=str(error).splitlines()[0])


def onnx_paths(model, feeds: dict[str, np.ndarray], folder: Path) -> dict[str, Outcome]:
    """Paths 1-4 for `model` (a ModelProto, or the path of a .onnx with external data)."""
    proto = model if isinstance(model, onnx.ModelProto) else onnx.load(model)  # external data loaded
    names = [output.name for output in proto.graph.output]
    reference = run_onnxruntime(model, feeds)
    xml = Path(folder) / "poolir.xml"
    outcomes = {"onnx": _attempt(lambda: compare(runtime.run(model, feeds), reference))}

    def converted():
        ir.write_model(converter.onnx_to_ir(proto), xml)
        return compare(run_openvino_xml(xml, feeds, names), reference)

    outcomes["onnx->ir (openvino)"] = _attempt(converted)
    if outcomes["onnx->ir (openvino)"].status == "refused":  # the conversion itself refused: so do the rest
        outcomes["onnx->ir (poolir)"] = outcomes["onnx->ir->onnx (ort)"] = outcomes["onnx->ir (openvino)"]
        return outcomes
    outcomes["onnx->ir (poolir)"] = _attempt(lambda: compare(runtime.run(ir.read_model(xml), feeds), reference))

    def round_trip():
        back = converter.ir_to_onnx(ir.read_model(xml))
        lost = signature_lost(proto, back)
        if lost:
            return Outcome("differs", float("inf"), float("inf"), lost)
        return compare(run_onnxruntime(back, feeds), reference)

    outcomes["onnx->ir->onnx (ort)"] = _attempt(round_trip)
    return outcomes


def openvino_ir_paths(model, feeds: dict[str, np.ndarray], folder: Path,
                      compress_to_fp16: bool) -> dict[str, Outcome]:
    """Paths 5-6 on OpenVINO's own IR of `model`."""
    proto = model if isinstance(model, onnx.ModelProto) else onnx.load(model, load_external_data=False)
    names = [output.name for output in proto.graph.output]
    xml = openvino_ir_of(model, folder, compress_to_fp16=compress_to_fp16,
                         name="openvino_f16" if compress_to_fp16 else "openvino_f32")
    reference = run_openvino_xml(xml, feeds, names)

    def poolir_runs():
        read = ir.read_model(xml)
        return compare(ir_outputs_by_onnx_name(read, runtime.run(read, feeds), names), reference)

    def converted():
        back = converter.ir_to_onnx(ir.read_model(xml))
        return compare(run_onnxruntime(back, feeds), reference)

    return {"ov ir (poolir)": _attempt(poolir_runs), "ov ir->onnx (ort)": _attempt(converted)}


def output_signature(model: onnx.ModelProto) -> list[tuple[str, tuple | None]]:
    """[(name, dims)] of the graph outputs in order; dims None when undeclared, a dim None when symbolic."""
    signature = []
    for output in model.graph.output:
        tensor = output.type.tensor_type
        dims = (tuple(d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim)
                if tensor.HasField("shape") else None)
        signature.append((output.name, dims))
    return signature


def signature_lost(source: onnx.ModelProto, back: onnx.ModelProto) -> str:
    """What the round trip lost of the source's graph outputs: a name, the order, or a declared static dim (""
    if nothing; an undeclared output or a symbolic dim may come back with any dims)."""
    before, after = output_signature(source), output_signature(back)
    if [name for name, _ in before] != [name for name, _ in after]:
        return f"outputs {[name for name, _ in after]}, the source has {[name for name, _ in before]}"
    for (name, declared), (_, kept) in zip(before, after):
        if declared is None:
            continue
        # A symbolic dim may come back static (the IR infers it from the static input); a static one must stay.
        if kept is None or len(kept) != len(declared) or any(d is not None and k != d for d, k in zip(declared, kept)):
            return f"output '{name}' declared {kept}, the source declares {declared}"
    return ""


def ir_outputs_by_onnx_name(model: ir.Model, outputs: dict, onnx_names: list[str]) -> dict:
    """poolir names an IR output by the first tensor name of the port feeding its Result; OpenVINO's port may
    carry several names (the ONNX output name among them): key poolir's outputs by the ONNX name."""
    renamed = {}
    for result in model.results:
        edge = model.producer(result.id, result.inputs[0].id)
        port = model.layer(edge.from_layer).port(edge.from_port)
        poolir_name = port.names[0] if port.names else result.name
        onnx_name = next((n for n in port.names if n in onnx_names), poolir_name)
        renamed[onnx_name] = outputs[poolir_name]
    return renamed
