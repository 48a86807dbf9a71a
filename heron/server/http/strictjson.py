"""Strict JSON at the HTTP edge: what the server reads is bounded, what it writes parses.

``loads`` takes JSON only (RFC 8259): no ``NaN``/``Infinity`` (Python's ``json`` takes them
by default), no number that overflows a float (``1e400`` would become ``inf``), no
nesting deeper than ``MAX_DEPTH``; past that it raises ``JsonRefused``, never a
``RecursionError``. ``dumps`` always returns text that a strict parser reads and UTF-8
can carry: a non-finite float becomes ``null`` (as a browser's ``JSON.stringify`` does)
and a lone surrogate is escaped.

>>> loads(b'{"id": NaN}')
Traceback (most recent call last):
heron.server.http.strictjson.JsonRefused: NaN is not JSON; send a finite number or a string.
>>> dumps({"score": float("nan")})
'{"score": null}'
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

log = logging.getLogger("heron.server")

#: Deepest nesting read (``[[1]]`` is 2). JSON-RPC params sit at 2; 64 leaves plenty.
MAX_DEPTH = 64
#: Bodies longer than this are parsed in a worker thread, so that a big one (the 8 MiB
#: limit takes about a second) does not stall every other request on the event loop.
THREAD_ABOVE = 64 * 1024


class JsonRefused(ValueError):
    """The body parses as JSON text but holds what Heron does not take: a non-finite
    number or nesting past ``MAX_DEPTH``. The message says which and what to send."""


def _refuse_constant(name: str) -> Any:
    raise JsonRefused(f"{name} is not JSON; send a finite number or a string.")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonRefused(f"The number {text[:40]} is out of range; send a finite number.")
    return value


def depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deep ``value`` nests (a scalar is 0, ``[]`` is 1), counting no further than
    ``limit + 1``. Level by level, so no depth can exhaust the stack, and in list
    comprehensions, so an 8 MiB body is walked in about the time it took to parse."""
    level = [value] if isinstance(value, dict | list) else []
    deepest = 0
    while level and deepest <= limit:
        deepest += 1
        below: list[Any] = []
        for item in level:
            items = item.values() if isinstance(item, dict) else item
            below += [child for child in items if isinstance(child, dict | list)]
        level = below
    return deepest


def loads(body: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """``body`` parsed. Raises ``JsonRefused`` (see the class) or ``ValueError`` (not JSON
    at all: bad syntax, empty, invalid UTF-8)."""
    try:
        # JSON is UTF-8 (RFC 8259); json.loads would also guess UTF-16 and UTF-32 from bytes.
        text = body.decode() if isinstance(body, bytes) else body
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except RecursionError:  # the C parser's own guard, far past max_depth
        raise JsonRefused(too_deep(max_depth)) from None
    if depth(value, max_depth) > max_depth:
        raise JsonRefused(too_deep(max_depth))
    return value


async def aloads(body: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """``loads``, off the event loop for a big body."""
    if len(body) > THREAD_ABOVE:
        return await run_in_threadpool(loads, body, max_depth=max_depth)
    return loads(body, max_depth=max_depth)


async def read_json(request: Request) -> Any:
    """The request's body through ``loads`` (raises ``ValueError``, see there)."""
    return await aloads(await request.body())


def too_deep(limit: int) -> str:
    return f"The JSON nests deeper than {limit} levels; send flatter data."


def finite(value: Any) -> Any:
    """``value`` with every NaN or infinity replaced by ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite(item) for item in value]
    return value


def dumps(value: Any) -> str:
    """``value`` as strict JSON text (see the module). Raises ``TypeError`` for what JSON
    has no form for (an arbitrary object)."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError:  # a NaN or infinity: JSON cannot spell it, so it is sent as null
        log.warning("a reply held a non-finite number; it was sent as null")
        text = json.dumps(finite(value), ensure_ascii=False, allow_nan=False)
    try:
        text.encode()
    except UnicodeEncodeError:  # a lone surrogate: UTF-8 cannot carry it unescaped
        text = json.dumps(finite(value), allow_nan=False)
    return text


class StrictJSONResponse(JSONResponse):
    """A ``JSONResponse`` whose body is ``dumps``: never invalid JSON, never a 500 for a
    NaN or a lone surrogate in the content."""

    def render(self, content: Any) -> bytes:
        return dumps(content).encode()
