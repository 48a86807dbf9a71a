"""``open_tools()``: every tool Heron knows, as the CLI and an agent open them.

Built-ins (workspace tools only when a ``root`` is given), the definitions imported
with ``heron tools import`` (kept in the store), and the tools of every MCP server in
``mcp.json`` (``$HERON_HOME/mcp.json`` by default; a missing file means no servers).
A server that fails is reported in ``statuses`` and skipped.

>>> box = open_tools()                                       # doctest: +SKIP
>>> route = box.router(profile="openai").route("add a contact")  # doctest: +SKIP
>>> box.registry.call(route.tools[0].tool.name, {"name": "Ada"})  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heron.libraries.tool import search_docs
from heron.programs import default_policy
from heron.settings import Settings
from heron.skills import SkillIndex, open_skills
from heron.store import Store, open_store
from heron.tools.builtin import DocsSearch, lazy, register_builtins
from heron.tools.mcp_client import MCPClient, ServerStatus, load_config
from heron.tools.registry import ToolRegistry, load_imported
from heron.tools.router import ToolRouter
from heron.tools.usage import ToolUsage

MCP_CONFIG = "mcp.json"
USAGE_FILE = "tools.db"


@dataclass
class Toolbox:
    """The tools and what they run on. ``close()`` closes ``resources``: what was opened
    for this toolbox alone (``open_tools`` puts there the store, skill index and usage
    log it opened). The ``store`` it is handed stays open (the ownership rule,
    ``heron.store.base``). ``owns_store=True`` (deprecated: put the store in
    ``resources``) closes ``store`` too."""

    registry: ToolRegistry
    store: Store
    client: MCPClient | None = None
    statuses: list[ServerStatus] = field(default_factory=list)
    owns_store: bool = False
    usage: ToolUsage | None = None
    resources: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    def __post_init__(self) -> None:
        if self.owns_store:
            warnings.warn(
                "Toolbox(owns_store=True) is deprecated and goes in the next release: "
                "hand the store over in resources (resources.callback(store.close)).",
                DeprecationWarning,
                stacklevel=3,
            )
            self.resources.callback(self.store.close)

    def learn(self, tool: str, request: str) -> None:
        """Record that ``tool`` served ``request``: an example for the next start."""
        if self.usage is not None:
            self.usage.record(tool, request)

    def router(self, **options: Any) -> ToolRouter:
        """A ``ToolRouter`` over every registered tool; ``options`` as ``ToolRouter``'s."""
        return ToolRouter(self.registry.tools(), self.store, **options)

    def close(self) -> None:
        self.resources.close()


def open_tools(
    settings: Settings | None = None,
    *,
    mcp_config: Path | None = None,
    root: Path | None = None,
    commands: Iterable[str] = (),
    docs_search: DocsSearch | None = None,
    mcp_timeout: float | None = None,
    connect: bool = True,
    store: Store | None = None,
    skills: Callable[[], SkillIndex] | None = None,
    learn: bool = True,
) -> Toolbox:
    """The registry the settings describe; arguments override the settings
    (``HERON_MCP_CONFIG``, ``HERON_MCP_TIMEOUT``, ``HERON_TOOLS_ROOT``,
    ``HERON_TOOLS_COMMANDS``); ``connect=False`` skips the MCP servers. ``store``: an
    open store to share (its embedding model is loaded once), left open by ``close()``;
    without one the configured store is opened, and ``close()`` closes it.
    ``skills``: the skill index the skill tools use (default: the settings', opened on
    first use with the store's embedding model). ``learn``: give tools the requests they
    served before as examples (``ToolUsage`` in ``$HERON_HOME/tools.db``) and record new
    ones through ``Toolbox.learn``."""
    settings = settings or Settings()
    resources = contextlib.ExitStack()  # what this call opens, closed by Toolbox.close
    if store is None:
        store = resources.enter_context(contextlib.closing(open_store(settings)))
    shared = store

    def own_skills() -> SkillIndex:  # on the toolbox's store: no second store, no pool
        return resources.enter_context(contextlib.closing(open_skills(settings, store=shared)))

    try:  # what was opened is closed when a later step fails
        registry = ToolRegistry()
        register_builtins(
            registry,
            root=root or settings.tools_root,
            commands=[*commands, *settings.tools_commands],
            skills=skills or lazy(own_skills),
            docs_search=docs_search
            or (lambda args: search_docs(args, shared, settings)["results"]),
            policy=default_policy(settings),
        )
        for tool in load_imported(store):
            registry.add(tool)
        mcp_config = mcp_config or settings.mcp_config
        mcp_timeout = mcp_timeout or settings.mcp_timeout
        config = mcp_config or settings.home / MCP_CONFIG
        client = None
        statuses: list[ServerStatus] = []
        if connect and (mcp_config is not None or config.exists()):
            client = MCPClient(load_config(config, timeout=mcp_timeout))
            statuses = client.discover(registry)
        usage = None
        if learn:
            usage = resources.enter_context(
                contextlib.closing(ToolUsage(settings.home / USAGE_FILE))
            )
            registry.teach(usage.examples())
    except BaseException:
        resources.close()
        raise
    return Toolbox(registry, store, client, statuses, usage=usage, resources=resources)
