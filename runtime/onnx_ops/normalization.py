"""ONNX BatchNormalization, LayerNormalization, InstanceNormalization, GroupNormalization, LRN and Dropout: version
rows and adapters onto runtime.kernels.normalization.

poolir runs inference only. Readings (these go into the README's semantics section too):

- BatchNormalization: Y = (X - mean) / sqrt(var + epsilon) * scale + B, per channel (axis 1), X of rank
  >= 2 (the spec's "N x C x D1 x ... x Dn" with n >= 0; rank 1 is refused). Versions 1 and 6 run in
  training mode unless is_test=1 (is_test's default 0 means training), which normalises with the batch's
  own statistics: refused. Version 14's training_mode=1 is refused too, and so is any optional output
  (mean, var, saved_mean, saved_var; running_mean, running_var from 14), which exists only in training.
  spatial=0 (versions 1..7; removed in 9) takes statistics of shape C x D1 x ... x Dn, one value per
  element of a sample: implemented. momentum and consumed_inputs (version 1) do not change inference.
- LRN: square_sum[c] = sum of X[c']^2 for c' in [c - floor((size-1)/2), c + ceil((size-1)/2)] (clipped
  to the channels), Y = X / (bias + alpha / size * square_sum) ^ beta, over axis 1 only. An even size puts
  the extra element AFTER c. (onnxruntime refuses even sizes: "size_ % 2 == 1 was false".)
- LayerNormalization (17): over the axes [axis, rank), in the spec's function body's order: Mean, D = X - Mean,
  Var = mean(D * D), InvStdDev = 1 / sqrt(Var + epsilon), Normalized = D * InvStdDev, all computed in the
  stash type (stash_type 1: float32, also for a float64 X, as the body casts X to it); Normalized is cast to
  X's type, then multiplied by Scale and B added in X's type. Scale and B broadcast unidirectionally to X.
  The optional Mean and InvStdDev outputs have the stash type and X's shape with the normalised dims 1.
  onnxruntime computes its statistics in double; the results agree to a few ulps. Only stash_type 1 runs
  (the type constraint U of the outputs is float or bfloat16, and onnxruntime implements float).
- InstanceNormalization: per sample and channel over the spatial axes (X of rank >= 3), (X - mean) /
  sqrt(var + epsilon) * scale[c] + B[c], computed in float32 (float64 for float64) and rounded once.
- GroupNormalization: the statistics of each sample's group of C / num_groups consecutive channels. Version 18
  takes scale and bias per group (the spec's reading, why 21 replaced it), 21 per channel, and 21's stash_type 1
  normalises in float32 and scales in X's type, as its function body does. That body computes the variance as
  E[x^2] - E[x]^2; poolir takes the mean of the squared deviations (the same number, without the cancellation
  when the mean is large against the spread; onnxruntime agrees to a few ulps on activations).
- Dropout: in inference Y = X, and the optional mask is all true (ones of X's type before opset 10, whose
  mask type is T; bool from 10). Versions 1 and 6 with is_test=0 (the default) drop at random: refused.
  From 12, ratio and training_mode are inputs: training_mode true with a ratio other than 0 drops at
  random and is refused (a ratio of 0 keeps everything, as the spec's reference says); ratio and seed are
  otherwise ignored.
"""

from __future__ import annotations

import numpy as np

from poolir.ir.errors import UsageError
from poolir.ir.shapes import checked_axis
from poolir.runtime.kernels.normalization import batch_norm, group_norm, instance_norm, lrn, standardize
from poolir.runtime.kernels.precision import accumulation_dtype
from poolir.runtime.onnx_ops.element_types import FLOAT_TYPES, FLOAT_TYPES_BF16, check_dtype
from poolir.runtime.onnx_ops.registry import (FLOAT, INT, INTS, REMOVED, Attribute, NodeContext, OnnxOpVersion, Step,
                                              adapter, define)

