"""Every family of examples: the seed texts' MaxPool and AvgPool-1 cases, the backend cases, op versions, element
types, OpenVINO's own conversions and whole networks."""

from __future__ import annotations

import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper


# ----------------------------------------------------------------------------------------------------
# The examples

from example_cases import (AVERAGEPOOL_SEED, AVGPOOL1_SEED, LPPOOL_SEEDS, MAXPOOL_SEED, ONNX_IR_VERSION, Example,
                           avgpool_ir, onnx_single_node, parse_avgpool1_spec_layers, parse_seed_examples, sixteenths)
from example_peers import _openvino_infer, compare, onnxruntime_run, openvino_run_xml


def maxpool_seed_examples(seeds: Path, backend: dict[str, Any]) -> list[Example]:
    """Every MaxPool example of the MaxPool doc (seed 004, section "MaxPool - 12").

    Examples whose arrays the text writes out use those arrays; the others (random inputs, computed by a
    helper the text does not show) use the ONNX backend test case of the same name.
    """
    document = f"shared/seeds/{MAXPOOL_SEED}"
    examples = []
    for seed in parse_seed_examples((seeds / MAXPOOL_SEED).read_text()).values():
        if seed.name == "maxpool_3d_default":
            continue  # 1x3x32x32x32 random input: 750 kB for what maxpool_2d_default already shows
        node_inputs = seed.node_inputs
        written = all(n in seed.arrays for n in (*node_inputs, *seed.node_outputs))
        if written:
            inputs = {n: seed.arrays[n] for n in node_inputs}
            expected = {n: seed.arrays[n] for n in seed.node_outputs}
            opset = 12
            source = {"kind": "seed text", "document": document,
                      "section": f"MaxPool - 12, example {seed.name} (arrays written in the text)"}
        else:
            case = backend[seed.test_name]
            inputs = dict(zip(node_inputs, case.data_sets[0][0]))
            expected = dict(zip(seed.node_outputs, case.data_sets[0][1]))
            opset = case.model.opset_import[0].version
            source = {"kind": "ONNX backend test", "test": seed.test_name, "package": f"onnx {version('onnx')}",
                      "note": f"{document}, MaxPool - 12, example {seed.name}: the text computes y with a helper "
                              "from random input; the backend test case holds the numbers"}
        input_types = {n: (list(a.shape), helper.np_dtype_to_tensor_dtype(a.dtype)) for n, a in inputs.items()}
        output_types = {n: (list(a.shape), helper.np_dtype_to_tensor_dtype(a.dtype)) for n, a in expected.items()}
        model = onnx_single_node(seed.name, seed.op_type, opset, input_types, output_types, **seed.attributes)
        example = Example(seed.name, f"{seed.op_type}-{opset} {_describe(seed.attributes)}", inputs, expected, source,
                          onnx_model=model)
        if written and seed.test_name in backend:
            case = backend[seed.test_name]
            same = all(np.array_equal(a, b) for a, b in zip(case.data_sets[0][1], expected.values()))
            example.notes.append(f"the ONNX backend test {seed.test_name} holds the same arrays: {same}")
        examples.append(example)
    return examples


def _describe(attributes: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in attributes.items())


