"""The hooks every server feature module exports, and the list ``heron.server.app`` builds
the app from (as Datasette's ``hookspecs.py`` names its plugin hooks in one place).

A feature module (``heron.server.features.methods``, ``jobs``, ``openai``, ``mcp``, ...) defines
all three; one it does not need is the no-op of this module, so the app treats every
feature the same way and a reader sees at once what each adds:

- ``register(registry, runtime)``: its JSON-RPC methods, each declared beside its
  function with ``@registry.method(...)`` (``heron.server.doors.rpc``);
- ``routes(runtime) -> list[BaseRoute]``: its HTTP routes; their endpoints reach the
  runtime through this argument, never through ``request.app.state``
  (``Route(path, endpoint(handler, runtime))`` for a ``handler(runtime, request)``);
- ``lifespan(runtime)``: an async context manager the server runs from startup to
  shutdown (workers, watchers; a feature's own resources closed on the way out).

A feature with methods only ends with ``routes = no_routes`` and ``lifespan = no_lifespan``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute

from heron.server.doors.rpc import Registry
from heron.server.runtime import Runtime


class Feature(Protocol):
    """What ``heron.server.app.FEATURES`` lists: a module with the three hooks."""

    def register(self, registry: Registry, runtime: Runtime) -> None: ...

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


def no_methods(registry: Registry, runtime: Runtime) -> None:
    """The ``register`` hook of a feature without JSON-RPC methods."""


def no_routes(runtime: Runtime) -> list[BaseRoute]:
    """The ``routes`` hook of a feature without HTTP routes of its own."""
    return []


@asynccontextmanager
async def no_lifespan(runtime: Runtime) -> AsyncIterator[None]:
    """The ``lifespan`` hook of a feature that runs nothing while the server runs."""
    yield
