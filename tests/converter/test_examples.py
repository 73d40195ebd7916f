"""The examples/ folder: every example verifies, on every path and on the real engines.

The expected values of the examples come from the seed texts, the ONNX backend tests, hand-worked
cases, onnxruntime or OpenVINO (examples/generate.py, never poolir); these tests check that poolir
agrees with them and that the manifests say truthfully where they come from.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from poolir import converter
from poolir.converter.cli import main
from poolir.converter.verify import find_examples, load_arrays, verify_paths

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SEEDS = ROOT.parent / "shared" / "seeds"
FOLDERS = find_examples(EXAMPLES)
SOURCE_KINDS = {"seed text", "ONNX backend test", "hand-worked", "onnxruntime", "OpenVINO", "pytorch"}
# Where OpenVINO's own ONNX frontend (convert_model) gets the numbers wrong: the README shows them side by side.
OPENVINO_CONVERTER_WRONG = {
    "maxpool_2d_ceil_output_size_reduce_by_one": "shape",
    "maxpool_storage_order_1_nonsquare": "shape",
    "averagepool_ceil_count_include_pad_overhang": "values",
    "lppool_opset18_ceil_overhang": "values",
}

needs_converter = pytest.mark.skipif(
    not (hasattr(converter, "onnx_to_ir") and hasattr(converter, "ir_to_onnx")),
    reason="converter.onnx_to_ir / converter.ir_to_onnx are not in this build yet")


def _generator():
    spec = importlib.util.spec_from_file_location("examples_generate", EXAMPLES / "generate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is created
    spec.loader.exec_module(module)
    return module


def _arrays(path: Path) -> dict[str, np.ndarray]:
    return load_arrays(path)  # bfloat16 arrays come back as bfloat16, not numpy's raw V2 records


def test_there_are_examples_of_every_kind():
    names = {folder.name for folder in FOLDERS}
    assert len(names) >= 50
    assert {"maxpool_2d_uint8", "maxpool_with_argmax_2d_precomputed_strides", "avgpool1_spec_1_as_written",
            "avgpool1_spec_1_corrected", "avgpool1_spec_5", "lppool_2d_dilations", "resnet50_stem_maxpool",
            "inception_v3_avgpool_exclude_pad", "googlenet_ceil_maxpool",
            "resnet50_global_average_pool_head", "maxpool_int8_with_indices", "averagepool_float16_pads",
            "maxpool_3d_float64_with_indices", "averagepool_bfloat16", "openvino_converted_lppool",
            "openvino_converted_global_lppool"} <= names


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_manifest_describes_the_folder(folder):
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["name"] == folder.name
    assert manifest["models"] and all((folder / m).is_file() for m in manifest["models"])
    assert manifest["expected_source"]["kind"] in SOURCE_KINDS
    for stored, described in ((_arrays(folder / "inputs.npz"), manifest["inputs"]),
                              (_arrays(folder / "expected.npz"), manifest["expected"])):
        assert {k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in stored.items()} == described


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the seed texts (../shared/seeds) are not beside this checkout")
def test_seed_examples_hold_exactly_the_arrays_the_seed_text_writes():
    generate = _generator()
    written = {name: seed for name, seed in
               generate.parse_seed_examples((SEEDS / generate.MAXPOOL_SEED).read_text()).items()
               if all(n in seed.arrays for n in (*seed.node_inputs, *seed.node_outputs))}
    assert len(written) == 8  # uint8, pads, argmax+pads, strides, argmax+storage_order, same_upper, ceil, dilations
    for name, seed in written.items():
        inputs, expected = _arrays(EXAMPLES / name / "inputs.npz"), _arrays(EXAMPLES / name / "expected.npz")
        for array_name in seed.node_inputs:
            np.testing.assert_array_equal(inputs[array_name], seed.arrays[array_name], strict=True)
        for array_name in seed.node_outputs:
            np.testing.assert_array_equal(expected[array_name], seed.arrays[array_name], strict=True)


def test_the_reference_path_of_every_example_matches_its_expected_values():
    """The runtime running each model as given (ONNX or IR semantics) against the independent expected.npz."""
    report = verify_paths([EXAMPLES])
    first_rows = [row for model in report.models for row in model.rows if row.path in ("runtime(onnx)", "runtime(ir)")]
    failures = [(model.source, row.output, row.detail) for model in report.models for row in model.rows
                if row in first_rows and row.status != "ok"]
    assert len(first_rows) >= len(FOLDERS) and not failures


def test_the_avgpool1_spec_examples_report_the_wrong_declared_sizes():
    result = CliRunner().invoke(main, ["verify", *(str(EXAMPLES / f"avgpool1_spec_{n}") for n in (
        "1_as_written", "1_corrected", "2_as_written", "2_corrected", "3", "4", "5"))])
    warnings = [line for line in result.output.splitlines() if "warning:" in line]
    assert warnings and all("declared [1,3,32,32], inferred [1,3,16,16]" in line for line in warnings)
    blocks = result.output.split("\n\n")
    warned = {block.split()[0] for block in blocks if "warning:" in block}
    assert warned == {str(EXAMPLES / "avgpool1_spec_1_as_written" / "model.xml"),
                      str(EXAMPLES / "avgpool1_spec_2_as_written" / "model.xml")}


@needs_converter
def test_every_example_verifies():
    result = CliRunner().invoke(main, ["verify", str(EXAMPLES)])
    assert result.exit_code == 0, result.output[-3000:]
    assert "all match" in result.output


@needs_converter
def test_every_example_verifies_on_onnxruntime_and_openvino():
    """poolir's converted forms, run by the real engines: the IR by OpenVINO, the ONNX by onnxruntime."""
    report = verify_paths([EXAMPLES], peers=("onnxruntime", "openvino"))
    failures = [(m.source, r.output, r.path, r.status, r.detail) for m in report.models for r in m.rows if not r.passed]
    assert not failures
    peer_rows = {r.path for m in report.models for r in m.rows if r.status == "ok"}
    assert {"openvino(onnx->ir)", "openvino(ir)", "onnxruntime(onnx->ir->onnx)", "onnxruntime(ir->onnx)"} <= peer_rows


@pytest.mark.parametrize("name, kind", sorted(OPENVINO_CONVERTER_WRONG.items()))
def test_openvino_own_converter_gets_the_side_by_side_cases_wrong(name, kind):
    """The README's side-by-side claim, re-checked live: OpenVINO's convert_model differs from expected."""
    import onnx

    from tests.peers import openvino_run_onnx

    folder = EXAMPLES / name
    manifest = json.loads((folder / "manifest.json").read_text())
    (recorded,) = [c for c in manifest["cross_checks"] if c["peer"].startswith("openvino")]
    assert recorded["status"] == "differs" and recorded["outputs"]
    got = openvino_run_onnx(onnx.load(folder / "model.onnx"), _arrays(folder / "inputs.npz"))
    expected = _arrays(folder / "expected.npz")
    shapes_differ = any(got[k].shape != v.shape for k, v in expected.items())
    assert shapes_differ if kind == "shape" else (not shapes_differ and any(
        not np.allclose(got[k], v) for k, v in expected.items()))
    assert {k: np.asarray(v).tolist() for k, v in got.items()} == recorded["outputs"]
