"""The ``heron`` command. Each command parses, calls one library function and prints."""

from __future__ import annotations

import sys

from heron.cli.app import app
from heron.errors import HeronError

__all__ = ["app", "main"]


def main() -> None:
    try:
        app()
    except HeronError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
