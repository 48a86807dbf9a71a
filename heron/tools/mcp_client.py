"""MCP servers as tool sources, through the official ``mcp`` SDK (2.x).

Configuration is the ``mcp.json`` that Claude Desktop and Cursor read::

    {"mcpServers": {
        "osis":  {"command": "uvx", "args": ["osis-mcp"], "env": {"TOKEN": "${OSIS_TOKEN}"}},
        "notes": {"url": "http://127.0.0.1:8931/mcp", "timeout": 10}}}

``command``/``args``/``env``/``cwd`` start a stdio server; ``url`` (with optional
``headers``) reaches a streamable-HTTP one, or a legacy HTTP+SSE one (the 2024-11-05
transport: a GET event stream and POSTed messages) with ``"type": "sse"``. ``type`` is
what Claude Code, VS Code and Cline write (``stdio``, ``http``/``streamable-http``/
``streamableHttp``, ``sse``); without it the transport follows from ``command``/``url``.
``"disabled": true`` leaves a server out (checked, never started). ``openrpc`` (a URL
answering ``rpc.discover``, or a file, with ``url`` the endpoint) makes a JSON-RPC
service's methods tools (``heron.tools.openrpc``). Every string may use
``${VAR}`` and ``${VAR:-default}``. ``timeout`` (seconds) bounds each whole operation on
that server.

A client made with ``keep=True`` (the toolbox's: the agent's and the MCP door's calls)
keeps one session per server open, on an event loop of its own in a thread, so a call
costs a round trip, not a server start (2 to 4 s per call for a Python stdio server on
2 cores; see ``tests/server/test_mcp_door.py``); ``close()`` ends the sessions and their
servers. Otherwise each operation opens its own session (spawn or connect, initialize,
work, close), as the doctor's one-off checks do. Either way a flaky server gets the
behaviour wanted of it: a server that hangs, crashes or speaks garbage fails that one
operation with ``ServerError``, its kept session is dropped, and the next use simply
connects again.

A server is not trusted:

- its tools are registered under ``<server>.<tool>`` (``crm.add_contact``;
  ``qualified_name``), so no server can shadow another's tool or a built-in, and a
  name another source already holds is refused, never replaced;
- a tool without annotations is ``execute`` (``heron.core.tools.safety_of``: the MCP
  spec's defaults, destructive and not read-only), so an agent at the default ``read``
  level is not offered it;
- names with control characters or spaces, names over 128 characters, schemas over
  64 KiB and tools past ``MAX_TOOLS`` are refused, descriptions cleaned and cut to
  4 KiB; each is said in the server's ``ServerStatus.warnings``;
- its error messages reach users cleaned, cut to ``MAX_MESSAGE`` and redacted.

A malformed mcp.json is one ``ConfigError`` naming the file, each server and field that
is wrong, and what it must be.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO

import anyio
import anyio.abc
import anyio.from_thread
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from heron.core.errors import ServerError, ToolCallError, ToolInputError
from heron.core.tools import MAX_DESCRIPTION, Tool, check_name, clean_text, parse_tool
from heron.errors import ConfigError
from heron.redact import redact
from heron.resource import Resource
from heron.tools import openrpc
from heron.tools.registry import ToolRegistry

DEFAULT_TIMEOUT = 30.0
#: A server that keeps returning cursors is cut off after this many pages.
MAX_PAGES = 100
#: Tools kept from one server; the rest are reported, not registered. A server is
#: untrusted: ten thousand tools would flood the router's index and every listing.
MAX_TOOLS = 1000
#: The longest error message of a server that is passed on, in characters.
MAX_MESSAGE = 2000
#: Warnings kept per server listing; the rest are counted.
MAX_WARNINGS = 20
#: The largest mcp.json read, in bytes.
MAX_CONFIG_BYTES = 1 << 20
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
#: Server names prefix their tools' names (``crm`` -> ``crm.add_contact``), so a dot in
#: one would let ``a`` + ``b.c`` and ``a.b`` + ``c`` claim the same name.
_SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
EXAMPLE = '{"mcpServers": {"name": {"command": "uvx", "args": ["pkg"]}}}'


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
    #: ``sse`` for a legacy HTTP+SSE server; otherwise what ``command``/``url`` imply.
    legacy_sse: bool = False
    #: An OpenRPC document (a URL serving ``rpc.discover``, or a file): a JSON-RPC
    #: service, not an MCP server (``heron.tools.openrpc``).
    openrpc: str | None = None

    @property
    def transport(self) -> str:
        if self.openrpc:
            return "openrpc"
        if self.command:
            return "stdio"
        return "sse" if self.legacy_sse else "streamable-http"

    def describe(self) -> str:
        """The command line or URL, for messages: credentials in it are masked."""
        text = (
            " ".join([self.command or "", *self.args])
            if self.command
            else str(self.url or self.openrpc)
        )
        return redact(text)


@dataclass(frozen=True)
class ServerStatus:
    """What happened when a server's tools were listed: ``error`` is ``None`` on success;
    ``warnings`` name the tools that were refused or cut, and why."""

    name: str
    transport: str
    tools: int
    error: str | None = None
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "transport": self.transport,
            "tools": self.tools,
            "error": self.error,
            "warnings": list(self.warnings),
        }


def qualified_name(server: str, tool: str) -> str:
    """The name a server's tool is registered under: its server first, so two servers
    (or a server and a built-in) cannot claim the same name. A name that already starts
    with the server's keeps itself.

    >>> qualified_name("crm", "add_contact"), qualified_name("osis", "osis.contact.list")
    ('crm.add_contact', 'osis.contact.list')
    """
    return tool if tool.startswith(f"{server}.") else f"{server}.{tool}"


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


class _ServerSpec(BaseModel):
    """One entry of ``mcpServers``, checked strictly: mcp.json is hand-written, and a
    number where a string belongs is a mistake to name, not to convert. Other keys that
    other clients write (``autoApprove``, ``alwaysAllow``...) are ignored."""

    model_config = ConfigDict(extra="allow", strict=True, allow_inf_nan=False)

    type: Literal["stdio", "http", "streamable-http", "streamableHttp", "sse"] | None = None
    disabled: bool = False

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    timeout: float | None = Field(default=None, gt=0)
    openrpc: str | None = None


#: What each field must be, said as the fix.
_FIELD_FIX = {
    "command": 'a program to start, as a string, e.g. "command": "uvx"',
    "args": 'a list of strings, e.g. "args": ["--port", "8931"]',
    "env": 'an object of strings, e.g. "env": {"TOKEN": "${MY_TOKEN}"}',
    "cwd": 'a folder, as a string, e.g. "cwd": "/srv/crm"',
    "url": 'a URL string, e.g. "url": "http://127.0.0.1:8931/mcp"',
    "headers": 'an object of strings, e.g. "headers": {"Authorization": "Bearer ${TOKEN}"}',
    "timeout": 'a number of seconds above 0, e.g. "timeout": 30',
    "type": '"stdio", "http" (streamable HTTP) or "sse" (the legacy HTTP+SSE transport)',
    "disabled": 'true or false, e.g. "disabled": true',
    "openrpc": "an OpenRPC document: a URL serving rpc.discover, or a file path",
}
_JSON_KINDS = {bool: "true/false", int: "a number", float: "a number", str: "a string",
               list: "a list", dict: "an object", type(None): "null"}  # fmt: skip


def _shown(value: Any) -> str:
    """A value from the file, short and with secrets masked, for a message."""
    kind = _JSON_KINDS.get(type(value), type(value).__name__)
    text = redact(json.dumps(value, ensure_ascii=False, default=str))
    return f"{kind} ({text[:60]}{'...' if len(text) > 60 else ''})"


def _spec_problems(exc: ValidationError) -> list[str]:
    """One problem per field: every wrong value in it, then what the field must be."""
    wrong: dict[str, list[str]] = {}
    for error in exc.errors():
        top = str(error["loc"][0]) if error["loc"] else ""
        where = top + "".join(
            f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"][1:]
        )
        if top in _FIELD_FIX:
            wrong.setdefault(top, []).append(f"'{where}' is {_shown(error['input'])}")
        else:
            wrong.setdefault(top, []).append(f"'{where}': {error['msg']}")
    return [
        ", ".join(found) + (f"; '{top}' must be {_FIELD_FIX[top]}" if top in _FIELD_FIX else "")
        for top, found in wrong.items()
    ]


def parse_config(
    document: Any,
    environ: Mapping[str, str] | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    origin: str = "the MCP config",
) -> list[ServerConfig]:
    """``{"mcpServers": {name: {...}}}`` -> one ``ServerConfig`` per server.

    Every mistake is a ``ConfigError`` naming ``origin`` (the file), the server, the
    field and what it must be; all of a file's mistakes come in one error."""
    env = os.environ if environ is None else environ
    servers = document.get("mcpServers") if isinstance(document, Mapping) else None
    if not isinstance(servers, Mapping):
        got = _shown(document) if not isinstance(document, Mapping) else "no 'mcpServers' object"
        raise ConfigError(
            f"{origin}: expected {EXAMPLE} (a 'url' instead of 'command' for streamable "
            f"HTTP), got {got}."
        )
    out, problems = [], []
    for name, spec in servers.items():
        where = f"MCP server {name!r}"
        if not _SERVER_NAME.match(str(name)):
            problems.append(
                f"{where}: a server name may use only letters, digits, '_' and '-' (at most "
                "64): it prefixes its tools' names. Rename it"
            )
            continue
        if not isinstance(spec, Mapping):
            problems.append(f"{where} is {_shown(spec)}; write an object with 'command' or 'url'")
            continue
        try:
            checked = _ServerSpec.model_validate(spec)
        except ValidationError as exc:
            problems += [f"{where}: {p}" for p in _spec_problems(exc)]
            continue
        if not (checked.command or checked.url or checked.openrpc):
            problems.append(
                f"{where} needs 'command' (stdio), 'url' (streamable HTTP) or 'openrpc' (a "
                "JSON-RPC service)"
            )
            continue
        mismatch = _transport_mismatch(checked)
        if mismatch:
            problems.append(f"{where}: {mismatch}")
            continue
        if checked.disabled:  # checked as written, but never expanded nor started
            continue
        try:
            out.append(_server_config(str(name), checked, env, timeout))
        except ToolInputError as exc:
            problems.append(f"{where}: {exc}")
    if problems:
        raise ConfigError(f"{origin}: " + "; ".join(problems) + ".")
    return out


