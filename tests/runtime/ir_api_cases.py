"""Random valid single-layer (or small) models built with OpenVINO's own opset API, for ir_api_fuzz.

Each generator takes a `Ctx` (a seeded rng, whether to make input dims dynamic) and returns the outputs of
the layer it built; `Ctx.param` adds a Parameter and draws its feed. Attributes, shapes and element types are
random but valid for OpenVINO's shape inference; a generator never computes an expected value: OpenVINO is
the oracle (ir_api_fuzz compares). Generators for the other half of the families live in ir_api_cases_more.
"""

from __future__ import annotations

import numpy as np
import openvino as ov
import openvino.opset1 as o1
import openvino.opset3 as o3
import openvino.opset4 as o4
import openvino.opset5 as o5
import openvino.opset8 as o8
import openvino.opset14 as o14
import openvino.opset16 as o16

OV_TYPES = {"f32": ov.Type.f32, "f16": ov.Type.f16, "i32": ov.Type.i32, "i64": ov.Type.i64, "u8": ov.Type.u8,
            "i8": ov.Type.i8, "boolean": ov.Type.boolean, "f64": ov.Type.f64}
NP_TYPES = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "i64": np.int64, "u8": np.uint8, "i8": np.int8,
            "boolean": np.bool_, "f64": np.float64}
FLOATS = ("f32", "f16")
NUMBERS = ("f32", "f16", "i32", "i64", "u8", "i8")


class Ctx:
    """One case under construction: its rng, its Parameters and their feeds, and a note of its choices."""

    def __init__(self, rng: np.random.Generator, dynamic: bool):
        self.rng, self.dynamic = rng, dynamic
        self.params: list = []
        self.feeds: dict[str, np.ndarray] = {}
        self.notes: list[str] = []

    def pick(self, options):
        return options[int(self.rng.integers(len(options)))]

    def ints(self, low: int, high: int, n: int | None = None):
        """Integers in [low, high] (one, or a list of n)."""
        if n is None:
            return int(self.rng.integers(low, high + 1))
        return [int(v) for v in self.rng.integers(low, high + 1, n)]

    def note(self, **choices) -> None:
        self.notes.extend(f"{k}={v}" for k, v in choices.items())

    def values(self, shape, element_type: str, *, low=None, high=None) -> np.ndarray:
        """Feed or Const data: floats from a mix of normals, small integers (ties) and zeros; integers in a
        small range (u8 over its whole range); booleans."""
        rng, dtype = self.rng, NP_TYPES[element_type]
        shape = tuple(shape)
        if element_type == "boolean":
            return np.asarray(rng.random(shape) < 0.5)  # a 0-d comparison gives a numpy scalar, not an array
        if element_type in ("f32", "f16", "f64"):
            if low is not None:
                return rng.uniform(low, high, shape).astype(dtype)
            style = self.pick(("normal", "normal", "ties", "wide"))
            data = {"normal": lambda: rng.standard_normal(shape),
                    "ties": lambda: rng.integers(-3, 4, shape).astype(np.float64),
                    "wide": lambda: rng.standard_normal(shape) * 30}[style]()
            return np.asarray(np.asarray(data).astype(dtype))
        info = np.iinfo(dtype)
        low = max(info.min, -20 if low is None else low)
        high = min(info.max, (255 if element_type == "u8" else 20) if high is None else high)
        return np.asarray(rng.integers(low, high + 1, shape).astype(dtype))

    def param(self, shape, element_type: str = "f32", *, name: str | None = None, dynamic: bool | None = None,
              **value_range):
        """A Parameter of `shape` (its dims dynamic at random: -1 or a range holding the fed dim) and its feed."""
        name = name or f"x{len(self.params)}"
        dims = []
        for dim in shape:
            draw = self.rng.random()
            if (self.dynamic if dynamic is None else dynamic) and draw < 0.3:
                dims.append(ov.Dimension(-1))
            elif (self.dynamic if dynamic is None else dynamic) and draw < 0.5:
                dims.append(ov.Dimension(max(1, dim - self.ints(0, 2)), dim + self.ints(0, 3)))
            else:
                dims.append(ov.Dimension(dim))
        node = o1.parameter(ov.PartialShape(dims), OV_TYPES[element_type], name=name)
        node.output(0).get_tensor().set_names({name})
        self.params.append(node)
        self.feeds[name] = self.values(shape, element_type, **value_range)
        return node

    def const(self, value, element_type: str | None = None):
        array = np.asarray(value, dtype=NP_TYPES[element_type] if element_type else None)
        if array.size == 0:  # opset1.constant refuses empty data; the class itself takes it
            return ov.op.Constant(OV_TYPES[_type_name(array.dtype)], ov.Shape(list(array.shape)), [])
        return o1.constant(array, OV_TYPES[_type_name(array.dtype)])