def avgpool1_spec_examples(seeds: Path) -> list[Example]:
    """The five AvgPool-1 IR examples of the OpenVINO spec (seed 002), as written and corrected.

    The first two declare a 32x32 output for auto_pad=same_upper with strides 2,2 on 32x32, where
    OpenVINO (and the spec's own auto_pad text) gives ceil(32 / 2) = 16: those are kept as written, so
    that a reader must report the disagreement, and again with the declared dims corrected.
    """
    document = f"shared/seeds/{AVGPOOL1_SEED}"
    rng = np.random.default_rng(2)
    examples = []
    for number, layer in enumerate(parse_avgpool1_spec_layers((seeds / AVGPOOL1_SEED).read_text()), start=1):
        inputs = {"input": sixteenths(rng, tuple(layer.input_dims))}
        as_written = avgpool_ir(f"avgpool1_spec_{number}", layer.data, layer.input_dims, layer.declared_output_dims)
        expected = openvino_run_xml(as_written, inputs)
        inferred = list(expected["output"].shape)
        source = {"kind": "OpenVINO", "engine": f"openvino {version('openvino')}",
                  "note": f"OpenVINO reads model.xml and runs it on the CPU (f32); the layer is example {number} "
                          f"of {document} (Examples section), its <data> attributes verbatim"}
        title = f"AvgPool-1 spec example {number}: {' '.join(f'{k}={v}' for k, v in layer.data.items())}"
        if inferred == layer.declared_output_dims:
            examples.append(Example(f"avgpool1_spec_{number}", title, inputs, expected, source, ir_xml=as_written))
            continue
        wrong = Example(f"avgpool1_spec_{number}_as_written", title + " (as the spec writes it)", inputs, expected,
                        source, ir_xml=as_written)
        wrong.notes.append(f"the spec declares output dims {layer.declared_output_dims}; OpenVINO infers {inferred} "
                           f"(same_upper: ceil(32 / 2) = 16); poolir inspect and verify must report it")
        corrected_xml = avgpool_ir(f"avgpool1_spec_{number}_corrected", layer.data, layer.input_dims, inferred)
        corrected = Example(f"avgpool1_spec_{number}_corrected", title + " (declared output corrected)", inputs,
                            expected, source, ir_xml=corrected_xml)
        corrected.notes.append(f"declared output dims corrected from {layer.declared_output_dims} to {inferred}")
        examples += [wrong, corrected]
    return examples


# ONNX backend test cases of AveragePool and LpPool (seeds 003 and 000/001 describe the operators; they write
# no arrays, so the backend cases carry the numbers). Chosen to cover pads, count_include_pad, strides,
# same_upper/same_lower, ceil_mode, dilations and p, while staying small.
BACKEND_EXAMPLES = {
    "test_averagepool_2d_precomputed_pads": AVERAGEPOOL_SEED,
    "test_averagepool_2d_precomputed_pads_count_include_pad": AVERAGEPOOL_SEED,
    "test_averagepool_2d_precomputed_strides": AVERAGEPOOL_SEED,
    "test_averagepool_2d_precomputed_same_upper": AVERAGEPOOL_SEED,
    "test_averagepool_2d_same_lower": AVERAGEPOOL_SEED,
    "test_averagepool_2d_pads_count_include_pad": AVERAGEPOOL_SEED,
    "test_averagepool_2d_ceil": AVERAGEPOOL_SEED,
    "test_averagepool_2d_ceil_last_window_starts_on_pad": AVERAGEPOOL_SEED,
    "test_averagepool_2d_dilations": AVERAGEPOOL_SEED,
    "test_averagepool_3d_dilations_small": AVERAGEPOOL_SEED,
    "test_lppool_1d_default": LPPOOL_SEEDS[0],
    "test_lppool_2d_pads": LPPOOL_SEEDS[0],
    "test_lppool_2d_same_lower": LPPOOL_SEEDS[0],
    "test_lppool_2d_dilations": LPPOOL_SEEDS[1],
    "test_globalaveragepool_precomputed": AVERAGEPOOL_SEED,
    # MaxPool-22 ceil_mode=1 on 2x2 with k1 s2: the second window would start at 2 = L (right padding) and is
    # dropped. OpenVINO's ONNX frontend emits rounding_type=ceil, keeps it, and returns 2x2.
    "test_maxpool_2d_ceil_output_size_reduce_by_one": MAXPOOL_SEED,
}