def _transport_mismatch(spec: _ServerSpec) -> str | None:
    """What is wrong with ``type`` against ``command``/``url``, if anything."""
    if spec.type is None:
        return None
    if spec.type == "stdio" and not spec.command:
        return '"type": "stdio" needs \'command\'; for a \'url\' write "type": "http"/"sse"'
    if spec.type != "stdio" and not spec.url:
        return f'"type": "{spec.type}" needs \'url\'; for a \'command\' write "type": "stdio"'
    return None


def _server_config(
    name: str, spec: _ServerSpec, env: Mapping[str, str], timeout: float
) -> ServerConfig:
    def ex(value: str | None) -> str | None:
        return expand(value, env) if value else None

    return ServerConfig(
        name=name,
        command=ex(spec.command),
        args=tuple(expand(a, env) for a in spec.args),
        env={k: expand(v, env) for k, v in spec.env.items()},
        cwd=ex(spec.cwd),
        url=ex(spec.url),
        headers={k: expand(v, env) for k, v in spec.headers.items()},
        timeout=spec.timeout if spec.timeout is not None else timeout,
        legacy_sse=spec.type == "sse",
        openrpc=ex(spec.openrpc),
    )


def load_config(
    path: Path, environ: Mapping[str, str] | None = None, *, timeout: float = DEFAULT_TIMEOUT
) -> list[ServerConfig]:
    """The servers of the mcp.json at ``path``; ``ConfigError`` saying what to fix."""
    path = Path(path)
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):  # a FIFO would block the open until written
            raise ConfigError(f"{path} is not a regular file; point HERON_MCP_CONFIG at one.")
        if info.st_size > MAX_CONFIG_BYTES:
            raise ConfigError(
                f"{path} is {info.st_size:,} bytes; an MCP config over "
                f"{MAX_CONFIG_BYTES:,} is not read. Is it the right file?"
            )
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(
            f"No MCP config at {path}; write one in the Claude Desktop format "
            f"({EXAMPLE}) or give another path."
        ) from None
    except OSError as exc:
        raise ConfigError(f"Cannot read the MCP config {path}: {exc.strerror or exc}.") from exc
    try:
        document = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path} is not valid UTF-8 (byte {data[exc.start]:#04x} at offset {exc.start}); "
            "save it as UTF-8."
        ) from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}; "
            f"fix it there. The format: {EXAMPLE}."
        ) from None
    except RecursionError:
        raise ConfigError(f"{path} nests too deeply to be an MCP config.") from None
    return parse_config(document, environ, timeout=timeout, origin=str(path))


