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


if __name__ == "__main__":
    main()
