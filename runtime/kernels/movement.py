"""Data movement: pad, reshape, slice and split with the semantics ONNX and OpenVINO share.

Parameters are plain Python values already validated by the adapter; nothing here knows ONNX or IR
attribute spellings."""

from __future__ import annotations

from typing import Sequence

import numpy as np


def pad(x: np.ndarray, pads_begin: Sequence[int], pads_end: Sequence[int], mode: str = "constant",
        value=0) -> np.ndarray:
    """Pad every axis by (begin, end); negative amounts crop. mode: constant, reflect, edge, wrap."""
    crop = tuple(slice(max(0, -b), x.shape[i] - max(0, -e)) for i, (b, e) in enumerate(zip(pads_begin, pads_end)))
    x = x[crop]
    widths = [(max(0, int(b)), max(0, int(e))) for b, e in zip(pads_begin, pads_end)]
    if mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=np.asarray(value).astype(x.dtype))
    return np.pad(x, widths, mode=mode)


def reshape(x: np.ndarray, shape: Sequence[int], allowzero: bool = False) -> np.ndarray:
    """ONNX/OpenVINO reshape: -1 is inferred; 0 copies the input dim unless allowzero (special_zero=false)."""
    target = [int(s) for s in shape]
    if not allowzero:
        target = [x.shape[i] if s == 0 else s for i, s in enumerate(target)]
    return np.reshape(x, target)


def slice_axes(x: np.ndarray, starts: Sequence[int], ends: Sequence[int], axes: Sequence[int] | None = None,
               steps: Sequence[int] | None = None) -> np.ndarray:
    """ONNX Slice: per listed axis [start:end:step], with clamping as Python slicing does."""
    axes = list(range(len(starts))) if axes is None else [int(a) % x.ndim for a in axes]
    steps = [1] * len(starts) if steps is None else steps
    index = [slice(None)] * x.ndim
    for axis, start, end, step in zip(axes, starts, ends, steps):
        # Huge sentinels (INT64_MAX/MIN) mean "to the end"; Python slicing clamps them already.
        index[axis] = slice(int(start), int(end), int(step))
    return x[tuple(index)]


def split(x: np.ndarray, axis: int, sizes: Sequence[int]) -> list[np.ndarray]:
    boundaries = np.cumsum([int(s) for s in sizes])[:-1]
    return np.split(x, boundaries, axis=axis)


def even_split_sizes(length: int, parts: int) -> list[int]:
    """ONNX Split-18 num_outputs: ceil-sized parts, the last one smaller if needed."""
    size = -(-length // parts)
    sizes = [size] * (length // size) + ([length % size] if length % size else [])
    return sizes


__all__ = ["even_split_sizes", "pad", "reshape", "slice_axes", "split"]
