"""The numpy convolution kernel: N-D, grouped and depthwise, ONNX Conv = OpenVINO Convolution/GroupConvolution.

Layouts: x is [N, C, *spatial] (1, 2 or 3 spatial axes; any number works), weights are [M, C/groups, *kernel],
bias is [M], the result is [N, M, *out]. Channels are split into `groups` consecutive blocks: output
channel m of group g = m // (M / groups) reads input channels g * C/groups .. (g + 1) * C/groups - 1.
OpenVINO's GroupConvolution weights [G, M/G, C/G, *kernel] are the same numbers: `group_weights` reshapes
them (no copy). Along each spatial axis (one resolved `ir.geometry.AxisWindow` per axis, floor rounding),
output position o reads

    i(o, j) = o * stride - pad_begin + j * dilation,   j = 0 .. kernel-1

and taps outside 0 <= i < length read zeros (explicit zero padding):

    y[n, m, o] = bias[m] + sum over c in group(m), taps j of x[n, c, i(o, j)] * w[m, c - first(m), j]

Accumulation: float32 input is accumulated in float32 (BLAS sgemm), float64 in float64 (dgemm). float16
and bfloat16 are computed in float32 and rounded once at the end (what onnxruntime does for float16: its
results equal float32 results rounded), since numpy has no half-precision GEMM and accumulating in 11 bits
of mantissa would lose most of a long sum. Integer types are refused (ConvInteger is another operator).
The summation order is BLAS's, so results differ from other engines by rounding only: at most about
K * eps * sum |x * w| for a dot product of K = C/groups * prod(kernel) terms.

Strategies (measured numbers in benchmarks/bench_convolution.py's docstring):

* pointwise (every kernel 1, stride 1, no pads): the input already is the [C, H*W] matrix, one matmul
  per group with no copy;
* depthwise (one input and one output channel per group): the input is first copied once into a
  zero-padded buffer split by stride phase, so that every tap reads one contiguous range per channel
  (clipped per-tap views, without the copy, ran inner loops of one output row: 2-15x slower); the taps'
  ranges are copied into columns and each channel's weight row multiplies them in one batched matrix
  product (the sum order is BLAS's). Small images, and 5x5 or larger kernels up to 28x28 outputs, run
  channels-last instead, one einsum over the taps of each stride phase (runtime.kernels.depthwise).
  Depthwise with a channel multiplier (M/groups > 1) goes the im2col way;
* everything else: an im2col gather into a reused [N, C, prod(kernel), *out] buffer, one copy per tap
  over all channels (clipped per tap, only the padding strips are zeroed; float16/bfloat16 are widened
  by the same copy), then one matmul per group and image, batched by np.matmul: weights [G, M/G, K]
  times columns [N, G, K, out] gives [N, G, M/G, out], which already is the NC[D]HW result. Where few
  filters share the cost of its extra columns, the gather reads the phase buffer's wide grid instead
  (contiguous copies; the result is cropped by the final copy).

A plan with constant weights and bias may pack them (BiasedWeights, conv_biased): the bias becomes one more
column of the one-group weight matrix, multiplied into a row of ones under the columns, and joins each dot product
instead of taking a pass over the result.
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Sequence

import numpy as np

from poolir.ir.budget import check_allocation
from poolir.ir.errors import UsageError
from poolir.ir.geometry import AxisWindow, output_length
from poolir.runtime.kernels.depthwise import depthwise_channels_last, depthwise_columns
from poolir.runtime.kernels.phase_buffer import CACHED_TAPS, padding_strips, phase_plan, wide_grid
from poolir.runtime.kernels.precision import accumulation_dtype, is_float
from poolir.runtime.kernels.ufunc_buffer import fitted
from poolir.runtime.kernels.work_arrays import SLOT_CONV_COLUMNS, SLOT_RESULT, widened, work_array

__all__ = ["BiasedWeights", "conv", "conv_biased", "group_weights"]

# Depthwise convolutions with at most _CHANNELS_LAST_MAX_IMAGE output positions per channel run channels-last, and
# so do those with at least _CHANNELS_LAST_MIN_TAPS taps and at most _CHANNELS_LAST_MAX_LONG_IMAGE positions (its
# einsum reads each tap once; the columns copy each tap, then the product reads it again). Measured with the whole
# conv (1 thread, us, channels-last / columns): 672x14x14 k5 s2 231 / 383, 384x14x14 k7 571 / 992, 672x14x14 k3
# 291 / 315, 240x28x28 k3 s2 208 / 247; 72x56x56 k5 s2 340 / 400, 120x28x28 k5 379 / 449, 480x28x28 k5 1406 /
# 1558, 192x28x28 k7 980 / 1368; but 256x16x16 k3 237 / 195, 120x28x28 k3 216 / 203, 16x112x112 k3 413 / 280,
# 40x56x56 k5 498 / 478, 32x112x112 k5 s2 561 / 526 (the columns' runs are long enough there, and channels-last
# pays the transposing copies).
_CHANNELS_LAST_MAX_IMAGE = 14 * 14
_CHANNELS_LAST_MIN_TAPS = 25
_CHANNELS_LAST_MAX_LONG_IMAGE = 28 * 28


def conv(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None = None, *, windows: Sequence[AxisWindow],
         groups: int = 1) -> np.ndarray:
    """ONNX Conv: y[n, m] = bias[m] + sum over the input channels of m's group of x (*) w[m] (see module doc).

    `windows` holds one resolved AxisWindow per spatial axis (length = x's axis, kernel = w's axis,
    floor rounding); strides, dilations and pads come from it. Returns a fresh array of x's dtype.
    """
    x, w, bias = _checked(x, w, bias, windows, groups)
    out = tuple(window.output for window in windows)
    if w.shape[0] == 0 or x.shape[0] == 0:   # no filters or no images: an empty result (OpenVINO's too)
        return np.zeros(x.shape[:1] + w.shape[:1] + out, dtype=x.dtype)
    acc = accumulation_dtype(x.dtype)
    check_allocation(x.shape[:1] + w.shape[:1] + tuple(window.output for window in windows),
                     acc.itemsize + (x.itemsize if acc != x.dtype else 0), "the convolution output")
    channels_per_group = w.shape[1]
    outputs_per_group = w.shape[0] // groups
    # Each strategy returns the sums in the accumulation dtype, either in a fresh array or in a view of a
    # work array (which _finished copies, adding the bias and rounding to x's dtype in the same pass).
    if channels_per_group == 1 and outputs_per_group == 1 and groups > 1:
        image = math.prod(window.output for window in windows)
        if image <= _CHANNELS_LAST_MAX_IMAGE or (image <= _CHANNELS_LAST_MAX_LONG_IMAGE and math.prod(
                window.kernel for window in windows) >= _CHANNELS_LAST_MIN_TAPS):
            y, fresh = depthwise_channels_last(x, w, windows, acc, bias)
            bias = None                      # added in the channels-last layout
        else:
            y, fresh = depthwise_columns(x, w, windows, acc)
    elif all(_is_identity(window) for window in windows):
        y, fresh = _pointwise(x, w, groups, acc, x.dtype == acc)
    else:
        y, fresh = _im2col_gemm(x, w, windows, groups, acc, x.dtype == acc)
    return _finished(y, fresh, bias, x.dtype)


class BiasedWeights:
    """Constant float32/float64 weights [M, C, *kernel] and bias [M] of a one-group convolution, packed once as
    the matrix [1, M, K + 1] (K = C * prod(kernel)) whose last column is the bias. The GEMM strategies multiply
    it into their columns with a row of ones below: the bias becomes one more term of each dot product instead
    of a pass over the result (per-channel additions run at a third of numpy's speed on 7x7 and 14x14 images).
    `w` and `bias` are views of the matrix (no second copy). Worth it where the ones row is free or cheap:
    gathered columns (im2col), or a 1x1 convolution whose input has at most as many channels as its output
    (the input is copied under the ones row; measured 256x64 on 56x56: 465 -> 439 us, 64x256: 475 -> 492)."""

    __slots__ = ("matrix", "w", "bias")

    def __init__(self, w: np.ndarray, bias: np.ndarray):
        filters, size = w.shape[0], math.prod(w.shape[1:])
        self.matrix = np.empty((1, filters, size + 1), dtype=w.dtype)
        self.matrix[0, :, :size] = w.reshape(filters, size)
        self.matrix[0, :, size] = bias
        self.w = self.matrix[0, :, :size].reshape(w.shape)
        self.bias = self.matrix[0, :, size]

    @staticmethod
    def pays(w: np.ndarray, bias, groups: int, pointwise: bool) -> bool:
        """Whether packing these constants saves work (see the class doc)."""
        return (bias is not None and groups == 1 and w.dtype in (np.float32, np.float64) and bias.dtype == w.dtype
                and w.ndim >= 3 and bias.shape == w.shape[:1] and (not pointwise or w.shape[1] <= w.shape[0]))


def conv_biased(x: np.ndarray, weights: BiasedWeights, *, windows: Sequence[AxisWindow]) -> np.ndarray:
    """conv(x, weights.w, weights.bias, windows=windows): the same sums, with the bias added inside the matrix
    product (its order is BLAS's either way). Returns a fresh array."""
    x, w, bias = _checked(x, weights.w, weights.bias, windows, 1)
    if x.dtype != w.dtype or w.shape[0] == 0 or x.shape[0] == 0:   # conv refuses the types, or an empty result
        return conv(x, w, bias, windows=windows)
    out = tuple(window.output for window in windows)
    check_allocation(x.shape[:1] + w.shape[:1] + out, x.itemsize, "the convolution output")
    if all(_is_identity(window) for window in windows):
        y, _ = _pointwise(x, weights.matrix, 1, x.dtype, True, ones_row=True)
    else:
        y, fresh = _im2col_gemm(x, weights.matrix, windows, 1, x.dtype, True, ones_row=True)
        return _finished(y, fresh, None, x.dtype)
    return y


def group_weights(weights: np.ndarray) -> tuple[np.ndarray, int]:
    """OpenVINO GroupConvolution weights [G, M/G, C/G, *kernel] as conv weights [M, C/G, *kernel] and G.

    A reshape (a view of a contiguous array): group g's filters are rows g*M/G .. (g+1)*M/G - 1 in both.
    """
    weights = np.asarray(weights)
    if weights.ndim < 4:
        raise UsageError(f"GroupConvolution weights need shape [G, M/G, C/G, *kernel], got {weights.shape}")
    groups, per_group = weights.shape[:2]
    return weights.reshape((groups * per_group,) + weights.shape[2:]), int(groups)


# --------------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------------

def _pointwise(x: np.ndarray, w: np.ndarray, groups: int, acc: np.dtype, fresh: bool,
               ones_row: bool = False) -> tuple[np.ndarray, bool]:
    """1x1, stride 1, no pads: per group, weights [M/G, C/G] times the image as a [C/G, P] matrix. With
    `ones_row` (one group; w is BiasedWeights.matrix) the image is copied above a row of ones."""
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    m = w.shape[1] if ones_row else w.shape[0]
    size = math.prod(spatial)
    if ones_row:
        columns = work_array(SLOT_CONV_COLUMNS, (n, 1, c + 1, size), acc)
        np.copyto(columns[:, 0, :c], x.reshape(n, c, size))
        columns[:, 0, c] = 1
        matrices = w
    else:
        columns = widened(x, acc).reshape(n, groups, c // groups, size)
        matrices = _weight_matrices(w, groups, acc)
    y = _result_array((n, groups, m // groups, size), acc, fresh)
    np.matmul(matrices, columns, out=y)
    return y.reshape((n, m) + spatial), fresh


def _im2col_gemm(x: np.ndarray, w: np.ndarray, windows: Sequence[AxisWindow], groups: int,
                 acc: np.dtype, fresh: bool, ones_row: bool = False) -> tuple[np.ndarray, bool]:
    """Gather every tap into columns [N, C, T, *out] (T = prod(kernel)), then one matmul per group. With
    `ones_row` (one group; w is BiasedWeights.matrix) a row of ones follows the columns.

    Where it pays (_gathers_phases), the columns are those of the phase buffer's wide grid instead
    (runtime.kernels.phase_buffer): every tap is one contiguous range per channel, not a strided or short-row view
    of x, and the product's extra columns are dropped by _finished's copy."""
    n, c = x.shape[:2]
    m = w.shape[1] if ones_row else w.shape[0]
    out = tuple(window.output for window in windows)
    taps = math.prod(window.kernel for window in windows)
    rows = c * taps
    windows = tuple(windows)
    gathers_phases = _gathers_phases(windows, m // groups, _PHASED_WASTE_LIMIT)
    phases = phase_plan(x.shape, np.dtype(acc), windows) if gathers_phases else None
    grid = (phases.wide_size,) if phases is not None else out
    size = math.prod(grid)
    if ones_row:
        packed = work_array(SLOT_CONV_COLUMNS, (n, rows + 1, size), acc)
        packed[:, rows] = 1
        columns = packed[:, :rows].reshape((n, c, taps) + grid)
    else:
        columns = work_array(SLOT_CONV_COLUMNS, (n, c, taps) + grid, acc)
        packed = columns.reshape(n, rows, size)
    if phases is not None:
        for tap, view in enumerate(phases.tap_views(phases.fill(x))):
            np.copyto(columns[:, :, tap], view)
    else:
        copies = _tap_copies(windows) if taps <= CACHED_TAPS else _each_tap_copy(windows)
        for tap, (out_box, source, strips) in enumerate(copies):
            target = columns[:, :, tap]
            if out_box is not None:
                np.copyto(target[out_box], x[source], casting="unsafe")
            for strip in strips:
                target[strip] = 0
    per_group = packed.reshape(n, groups, (rows + ones_row) // groups, size)
    fresh = fresh and phases is None
    y = _result_array((n, groups, m // groups, size), acc, fresh)
    np.matmul(w if ones_row else _weight_matrices(w, groups, acc), per_group, out=y)
    if phases is not None:
        return phases.cropped(y.reshape(n, m, size)), False
    return y.reshape((n, m) + out), fresh


@functools.lru_cache(maxsize=256)
def _gathers_phases(windows: tuple[AxisWindow, ...], filters_per_group: int, waste_limit: float) -> bool:
    """Whether im2col gathers its columns from the phase buffer: the tap copies become contiguous (x's views are
    strided, or rows of a few elements), but the wide grid's extra columns cost every filter a product and the
    result a cropping copy. So: when filters x extra columns / real columns is at most `waste_limit`
    (_PHASED_WASTE_LIMIT; an argument so that the cached answers follow it).
    Measured (conv_biased, 2 BLAS threads, us, im2col / phased; filters x waste in brackets): 3->64 224x224 k7 s2
    1481 / 1310 (1.7), 64->64 56x56 k3 2006 / 1341 (2.3), 64->192 56x56 k3 3616 / 3102 (6.9), 128->128 28x28 k3
    1569 / 1363 (9.1), 256->256 28x28 k3 s2 1581 / 1382 (18.3), 16->48 14x14 k5 166 / 146 (13.7), 24->64 14x14 k5
    247 / 227 (18.3); but 96->208 14x14 k3 451 / 521 (29.7), 256->256 14x14 k3 1314 / 1373 (36.6), 48->128 7x7
    k5 217 / 224 (73), 512->512 7x7 k3 1370 / 1654 (146). Whole networks: ResNet-50 53.4 -> 51.2 ms, GoogLeNet
    25.8 -> 24.4 ms."""
    taps = math.prod(window.kernel for window in windows)
    if not 2 <= taps <= CACHED_TAPS:
        return False
    out = math.prod(window.output for window in windows)
    return filters_per_group * (math.prod(wide_grid(windows)) - out) <= waste_limit * out


_PHASED_WASTE_LIMIT = 24


# --------------------------------------------------------------------------------------------------
# Geometry per tap
# --------------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=256)
def _tap_copies(windows: tuple[AxisWindow, ...]) -> tuple[tuple[tuple | None, tuple, tuple[tuple, ...]], ...]:
    """_each_tap_copy worked out once per geometry (it was 2-4 us a tap, a call)."""
    return tuple(_each_tap_copy(windows))


def _each_tap_copy(windows: Sequence[AxisWindow]):
    """For every N-D tap in row-major order (the weights' order): the index of the outputs whose tap reads real
    input (None when none does), the index of the input they read, and the padding strips of the tap's output grid
    to zero."""
    per_axis = [[_axis_tap(window, j) for j in range(window.kernel)] for window in windows]
    out = tuple(window.output for window in windows)
    for boxes in itertools.product(*per_axis):
        if any(box is None for box in boxes):      # this tap reads only padding for every output
            yield None, (), ((Ellipsis,),)
            continue
        strips = padding_strips(out, [(lo, hi) for lo, hi, _ in boxes])
        yield ((Ellipsis,) + tuple(slice(lo, hi) for lo, hi, _ in boxes),
               (Ellipsis,) + tuple(source for _, _, source in boxes),
               tuple((Ellipsis,) + strip for strip in strips))


def _axis_tap(window: AxisWindow, j: int) -> tuple[int, int, slice] | None:
    """(out_lo, out_hi, input slice): outputs [out_lo, out_hi) read real input at tap j, at the positions of the
    slice; None when no output does."""
    offset = j * window.dilation - window.pad_begin          # input position read by output 0
    lo = max(0, -(offset // window.stride))                  # first output with o * s + offset >= 0
    hi = min(window.output, (window.length - 1 - offset) // window.stride + 1)
    if lo >= hi:
        return None
    start = lo * window.stride + offset
    return lo, hi, slice(start, start + (hi - lo - 1) * window.stride + 1, window.stride)


def _is_identity(window: AxisWindow) -> bool:
    return window.kernel == 1 and window.stride == 1 and window.pad_begin == 0 and window.output == window.length


# --------------------------------------------------------------------------------------------------
# Checks, dtypes and work arrays
# --------------------------------------------------------------------------------------------------

def _checked(x, w, bias, windows: Sequence[AxisWindow], groups: int):
    """x, w and bias as native-order arrays (x contiguous), after checking that they fit each other, `windows`
    and `groups` (UsageError)."""
    x, w, bias = _native(x), _native_order(w), None if bias is None else _native_order(bias)
    if not isinstance(groups, (int, np.integer)) or isinstance(groups, bool) or groups < 1:
        raise UsageError(f"groups {groups!r} must be an integer >= 1")
    _check_fit(x.shape, x.dtype, w.shape, w.dtype, None if bias is None else (bias.shape, bias.dtype),
               tuple(windows), int(groups))
    return x, w, bias


@functools.lru_cache(maxsize=512)
def _check_fit(x_shape, x_dtype, w_shape, w_dtype, bias, windows: tuple[AxisWindow, ...], groups: int) -> None:
    """_checked's checks, which depend on shapes and types alone: made once per layer (2 us a call, on
    MobileNetV3's 62 convolutions of 7x7 to 112x112). `bias` is (shape, dtype) or None."""
    for name, dtype in (("input", x_dtype), ("weights", w_dtype), ("bias", None if bias is None else bias[1])):
        if dtype is not None and not is_float(dtype):
            raise UsageError(f"convolution {name} of element type {dtype} is not supported "
                             "(float16, bfloat16, float32 and float64 are; integer convolution is ConvInteger)")
    rank = len(windows)
    if rank < 1 or len(x_shape) != rank + 2 or len(w_shape) != rank + 2:
        raise UsageError(f"convolution with {rank} spatial windows needs input and weights of rank {rank + 2}, "
                         f"got input {x_shape} and weights {w_shape}")
    if w_dtype != x_dtype or bias is not None and bias[1] != x_dtype:
        raise UsageError(f"convolution input {x_dtype}, weights {w_dtype}"
                         + (f" and bias {bias[1]}" if bias is not None else "") + " must share one element type")
    channels, filters = x_shape[1], w_shape[0]
    if w_shape[1] * groups != channels or filters % groups:
        raise UsageError(f"weights {w_shape} with groups {groups} do not fit input {x_shape}: need "
                         f"weights[1] * groups == C ({channels}) and groups dividing M ({filters})")
    if bias is not None and bias[0] != (filters,):
        raise UsageError(f"bias shape {bias[0]} must be ({filters},), one value per output channel")
    for axis, window in enumerate(windows):
        length, kernel = x_shape[2 + axis], w_shape[2 + axis]
        floor = output_length(window.length, window.kernel, window.stride, window.dilation, window.pad_begin,
                              window.pad_end, "floor")
        if window.length != length or window.kernel != kernel or window.output != floor:
            raise UsageError(f"spatial axis {axis}: window {window} does not fit input length {length} and "
                             f"kernel {kernel} with floor rounding (output {floor})")


def _native(array) -> np.ndarray:
    return _native_order(np.ascontiguousarray(array))


def _native_order(array) -> np.ndarray:
    """array in native byte order; weights and bias need no more (the strategies reshape or copy them)."""
    array = np.asarray(array)
    return array if array.dtype.isnative else array.astype(array.dtype.newbyteorder("="))


def _weight_matrices(w: np.ndarray, groups: int, acc: np.dtype) -> np.ndarray:
    """Weights [M, C/G, *kernel] as [G, M/G, C/G * prod(kernel)]: row-major, matching the columns' order."""
    return w.astype(acc, copy=False).reshape(groups, w.shape[0] // groups, -1)


def _result_array(shape: tuple[int, ...], acc: np.dtype, fresh: bool) -> np.ndarray:
    """A fresh array when it is the result itself, else a work array that _finished copies out of."""
    return np.empty(shape, dtype=acc) if fresh else work_array(SLOT_RESULT, shape, acc)


def _finished(y: np.ndarray, fresh: bool, bias: np.ndarray | None, dtype: np.dtype) -> np.ndarray:
    """y + bias in `dtype`, in a fresh array: in place when y is fresh and of that dtype, else in one pass
    that adds the bias (in the accumulation dtype) and rounds once to `dtype`."""
    shaped_bias = None if bias is None else bias.astype(y.dtype, copy=False).reshape((-1,) + (1,) * (y.ndim - 2))
    if fresh and y.dtype == dtype:
        if shaped_bias is not None:
            with fitted(y, shaped_bias):
                y += shaped_bias
        return y
    result = np.empty(y.shape, dtype=dtype)
    if shaped_bias is None:
        np.copyto(result, y, casting="unsafe")
    else:
        with fitted(y, shaped_bias):
            np.add(y, shaped_bias, out=result, casting="unsafe")
    return result