def backend_examples(backend: dict[str, Any]) -> list[Example]:
    examples = []
    for test_name, seed in BACKEND_EXAMPLES.items():
        case = backend[test_name]
        model = onnx.ModelProto()
        model.CopyFrom(case.model)
        model.ir_version = ONNX_IR_VERSION
        graph = model.graph
        node = graph.node[0]
        inputs = {i.name: a for i, a in zip(graph.input, case.data_sets[0][0])}
        expected = {o.name: a for o, a in zip(graph.output, case.data_sets[0][1])}
        attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        attributes = {k: v.decode() if isinstance(v, bytes) else v for k, v in attributes.items()}
        source = {"kind": "ONNX backend test", "test": test_name, "package": f"onnx {version('onnx')}",
                  "operator": f"{node.op_type}-{model.opset_import[0].version}", "spec": f"shared/seeds/{seed}"}
        example = Example(test_name.removeprefix("test_"),
                          f"{node.op_type}-{model.opset_import[0].version} {_describe(attributes)}", inputs,
                          expected, source, onnx_model=model)
        if test_name == "test_averagepool_2d_ceil_last_window_starts_on_pad":
            example.tolerance = {"rtol": 0.0, "atol": 1e-4,
                                 "reason": "the backend test writes y rounded to 4 decimals ([[[[0.1511]]] ...)"}
        examples.append(example)
    return examples


def version_examples() -> list[Example]:
    """Older operator versions and the ceil-overhang divisor, worked out by hand on x = [1, 2, 3, 4, 5, 6].

    Hand-worked because onnxruntime has no AveragePool-1 or LpPool-1 kernel; onnxruntime agrees with
    every case it can run (see each manifest's cross_checks).
    """
    x = {"x": np.arange(1, 7, dtype=np.float32).reshape(1, 1, 6)}
    shape = {"x": ([1, 1, 6], TensorProto.FLOAT)}
    hand = {"kind": "hand-worked", "note": ""}
    cases = [
        # AveragePool-1 has no count_include_pad: pads are always excluded.
        # windows (k3 s2, pads 1,1) over coords [-1,0,1] [1,2,3] [3,4,5]: (1+2)/2, (2+3+4)/3, (4+5+6)/3
        ("averagepool_opset1_pads_excluded", "AveragePool", 1, {"kernel_shape": [3], "strides": [2], "pads": [1, 1]},
         [1.5, 3.0, 5.0], AVERAGEPOOL_SEED, "AveragePool-1 always excludes pads from the divisor"),
        # AveragePool-7 count_include_pad=1: (0+1+2)/3, (2+3+4)/3, (4+5+6)/3
        ("averagepool_opset7_count_include_pad", "AveragePool", 7,
         {"kernel_shape": [3], "strides": [2], "pads": [1, 1], "count_include_pad": 1},
         [1.0, 3.0, 5.0], AVERAGEPOOL_SEED, "count_include_pad=1 counts the padding in the divisor"),
        # AveragePool-10 ceil_mode=1: padded length 8, out = ceil((8-3)/2)+1 = 4; the 4th window [5,6,7]
        # starts at 5 < L + pad_begin = 7 (real input), holds x[5] = 6 only: 6/1
        ("averagepool_opset10_ceil", "AveragePool", 10,
         {"kernel_shape": [3], "strides": [2], "pads": [1, 1], "ceil_mode": 1},
         [1.5, 3.0, 5.0, 6.0], AVERAGEPOOL_SEED, "ceil_mode=1 adds a last window; pads excluded"),
        # The same with count_include_pad=1 (AveragePool-19): the 4th window covers coords 5 (x=6), 6 (padding,
        # inside [-1, 7)) and 7 (past the padded tensor): divisor 2, not 3 -> 6/2 = 3.
        # OpenVINO's AvgPool counts coordinate 7 too (6/3 = 2): its ONNX frontend gets this wrong.
        ("averagepool_ceil_count_include_pad_overhang", "AveragePool", 19,
         {"kernel_shape": [3], "strides": [2], "pads": [1, 1], "ceil_mode": 1, "count_include_pad": 1},
         [1.0, 3.0, 5.0, 3.0], AVERAGEPOOL_SEED,
         "count_include_pad=1 counts padding inside [-pad_begin, L + pad_end) only, never taps past it"),
        # AveragePool-11 SAME_LOWER, k4 s2: out = ceil(6/2) = 3, total pad (3-1)*2+4-6 = 2 -> (1, 1);
        # count_include_pad=1: (0+1+2+3)/4, (2+3+4+5)/4, (4+5+6+0)/4
        ("averagepool_opset11_same_lower_count_include_pad", "AveragePool", 11,
         {"kernel_shape": [4], "strides": [2], "auto_pad": "SAME_LOWER", "count_include_pad": 1},
         [1.5, 3.5, 3.75], AVERAGEPOOL_SEED, "SAME_LOWER: out = ceil(L / s), odd padding at the beginning"),
        # LpPool-1, p a float: (1+8+27)^(1/3), (27+64+125)^(1/3) = 36^(1/3), 6
        ("lppool_opset1_p_float", "LpPool", 1, {"kernel_shape": [3], "strides": [2], "p": 3.0},
         [36 ** (1 / 3), 6.0], LPPOOL_SEEDS[0], "LpPool-1 takes p as a float"),
        # LpPool-18 ceil_mode=1, p=1, no pads: out = ceil((6-3)/2)+1 = 3; windows [0,1,2] [2,3,4] [4,5,(6)]:
        # 1+2+3, 3+4+5, 5+6 (the overhang tap reads nothing). OpenVINO's decomposition (AvgPool times the
        # kernel size) gives 11/2*3 = 16.5 for the last one.
        ("lppool_opset18_ceil_overhang", "LpPool", 18, {"kernel_shape": [3], "strides": [2], "ceil_mode": 1, "p": 1},
         [6.0, 12.0, 11.0], LPPOOL_SEEDS[1], "LpPool sums |x|^p over real elements only; ceil_mode from opset 18"),
    ]
    examples = []
    for name, op_type, opset, attributes, values, seed, rule in cases:
        expected = {"y": np.array(values, dtype=np.float32).reshape(1, 1, -1)}
        model = onnx_single_node(name, op_type, opset, shape, {"y": ([1, 1, len(values)], TensorProto.FLOAT)},
                                 **attributes)
        source = dict(hand, note=f"worked out in examples/generate.py (version_examples) from {op_type}-{opset} "
                                 f"in shared/seeds/{seed}: {rule}")
        examples.append(Example(name, f"{op_type}-{opset} {_describe(attributes)}", dict(x), expected, source,
                                onnx_model=model))
    return examples