def _type_name(dtype) -> str:
    return next(name for name, np_type in NP_TYPES.items() if np.dtype(np_type) == np.dtype(dtype))


def random_shape(c: Ctx, rank: int | None = None, low: int = 1, high: int = 5) -> list[int]:
    rank = c.ints(0, 4) if rank is None else rank
    return c.ints(low, high, rank) if rank else []


# ---------------------------------------------------------------------------------------------------
# Convolution, GroupConvolution, MatMul


def _conv_geometry(c: Ctx, spatial: int):
    kernel, strides, dilations = c.ints(1, 3, spatial), c.ints(1, 3, spatial), c.ints(1, 2, spatial)
    pads_begin, pads_end = c.ints(0, 2, spatial), c.ints(0, 2, spatial)
    auto_pad = c.pick(("explicit", "explicit", "same_upper", "same_lower", "valid"))
    sizes = [(k - 1) * d + 1 + c.ints(0, 4) for k, d in zip(kernel, dilations)]
    c.note(kernel=kernel, strides=strides, dilations=dilations, pads=(pads_begin, pads_end), auto_pad=auto_pad)
    return kernel, strides, dilations, pads_begin, pads_end, auto_pad, sizes


def convolution(c: Ctx):
    spatial, element_type = c.ints(1, 3), c.pick(("f32", "f32", "f16"))
    kernel, strides, dilations, pb, pe, auto_pad, sizes = _conv_geometry(c, spatial)
    n, cin, cout = c.ints(1, 2), c.ints(1, 4), c.ints(1, 4)
    x = c.param([n, cin, *sizes], element_type)
    weights = c.values([cout, cin, *kernel], element_type)
    w = c.param(weights.shape, element_type, dynamic=False) if c.rng.random() < 0.3 else c.const(weights)
    return [o1.convolution(x, w, strides, pb, pe, dilations, auto_pad)]


def group_convolution(c: Ctx):
    spatial, element_type = c.ints(1, 3), c.pick(("f32", "f32", "f16"))
    kernel, strides, dilations, pb, pe, auto_pad, sizes = _conv_geometry(c, spatial)
    groups, cin, cout = c.ints(1, 3), c.ints(1, 3), c.ints(1, 3)
    x = c.param([c.ints(1, 2), groups * cin, *sizes], element_type)
    w = c.const(c.values([groups, cout, cin, *kernel], element_type))
    return [o1.group_convolution(x, w, strides, pb, pe, dilations, auto_pad)]


