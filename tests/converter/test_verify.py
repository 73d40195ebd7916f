"""`poolir verify` and converter.verify: comparison rules, exit codes, the JSON report, refusals.

Expected values here are hand-written arrays or the example folders' expected.npz (whose sources are
independent of poolir, see examples/generate.py). Where a test needs the converter to refuse, it swaps
in a converter function that raises ConversionError: the point is how verify reports a refusal.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper

from poolir import converter
from poolir.converter.cli import main
from poolir.converter.verify import (DEFAULT_TOLERANCES, EXACT, Tolerance, compare, find_examples, tolerance_for,
                              verify_paths)
from poolir.ir.errors import ConversionError, UsageError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def invoke(*args: str):
    return CliRunner().invoke(main, ["verify", *args], catch_exceptions=False)


def copy_example(name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(EXAMPLES / name, tmp_path / name))


def refusing_converter(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise ConversionError("test refusal: cannot keep the meaning", where="node 'pool' (MaxPool)")

    monkeypatch.setattr(converter, "onnx_to_ir", refuse, raising=False)
    monkeypatch.setattr(converter, "ir_to_onnx", refuse, raising=False)


# ---------------------------------------------------------------------------------------------------
# compare(): hand-made arrays


def test_compare_equal_arrays_is_ok_with_zero_error():
    row = compare("y", "p", np.array([1.0, 2.0], np.float32), np.array([1.0, 2.0], np.float32), EXACT)
    assert (row.status, row.max_abs_error, row.max_rel_error, row.mismatched) == ("ok", 0.0, 0.0, 0)


def test_compare_reports_first_differing_index_and_both_values():
    expected = np.arange(12, dtype=np.float32).reshape(1, 3, 4)
    actual = expected.copy()
    actual[0, 1, 2] = 100.0
    actual[0, 2, 0] = -1.0
    row = compare("y", "p", actual, expected, DEFAULT_TOLERANCES["float32"])
    assert row.status == "mismatch" and row.mismatched == 2
    assert row.first_mismatch.index == (0, 1, 2)
    assert (row.first_mismatch.actual, row.first_mismatch.expected) == (100.0, 6.0)
    assert row.max_abs_error == 94.0
    assert row.max_rel_error == pytest.approx(94.0 / 6.0)


def test_compare_shape_difference_is_a_mismatch_not_a_crash():
    row = compare("y", "p", np.zeros((1, 1, 2, 2), np.float32), np.zeros((1, 1, 1, 1), np.float32), EXACT)
    assert row.status == "mismatch"
    assert "shape [1,1,2,2], expected [1,1,1,1]" in row.detail


def test_compare_dtype_difference_is_a_mismatch_even_with_equal_values():
    row = compare("y", "p", np.array([1, 2], np.int32), np.array([1, 2], np.int64), EXACT)
    assert row.status == "mismatch" and "dtype int32, expected int64" in row.detail


def test_compare_of_0d_tensors_reports_their_difference():
    """A scalar intermediate (a Gather of one dim): the divergence search compares every tensor, and a 0-d one
    was a TypeError there ("'numpy.float64' object does not support item assignment")."""
    row = compare("d", "p", np.array(3.0, np.float32), np.array(2.0, np.float32), EXACT)
    assert row.status == "mismatch" and row.max_abs_error == 1.0 and row.max_rel_error == 0.5
    assert compare("d", "p", np.array(np.inf, np.float32), np.array(np.inf, np.float32), EXACT).status == "ok"


def test_compare_nan_matches_nan_and_infinities_match_themselves():
    values = np.array([np.nan, np.inf, -np.inf, 1.0], np.float32)
    assert compare("y", "p", values, values.copy(), EXACT).status == "ok"
    row = compare("y", "p", np.array([np.nan, 1.0], np.float32), np.array([1.0, 1.0], np.float32), EXACT)
    assert row.status == "mismatch" and row.first_mismatch.index == (0,) and row.max_abs_error == np.inf


def test_compare_tolerance_is_atol_plus_rtol_times_expected():
    expected = np.array([1000.0], np.float32)
    assert compare("y", "p", np.array([1000.5], np.float32), expected, Tolerance(1e-3, 0.0)).status == "ok"
    assert compare("y", "p", np.array([1001.5], np.float32), expected, Tolerance(1e-3, 0.0)).status == "mismatch"


def test_integer_outputs_are_exact_whatever_the_tolerance_options():
    assert tolerance_for(np.dtype(np.int64), rtol=0.5, atol=10.0) == EXACT
    assert tolerance_for(np.dtype(np.uint8)) == EXACT
    assert tolerance_for(np.dtype(np.float32), atol=0.25) == Tolerance(DEFAULT_TOLERANCES["float32"].rtol, 0.25)
    assert tolerance_for(np.dtype(np.float16)) == DEFAULT_TOLERANCES["float16"]


# ---------------------------------------------------------------------------------------------------
# Exit codes


def test_tampered_expected_gives_exit_1_and_the_first_differing_index(tmp_path):
    folder = copy_example("maxpool_2d_precomputed_strides", tmp_path)
    with np.load(folder / "expected.npz") as archive:
        expected = {name: archive[name] for name in archive.files}
    assert expected["y"].tolist() == [[[[7.0, 9.0], [17.0, 19.0]]]]  # as seed 004 writes it
    expected["y"][0, 0, 1, 0] = 18.0
    np.savez(folder / "expected.npz", **expected)
    result = invoke(str(folder))
    assert result.exit_code == 1
    assert "runtime(onnx)" in result.output and "MISMATCH" in result.output
    assert "first difference at [0,0,1,0]: 17 instead of 18" in result.output


def test_refused_conversion_is_reported_with_its_reason_and_fails(tmp_path, monkeypatch):
    refusing_converter(monkeypatch)
    folder = copy_example("maxpool_2d_ceil", tmp_path)
    result = invoke(str(folder))
    assert result.exit_code == 1
    assert "REFUSED" in result.output
    assert "y via runtime(onnx->ir): node 'pool' (MaxPool): test refusal: cannot keep the meaning" in result.output


def test_refusal_listed_in_the_manifest_passes(tmp_path, monkeypatch):
    refusing_converter(monkeypatch)
    folder = copy_example("maxpool_2d_ceil", tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["expected_refused"] = {"runtime(onnx->ir)": "test", "runtime(onnx->ir->onnx)": "test"}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    result = invoke(str(folder))
    assert result.exit_code == 0, result.output
    assert "3 row(s): 2 refused (expected), 1 ok -- all match" in result.output


@pytest.mark.parametrize("args, message", [
    (["no/such/model.onnx"], "no such file or folder"),
    (["--peer", "tensorflow", "examples"], "Invalid value for '--peer'"),
    (["--rtol", "-1", "examples/maxpool_2d_ceil"], "--rtol -1.0 must be a finite number >= 0"),
])
def test_bad_usage_exits_2(args, message):
    result = invoke(*args)
    assert result.exit_code == 2
    assert message in result.output


def test_unreadable_model_exits_2_naming_the_file(tmp_path):
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"\x08\x07this is not protobuf\xff\xff")
    result = invoke(str(broken))
    assert result.exit_code == 2
    assert str(broken) in result.output and "not a readable ONNX model" in result.output
    assert "Traceback" not in result.output


def test_folder_without_examples_exits_2(tmp_path):
    result = invoke(str(tmp_path))
    assert result.exit_code == 2 and "no examples here" in result.output


def test_missing_peer_is_a_clear_usage_error(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "onnxruntime" else real(name, *a))
    with pytest.raises(UsageError, match="onnxruntime is not installed"):
        verify_paths([EXAMPLES / "maxpool_2d_ceil"], peers=["onnxruntime"])


# ---------------------------------------------------------------------------------------------------
# Model files given directly, random and given inputs


def _maxpool_model(path: Path) -> Path:
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2], strides=[2])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 3])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)], ir_version=10), path)
    return path


def test_model_file_with_given_inputs_uses_the_first_path_as_reference(tmp_path, monkeypatch):
    refusing_converter(monkeypatch)
    model = _maxpool_model(tmp_path / "m.onnx")
    np.savez(tmp_path / "in.npz", x=np.array([[[1, 5, 2, 2, 9, 0]]], np.float32))
    report = verify_paths([model], inputs=tmp_path / "in.npz", peers=["onnxruntime"])
    rows = {row.path: row for row in report.models[0].rows}
    assert report.models[0].reference == "runtime(onnx)"
    assert rows["runtime(onnx)"].status == "reference"
    # onnxruntime is the independent check of the reference here: [5, 2, 9]
    assert rows["onnxruntime(onnx)"].status == "ok"
    assert rows["runtime(onnx->ir)"].status == "refused"


def test_inputs_naming_an_unknown_input_exit_2(tmp_path):
    model = _maxpool_model(tmp_path / "m.onnx")
    np.savez(tmp_path / "in.npz", image=np.zeros((1, 1, 6), np.float32))
    result = invoke(str(model), "--inputs", str(tmp_path / "in.npz"))
    assert result.exit_code == 2 and "unknown input 'image'" in result.output


# ---------------------------------------------------------------------------------------------------
# --json and --report


def test_json_report_schema(tmp_path, monkeypatch):
    refusing_converter(monkeypatch)
    result = invoke("--json", str(EXAMPLES / "maxpool_with_argmax_2d_precomputed_strides"))
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert report["schema"] == "poolir-verify/2"
    assert set(report) >= {"passed", "peers", "rtol", "atol", "seed", "default_tolerances", "summary", "models"}
    assert report["passed"] is False
    assert report["summary"]["models"] == 1 and report["summary"]["rows"] == {"ok": 2, "refused": 4}
    (model,) = report["models"]
    assert model["kind"] == "onnx" and model["reference"] == "expected.npz"
    assert model["expected_source"]["kind"] == "seed text"
    rows = {(r["output"], r["path"]): r for r in model["rows"]}
    indices = rows[("z", "runtime(onnx)")]
    assert set(indices) == {"output", "path", "status", "passed", "shape", "dtype", "expected_shape",
                            "expected_dtype", "max_abs_error", "max_rel_error", "mismatched", "first_mismatch",
                            "rtol", "atol", "atol_scaled", "passed_by", "detail"}
    assert (indices["status"], indices["shape"], indices["dtype"]) == ("ok", [1, 1, 2, 2], "int64")
    assert (indices["rtol"], indices["atol"]) == (0.0, 0.0)  # indices are exact
    assert rows[("y", "runtime(onnx->ir)")]["status"] == "refused"
    assert "test refusal" in rows[("y", "runtime(onnx->ir)")]["detail"]


def test_json_spells_infinite_errors_as_strings(tmp_path):
    folder = copy_example("maxpool_2d_precomputed_strides", tmp_path)
    np.savez(folder / "expected.npz", y=np.array([[[[7, 9], [17, np.nan]]]], np.float32))
    result = invoke("--json", str(folder))
    row = json.loads(result.output)["models"][0]["rows"][0]
    assert row["max_abs_error"] == "inf" and row["first_mismatch"] == {"index": [0, 0, 1, 1], "actual": 19.0,
                                                                        "expected": "nan"}


def test_report_file_is_written_atomically_and_equals_the_json(tmp_path, monkeypatch):
    refusing_converter(monkeypatch)
    target = tmp_path / "out" / "report.json"
    target.parent.mkdir()
    target.write_text("old")
    as_json = invoke("--json", str(EXAMPLES / "maxpool_2d_ceil"))
    result = invoke("--report", str(target), str(EXAMPLES / "maxpool_2d_ceil"))
    assert result.exit_code == 1
    assert json.loads(target.read_text()) == json.loads(as_json.output)
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.json"]  # no temporary left behind


def test_report_is_not_touched_on_bad_input(tmp_path):
    target = tmp_path / "report.json"
    target.write_text("old")
    result = invoke("--report", str(target), str(tmp_path / "missing.onnx"))
    assert result.exit_code == 2 and target.read_text() == "old"


def test_report_into_a_missing_folder_exits_2_without_partial_files(tmp_path):
    result = invoke("--report", str(tmp_path / "nowhere" / "r.json"), str(EXAMPLES / "maxpool_2d_ceil"))
    assert result.exit_code == 2 and not (tmp_path / "nowhere").exists()


def test_no_progress_output_when_stderr_is_not_a_terminal(monkeypatch):
    refusing_converter(monkeypatch)
    result = CliRunner().invoke(main, ["verify", str(EXAMPLES / "maxpool_2d_ceil"), str(EXAMPLES / "maxpool_2d_uint8")])
    assert "verifying" not in result.stderr


def test_find_examples_walks_a_folder_of_example_folders(tmp_path):
    for name in ("b_example", "a_example"):
        copy_example("maxpool_2d_ceil", tmp_path / "group").rename(tmp_path / "group" / name)
    (tmp_path / "group" / "not_an_example").mkdir()
    assert [p.name for p in find_examples(tmp_path)] == ["a_example", "b_example"]


def test_progress_counts_models_on_a_terminal(monkeypatch, capsys):
    from poolir.converter.cmd_verify import _Progress

    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    progress = _Progress()
    progress(0, 3, Path("examples/a"))
    progress(2, 3, Path("examples/c"))
    progress(3, 3, None)
    err = capsys.readouterr().err
    assert "verifying 1/3 examples/a" in err and "verifying 3/3 examples/c" in err
    assert err.endswith("\r\033[K")  # the counter line is erased before the tables are printed


def test_json_carries_the_declared_vs_inferred_warnings():
    result = invoke("--json", str(EXAMPLES / "avgpool1_spec_2_as_written"))
    assert result.exit_code == 0  # a wrong declared size is reported, not a failure: the numbers match
    (model,) = json.loads(result.output)["models"]
    assert any("declared [1,3,32,32], inferred [1,3,16,16]" in w for w in model["warnings"])


@pytest.mark.parametrize("damage, message", [
    (lambda f: (f / "expected.npz").write_bytes(b"PK\x03\x04 truncated"), "not a readable .npz archive"),
    (lambda f: (f / "manifest.json").write_text("{not json"), "manifest.json: not valid JSON"),
    (lambda f: (f / "manifest.json").write_text('{"tolerance": {"rtol": "tight"}}'), "'tolerance' must be"),
    (lambda f: (f / "model.onnx").write_bytes(b"\xff" * 7), "not a readable ONNX model"),
])
def test_damaged_example_files_exit_2_naming_the_file(tmp_path, damage, message):
    folder = copy_example("maxpool_2d_ceil", tmp_path)
    damage(folder)
    result = invoke(str(folder))
    assert result.exit_code == 2, result.output
    assert message in result.output and str(folder) in result.output


def test_damaged_ir_file_exits_2(tmp_path):
    folder = copy_example("avgpool1_spec_3", tmp_path)
    xml = (folder / "model.xml").read_text().replace('strides="3,3"', 'strides="0,3"')
    (folder / "model.xml").write_text(xml)
    result = invoke(str(folder))
    assert result.exit_code == 2 and "model.xml" in result.output and "Traceback" not in result.output


def test_expected_output_under_another_name_is_a_mismatch(tmp_path):
    folder = copy_example("maxpool_2d_precomputed_strides", tmp_path)
    np.savez(folder / "expected.npz", output=np.array([[[[7, 9], [17, 19]]]], np.float32))
    result = invoke(str(folder))
    assert result.exit_code == 1
    assert "output missing (this path produced: y)" in result.output
    assert "unexpected output (the reference has: output)" in result.output


def test_dynamic_dims_need_given_inputs(tmp_path):
    folder = EXAMPLES / "resnet50_global_average_pool_head"  # input x: [batch,64,7,7]
    # A dynamic batch alone now defaults to 1: make a spatial dim dynamic too, which cannot be guessed.
    model = onnx.load(folder / "model.onnx")
    model.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "H"
    onnx.save(model, tmp_path / "model.onnx")
    result = invoke(str(tmp_path / "model.onnx"))
    assert result.exit_code == 2
    assert "input 'x' has dynamic dims (shape [?,64,?,7])" in result.output and "--inputs FILE.npz" in result.output
    assert invoke(str(tmp_path / "model.onnx"), "--inputs", str(folder / "inputs.npz")).exit_code == 0


def test_model_file_with_random_inputs_from_the_seed_agrees_with_onnxruntime(tmp_path):
    model = _maxpool_model(tmp_path / "m.onnx")
    first = verify_paths([model], seed=3, peers=["onnxruntime"])
    assert first.passed and first.models[0].inputs == "random (seed 3)"
    assert [r.status for r in first.models[0].rows][:2] == ["reference", "ok"]


def test_openvino_conversion_runs_with_its_telemetry_off(monkeypatch, tmp_path):
    """openvino.convert_model reports to an analytics server unless CI=true (openvino_telemetry): every
    conversion poolir asks of OpenVINO runs with it set, and the environment is as it was afterwards."""
    pytest.importorskip("openvino", reason="the openvino peer is not installed")
    import onnx.helper as oh

    from poolir.converter import peers

    seen = []
    ov = peers.openvino_module()
    real = ov.convert_model
    monkeypatch.setattr(ov, "convert_model", lambda *a, **k: (seen.append(os.environ.get("CI")), real(*a, **k))[1])
    monkeypatch.delenv("CI", raising=False)
    graph = oh.make_graph([oh.make_node("Relu", ["x"], ["y"])], "g",
                          [oh.make_tensor_value_info("x", 1, [2])], [oh.make_tensor_value_info("y", 1, [2])])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)])
    peers.openvino_convert_to_xml(model, tmp_path / "m.xml")
    peers.openvino_run_onnx(model, {"x": np.array([-1, 1], np.float32)})
    assert seen == ["true", "true"] and "CI" not in os.environ
