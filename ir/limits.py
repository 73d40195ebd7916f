"""The largest tensor poolir allocates, and the checks that refuse a shape above it before allocating.

2**31 elements is 8 GiB of f32, beyond any model this tool is for, and keeps int64 index arithmetic exact.
"""

from __future__ import annotations

import math

from poolir.ir.errors import InvalidModelError
from poolir.ir.model import Shape, shape_str

MAX_ELEMENTS = 2**31
_LIMIT = f"more than {MAX_ELEMENTS} elements (2**31, the limit poolir allocates)"


def check_declared_size(shape: Shape, what: str, source: str | None, where: str | None) -> None:
    """Refuse a shape a file declares whose static part alone exceeds MAX_ELEMENTS.

    A dynamic dim counts with its lower bound and a zero dim as 1, so that a zero beside a huge dim
    ("0, 4611686018427387904") is refused too: numpy cannot reshape into such a shape.
    """
    if math.prod(max(d.min, 1) for d in shape) > MAX_ELEMENTS:
        raise InvalidModelError(f"{what} {[str(d) for d in shape]} has {_LIMIT}", file=source, where=where)


def check_inferred_size(shape: Shape) -> None:
    """Refuse an inferred output whose static part alone (dynamic dims at their lower bound) exceeds MAX_ELEMENTS."""
    if math.prod(d.min for d in shape) > MAX_ELEMENTS:
        raise InvalidModelError(f"the inferred output {shape_str(shape)} has {_LIMIT}")
