"""Where the capabilities meet: the one place above them that wires one into another.

The capabilities (``heron.libraries``, ``heron.skills``, ``heron.tools``, ``heron.llm``,
``heron.jobs``) import none of each other; what one needs of another is handed to it
here, as an object or a callable:

- ``open_tools``: the toolbox (``heron.tools``) with the libraries' ``search_docs`` and
  the skills' ``search_skills``/``read_skill`` registered beside the workspace and MCP
  tools, all on one store;
- ``job_runner``: a ``heron.jobs.JobRunner`` whose ``search_docs`` step searches the
  libraries and whose summary a capable model of ``heron.llm`` writes;
- ``add_job_tools``: ``delegate_job`` (``heron.jobs``) in a toolbox.

The CLI, the server's ``Runtime`` and ``open_agent`` build through these.

>>> box = open_tools(settings, store=store)                          # doctest: +SKIP
>>> asyncio.run(job_runner(open_jobs(settings)).run_until_idle())    # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from heron.jobs import JobRunner, Jobs
from heron.libraries import search
from heron.libraries.tool import DocsSearch, docs_tool, search_docs
from heron.llm import load_broker
from heron.settings import Settings
from heron.skills import SkillIndex, open_skills
from heron.skills.tool import skill_tools
from heron.store import Store, open_store
from heron.tools import Toolbox, open_toolbox

T = TypeVar("T")
#: Results a job's ``search_docs`` step keeps.
JOB_SEARCH_TOP_K = 5


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
    """Every tool Heron knows (``heron.tools.open_toolbox``, whose arguments these are,
    plus the capabilities' tools). ``store``: an open store to share (its embedding model
    is loaded once), left open by ``close()``; without one the configured store is
    opened, and ``close()`` closes it. ``skills``: the skill index the skill tools use
    (default: the settings', opened on first use on the toolbox's store).
    ``docs_search``: what answers ``search_docs`` (default: the libraries' search on the
    toolbox's store)."""
    settings = settings or Settings()
    resources = contextlib.ExitStack()  # what this call opens, closed by Toolbox.close
    try:
        if store is None:
            store = resources.enter_context(contextlib.closing(open_store(settings)))
        shared = store

        def own_skills() -> SkillIndex:  # on the toolbox's store: no second store, no pool
            return resources.enter_context(contextlib.closing(open_skills(settings, store=shared)))

        def library_search(arguments: dict[str, Any]) -> list[dict[str, Any]]:
            return search_docs(arguments, shared, settings)["results"]

        tools = [docs_tool(docs_search or library_search), *skill_tools(skills or lazy(own_skills))]
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


def job_runner(jobs: Jobs, **options: Any) -> JobRunner:
    """``JobRunner(jobs, **options)`` with the libraries' search for its ``search_docs``
    step and the settings' broker (``load_broker``, opened per summary) for its summary."""
    settings = jobs.settings

    def library_search(query: str, store: Store) -> list[dict[str, Any]]:
        hits = search(query, store, top_k=JOB_SEARCH_TOP_K, settings=settings)
        return [hit.to_dict() for hit in hits]

    return JobRunner(jobs, search=library_search, broker=lambda: load_broker(settings), **options)


def lazy(open_: Callable[[], T]) -> Callable[[], T]:
    """``open_()``'s result, opened on the first call and kept: a tool that is never
    called never opens what it needs."""
    opened: list[T] = []

    def get() -> T:
        if not opened:
            opened.append(open_())
        return opened[0]

    return get
