"""What a test does when something it needs is missing: skip with the reason on a
developer's machine, fail with it in CI, where a skip would hide a failure."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def in_ci() -> bool:
    """``CI`` is set, as GitHub Actions, GitLab and most CI services set it (``CI=true``)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def missing(reason: str, fix: str = "install or start what it names") -> NoReturn:
    """Skip with ``reason``; in CI, fail with it and ``fix``."""
    if in_ci():
        pytest.fail(f"{reason}\nCI is set, so this fails rather than skips: {fix}.", pytrace=False)
    pytest.skip(reason)
