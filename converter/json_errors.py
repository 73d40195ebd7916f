"""`--json` for errors too: with --json, stdout holds one JSON document whether the command succeeded or not.

    {"error": {"message": "net.xml: layer 'p' (id 3, AvgPool): attribute 'strides' = '0': must be >= 1",
               "file": "net.xml", "where": "layer 'p' (id 3, AvgPool)", "kind": "InvalidModelError"},
     "exit_code": 2}

The one-line message still goes to stderr. The option is eager, so that it is known even when another
option's value is refused while the command line is parsed.
"""

from __future__ import annotations

import json

import click

_FLAG = "poolir.json"


def _remember(ctx: click.Context, param, value: bool) -> bool:
    ctx.meta[_FLAG] = bool(value)  # meta is shared by the group's context and the command's
    return value


def json_option(help: str):
    """The --json flag of run, inspect and verify."""
    return click.option("--json", "as_json", is_flag=True, is_eager=True, callback=_remember, help=help)


def wants_json(ctx: click.Context | None) -> bool:
    return bool(ctx is not None and ctx.meta.get(_FLAG))


def error_document(message: str, exit_code: int, *, file: str | None = None, where: str | None = None,
                   kind: str = "UsageError") -> str:
    """The JSON document of an error (see the module docstring)."""
    return json.dumps({"error": {"message": message, "file": file, "where": where, "kind": kind},
                       "exit_code": exit_code}, indent=2)
