"""``create_app()``: the ASGI app, and ``serve()``: run it under uvicorn.

Routes: ``POST /rpc`` (JSON-RPC 2.0), ``/v1/*`` (OpenAI), ``/chat/stream`` (SSE),
``/mcp`` (MCP streamable HTTP), ``/health``, ``/ready``, ``/metrics``, and whatever
``heron.server.jobs`` adds. One ``Runtime`` holds what requests share; it opens at
startup and closes at shutdown, after in-flight requests and streams have finished.
"""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from heron.errors import ConfigError
from heron.server import jobs, methods, openai, ops, sse
from heron.server.mcp import build_server, http_routes
from heron.server.middleware import RequestMiddleware
from heron.server.rpc import INVALID_REQUEST, Registry, RpcError, dispatch, encode
from heron.server.runtime import Runtime
from heron.settings import Settings

#: Seconds shutdown waits for in-flight requests before closing them.
GRACE = 30
#: Largest JSON-RPC body read, in bytes; a bigger one is refused before it is read.
MAX_BODY = 8 * 1024 * 1024


def create_app(
    settings: Settings | None = None, *, runtime: Runtime | None = None, host: str | None = None
) -> Starlette:
    """The server; ``host`` is the address it will be bound to (MCP's DNS-rebinding
    protection is on for loopback)."""
    rt = runtime or Runtime(settings)
    registry = Registry(observer=lambda name, s, ok: rt.metrics.observe("rpc", name, s, ok=ok))
    methods.register(registry, rt)
    jobs.register(registry, rt)
    mcp_server = build_server(rt)
    streams = sse.StreamHub(rt.settings.server_stream_ttl)

    async def rpc(request: Request) -> Response:
        if int(request.headers.get("content-length") or 0) > MAX_BODY:
            error = RpcError(INVALID_REQUEST, f"The body is over {MAX_BODY} bytes; send less.")
            return Response(encode(error.answer(None)), media_type="application/json")
        answer = await dispatch(registry, await request.body())
        if answer is None:  # notifications only: nothing to answer
            return Response(status_code=204)
        return Response(encode(answer), media_type="application/json")

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await run_in_threadpool(rt.start)
        try:
            async with mcp_server.session_manager.run(), jobs.lifespan(rt):
                yield
                await streams.close()
        finally:
            await run_in_threadpool(rt.close)

    token = api_token(rt.settings)
    app = Starlette(
        routes=[
            Route("/rpc", rpc, methods=["POST"]),
            *ops.routes,
            *openai.routes,
            *sse.routes,
            *http_routes(mcp_server, host or rt.settings.server_host),
            *jobs.routes(rt),
        ],
        middleware=[Middleware(RequestMiddleware, token=token, metrics=rt.metrics)],
        lifespan=lifespan,
    )
    app.state.runtime = rt
    app.state.registry = registry
    app.state.streams = streams
    return app


def api_token(settings: Settings) -> str | None:
    """The bearer token, ``None`` when unset or blank (a blank one must not pass as set)."""
    secret = settings.api_token
    return (secret.get_secret_value().strip() or None) if secret else None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False


def check_bind(host: str, uds: Path | None, settings: Settings) -> None:
    """Refuse to listen off loopback without a token: the API reads and runs things."""
    if uds is None and not is_loopback(host) and api_token(settings) is None:
        raise ConfigError(
            f"Refusing to listen on {host} without a token: anyone who can reach it could "
            "use Heron. Set HERON_API_TOKEN (e.g. export HERON_API_TOKEN=$(openssl rand -hex "
            "32)) and send it as 'Authorization: Bearer ...', or bind --host 127.0.0.1."
        )


def serve(
    settings: Settings | None = None,
    *,
    host: str | None = None,
    port: int | None = None,
    uds: Path | None = None,
    log_level: str = "info",
) -> None:
    """Run the server until SIGINT/SIGTERM, then finish in-flight requests (``GRACE``)."""
    import uvicorn

    from heron.server import logs

    settings = settings or Settings()
    host = host or settings.server_host
    check_bind(host, uds, settings)
    logs.configure(log_level)
    config = uvicorn.Config(
        create_app(settings, host=host),
        host=host,
        port=settings.server_port if port is None else port,
        uds=str(uds) if uds else None,
        lifespan="on",
        log_config=None,
        access_log=False,  # RequestMiddleware logs each request, with its id
        timeout_graceful_shutdown=GRACE,
        log_level=log_level,
    )
    uvicorn.Server(config).run()
