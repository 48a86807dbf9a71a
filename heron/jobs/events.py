"""What goes into an event payload: secrets redacted, then cut to a size limit.

The order is the point: a secret cut in half (a PEM key whose ``BEGIN`` line falls
outside the part kept) no longer looks like one, so every string is redacted whole
before any cut. Callers that cut text themselves before it gets here must do the same:
``heron.redact.redact_then_cut``.
"""

from __future__ import annotations

import json
from typing import Any

from heron.redact import redact_value

#: Cut strings keep their head and tail: a command's first lines say what ran, its last
#: lines usually say why it failed.
MARK = "\n... [{} bytes cut] ...\n"


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8"))


def prepare(payload: dict[str, Any], max_bytes: int) -> dict[str, Any]:
    """``payload`` redacted (``heron.redact``) and at most ``max_bytes`` as JSON.

    The longest string is cut in its middle until the payload fits; a payload that still
    does not fit (many small fields) becomes ``{"truncated": true, "preview": ...}``.
    """
    clean = redact_value(payload)
    for _ in range(16):
        over = _size(clean) - max_bytes
        if over <= 0:
            return clean
        path, text = _longest(clean)
        if path is None or len(text) < 64:
            break
        # ``over`` counts JSON bytes (escapes, UTF-8); scale it to characters of this text.
        chars_per_byte = len(text) / _size(text)
        keep = max(0, int((_size(text) - over - len(MARK) - 16) * chars_per_byte))
        cut = text[: keep // 2] + MARK.format(len(text) - keep) + text[len(text) - keep // 2 :]
        _put(clean, path, cut)
    preview = json.dumps(clean, ensure_ascii=False)[: max(0, max_bytes - 64)]
    return {"truncated": True, "preview": preview}


def _longest(value: Any, path: tuple[Any, ...] = ()) -> tuple[tuple[Any, ...] | None, str]:
    best: tuple[tuple[Any, ...] | None, str] = (None, "")
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in items:
        found = ((*path, key), item) if isinstance(item, str) else (None, "")
        if isinstance(item, dict | list):
            found = _longest(item, (*path, key))
        if len(found[1]) > len(best[1]):
            best = found
    return best


def _put(value: Any, path: tuple[Any, ...], new: str) -> None:
    for key in path[:-1]:
        value = value[key]
    value[path[-1]] = new