def storage_order_example() -> Example:
    """MaxPool storage_order=1 on a non-square input, where transposing the Indices tensor is not enough.

    x = arange(24) as 1x1x4x6, k2 s2: maxima at (1,1) (1,3) (1,5) / (3,1) (3,3) (3,5), values 7 9 11 / 19 21 23.
    Column-major spatial index = w * H + h (H = 4): 1*4+1 = 5, 13, 21 / 7, 15, 23.
    """
    x = np.arange(24, dtype=np.float32).reshape(1, 1, 4, 6)
    model = onnx_single_node("maxpool_storage_order_1_nonsquare", "MaxPool", 12,
                             {"x": ([1, 1, 4, 6], TensorProto.FLOAT)},
                             {"y": ([1, 1, 2, 3], TensorProto.FLOAT), "indices": ([1, 1, 2, 3], TensorProto.INT64)},
                             kernel_shape=[2, 2], strides=[2, 2], storage_order=1)
    expected = {"y": np.array([[[[7, 9, 11], [19, 21, 23]]]], dtype=np.float32),
                "indices": np.array([[[[5, 13, 21], [7, 15, 23]]]], dtype=np.int64)}
    source = {"kind": "hand-worked", "note": "examples/generate.py (storage_order_example): column-major index "
              f"w * H + h per MaxPool-12 storage_order in shared/seeds/{MAXPOOL_SEED}"}
    return Example("maxpool_storage_order_1_nonsquare", "MaxPool k2 s2 storage_order=1 with Indices on 4x6",
                   {"x": x}, expected, source, onnx_model=model)


