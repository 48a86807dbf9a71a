"""Where the capabilities meet: the one place above them that wires one into another.

The capabilities (``heron.libraries``, ``heron.skills``, ``heron.tools``, ``heron.llm``,
``heron.jobs``, ``heron.interventions``) import none of each other; what one needs of
another is handed to it here, as an object or a callable:

- ``open_tools`` (``heron.wiring.tools``): the toolbox (``heron.tools``) with the
  libraries' ``search_docs`` and the skills' ``search_skills``/``read_skill``
  (``retrieval_tools``, which the MCP server serves too) registered beside the workspace
  and MCP tools, all on one store;
- ``add_job_tools``: ``delegate_job`` (``heron.jobs``) in a toolbox, on a job store;
- ``open_agent`` (``heron.wiring.agent``): the agent (``heron.agent.agent``) on the store,
  skills, toolbox (with ``delegate_job`` when there is a workspace), broker and sessions
  it opens or is handed;
- ``job_runner`` (``heron.wiring.jobs``): a ``heron.jobs.JobRunner`` whose
  ``search_docs`` step searches the libraries and whose summary a capable model of
  ``heron.llm`` writes; ``job_results``: the agent's recall of a conversation's jobs;
- ``library_enricher`` (``heron.wiring.enrich``): the libraries' ``Enricher`` (questions
  a page answers, asked at index time) over the broker of ``heron.llm``;
- ``Observers`` (``heron.wiring.interventions``): the agent's observers (``on_tool_use``,
  ``on_search``) turned into ``heron.interventions`` cards: who writes and searches what;
- ``Scan``: the libraries' sync health and the skills' usage log, read as
  ``heron.interventions`` conditions.

It sits above ``heron.agent`` and below the interfaces: the CLI, the server (its
``Runtime``, its MCP server) and the doctor build through these, and wire nothing
themselves; nothing below them imports it.

>>> box = open_tools(settings, store=store)                          # doctest: +SKIP
>>> asyncio.run(job_runner(open_jobs(settings)).run_until_idle())    # doctest: +SKIP
"""

from __future__ import annotations

from heron.wiring.agent import open_agent
from heron.wiring.enrich import library_enricher
from heron.wiring.interventions import ActivityReport, Observers, Scan
from heron.wiring.jobs import job_results, job_runner
from heron.wiring.tools import add_job_tools, open_tools, retrieval_tools

__all__ = [
    "ActivityReport",
    "Observers",
    "Scan",
    "add_job_tools",
    "job_results",
    "job_runner",
    "library_enricher",
    "open_agent",
    "open_tools",
    "retrieval_tools",
]