define("BatchNormalization", [
    (1, {"consumed_inputs": Attribute(INTS, required=True), "epsilon": Attribute(FLOAT, 1e-5),
         "is_test": Attribute(INT, 0), "momentum": Attribute(FLOAT, 0.9), "spatial": Attribute(INT, 1)},
     FLOAT_TYPES, 5),
    (6, {"consumed_inputs": REMOVED}),
    (7, {"is_test": REMOVED}),
    (9, {"spatial": REMOVED}),
    (14, {"training_mode": Attribute(INT, 0)}, FLOAT_TYPES_BF16, 3),
    (15, {}),  # scale/B and mean/var get their own type constraints (T1, T2)
])
define("LayerNormalization", [
    (17, {"axis": Attribute(INT, -1), "epsilon": Attribute(FLOAT, float(np.float32(1e-5))),
          "stash_type": Attribute(INT, 1)}, FLOAT_TYPES_BF16, 3),
])
define("InstanceNormalization", [
    (1, {"consumed_inputs": Attribute(INTS), "epsilon": Attribute(FLOAT, float(np.float32(1e-5)))}, FLOAT_TYPES),
    (6, {"consumed_inputs": REMOVED}),
    (22, {}, FLOAT_TYPES_BF16),
])
define("GroupNormalization", [
    (18, {"epsilon": Attribute(FLOAT, float(np.float32(1e-5))), "num_groups": Attribute(INT, required=True)},
     FLOAT_TYPES_BF16),
    (21, {"stash_type": Attribute(INT, 1)}),   # scale and bias per channel from here
])
define("LRN", [
    (1, {"alpha": Attribute(FLOAT, 1e-4), "beta": Attribute(FLOAT, 0.75), "bias": Attribute(FLOAT, 1.0),
         "size": Attribute(INT, required=True)}, FLOAT_TYPES),
    (13, {}, FLOAT_TYPES_BF16),
])
define("Dropout", [
    (1, {"consumed_inputs": Attribute(INTS), "is_test": Attribute(INT, 0), "ratio": Attribute(FLOAT, 0.5)},
     FLOAT_TYPES, 2),
    (6, {"consumed_inputs": REMOVED}),
    (7, {"is_test": REMOVED}),
    (10, {}),  # the mask becomes bool (T1)
    (12, {"ratio": REMOVED, "seed": Attribute(INT)}),  # ratio and training_mode become inputs
    (13, {}, FLOAT_TYPES_BF16),
    (22, {}),  # adds float8 types, which poolir does not hold
])

# The first Dropout version whose mask is bool (before it the mask has the data's type T). This is the one
# version fact no attribute shows; it lives here, beside the rows, and is asked through `dropout_mask_dtype`.
_BOOL_MASK_SINCE = 10


def dropout_mask_dtype(version: OnnxOpVersion, data_dtype: np.dtype) -> np.dtype:
    return np.dtype(bool) if version.since >= _BOOL_MASK_SINCE else np.dtype(data_dtype)


def lrn_window(size: int) -> tuple[int, int]:
    """ONNX LRN's channel window around c: (before, after) = (floor((size-1)/2), ceil((size-1)/2))."""
    return (size - 1) // 2, size // 2


def inference_problem(version: OnnxOpVersion, attrs: dict, requested_outputs: list[str]) -> str | None:
    """Why a BatchNormalization or Dropout node is not an inference node (None when it is), from its
    attributes and the outputs it asks for. Shared by the runtime and the ONNX -> IR converter."""
    if "is_test" in version.attributes and not attrs.get("is_test", 0):
        return (f"is_test=0 runs {version.label} in training mode ("
                + ("normalising with the batch's own statistics" if version.op_type == "BatchNormalization"
                   else "dropping elements at random") + "); poolir runs inference only (is_test=1)")
    if version.op_type == "BatchNormalization":
        if attrs.get("training_mode", 0):
            return f"training_mode={attrs['training_mode']}: poolir runs inference only"
        extra = [name for name in requested_outputs[1:] if name]
        if extra:
            return (f"outputs {', '.join(extra)} exist only in training mode; poolir runs inference only "
                    "(ask for Y alone)")
    return None


def training_mode_problem(ratio, training_mode) -> str | None:
    """Dropout-12+: why the given inputs drop at random (None when the node is an identity)."""
    if training_mode is None or not bool(np.asarray(training_mode).reshape(-1)[0]):
        return None
    if ratio is not None and float(np.asarray(ratio).reshape(-1)[0]) == 0.0:
        return None
    return "training_mode is true and ratio is not 0: Dropout drops at random; poolir runs inference only"


@adapter("BatchNormalization")
def plan_batch_norm(ctx: NodeContext) -> Step:
    problem = inference_problem(ctx.version, ctx.attrs, list(ctx.node.output))
    if problem:
        raise UsageError(problem)
    epsilon = ctx.attrs["epsilon"]
    per_channel = ctx.attrs.get("spatial", 1) != 0

    def run(x, scale, bias, mean, var):
        check_dtype(ctx.version, x.dtype)
        if x.ndim < 2:
            raise UsageError(f"X has rank {x.ndim}; {ctx.version.label} needs N x C x D1 .. Dn (rank >= 2)")
        want = (x.shape[1],) if per_channel else x.shape[1:]
        for name, value in (("scale", scale), ("B", bias), ("mean", mean), ("var", var)):
            if value.shape != want:
                raise UsageError(f"{name} has shape {list(value.shape)}, expected {list(want)}"
                                 + ("" if per_channel else " (spatial=0: one value per element of a sample)"))
        return (batch_norm(x, scale, bias, mean, var, epsilon),)
    return run


STASH_TYPES = {1: np.dtype(np.float32)}  # stash_type (an ONNX TensorProto data type) -> its dtype


def layer_norm_axes(axis: int, rank: int) -> tuple[int, ...]:
    """LayerNormalization's normalised axes, [axis, rank) with a negative axis counted from the back."""
    return tuple(range(checked_axis(axis, rank), rank))


