"""`poolir convert SRC [-o DST]`: ONNX -> IR (.xml + .bin) or IR -> ONNX, keeping the meaning or refusing.

DST defaults to SRC's stem in the current folder, as ovc does (model.onnx -> ./model.xml + ./model.bin,
model.xml -> ./model.onnx); a missing output folder is created.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Callable, TextIO

import click
import onnx

from poolir import ir
from poolir.converter.ir_to_onnx import NEWEST_WRITTEN_OPSET, OLDEST_WRITTEN_OPSET, ir_to_onnx
from poolir.converter.ir_to_onnx.onnxruntime_gaps import onnxruntime_warnings
from poolir.converter.onnx_to_ir import onnx_to_ir
from poolir.converter.peers import openvino_v10_output_names
from poolir.ir.atomic import check_output_path, refuse_overwriting_inputs, write_files_atomically
from poolir.converter.input_shapes import input_shape_option
from poolir.ir.errors import PoolirError, UsageError, printable
from poolir.runtime.onnx_model import load_onnx
from poolir.runtime.session import model_kind


class ConvertProgress:
    """What a long conversion is doing, on one stderr line: 'reading model.onnx', 'converting node 812/1650',
    'writing model.xml, model.bin (548 MB)'. Nothing appears before the conversion has run `after` seconds (a
    timer shows the current step then, even in the middle of one long read or write), and only on a terminal
    (a log or a pipe gets no carriage-return lines), as `verify`'s counter; the line is cleared at the end."""

    def __init__(self, stream: TextIO | None = None, after: float = 1.5,
                 clock: Callable[[], float] = time.monotonic, unit: str = "node") -> None:
        self.unit = unit  # what the converter counts: ONNX nodes or IR layers
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = stream is not None or sys.stderr.isatty()
        self.after, self.clock = after, clock
        self.start = clock()
        self.shown = self.finished = False
        self.text = ""
        self.lock = threading.Lock()
        self.timer = threading.Timer(after, self._show) if self.enabled else None
        if self.timer is not None:
            self.timer.daemon = True
            self.timer.start()

    def step(self, text: str) -> None:
        """The step now under way; shown at once if the conversion has already run `after` seconds."""
        with self.lock:
            self.text = text
            if self.enabled and not self.finished and (self.shown or self.clock() - self.start >= self.after):
                self._write()

    def __call__(self, done: int, total: int) -> None:
        self.step(f"converting {self.unit} {done}/{total}")

    def _show(self) -> None:
        with self.lock:
            if not self.finished and self.text:
                self._write()

    def _write(self) -> None:
        self.stream.write(f"\r\033[K{printable(self.text, limit=None)}")
        self.stream.flush()
        self.shown = True

    def finish(self) -> None:
        with self.lock:
            self.finished = True
            if self.timer is not None:
                self.timer.cancel()
            if self.shown:
                self.stream.write("\r\033[K")
                self.stream.flush()


@click.command("convert")
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-o", "--output", "destination", type=click.Path(dir_okay=False),
              help="OUT.xml (from .onnx; OUT.bin is written beside it when needed) or OUT.onnx (from .xml). "
                   "Default: SOURCE's stem in the current folder. A missing folder is created.")
@click.option("--opset", type=int, default=None,
              help=f"ONNX opset to write ({OLDEST_WRITTEN_OPSET}..{NEWEST_WRITTEN_OPSET}, default {NEWEST_WRITTEN_OPSET}).")
