"""``heron serve`` (HTTP: JSON-RPC, OpenAI, MCP, SSE) and ``heron mcp`` (MCP on stdio)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from heron.cli.settings import command_settings


def serve(
    host: Annotated[
        str | None, typer.Option(help="Address to bind; default 127.0.0.1 (HERON_SERVER_HOST).")
    ] = None,
    port: Annotated[
        int | None, typer.Option(help="Port; default 8765 (HERON_SERVER_PORT).")
    ] = None,
    uds: Annotated[Path | None, typer.Option(help="Listen on this Unix socket instead.")] = None,
    uds_mode: Annotated[
        str,
        typer.Option(
            help="Permissions of the --uds socket, in octal: 600 (default) lets only this "
            "user connect, 660 its group too."
        ),
    ] = "600",
    log_level: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info",
) -> None:
    """Serve Heron over HTTP: the web page at /, /rpc, /v1 (OpenAI), /mcp, SSE, /metrics.

    Off loopback it refuses to start without HERON_API_TOKEN (at least 32 characters:
    make one with heron token), sent as a Bearer token.

    Host names served: loopback, the bound address and HERON_SERVER_ALLOWED_HOSTS.

    Web pages from other origins are refused unless in HERON_SERVER_ALLOWED_ORIGINS.

    A --uds socket is made mode 600 (only this user) unless --uds-mode says otherwise.

    Example: heron serve --port 8765
    """
    from heron.server import serve as run

    try:
        mode = int(uds_mode, 8)
    except ValueError:
        mode = -1
    if not 0 <= mode <= 0o777:
        raise typer.BadParameter(
            f"{uds_mode!r} is not a file mode; give octal digits like 600 or 660.",
            param_hint="--uds-mode",
        )
    run(command_settings(), host=host, port=port, uds=uds, uds_mode=mode, log_level=log_level)


def mcp() -> None:
    """Serve Heron over MCP on stdin/stdout, for Claude Desktop or Cursor.

    Search, skills, ask, jobs, and find_tools and call_tool for every tool Heron routes.

    Example: heron mcp
    """
    from heron.server.app import rpc_registry
    from heron.server.doors.mcp import serve_stdio
    from heron.server.runtime import Runtime

    with Runtime(command_settings()) as runtime:
        rpc_registry(runtime)  # the methods MCP offers as tools (agent.chat, jobs.*, ...)
        serve_stdio(runtime)


def token() -> None:
    """Print a new random token for HERON_API_TOKEN (32 bytes, URL-safe).

    Example: export HERON_API_TOKEN=$(heron token)
    """
    import secrets

    print(secrets.token_urlsafe(32))


def register_server(app: typer.Typer) -> None:
    """Add ``serve``, ``mcp`` and ``token`` to the ``heron`` command."""
    app.command("serve")(serve)
    app.command("mcp")(mcp)
    app.command("token")(token)
