"""Work that stops when whoever asked for it has gone.

The server runs a request's work in a worker thread under ``stopping(event)`` and sets
``event`` when the client disconnects (``heron.server.http.gone``); the long loops of that
work (the agent's model calls, token by token; an embeddings request, batch by batch)
call ``check_gone`` and raise ``Gone`` once it is set, so the model stops at its next
token rather than writing an answer nobody reads. Outside ``stopping`` (the CLI, a
library caller) ``check_gone`` does nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from heron.errors import HeronError

_stop: ContextVar[threading.Event | None] = ContextVar("heron_stop", default=None)


class Gone(HeronError):
    """The client went away; its work stopped and nobody reads the answer."""


@contextmanager
def stopping(event: threading.Event) -> Iterator[None]:
    """Within the block, ``check_gone`` raises once ``event`` is set."""
    token = _stop.set(event)
    try:
        yield
    finally:
        _stop.reset(token)


def check_gone() -> None:
    """``Gone`` if the work's client has left (see the module)."""
    event = _stop.get()
    if event is not None and event.is_set():
        raise Gone("The client went away before the answer was ready; the work stopped.")
