"""Einsum: ONNX Einsum-12/28 and IR Einsum-7, and both conversions, against the onnx package's backend cases,
onnxruntime, OpenVINO's CPU plugin on layers built with its own API, and the engines running the converted models.
Each place where the worlds differ (ir/ops/matmul.py's docstring) has its own test, with the probe that showed it.
Floats agree within the few ulps the engines' summation orders give; integers exactly."""

from __future__ import annotations

import random
import subprocess
import sys
import time

import numpy as np
import onnx
import openvino.opset1 as ov1
import openvino.opset7 as ov7
import pytest
from onnx import helper

from poolir import ir, runtime
from poolir.converter import ir_to_onnx, onnx_to_ir
from poolir.ir.errors import ConversionError, InvalidModelError, PoolirError, UnsupportedError
from poolir.runtime.kernels.matmul import einsum
from tests.backend_cases import accepting_versions, at_opset, feeds_of, node_cases
from tests.peers import onnxruntime_run, openvino_core, openvino_run_xml
from tests.runtime.ir_cases import OV_TYPES, assert_matches_openvino, run_poolir, save_ir

BACKEND_CASES = node_cases(("einsum",), ("Einsum",))
# rtol for float32: a K-term dot product summed in another order moves by ~K ulps; these are <= 64-term sums.
F32 = {"rtol": 3e-6, "atol": 1e-6}
F16 = {"rtol": 1e-3, "atol": 1e-3}     # one float16 ulp: both sides compute in float32 and round once


def einsum_model(equation: str, arrays, opset: int = 12) -> onnx.ModelProto:
    element = helper.np_dtype_to_tensor_dtype(arrays[0].dtype)
    inputs = [helper.make_tensor_value_info(f"x{i}", element, a.shape) for i, a in enumerate(arrays)]
    node = helper.make_node("Einsum", [f"x{i}" for i in range(len(arrays))], ["y"], equation=equation)
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", element, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def feeds(arrays) -> dict[str, np.ndarray]:
    return {f"x{i}": a for i, a in enumerate(arrays)}


def einsum_ir(equation: str, arrays, path):
    params = [ov1.parameter(list(a.shape), OV_TYPES[a.dtype], name=f"x{i}") for i, a in enumerate(arrays)]
    return save_ir([ov7.einsum([p.output(0) for p in params], equation).output(0)], params, path)


def assert_close(got, want, dtype):
    assert got.shape == want.shape and got.dtype == want.dtype
    if np.dtype(dtype).kind in "iu":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), equal_nan=True,
                                   **(F16 if np.dtype(dtype) == np.float16 else F32))


# -- the onnx package's own cases ---------------------------------------------------------------------------------

def test_every_generator_case_is_collected():
    assert len(BACKEND_CASES) >= 9


@pytest.mark.parametrize("name", sorted(BACKEND_CASES))
def test_onnx_backend_case_at_every_opset_that_accepts_it(name):
    case = BACKEND_CASES[name]
    (want,) = case.data_sets[0][1]
    versions = accepting_versions(case)
    assert versions, "no Einsum row takes the case's element type"
    for version in versions:
        got = runtime.run(at_opset(case, max(version.since, 12)), feeds_of(case))[case.model.graph.output[0].name]
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-2 if
                                   got.dtype.kind == "V" else 1e-12)


# -- ONNX against onnxruntime --------------------------------------------------------------------------------------

LOWER, UPPER = "abcdefgh", "BGHIJD"


