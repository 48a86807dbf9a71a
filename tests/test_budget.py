"""The suite's time budget (``tests.budget``): a real pytest run of a tiny suite in a
subprocess, with the plugin registered as tests/conftest.py registers it, over and under
its budget, with and without ``CI``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("suite")
    (folder / "conftest.py").write_text(
        "from tests import budget\n\n\ndef pytest_configure(config):\n    budget.register(config)\n"
    )
    (folder / "test_tiny.py").write_text(
        "def test_one():\n    assert sum(range(10)) == 45\n\n\n"
        "def test_two():\n    assert 'heron'.upper() == 'HERON'\n"
    )
    return folder


def pytest_run(suite: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("CI", "HERON_TEST_BUDGET")}
    environ |= {"PYTHONPATH": str(ROOT), **env}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", suite],
        cwd=suite,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_in_ci_a_run_over_its_budget_fails_naming_its_slowest_tests(suite: Path) -> None:
    done = pytest_run(suite, CI="true", HERON_TEST_BUDGET="0.001")
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout + done.stderr
    assert "2 passed" in done.stdout  # every test passed: the time alone fails it
    assert "over the time budget (CI is set: the run fails)" in done.stdout
    assert "over its budget of 0.001 s (HERON_TEST_BUDGET)" in done.stdout
    assert "test_tiny.py::test_one" in done.stdout and "test_tiny.py::test_two" in done.stdout
    assert "raise HERON_TEST_BUDGET" in done.stdout


def test_within_its_budget_or_outside_ci_the_run_passes(suite: Path) -> None:
    within = pytest_run(suite, CI="true", HERON_TEST_BUDGET="600")
    assert within.returncode == pytest.ExitCode.OK, within.stdout + within.stderr
    assert "budget" not in within.stdout
    warned = pytest_run(suite, HERON_TEST_BUDGET="0.001")  # a developer's machine: a warning
    assert warned.returncode == pytest.ExitCode.OK, warned.stdout + warned.stderr
    assert "over the time budget" in warned.stdout and "CI is set" not in warned.stdout


def test_a_budget_that_is_no_number_of_seconds_is_a_usage_error(suite: Path) -> None:
    done = pytest_run(suite, HERON_TEST_BUDGET="ten minutes")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "HERON_TEST_BUDGET='ten minutes' is not a number of seconds" in done.stderr
    assert "HERON_TEST_BUDGET=900" in done.stderr