def matmul(c: Ctx):
    # integers (which poolir refuses) only on static dims: OpenVINO 2026.4 crashes on an i32 [?,4,2] x [2,4,3]
    element_type = c.pick(("f32", "f32", "f16") + (() if c.dynamic else ("i32", "i64")))
    m, k, n = c.ints(1, 4), c.ints(1, 5), c.ints(1, 4)
    batch = random_shape(c, c.ints(0, 2), 1, 3)
    rank_a, rank_b = c.pick((1, 2, 2 + len(batch))), c.pick((1, 2, 2 + len(batch)))
    a = [k] if rank_a == 1 else ([*batch, m, k] if rank_a > 2 else [m, k])
    b = [k] if rank_b == 1 else ([*batch, k, n] if rank_b > 2 else [k, n])
    if rank_a > 2 and c.rng.random() < 0.4:  # a batch dim of 1 on one side broadcasts
        a[0] = 1
    ta, tb = bool(c.ints(0, 1)), bool(c.ints(0, 1))
    if ta and rank_a > 1:
        a[-1], a[-2] = a[-2], a[-1]
    if tb and rank_b > 1:
        b[-1], b[-2] = b[-2], b[-1]
    c.note(a=a, b=b, transpose_a=ta, transpose_b=tb)
    x = c.param(a, element_type, low=-5, high=5)
    y = c.param(b, element_type, dynamic=False, low=-5, high=5) if c.rng.random() < 0.5 \
        else c.const(c.values(b, element_type, low=-5, high=5))
    return [o1.matmul(x, y, ta, tb)]


# ---------------------------------------------------------------------------------------------------
# Elementwise arithmetic and comparisons


def _broadcast_shapes(c: Ctx, mode: str):
    a = random_shape(c, c.ints(0, 4), 1, 4)
    if mode == "none":
        return a, list(a)
    if mode == "pdpd":  # B is a suffix of A's dims (1s allowed); IR keeps no pdpd axis, so it is always -1
        b = [d if c.rng.random() < 0.7 else 1 for d in a[len(a) - c.ints(0, len(a)):]]
        return a, b
    b = a[len(a) - c.ints(0, len(a)):] if a else []
    b = [d if c.rng.random() < 0.6 else 1 for d in b]
    b = c.ints(1, 3, c.ints(0, 1)) * (len(b) == len(a)) + b
    if c.rng.random() < 0.5:
        a, b = b, a
    a = [1 if (c.rng.random() < 0.2 and len(a) >= len(b)) else d for d in a]
    return a, b


ARITHMETIC = {"Add": o1.add, "Subtract": o1.subtract, "Multiply": o1.multiply, "Divide": o1.divide,
              "Maximum": o1.maximum, "Minimum": o1.minimum, "Power": o1.power, "FloorMod": o1.floor_mod,
              "Mod": o1.mod}
COMPARISONS = {"Equal": o1.equal, "NotEqual": o1.not_equal, "Less": o1.less, "LessEqual": o1.less_equal,
               "Greater": o1.greater, "GreaterEqual": o1.greater_equal}
LOGICAL = {"LogicalAnd": o1.logical_and, "LogicalOr": o1.logical_or, "LogicalXor": o1.logical_xor}


def arithmetic(c: Ctx):
    op = c.pick(sorted(ARITHMETIC))
    # pdpd (which poolir refuses, naming it) only on static dims: OpenVINO 2026.4 crashes on [?,4] + [4] with it
    mode = c.pick(("numpy", "numpy", "none") + (() if c.dynamic else ("pdpd",)))
    a, b = _broadcast_shapes(c, mode)
    element_type = c.pick(NUMBERS)
    c.note(op=op, type=element_type, broadcast=mode, a=a, b=b)
    low_b, high_b = (None, None)
    if op in ("Divide", "FloorMod", "Mod") and element_type not in FLOATS:
        low_b, high_b = (1, 9)  # integer division by zero: undefined in OpenVINO's CPU plugin
    low_a = high_a = None
    if op == "Power":
        low_a, high_a, low_b, high_b = ((0.1, 3.0, -2.0, 2.0) if element_type in FLOATS else (0, 4, 0, 3))
    x = c.param(a, element_type, low=low_a, high=high_a)
    y = c.param(b, element_type, low=low_b, high=high_b) if c.rng.random() < 0.6 \
        else c.const(c.values(b, element_type, low=low_b, high=high_b))
    node = ARITHMETIC[op](x, y, auto_broadcast=mode)
    if op == "Divide" and element_type not in FLOATS and c.rng.random() < 0.5:
        node.set_attribute("m_pythondiv", False)
        c.note(pythondivision=False)
    return [node]


