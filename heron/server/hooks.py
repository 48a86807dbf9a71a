"""The hooks every server feature module exports, and the list ``heron.server.app`` builds
the app from (as Datasette's ``hookspecs.py`` names its plugin hooks in one place).

A feature module (``heron.server.features.methods``, ``jobs``, the doors ``openai``,
``mcp``, ...) defines all three; one it does not need is the no-op of this module, so the
app treats every feature the same way and a reader sees at once what each adds:

- ``rpc``: its JSON-RPC methods, a ``Methods`` (``heron.server.doors.rpc``), each
  declared beside its function with ``@rpc.method(...)``, and offered as an MCP tool
  where it names one (``tool=McpTool(...)``);
- ``routes(runtime) -> list[BaseRoute]``: its HTTP routes; their endpoints reach the
  runtime through this argument, never through ``request.app.state``
  (``Route(path, endpoint(handler, runtime))`` for a ``handler(runtime, request)``);
- ``lifespan(runtime)``: an async context manager the server runs from startup to
  shutdown (workers, watchers; a feature's own resources closed on the way out).

A feature with methods only ends with ``routes = no_routes`` and ``lifespan = no_lifespan``;
one without methods says ``rpc = NO_METHODS``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute

from heron.server.doors.rpc import Method
from heron.server.runtime import Runtime


class Feature(Protocol):
    """What ``heron.server.app.FEATURES`` lists: a module with the three hooks."""

    rpc: Sequence[Method]

    def routes(self, runtime: Runtime) -> list[BaseRoute]: ...

    def lifespan(self, runtime: Runtime) -> AbstractAsyncContextManager[None]: ...


def endpoint(
    handler: Callable[[Runtime, Request], Awaitable[Response]], runtime: Runtime
) -> Callable[[Request], Awaitable[Response]]:
    """``handler`` with ``runtime`` given: what a ``Route`` takes (a coroutine function
    of the request alone; Starlette treats any other callable as a raw ASGI app)."""

    async def run(request: Request) -> Response:
        return await handler(runtime, request)

    return run


#: The ``rpc`` of a feature without JSON-RPC methods.
NO_METHODS: tuple[Method, ...] = ()


def no_routes(runtime: Runtime) -> list[BaseRoute]:
    """The ``routes`` hook of a feature without HTTP routes of its own."""
    return []


@asynccontextmanager
async def no_lifespan(runtime: Runtime) -> AsyncIterator[None]:
    """The ``lifespan`` hook of a feature that runs nothing while the server runs."""
    yield
