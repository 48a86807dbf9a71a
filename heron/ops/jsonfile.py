"""``read_json()``: one JSON file read whole, or the error that says what to do, for the
files operations leave behind (a backup's manifest, the watchdog's last report)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from heron.errors import HeronError


def read_json(path: Path, *, missing: HeronError, bad: Callable[[str], HeronError]) -> Any:
    """``path``'s JSON value; ``missing`` raised when there is no file, ``bad(why)`` when
    it cannot be read or parsed."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise missing from None
    except (OSError, ValueError) as exc:
        raise bad(str(exc)) from exc
