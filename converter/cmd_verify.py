"""`poolir verify`: placeholder until its issue lands."""

import click

from converter.cli import fail


@click.command("verify")
def command() -> None:
    """Not built yet."""
    fail("'poolir verify' is not built yet")
