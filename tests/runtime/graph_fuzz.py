"""Random *valid* multi-node ONNX graphs (3-10 nodes, opsets 11-22) for a differential fuzzer of how the ops
compose: shape values flowing through Shape/Gather/Slice/Concat/Unsqueeze/ConstantOfShape into
Reshape/Expand/Tile/Pad/Slice, broadcasting chains, Casts, fan-out/fan-in through Split/Concat, pooling and
convolution after reshapes, dynamic input dims, outputs that also feed other nodes, unused outputs.

`draw(seed)` gives a Graph (model + feeds), or None when the drawn graph is not valid: onnx.checker, strict
shape inference and onnxruntime must accept it, and no intermediate may hold a non-finite value or a float that
a Cast to an integer type cannot hold (undefined behaviour). `compare(graph, tmp)` runs every path and returns
the differences found:

    poolir (ONNX)                       vs onnxruntime
    OpenVINO on poolir's IR             vs onnxruntime
    poolir (IR)                         vs OpenVINO on poolir's IR
    onnxruntime on IR -> ONNX           vs onnxruntime on the original

Run many: `python -m tests.runtime.graph_fuzz [FIRST_SEED] [COUNT]` (prints each finding and a summary).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper

from tests.runtime.graph_fuzz_builder import BOOL, F16, F32, I32, I64, Builder, Graph, broadcast_partner
from tests.runtime.graph_fuzz_compute import (binary, cast, clip, compare_select, dropout, integer_mod, logic, matmul,
                                             more_elementwise, normalization, pad, pad_computed, pool_conv, reduce,
                                             softmax, unary, windows)
from tests.runtime.graph_fuzz_shapes import (concat, constant_chain, constant_of_shape, expand, expand_where, flatten,
                                            gather, gather_computed, gather_nd, reshape, reshape_like,
                                            shape_arithmetic, shape_as_data, slice_, slice_by_shape, slice_computed,
                                            split, tile, transpose, unsqueeze_squeeze)

# How far an engine that sums or rounds in another order may stray, relative to the output's magnitude.
TOLERANCE = {F32: 1e-5, F16: 4e-3}


STEPS = [unary, unary, binary, binary, binary, compare_select, cast, reshape, reshape, expand, constant_of_shape,
         tile, transpose, unsqueeze_squeeze, concat, concat, split, slice_, slice_by_shape, pad, reduce, softmax,
         matmul, pool_conv, pool_conv, flatten, gather, shape_as_data, clip, shape_arithmetic, shape_arithmetic,
         reshape_like, expand_where, gather_computed, more_elementwise, more_elementwise, normalization, integer_mod,
         windows, windows, constant_chain, pad_computed, slice_computed, logic, dropout, gather_nd]


def build(seed: int):
    rng = np.random.default_rng(seed)
    opset = int(rng.choice([11, 12, 13, 13, 14, 15, 16, 17, 18, 18, 19, 20, 21, 22]))
    b = Builder(rng, opset)
    dtype = b.pick([F32] * 6 + [F16, I64, I32])
    rank = b.int(1, 4)
    shape = [b.int(1, 5) for _ in range(rank)]
    dynamic = {i for i in range(rank) if b.coin(0.2)} if b.coin(0.35) else set()
    first = b.feed(shape, dtype, dynamic)
    if b.coin(0.3):  # a second input of a broadcastable or unrelated shape
        b.feed(broadcast_partner(b, first) if b.coin() else [b.int(1, 4) for _ in range(b.int(1, 3))],
               b.pick([dtype, F32, BOOL]))
    target = b.int(3, 10)
    attempts = 0
    while len([n for n in b.nodes if n.op_type != "Constant"]) < target and attempts < 60:
        attempts += 1
        step = b.pick(STEPS)
        mark = (len(b.nodes), len(b.initializers), len(b.pool), b.count)
        try:
            done = step(b)
        except (ValueError, IndexError, ZeroDivisionError, AttributeError, TypeError):
            done = False
        if not done:   # roll back a half-built step
            del b.nodes[mark[0]:], b.initializers[mark[1]:], b.pool[mark[2]:]
    produced = [t for t in b.pool if t.name not in b.feeds]
    if not produced:
        return None
    outputs = {produced[-1].name}
    for t in produced[:-1]:
        if b.coin(0.25):
            outputs.add(t.name)   # an output that also feeds later nodes, or a dead end
    graph = helper.make_graph(b.nodes, "fuzz", b.inputs, [onnx.ValueInfoProto(name=n) for n in sorted(outputs)],
                              b.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model, b.feeds, opset


def _typed_outputs(model: onnx.ModelProto) -> onnx.ModelProto:
    inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    known = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    for output in model.graph.output:
        if output.name in known and known[output.name].type.HasField("tensor_type"):
            output.CopyFrom(known[output.name])
    onnx.checker.check_model(model, full_check=True)
    return model, any(v.type.tensor_type.elem_type == TensorProto.FLOAT16
                      for v in list(inferred.graph.value_info) + list(inferred.graph.input)
                      + list(inferred.graph.output))


def _well_defined(model, feeds) -> bool:
    """Every intermediate finite, and every float Cast to an integer type in range (else undefined)."""
    import onnxruntime

    from tests.peers import onnxruntime_run

    onnxruntime.set_default_logger_severity(4)  # a refused model is expected here, not news
    probe = onnx.ModelProto.FromString(model.SerializeToString())
    names = {o.name for o in probe.graph.output}
    for node in probe.graph.node:
        for out in node.output:
            if out and out not in names:
                probe.graph.output.append(onnx.ValueInfoProto(name=out))
                names.add(out)
    values = onnxruntime_run(probe, feeds)
    for node in probe.graph.node:
        if node.op_type in ("Cast", "CastLike") and node.input[0] in values:
            source = np.asarray(values[node.input[0]])
            target = np.asarray(values[node.output[0]])
            if source.dtype.kind == "f" and target.dtype.kind in "iu" and source.size and (
                    not np.isfinite(source).all() or np.abs(source.astype(np.float64)).max() >= 2**31 - 128):
                return False
            if source.dtype.kind == "f" and target.dtype == F16 and np.abs(source).max(initial=0) > 60000:
                return False
    for value in values.values():
        value = np.asarray(value)
        if value.dtype.kind == "f" and not np.isfinite(value).all():
            return False
        if value.dtype == F16 and np.abs(value).max(initial=0) > 1000:   # f16 rounding chains blow up
            return False
    return True


def draw(seed: int) -> Graph | None:
    built = build(seed)
    if built is None:
        return None
    model, feeds, opset = built
    try:
        model, half = _typed_outputs(model)
        if not _well_defined(model, feeds):
            return None
    except Exception:  # noqa: BLE001 - invalid by the checker, inference or onnxruntime: not a valid model
        return None
    return Graph(seed, opset, model, feeds, sorted({n.op_type for n in model.graph.node}), half)


def difference(got, expected, scale_floor: float = 1.0, slack: float = 1.0, half: bool = False) -> str | None:
    got, expected = np.asarray(got), np.asarray(expected)
    if got.shape != expected.shape:
        return f"shape {list(got.shape)} != {list(expected.shape)}"
    if got.dtype != expected.dtype:
        return f"dtype {got.dtype} != {expected.dtype}"
    if expected.dtype.kind != "f":
        if np.array_equal(got, expected):
            return None
        bad = np.argwhere(got != expected)[0]
        return f"at {list(bad)}: {got[tuple(bad)]} != {expected[tuple(bad)]}"
    tolerance = TOLERANCE[F16 if half else expected.dtype] * slack
    scale = max(scale_floor, float(np.abs(expected.astype(np.float64)).max(initial=0)))
    error = np.abs(got.astype(np.float64) - expected)
    if (error <= tolerance * scale + tolerance * np.abs(expected.astype(np.float64))).all():
        return None
    bad = np.unravel_index(int(np.argmax(error)), error.shape)
    return f"largest difference {error.max():.3g} at {list(bad)} (scale {scale:.3g}): {got[bad]} != {expected[bad]}"


@dataclass
class Outcome:
    findings: list = field(default_factory=list)   # (path, message)
    refused: str | None = None                       # the converter's refusal, if any
    back_refused: str | None = None
    paths: int = 0


def compare(graph: Graph, tmp) -> Outcome:
    from poolir import ir, runtime
    from poolir.converter.ir_to_onnx import ir_to_onnx
    from poolir.converter.onnx_to_ir import onnx_to_ir
    from poolir.ir.errors import PoolirError
    from tests.peers import onnxruntime_run, openvino_run_xml

    outcome = Outcome()
    model, feeds = graph.model, graph.feeds
    expected = onnxruntime_run(model, feeds)
    # f16 chains: onnxruntime rounds each node to f16, so do poolir and OpenVINO; allow a few f16 ulps per node.
    slack = 4.0 if any(v.dtype == F16 for v in expected.values()) else 1.0

    def check(path, got, reference, slack=slack):
        outcome.paths += 1
        for name, value in reference.items():
            if name not in got:
                outcome.findings.append((path, f"{name}: missing"))
            elif (problem := difference(got[name], value, slack=slack, half=graph.half)):
                outcome.findings.append((path, f"{name}: {problem}"))

    try:
        check("poolir(onnx) vs onnxruntime", runtime.run(model, feeds), expected)
    except PoolirError as error:
        outcome.findings.append(("poolir(onnx)", f"refused: {error}"))
    except Exception as error:  # noqa: BLE001
        outcome.findings.append(("poolir(onnx)", f"crashed: {type(error).__name__}: {error}"))
    try:
        converted = onnx_to_ir(model)
    except PoolirError as error:
        outcome.refused = str(error)
        return outcome
    except Exception as error:  # noqa: BLE001
        outcome.findings.append(("onnx->ir", f"crashed: {type(error).__name__}: {error}"))
        return outcome
    xml = tmp / "m.xml"
    ir.write_model(converted, xml)
    try:
        openvino = openvino_run_xml(xml, feeds, list(expected))
    except Exception as error:  # noqa: BLE001
        outcome.findings.append(("openvino(onnx->ir)", f"failed: {type(error).__name__}: {str(error)[:300]}"))
        openvino = None
    if openvino is not None:
        check("openvino(onnx->ir) vs onnxruntime", openvino, expected, slack * 4)
    try:
        mine = runtime.run(ir.read_model(xml), feeds)
        check("poolir(onnx->ir) vs openvino", mine, openvino if openvino is not None else expected, slack * 4)
    except Exception as error:  # noqa: BLE001
        outcome.findings.append(("poolir(onnx->ir)", f"failed: {type(error).__name__}: {error}"))
    try:
        back = ir_to_onnx(ir.read_model(xml), opset=max(graph.opset, 11))
    except PoolirError as error:
        outcome.back_refused = str(error)
        return outcome
    except Exception as error:  # noqa: BLE001
        outcome.findings.append(("ir->onnx", f"crashed: {type(error).__name__}: {error}"))
        return outcome
    try:
        check("onnxruntime(onnx->ir->onnx) vs onnxruntime", onnxruntime_run(back, feeds), expected, slack * 4)
    except Exception as error:  # noqa: BLE001
        outcome.findings.append(("onnxruntime(onnx->ir->onnx)", f"failed: {type(error).__name__}: {str(error)[:300]}"))
    return outcome


def main(argv: list[str]) -> int:
    import collections
    import re
    import tempfile
    from pathlib import Path

    first = int(argv[0]) if argv else 0
    count = int(argv[1]) if len(argv) > 1 else 200
    trace = "--trace" in argv
    stats, refusals = collections.Counter(), collections.Counter()
    with tempfile.TemporaryDirectory() as folder:
        for seed in range(first, first + count):
            if trace:
                print(f"seed {seed}", file=sys.stderr, flush=True)   # the last one names an engine's crash
            graph = draw(seed)
            if graph is None:
                stats["invalid"] += 1
                continue
            stats["valid"] += 1
            outcome = compare(graph, Path(folder))
            stats["paths"] += outcome.paths
            if outcome.refused:
                stats["refused"] += 1
                print(f"seed {seed} opset {graph.opset}: onnx->ir refused: {outcome.refused}", flush=True)
            if outcome.back_refused:
                stats["back_refused"] += 1
                refusals["ir->onnx: " + re.sub(r"^.*?\((id \d+, )?", "(", outcome.back_refused)[:100]] += 1
            for path, message in outcome.findings:
                stats["findings"] += 1
                print(f"seed {seed} opset {graph.opset} {graph.ops}: {path}: {message}", flush=True)
    print(dict(stats))
    for text, n in refusals.most_common(30):
        print(f"  {n:4d} {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
