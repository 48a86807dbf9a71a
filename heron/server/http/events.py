"""Server-Sent Events, framed one way for every stream: ``/chat/stream``,
``/v1/chat/completions`` with ``stream: true``, ``/jobs/{id}/events/stream`` and
``/interventions/stream`` answer with sse-starlette's ``EventSourceResponse``. Each one:

- sends a comment line (``: keep-alive``) every ``server_sse_ping`` seconds
  (``HERON_SERVER_SSE_PING``, default 15) so that a proxy does not close a quiet stream;
- carries ``X-Accel-Buffering: no`` (nginx passes each event on at once, unbuffered) and
  ``Cache-Control: no-store``;
- stops its work when the client goes: sse-starlette cancels the generator on the
  disconnect, and ``in_thread`` then closes the agent's (or any blocking) iterator it read,
  so the model stops at the next token.

Lines end in ``\\n`` (the web page's reader, ``heron.js``, splits events at ``\\n\\n``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any, TypeVar

import anyio
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool

from heron.server.http.strictjson import dumps
from heron.settings import Settings

SEP = "\n"
T = TypeVar("T")


def message(data: Any, *, event: str | None = None, id: str | int | None = None) -> ServerSentEvent:
    """One event: ``data`` as strict JSON, or a string as it is (OpenAI's ``[DONE]``)."""
    text = data if isinstance(data, str) else dumps(data)
    return ServerSentEvent(text, event=event, id=None if id is None else str(id), sep=SEP)


def _keep_alive() -> ServerSentEvent:
    return ServerSentEvent(comment="keep-alive", sep=SEP)


#: How long an answer being streamed may go on once the server is told to stop: under
#: the server's own graceful shutdown (``heron.server.app.GRACE``, 30 s), so a running
#: answer finishes. sse-starlette's default, 0, cut it at the signal.
ANSWER_GRACE = 25.0


def event_stream(
    events: AsyncIterator[ServerSentEvent], settings: Settings, *, answer: bool = False
) -> EventSourceResponse:
    """``events`` as a ``text/event-stream`` response (see the module). ``answer``: a
    stream that ends by itself (an answer being written), which a shutdown lets finish
    for ``ANSWER_GRACE``; the endless ones (jobs, interventions) end at the signal."""
    return EventSourceResponse(
        events,
        ping=settings.server.sse_ping,
        sep=SEP,
        ping_message_factory=_keep_alive,
        shutdown_grace_period=ANSWER_GRACE if answer else 0,
    )


async def in_thread(items: Iterator[T]) -> AsyncIterator[T]:
    """``items``, each taken in a worker thread (the agent blocks on its model). When the
    reader stops early (a client that left, cancelling it), ``items`` is closed: a
    generator's ``close`` ends the agent's stream, and with it the model's."""
    try:
        async for item in iterate_in_threadpool(items):
            yield item
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            # Shielded: on a disconnect this runs inside the cancelled response, and the
            # close must still happen. The thread that took the last item has returned
            # (anyio waits for it before cancelling), so the generator is not running.
            with anyio.CancelScope(shield=True):
                await run_in_threadpool(close)
