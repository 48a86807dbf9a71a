"""``Toolbox``: the tools an agent may call and what they run on; ``open_toolbox`` fills
one with Heron's workspace tools, the definitions imported with ``heron tools import``
(kept in the store), the tools of every MCP server in ``mcp.json``
(``$HERON_HOME/mcp.json`` by default; a missing file means no servers) and the tools the
capabilities define, handed in as ``tools``. A server that fails is reported in
``statuses`` and skipped.

Every tool Heron knows, the libraries' and the skills' included, is what
``heron.wiring.open_tools`` gives: it wires the capabilities in and calls this.

>>> box = heron.wiring.open_tools(settings)                 # doctest: +SKIP
>>> route = box.router(profile="openai").route("add a contact")  # doctest: +SKIP
>>> box.registry.call(route.tools[0].tool.name, {"name": "Ada"})  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heron.core.tools import Handler, Tool
from heron.programs import load_policy
from heron.resource import Resource
from heron.settings import Settings
from heron.store import Store
from heron.tools.builtin import optional_tools, register_builtins
from heron.tools.mcp_client import MCPClient, ServerStatus, load_config
from heron.tools.registry import ToolRegistry, load_imported
from heron.tools.router import ToolRouter
from heron.tools.usage import ToolUsage, open_tool_usage

MCP_CONFIG = "mcp.json"


@dataclass
class Toolbox(Resource):
    """The tools and what they run on. ``close()`` closes ``resources``: what was opened
    for this toolbox alone (``open_tools`` puts there the store, skill index and usage
    log it opened). The ``store`` it is handed stays open (the ownership rule,
    ``heron.store.base``)."""

    registry: ToolRegistry
    store: Store
    client: MCPClient | None = None
    statuses: list[ServerStatus] = field(default_factory=list)
    usage: ToolUsage | None = None
    resources: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    def learn(self, tool: str, request: str) -> None:
        """Record that ``tool`` served ``request``: an example for the next start."""
        if self.usage is not None:
            self.usage.record(tool, request)

    def router(self, **options: Any) -> ToolRouter:
        """A ``ToolRouter`` over every registered tool; ``options`` as ``ToolRouter``'s."""
        return ToolRouter(self.registry.tools(), self.store, **options)

    def close(self) -> None:
        self.resources.close()


def open_toolbox(
    settings: Settings,
    store: Store,
    *,
    tools: Iterable[tuple[Tool, Handler]] = (),
    resources: contextlib.ExitStack | None = None,
    mcp_config: Path | None = None,
    root: Path | None = None,
    commands: Iterable[str] = (),
    mcp_timeout: float | None = None,
    connect: bool = True,
    learn: bool = True,
) -> Toolbox:
    """The registry the settings describe, on ``store`` (left open by ``close()``):
    ``tools`` (the capabilities' own, with their handlers), the workspace tools and the
    optional built-ins turned on (``heron.core.optional.OPTIONAL_TOOLS``), then
    the imported definitions and the MCP servers' tools. Arguments override the settings
    (``HERON_MCP_CONFIG``, ``HERON_MCP_TIMEOUT``, ``HERON_TOOLS_ROOT``,
    ``HERON_TOOLS_COMMANDS``); ``connect=False`` skips the MCP servers. ``resources``:
    what the caller opened for this toolbox, closed by ``Toolbox.close`` (and at once if
    this fails). ``learn``: give tools the requests they served before as examples
    (``ToolUsage`` in ``$HERON_HOME/tools.db``, or PostgreSQL's for every replica, the
    settings' context's alone) and
    record new ones there through ``Toolbox.learn``."""
    resources = resources if resources is not None else contextlib.ExitStack()
    try:  # what was opened is closed when a later step fails
        registry = ToolRegistry()
        for tool, handler in tools:
            registry.add(tool, handler)
        register_builtins(
            registry,
            root=root or settings.tools.root,
            commands=[*commands, *settings.tools.commands],
            policy=load_policy(settings.tools.policy),
        )
        for tool, handler in optional_tools(settings):
            registry.add(tool, handler)
        for tool in load_imported(store):
            registry.add(tool)
        mcp_config = mcp_config or settings.tools.mcp_config
        mcp_timeout = mcp_timeout or settings.tools.mcp_timeout
        config = mcp_config or settings.home / MCP_CONFIG
        client = None
        statuses: list[ServerStatus] = []
        if connect and (mcp_config is not None or config.exists()):
            # Sessions kept open for the toolbox's life: a call is a round trip, not a
            # server start; resources.close() ends them.
            client = MCPClient(load_config(config, timeout=mcp_timeout), keep=True)
            resources.callback(client.close)
            statuses = client.discover(registry)
        usage = None
        if learn:
            usage = resources.enter_context(contextlib.closing(open_tool_usage(settings)))
            registry.teach(usage.examples())
    except BaseException:
        resources.close()
        raise
    return Toolbox(registry, store, client, statuses, usage=usage, resources=resources)