@adapter("LayerNormalization")
def plan_layer_norm(ctx: NodeContext) -> Step:
    axis, epsilon, stash = ctx.attrs["axis"], ctx.attrs["epsilon"], ctx.attrs["stash_type"]
    if stash not in STASH_TYPES:
        raise UsageError(f"stash_type {stash}: poolir runs stash_type 1 (float32) only")
    work = STASH_TYPES[stash]

    def run(x, scale, bias=None):
        check_dtype(ctx.version, x.dtype)
        if x.ndim == 0:
            raise UsageError(f"X is a scalar; {ctx.version.label} needs rank >= 1")
        axes = layer_norm_axes(axis, x.ndim)
        for name, value in (("Scale", scale), ("B", bias)):
            if value is None:
                continue
            if value.dtype != x.dtype:
                raise UsageError(f"{name} has type {value.dtype}, X {x.dtype} (they must be equal)")
            if value.ndim > x.ndim or any(v not in (1, d) for v, d in zip(value.shape[::-1], x.shape[::-1])):
                raise UsageError(f"{name} of shape {list(value.shape)} does not broadcast to X {list(x.shape)}")
        normalized, mean, inverse = standardize(x, axes, epsilon, work)
        y = normalized.astype(x.dtype) * scale
        if bias is not None:
            y += bias
        return y, mean, inverse
    return run


@adapter("LRN")
def plan_lrn(ctx: NodeContext) -> Step:
    size = ctx.attrs["size"]
    if size < 1:
        raise UsageError(f"attribute 'size' = {size}: must be >= 1")
    before, after = lrn_window(size)
    alpha, beta, bias = ctx.attrs["alpha"], ctx.attrs["beta"], ctx.attrs["bias"]

    def run(x):
        check_dtype(ctx.version, x.dtype)
        if x.ndim < 2:
            raise UsageError(f"X has rank {x.ndim}; {ctx.version.label} needs N x C x D1 .. Dn (rank >= 2)")
        return (lrn(x, [1], alpha / size, beta, bias, before, after),)
    return run


@adapter("Dropout")
def plan_dropout(ctx: NodeContext) -> Step:
    problem = inference_problem(ctx.version, ctx.attrs, list(ctx.node.output))
    if problem:
        raise UsageError(problem)
    with_mask = ctx.output_count >= 2
    count = len(ctx.node.input)
    if "ratio" in ctx.version.attributes and count > 1:  # before 12 ratio is an attribute: one input only
        raise UsageError(f"{ctx.version.label} takes 1 input, got {count}")

    def run(x, ratio=None, training_mode=None):
        check_dtype(ctx.version, x.dtype)
        refused = training_mode_problem(ratio, training_mode)
        if refused:
            raise UsageError(refused)
        if not with_mask:
            return (x,)
        return x, np.ones(x.shape, dropout_mask_dtype(ctx.version, x.dtype))
    return run


__all__ = ["dropout_mask_dtype", "inference_problem", "lrn_window", "training_mode_problem"]


def _check_per_channel(x: np.ndarray, operands, length: int, what: str) -> None:
    for name, value in operands:
        if value.dtype != x.dtype:
            raise UsageError(f"{name} has type {value.dtype}, the input {x.dtype} (they must be equal)")
        if value.shape != (length,):
            raise UsageError(f"{name} has shape {list(value.shape)}, expected [{length}] ({what})")


@adapter("InstanceNormalization")
def plan_instance_norm(ctx: NodeContext) -> Step:
    epsilon = ctx.attrs["epsilon"]

    def run(x, scale, bias):
        check_dtype(ctx.version, x.dtype)
        if x.ndim < 3:
            raise UsageError(f"input of rank {x.ndim}: {ctx.version.label} needs N x C x D1 ... (rank >= 3)")
        _check_per_channel(x, (("scale", scale), ("B", bias)), x.shape[1], "one per channel")
        return (instance_norm(x, scale, bias, epsilon, accumulation_dtype(x.dtype)),)
    return run


@adapter("GroupNormalization")
def plan_group_norm(ctx: NodeContext) -> Step:
    epsilon, groups = ctx.attrs["epsilon"], ctx.attrs["num_groups"]
    per_channel = "stash_type" in ctx.version.attributes
    if per_channel and ctx.attrs["stash_type"] not in STASH_TYPES:
        raise UsageError(f"stash_type {ctx.attrs['stash_type']}: poolir runs stash_type 1 (float32) only")

    def run(x, scale, bias):
        check_dtype(ctx.version, x.dtype)
        if x.ndim < 2:
            raise UsageError(f"X of rank {x.ndim}: {ctx.version.label} needs N x C x ... (rank >= 2)")
        channels = x.shape[1]
        if groups < 1 or channels % groups:
            raise UsageError(f"num_groups {groups} does not divide the {channels} channels")
        length, what = (channels, "one per channel") if per_channel else (groups, "one per group before opset 21")
        _check_per_channel(x, (("scale", scale), ("bias", bias)), length, what)
        if not per_channel:
            scale, bias = (np.repeat(v, channels // groups) for v in (scale, bias))
        work = STASH_TYPES[1] if per_channel else accumulation_dtype(x.dtype)
        return (group_norm(x, scale, bias, groups, epsilon, work, round_normalized=per_channel),)
    return run
