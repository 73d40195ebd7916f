"""IR Gather with indices outside [-size, size): OpenVINO's CPU plugin gives zeros there (ONNX calls it an error),
so poolir's IR runtime does too. Oracle: OpenVINO itself on the same .xml."""

from __future__ import annotations

import numpy as np
import pytest

from poolir import ir, runtime
from tests import peers


@pytest.mark.parametrize("data_shape, index_shape, axis, batch_dims", [
    ((3,), (4,), 0, 0), ((2, 5, 3), (2, 4), 1, 1), ((2, 5, 3), (3, 2), 2, 0), ((4, 6), (4, 3), 1, 1),
])
def test_out_of_range_indices_give_zeros_as_in_openvino(tmp_path, data_shape, index_shape, axis, batch_dims):
    b = ir.GraphBuilder("gather")
    x, i = b.parameter("x", "f32", data_shape), b.parameter("i", "i64", index_shape)
    (y,) = b.add("Gather", "opset8", [x, i, b.const(np.array(axis, np.int64))], {"batch_dims": batch_dims})
    b.result(y, "y")
    path = tmp_path / "gather.xml"
    ir.write_model(b.build(), path)
    rng = np.random.default_rng(len(data_shape) + axis)
    size = data_shape[axis]
    feeds = {"x": rng.standard_normal(data_shape).astype(np.float32),
             "i": rng.integers(-2 * size, 2 * size, index_shape).astype(np.int64)}
    feeds["i"].flat[0] = 2 * size  # at least one index out of range
    expected = peers.openvino_run_xml(path, feeds)["y"]
    assert np.array_equal(runtime.run(path, feeds)["y"], expected)