def _onnx_grid(count=80, seed=3):
    """Random equations onnxruntime runs: 1-3 operands, diagonals, summed and broadcast (size-1) labels, ellipses
    of one length, implicit (lower case: onnxruntime refuses an upper-case implicit output) and explicit outputs,
    spaces, over float32, float64, float16, int32 and int64."""
    rng = random.Random(seed)
    cases = []
    for index in range(count):
        implicit = rng.random() < 0.3
        pool = LOWER[:5] if implicit else rng.choice((LOWER[:5], UPPER, LOWER[:3] + UPPER[:3]))
        sizes = {label: rng.randint(1, 4) for label in pool}
        operands = rng.randint(1, 3)
        ellipsis = [rng.randint(1, 3) for _ in range(rng.randint(0, 2))] if rng.random() < 0.3 else None
        terms, shapes = [], []
        for _ in range(operands):
            labels = rng.sample(pool, rng.randint(0, 3))
            if labels and rng.random() < 0.2:
                labels.insert(rng.randint(0, len(labels)), labels[0])     # a diagonal
            shape = [sizes[label] for label in labels]
            if labels and rng.random() < 0.15:
                shape[0] = 1                                              # broadcast against the other terms
                if labels.count(labels[0]) > 1:
                    shape = [sizes[label] for label in labels]
            term = "".join(labels)
            if ellipsis is not None and rng.random() < 0.7:
                at = rng.randint(0, len(labels))
                term = term[:at] + "..." + term[at:]
                shape[at:at] = [d if rng.random() < 0.7 else 1 for d in ellipsis]
            terms.append(term)
            shapes.append(tuple(shape))
        equation = ",".join(terms)
        if not implicit:
            used = sorted({c for t in terms for c in t if c != "."})
            out = rng.sample(used, rng.randint(0, len(used)))
            if any("..." in t for t in terms) or rng.random() < 0.1:
                out.insert(rng.randint(0, len(out)), "...")
            equation += "->" + "".join(out)
        if rng.random() < 0.2:
            equation = " ".join(equation)       # spaces anywhere: ONNX allows U+0020
        dtype = (np.float32, np.float32, np.float64, np.float16, np.int32, np.int64)[index % 6]
        cases.append((equation, tuple(shapes), np.dtype(dtype).name))
    return cases


def _arrays(shapes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return [rng.integers(-9, 10, shape).astype(dtype) for shape in shapes]
    return [rng.standard_normal(shape).astype(dtype) for shape in shapes]


@pytest.mark.parametrize("case", _onnx_grid(), ids=str)
def test_against_onnxruntime(case):
    equation, shapes, dtype = case
    arrays = _arrays(shapes, dtype)
    model = einsum_model(equation, arrays)
    want = onnxruntime_run(model, feeds(arrays))["y"]
    assert_close(runtime.run(model, feeds(arrays))["y"], want, dtype)


def test_maxvit_attention_einsums_match_onnxruntime_to_a_few_ulps():
    """The two einsums of torchvision's maxvit_t (both exporters write them with spaces and upper case), at the
    shapes of its first block: q k^T over 32 dims, then the 49-term weighted sum."""
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((1, 64, 2, 49, 32)).astype(np.float32) for _ in range(3))
    weights = rng.random((1, 64, 2, 49, 49)).astype(np.float32)
    for equation, arrays in (("B G H I D, B G H J D -> B G H I J", [q, k]),
                             ("B G H I J, B G H J D -> B G H I D", [weights, v])):
        model = einsum_model(equation, arrays, opset=17)
        want = onnxruntime_run(model, feeds(arrays))["y"]
        got = runtime.run(model, feeds(arrays))["y"]
        scale = np.abs(want).max()
        assert np.abs(got - want).max() <= 8 * np.finfo(np.float32).eps * scale


def test_the_kernel_multiplies_through_blas():
    """np.einsum with the left-to-right path runs 'bghid,bghjd->bghij' as one batched matmul: its time is the
    matmul's, not the 6x of numpy's unoptimised loop (best of 7 runs, so a busy machine does not decide)."""
    rng = np.random.default_rng(0)
    q, k = (rng.standard_normal((1, 64, 2, 49, 32)).astype(np.float32) for _ in range(2))

    def best(call):
        times = []
        for _ in range(7):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        return min(times)

    ours = best(lambda: einsum(["bghid", "bghjd"], "bghij", [q, k]))
    blas = best(lambda: np.matmul(q, np.swapaxes(k, -1, -2)))
    loop = best(lambda: np.einsum("bghid,bghjd->bghij", q, k, optimize=False))
    assert ours < 3 * blas + 2e-4 and ours < loop


