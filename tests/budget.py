"""The suite's time budget, kept by CI: a pytest plugin (tests/conftest.py registers it).

The whole run (from the session's start to its end, collection included) should take at
most ``HERON_TEST_BUDGET`` seconds (600 by default: 10 minutes on 2 cores). A slower
machine says so with a larger number. Past the budget, the end of the run names the
slowest tests (setup, call and teardown together); with ``CI`` set (``tests.ci.in_ci``)
the run fails there, even when every test passed, so the suite cannot creep past its
budget unseen. Without ``CI`` it is a warning line. Under xdist only the controller
counts: it sees every worker's reports.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict

import pytest

from tests.ci import in_ci

BUDGET = "HERON_TEST_BUDGET"
DEFAULT_SECONDS = 600.0
#: How many of the slowest tests the message names.
SLOWEST = 10


class SuiteBudget:
    """Times the session and each test; judges the total at the session's end."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = time.monotonic()
        self.took: dict[str, float] = defaultdict(float)
        self.verdict: str | None = None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.started = time.monotonic()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.took[report.nodeid] += report.duration

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        elapsed = time.monotonic() - self.started
        if elapsed <= self.seconds:
            return
        slowest = sorted(self.took.items(), key=lambda item: -item[1])[:SLOWEST]
        lines = [
            f"the suite took {elapsed:.0f} s, over its budget of {self.seconds:g} s "
            f"({BUDGET}). The slowest tests:",
            *(f"  {seconds:7.1f} s  {nodeid}" for nodeid, seconds in slowest),
            "Make them leaner (module-scoped fixtures and servers, smaller data, an awaited "
            f"event rather than a sleep), or, on a slower machine, raise {BUDGET} "
            "(seconds).",
        ]
        self.verdict = "\n".join(lines)
        if in_ci() and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.verdict is None:
            return
        failing = in_ci()
        title = "over the time budget" + (" (CI is set: the run fails)" if failing else "")
        terminalreporter.section(title, sep="=", red=failing, yellow=not failing, bold=True)
        terminalreporter.line(self.verdict)


def budget_seconds() -> float:
    """``HERON_TEST_BUDGET`` in seconds (600 unset); a usage error naming the fix when it is
    not a positive number."""
    value = os.environ.get(BUDGET, "").strip()
    if not value:
        return DEFAULT_SECONDS
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise pytest.UsageError(
            f"{BUDGET}={value!r} is not a number of seconds: set it to the suite's time "
            f"budget on this machine, e.g. {BUDGET}=900, or unset it for "
            f"{DEFAULT_SECONDS:.0f}."
        )
    return seconds


def register(config: pytest.Config) -> None:
    """Time this run against its budget; an xdist worker's run is its controller's to time."""
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(SuiteBudget(budget_seconds()), "heron-suite-budget")
