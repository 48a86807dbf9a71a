"""``unless_gone``: a request's blocking work in a worker thread, stopped when its client
disconnects (``heron.core.cancel``). Starlette does not cancel a handler whose client has
left, and a worker thread cannot be cancelled at all: the work is told instead, and
stops at its next ``check_gone``."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

import anyio
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from heron.core.cancel import stopping

T = TypeVar("T")


async def unless_gone(request: Request, work: Callable[[], T]) -> T:
    """``work()`` in a worker thread; raises ``heron.core.cancel.Gone`` (from the work)
    when the client disconnects first. The request's body must have been read."""
    stop = threading.Event()

    def run() -> T:
        with stopping(stop):
            return work()

    async def watch() -> None:
        # With the body read, the next message is the disconnect (or nothing, until
        # the reply is sent and this watch cancelled).
        while (await request.receive())["type"] != "http.disconnect":
            pass
        stop.set()

    failed: BaseException | None = None
    async with anyio.create_task_group() as group:
        group.start_soon(watch)
        try:
            result = await run_in_threadpool(run)
        except Exception as exc:  # raised below, not wrapped in the group's ExceptionGroup
            failed = exc
        group.cancel_scope.cancel()
    if failed is not None:
        raise failed
    return result


def gone() -> Response:
    """What a handler answers a client that has left: nothing reads it; 499 is the
    status proxies (nginx) log such a request with."""
    return Response(status_code=499)
