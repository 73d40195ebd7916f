"""`--input-shape`: the one parser of an input's shape on the command line, shared by run, verify and convert.

Three spellings are accepted, so that a command copied from another tool works unchanged:

    x=1,3,224,224        poolir
    x:[1,3,224,224]      polygraphy
    x[1,3,224,224]       ovc (OpenVINO's converter)

A dim is a positive integer, or -1 or ? for a dim left dynamic (only `convert` can keep one: a run needs
every dim). Shapes are shown back in the one notation of every message, `[1,3,224,224]` with `?` for a
dynamic dim (ir.model.shape_str).
"""

from __future__ import annotations

import re

import click

from poolir.ir.errors import UsageError

DYNAMIC = -1
SPELLINGS = "NAME=1,3,224,224, NAME:[1,3,224,224] or NAME[1,3,224,224]"

# The name is the shortest prefix that leaves one of the three shape spellings: `a:b=1,2` names 'a:b'.
_PATTERN = re.compile(r"(?P<name>.+?)(?:=(?P<plain>[^=\[\]]*)|:\[(?P<polygraphy>[^\[\]]*)\]|\[(?P<ovc>[^\[\]]*)\])",
                      re.DOTALL)


def parse_input_shape(text: str, *, allow_dynamic: bool = True) -> tuple[str, tuple[int, ...]]:
    """`x=1,3,224,224`, `x:[1,3,224,224]` or `x[1,3,224,224]` -> ("x", (1, 3, 224, 224)).

    A dynamic dim (-1 or ?) is DYNAMIC (-1); with allow_dynamic=False it is refused. Raises UsageError."""
    match = _PATTERN.fullmatch(text.strip())
    if match is None:
        raise UsageError(f"--input-shape {text!r}: expected {SPELLINGS}")
    dims_text = next(group for group in match.group("plain", "polygraphy", "ovc") if group is not None)
    dims = []
    for item in dims_text.split(","):
        item = item.strip()
        if item in ("?", "-1"):
            if not allow_dynamic:
                raise UsageError(f"--input-shape {text!r}: dim {item} left dynamic, but running a model needs "
                                 "every dim")
            dims.append(DYNAMIC)
        elif item.isascii() and item.isdigit() and len(item) <= 18 and int(item) >= 1:  # "²".isdigit() is True
            dims.append(int(item))
        else:
            raise UsageError(f"--input-shape {text!r}: dim {item!r} is not a positive integer, -1 or ?")
    return match.group("name"), tuple(dims)


class InputShape(click.ParamType):
    """click's type for one --input-shape value: a bad value is click's BadParameter naming the option."""

    name = "input-shape"

    def __init__(self, allow_dynamic: bool) -> None:
        self.allow_dynamic = allow_dynamic

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        try:
            return parse_input_shape(value, allow_dynamic=self.allow_dynamic)
        except UsageError as error:
            self.fail(error.problem.removeprefix("--input-shape "), param, ctx)


def input_shape_option(*, allow_dynamic: bool):
    """The --input-shape option, the same on every command (a dynamic dim only where the command can keep it)."""
    rule = (" -1 or ? leaves a dim dynamic." if allow_dynamic else
            " Random inputs are drawn in it; without it a dynamic batch alone defaults to 1.")
    return click.option(
        "--input-shape", "input_shapes", multiple=True, type=InputShape(allow_dynamic), metavar="SHAPE",
        callback=_no_repeats, help=f"Fix an input's shape: {SPELLINGS}.{rule} Repeatable.")


def _no_repeats(ctx, param, values) -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {}
    for name, dims in values:
        if name in shapes:
            raise click.BadParameter(f"input {name!r} is given twice", ctx=ctx, param=param)
        shapes[name] = dims
    return shapes
