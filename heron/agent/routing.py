"""The tool offer: which of Heron's tools a turn's model is offered, best first.

``routing_options`` turns the ``agent_routing_*`` settings into ``ToolRouter`` options;
``ToolOffer.route`` routes a message over the toolbox (``heron.tools``) and keeps the
tools that may run here: callable, no more harmful than the turn's safety, and not
``local-only`` for a client's request. The router is built on first use, and again when
the registered tools change (a tool registered by ``heron.jobs``, an MCP server reloaded).

>>> [r.tool.name for r in agent.offer.route("Read the file notes.txt")]  # doctest: +SKIP
['read_file']
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from heron.core.tools import Safety, Tool
from heron.llm import Broker
from heron.settings import AgentSettings, Settings
from heron.tools import LOCAL_ONLY, RoutedTool, Toolbox, ToolRouter
from heron.tools.ceiling import permits

log = logging.getLogger("heron.agent")


def routing_options(
    agent: AgentSettings, tools: Sequence[Tool], max_tools: int | None = None
) -> dict[str, Any]:
    """``ToolRouter`` options from the ``agent_routing_*`` settings: the mode, ``top_k``
    (capped by the model's ``max_tools``), the threshold (unset: the embedder's) and the
    always-include tools that are registered (one that is not, e.g. a tool left off by its
    setting, is skipped with a warning rather than failing every request; the doctor's
    tools check names it)."""
    known = {t.name for t in tools}
    wanted = agent.routing_always_include
    missing = [name for name in wanted if name not in known]
    if missing:
        log.warning("agent_routing_always_include names unknown tools: %s", ", ".join(missing))
    top_k = agent.routing_top_k
    return {
        "mode": agent.routing_mode,
        "top_k": min(top_k, max_tools) if max_tools else top_k,
        "threshold": agent.routing_threshold,
        "always_include": [name for name in wanted if name in known],
    }


class ToolOffer:
    """The tools a turn is offered, out of ``toolbox``; ``broker``: the agent's broker,
    looked up per call (a models reload replaces it), for the model's capabilities."""

    def __init__(self, settings: Settings, toolbox: Toolbox, broker: Callable[[], Broker]) -> None:
        self.settings = settings
        self.toolbox = toolbox
        self.broker = broker
        self._routers: dict[tuple, ToolRouter] = {}

    def route(
        self,
        message: str,
        model: str | None = None,
        vector: np.ndarray | None = None,
        *,
        safety: Safety | None = None,
        local: bool = True,
        delegate: bool = False,
    ) -> list[RoutedTool]:
        """The tools to offer, best first: routed, callable here, no more harmful than
        ``safety`` (default ``agent_tool_safety``) unless ``delegate`` lets a delegation
        tool past it (``heron.tools.ceiling.permits``); unless ``local``
        (``Turn.local_tools``, false for ``/v1``), none tagged ``local-only``
        (``python_exec``), whatever the safety allows. None for a model that cannot call
        tools."""
        caps = self.broker().capabilities(model)
        if not caps.tool_calling:
            return []
        registry = self.toolbox.registry
        tools = registry.tools()
        key = (caps.name_profile, tuple((t.name, t.source) for t in tools))
        router = self._routers.get(key)
        if router is None:  # a new tool (e.g. registered by heron.jobs) means a new index
            router = self.toolbox.router(
                profile=caps.name_profile,
                **routing_options(self.settings.agent, tools, caps.max_tools),
            )
            self._routers = {key: router}
        most = safety or self.settings.agent.tool_safety
        return [
            routed
            for routed in router.route(message, vector=vector).tools
            if registry.runnable(routed.tool.name)
            and permits(routed.tool, most, delegate)
            and (local or LOCAL_ONLY not in routed.tool.tags)
        ]
