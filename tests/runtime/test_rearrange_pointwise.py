"""ShuffleChannels, GatherND-5/8, Tile, Select, Sign, Negative, Exp, Log, comparisons and logical layers in
every layer of poolir, and ONNX Flatten, GatherND and Tile in the ONNX runtime.

Oracles: OpenVINO (CPU, f32 inference precision) on IR files that OpenVINO itself writes (its Python opset API
and save_model), for poolir's IR run and for onnxruntime on poolir's IR -> ONNX conversion; the onnx package's
backend node test cases (flatten, gathernd, tile) for the ONNX runtime; onnxruntime on ONNX models run by
poolir. Every file is also read and written back byte for byte.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import onnx
import pytest

from poolir import converter, ir, runtime
from tests.peers import onnxruntime_run, openvino_convert_to_xml, openvino_run_xml

ov = pytest.importorskip("openvino")
RNG = np.random.default_rng(20261123)


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _cases():
    """name -> (builder of an openvino.Model from its Parameters, feeds)."""
    from openvino import opset1, opset3, opset5, opset8

    def p(name, array):
        return opset1.parameter(list(array.shape), array.dtype, name=name)

    cases = {}

    def case(name, feeds, build):
        cases[name] = (build, feeds)

    for axis, group, shape in ((1, 2, (2, 6, 3, 3)), (1, 3, (1, 12, 2, 2)), (-1, 4, (2, 3, 8)), (0, 3, (6, 2)),
                               (2, 1, (1, 2, 5))):
        case(f"shuffle_{axis}_{group}_{len(shape)}d", {"x": _f32(*shape)},
             lambda x, a=axis, g=group: [opset3.shuffle_channels(x, a, g)])
    gather_sets = [
        ("b0_k2", (3, 4, 5), (2, 2), 0), ("b0_k1", (3, 4), (2, 3, 1), 0), ("b0_k3_scalar", (2, 3, 4), (5, 3), 0),
        ("b1", (3, 4, 5), (3, 2, 1), 1), ("b2", (2, 3, 4, 5), (2, 3, 1), 2), ("b2_k2", (2, 3, 4, 5, 2), (2, 3, 4, 2), 2),
    ]
    for name, data_shape, index_shape, batch in gather_sets:
        depth = index_shape[-1]
        bounds = np.array(data_shape[batch:batch + depth])
        indices = (RNG.integers(-bounds, bounds, size=index_shape)).astype(np.int64)
        for version, module in ((5, opset5), (8, opset8)):
            for index_type in (np.int64, np.int32):
                feeds = {"x": _f32(*data_shape)}
                case(f"gathernd{version}_{name}_{np.dtype(index_type).name}", feeds,
                     lambda x, i=indices.astype(index_type), m=module, b=batch: [
                         m.gather_nd(x, opset1.constant(i), b)])
    for repeats, shape in (([2, 3], (2, 3)), ([2], (2, 3)), ([2, 1, 3], (2, 3)), ([1, 1], (4, 1)), ([3, 0, 1], (1, 2, 2))):
        case(f"tile_{'_'.join(map(str, repeats))}_{len(shape)}d", {"x": _f32(*shape)},
             lambda x, r=repeats: [opset1.tile(x, opset1.constant(np.array(r, np.int64)))])
    # repeats computed at run time (ShapeOf), shorter and longer than the rank, i64 and i32
    for x_shape, y_shape, index_type in (((2, 3, 2), (2, 1), "i64"), ((3,), (2, 2), "i32"), ((2, 2), (3, 1), "i32")):
        case(f"tile_computed_{len(x_shape)}d_by_{len(y_shape)}_{index_type}",
             {"x": _f32(*x_shape), "y": _f32(*y_shape)},
             lambda x, y, t=index_type: [opset1.tile(x, opset3.shape_of(y, t))])
    a = _f32(2, 3, 4)
    a[0, 0, :2] = 0.0
    a[1, 2, 3] = np.nan  # Sign, Negative, Exp, Log keep NaN in OpenVINO (measured), as in numpy
    a[1, 2, 2] = -np.inf
    case("unary", {"x": a}, lambda x: [opset1.sign(x), opset1.negative(x), opset1.exp(x), opset1.log(opset1.abs(x))])
    case("sign_int", {"x": RNG.integers(-3, 4, (3, 4)).astype(np.int32)}, lambda x: [opset1.sign(x)])
    b = _f32(4).round(1)
    a2 = np.where(RNG.random((2, 3, 4)) < 0.3, np.broadcast_to(b, (2, 3, 4)), _f32(2, 3, 4).round(1)).astype(np.float32)
    case("compare_select", {"x": a2, "y": b}, lambda x, y: [
        opset1.equal(x, y), opset1.not_equal(x, y), opset1.less(x, y), opset1.less_equal(x, y), opset1.greater(x, y),
        opset1.greater_equal(x, y),
        opset1.select(opset1.greater(x, y), x, y),
        opset1.logical_xor(opset1.logical_and(opset1.less(x, y), opset1.logical_not(opset1.equal(x, y))),
                           opset1.logical_or(opset1.greater(x, y), opset1.equal(x, y))),
    ])
    # OpenVINO's CPU plugin computes Greater as not(a <= b) and GreaterEqual as not(a < b): true for NaN
    nan_x = np.array([np.nan, 1, np.nan, 2, -np.inf, np.inf, 0.0, 3], np.float32)
    nan_y = np.array([1, np.nan, np.nan, 1, -np.inf, np.inf, -0.0, 4], np.float32)
    for dtype in (np.float32, np.float16):
        case(f"compare_nan_{np.dtype(dtype).name}", {"x": nan_x.astype(dtype), "y": nan_y.astype(dtype)},
             lambda x, y: [opset1.greater(x, y), opset1.greater_equal(x, y), opset1.less(x, y),
                           opset1.less_equal(x, y), opset1.equal(x, y), opset1.not_equal(x, y)])
    case("select_broadcast", {"c": RNG.random((1, 3, 1)) < 0.5, "x": _f32(2, 3, 4), "y": _f32(4)},
         lambda c, x, y: [opset1.select(c, x, y)])
    case("f16_unary", {"x": _f32(3, 4).astype(np.float16)}, lambda x: [opset1.exp(x), opset1.sign(x),
                                                                       opset3.shuffle_channels(x, 1, 2)])

    def model(name):
        build, feeds = cases[name]
        params = [p(k, v) for k, v in feeds.items()]
        outputs = build(*params)
        return ov.Model([opset1.result(o) for o in outputs], params, name)

    return {name: (model, feeds) for name, (_, feeds) in cases.items()}


CASES = _cases()


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("rearrange")
    paths = {}
    for name, (model, _) in CASES.items():
        paths[name] = folder / f"{name}.xml"
        ov.save_model(model(name), paths[name], compress_to_fp16=False)
    return paths


def _bin(path: Path) -> bytes:
    return path.with_suffix(".bin").read_bytes() if path.with_suffix(".bin").exists() else b""


def _same(got: dict, want: dict, rtol=1e-6, atol=1e-6) -> None:
    assert sorted(got) == sorted(want), (list(got), list(want))
    for name, g in got.items():
        w = want[name]
        assert g.shape == w.shape, name
        assert g.dtype == w.dtype, (name, g.dtype, w.dtype)
        if w.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w, err_msg=name)
        else:
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol, err_msg=name,
                                   equal_nan=True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_openvino_file_reads_runs_and_converts_like_openvino(files, name) -> None:
    path = files[name]
    feeds = CASES[name][1]
    model = ir.read_model(path)
    assert ir.serialize(model) == (path.read_bytes(), _bin(path))  # OpenVINO's file, byte for byte
    assert ir.check(model) == []  # the declared dims are the inferred ones
    expected = openvino_run_xml(path, feeds)
    ours = runtime.run(model, feeds)
    rtol = 1e-3 if "f16" in name else 1e-6
    _same(ours, expected, rtol, rtol)
    onnx_model = converter.ir_to_onnx(model)
    onnx.checker.check_model(onnx_model, full_check=True)
    _same(onnxruntime_run(onnx_model, feeds), expected, rtol, rtol)


def test_gathernd5_folds_batch_dims_and_8_keeps_them(files) -> None:
    # Hand-worked: data [2,3,4,5], indices [2,3,1], batch_dims 2 -> GatherND-8 [2,3,5], GatherND-5 [6,5].
    eight = ir.read_model(files["gathernd8_b2_int64"])
    five = ir.read_model(files["gathernd5_b2_int64"])
    assert [d.min for d in eight.results[0].inputs[0].shape] == [2, 3, 5]
    assert [d.min for d in five.results[0].inputs[0].shape] == [6, 5]


def test_shuffle_channels_hand_worked() -> None:
    from poolir.runtime.kernels.rearrange import shuffle_channels

    x = np.arange(6).reshape(1, 6)
    assert shuffle_channels(x, 1, 2).tolist() == [[0, 3, 1, 4, 2, 5]]


# ---- ONNX: the onnx package's backend node cases, and OpenVINO's IR of ONNX models back to ONNX -------------

def _backend_cases(*modules: str):
    import onnx.backend.test.case.node as node_cases

    for module in modules:
        importlib.import_module(f"onnx.backend.test.case.node.{module}")
    ops = {"flatten": "Flatten", "gathernd": "GatherND", "tile": "Tile"}
    wanted = {ops[m] for m in modules}
    return {case.name: case for case in node_cases._NodeTestCases
            if case.model.graph.node[0].op_type in wanted}


BACKEND = _backend_cases("flatten", "gathernd", "tile")


def test_backend_cases_are_collected() -> None:
    assert len(BACKEND) >= 12  # onnx 1.2x: 9 Flatten, 3 GatherND, 2 Tile


@pytest.mark.parametrize("name", sorted(BACKEND))
def test_onnx_backend_case(name) -> None:
    case = BACKEND[name]
    model = case.model
    for inputs, outputs in case.data_sets:
        feeds = {i.name: np.asarray(v) for i, v in zip(model.graph.input, inputs)}
        got = runtime.run(model, feeds)
        for (out_name, value), want in zip(got.items(), outputs):
            assert value.shape == np.asarray(want).shape and value.dtype == np.asarray(want).dtype
            np.testing.assert_array_equal(value, want, err_msg=out_name)


def _onnx(nodes, inputs, outputs, opset):
    from onnx import helper

    graph = helper.make_graph(nodes, "m", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _onnx_cases():
    from onnx import TensorProto as T, helper

    vi = helper.make_tensor_value_info
    cases = {}
    for opset in (9, 11, 13, 21):
        for axis in (0, 1, 3, 4) + ((-1, -3) if opset >= 11 else ()):
            cases[f"flatten_{opset}_{axis}"] = (_onnx([helper.make_node("Flatten", ["x"], ["y"], axis=axis)],
                                                      [vi("x", T.FLOAT, [2, 3, 4, 5])], [vi("y", T.FLOAT, None)], opset),
                                                {"x": _f32(2, 3, 4, 5)})
    for opset, batch in ((11, 0), (12, 1), (13, 2)):
        attrs = {"batch_dims": batch} if batch else {}
        index_shape = (2, 3, 2) if batch == 2 else (2, 4, 2)
        data_shape = (2, 3, 4, 5)
        bounds = np.array(data_shape[batch:batch + 2])
        cases[f"gathernd_{opset}_b{batch}"] = (
            _onnx([helper.make_node("GatherND", ["x", "i"], ["y"], **attrs)],
                  [vi("x", T.FLOAT, list(data_shape)), vi("i", T.INT64, list(index_shape))],
                  [vi("y", T.FLOAT, None)], opset),
            {"x": _f32(*data_shape), "i": RNG.integers(-bounds, bounds, index_shape).astype(np.int64)})
    cases["where"] = (_onnx([helper.make_node("Where", ["c", "x", "y"], ["z"])],
                            [vi("c", T.BOOL, [1, 3, 1]), vi("x", T.FLOAT, [2, 3, 4]), vi("y", T.FLOAT, [4])],
                            [vi("z", T.FLOAT, None)], 16),
                      {"c": RNG.random((1, 3, 1)) < 0.5, "x": _f32(2, 3, 4), "y": _f32(4)})
    return cases


ONNX_CASES = _onnx_cases()


@pytest.mark.parametrize("name", sorted(ONNX_CASES))
def test_onnx_model_runs_like_onnxruntime_and_openvinos_ir_of_it_converts_back(tmp_path, name) -> None:
    model, feeds = ONNX_CASES[name]
    expected = onnxruntime_run(model, feeds)
    _same(runtime.run(model, feeds), expected)
    path = openvino_convert_to_xml(model, tmp_path / f"{name}.xml")
    ir_model = ir.read_model(path)
    assert ir.serialize(ir_model) == (path.read_bytes(), _bin(path))
    openvino = openvino_run_xml(path, feeds)
    _same(runtime.run(ir_model, feeds), openvino)
    _same(onnxruntime_run(converter.ir_to_onnx(ir_model), feeds), openvino)


def test_identity16_written_by_openvino_runs_and_converts_like_openvino(tmp_path) -> None:
    """OpenVINO 2026.4's own graphs may hold Identity-16 (openvino.opset16.identity): read, run and convert."""
    from poolir.converter.peers import openvino_module

    ov = openvino_module()
    import openvino.opset1 as opset1
    import openvino.opset16 as opset16

    x = opset1.parameter([2, 3], np.float32, name="x")
    model = ov.Model([opset1.relu(opset16.identity(x))], [x], "identity16")
    path = tmp_path / "identity16.xml"
    ov.save_model(model, str(path))
    assert 'type="Identity" version="opset16"' in path.read_text()
    feeds = {"x": np.array([[-1, 2, 0.5], [4, -5, 6]], np.float32)}
    (expected,) = openvino_run_xml(path, feeds).values()
    read = ir.read_model(path)
    (actual,) = runtime.run(read, feeds).values()
    np.testing.assert_array_equal(actual, expected)
    (back,) = onnxruntime_run(converter.ir_to_onnx(read), feeds).values()
    np.testing.assert_array_equal(back, expected)
