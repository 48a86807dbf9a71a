"""MCP servers as tool sources, through the official ``mcp`` SDK (2.x).

Configuration is the ``mcp.json`` that Claude Desktop and Cursor read::

    {"mcpServers": {
        "osis":  {"command": "uvx", "args": ["osis-mcp"], "env": {"TOKEN": "${OSIS_TOKEN}"}},
        "notes": {"url": "http://127.0.0.1:8931/mcp", "timeout": 10}}}

``command``/``args``/``env``/``cwd`` start a stdio server; ``url`` (with optional
``headers``) reaches a streamable-HTTP one. Every string may use ``${VAR}`` and
``${VAR:-default}``. ``timeout`` (seconds) bounds each whole operation on that server.

Each operation opens its own session (spawn or connect, initialize, work, close). That
costs a start-up per call, and buys the behaviour wanted of a flaky server: a server
that hangs, crashes or speaks garbage fails that one operation with ``ServerError``,
and the next use simply connects again.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio

from heron.tools.errors import ServerError, ToolCallError, ToolInputError
from heron.tools.model import Tool, parse_tool
from heron.tools.registry import ToolRegistry

DEFAULT_TIMEOUT = 30.0
#: A server that keeps returning cursors is cut off after this many pages.
MAX_PAGES = 100
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(frozen=True)
class ServerConfig:
    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT

    @property
    def transport(self) -> str:
        return "stdio" if self.command else "streamable-http"

    def describe(self) -> str:
        return " ".join([self.command or "", *self.args]) if self.command else str(self.url)


@dataclass(frozen=True)
class ServerStatus:
    """What happened when a server's tools were listed: ``error`` is ``None`` on success."""

    name: str
    transport: str
    tools: int
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "transport": self.transport,
            "tools": self.tools,
            "error": self.error,
        }


def expand(value: str, environ: Mapping[str, str]) -> str:
    """``${VAR}`` and ``${VAR:-default}`` from ``environ``.

    >>> expand("${HOST:-127.0.0.1}:${PORT}", {"PORT": "8931"})
    '127.0.0.1:8931'
    """

    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in environ and (environ[name] or default is None):
            return environ[name]
        if default is not None:
            return default
        raise ToolInputError(
            f"${{{name}}} is not set; export {name}, or write ${{{name}:-default}} in mcp.json."
        )

    return _VAR.sub(one, value)


def parse_config(
    document: Any, environ: Mapping[str, str] | None = None, *, timeout: float = DEFAULT_TIMEOUT
) -> list[ServerConfig]:
    """``{"mcpServers": {name: {...}}}`` -> one ``ServerConfig`` per server."""
    env = os.environ if environ is None else environ
    servers = document.get("mcpServers") if isinstance(document, Mapping) else None
    if not isinstance(servers, Mapping):
        raise ToolInputError(
            'An MCP config needs {"mcpServers": {"name": {"command": ...} or {"url": ...}}}.'
        )
    out = []
    for name, spec in servers.items():
        if not isinstance(spec, Mapping) or not (spec.get("command") or spec.get("url")):
            raise ToolInputError(
                f"MCP server {name!r} needs 'command' (stdio) or 'url' (streamable HTTP)."
            )
        out.append(
            ServerConfig(
                name=str(name),
                command=expand(spec["command"], env) if spec.get("command") else None,
                args=tuple(expand(str(a), env) for a in spec.get("args", ())),
                env={str(k): expand(str(v), env) for k, v in (spec.get("env") or {}).items()},
                cwd=expand(spec["cwd"], env) if spec.get("cwd") else None,
                url=expand(spec["url"], env) if spec.get("url") else None,
                headers={
                    str(k): expand(str(v), env) for k, v in (spec.get("headers") or {}).items()
                },
                timeout=float(spec.get("timeout", timeout)),
            )
        )
    return out


def load_config(
    path: Path, environ: Mapping[str, str] | None = None, *, timeout: float = DEFAULT_TIMEOUT
) -> list[ServerConfig]:
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ToolInputError(
            f"No MCP config at {path}; write one in the Claude Desktop format "
            '({"mcpServers": {...}}) or give another path.'
        ) from None
    except (OSError, json.JSONDecodeError) as exc:
        raise ToolInputError(f"Cannot read the MCP config {path}: {exc}") from exc
    return parse_config(document, environ, timeout=timeout)


