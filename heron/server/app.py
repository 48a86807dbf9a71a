"""``create_app()``: the ASGI app, and ``serve()``: run it under uvicorn.

The app is ``POST /rpc`` (JSON-RPC 2.0) and what each module of ``FEATURES`` (the doors
and the features, ``heron.server``) adds through its hooks (``heron.server.hooks``): its
JSON-RPC methods (gathered into one registry, ``rpc_registry``), its routes (``/v1/*``,
``/chat/stream``, ``/mcp``, ``/health``, ``/ready``, ``/metrics``, ``/doctor``, the jobs'
and interventions' streams, the web page; docs/server.md lists all) and what it runs while
the server runs. One ``Runtime`` holds what requests share; it opens at startup and
closes at shutdown, after in-flight requests and streams have finished.
"""

from __future__ import annotations

import logging
import os
import socket
import stat
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from heron.agent.sessions import use_asker
from heron.errors import ConfigError
from heron.server.doors import audio, embeddings, mcp, openai, sse
from heron.server.doors.rpc import REGISTRY, Registry, dispatch, encode, status_of
from heron.server.features import (
    conversations,
    explain,
    interventions,
    jobs,
    keys,
    local,
    methods,
    ops,
    reload,
    uploads,
)
from heron.server.features.keys import KeyMiddleware, keyring, rpc_gate
from heron.server.hooks import Feature
from heron.server.http.auth import guard
from heron.server.http.bodies import UPLOAD_FRAMING, UPLOADS, BodyMiddleware
from heron.server.http.contexts import ContextMiddleware, runtime_of
from heron.server.http.middleware import RequestMiddleware, TokenMiddleware
from heron.server.http.origins import (
    Allowlist,
    HostOriginMiddleware,
    browser_origin,
    is_loopback,
    normal_name,
)
from heron.server.http.replies import for_path
from heron.server.runtime import Runtime
from heron.server.web import pages
from heron.settings import Settings

log = logging.getLogger("heron.server")

#: Every feature of the server, each a module with the three hooks. Their lifespans run
#: in this order and end in the reverse one: the SSE streams (answers still running)
#: finish first, then the reloader, the interventions' watchers, the job workers, MCP.
FEATURES: tuple[Feature, ...] = (
    methods,
    local,
    keys,
    conversations,
    explain,
    ops,
    openai,
    embeddings,
    audio,
    mcp,
    jobs,
    interventions,
    reload,
    sse,
    uploads,
    pages,  # the page at / (heron.server.web)
)
#: Seconds shutdown waits for in-flight requests before closing them.
GRACE = 30
#: Connections a Unix socket queues before the server accepts them (uvicorn's default).
BACKLOG = 2048
#: Request headers a listed origin's page may send (``HERON_SERVER_ALLOWED_ORIGINS``).
CORS_HEADERS = ["authorization", "content-type", "last-event-id", "x-request-id",
                "mcp-session-id", "mcp-protocol-version", "x-heron-context"]  # fmt: skip


def rpc_registry(rt: Runtime) -> Registry:
    """Every feature's JSON-RPC methods (its ``rpc``), in ``FEATURES``' order, on ``rt``:
    what ``/rpc`` answers, and what the MCP server offers of them (``heron mcp`` builds it
    without an app). Made once and kept in ``rt`` (``REGISTRY``), where the MCP door
    finds it."""

    def build() -> Registry:
        # The agent saves and continues sessions without a request at hand: it asks the
        # request's caller, as the conversations' methods see it.
        use_asker(conversations.asker)
        registry = Registry(
            runtime=rt,
            observer=lambda name, s, ok: rt.metrics.observe("rpc", name, s, ok=ok),
            gate=rpc_gate,
        )
        registry.add(*(method for feature in FEATURES for method in feature.rpc))
        return registry

    return rt.shared(REGISTRY, build)


def create_app(
    settings: Settings,
    *,
    runtime: Runtime | None = None,
    host: str | None = None,
    unix_socket: bool = False,
) -> Starlette:
    """The server. ``host`` is the address it will be bound to (a Host header naming it
    is served); ``unix_socket`` when it listens on one, where no Host is checked (see
    ``heron.server.http.origins``)."""
    rt = runtime or Runtime(settings)
    registry = rpc_registry(rt)
    max_batch = rt.settings.server.max_batch

    async def rpc(request: Request) -> Response:
        body = await request.body()
        answer = await dispatch(
            registry, body, max_batch=max_batch, runtime=runtime_of(rt, request)
        )
        if answer is None:  # notifications only: nothing to answer
            return Response(status_code=204)
        status, headers = status_of(answer)
        return Response(
            encode(answer), status_code=status, headers=headers, media_type="application/json"
        )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await run_in_threadpool(rt.start)
        try:
            async with AsyncExitStack() as running:
                for feature in FEATURES:
                    await running.enter_async_context(feature.lifespan(rt))
                yield
        finally:
            await run_in_threadpool(rt.close)

    app = Starlette(
        routes=[
            Route("/rpc", rpc, methods=["POST"]),
            *(route for feature in FEATURES for route in feature.routes(rt)),
        ],
        middleware=edge(rt, host or rt.settings.server.host, unix_socket=unix_socket),
        exception_handlers={HTTPException: http_error, Exception: internal_error},
        lifespan=lifespan,
    )
    app.state.runtime = rt
    app.state.registry = registry
    return app


