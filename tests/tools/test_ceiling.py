"""The tool ceiling's delegation permission (``heron.tools.ceiling``): which turns may be
offered ``delegate_job`` whatever their ceiling, and that nothing else of its safety
comes with it."""

from __future__ import annotations

from pathlib import Path

from heron.core.tools import Tool
from heron.core.workspace import Workspace
from heron.jobs.tool import DELEGATE_JOB
from heron.keys import Key
from heron.programs import load_policy
from heron.settings import Settings
from heron.tools.builtin import optional_tools, workspace_tools
from heron.tools.ceiling import delegates, permits


def test_delegation_is_the_agent_doors_and_needs_the_jobs_scope() -> None:
    on, off = Settings(agent={"delegate": True}), Settings()
    chat, jobs = Key("ana", frozenset({"chat"})), Key("bo", frozenset({"chat", "jobs"}))
    assert delegates(on, "agent") and delegates(on, "agent", jobs)
    assert not delegates(on, "agent", chat)  # a key that may not create jobs itself
    assert not delegates(off, "agent") and not delegates(off, "agent", jobs)
    for door in ("openai", "mcp", "rpc"):
        assert not delegates(on, door, jobs)  # type: ignore[arg-type]


def test_delegation_lets_delegate_job_past_a_read_ceiling_and_nothing_else(tmp_path: Path) -> None:
    settings = Settings(tools={"python_exec": True})
    workspace = Workspace(tmp_path, policy=load_policy(settings.tools.policy))
    pairs = [*workspace_tools(workspace), *optional_tools(settings)]
    executes: list[Tool] = [t for t, _ in pairs if t.safety != "read"]
    assert {t.name for t in executes} >= {"run_command", "python_exec"}
    assert permits(DELEGATE_JOB, "read", delegate=True)
    assert not permits(DELEGATE_JOB, "read", delegate=False)
    assert not any(permits(t, "read", delegate=True) for t in executes)
    assert all(permits(t, "execute", delegate=False) for t in [DELEGATE_JOB, *executes])
