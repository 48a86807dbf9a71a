"""Each package's ``__all__`` lists what it exports, and every name in it exists."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize(
    "package",
    [
        "heron",
        "heron.libraries",
        "heron.embed",
        "heron.store",
        "heron.skills",
        "heron.tools",
        "heron.core",
        "heron.cli",
        "heron.interventions",
        "heron.ops.watchdog",
        "heron.wiring",
    ],
)
def test_all_names_exist(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        assert hasattr(module, name), f"{package}.{name}"
