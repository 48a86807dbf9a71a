"""Durations as Go, Gatus and Alertmanager write them: ``1h30m``, ``2m30s``, ``500ms``,
``1.5h``; a ``d`` (24h) besides Go's units, and a bare number is seconds.

>>> seconds("1h30m"), seconds("500ms"), seconds(90)
(5400.0, 0.5, 90.0)
"""

from __future__ import annotations

import re
from typing import Any

#: Go's units (time.ParseDuration) and a day.
UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0,
         "d": 86400.0}  # fmt: skip
_PART = r"(\d+(?:\.\d+)?|\.\d+)(ns|us|µs|ms|s|m|h|d)"
#: One compound duration, units required: how a condition's literal is told from a number.
LITERAL = rf"(?:{_PART})+"
_PARTS = re.compile(_PART)


def literal_seconds(text: str) -> float | None:
    """Seconds in a duration written with units (``1h30m``), else None."""
    if not re.fullmatch(LITERAL, text):
        return None
    return sum(float(n) * UNITS[unit] for n, unit in _PARTS.findall(text))


def seconds(value: Any) -> float:
    """Seconds in ``value``: a number, or a duration with units; above zero."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        found: float | None = float(value)
    else:
        text = str(value).strip()
        found = float(text) if re.fullmatch(r"\d+(?:\.\d+)?", text) else literal_seconds(text)
    if found is None:
        raise ValueError(f"{value!r} is not a duration; write e.g. 30s, 5m, 1h30m, 500ms or 1d")
    if found <= 0:
        raise ValueError("a duration must be above zero")
    return found


def human(seconds: float) -> str:
    """``5400`` -> ``1h30m``, ``0.25`` -> ``250ms``: a duration as Go writes it, whole
    seconds above a minute."""
    sign, left = ("-" if seconds < 0 else ""), abs(seconds)
    if left < 1:
        return f"{sign}{round(left * 1000)}ms"
    whole = int(left)
    hours, minutes, secs = whole // 3600, whole // 60 % 60, whole % 60
    if not hours and not minutes:
        return f"{sign}{round(left, 1):g}s"
    parts = [f"{hours}h" if hours else "", f"{minutes}m" if minutes else "",
             f"{secs}s" if secs else ""]  # fmt: skip
    return sign + "".join(parts)
