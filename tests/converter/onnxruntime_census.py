"""How many ONNX -> IR -> ONNX round trips onnxruntime runs and gets right, over the pooling case grids.

    python -m tests.converter.onnxruntime_census [--verbose]

Three grids: the converter grid (pool_case_grid(443): 447 cases), the runtime's differential grid
(tests/runtime/onnx_grid.py, bfloat16 left out: onnxruntime has no bfloat16 pooling kernel), and the converter
grid's padded cases with dilations up to 3 and pads up to the dilated kernel (pads >= kernel). A case
"converts" when ONNX -> IR -> ONNX (default opset) succeeds; it "matches" when onnxruntime runs the result and
it equals the spec-only oracle of test_onnx_to_ir_oracle.py (onnx_pool_reference). The counts are also given
for the cases whose source onnxruntime runs. A census, not a test: the tests pin each rewrite.
"""

from __future__ import annotations

import collections
import contextlib
import io
import random
import sys

import numpy as np

from poolir.converter import ir_to_onnx, onnx_to_ir
from poolir.ir.errors import PoolirError
from tests.converter.test_onnx_to_ir_oracle import PoolCase, assert_outputs_match, pool_case_grid
from tests.peers import onnxruntime_run
from tests.runtime.onnx_grid import BF16, windowed_cases, global_cases

DTYPES = {np.dtype(np.float32): 1, np.dtype(np.float16): 10, np.dtype(np.float64): 11, np.dtype(np.int8): 3,
          np.dtype(np.uint8): 2}


def _runtime_grid() -> list[PoolCase]:
    cases = []
    for case in windowed_cases() + global_cases():
        if np.dtype(case.dtype) == BF16:
            continue
        cases.append(PoolCase(case.op_type, case.opset, case.shape, dict(case.attrs), case.with_indices,
                              DTYPES[np.dtype(case.dtype)]))
    return cases


def _wide_pad_grid(seed: int = 14) -> list[PoolCase]:
    """The converter grid's explicitly padded cases again, with dilations up to 3 (where the version has them)
    and pads up to the dilated kernel - 1: pads >= kernel, which the spec allows and onnxruntime refuses.
    Cases with a window of padding alone (no spec value) are left out."""
    rng = random.Random(seed)
    cases = []
    for case in pool_case_grid(443):
        if "pads" not in case.attrs or case.op.startswith("Global"):
            continue
        attrs = dict(case.attrs)
        kernel = attrs["kernel_shape"]
        if "dilations" in attrs:
            attrs["dilations"] = [rng.randint(1, 3) for _ in kernel]
        dilations = attrs.get("dilations", [1] * len(kernel))
        extents = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
        attrs["pads"] = [rng.randint(0, e - 1) for e in extents] + [rng.randint(0, e - 1) for e in extents]
        wide = PoolCase(case.op, case.opset, case.shape, attrs, case.indices, case.dtype)
        try:
            expected = wide.expected(wide.feed())
        except Exception:  # no window fits, or a window of padding alone
            continue
        if any(np.isnan(value).any() for value in expected.values()):
            continue
        cases.append(wide)
    return cases


def census(cases: list[PoolCase], verbose: bool) -> collections.Counter:
    tally: collections.Counter = collections.Counter(cases=len(cases))
    for case in cases:
        x = case.feed()
        try:
            onnxruntime_run(case.model(), {"x": x})
            source_runs = True
        except Exception:
            source_runs = False
        tally["source runs"] += source_runs
        try:
            back = ir_to_onnx(onnx_to_ir(case.model()))
        except PoolirError as error:
            tally["refused"] += 1
            if verbose:
                print(f"  refused: {case.id}: {str(error).splitlines()[0][:160]}")
            continue
        tally["runnable"] += 1
        try:
            got = onnxruntime_run(back, {"x": x})
            assert_outputs_match(got, case.expected(x), case.dtype, "round trip")
        except Exception as error:  # every failure is counted
            text = str(error)
            kind = "mismatch" if isinstance(error, AssertionError) else \
                "onnxruntime has no kernel" if "NOT_IMPLEMENTED" in text else \
                "onnxruntime refuses pads >= kernel" if "Pad should be smaller than kernel" in text else \
                "onnxruntime fails otherwise"
            tally[kind] += 1
            if verbose:
                print(f"  {kind}: {case.id}: {text.splitlines()[0][-100:]}")
            continue
        tally["match"] += 1
        tally["match where the source runs"] += source_runs
    return tally


