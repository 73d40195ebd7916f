"""`poolir inspect`: placeholder until its issue lands."""

import click

from converter.cli import fail


@click.command("inspect")
def command() -> None:
    """Not built yet."""
    fail("'poolir inspect' is not built yet")