def test_integer_types_onnxruntime_has_no_kernel_for_wrap_as_its_int64_result_does():
    """onnxruntime runs int32 and int64 only; int8 / uint16 sums are ONNX's arithmetic in the type, that is the int64
    result modulo 2**bits (100 * 3 = 300 is 44 in int8)."""
    for dtype in (np.int8, np.uint8, np.int16, np.uint16, np.uint32, np.uint64):
        arrays = [np.array([[100, 100, 100], [7, 8, 9]], dtype), np.array([3, 1, 2], dtype)]
        wide = onnxruntime_run(einsum_model("ij,j->i", [a.astype(np.int64) for a in arrays]),
                               feeds([a.astype(np.int64) for a in arrays]))["y"]
        got = runtime.run(einsum_model("ij,j->i", arrays), feeds(arrays))["y"]
        np.testing.assert_array_equal(got, wide.astype(dtype))


# -- where poolir and onnxruntime part ------------------------------------------------------------------------------

def test_an_implicit_upper_case_output_follows_the_spec_where_onnxruntime_refuses():
    """'aB' keeps both labels, sorted by ASCII: 'Ba', the transpose (the spec's rule; numpy and OpenVINO agree).
    onnxruntime 1.31 refuses it ("only subscript labels allowed are lower-cased letters ... and upper-cased")."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    model = einsum_model("aB", [x])
    with pytest.raises(Exception, match="subscript labels"):
        onnxruntime_run(model, {"x0": x})
    np.testing.assert_array_equal(runtime.run(model, {"x0": x})["y"], x.T)


def test_ellipses_of_different_lengths_are_refused_as_the_spec_says():
    """"every occurrence of ellipsis in the equation must represent the same number of dimensions": 0 against 1
    here (onnxruntime 1.31 crashes the process on it, so it is not asked)."""
    arrays = [np.ones((3, 4), np.float32), np.ones((2, 4, 5), np.float32)]
    with pytest.raises(InvalidModelError, match="same number"):
        runtime.run(einsum_model("...ij,...jk->...ik", arrays), feeds(arrays))


@pytest.mark.parametrize("equation,shapes,match", [
    ("ij->ii", [(2, 2)], "more than once"),
    ("ij->k", [(2, 2)], "in no input term"),
    ("ij,jk->ik", [(2, 3)], "2 input terms for 1 inputs"),
    ("...ij->ij", [(2, 3, 4)], "output has no ellipsis"),
    ("ij->i", [(2, 3, 4)], "rank 3"),
    ("ij,ij->ij", [(2, 3), (3, 3)], "equal, or one of them 1"),
    ("ii->i", [(1, 3)], "repeated label needs equal dims"),
    ("i\tj->ij", [(2, 2)], "neither a letter"),
    ("ij->i->j", [(2, 2)], "more than one '->'"),
    ("...i...->i", [(2, 2)], "more than one ellipsis"),
])
def test_bad_einsum_is_refused_naming_the_node(equation, shapes, match):
    arrays = [np.ones(shape, np.float32) for shape in shapes]
    with pytest.raises(PoolirError, match=match) as caught:
        runtime.run(einsum_model(equation, arrays), feeds(arrays))
    assert "(Einsum)" in str(caught.value)


@pytest.mark.parametrize("equation", ["i.j", "..ij", "ij-", "ij-->i"])
def test_an_equation_onnx_shape_inference_never_returns_on_is_refused_at_once(tmp_path, equation):
    """onnx 1.23's Einsum shape inference loops forever on a '.' outside an ellipsis and on a '-' not starting
    '->' (found probing: `poolir run` hung until killed); poolir reads the equation first and refuses it."""
    path = tmp_path / "model.onnx"
    onnx.save(einsum_model(equation, [np.ones((2, 2), np.float32)]), path)
    for command in ("run", "inspect", "convert"):
        done = subprocess.run([sys.executable, "-c", "from poolir.converter.cli import main; main()", command,
                               str(path)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and "Einsum" in done.stderr, (command, done.stderr)


# -- IR Einsum-7 against OpenVINO ----------------------------------------------------------------------------------

def _widest_ellipsis(equation: str, shapes) -> int:
    terms = equation.replace(" ", "").split("->")[0].split(",")
    return max((len(shape) - len(term) + 3 for term, shape in zip(terms, shapes) if "..." in term), default=0)


def _ir_grid():
    """ONNX-style equations (in their IR spelling) and OpenVINO's own: ellipses of different lengths broadcast,
    an ellipsis left out of the output summed, a trace, the spec's examples. Ellipses of 2 or more dims only where
    OpenVINO's CPU plugin gets them right (test_openvino_gets_some_wide_ellipses_wrong_and_poolir_spells_them_out)."""
    onnx_style = [(e.replace(" ", ""), s, d) for e, s, d in _onnx_grid(40, seed=9)
                  if d in ("float32", "float16") and _widest_ellipsis(e, s) <= 1]
    openvino_only = [
        ("...ij,...jk->...ik", ((2, 1, 3, 4), (5, 4, 2)), "float32"),
        ("...ij->ij", ((2, 3, 4),), "float32"),
        ("a...b,b...->a...", ((9, 1, 4, 3), (3, 11, 7, 1)), "float32"),
        ("...ij,jk->j", ((2, 5, 3, 4), (4, 2)), "float16"),
        ("kii->k", ((2, 3, 3),), "float32"),
        ("AbC", ((1, 2, 3),), "float32"),
        ("ab...,ac...,ade->...bc", ((2, 3, 4), (2, 7, 1), (2, 4, 7)), "float32"),
        ("BGHID,BGHJD->BGHIJ", ((1, 4, 2, 49, 32), (1, 4, 2, 49, 32)), "float32"),
    ]
    return onnx_style + openvino_only


