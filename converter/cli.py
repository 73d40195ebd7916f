"""The `poolir` command line: one click group, one thin command per module (converter/cmd_*.py).

Every command is a thin layer over the public Python API and reports a user error by raising a PoolirError
(never by calling back into this module): the group turns it, and unreadable files, into one line on stderr
and exit code 2; a mismatch found by `verify` is exit 1 (converter/exit_codes.py).
"""

from __future__ import annotations

import os
import sys
from importlib.metadata import PackageNotFoundError, version

import click

from poolir.converter import cmd_convert, cmd_inspect, cmd_run, cmd_verify
from poolir.converter.exit_codes import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_MISMATCH
from poolir.converter.json_errors import error_document, wants_json
from poolir.ir.errors import PoolirError

__all__ = ["EXIT_BAD_INPUT", "EXIT_INTERNAL", "EXIT_MISMATCH", "fail", "main"]


def _package_version() -> str:
    try:
        return version("poolir")
    except PackageNotFoundError:
        return "unknown"


class PoolirGroup(click.Group):
    """Turns user errors raised by any command into one line on stderr and exit code 2."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except PoolirError as error:
            fail(str(error), file=error.file, where=error.where, kind=type(error).__name__)
        except OSError as error:
            where = f"{error.filename}: " if error.filename else ""
            fail(f"{where}{error.strerror or error}", file=error.filename and str(error.filename), kind="OSError")
        except MemoryError as error:  # where a command did not say which file needed it
            fail(f"not enough memory ({error})", kind="MemoryError")
        except click.UsageError as error:
            # A bad argument of a command (a directory as MODEL, an unknown --peer): one line like every
            # other user error, instead of click's multi-line usage block.
            fail(" ".join(error.format_message().split()))
        except (click.exceptions.Exit, click.ClickException, click.Abort, KeyboardInterrupt):
            raise
        except Exception as error:  # a bug in poolir, not the user's fault
            if os.environ.get("POOLIR_DEBUG"):
                raise
            message = (f"internal error: {type(error).__name__}: {error} "
                       "(set POOLIR_DEBUG=1 for a traceback, and please report it)")
            click.echo(f"poolir: {message}", err=True)
            if wants_json(ctx):
                click.echo(error_document(message, EXIT_INTERNAL, kind="internal"))
            sys.exit(EXIT_INTERNAL)


def fail(message: str, *, file: str | None = None, where: str | None = None, kind: str = "UsageError") -> None:
    """Print one error line and exit 2 (commands raise a PoolirError; the group turns it into this).
    With --json, stdout also gets the error as a JSON document (converter/json_errors.py)."""
    click.echo(f"poolir: error: {message}", err=True)
    if wants_json(click.get_current_context(silent=True)):
        click.echo(error_document(message, EXIT_BAD_INPUT, file=file, where=where, kind=kind))
    sys.exit(EXIT_BAD_INPUT)


@click.group(cls=PoolirGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(_package_version(), "--version", prog_name="poolir", message="%(prog)s %(version)s")
def main() -> None:
    """Convert, run, inspect and verify pooling models between ONNX and OpenVINO IR."""


for _module in (cmd_convert, cmd_run, cmd_inspect, cmd_verify):
    main.add_command(_module.command)
