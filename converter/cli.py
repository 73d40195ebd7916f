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
from poolir.converter.exit_codes import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_MISMATCH
from poolir.converter.json_errors import error_document, wants_json
from poolir.ir.atomic import install_signal_cleanup
from poolir.ir.budget import DEFAULT_MAX_MEMORY, ENVIRONMENT_VARIABLE, human_size, set_max_memory
from poolir.ir.errors import MESSAGE_LIMIT, WORD_LIMIT, PoolirError, printable

__all__ = ["EXIT_BAD_INPUT", "EXIT_INTERNAL", "EXIT_MISMATCH", "fail", "main"]


def _package_version() -> str:
    try:
        return version("poolir")
    except PackageNotFoundError:
        return "unknown"


class PoolirGroup(click.Group):
    """Turns user errors raised by any command into one line on stderr and exit code 2."""

    def invoke(self, ctx: click.Context):
        install_signal_cleanup()
        try:
            return super().invoke(ctx)
        except PoolirError as error:
            fail(str(error), file=error.file, where=error.where, kind=type(error).__name__)
        except OSError as error:
            where = f"{error.filename}: " if error.filename else ""
            fail(f"{where}{error.strerror or error}", file=error.filename and str(error.filename), kind="OSError")
        except MemoryError as error:  # where a command did not say which file needed it: its first argument
            arguments = [a for a in [*getattr(ctx, "protected_args", []), *ctx.args][1:] if not a.startswith("-")]
            fail(f"{arguments[0] + ': ' if arguments else ''}not enough memory ({error})", kind="MemoryError")
        except click.UsageError as error:
            # A bad argument of a command (a directory as MODEL, an unknown --peer): one line like every
            # other user error, instead of click's multi-line usage block.
            fail(" ".join(error.format_message().split()))
        except KeyboardInterrupt:  # Ctrl-C: the shell's code for SIGINT, no traceback (1 means "mismatch")
            click.echo("poolir: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
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
    message = printable(message, limit=MESSAGE_LIMIT, word_limit=WORD_LIMIT)
    click.echo(f"poolir: error: {message}", err=True)
    if wants_json(click.get_current_context(silent=True)):
        click.echo(error_document(message, EXIT_BAD_INPUT, file=file, where=where, kind=kind))
    sys.exit(EXIT_BAD_INPUT)


@click.group(cls=PoolirGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(_package_version(), "--version", prog_name="poolir", message="%(prog)s %(version)s")
@click.option("--max-memory", metavar="SIZE", default=None,
              help=f"Memory budget for tensor data a file may make poolir allocate (bytes, or 512M, 16G; default "
                   f"{human_size(DEFAULT_MAX_MEMORY)}, or ${ENVIRONMENT_VARIABLE}). Larger models are refused before "
                   f"allocating.")
def main(max_memory: str | None) -> None:
    """Convert, run, inspect and verify CNNs between ONNX and OpenVINO IR: the pooling family exact in both
    worlds, and the classic model-zoo operators around it."""
    if max_memory is not None:
        set_max_memory(max_memory)


for _module in (cmd_convert, cmd_run, cmd_inspect, cmd_verify):
    main.add_command(_module.command)
