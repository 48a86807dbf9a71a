"""The ``heron`` command. Each command parses, calls one library function and prints."""

from __future__ import annotations

from heron.cli.app import app

__all__ = ["app", "main"]


def main() -> None:
    app()  # ends every failure in one line and exit status 1 (heron.cli.app)
