"""`poolir verify`'s tolerances (whole-network defaults, per-output --rtol/--atol NAME=V, which one passed a row),
peers without a kernel, progress on stderr, and the runtime's `observe` hook the divergence search streams through.

Expected values are hand-written arrays, the examples' expected.npz (independent of poolir), or onnxruntime.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper

from poolir import runtime
from poolir.converter.cli import main
from poolir.converter.verify import DEFAULT_TOLERANCES, Tolerance, compare, verify_paths
from poolir.converter.verify.compare import ToleranceOptions
from poolir.ir.errors import UsageError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def invoke(*args: str):
    return CliRunner().invoke(main, ["verify", *args], catch_exceptions=False)


# ---------------------------------------------------------------------------------------------------
# Which tolerance passed a row; the whole-network default


def test_a_near_zero_value_with_a_large_relative_error_passes_by_atol_and_says_so():
    expected = np.array([30.0, 1.5e-7], np.float32)  # logits of size 30 beside a value near zero
    actual = np.array([30.0, 2.625e-7], np.float32)  # relative error 0.75 on the small one
    row = compare("y", "p", actual, expected, DEFAULT_TOLERANCES["float32"])
    assert (row.status, row.passed_by) == ("ok", "atol")
    assert row.max_rel_error == pytest.approx(0.75)
    assert row.atol_used == pytest.approx(3e-4 * 30.0)  # scaled: rtol * max|expected|


def test_a_row_within_rtol_everywhere_passes_by_rtol_and_an_equal_one_is_exact():
    expected = np.array([30.0, -2.0], np.float32)
    assert compare("y", "p", expected * np.float32(1.0001), expected, Tolerance(3e-4)).passed_by == "rtol"
    assert compare("y", "p", expected.copy(), expected, Tolerance(3e-4)).passed_by == "exact"


def test_a_value_outside_its_tolerance_is_never_ok():
    expected = np.array([30.0, 0.0], np.float32)
    actual = np.array([30.0, 3e-4 * 30.0 * 1.01], np.float32)  # just past atol = rtol * max|expected|
    row = compare("y", "p", actual, expected, DEFAULT_TOLERANCES["float32"])
    assert row.status == "mismatch" and row.passed_by is None and row.first_mismatch.index == (1,)


def test_the_table_names_the_tolerance_that_passed_each_row(tmp_path):
    result = invoke(str(EXAMPLES / "maxpool_2d_ceil"))
    assert result.exit_code == 0
    assert all(line.endswith("ok (exact)") for line in result.output.splitlines() if line.startswith("  y "))


# ---------------------------------------------------------------------------------------------------
# Per-output overrides


def test_tolerance_options_parse_global_and_per_output_values():
    options = ToleranceOptions.parse(["1e-3", "logits=0.01", "a=b=0.5"], ["prob=1e-6"])
    assert (options.rtol, options.atol) == (1e-3, None)
    assert options.output_rtol == {"logits": 0.01, "a=b": 0.5} and options.output_atol == {"prob": 1e-6}
    assert options.for_output("logits", np.dtype(np.float32)) == Tolerance(0.01, None)
    assert options.for_output("other", np.dtype(np.float32)) == Tolerance(1e-3, None)
    assert options.for_output("prob", np.dtype(np.float32)) == Tolerance(1e-3, 1e-6)
    assert options.for_output("indices", np.dtype(np.int64)) == Tolerance(0.0, 0.0)  # integers stay exact


@pytest.mark.parametrize("value, message", [("y=x", "expected a number or NAME=NUMBER"), ("=0.1", "name before"),
                                            ("y=2", "must be a finite number >= 0 and <= 1")])
def test_bad_per_output_tolerances_are_usage_errors(value, message):
    with pytest.raises(UsageError, match=message):
        ToleranceOptions.parse([value])
    result = CliRunner().invoke(main, ["verify", "--atol", value, str(EXAMPLES / "maxpool_2d_ceil")])
    assert result.exit_code == 2 and message in result.stderr


def _two_output_example(tmp_path: Path) -> Path:
    """maxpool_2d_ceil with expected values off by 0.01 in output y only (and a second, exact output z)."""
    folder = Path(shutil.copytree(EXAMPLES / "maxpool_2d_ceil", tmp_path / "ex"))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])
    nodes = [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
             helper.make_node("Relu", ["x"], ["z"])]
    graph = helper.make_graph(nodes, "g", [x], [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
                                                for n in ("y", "z")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)], ir_version=8),
              folder / "model.onnx")
    inputs = np.load(folder / "inputs.npz")["x"]
    y = np.load(folder / "expected.npz")["y"] + np.float32(0.01)  # the seed's values, moved by 0.01
    np.savez(folder / "expected.npz", y=y, z=np.maximum(inputs, 0))
    return folder


def test_a_per_output_atol_applies_to_that_output_only(tmp_path):
    folder = _two_output_example(tmp_path)
    assert invoke(str(folder)).exit_code == 1
    result = invoke(str(folder), "--atol", "y=0.02")
    assert result.exit_code == 0, result.output
    assert "  y       runtime(onnx)            [1,1,2,2]  float32  0.01 " in result.output
    assert invoke(str(folder), "--atol", "z=0.02").exit_code == 1  # z's override does not loosen y
    report = verify_paths([folder], atol=["y=0.02"])
    assert report.output_atol == {"y": 0.02}
    assert {r.output: r.passed_by for r in report.models[0].rows if r.path == "runtime(onnx)"} == {
        "y": "atol", "z": "exact"}


def test_a_per_output_rtol_applies_to_that_output_only(tmp_path):
    folder = _two_output_example(tmp_path)
    assert invoke(str(folder), "--rtol", "y=0.001").exit_code == 0  # 0.01 <= 0.001 * (|y| + max|y|), y >= 11
    assert invoke(str(folder), "--rtol", "y=1e-5").exit_code == 1


def test_an_override_for_an_output_no_model_has_is_warned_about():
    result = CliRunner().invoke(main, ["verify", "--rtol", "nosuch=0.1", str(EXAMPLES / "maxpool_2d_ceil")])
    assert result.exit_code == 0 and "--rtol/--atol nosuch=...: no model verified has an output" in result.stderr


# ---------------------------------------------------------------------------------------------------
# A peer without a kernel: the same words for a user's model as for a bundled example


def test_a_peer_without_a_kernel_is_not_supported_for_a_users_model_too(tmp_path):
    pytest.importorskip("onnxruntime", reason="the onnxruntime path needs onnxruntime")
    example = EXAMPLES / "averagepool_opset1_pads_excluded"
    user_model = Path(shutil.copy(example / "model.onnx", tmp_path / "mine.onnx"))
    for target in (example, user_model):
        result = invoke(str(target), "--peer", "onnxruntime")
        assert result.exit_code == 0, result.output
        (line,) = [row for row in result.output.splitlines() if " onnxruntime(onnx) " in row]
        assert line.endswith("not supported by onnxruntime")
        assert "Could not find an implementation for AveragePool(1)" in result.output


# ---------------------------------------------------------------------------------------------------
# Progress on stderr


def test_progress_names_each_path_once_the_work_takes_long(monkeypatch, capsys):
    from poolir.converter import cmd_verify

    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    monkeypatch.setattr(cmd_verify, "PROGRESS_AFTER", 0.0)
    progress = cmd_verify._Progress()
    verify_paths([EXAMPLES / "maxpool_2d_ceil" / "model.onnx"], progress=progress, step=progress.step)
    err = capsys.readouterr().err
    for path in ("runtime(onnx->ir)", "runtime(onnx->ir->onnx)"):
        assert f"verifying {EXAMPLES / 'maxpool_2d_ceil' / 'model.onnx'}: {path}" in err
    assert err.endswith("\r\033[K")


def test_no_progress_for_short_work_on_a_terminal(monkeypatch, capsys):
    from poolir.converter import cmd_verify

    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    monkeypatch.setattr(cmd_verify, "PROGRESS_AFTER", 3600.0)
    progress = cmd_verify._Progress()
    verify_paths([EXAMPLES / "maxpool_2d_ceil" / "model.onnx"], progress=progress, step=progress.step)
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------------------------------------------
# Session.run(observe=...): every intermediate tensor, as onnxruntime computes it


def test_observe_reports_every_intermediate_tensor_in_order():
    from poolir.converter.peers import onnxruntime_tensors

    model = onnx.load(EXAMPLES / "pytorch_ceil_pools" / "model.onnx")
    feeds = dict(np.load(EXAMPLES / "pytorch_ceil_pools" / "inputs.npz"))
    seen: list[tuple[str, np.ndarray]] = []
    runtime.Session(model, fuse=False).run(feeds, lambda name, value: seen.append((name, np.array(value))))
    names = [name for name, _ in seen]
    assert names == [o for node in model.graph.node for o in node.output]
    oracle = onnxruntime_tensors(model, feeds, names)
    for name, value in seen:
        np.testing.assert_allclose(value, oracle[name], rtol=1e-5, atol=1e-5, err_msg=name)
    # The default plan fuses a Relu into the Conv before it: that Conv's output is never computed, the rest is seen.
    fused_away = {node.input[0] for node in model.graph.node if node.op_type == "Relu"}
    assert fused_away
    fused: list[str] = []
    runtime.Session(model).run(feeds, lambda name, value: fused.append(name))
    assert fused == [name for name in names if name not in fused_away]


def test_source_with_the_wrong_kinds_of_file_is_one_usage_error(tmp_path):
    # An .onnx checked against an .onnx: a usage error, said once (it was reported three times: as the model's
    # error row, in the summary and as the exit line).
    model = Path(__file__).resolve().parents[2] / "examples" / "maxpool_2d_ceil" / "model.onnx"
    result = CliRunner().invoke(main, ["verify", str(model), "--source", str(model)])
    assert result.exit_code == 2
    assert result.output.count("--source checks an IR (.xml) against the ONNX (.onnx) it came from") == 1
    assert "[ERROR]" not in result.output