@pytest.mark.parametrize("case", _ir_grid(), ids=str)
def test_ir_layer_against_openvino_and_as_onnx_on_onnxruntime(case, tmp_path):
    equation, shapes, dtype = case
    arrays = _arrays(shapes, dtype, seed=2)
    xml = einsum_ir(equation, arrays, tmp_path / "model.xml")
    try:
        ir.read_model(xml)
    except UnsupportedError as error:   # OpenVINO's implicit output repeats a label: neither engine runs it
        assert "implicit-output rule" in str(error)
        with pytest.raises(RuntimeError, match="EinsumDecomposition"):
            openvino_core().compile_model(str(xml), "CPU")
        return
    want = openvino_run_xml(xml, feeds(arrays))
    got = run_poolir(xml, feeds(arrays))
    ((name, expected),) = want.items()
    assert_close(got[name], expected, dtype)
    back = ir_to_onnx(ir.read_model(xml), opset=18)
    onnx.checker.check_model(back, full_check=True)
    assert_close(onnxruntime_run(back, feeds(arrays))[back.graph.output[0].name], expected, dtype)


@pytest.mark.parametrize("case", [c for c in _onnx_grid(40, seed=21) if c[2] != "int32" and c[2] != "int64"],
                         ids=str)
def test_onnx_converted_to_ir_runs_alike_in_openvino(case, tmp_path):
    equation, shapes, dtype = case
    arrays = _arrays(shapes, dtype, seed=4)
    model = einsum_model(equation, arrays)
    want = onnxruntime_run(model, feeds(arrays))["y"]
    converted = onnx_to_ir(model)
    (layer,) = [layer for layer in converted.layers if layer.type == "Einsum"]
    assert " " not in layer.attrs["equation"] and "." not in layer.attrs["equation"] and "->" in layer.attrs["equation"]
    ir.write_model(converted, tmp_path / "model.xml")
    assert_close(openvino_run_xml(tmp_path / "model.xml", feeds(arrays), ["y"])["y"], want, dtype)


