"""Run a poolir command on a hostile input and check the CLI contract: exit 0 (or 1 for a verify
mismatch), or exit 2 with exactly one line on stderr that names the file; never a traceback, never
an internal error (exit 3)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from click.testing import CliRunner

from poolir.converter.cli import main
from tests.robustness.harness import TRIED, FAILED_CLEANLY


def invoke_cli(kind: str, args: list[str], names: str | None = None, allowed=(0, 2)):
    TRIED[f"cli.{kind}"] += 1
    result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"poolir {' '.join(map(str, args))}: uncaught {type(result.exception).__name__}: "
                             f"{result.exception}") from result.exception
    assert "Traceback" not in result.output and "Traceback" not in result.stderr, result.stderr
    assert result.exit_code in allowed, (f"poolir {' '.join(map(str, args))}: exit {result.exit_code}, "
                                         f"stderr {result.stderr!r}")
    if result.exit_code == 2:
        FAILED_CLEANLY[f"cli.{kind}"] += 1
        lines = result.stderr.splitlines()
        assert len(lines) == 1, f"poolir {' '.join(map(str, args))}: stderr is not one line: {result.stderr!r}"
        assert lines[0].startswith("poolir: error: "), lines[0]
        if names is not None:
            assert names in lines[0], f"the message {lines[0]!r} does not name {names!r}"
    return result


def one_line_error(result, path, *fragments) -> str:
    """The one stderr line of a refused command (exit 2), which names `path` and holds every fragment."""
    assert result.exit_code == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert str(path) in line and all(f in line for f in fragments), line
    return line


def _digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def all_commands(model: Path, work: Path) -> None:
    """inspect, run (-o), convert and verify on one model file; each must keep the CLI contract and leave the
    model (and its .bin) byte for byte as it was."""
    name = str(model)
    inputs = (model, model.with_suffix(".bin"))
    before = [_digest(path) for path in inputs]
    invoke_cli("inspect", ["inspect", model], names=name)
    invoke_cli("inspect", ["inspect", model, "--json"], names=name)
    invoke_cli("run", ["run", model, "-o", work / "out.npz"], names=name)
    target = work / ("out.onnx" if model.suffix == ".xml" else "out.xml")
    invoke_cli("convert", ["convert", model, "-o", target], names=name)
    invoke_cli("verify", ["verify", model, "--report", work / "report.json"], allowed=(0, 1, 2))
    assert [_digest(path) for path in inputs] == before, f"a command modified {model} or its .bin"
    leftovers = [p.name for p in work.iterdir() if p.name.startswith(".")]  # ir.atomic's temporaries are dotfiles
    assert not leftovers, f"temporary files left behind: {leftovers}"