@click.option("--ir-version", type=click.Choice(["10", "11"]), default=None, help="IR version to write (default 11).")
@input_shape_option(allow_dynamic=True)
def command(source: Path, destination: Path | None, opset: int | None, ir_version: str | None,
            input_shapes: dict[str, tuple[int, ...]]) -> None:
    """Convert SOURCE (.onnx or .xml) to the other format, exactly, or refuse with the reason.

    The output defaults to SOURCE's stem in the current folder: model.onnx -> model.xml (+ model.bin),
    model.xml -> model.onnx."""
    if destination is None:
        destination = Path(source.stem + {"onnx": ".xml", "ir": ".onnx"}[model_kind(source)])
    else:  # as given: Path() would read "" as "." and drop the slash of "out/", which check_output_path refuses
        check_output_path(destination)
        destination = Path(destination)
    kinds = (source.suffix.lower(), destination.suffix.lower())
    findings: list[str] = []  # the checker's warnings, shown once the conversion succeeded (an error is one line)
    # No output (OUT, and the OUT.bin beside an OUT.xml) may replace an input (SRC, and the SRC.bin beside an SRC.xml).
    def with_weights(path: Path) -> list[Path]:
        return [path, path.with_suffix(".bin")] if path.suffix.lower() == ".xml" else [path]

    for output in with_weights(destination):
        refuse_overwriting_inputs(output, with_weights(source))
    if kinds == (".onnx", ".xml"):
        if opset is not None:
            raise UsageError("--opset applies to IR -> ONNX; for ONNX -> IR use --ir-version")
        progress = ConvertProgress()
        try:
            try:
                progress.step(f"reading {source}")
                loaded = load_onnx(source, check=True, warn=findings.append)
                model = onnx_to_ir(loaded, input_shapes=input_shapes, ir_version=int(ir_version or 11),
                                   progress=progress)
                del loaded
            except PoolirError as error:
                raise error.located(file=source) from None
            _make_folder(destination)
            written = [destination] + ([destination.with_suffix(".bin")]
                                       if any(layer.type == "Const" for layer in model.layers) else [])
            progress.step(f"writing {', '.join(map(str, written))} ({_size(_const_bytes(model))})")
            try:
                ir.write_model(model, destination)
            except PoolirError as error:  # e.g. a name XML cannot hold
                raise error.located(file=source) from None
        finally:
            progress.finish()
        if model.version == 10:
            findings.extend(_v10_names_note(model))
    elif kinds == (".xml", ".onnx"):
        if ir_version is not None or input_shapes:
            raise UsageError("--ir-version and --input-shape apply to ONNX -> IR; for IR -> ONNX use --opset")
        progress = ConvertProgress(unit="layer")
        try:
            progress.step(f"reading {source}")
            try:
                converted = ir_to_onnx(ir.read_model(source), opset=NEWEST_WRITTEN_OPSET if opset is None else opset,
                                       progress=progress)
            except PoolirError as error:
                raise error.located(file=source) from None
            # A model poolir wrote must pass the full check; if not, that is poolir's bug (an internal error).
            progress.step(f"checking the ONNX model ({_size(converted.ByteSize())})")
            onnx.checker.check_model(converted, full_check=True)
            findings.extend(onnxruntime_warnings(converted))  # still what the spec means; onnxruntime_gaps.py
            _make_folder(destination)
            progress.step(f"writing {destination} ({_size(converted.ByteSize())})")
            write_files_atomically({destination: converted.SerializeToString()})
        finally:
            progress.finish()
        written = [destination]
    else:
        raise UsageError(f"cannot convert {source} to {destination}: expected .onnx -> .xml or .xml -> .onnx")
    for finding in findings:
        click.echo(f"poolir: warning: {printable(source)}: {printable(finding)}", err=True)
    click.echo(f"wrote {', '.join(printable(path, limit=None) for path in written)}")


def _v10_names_note(model: ir.Model) -> list[str]:
    """IR v10 cannot hold the output names: say what OpenVINO will call the outputs instead."""
    renamed = [(ours, theirs) for ours, theirs in openvino_v10_output_names(model) if ours != theirs]
    if not renamed:
        return []
    return ["IR v10 has no tensor names: OpenVINO names the outputs after their layers, "
            + ", ".join(f"{ours} -> {theirs}" for ours, theirs in renamed)
            + " (and returns i64 outputs as i32); --ir-version 11, the default, keeps the names"]


def _const_bytes(model) -> int:
    """The bytes of the model's Const data (the .bin's size before identical blobs share one offset)."""
    return sum(layer.data.nbytes for layer in model.layers if layer.type == "Const" and layer.data is not None)


def _size(count: int) -> str:
    """A byte count as people read it: 812 B, 53 kB, 548 MB (powers of 1000)."""
    for unit in ("B", "kB", "MB"):
        if count < 1000:
            return f"{count:.3g} {unit}" if unit != "B" else f"{count} B"
        count /= 1000
    return f"{count:.3g} GB"


def _make_folder(destination: Path) -> None:
    """`-o out/model.xml` creates a missing out/ (as ovc does), once the conversion has succeeded."""
    try:
        destination.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"cannot create the output folder {destination.parent}: {error.strerror or error}",
                         file=destination) from None
