"""ONNX MaxPool storage_order=1 (column-major) indices, from OpenVINO's row-major ones by index arithmetic.

The arithmetic must be exact *as OpenVINO's CPU plugin computes it*, which is not integer arithmetic: it runs
i64 as i32 (Add, Subtract, Multiply wrap in i32, exactly) and computes integer Divide and FloorMod in float32
(runtime/kernels/elementwise.py: openvino_cpu_integer), exact only while the operands stay below 2**24. A
flat index reaches N*C*prod(spatial), so `i mod prod(spatial)` went wrong past 2**24 elements (issue 14:
6x64x224x224, 414,406 of 4,816,896 indices wrong). So every division here is an *exact division* built from
float-prone layers whose error it cancels (`exact_divmod`), and each divides by one spatial dim only.
"""

from __future__ import annotations


from poolir.converter.onnx_to_ir.node import OnnxNode, Value
from poolir.ir.builder import OutputRef
from poolir.ir.errors import InvalidModelError

# exact_divmod is exact for a divisor up to this (see there). Indices are exact up to 2**31 elements, where
# OpenVINO's own end (its indices are i32: i64 runs as i32) and poolir's allocation limit both are.
MAX_DIVISOR = 2**22


def column_major_indices(node: OnnxNode, indices: OutputRef, x: Value) -> OutputRef:
    """ONNX storage_order=1 indices from OpenVINO's row-major ones (MaxPool-8 axis=0, flattened from N).

    i = (slab * D0 + c0) ... row-major: i = slab * S + sum c_j * row_j, with slab = n * C + c and S the
    spatial size. Peeling the spatial dims off from the last one, (i, c_j) = divmod(i, D_j), leaves the slab;
    the column-major index is then rebuilt by Horner's rule from the first spatial dim's side:
    slab * S + c0 + D0 * (c1 + D1 * (...)) = (((slab * D_last + c_last) ... ) * D0 + c0).
    Every intermediate value lies between 0 and the largest index, below 2**31, so the i32 wrapping of
    OpenVINO's Add, Subtract and Multiply never shows; a static dim of 1 contributes nothing and is skipped.
    A static dim is a constant, a dynamic one Gather(ShapeOf(x)).
    """
    name = node.name
    spatial = x.shape[2:]
    if sum(d != 1 for d in spatial) <= 1:
        return indices  # one spatial axis that counts: column-major and row-major are the same order
    _check_exact(x)
    shape_of: list[OutputRef] = []  # built once, on first need

    def dim(axis: int):
        if spatial[axis] is not None:
            return spatial[axis]
        if not shape_of:
            shape_of.append(node.add("ShapeOf", [x.ref], {"output_type": "i64"}, f"{name}/shape")[0])
        # Gather in its newest version, as OpenVINO's own frontend writes it (the index is non-negative).
        return node.add("Gather", [shape_of[0], node.const([2 + axis], "i64"), node.const(0, "i64")],
                        name=f"{name}/dim{axis}", newest=True)[0]

    def binary(kind: str, left, right, layer_name: str):
        operand = node.const(right, "i64") if isinstance(right, int) else right
        return node.add(kind, [left, operand], {"auto_broadcast": "numpy"}, f"{name}/{layer_name}")[0]

    dims = [dim(axis) for axis in range(len(spatial))]
    used = [axis for axis in range(len(spatial)) if dims[axis] != 1]
    rest, coordinates = indices, {}
    for axis in reversed(used):
        rest, coordinates[axis] = exact_divmod(binary, rest, dims[axis], f"c{axis}")
    result = rest  # the slab, n * C + c
    for axis in reversed(used):
        scaled = binary("Multiply", result, dims[axis], f"scale{axis}")
        result = node.add("Add", [scaled, coordinates[axis]], {"auto_broadcast": "numpy"},
                          name if axis == used[0] else f"{name}/sum{axis}")[0]
    return result


def exact_divmod(binary, dividend, divisor, tag: str):
    """(dividend // divisor, dividend % divisor) exactly under OpenVINO's CPU plugin, for a dividend in
    [0, 2**31) and a divisor in [1, MAX_DIVISOR].

    q0 = Divide(i, d) is float32(float32(i) / d) truncated: off from i // d by at most 2**31 * 2**-23 / d + 1
    = 256/d + 1. The remainder it leaves, r = i - q0 * d, is exact (i32 wrapping arithmetic, and the true
    value is small) and |r| <= 256 + 2d < 2**24, where float32 is exact: FloorMod(r, d) is the true
    remainder (a floored modulo, the sign of d), and (r - c) / d an exact division of a multiple of d.
    """
    approx = binary("Divide", dividend, divisor, f"{tag}/approx")
    left = binary("Subtract", dividend, binary("Multiply", approx, divisor, f"{tag}/back"), f"{tag}/left")
    coordinate = binary("FloorMod", left, divisor, tag)
    correction = binary("Divide", binary("Subtract", left, coordinate, f"{tag}/whole"), divisor, f"{tag}/fix")
    return binary("Add", approx, correction, f"{tag}/rest"), coordinate


def _check_exact(x: Value) -> None:
    """Refuse the static dims exact_divmod cannot divide by exactly (dynamic ones: the README says)."""
    big = [d for d in x.shape[2:] if d is not None and d > MAX_DIVISOR]
    if big:
        raise InvalidModelError(f"storage_order=1 with a spatial dim of {big[0]}: OpenVINO computes the "
                                f"column-major index arithmetic in float32, exact for dims up to {MAX_DIVISOR}")