def _openvino_irs(folder) -> list[tuple[str, object, list[tuple[int, ...]]]]:
    """(name, IR path, input shapes): the IRs OpenVINO's ONNX frontend writes for test_openvino_files.py's models,
    and the dynamic-spatial-dims IRs test_ir_to_onnx_dynamic.py has OpenVINO write."""
    from tests.converter import test_ir_to_onnx_dynamic as dynamic
    from tests.ir.test_openvino_files import MODELS, onnx_pool
    from tests.peers import openvino_convert_to_xml

    irs = []
    for name, (op, attrs, shape, dtype, opset, outputs) in MODELS.items():
        path = openvino_convert_to_xml(onnx_pool(op, attrs, shape, dtype, opset, outputs), folder / f"{name}.xml")
        irs.append((name, path, [tuple(2 if d == -1 else d for d in shape)]))
    ops = dynamic.ops
    for index, (kernel, strides, begin, end, rounding) in enumerate(dynamic.AVG_CASES):
        path = dynamic._openvino_ir(folder, lambda x: [ops.avg_pool(x, list(strides), list(begin), list(end),
                                                                    list(kernel), exclude_pad=False,
                                                                    rounding_type=rounding).output(0)],
                                    name=f"avgpool14_{index}")
        irs.append((f"avgpool14_{rounding}_{index}", path, [(1, 2, 7, 6), (1, 2, 8, 8)]))
    for index, (kernel, strides, dilations, begin, end, rounding, axis) in enumerate(dynamic.MAX_CASES):
        def build(x):
            pool = ops.max_pool(x, list(strides), list(dilations), list(begin), list(end), list(kernel),
                                rounding_type=rounding, axis=axis, index_element_type="i64")
            return [pool.output(0), pool.output(1)]
        irs.append((f"maxpool14_axis{axis}_{index}", dynamic._openvino_ir(folder, build, name=f"maxpool14_{index}"),
                    [(1, 2, 7, 6), (1, 2, 8, 8)]))
    return irs


def openvino_ir_census(verbose: bool) -> None:
    import tempfile
    from pathlib import Path

    from poolir import ir
    from tests.peers import openvino_run_xml

    tally: collections.Counter = collections.Counter()
    with tempfile.TemporaryDirectory() as folder:
        with contextlib.redirect_stdout(io.StringIO()):  # OpenVINO's converter prints its arguments
            irs = _openvino_irs(Path(folder))
        for name, path, shapes in irs:
            try:
                back = ir_to_onnx(ir.read_model(path))
                for shape in shapes:
                    x = np.random.default_rng(0).standard_normal(shape)
                    x = x.astype({"f16": np.float16, "f64": np.float64}.get(
                        next(ir.read_model(path).layers_of_type("Parameter")).attrs["element_type"], np.float32))
                    want = list(openvino_run_xml(path, {"x": x}).values())
                    got = onnxruntime_run(back, {"x": x})
                    for output, expected in zip(back.graph.output, want):
                        np.testing.assert_allclose(got[output.name].astype(np.float64), expected.astype(np.float64),
                                                   rtol=2e-3 if x.dtype == np.float16 else 1e-5, atol=1e-5)
            except Exception as error:
                kind = "refused" if isinstance(error, PoolirError) else \
                    "mismatch" if isinstance(error, AssertionError) else "onnxruntime fails"
                tally[kind] += 1
                if verbose:
                    print(f"  {kind}: {name}: {str(error).splitlines()[0][-120:]}")
                continue
            tally["match"] += 1
    print(f"OpenVINO-written IRs: {len(irs)} IRs, onnxruntime runs and matches OpenVINO on {tally['match']}; "
          f"refused by poolir {tally['refused']}, onnxruntime fails {tally['onnxruntime fails']}, "
          f"mismatch {tally['mismatch']}")


def main() -> None:
    verbose = "--verbose" in sys.argv
    for name, cases in (("converter grid pool_case_grid(443)", pool_case_grid(443)),
                        ("runtime grid onnx_grid (no bfloat16)", _runtime_grid()),
                        ("wide-pad grid (pads up to the dilated kernel)", _wide_pad_grid())):
        tally = census(cases, verbose)
        print(f"{name}: {tally['cases']} cases; {tally['runnable']} convert, of which onnxruntime runs and matches "
              f"{tally['match']}; onnxruntime runs {tally['source runs']} sources, of whose round trips it runs and "
              f"matches {tally['match where the source runs']}; "
              + ", ".join(f"{kind} {tally[kind]}" for kind in ("onnxruntime has no kernel",
                                                                 "onnxruntime refuses pads >= kernel",
                                                                 "onnxruntime fails otherwise", "mismatch", "refused")))
    openvino_ir_census(verbose)


if __name__ == "__main__":
    main()
