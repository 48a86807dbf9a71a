"""``Caller``: the conversation a tool call is made in, for the tools that record it.

The agent sets it around each tool call it runs (``heron.agent.execute``, on the worker
thread that runs the call); a tool reads it with ``current_caller()``. ``delegate_job``
(``heron.jobs.tool``) records the session and the room a job was delegated from, so its
events reach that conversation. A call made outside a conversation (JSON-RPC
``tools.call``, MCP) sees ``None``.

>>> with calling(Caller(session_id="s1", user="ana")):
...     current_caller().session_id
's1'
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class Caller:
    """``session_id``: the agent's conversation; ``user``: who asks (``""``: nobody in
    particular); ``room``: who shares the conversation (``""``: the default room);
    ``confirm_risky``: the turn may not run programs unasked (its tool ceiling is below
    ``execute``; it delegates by the delegation permission alone), so a job it hands on
    that may write waits for a person's confirmation."""

    session_id: str = ""
    user: str = ""
    room: str = ""
    confirm_risky: bool = False


_CALLER: ContextVar[Caller | None] = ContextVar("heron_caller", default=None)


def current_caller() -> Caller | None:
    return _CALLER.get()


@contextmanager
def calling(caller: Caller | None) -> Iterator[None]:
    """``caller`` is the current caller inside the block (on this thread, in this context)."""
    token = _CALLER.set(caller)
    try:
        yield
    finally:
        _CALLER.reset(token)
