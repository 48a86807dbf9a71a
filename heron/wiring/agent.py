"""The agent on the parts the settings describe: ``open_agent`` opens the store, skills,
toolbox (with ``delegate_job`` when there is a workspace), broker and sessions it is not
handed, and builds ``heron.agent.Agent`` on them."""

from __future__ import annotations

import contextlib

from heron.agent.agent import Agent
from heron.agent.loop import SearchHook, ToolHook
from heron.agent.sessions import open_sessions
from heron.jobs import Jobs, open_jobs
from heron.libraries import load_reranker
from heron.llm import Broker, RoutingTable, load_broker
from heron.settings import Settings
from heron.skills import SkillIndex, open_skills
from heron.store import Store, open_store
from heron.tools import Toolbox
from heron.wiring.jobs import job_results
from heron.wiring.tools import add_job_tools, open_tools


def open_agent(
    settings: Settings,
    *,
    store: Store | None = None,
    skills: SkillIndex | None = None,
    toolbox: Toolbox | None = None,
    jobs: Jobs | None = None,
    on_tool_use: ToolHook | None = None,
    on_search: SearchHook | None = None,
    table: RoutingTable | None = None,
) -> Agent:
    """The agent the settings describe: the store, libraries, skills, tools (with
    ``search_docs`` on this store), the model broker and the sessions, opened once.
    Close it with ``close()``. A server passes the ``store``, ``skills``, ``toolbox`` and
    ``jobs`` it already has open (the embedding model is then loaded once, the job store
    opened once); they stay open when the agent closes: it closes only what it opened
    here. With a workspace (``tools_root``) the model may hand long tasks to a job
    (``delegate_job`` on ``jobs``, else on the settings' job store, opened here).
    ``on_tool_use`` and ``on_search``: the agent's observers (``Agent``). ``table``: the
    models table to route over (a server's last good one); default: read models.yml."""
    with contextlib.ExitStack() as opened:
        if store is None:
            store = opened.enter_context(contextlib.closing(open_store(settings)))
        if skills is None:
            skills = opened.enter_context(contextlib.closing(open_skills(settings, store=store)))
        if toolbox is None:
            index = skills  # the skill tools search the agent's own index
            toolbox = opened.enter_context(
                contextlib.closing(open_tools(settings, store=store, skills=lambda: index))
            )
        delegates = settings.tools.root is not None
        if delegates and "delegate_job" not in toolbox.registry:
            # Jobs run in the workspace: with one, the model may hand long tasks to a job,
            # in every context alike (the job records its context and runs in its
            # workspace); whether a turn may call it is the tool ceiling's rule.
            if jobs is None:
                jobs = open_jobs(settings)
                opened.callback(jobs.close)
            add_job_tools(toolbox, jobs)
        recall = job_results(jobs) if jobs is not None else None
        broker = Broker(table, settings) if table is not None else load_broker(settings)
        opened.enter_context(contextlib.closing(broker))
        sessions = opened.enter_context(contextlib.closing(open_sessions(settings)))
        resources = opened.pop_all()
    return Agent(
        settings,
        store,
        skills,
        toolbox,
        broker,
        sessions,
        reranker=load_reranker(settings.library),
        resources=resources,
        tool_workers=settings.agent.tool_workers,
        on_tool_use=on_tool_use,
        on_search=on_search,
        recall=recall,
    )
