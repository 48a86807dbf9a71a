"""Jobs wired to the other capabilities: ``job_runner`` gives a ``heron.jobs.JobRunner``
the libraries' search and a model of ``heron.llm``; ``job_results`` replays a
conversation's ended jobs to the agent (its ``recall``)."""

from __future__ import annotations

import json
from typing import Any

from heron.agent.recall import Recall, Recalled
from heron.core.chat import Message, ToolCall
from heron.jobs import TERMINAL, Job, JobRunner, Jobs
from heron.libraries import search
from heron.llm import load_broker
from heron.store import Store

#: Results a job's ``search_docs`` step keeps.
JOB_SEARCH_TOP_K = 5
#: Ended jobs of a conversation whose verdicts its history replays, newest.
RECALLED_JOBS = 5
#: Characters of a job's summary (or failure) replayed: a few sentences.
RECALLED_CHARS = 1500


def job_runner(jobs: Jobs, **options: Any) -> JobRunner:
    """``JobRunner(jobs, **options)`` with the libraries' search for its ``search_docs``
    step and the settings' broker (``load_broker``, opened per summary) for its summary."""
    settings = jobs.settings

    def library_search(query: str, store: Store) -> list[dict[str, Any]]:
        hits = search(query, store, top_k=JOB_SEARCH_TOP_K, settings=settings)
        return [hit.to_dict() for hit in hits]

    return JobRunner(jobs, search=library_search, broker=lambda: load_broker(settings), **options)


def job_results(jobs: Jobs, limit: int = RECALLED_JOBS) -> Recall:
    """The agent's ``recall``: the verdicts of the last ``limit`` jobs a conversation
    delegated that have ended, each as the ``delegate_job`` call's result (its state,
    ``ok``, summary, the criteria's verdicts, why it failed), joined after the turn that
    delegated it (``heron.agent.recall``). ``jobs`` is one context's: another's never
    shows."""

    def recall(session_id: str) -> list[Recalled]:
        ended = jobs.list(sorted(TERMINAL), limit, session_id=session_id)
        return [Recalled(job.created_at, job_messages(jobs, job)) for job in reversed(ended)]

    return recall


def job_messages(jobs: Jobs, job: Job) -> tuple[Message, Message]:
    """The call that delegated ``job`` and its result as it ended: what the model reads."""
    result = job.result or {}
    verdict: dict[str, Any] = {"id": job.id, "state": job.state, "prompt": job.prompt}
    if job.state == "completed":
        verdict |= {
            "ok": result.get("ok"),
            "summary": str(result.get("summary") or "")[:RECALLED_CHARS],
            "criteria": [
                {k: c.get(k) for k in ("criterion", "ok", "why") if c.get(k) is not None}
                for c in result.get("criteria") or []
            ],
        }
    elif job.state == "failed":
        verdict["error"] = jobs.failure(job)[:RECALLED_CHARS]
    call = ToolCall(f"job_{job.id}", "delegate_job", {"prompt": job.prompt})
    content = json.dumps(verdict, ensure_ascii=False)
    return (
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", content, tool_call_id=call.id, name="delegate_job"),
    )
