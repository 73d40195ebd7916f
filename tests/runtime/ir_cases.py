"""Helpers for the IR executor tests: build IR with OpenVINO's own opset API, run it with OpenVINO
(the oracle) and with poolir, compare.

OpenVINO builds and serialises the IR (`openvino.save_model`), so the files under test are exactly
what OpenVINO writes; poolir reads them with `ir.read_model` and runs them with `runtime.Session`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import openvino as ov
import openvino.opset1 as ov1
import openvino.opset8 as ov8
import openvino.opset14 as ov14
import openvino.opset16 as ov16

from tests.peers import openvino_run_xml

OV_TYPES = {
    np.dtype(np.float32): ov.Type.f32, np.dtype(np.float16): ov.Type.f16, np.dtype(np.float64): ov.Type.f64,
    np.dtype(np.int8): ov.Type.i8, np.dtype(np.uint8): ov.Type.u8, np.dtype(np.int32): ov.Type.i32,
    np.dtype(np.int64): ov.Type.i64,
}


def save_ir(outputs, parameters, path: Path) -> Path:
    """Serialise an OpenVINO graph (outputs: node outputs) as IR v11 without f16 compression."""
    model = ov.Model(list(outputs), list(parameters), "case")
    ov.save_model(model, str(path), compress_to_fp16=False)
    return path


def single_layer_ir(build: Callable, shape: Sequence[int], dtype, path: Path, *, all_outputs: bool = True,
                    via_bf16: bool = False) -> Path:
    """IR with one Parameter "x" feeding `build(param)`; every output of the built node is a Result.

    via_bf16: the Parameter is f32 and Convert layers wrap the node in bfloat16 (numpy feeds cannot be
    bf16 in OpenVINO's Python API), so the pooling layer itself runs on bf16.
    """
    param = ov1.parameter(list(shape), ov.Type.f32 if via_bf16 else OV_TYPES[np.dtype(dtype)], name="x")
    source = ov1.convert(param, "bf16") if via_bf16 else param
    node = build(source)
    outputs = list(node.outputs()) if all_outputs else [node.output(0)]
    if via_bf16:
        outputs = [ov1.convert(o, "f32").output(0) if o.get_element_type() == ov.Type.bf16 else o for o in outputs]
    return save_ir(outputs, [param], path)


def read_ir(path: Path):
    from poolir import ir
    return ir.read_model(path)


def run_poolir(path: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    from poolir import runtime
    return runtime.Session(read_ir(path)).run(feeds)


def assert_matches_openvino(path: Path, feeds: dict[str, np.ndarray], *, rtol: float = 1e-5,
                            atol: float = 1e-6, context: str = "") -> dict[str, np.ndarray]:
    """Run `path` with OpenVINO and with poolir; outputs must agree in name, shape, dtype and value.

    Integer outputs (indices, integer pooling) must be equal; float outputs within rtol/atol, with NaN
    where OpenVINO has NaN. Returns poolir's outputs.
    """
    expected = openvino_run_xml(path, feeds)
    actual = run_poolir(path, feeds)
    assert sorted(actual) == sorted(expected), f"{context}: output names {sorted(actual)} vs {sorted(expected)}"
    for name, want in expected.items():
        got = actual[name]
        where = f"{context}: output {name!r}"
        assert got.shape == want.shape, f"{where}: shape {got.shape} vs OpenVINO {want.shape}"
        assert got.dtype == want.dtype, f"{where}: dtype {got.dtype} vs OpenVINO {want.dtype}"
        if want.dtype.kind in "iub":
            np.testing.assert_array_equal(got, want, err_msg=where)
        else:
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol,
                                       equal_nan=True, err_msg=where)
    return actual


# ---------------------------------------------------------------------------------------------------
# Pooling layers through the opset API, one signature for every version


def avg_pool_node(version: int, x, *, kernel, strides, pads_begin, pads_end, exclude_pad, rounding,
                  auto_pad="explicit", dilations=None):
    common = dict(strides=list(strides), pads_begin=list(pads_begin), pads_end=list(pads_end),
                  kernel_shape=list(kernel), exclude_pad=exclude_pad, rounding_type=rounding, auto_pad=auto_pad)
    if version == 16:
        return ov16.avg_pool(x, dilations=list(dilations or [1] * len(kernel)), **common)
    module = {1: ov1, 14: ov14}[version]
    return module.avg_pool(x, **common)


def max_pool_node(version: int, x, *, kernel, strides, pads_begin, pads_end, rounding, auto_pad="explicit",
                  dilations=None, axis=0, index_type="i64"):
    if version == 1:
        return ov1.max_pool(x, list(strides), list(pads_begin), list(pads_end), list(kernel), rounding, auto_pad)
    module = {8: ov8, 14: ov14}[version]
    return module.max_pool(x, list(strides), list(dilations or [1] * len(kernel)), list(pads_begin),
                           list(pads_end), list(kernel), rounding, auto_pad, index_element_type=index_type,
                           axis=axis)
