"""The one rule every robustness test checks, and the count of inputs tried.

`survive(kind, action)` runs one hostile input through one poolir entry point. The action may return
a result or raise a `PoolirError` subclass whose message names the file (or node/layer) and the problem;
any other exception is a bug in poolir and fails the test with its traceback. Every call is counted
per kind, and conftest.py prints the counts at the end of the session.

Fuzz size comes from the POOLIR_FUZZ environment variable: `ci` (default, about a minute on two cores)
or `long` (twenty times as many examples, for a run on request). Examples are derandomized, so a run
with the same profile always tries the same inputs.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any, Callable

from hypothesis import HealthCheck, settings

from poolir.ir.errors import PoolirError

TRIED: Counter[str] = Counter()
FAILED_CLEANLY: Counter[str] = Counter()

PROFILE = os.environ.get("POOLIR_FUZZ", "ci")
_SCALE = {"ci": 1, "long": 20}
if PROFILE not in _SCALE:
    raise RuntimeError(f"POOLIR_FUZZ={PROFILE!r}: expected one of {', '.join(_SCALE)}")


def fuzz(examples: int) -> settings:
    """Hypothesis settings for one fuzz test: `examples` in the ci profile, scaled for `long`.

    Not a global profile: loading one from this folder would change every other test's settings.
    """
    return settings(max_examples=examples * _SCALE[PROFILE], derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture])


def survive(kind: str, action: Callable[[], Any], *, names: str | None = None) -> Any:
    """Run `action`; return its result, or the PoolirError it raised. `names`: text the message must contain."""
    TRIED[kind] += 1
    try:
        return action()
    except PoolirError as error:
        FAILED_CLEANLY[kind] += 1
        message = str(error)
        if not error.problem or not error.problem.strip():
            raise AssertionError(f"{kind}: {type(error).__name__} without a problem text") from error
        if "\n" in message:
            raise AssertionError(f"{kind}: a multi-line message: {message!r}") from error
        if names is not None and names not in message:
            raise AssertionError(f"{kind}: the message {message!r} does not name {names!r}") from error
        return error
