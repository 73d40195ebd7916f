"""converter/feeds.py: random inputs drawn in their own dtype, and the shapes a run draws them in."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from poolir.converter.feeds import fix_shapes, random_input
from poolir.ir.errors import UsageError
from poolir.runtime import TensorSpec


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int8, np.uint8,
                                   np.int64, np.bool_])
def test_random_inputs_have_their_own_dtype_and_range(dtype):
    array = random_input(TensorSpec("x", np.dtype(dtype), (2, 3, 50)), seed=1, position=0)
    assert array.dtype == np.dtype(dtype) and array.shape == (2, 3, 50)
    if np.dtype(dtype).kind == "f" or np.dtype(dtype) == np.dtype(ml_dtypes.bfloat16):
        wide = array.astype(np.float32)
        assert wide.min() >= -1 and wide.max() <= 1 and wide.std() > 0.3


def test_a_dynamic_batch_alone_is_set_to_1_and_said_once():
    notes = []
    specs = [TensorSpec("x", np.dtype(np.float32), (None, 3, 8, 8)), TensorSpec("y", np.dtype(np.float32), (None, None)),
             TensorSpec("z", np.dtype(np.float32), (None, 4))]
    fixed = fix_shapes(specs, {"y": (2, 5)}, "m.onnx", given=["z"], note=notes.append)
    assert [spec.shape for spec in fixed] == [(1, 3, 8, 8), (2, 5), (None, 4)]  # z comes from a file
    assert notes == ["m.onnx: input 'x': dynamic batch set to 1 (give --input-shape to choose)"]


def test_a_shape_must_name_a_declared_input():
    with pytest.raises(UsageError, match="m.onnx: --input-shape names unknown input 'q'"):
        fix_shapes([TensorSpec("x", np.dtype(np.float32), (None, 3))], {"q": (1, 3)}, "m.onnx")
