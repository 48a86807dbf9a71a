"""Heron: a self-hosted intelligence pipeline for AI agents."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:  # the installed distribution's version, so it cannot drift from pyproject.toml
    __version__ = version("heron")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"
__all__ = ["__version__"]