def edge(rt: Runtime, host: str, *, unix_socket: bool) -> list[Middleware]:
    """What every request passes before its route, outermost first (the order is
    explained in ``heron.server.http.middleware``). Raises ``ConfigError`` for a bad entry in
    the allowed hosts or origins."""
    settings = rt.settings
    allow = Allowlist.build(
        host,
        settings.server.allowed_hosts,
        settings.server.allowed_origins,
        check_host=not unix_socket,
        same_site=settings.server.allow_same_site,
    )
    cors = [
        Middleware(
            CORSMiddleware,
            allow_origins=sorted(browser_origin(key) for key in allow.origins),
            allow_methods=["GET", "POST"],
            allow_headers=CORS_HEADERS,
            expose_headers=["x-request-id", "mcp-session-id"],
        )
    ]
    return [
        Middleware(RequestMiddleware, metrics=rt.metrics),
        Middleware(HostOriginMiddleware, allow=allow),
        *(cors if allow.origins else []),  # none listed (the default): no CORS header, ever
        Middleware(TokenMiddleware, guard=guard(rt)),
        Middleware(KeyMiddleware, ring=keyring(rt), token=settings.server.bearer_token),
        Middleware(ContextMiddleware, settings=settings),  # after the key: it may bind one
        Middleware(
            BodyMiddleware,
            max_body=settings.server.max_body,
            # A file upload's body: its files, and room for the multipart framing.
            larger={
                UPLOADS: (
                    settings.library.upload_max_bytes + UPLOAD_FRAMING,
                    "HERON_LIBRARY_UPLOAD_MAX_BYTES",
                )
            },
        ),
    ]


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's 404 and 405 (and any ``HTTPException``), as JSON."""
    assert isinstance(exc, HTTPException)
    message = f"{exc.detail}: {request.method} {request.url.path}."
    allow = {k.lower(): v for k, v in (exc.headers or {}).items()}.get("allow")
    if exc.status_code == 405 and allow:
        message += f" This route takes {allow}."
    kind = str(exc.detail).lower().replace(" ", "_")
    return for_path(request.url.path, exc.status_code, message, kind, headers=exc.headers)


async def internal_error(request: Request, exc: Exception) -> Response:
    """A bug's answer: JSON naming no internals (the traceback goes to the log)."""
    message = "The server failed on this request; the error is in its log."
    return for_path(request.url.path, 500, message, "server_error")


def check_bind(host: str, uds: Path | None, settings: Settings) -> None:
    """Refuse to listen off loopback without a token: the API reads and runs things."""
    if uds is None and not is_loopback(normal_name(host)) and settings.server.bearer_token is None:
        raise ConfigError(
            f"Refusing to listen on {host} without a token: anyone who can reach it could "
            "use Heron. Set HERON_API_TOKEN (e.g. export HERON_API_TOKEN=$(openssl rand -hex "
            "32)) and send it as 'Authorization: Bearer ...', or bind --host 127.0.0.1."
        )


def unix_socket(path: Path, mode: int = 0o600) -> socket.socket:
    """A socket bound at ``path`` with permissions ``mode``, for uvicorn's ``sockets=``.

    It is born private: bound under umask 0o177, so it is 0600 from its first instant and
    no other user can connect before the chmod to ``mode`` (uvicorn's own ``--uds`` makes
    it 0666). The umask is process-wide; this runs before the server starts any thread."""
    _clear_stale(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(str(path))
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"Cannot listen on {path}: {exc.strerror}. Choose a --uds path in a folder you "
            "can write."
        ) from exc
    finally:
        os.umask(old)
    os.chmod(path, mode)
    # Listening now, not when uvicorn has started the app: a client that sees the path
    # waits in the backlog instead of being refused.
    sock.listen(BACKLOG)
    return sock


def _clear_stale(path: Path) -> None:
    """Remove a socket a dead server left at ``path``; refuse anything else there."""
    try:
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            raise ConfigError(f"{path} exists and is not a socket; choose another --uds path.")
    except FileNotFoundError:
        return
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except ConnectionRefusedError:  # nobody listens: a leftover
        path.unlink()
        return
    except OSError as exc:
        raise ConfigError(f"Cannot use {path}: {exc.strerror}.") from exc
    finally:
        probe.close()
    raise ConfigError(f"Another server listens on {path}; stop it or choose another --uds path.")


def serve(
    settings: Settings,
    *,
    host: str | None = None,
    port: int | None = None,
    uds: Path | None = None,
    uds_mode: int = 0o600,
    log_level: str = "info",
) -> None:
    """Run the server until SIGINT/SIGTERM, then finish in-flight requests (``GRACE``).
    On ``uds`` the socket gets ``uds_mode`` (default 0600: only this user may connect)."""
    import uvicorn

    from heron.server.http import logs

    host = host or settings.server.host
    check_bind(host, uds, settings)
    logs.configure(log_level)
    runtime = Runtime(settings)
    # Opened before uvicorn takes over, so a damaged store or a bad model ends here as one
    # clear error from the CLI, not as a traceback uvicorn logs from the app's startup.
    try:
        runtime.start()
    except BaseException:
        runtime.close()
        raise
    config = uvicorn.Config(
        create_app(settings, runtime=runtime, host=host, unix_socket=uds is not None),
        host=host,
        port=settings.server.port if port is None else port,
        lifespan="on",
        log_config=None,
        access_log=False,  # RequestMiddleware logs each request, with its id
        timeout_graceful_shutdown=GRACE,
        log_level=log_level,
    )
    server = uvicorn.Server(config)
    # heron search and heron ask in a shell of this home send their work here.
    announced = local.announce(runtime, host=host, port=config.port, uds=uds)
    if uds is None:
        with announced:
            server.run()
        return
    # The socket file stays after shutdown (uvicorn ends by re-raising the signal that
    # stopped it); the next start finds nobody listening there and replaces it.
    sock = unix_socket(Path(uds), uds_mode)
    log.info("listening on unix socket %s (mode %s)", uds, oct(uds_mode)[2:])
    with sock, announced:
        server.run(sockets=[sock])