def comparison(c: Ctx):
    op = c.pick(sorted(COMPARISONS) + sorted(LOGICAL))
    a, b = _broadcast_shapes(c, "numpy")
    element_type = "boolean" if op in LOGICAL else c.pick(NUMBERS)
    c.note(op=op, type=element_type, a=a, b=b)
    table = {**COMPARISONS, **LOGICAL}
    x = c.param(a, element_type, low=-3, high=3) if element_type != "boolean" else c.param(a, element_type)
    y = c.param(b, element_type, low=-3, high=3) if element_type != "boolean" else c.param(b, element_type)
    return [table[op](x, y)]


def select(c: Ctx):
    a, b = _broadcast_shapes(c, "numpy")
    cond_shape = a[c.ints(0, len(a)):] if a else []
    element_type = c.pick(NUMBERS + ("boolean",))
    c.note(cond=cond_shape, then=a, otherwise=b, type=element_type)
    cond = c.param(cond_shape, "boolean")
    return [o1.select(cond, c.param(a, element_type), c.param(b, element_type))]


# ---------------------------------------------------------------------------------------------------
# Unary layers and activations


UNARY = {"Abs": (o1.abs, NUMBERS), "Sign": (o1.sign, NUMBERS), "Negative": (o1.negative, ("f32", "f16", "i32", "i64",
                                                                                         "i8")),
         "Exp": (o1.exp, FLOATS), "Log": (o1.log, FLOATS), "Sqrt": (o1.sqrt, FLOATS), "Floor": (o1.floor, NUMBERS),
         "ReLU": (o1.relu, NUMBERS), "Sigmoid": (o1.sigmoid, FLOATS), "Tanh": (o1.tanh, FLOATS),
         "HSwish": (o4.hswish, FLOATS), "HSigmoid": (o5.hsigmoid, FLOATS), "Identity": (o16.identity, NUMBERS),
         "LogicalNot": (o1.logical_not, ("boolean",)), "Swish": (o4.swish, FLOATS)}


def unary(c: Ctx):
    op = c.pick(sorted(UNARY))
    build, types = UNARY[op]
    element_type = c.pick(types)
    shape = random_shape(c)
    c.note(op=op, type=element_type, shape=shape)
    value_range = dict(low=0.0, high=9.0) if op in ("Log", "Sqrt") and c.rng.random() < 0.7 else {}
    x = c.param(shape, element_type, **value_range)
    if op == "Swish" and c.rng.random() < 0.6:
        beta = float(c.rng.uniform(-2, 3))
        c.note(beta=beta)
        return [o4.swish(x, c.const(np.array(beta, NP_TYPES[element_type])))]
    return [build(x)]


def hard_sigmoid(c: Ctx):
    element_type = c.pick(FLOATS)
    alpha, beta = float(c.rng.uniform(-1, 1)), float(c.rng.uniform(-1, 1))
    c.note(alpha=alpha, beta=beta, type=element_type)
    x = c.param(random_shape(c), element_type)
    dtype = NP_TYPES[element_type]
    return [o1.hard_sigmoid(x, c.const(np.array(alpha, dtype)), c.const(np.array(beta, dtype)))]


def clamp(c: Ctx):
    element_type = c.pick(NUMBERS)
    low = float(c.rng.uniform(-4, 2)) if c.rng.random() < 0.5 else float(c.ints(-4, 2))
    high = low + (float(c.rng.uniform(0, 5)) if c.rng.random() < 0.5 else float(c.ints(0, 5)))
    c.note(type=element_type, min=low, max=high)
    return [o1.clamp(c.param(random_shape(c), element_type, low=-8, high=8), low, high)]


