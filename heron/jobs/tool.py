"""``delegate_job``: the agent hands a long task to a background job and gets its id.

>>> register_job_tools(registry, open_jobs(settings))              # doctest: +SKIP
>>> registry.call("delegate_job", {"prompt": "is main broken?"})    # doctest: +SKIP
{'id': '9f3c2a1b4d5e6f70', 'state': 'queued', 'session_id': '', 'room': 'default', ...}
"""

from __future__ import annotations

from typing import Any

from heron.core.caller import Caller, current_caller
from heron.core.errors import ToolInputError
from heron.core.tools import DELEGATION, Tool, ToolSink
from heron.jobs.model import RISK_LEVELS
from heron.jobs.service import Jobs

DELEGATE_JOB = Tool(
    "delegate_job",
    "Hand a task that takes longer than one answer (check whether main builds, what "
    "changed in the repository, whether the docs or the index cover something) to a "
    "background job. Returns the job's id at once; the job records each step it takes.",
    {
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "description": "the task, in the user's words"},
            "success_criteria": {
                "type": "string",
                "description": "what a good outcome looks like, e.g. 'all tests pass'",
            },
            "risk_level": {
                "type": "string",
                "enum": list(RISK_LEVELS),
                "description": "read_only unless the user asked for changes",
            },
        },
        "required": ["prompt"],
    },
    # Not ``read``: the call writes a job to the job store, and the job then runs programs
    # in the workspace (git always, the test command when asked). Its risk level, the
    # command allowlist and the confirmation gate bound what it does, not that it runs:
    # the agent offers it where ``agent_tool_safety`` (``openai_tool_safety`` for /v1) is
    # ``execute``, or by the delegation permission alone (``DELEGATION``,
    # ``HERON_AGENT_DELEGATE``), where every job that may write waits for a person.
    safety="execute",
    tags=("jobs", DELEGATION),
)


def register_job_tools(registry: ToolSink, jobs: Jobs) -> list[Tool]:
    """Add ``delegate_job``. The model cannot waive confirmation: a ``deploy_allowed`` job
    always waits for a person's ``heron jobs confirm``, and so does a ``write`` one asked
    in a turn that may not run programs itself (``Caller.confirm_risky``)."""

    def delegate(arguments: dict[str, Any]) -> dict[str, Any]:
        prompt = arguments.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise ToolInputError("delegate_job needs a 'prompt' saying what the job should do.")
        # The conversation it is delegated in (set by the agent around each call): the
        # job's events reach that session and its room, its creator is who asked.
        caller = current_caller() or Caller()
        risk = str(arguments.get("risk_level") or "read_only")
        job = jobs.create(
            prompt,
            str(arguments.get("success_criteria") or ""),
            risk,
            True if caller.confirm_risky and risk != "read_only" else None,
            by=caller.user or "agent",
            session_id=caller.session_id,
            room=caller.room,
        )
        return {
            "id": job.id,
            "state": job.state,
            "session_id": job.session_id,
            "room": job.room,
            "watch": f"heron jobs watch {job.id}",
        }

    registry.add(DELEGATE_JOB, delegate)
    return [DELEGATE_JOB]
