"""The toolbox with every capability's tools: ``open_tools`` registers the libraries'
``search_docs`` and the skills' ``search_skills``/``read_skill`` (``retrieval_tools``,
which the MCP server serves too) beside ``heron.tools``' own, all on one store;
``add_job_tools`` adds ``delegate_job`` (``heron.jobs``) on a job store."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from heron.core.tools import Handler, Tool
from heron.jobs import Jobs
from heron.jobs.tool import register_job_tools
from heron.libraries.tool import DocsSearch, docs_tool, search_docs
from heron.settings import Settings
from heron.skills import SkillIndex, open_skills
from heron.skills.tool import skill_tools
from heron.store import Store, open_store
from heron.tools import Toolbox, open_toolbox

T = TypeVar("T")


def open_tools(
    settings: Settings,
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
    """Every tool Heron knows (``heron.tools.open_toolbox``, whose arguments these are,
    plus the capabilities' tools). ``store``: an open store to share (its embedding model
    is loaded once), left open by ``close()``; without one the configured store is
    opened, and ``close()`` closes it. ``skills``: the skill index the skill tools use
    (default: the settings', opened on first use on the toolbox's store).
    ``docs_search``: what answers ``search_docs`` (default: the libraries' search on the
    toolbox's store)."""
    resources = contextlib.ExitStack()  # what this call opens, closed by Toolbox.close
    try:
        if store is None:
            store = resources.enter_context(contextlib.closing(open_store(settings)))
        shared = store

        def own_skills() -> SkillIndex:  # on the toolbox's store: no second store, no pool
            return resources.enter_context(contextlib.closing(open_skills(settings, store=shared)))

        tools = retrieval_tools(settings, lambda: shared, skills or lazy(own_skills))
        if docs_search is not None:
            tools[0] = docs_tool(docs_search)
    except BaseException:
        resources.close()
        raise
    return open_toolbox(
        settings,
        store,
        tools=tools,
        resources=resources,
        mcp_config=mcp_config,
        root=root,
        commands=commands,
        mcp_timeout=mcp_timeout,
        connect=connect,
        learn=learn,
    )


def retrieval_tools(
    settings: Settings, store: Callable[[], Store], skills: Callable[[], SkillIndex]
) -> list[tuple[Tool, Handler]]:
    """``search_docs`` (the libraries' search, on ``store()``), then ``search_skills`` and
    ``read_skill`` (on ``skills()``): what an agent and an MCP client search with. Both
    are called when a tool is, so nothing opens before it is used."""

    def library_search(arguments: dict[str, Any]) -> list[dict[str, Any]]:
        return search_docs(arguments, store(), settings)["results"]

    return [docs_tool(library_search), *skill_tools(skills)]


def add_job_tools(toolbox: Toolbox, jobs: Jobs) -> None:
    """``delegate_job`` in ``toolbox``: the model may hand long tasks to a job of ``jobs``."""
    register_job_tools(toolbox.registry, jobs)


def lazy(open_: Callable[[], T]) -> Callable[[], T]:
    """``open_()``'s result, opened on the first call and kept: a tool that is never
    called never opens what it needs."""
    opened: list[T] = []

    def get() -> T:
        if not opened:
            opened.append(open_())
        return opened[0]

    return get