class MCPClient:
    """Lists and calls the tools of the configured servers; see the module docstring."""

    def __init__(self, servers: list[ServerConfig], *, errlog: TextIO | None = None) -> None:
        self.servers = {s.name: s for s in servers}
        self.errlog = errlog or sys.stderr

    def server(self, name: str) -> ServerConfig:
        try:
            return self.servers[name]
        except KeyError:
            known = ", ".join(self.servers) or "none configured"
            raise ToolInputError(f"No MCP server {name!r}. Known: {known}.") from None

    @asynccontextmanager
    async def _session(self, config: ServerConfig) -> AsyncIterator[Any]:
        from mcp.client.session import ClientSession

        if config.command:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            params = StdioServerParameters(
                command=config.command, args=list(config.args), env=config.env, cwd=config.cwd
            )
            transport = stdio_client(params, errlog=self.errlog)
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            http = httpx2.AsyncClient(headers=config.headers, timeout=config.timeout)
            transport = streamable_http_client(str(config.url), http_client=http)
        async with transport as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session

    async def _guarded(self, config: ServerConfig, what: str, work: Any) -> Any:
        """Run ``work(session)`` within the server's timeout, its failures as ``ServerError``."""
        try:
            with anyio.fail_after(config.timeout):
                async with self._session(config) as session:
                    return await work(session)
        except (ToolCallError, ToolInputError):
            raise
        except TimeoutError:
            raise ServerError(
                f"MCP server {config.name!r} did not {what} within {config.timeout:g} s; "
                f"check that it runs ({config.describe()}) or raise its 'timeout'."
            ) from None
        except Exception as exc:
            raise ServerError(
                f"MCP server {config.name!r} failed to {what}: {_reason(exc)}. "
                f"Check that it runs: {config.describe()}"
            ) from exc

    async def alist_tools(self, name: str) -> list[Tool]:
        """Every tool of server ``name``, following ``nextCursor`` pages."""
        from mcp.types import PaginatedRequestParams

        config = self.server(name)

        async def work(session: Any) -> list[Tool]:
            tools: list[Tool] = []
            cursor = None
            for _ in range(MAX_PAGES):
                params = PaginatedRequestParams(cursor=cursor) if cursor else None
                result = await session.list_tools(params=params)
                for tool in result.tools:
                    data = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
                    tools.append(parse_tool(data, f"mcp:{name}"))
                cursor = result.next_cursor
                if not cursor:
                    break
            return tools

        return await self._guarded(config, "list its tools", work)

    async def acall_tool(self, name: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call ``tool`` on server ``name``; a result flagged ``isError`` raises
        ``ToolCallError`` with the server's message."""
        config = self.server(name)

        async def work(session: Any) -> dict[str, Any]:
            return _result(await session.call_tool(tool, arguments))

        result = await self._guarded(config, f"run {tool!r}", work)
        if result.get("isError"):
            text = " ".join(c.get("text", "") for c in result.get("content", []))
            raise ToolCallError(f"{tool!r} on MCP server {name!r} failed: {text or 'no message'}")
        return result

    async def adiscover(self, registry: ToolRegistry) -> list[ServerStatus]:
        """List every server's tools into ``registry``; a failing server is reported in its
        status and skipped, its old tools removed."""
        statuses = []
        for name, config in self.servers.items():
            try:
                tools = await self.alist_tools(name)
            except ServerError as exc:
                registry.remove_source(f"mcp:{name}")
                statuses.append(ServerStatus(name, config.transport, 0, str(exc)))
                continue
            registry.remove_source(f"mcp:{name}")
            for tool in tools:
                registry.add(tool, self._handler(name, tool.name))
            statuses.append(ServerStatus(name, config.transport, len(tools)))
        return statuses

    def _handler(self, server: str, tool: str) -> Any:
        return lambda arguments: self.call_tool(server, tool, arguments)

    # Blocking forms for scripts and the CLI; from async code use the a* methods.
    def list_tools(self, name: str) -> list[Tool]:
        return anyio.run(self.alist_tools, name)

    def call_tool(self, name: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return anyio.run(self.acall_tool, name, tool, arguments)

    def discover(self, registry: ToolRegistry) -> list[ServerStatus]:
        return anyio.run(self.adiscover, registry)


def _result(result: Any) -> dict[str, Any]:
    data = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return {k: v for k, v in data.items() if k in ("content", "structuredContent", "isError")}


def _reason(exc: BaseException) -> str:
    """The innermost message of an exception (group), for one readable line."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