# -- where OpenVINO and ONNX part -----------------------------------------------------------------------------------

def test_implicit_ii_is_a_trace_in_onnx_and_refused_in_ir_as_openvino_cannot_compile_it(tmp_path):
    """ONNX keeps the labels occurring once: 'ii' -> '', the trace (onnxruntime: 1 + 4 = 5). OpenVINO keeps the
    labels no other term holds: 'ii' -> 'ii', which its CPU plugin's EinsumDecomposition refuses to compile."""
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    model = einsum_model("ii", [x])
    assert onnxruntime_run(model, {"x0": x})["y"] == 5.0
    assert runtime.run(model, {"x0": x})["y"] == 5.0
    converted = onnx_to_ir(model)
    assert [layer.attrs["equation"] for layer in converted.layers if layer.type == "Einsum"] == ["ii->"]
    ir.write_model(converted, tmp_path / "trace.xml")
    assert openvino_run_xml(tmp_path / "trace.xml", {"x0": x}, ["y"])["y"] == 5.0
    xml = einsum_ir("ii", [x], tmp_path / "model.xml")
    with pytest.raises(RuntimeError, match="EinsumDecomposition"):
        openvino_core().compile_model(str(xml), "CPU")
    with pytest.raises(UnsupportedError, match="implicit-output rule"):
        ir.read_model(xml)


def test_spaces_are_refused_in_ir_as_openvino_reader_refuses_them(tmp_path):
    x = np.ones((2, 3), np.float32)
    xml = einsum_ir("ij->ji", [x], tmp_path / "model.xml")
    text = xml.read_text()
    assert 'equation="ij-&gt;ji"' in text or 'equation="ij->ji"' in text
    spaced = tmp_path / "spaced.xml"
    spaced.write_text(text.replace('equation="ij-&gt;ji"', 'equation="ij -&gt; ji"')
                      .replace('equation="ij->ji"', 'equation="ij -> ji"'))
    (tmp_path / "spaced.bin").write_bytes((tmp_path / "model.bin").read_bytes())
    with pytest.raises(RuntimeError, match="alphabetic letters"):
        openvino_core().read_model(str(spaced))
    with pytest.raises(InvalidModelError, match="space"):
        ir.read_model(spaced)


def test_an_ellipsis_left_out_of_the_output_is_summed_in_ir_and_spelled_out_for_onnx(tmp_path):
    """OpenVINO sums the dims of an ellipsis the output leaves out ('...ij->ij' over [2, 3, 4] is x.sum(0));
    ONNX refuses that spelling, so the converter writes the ellipsis as a letter."""
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    xml = einsum_ir("...ij->ij", [x], tmp_path / "model.xml")
    want = x.sum(0)
    np.testing.assert_array_equal(next(iter(assert_matches_openvino(xml, {"x0": x}).values())), want)
    back = ir_to_onnx(ir.read_model(xml), opset=18)
    (node,) = [n for n in back.graph.node if n.op_type == "Einsum"]
    assert helper.get_attribute_value(node.attribute[0]) == b"Aij->ij"
    np.testing.assert_array_equal(onnxruntime_run(back, {"x0": x})[back.graph.output[0].name], want)


