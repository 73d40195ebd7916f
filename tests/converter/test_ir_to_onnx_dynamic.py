"""IR with dynamic spatial dims, as OpenVINO writes it (its PyTorch frontend keeps H and W dynamic) -> ONNX,
run by onnxruntime at several concrete sizes, equals OpenVINO running the IR at those sizes.

The IRs are written by OpenVINO itself (openvino.opset14 layers, openvino.save_model), not by poolir.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from poolir import ir
from poolir.converter import ir_to_onnx
from poolir.ir.errors import ConversionError
from tests.peers import onnxruntime_run, openvino_run_xml

ov = pytest.importorskip("openvino", reason="OpenVINO writes and runs the IRs of these tests")
ops = pytest.importorskip("openvino.opset14", reason="OpenVINO writes and runs the IRs of these tests")

SIZES = [(1, 1), (2, 3), (5, 5), (6, 7), (7, 6), (8, 8), (9, 4), (11, 13)]


def _openvino_ir(tmp_path, build, rank: int = 2, name: str = "pool") -> ir.Model:
    """An IR written by OpenVINO: a (1, 2, -1, ...) f32 Parameter, the layers `build` adds, their Results."""
    x = ops.parameter(ov.PartialShape([1, 2] + [-1] * rank), np.float32, name="x")
    outputs = build(x)
    model = ov.Model([out for out in outputs], [x], name)
    path = tmp_path / f"{name}.xml"
    ov.save_model(model, str(path), compress_to_fp16=False)
    return path


def _fits(kernel, strides, dilations, pads_begin, pads_end, size) -> bool:
    """OpenVINO refuses a layer whose dilated kernel does not fit the padded input."""
    return all((k - 1) * d + 1 <= length + b + e
               for k, d, b, e, length in zip(kernel, dilations, pads_begin, pads_end, size))


def _agree(path, sizes, check) -> onnx.ModelProto:
    back = ir_to_onnx(ir.read_model(path))
    onnx.checker.check_model(back, full_check=True)
    names = [output.name for output in back.graph.output]
    ran = 0
    for size in sizes:
        if not check(size):
            continue
        x = np.random.default_rng(sum(size)).permutation(2 * int(np.prod(size))).reshape(1, 2, *size)
        x = (x.astype(np.float32) - x.size / 2) / 4
        expected = list(openvino_run_xml(path, {"x": x}).values())
        got = onnxruntime_run(back, {"x": x})
        for name, want in zip(names, expected):
            assert got[name].shape == want.shape, f"{size}: {name}"
            if got[name].dtype.kind == "f":
                np.testing.assert_allclose(got[name], want, rtol=1e-6, atol=1e-6, err_msg=f"{size}: {name}")
            else:
                np.testing.assert_array_equal(got[name], want, err_msg=f"{size}: {name}")
        ran += 1
    assert ran >= 3
    return back


AVG_CASES = [  # kernel, strides, pads_begin, pads_end, rounding
    ((3, 3), (2, 2), (1, 1), (1, 1), "ceil_torch"),   # torchvision-style, ceil_mode=True, count_include_pad
    ((3, 3), (2, 2), (1, 1), (1, 0), "ceil_torch"),
    ((2, 3), (2, 3), (1, 0), (0, 2), "ceil_torch"),
    ((3, 2), (3, 2), (1, 1), (1, 1), "ceil"),          # OpenVINO's ceil keeps windows starting in the padding
    ((2, 2), (2, 2), (1, 1), (1, 1), "ceil"),
    ((2, 2), (1, 2), (2, 0), (0, 2), "floor"),         # pads as large as the kernel: onnxruntime refuses those
    ((3, 3), (2, 2), (3, 1), (1, 3), "ceil_torch"),
]


@pytest.mark.parametrize("kernel, strides, pads_begin, pads_end, rounding", AVG_CASES)
def test_avgpool14_include_pad_with_dynamic_dims(kernel, strides, pads_begin, pads_end, rounding, tmp_path):
    path = _openvino_ir(tmp_path, lambda x: [ops.avg_pool(x, list(strides), list(pads_begin), list(pads_end),
                                                          list(kernel), exclude_pad=False,
                                                          rounding_type=rounding).output(0)])
    back = _agree(path, SIZES, lambda size: _fits(kernel, strides, (1, 1), pads_begin, pads_end, size))
    pools = [node for node in back.graph.node if node.op_type == "AveragePool"]
    assert len(pools) == 1 and not any(a.name == "pads" for a in pools[0].attribute)


MAX_CASES = [  # kernel, strides, dilations, pads_begin, pads_end, rounding, axis
    ((3, 3), (2, 2), (1, 1), (1, 1), (1, 1), "ceil_torch", 2),
    ((2, 2), (2, 2), (1, 1), (0, 0), (1, 1), "ceil_torch", 3),
    ((3, 2), (1, 2), (2, 1), (1, 0), (2, 1), "floor", 1),
    ((3, 3), (2, 2), (1, 1), (1, 1), (1, 1), "ceil_torch", -2),
]


@pytest.mark.parametrize("kernel, strides, dilations, pads_begin, pads_end, rounding, axis", MAX_CASES)
def test_maxpool14_indices_with_axis_and_dynamic_dims(kernel, strides, dilations, pads_begin, pads_end, rounding,
                                                      axis, tmp_path):
    def build(x):
        pool = ops.max_pool(x, list(strides), list(dilations), list(pads_begin), list(pads_end), list(kernel),
                            rounding_type=rounding, axis=axis, index_element_type="i64")
        return [pool.output(0), pool.output(1)]

    back = _agree(_openvino_ir(tmp_path, build), SIZES,
                  lambda size: _fits(kernel, strides, dilations, pads_begin, pads_end, size))
    assert "ReduceProd" in [node.op_type for node in back.graph.node]


def test_maxpool_rounding_ceil_without_indices_and_dynamic_dims(tmp_path):
    # OpenVINO's ceil keeps a last window starting in the right padding (L=4, k=2, s=2, pads (0, 1)), which
    # ONNX ceil_mode drops: a Pad of OpenVINO's floor value, then MaxPool without pads, for every length.
    path = _openvino_ir(tmp_path, lambda x: [ops.max_pool(x, [2, 2], [1, 1], [0, 0], [1, 1], [2, 2],
                                                          rounding_type="ceil").output(0)])
    _agree(path, SIZES, lambda size: True)


def test_maxpool_pads_as_large_as_the_kernel_without_indices_and_dynamic_dims(tmp_path):
    # pads (2, 2) with k=2: onnxruntime refuses them as pool pads; a Pad of OpenVINO's floor value holds them.
    path = _openvino_ir(tmp_path, lambda x: [ops.max_pool(x, [1, 2], [1, 1], [2, 1], [1, 2], [2, 2],
                                                          rounding_type="ceil_torch").output(0)])
    back = _agree(path, SIZES, lambda size: True)
    assert [node.op_type for node in back.graph.node][:2] == ["Pad", "MaxPool"]


def test_ceil_torch_with_pads_end_beyond_the_kernel_is_refused_with_the_reason(tmp_path):
    path = _openvino_ir(tmp_path, lambda x: [ops.avg_pool(x, [2, 2], [0, 0], [3, 3], [2, 2], exclude_pad=False,
                                                          rounding_type="ceil_torch").output(0)])
    with pytest.raises(ConversionError, match="pads_end larger than the dilated kernel"):
        ir_to_onnx(ir.read_model(path))


SAME_DILATED = [  # kernel, strides, dilations, auto_pad
    ((2, 3), (1, 2), (3, 2), "same_upper"),
    ((3, 2), (2, 1), (2, 3), "same_lower"),
]


@pytest.mark.parametrize("kernel, strides, dilations, auto_pad", SAME_DILATED)
@pytest.mark.parametrize("layer", ["MaxPool", "AvgPool"])
def test_same_with_dilations_and_dynamic_dims_runs_right_on_onnxruntime(layer, kernel, strides, dilations, auto_pad,
                                                                         tmp_path):
    # onnxruntime computes SAME pads without the dilation (onnxruntime_gaps.py), so the spec's pads are computed
    # from the runtime lengths and padded explicitly (the padding values are the pool's own in both layers).
    import openvino.opset16 as ops16

    def build(x):
        if layer == "MaxPool":
            return [ops.max_pool(x, list(strides), list(dilations), [0, 0], [0, 0], list(kernel),
                                 auto_pad=auto_pad).output(0)]
        return [ops16.avg_pool(x, list(strides), [0, 0], [0, 0], list(kernel), exclude_pad=False, auto_pad=auto_pad,
                               dilations=list(dilations)).output(0)]

    back = _agree(_openvino_ir(tmp_path, build), SIZES, lambda size: True)
    # no SAME left for onnxruntime to resolve (the pool after the explicit Pad says VALID)
    assert not any(a.name == "auto_pad" and a.s.startswith(b"SAME") for node in back.graph.node for a in node.attribute)
