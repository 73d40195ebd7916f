"""`poolir convert SRC -o DST`: ONNX -> IR (.xml + .bin) or IR -> ONNX, keeping the meaning or refusing."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable, TextIO

import click
import onnx

from poolir import ir
from poolir.converter.ir_to_onnx import NEWEST_WRITTEN_OPSET, OLDEST_WRITTEN_OPSET, ir_to_onnx
from poolir.converter.onnx_to_ir import onnx_to_ir
from poolir.ir.atomic import refuse_overwriting_inputs, write_files_atomically
from poolir.ir.errors import PoolirError, UsageError
from poolir.runtime.onnx_model import load_onnx


def parse_input_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """NAME=1,3,224,224 -> ("NAME", (1, 3, 224, 224)); -1 or ? for a dynamic dim. Raises UsageError."""
    name, separator, dims_text = text.rpartition("=")
    if not separator or not name:
        raise UsageError(f"--input-shape {text!r}: expected NAME=D1,D2,... (e.g. x=1,3,224,224)")
    dims = []
    for item in dims_text.split(","):
        item = item.strip()
        if item in ("?", "-1"):
            dims.append(-1)
        elif item.isdigit() and int(item) >= 1:
            dims.append(int(item))
        else:
            raise UsageError(f"--input-shape {text!r}: dim {item!r} is not a positive integer, -1 or ?")
    return name, tuple(dims)


class ConvertProgress:
    """'converting node 812/1650' on stderr, once a conversion has run longer than `after` seconds, and only on
    a terminal (a log or a pipe gets no carriage-return lines); cleared when the conversion ends."""

    def __init__(self, stream: TextIO | None = None, after: float = 1.5,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = stream is not None or sys.stderr.isatty()
        self.after, self.clock = after, clock
        self.start = clock()
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or self.clock() - self.start < self.after:
            return
        self.stream.write(f"\r\033[Kconverting node {done}/{total}")
        self.stream.flush()
        self.shown = True

    def finish(self) -> None:
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()


@click.command("convert")
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-o", "--output", "destination", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="OUT.xml (from .onnx; OUT.bin is written beside it when needed) or OUT.onnx (from .xml).")
@click.option("--opset", type=int, default=None,
              help=f"ONNX opset to write ({OLDEST_WRITTEN_OPSET}..{NEWEST_WRITTEN_OPSET}, default {NEWEST_WRITTEN_OPSET}).")
@click.option("--ir-version", type=click.Choice(["10", "11"]), default=None, help="IR version to write (default 11).")
@click.option("--input-shape", "input_shapes", multiple=True, metavar="NAME=D1,D2,...",
              help="Fix an ONNX input's shape before converting (-1 or ? keeps a dim dynamic). Repeatable.")
def command(source: Path, destination: Path, opset: int | None, ir_version: str | None,
            input_shapes: tuple[str, ...]) -> None:
    """Convert SOURCE (.onnx or .xml) to the other format, exactly, or refuse with the reason."""
    kinds = (source.suffix.lower(), destination.suffix.lower())
    # No output (OUT, and the OUT.bin beside an OUT.xml) may replace an input (SRC, and the SRC.bin beside an SRC.xml).
    def with_weights(path: Path) -> list[Path]:
        return [path, path.with_suffix(".bin")] if path.suffix.lower() == ".xml" else [path]

    for output in with_weights(destination):
        refuse_overwriting_inputs(output, with_weights(source))
    if kinds == (".onnx", ".xml"):
        if opset is not None:
            raise UsageError("--opset applies to IR -> ONNX; for ONNX -> IR use --ir-version")
        shapes = dict(parse_input_shape(text) for text in input_shapes)
        progress = ConvertProgress()
        try:
            model = onnx_to_ir(load_onnx(source, check=True), input_shapes=shapes, ir_version=int(ir_version or 11),
                               progress=progress)
        except PoolirError as error:
            raise error.located(file=source) from None
        finally:
            progress.finish()
        try:
            ir.write_model(model, destination)
        except PoolirError as error:  # e.g. a name XML cannot hold
            raise error.located(file=source) from None
        written = [destination] + ([destination.with_suffix(".bin")]
                                   if any(layer.type == "Const" for layer in model.layers) else [])
    elif kinds == (".xml", ".onnx"):
        if ir_version is not None or input_shapes:
            raise UsageError("--ir-version and --input-shape apply to ONNX -> IR; for IR -> ONNX use --opset")
        try:
            converted = ir_to_onnx(ir.read_model(source), opset=NEWEST_WRITTEN_OPSET if opset is None else opset)
        except PoolirError as error:
            raise error.located(file=source) from None
        # A model poolir wrote must pass the full check; if not, that is poolir's bug (an internal error).
        onnx.checker.check_model(converted, full_check=True)
        write_files_atomically({destination: converted.SerializeToString()})
        written = [destination]
    else:
        raise UsageError(f"cannot convert {source.name} to {destination.name}: expected .onnx -> .xml or "
                         ".xml -> .onnx")
    click.echo(f"wrote {', '.join(str(path) for path in written)}")
