"""Prints how many hostile inputs the robustness suite tried (and how many were refused cleanly)."""

from __future__ import annotations

from tests.robustness.harness import FAILED_CLEANLY, PROFILE, TRIED


def pytest_terminal_summary(terminalreporter) -> None:
    if not TRIED:
        return
    total = sum(TRIED.values())
    refused = sum(FAILED_CLEANLY.values())
    terminalreporter.write_line(f"poolir robustness ({PROFILE} profile): {total} hostile inputs tried, "
                                f"{refused} refused with a PoolirError, {total - refused} gave a result")
    for kind in sorted(TRIED):
        terminalreporter.write_line(f"  {kind}: {TRIED[kind]} tried, {FAILED_CLEANLY[kind]} refused")