@dataclass
class _Kept:
    """One server's kept session, owned by the task that opened it (``_keep_open``)."""

    ready: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    session: Any = None
    error: BaseException | None = None


class MCPClient(Resource):
    """Lists and calls the tools of the configured servers; see the module docstring.
    ``keep``: one session per server kept open until ``close()``."""

    def __init__(
        self, servers: list[ServerConfig], *, errlog: TextIO | None = None, keep: bool = False
    ) -> None:
        self.servers = {s.name: s for s in servers}
        self.errlog = errlog or sys.stderr
        #: (server, qualified name) -> the name the server knows the tool by.
        self.originals: dict[tuple[str, str], str] = {}
        self.keep = keep
        self._lock = threading.Lock()
        self._closed = False
        self._portal_cm: AbstractContextManager[anyio.from_thread.BlockingPortal] | None = None
        self._portal: anyio.from_thread.BlockingPortal | None = None
        self._kept: dict[str, _Kept] = {}
        #: Where each OpenRPC service's calls go, as its document said.
        self._endpoints: dict[str, str] = {}
        self._group: anyio.abc.TaskGroup
        self._stop: anyio.Event

    def _blocking(self, work: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """``work(*args)`` from synchronous code: on this client's own loop when it keeps
        sessions (they live there), else on a fresh one."""
        if not self.keep:
            return anyio.run(work, *args)
        with self._lock:
            if self._closed:
                raise ServerError("This MCP client was closed; open the toolbox again.")
            if self._portal is None:
                self._portal_cm = anyio.from_thread.start_blocking_portal()
                self._portal = self._portal_cm.__enter__()
                self._portal.start_task(self._host)
            portal = self._portal
        return portal.call(work, *args)

    async def _host(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        """The task group the kept sessions run in, until ``close()`` stops it."""
        self._stop = anyio.Event()
        async with anyio.create_task_group() as group:
            self._group = group
            task_status.started()
            await self._stop.wait()

    async def _keep_open(self, config: ServerConfig, kept: _Kept) -> None:
        try:
            async with self._session(config) as session:
                kept.session = session
                kept.ready.set()
                await kept.done.wait()
        except Exception as exc:  # reported to the waiting call; the next use reconnects
            kept.error = exc
        finally:
            kept.session = None
            kept.done.set()
            kept.ready.set()

    async def _kept_session(self, config: ServerConfig) -> Any:
        kept = self._kept.get(config.name)
        if kept is None or kept.done.is_set():
            kept = self._kept[config.name] = _Kept()
            self._group.start_soon(self._keep_open, config, kept)
        await kept.ready.wait()
        if kept.session is None:
            raise kept.error or ServerError(f"MCP server {config.name!r} closed its session.")
        return kept.session

    def _drop(self, name: str) -> None:
        kept = self._kept.pop(name, None)
        if kept is not None:
            kept.done.set()

    async def _end_all(self) -> None:
        for name in list(self._kept):
            self._drop(name)
        self._stop.set()

    def close(self) -> None:
        """End the kept sessions (their stdio servers exit); idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            portal, cm = self._portal, self._portal_cm
            self._portal = self._portal_cm = None
        if portal is not None and cm is not None:
            portal.call(self._end_all)
            cm.__exit__(None, None, None)  # waits for each session's task to end

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
        elif config.legacy_sse:
            from mcp.client.sse import sse_client

            # The event stream's own read timeout stays the SDK's (300 s): a kept session
            # is idle between calls, and each operation is bounded by ``timeout`` anyway.
            transport = sse_client(str(config.url), headers=config.headers, timeout=config.timeout)
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
                if config.openrpc:  # plain HTTP per call: no session to keep
                    return await work(None)
                if not self.keep:
                    async with self._session(config) as session:
                        return await work(session)
                try:
                    return await work(await self._kept_session(config))
                except (ToolCallError, ToolInputError):
                    raise
                except BaseException:
                    self._drop(config.name)  # hung, crashed or garbled: start afresh
                    raise
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

    async def alist_tools(self, name: str, warnings: list[str] | None = None) -> list[Tool]:
        """Every tool of server ``name``, following ``nextCursor`` pages, each named
        ``qualified_name(name, tool)``. The server is untrusted: a tool whose definition
        cannot be accepted (``heron.core.tools.parse_tool``), a second tool of one name
        and every tool past ``MAX_TOOLS`` are left out, each said in ``warnings``."""
        from mcp.types import PaginatedRequestParams

        config = self.server(name)
        notes: list[str] = []

        async def described(_: Any) -> list[Tool]:
            assert config.openrpc is not None
            document, endpoint = await openrpc.discover(
                config.openrpc, config.headers, config.timeout
            )
            url = (
                config.url
                or endpoint
                or (config.openrpc if openrpc.is_url(config.openrpc) else None)
            )
            if url:
                self._endpoints[name] = url
            tools: dict[str, Tool] = {}
            found = openrpc.definitions(document)
            for definition in found[:MAX_TOOLS]:
                self._accept(name, definition, tools, notes)
            if len(found) > MAX_TOOLS:
                notes.insert(0, f"described {len(found):,} methods; kept the first {MAX_TOOLS:,}")
            return list(tools.values())

        async def work(session: Any) -> list[Tool]:
            tools: dict[str, Tool] = {}
            cursor, listed = None, 0
            for _ in range(MAX_PAGES):
                params = PaginatedRequestParams(cursor=cursor) if cursor else None
                result = await session.list_tools(params=params)
                for tool in result.tools:
                    listed += 1
                    if len(tools) < MAX_TOOLS:
                        data = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
                        self._accept(name, data, tools, notes)
                cursor = result.next_cursor
                if not cursor:
                    break
            else:
                notes.insert(0, f"still listing after {MAX_PAGES} pages; read {MAX_PAGES}")
            if listed > MAX_TOOLS:  # first: the warnings that follow may be cut
                notes.insert(
                    0,
                    f"listed {listed:,} tools; kept the first {MAX_TOOLS:,}. Split the server, "
                    "or filter its tools in its own configuration.",
                )
            return list(tools.values())

        try:
            return await self._guarded(
                config, "list its tools", described if config.openrpc else work
            )
        finally:
            if len(notes) > MAX_WARNINGS:  # ten thousand bad tools: not ten thousand lines
                notes[MAX_WARNINGS:] = [f"... and {len(notes) - MAX_WARNINGS:,} more"]
            if warnings is not None:
                warnings += notes

    def _accept(
        self, server: str, listed: dict[str, Any], tools: dict[str, Tool], notes: list[str]
    ) -> None:
        """Add one listed tool (its MCP definition) to ``tools`` under its qualified name,
        or say why not."""
        data = dict(listed)
        shown = clean_text(str(data.get("name", "")), 80)
        try:
            original = check_name(data.get("name"))
            data["name"] = check_name(qualified_name(server, original))
            tool = parse_tool(data, f"mcp:{server}")
        except ToolInputError as exc:
            notes.append(f"refused tool {shown!r}: {exc}")
            return
        if tool.name in tools:
            notes.append(f"refused a second tool named {original!r}; kept the first")
            return
        if len(str(data.get("description") or "")) > MAX_DESCRIPTION:
            notes.append(f"cut the description of {original!r} to {MAX_DESCRIPTION:,} chars")
        tools[tool.name] = tool
        self.originals[(server, tool.name)] = original

    async def acall_tool(self, name: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call ``tool`` (the server's own name for it) on server ``name``. A result flagged
        ``isError`` and a JSON-RPC error answer both raise ``ToolCallError`` with the
        server's message, cleaned, cut and redacted."""
        from mcp.shared.exceptions import MCPError

        config = self.server(name)

        async def posted(_: Any) -> dict[str, Any]:
            url = self._endpoints.get(name)
            if url is None:
                raise ServerError(
                    f"OpenRPC service {name!r} has no endpoint: give it 'url' in mcp.json "
                    "(its document names no servers)."
                )
            return await openrpc.call(url, tool, arguments, config.headers, config.timeout)

        if config.openrpc:
            if name not in self._endpoints:  # its document names the endpoint
                await self.alist_tools(name)
            return await self._guarded(config, f"run {tool!r}", posted)

        async def work(session: Any) -> dict[str, Any]:
            try:
                return _result(await session.call_tool(tool, arguments))
            except MCPError as exc:  # returned, not raised: the SDK's task groups would wrap it
                return {"rpcError": {"code": exc.code, "message": exc.message}}

        result = await self._guarded(config, f"run {tool!r}", work)
        failed = result.get("rpcError")
        if failed:
            raise ToolCallError(
                f"{tool!r} on MCP server {name!r} failed: "
                f"{_message(failed['message'])} (MCP error {failed['code']})"
            )
        if result.get("isError"):
            text = " ".join(str(c.get("text", "")) for c in result.get("content", []))
            raise ToolCallError(
                f"{tool!r} on MCP server {name!r} failed: {_message(text) or 'no message'}"
            )
        return result

    async def adiscover(self, registry: ToolRegistry) -> list[ServerStatus]:
        """List every server's tools into ``registry``; a failing server is reported in its
        status and skipped, its old tools removed. A tool whose name another source
        already holds (an imported definition) is left out with a warning: no server
        replaces a tool it does not own."""
        statuses = []
        for name, config in self.servers.items():
            source = f"mcp:{name}"
            warnings: list[str] = []
            try:
                tools = await self.alist_tools(name, warnings)
            except ServerError as exc:
                registry.remove_source(source)
                statuses.append(ServerStatus(name, config.transport, 0, str(exc), tuple(warnings)))
                continue
            registry.remove_source(source)
            added = 0
            for tool in tools:
                if tool.name in registry:
                    other = registry.get(tool.name).source
                    warnings.append(f"refused tool {tool.name!r}: {other} already has the name")
                    continue
                original = self.originals.get((name, tool.name), tool.name)
                registry.add(tool, self._handler(name, original), replace=False)
                added += 1
            statuses.append(ServerStatus(name, config.transport, added, None, tuple(warnings)))
        return statuses

    def _handler(self, server: str, tool: str) -> Any:
        return lambda arguments: self.call_tool(server, tool, arguments)

    # Blocking forms for scripts and the CLI; from async code use the a* methods.
    def list_tools(self, name: str) -> list[Tool]:
        return self._blocking(self.alist_tools, name)

    def call_tool(self, name: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return self._blocking(self.acall_tool, name, tool, arguments)

    def discover(self, registry: ToolRegistry) -> list[ServerStatus]:
        return self._blocking(self.adiscover, registry)


def _result(result: Any) -> dict[str, Any]:
    data = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return {k: v for k, v in data.items() if k in ("content", "structuredContent", "isError")}


def _message(text: str) -> str:
    """A server's message as Heron passes it on: one cleaned, cut, redacted string."""
    return redact(clean_text(" ".join(str(text).split()), MAX_MESSAGE))


def _reason(exc: BaseException) -> str:
    """The innermost message of an exception (group), for one readable line."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {_message(str(exc))}" if str(exc) else type(exc).__name__