def dtype_examples() -> list[Example]:
    """Element types beyond float32: int8 and float64 max pooling with indices, float16 and bfloat16 averages.

    Expected values from onnxruntime, except bfloat16, which onnxruntime has no pooling kernel for:
    worked out by hand on x = arange(16) / 4 as 4x4 (every value and every 2x2 mean is exact in bfloat16):
    means of [0, .25, 1, 1.25], [.5, .75, 1.5, 1.75], [2, 2.25, 3, 3.25], [2.5, 2.75, 3.5, 3.75].
    """
    import ml_dtypes

    rng = np.random.default_rng(11)
    i64 = TensorProto.INT64
    specs = [
        ("maxpool_int8_with_indices", "MaxPool", 12, TensorProto.INT8,
         rng.integers(-128, 128, size=(1, 2, 5, 5)).astype(np.int8), ["y", "indices"],
         {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
        ("averagepool_float16_pads", "AveragePool", 22, TensorProto.FLOAT16,
         sixteenths(rng, (1, 2, 5, 5), np.float16), ["y"], {"kernel_shape": [3, 3], "strides": [2, 2],
                                                            "pads": [1, 1, 1, 1]}),
        ("maxpool_3d_float64_with_indices", "MaxPool", 12, TensorProto.DOUBLE,
         rng.standard_normal((1, 1, 4, 4, 4)), ["y", "indices"], {"kernel_shape": [2, 2, 2], "strides": [2, 2, 2]}),
    ]
    examples = []
    for name, op_type, opset, element, x, outputs, attributes in specs:
        model = onnx_single_node(name, op_type, opset, {"x": (list(x.shape), element)},
                                 {o: (None, i64 if o == "indices" else element) for o in outputs}, **attributes)
        expected = onnxruntime_run(model, {"x": x})
        source = {"kind": "onnxruntime", "engine": f"onnxruntime {version('onnxruntime')}",
                  "note": f"onnxruntime runs model.onnx ({x.dtype} input) at generation time"}
        examples.append(Example(name, f"{op_type}-{opset} {x.dtype} {_describe(attributes)}", {"x": x}, expected,
                                source, onnx_model=model))
    bf16 = np.dtype(ml_dtypes.bfloat16)
    model = onnx_single_node("averagepool_bfloat16", "AveragePool", 22, {"x": ([1, 1, 4, 4], TensorProto.BFLOAT16)},
                             {"y": ([1, 1, 2, 2], TensorProto.BFLOAT16)}, kernel_shape=[2, 2], strides=[2, 2])
    example = Example("averagepool_bfloat16", "AveragePool-22 bfloat16 kernel_shape=[2, 2], strides=[2, 2]",
                      {"x": (np.arange(16) / 4).astype(bf16).reshape(1, 1, 4, 4)},
                      {"y": np.array([[[[0.625, 1.125], [2.625, 3.125]]]]).astype(bf16)},
                      {"kind": "hand-worked", "note": "examples/generate.py (dtype_examples): 2x2 means of "
                                                      "arange(16) / 4, exact in bfloat16"}, onnx_model=model)
    gap = f"onnxruntime {version('onnxruntime')} has no bfloat16 pooling kernel"
    example.expected_refused = {"onnxruntime(onnx)": gap, "onnxruntime(onnx->ir->onnx)": gap}
    examples.append(example)
    return examples


def openvino_converted_examples() -> list[Example]:
    """ONNX models next to the IR that OpenVINO's own ONNX frontend writes for them (model.xml + model.bin).

    OpenVINO decomposes LpPool (Abs, Power, AvgPool, Multiply, Power), turns the global pools into Reduce*
    layers and MaxPool with Indices into MaxPool-8: verify reads that IR, runs it, and converts it back to
    ONNX. The cases avoid the ones OpenVINO gets wrong, so one expected.npz (onnxruntime on model.onnx)
    holds for both models, and OpenVINO running its own IR agrees (see cross_checks).
    """
    rng = np.random.default_rng(5)
    f = TensorProto.FLOAT
    specs = [
        ("openvino_converted_lppool", "LpPool", 18, (1, 3, 9, 9), {"y": (None, f)},
         {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "p": 2}),
        ("openvino_converted_maxpool_with_indices", "MaxPool", 12, (1, 3, 9, 9),
         {"y": (None, f), "indices": (None, TensorProto.INT64)},
         {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
        ("openvino_converted_global_lppool", "GlobalLpPool", 2, (2, 3, 5, 5), {"y": (None, f)}, {"p": 3}),
        ("openvino_converted_global_maxpool", "GlobalMaxPool", 1, (2, 3, 5, 5), {"y": (None, f)}, {}),
    ]
    examples = []
    for name, op_type, opset, shape, outputs, attributes in specs:
        model = onnx_single_node(name, op_type, opset, {"x": (list(shape), f)}, outputs, **attributes)
        inputs = {"x": sixteenths(rng, shape)}
        expected = onnxruntime_run(model, inputs)
        source = {"kind": "onnxruntime", "engine": f"onnxruntime {version('onnxruntime')}",
                  "note": "onnxruntime runs model.onnx; model.xml/.bin is OpenVINO's own conversion of it "
                          "(openvino.convert_model + save_model, compress_to_fp16=False)"}
        example = Example(name, f"{op_type}-{opset} {_describe(attributes)}, and OpenVINO's IR for it", inputs,
                          expected, source, onnx_model=model)
        example.ir_files = openvino_convert_to_files(model)
        example.cross_checks.append(_openvino_own_ir_check(example))
        examples.append(example)
    return examples


def openvino_convert_to_files(model: onnx.ModelProto) -> dict[str, bytes]:
    """OpenVINO's IR of an ONNX model, as the bytes of model.xml and model.bin."""
    import openvino as ov

    with tempfile.TemporaryDirectory() as tmp:
        onnx_path, xml_path = Path(tmp, "model.onnx"), Path(tmp, "model.xml")
        onnx.save(model, onnx_path)
        ov.save_model(ov.convert_model(str(onnx_path)), str(xml_path), compress_to_fp16=False)
        return {p.name: p.read_bytes() for p in Path(tmp).iterdir() if p.suffix in (".xml", ".bin")}


def _openvino_own_ir_check(example: Example) -> dict[str, Any]:
    import openvino as ov

    with tempfile.TemporaryDirectory() as tmp:
        for file_name, data in example.ir_files.items():
            Path(tmp, file_name).write_bytes(data)
        outputs = _openvino_infer(ov.Core().read_model(str(Path(tmp, "model.xml"))), example.inputs)
    difference = compare(outputs, example.expected, 1e-5, 1e-6)
    entry = {"peer": f"openvino {version('openvino')}", "what": "OpenVINO runs model.xml (its own conversion)",
             "status": "agrees" if difference is None else "differs"}
    if difference is not None:
        entry["detail"] = difference
    return entry


def network_examples() -> list[Example]:
    """Pooling layers as they appear in well-known networks, with a dynamic batch (fed with batch 2).

    Real spatial sizes (they decide where ceil windows and padding fall), few channels to stay small.
    Expected values: onnxruntime at generation time.
    """
    rng = np.random.default_rng(7)
    f = TensorProto.FLOAT
    specs = [
        ("resnet50_stem_maxpool", "ResNet-50 stem max pool (pool1: 3x3, stride 2, pads 1) on 112x112",
         "MaxPool", 11, (2, 4, 112, 112), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
        ("inception_v3_avgpool_exclude_pad",
         "Inception-v3 Mixed_5b branch_pool average pool (3x3, stride 1, pads 1, count_include_pad=0) on 35x35",
         "AveragePool", 11, (2, 4, 35, 35),
         {"kernel_shape": [3, 3], "strides": [1, 1], "pads": [1, 1, 1, 1], "count_include_pad": 0}),
        ("googlenet_ceil_maxpool", "GoogLeNet pool3/3x3_s2 max pool (3x3, stride 2, ceil_mode=1) on 28x28",
         "MaxPool", 11, (2, 4, 28, 28), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
        ("resnet50_global_average_pool_head", "ResNet-50 head: GlobalAveragePool on 7x7", "GlobalAveragePool", 1,
         (2, 64, 7, 7), {}),
    ]
    examples = []
    for name, title, op_type, opset, shape, attributes in specs:
        model = onnx_single_node(name, op_type, opset, {"x": (["batch", *shape[1:]], f)}, {"y": (None, f)},
                                 **attributes)
        inputs = {"x": sixteenths(rng, shape)}
        expected = onnxruntime_run(model, inputs)
        source = {"kind": "onnxruntime", "engine": f"onnxruntime {version('onnxruntime')}",
                  "note": "onnxruntime runs model.onnx at generation time; the batch dim is symbolic ('batch')"}
        examples.append(Example(name, title, inputs, expected, source, onnx_model=model))
    return examples


def torch_network_examples() -> list[Example]:
    """Small PyTorch-style networks (torch_networks.py) where OpenVINO's own converter changes the numbers: the
    README's verify walkthrough. Expected values: onnxruntime at generation time (it agrees with PyTorch on the
    ceil_mode windows and divisors, and with the spec on Softmax before opset 13)."""
    import torch_networks

    examples = []
    for name, (title, build, shape) in torch_networks.NETWORKS.items():
        model = build()
        inputs = {"x": sixteenths(np.random.default_rng(11), shape)}
        source = {"kind": "onnxruntime", "engine": f"onnxruntime {version('onnxruntime')}",
                  "note": "onnxruntime runs model.onnx at generation time; weights are seeded random numbers"}
        examples.append(Example(name, title, inputs, onnxruntime_run(model, inputs), source, onnx_model=model,
                                tolerance=None))
    return examples


# Real PyTorch exports with PyTorch's own outputs, taken from the test data that its export.py wrote with torch
# (torch is not a dependency, so generate.py reads the committed files instead of exporting).
PYTORCH_EXPORTS = Path(__file__).resolve().parent.parent / "tests" / "converter" / "data" / "pytorch_exports"
PYTORCH_EXAMPLES = {
    "pytorch_opset9_avgpool_ceil_exclude_pad": (
        "avg_ceil_exclude_pad_ts9", "AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False) exported by PyTorch's "
        "TorchScript exporter at opset 9, which has no ceil_mode: it writes pads (1, 3), and onnxruntime and "
        "OpenVINO's converter refuse a pad at least the kernel"),
    "pytorch_maxpool_ceil_indices": (
        "max_indices_dynamo", "MaxPool2d(3, 2, 1, ceil_mode=True, return_indices=True) exported by torch.export "
        "(opset 18): values and flat indices"),
    "pytorch_avgpool_ceil_include_pad": (
        "avg_ceil_include_pad_dynamo", "AvgPool2d(3, 2, 1, ceil_mode=True) exported by torch.export (opset 18): the "
        "last window hangs past the padding; PyTorch divides it by the 6 taps inside the padded extent"),
}


def pytorch_export_examples() -> list[Example]:
    examples = []
    for name, (export, title) in PYTORCH_EXAMPLES.items():
        arrays = dict(np.load(PYTORCH_EXPORTS / f"{export.rsplit('_', 1)[0]}.npz"))
        inputs = {"x": arrays.pop("x")}
        source = {"kind": "pytorch", "engine": "torch 2.15.0",
                  "note": f"PyTorch's own forward, recorded when tests/converter/data/pytorch_exports/export.py "
                          f"exported model.onnx (there: {export}.onnx)"}
        examples.append(Example(name, title, inputs, arrays, source, onnx_model=onnx.load(PYTORCH_EXPORTS /
                                                                                           f"{export}.onnx")))
    return examples