def prelu(c: Ctx):
    element_type = c.pick(FLOATS)
    shape = random_shape(c, c.ints(1, 4))
    slope_shape = c.pick(([1], [shape[1]] if len(shape) > 1 else [shape[0]], shape[-1:], shape))
    c.note(shape=shape, slope=slope_shape, type=element_type)
    # A 1-D slope that is not per channel on a dynamic channel dim: OpenVINO 2026.4 broadcasts the channels to the
    # slope's length, or returns an empty tensor and crashes (README, "Layout"); those inputs stay static.
    odd = len(slope_shape) == 1 and len(shape) > 1 and slope_shape[0] not in (1, shape[1])
    x = c.param(shape, element_type, dynamic=False if odd else None)
    return [o1.prelu(x, c.const(c.values(slope_shape, element_type)))]


def softmax(c: Ctx):
    shape = random_shape(c, c.ints(1, 4))
    version, element_type = c.pick((1, 8, "log")), c.pick(FLOATS)
    axis = c.ints(0, len(shape) - 1) if version == 1 else c.ints(-len(shape), len(shape) - 1)
    c.note(version=version, axis=axis, shape=shape, type=element_type)
    x = c.param(shape, element_type)
    return [{1: o1.softmax, 8: o8.softmax, "log": o5.log_softmax}[version](x, axis)]


def lrn(c: Ctx):
    shape = random_shape(c, c.ints(2, 4), 1, 6)
    axes = sorted(set(c.ints(1 if len(shape) > 1 else 0, len(shape) - 1, c.ints(1, len(shape) - 1 or 1))))
    if c.rng.random() < 0.2:
        axes = [a - len(shape) for a in axes]
    size, alpha = c.ints(1, 6), float(c.rng.uniform(1e-4, 2))
    beta, bias = float(c.rng.uniform(0.1, 1)), float(c.rng.uniform(0.5, 3))
    c.note(shape=shape, axes=axes, size=size, alpha=alpha, beta=beta, bias=bias)
    return [o1.lrn(c.param(shape, c.pick(FLOATS)), c.const(np.array(axes, np.int64)), alpha, beta, bias, size)]


def batch_norm(c: Ctx):
    shape = random_shape(c, c.ints(2, 4))
    element_type, version = c.pick(FLOATS), c.pick((1, 5))
    channels = [shape[1]]
    stats = [c.const(c.values(channels, element_type)) for _ in range(3)]
    variance = c.const(c.values(channels, element_type, low=0.0, high=3.0))
    epsilon = c.pick((1e-5, 1e-3, 0.0, 0.5))
    c.note(version=version, shape=shape, epsilon=epsilon, type=element_type)
    build = {1: o1.batch_norm_inference, 5: o5.batch_norm_inference}[version]
    return [build(c.param(shape, element_type), stats[0], stats[1], stats[2], variance, epsilon)]


def shuffle_channels(c: Ctx):
    shape = random_shape(c, c.ints(1, 4))
    axis = c.ints(-len(shape), len(shape) - 1)
    divisors = [g for g in range(1, shape[axis] + 1) if shape[axis] % g == 0]
    group = c.pick(divisors)
    c.note(shape=shape, axis=axis, group=group)
    return [o3.shuffle_channels(c.param(shape, c.pick(NUMBERS)), axis, group)]


CASES = {"Convolution": convolution, "GroupConvolution": group_convolution, "MatMul": matmul,
         "arithmetic": arithmetic, "comparison": comparison, "Select": select, "unary": unary,
         "HardSigmoid": hard_sigmoid, "Clamp": clamp, "PReLU": prelu, "SoftMax": softmax, "LRN": lrn,
         "BatchNormInference": batch_norm, "ShuffleChannels": shuffle_channels}
_ = o14  # pooling generators (ir_api_cases_more) use opset14 too
