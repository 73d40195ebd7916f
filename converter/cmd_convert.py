"""`poolir convert`: placeholder until its issue lands."""

import click

from converter.cli import fail


@click.command("convert")
def command() -> None:
    """Not built yet."""
    fail("'poolir convert' is not built yet")
