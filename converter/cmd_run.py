"""`poolir run`: placeholder until its issue lands."""

import click

from converter.cli import fail


@click.command("run")
def command() -> None:
    """Not built yet."""
    fail("'poolir run' is not built yet")
