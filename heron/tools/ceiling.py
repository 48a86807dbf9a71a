"""The tool ceiling: the most harmful tool a caller may run, decided in one place for
every door (``ceiling``) and checked where the tool runs (``check_tool``).

A tool's ``safety`` says how much harm a call can do (``read`` looks, ``write`` changes
files or data, ``execute`` runs programs; an MCP server's tool without annotations is
``execute``, ``heron.tools.mcp_client``). Each door a tool is reached through has its
ceiling, the operator's setting:

==========  ===========================================================  =======================
door        what runs tools through it                                   ceiling
==========  ===========================================================  =======================
``agent``   Heron's agent: ``agent.chat``, ``/chat/stream``, ``heron ask``  ``agent_tool_safety``
``openai``  the agent answering a ``/v1`` request                        ``openai_tool_safety``
``mcp``     an MCP client: ``call_tool``, ``find_tools``, the jobs        ``mcp_tool_safety``
            tools, and the agent its ``ask`` runs
``rpc``     a caller naming a tool: JSON-RPC ``tools.call``               see below
==========  ===========================================================  =======================

``tools.call`` is JSON-RPC's ``call_tool``: the server's administrator (no key on a
loopback server without a token, ``HERON_API_TOKEN``, an ``admin`` key) may run any
tool through it, as with ``heron tools call``; any other key is an API client, held to
what an MCP client may run (``mcp_tool_safety``). So one key meets one ceiling: what
its ``call_tool`` refuses, its ``tools.call`` refuses too (issue 45).

The agent's turns carry their door's ceiling as ``Turn.tool_safety``: the agent offers
no tool above it and runs only what it offered (``heron.agent.execute``). A JSON-RPC
method run for an MCP tool (``ask`` is ``agent.chat``) is told its door by ``through``,
so its turn is held to the MCP ceiling, not the agent's.

**Delegation** is a permission of its own (``delegates``): with ``agent_delegate``
(``HERON_AGENT_DELEGATE``), the agent's turns (the ``agent`` door only: not ``/v1``, not
MCP's ``ask``) are offered the tools tagged ``DELEGATION`` (``delegate_job``) whatever
their ceiling, and nothing else of that safety: a team lets the agent hand a read-only
check to a job without handing it ``run_command`` or ``python_exec``. A named key's turns
delegate only when it holds ``jobs`` (the scope that lets it create jobs itself). A job so
delegated that may write waits for a person (``heron.core.caller.Caller.confirm_risky``);
a ``deploy_allowed`` one always does. ``Turn.delegate`` carries the door's answer, and
``permits`` is the one test the agent offers tools by.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Literal

from heron.core.errors import ToolCallError
from heron.core.tools import DELEGATION, SAFETY_LEVELS, Safety, Tool
from heron.keys import ADMIN, Key
from heron.settings import Settings

Door = Literal["agent", "openai", "mcp", "rpc"]
#: The key scope that lets a caller create jobs, and its agent turns delegate them.
JOBS = "jobs"

#: The setting each door's ceiling is, as the operator writes it.
SETTING: dict[Door, str] = {
    "agent": "HERON_AGENT_TOOL_SAFETY",
    "openai": "HERON_OPENAI_TOOL_SAFETY",
    "mcp": "HERON_MCP_TOOL_SAFETY",
    "rpc": "HERON_MCP_TOOL_SAFETY",
}

#: The door a JSON-RPC method is being run through, when it is not JSON-RPC itself.
_THROUGH: ContextVar[Door | None] = ContextVar("heron_door", default=None)


def within(safety: Safety, most: Safety) -> bool:
    """Whether a tool of ``safety`` is at most ``most``: ``within("write", "read")`` is
    false."""
    return SAFETY_LEVELS.index(safety) <= SAFETY_LEVELS.index(most)


def delegates(settings: Settings, door: Door, key: Key | None = None) -> bool:
    """Whether the agent's turns through ``door`` for a caller with ``key`` may delegate
    jobs beyond their ceiling (the module's "Delegation"): the ``agent`` door, with
    ``agent_delegate`` on, for no key or a key holding ``jobs``."""
    return door == "agent" and settings.agent.delegate and (key is None or key.allows(JOBS))


def permits(tool: Tool, most: Safety, delegate: bool) -> bool:
    """Whether a turn whose ceiling is ``most`` and that may ``delegate`` (``delegates``)
    may be offered and run ``tool``."""
    return within(tool.safety, most) or (delegate and DELEGATION in tool.tags)


def administers(key: Key | None) -> bool:
    """Whether the caller is the server's administrator, for whom ``tools.call`` has no
    ceiling: no key, or a key holding ``admin``."""
    return key is None or key.allows(ADMIN)


def ceiling(settings: Settings, door: Door, key: Key | None = None) -> Safety:
    """The most harmful tool a caller with ``key`` may run through ``door`` (the
    module's table)."""
    if door == "agent":
        return settings.agent.tool_safety
    if door == "openai":
        return settings.server.openai_tool_safety
    if door == "rpc" and administers(key):
        return "execute"
    return settings.server.mcp_tool_safety


def check_tool(tool: Tool, settings: Settings, door: Door, key: Key | None = None) -> None:
    """Raise ``ToolCallError`` unless ``tool`` is within the ceiling of ``door`` for a
    caller with ``key``; the message says which setting holds it."""
    most = ceiling(settings, door, key)
    if within(tool.safety, most):
        return
    setting = SETTING[door]
    who = {
        "agent": "Heron's agent may call",
        "openai": "a /v1 request may have Heron run",
        "mcp": "MCP clients of this server may run",
        "rpc": "a key without the admin scope may run, through tools.call as through MCP,",
    }[door]
    raise ToolCallError(
        f"{tool.name!r} is a {tool.safety} tool; {who} {most} tools at most ({setting}, "
        "set by the server's operator)."
    )


@contextmanager
def through(door: Door) -> Iterator[None]:
    """The block runs JSON-RPC methods for ``door`` (MCP's tools): their tool ceiling is
    that door's (``entered_through``)."""
    token = _THROUGH.set(door)
    try:
        yield
    finally:
        _THROUGH.reset(token)


def entered_through(default: Door) -> Door:
    """The door the current call came through (``through``), else ``default``: the
    method's own (``agent`` for ``agent.chat``)."""
    return _THROUGH.get() or default