def test_integer_einsum_is_refused_where_openvino_computes_it_in_float32(tmp_path):
    """OpenVINO's CPU plugin: int32 [[16777217, 1]] x [[1], [4096]] is 16781312 (float32), not 16781313."""
    a, b = np.array([[16777217, 1]], np.int32), np.array([[1], [4096]], np.int32)
    xml = einsum_ir("ij,jk->ik", [a, b], tmp_path / "model.xml")
    assert openvino_run_xml(xml, feeds([a, b]))[next(iter(openvino_run_xml(xml, feeds([a, b]))))][0, 0] == 16781312
    with pytest.raises(UnsupportedError, match="integer Einsum"):
        run_poolir(xml, feeds([a, b]))
    with pytest.raises(ConversionError, match="integer Einsum"):
        ir_to_onnx(ir.read_model(xml), opset=18)
    model = einsum_model("ij,jk->ik", [a, b])
    assert runtime.run(model, feeds([a, b]))["y"][0, 0] == 16781313       # ONNX: exact
    with pytest.raises(ConversionError, match="integer Einsum"):
        onnx_to_ir(model)


def test_einsum_needs_opset_12_when_written_as_onnx(tmp_path):
    x = np.ones((2, 3), np.float32)
    xml = einsum_ir("ij->ji", [x], tmp_path / "model.xml")
    with pytest.raises(ConversionError, match="Einsum, from opset 12"):
        ir_to_onnx(ir.read_model(xml), opset=11)


def test_openvino_accepts_labels_of_size_one_against_any_size_as_onnx_does(tmp_path):
    """A label of dims 1 and 2 broadcasts in both worlds (onnxruntime and OpenVINO probed alike)."""
    a, b = np.array([[1.0, 2.0, 3.0]], np.float32), np.array([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]], np.float32)
    xml = einsum_ir("ij,ij->ij", [a, b], tmp_path / "model.xml")
    np.testing.assert_array_equal(next(iter(assert_matches_openvino(xml, feeds([a, b])).values())), a * b)


@pytest.mark.parametrize("equation,shapes", [("...b,...->...b", [(3, 3, 3, 3), (3, 3, 3)]),
                                             ("...c,...b->...bc", [(2, 3, 2), (2, 3, 3)])])
def test_openvino_gets_some_wide_ellipses_wrong_and_poolir_spells_them_out(equation, shapes, tmp_path):
    """OpenVINO 2026.4's CPU plugin computes the first wrongly and cannot compile the second (its
    EinsumDecomposition; about 1 in 14 random equations with an ellipsis of 2+ dims, none with 1 dim). The same
    equation with the ellipsis in letters is right in OpenVINO: the oracle poolir's IR runtime is held to here, and
    the spelling the ONNX -> IR converter writes."""
    arrays = _arrays(shapes, "float32", seed=8)
    spelled = {"...b,...->...b": "ABCb,ABC->ABCb", "...c,...b->...bc": "ABc,ABb->ABbc"}[equation]
    want = next(iter(openvino_run_xml(einsum_ir(spelled, arrays, tmp_path / "spelled.xml"), feeds(arrays)).values()))
    wide = einsum_ir(equation, arrays, tmp_path / "wide.xml")
    try:
        theirs = next(iter(openvino_run_xml(wide, feeds(arrays)).values()))
        assert theirs.shape != want.shape or not np.allclose(theirs, want, rtol=1e-5, atol=1e-5)
    except RuntimeError as error:
        assert "EinsumDecomposition" in str(error)
    assert_close(next(iter(run_poolir(wide, feeds(arrays)).values())), want, "float32")
    model = einsum_model(equation, arrays)
    converted = onnx_to_ir(model)
    assert [layer.attrs["equation"] for layer in converted.layers if layer.type == "Einsum"] == [spelled]
    ir.write_model(converted, tmp_path / "converted.xml")
    assert_close(openvino_run_xml(tmp_path / "converted.xml", feeds(arrays), ["y"])["y"], want, "float32")


def test_an_outer_product_beyond_the_memory_budget_is_refused_before_allocating():
    """'i,j->ij' of two 100000-element vectors is 40 GB of float32: refused by the budget, not by the system."""
    arrays = [np.ones(100_000, np.float32), np.ones(100_000, np.float32)]
    with pytest.raises(PoolirError, match="memory budget"):
        runtime.run(einsum_model("i,j->ij", arrays), feeds(arrays))
