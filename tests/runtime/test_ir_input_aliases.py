"""An IR input is fed under any of its tensor names, as OpenVINO takes it: OpenVINO's PyTorch frontend names the
network input "10,25,40,x" (the torch name last), and a user feeds "x". The expected outputs are OpenVINO's."""

from __future__ import annotations

import numpy as np
import openvino as ov
import openvino.opset1 as ov1
import openvino.opset8 as ov8
import pytest
from click.testing import CliRunner

from poolir import runtime
from poolir.converter.cli import main
from poolir.converter.verify import verify_paths
from poolir.ir.errors import FeedError
from tests.peers import openvino_run_xml
from tests.runtime.ir_cases import save_ir


@pytest.fixture()
def torch_style_ir(tmp_path):
    x = ov1.parameter([-1, 2, -1, -1], ov.Type.f32)
    x.output(0).set_names({"10", "25", "40", "x"})
    pool = ov8.max_pool(x, [2, 2], [1, 1], [1, 1], [1, 1], [3, 3], "ceil")
    return save_ir([pool.output(0)], [x], tmp_path / "net.xml")


def test_a_feed_under_any_tensor_name_runs_as_openvino_runs_it(torch_style_ir):
    x = np.random.default_rng(0).standard_normal((1, 2, 7, 6)).astype(np.float32)
    (want,) = openvino_run_xml(torch_style_ir, {"x": x}).values()
    session = runtime.Session(torch_style_ir)
    assert [spec.name for spec in session.inputs] == ["10"]  # the first name, as OpenVINO's get_any_name
    for name in ("x", "25", "10"):
        (got,) = session.run({name: x}).values()
        np.testing.assert_array_equal(got, want)


def test_one_input_under_two_names_is_refused(torch_style_ir):
    x = np.zeros((1, 2, 7, 6), np.float32)
    with pytest.raises(FeedError, match="given twice, as 'x' and '10'"):
        runtime.Session(torch_style_ir).run({"x": x, "10": x})


def test_command_line_and_verify_take_the_alias(torch_style_ir, tmp_path):
    x = np.random.default_rng(1).standard_normal((1, 2, 5, 5)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    result = CliRunner().invoke(main, ["run", str(torch_style_ir), "--input", f"x={tmp_path / 'x.npy'}",
                                       "-o", str(tmp_path / "out.npz")])
    assert result.exit_code == 0, result.output
    (got,) = np.load(tmp_path / "out.npz").values()
    np.testing.assert_array_equal(got, next(iter(openvino_run_xml(torch_style_ir, {"x": x}).values())))
    report = verify_paths([torch_style_ir], peers=("openvino",), input_shapes={"x": (1, 2, 9, 8)})
    assert report.passed, [(row.path, row.status, row.detail) for m in report.models for row in m.rows]
