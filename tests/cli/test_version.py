"""``heron --version`` and ``heron info``: the installed distribution's version."""

from __future__ import annotations

import json
import platform
from importlib.metadata import version

import heron
from tests.run_heron import run_heron


def test_version_is_the_installed_distributions() -> None:
    assert heron.__version__ == version("heron")
    out = run_heron("--version").stdout
    assert out == f"heron {version('heron')} (Python {platform.python_version()})\n"


def test_info_shows_the_version(home) -> None:
    assert json.loads(run_heron("info", "--json").stdout)["version"] == version("heron")
    assert run_heron("info").stdout.startswith(f"heron {version('heron')}\n")
