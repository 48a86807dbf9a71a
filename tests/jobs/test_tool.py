"""``delegate_job`` through a real ``ToolRegistry``: the model hands a task to a job."""

from __future__ import annotations

import asyncio

import pytest

from heron.core.caller import Caller, calling
from heron.errors import InputError
from heron.jobs import JobRunner, Jobs
from heron.jobs.tool import register_job_tools
from heron.tools import ToolRegistry


def test_delegate_job_queues_a_job_and_returns_its_id(jobs: Jobs) -> None:
    registry = ToolRegistry()
    [tool] = register_job_tools(registry, jobs)
    assert tool.name == "delegate_job" and tool.parameters["required"] == ["prompt"]
    answer = registry.call(
        "delegate_job", {"prompt": "summarise what changed in the repo this week"}
    )
    assert answer["state"] == "queued" and answer["watch"].endswith(answer["id"])
    job = jobs.get(answer["id"])
    assert (job.risk_level, job.requires_confirmation) == ("read_only", False)
    assert jobs.events(job.id)[0].payload["by"] == "agent"
    asyncio.run(JobRunner(jobs).run_until_idle())
    assert jobs.get(job.id).state == "completed"


def test_the_model_cannot_skip_confirmation(jobs: Jobs) -> None:
    registry = ToolRegistry()
    register_job_tools(registry, jobs)
    answer = registry.call(
        "delegate_job",
        {"prompt": "deploy", "risk_level": "deploy_allowed", "requires_confirmation": False},
    )
    assert jobs.get(answer["id"]).requires_confirmation is True
    with pytest.raises(InputError, match="needs a 'prompt'"):
        registry.call("delegate_job", {})
    with pytest.raises(InputError, match="Choose from"):
        registry.call("delegate_job", {"prompt": "x", "risk_level": "admin"})


def test_a_job_delegated_without_execute_waits_for_a_person_unless_it_only_reads(
    jobs: Jobs,
) -> None:
    # A turn below the execute ceiling delegates by the delegation permission alone
    # (HERON_AGENT_DELEGATE): what may write waits, what only reads runs.
    registry = ToolRegistry()
    register_job_tools(registry, jobs)
    with calling(Caller(session_id="s1", confirm_risky=True)):
        write = registry.call("delegate_job", {"prompt": "fix it", "risk_level": "write"})
        read = registry.call("delegate_job", {"prompt": "what changed?"})
    assert jobs.get(write["id"]).requires_confirmation is True
    assert jobs.get(read["id"]).requires_confirmation is False
    # Under an execute ceiling a write job runs as asked.
    with calling(Caller(session_id="s1")):
        free = registry.call("delegate_job", {"prompt": "fix it", "risk_level": "write"})
    assert jobs.get(free["id"]).requires_confirmation is False
