"""MaxPool storage_order=1 indices past 2**24 elements: poolir's IR under OpenVINO against onnxruntime (issue 14).

OpenVINO's CPU plugin computes integer Divide and FloorMod in float32, so the converter's index arithmetic
(converter/onnx_to_ir/max_pool_indices.py) must cancel float32's error; the old arithmetic gave 414,406 wrong
indices on 6x64x224x224. OpenVINO's MaxPool with indices dominates the time (~5 s for the issue's case), so
the other cases take long strides: few windows, but indices over the whole range all the same.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from poolir import converter, ir, runtime
from poolir.ir.errors import InvalidModelError
from tests.peers import onnxruntime_run, openvino_run_xml


def _model(dims, strides=(2, 2)):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(dims))
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
               helper.make_tensor_value_info("i", TensorProto.INT64, None)]
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], "pool", kernel_shape=[3, 3], strides=list(strides),
                            pads=[1, 1, 1, 1], storage_order=1)
    return helper.make_model(helper.make_graph([node], "g", [x], outputs),
                             opset_imports=[helper.make_opsetid("", 12)])


@pytest.mark.slow
@pytest.mark.parametrize("shape, strides, symbolic", [
    ((6, 64, 224, 224), (2, 2), False),   # the case: 19,267,584 elements, 414,406 indices were wrong
    ((1, 1, 4100, 4100), (5, 7), False),  # 16,810,000 > 2**24 in one (n, c) slab
    ((2, 64, 512, 512), (7, 5), False),   # 33,554,432 = 2**25, many slabs
    ((2, 64, 512, 512), (7, 5), True),    # the same with every dim but C dynamic (ShapeOf / Gather)
], ids=["issue-6x64x224x224", "one-slab-2^24", "slabs-2^25", "dynamic-2^25"])
def test_column_major_indices_past_float32_exact_range(shape, strides, symbolic, tmp_path):
    model = _model(("N", shape[1], "H", "W") if symbolic else shape, strides)
    x = np.random.default_rng(14).standard_normal(shape, dtype=np.float32)
    expected = onnxruntime_run(model, {"x": x})["i"]
    path = tmp_path / "pool.xml"
    ir.write_model(converter.onnx_to_ir(model), path)
    got = openvino_run_xml(path, {"x": x}, ["i"])["i"]
    assert got.shape == expected.shape
    wrong = int(np.count_nonzero(got != expected))
    assert wrong == 0, f"{wrong} of {expected.size} indices differ from onnxruntime"
    # poolir's IR runtime computes the arithmetic as OpenVINO does (the old IR was wrong there too).
    np.testing.assert_array_equal(runtime.run(ir.read_model(path), {"x": x})["i"], got)


def test_a_dim_the_arithmetic_cannot_divide_by_exactly_is_refused():
    with pytest.raises(InvalidModelError, match="spatial dim of 4194305") as error:
        converter.onnx_to_ir(_model((1, 1, 2, 2**22 + 1)))
    assert "pool" in str(error.value)
