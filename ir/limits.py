"""The largest tensor poolir allocates, and the checks that refuse a shape above it before allocating.

2**31 elements is 8 GiB of f32, beyond any model this tool is for, and keeps int64 index arithmetic exact.
"""

from __future__ import annotations

import math

from poolir.ir.budget import check_bytes
from poolir.ir.element_types import DTYPES
from poolir.ir.errors import InvalidModelError
from poolir.ir.model import Shape, shape_str

MAX_ELEMENTS = 2**31
MAX_RANK = 32  # numpy 1 allows 32 dims (numpy 2: 64); no CNN tensor comes near either
_LIMIT = f"more than {MAX_ELEMENTS} elements (2**31, the limit poolir allocates)"


def check_declared_size(shape: Shape, what: str, source: str | None, where: str | None) -> None:
    """Refuse a shape a file declares whose static part alone exceeds MAX_ELEMENTS.

    A dynamic dim counts with its lower bound and a zero dim as 1, so that a zero beside a huge dim
    ("0, 4611686018427387904") is refused too: numpy cannot reshape into such a shape.
    """
    check_rank(len(shape), what, source, where)
    if math.prod(max(d.min, 1) for d in shape) > MAX_ELEMENTS:
        raise InvalidModelError(f"{what} {[str(d) for d in shape]} has {_LIMIT}", file=source, where=where)


def check_rank(rank: int, what: str, source: str | None = None, where: str | None = None) -> None:
    if rank > MAX_RANK:
        raise InvalidModelError(f"{what} has rank {rank}; poolir supports at most {MAX_RANK} dims", file=source,
                                where=where)


def check_inferred_size(shape: Shape, element_type: str | None = None) -> None:
    """Refuse an inferred output whose static part alone (dynamic dims at their lower bound) exceeds MAX_ELEMENTS,
    or (its element type known) the memory budget: refused when the model is read, before any run allocates it."""
    check_rank(len(shape), f"the inferred output {shape_str(shape)[:80]}")
    count = math.prod(d.min for d in shape)
    if count > MAX_ELEMENTS:
        raise InvalidModelError(f"the inferred output {shape_str(shape)} has {_LIMIT}")
    itemsize = DTYPES[element_type].itemsize if element_type in DTYPES else 1
    check_bytes(count * itemsize, f"the inferred output {shape_str(shape)} of {element_type or 'unknown type'}:")
