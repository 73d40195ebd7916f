"""`poolir inspect MODEL [--json] [--strict]`: inputs, outputs, layers, declared vs inferred dims, warnings."""

from __future__ import annotations

import click

from poolir.converter.describe import describe
from poolir.converter.json_errors import json_option
from poolir.ir.errors import InvalidModelError


@click.command("inspect")
@click.argument("model", type=click.Path(dir_okay=False))
@json_option("Print the description (or the error) as JSON.")
@click.option("--strict", is_flag=True, help="Exit 2 when there is any warning (e.g. declared dims that "
                                              "disagree with the inferred ones).")
def command(model: str, as_json: bool, strict: bool) -> None:
    """Show MODEL (.xml or .onnx): inputs, outputs, each layer's type, version, attributes and
    declared vs inferred output dims, and warnings."""
    findings: list[str] = []  # the checker's warnings, shown once the model is described (an error is one line)
    description = describe(model, warn=findings.append)
    refused = strict and description.warnings
    if not (refused and as_json):  # with --json, stdout holds one document: the error's
        click.echo(description.to_json() if as_json else description.render())
    if refused:
        raise InvalidModelError(f"{len(description.warnings)} warning(s) with --strict: {description.warnings[0]}",
                                file=model)
    for finding in findings:
        click.echo(f"poolir: warning: {model}: {finding}", err=True)
