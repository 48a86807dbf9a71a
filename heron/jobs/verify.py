"""What a job checks besides its steps: that each success criterion was verified, and
that a read-only job left the workspace as it found it.

- ``verdicts``: each criterion of the plan (``heron.jobs.steps``) with the step that
  verified it and whether it holds, ``ok: None`` when no step could tell.
- ``quiet_environment``: what every command of a job runs with, so that checking does
  not write: no bytecode (``PYTHONDONTWRITEBYTECODE``, and ``PYTHONPYCACHEPREFIX`` for a
  program that forces it), no pytest cache (``-p no:cacheprovider``), mypy's, ruff's and
  npm's caches and ``XDG_CACHE_HOME`` in the job's own temporary folder (removed after
  the job), and no opportunistic index refresh by ``git status`` (``GIT_OPTIONAL_LOCKS``).
- ``snapshot`` and ``changes``: ``git status --porcelain --ignored=matching
  --untracked-files=all`` before and after a read-only job; the runner reports what
  differs (event ``workspace_changed``, ``result.workspace``, ``result.ok`` false).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from heron.core.workspace import Workspace
from heron.errors import HeronError
from heron.jobs.steps import Plan

STATUS = ("git", "status", "--porcelain", "--ignored=matching", "--untracked-files=all", "-z")
#: Seconds the workspace's ``git status`` may take.
STATUS_TIMEOUT = 60.0
#: Changes a report names; more are counted.
MAX_CHANGES = 50


def quiet_environment(caches: Path) -> dict[str, str]:
    """The variables that keep a job's commands from writing into the workspace, their
    caches under ``caches`` (outside it)."""
    return {
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPYCACHEPREFIX": str(caches / "pycache"),
        "PYTEST_ADDOPTS": "-p no:cacheprovider",
        "MYPY_CACHE_DIR": str(caches / "mypy"),
        "RUFF_CACHE_DIR": str(caches / "ruff"),
        "npm_config_cache": str(caches / "npm"),
        "XDG_CACHE_HOME": str(caches / "cache"),
        "GIT_OPTIONAL_LOCKS": "0",
    }


def snapshot(workspace: Workspace, quiet: dict[str, str]) -> bytes | str:
    """What ``git status`` says of the workspace (with its exit status): two equal
    snapshots mean nothing appeared, went or changed state, ignored files included. A
    string says why none could be taken (git not on the workspace's allowlist, not
    installed, too slow): the job still runs, its workspace reported unchecked."""
    try:
        command = workspace.command(list(STATUS))
        done = subprocess.run(
            command.argv,
            cwd=workspace.root,
            env=command.env | quiet,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=STATUS_TIMEOUT,
            check=False,
        )
    except HeronError as exc:
        return str(exc)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"git status could not run: {exc}"
    return f"exit {done.returncode}\0".encode() + done.stdout


def changes(before: bytes, after: bytes) -> list[str]:
    """What differs between two snapshots: ``+ XY path`` for an entry that appeared,
    ``- XY path`` for one that went (``XY``: git's status letters, ``!!`` ignored, ``??``
    untracked)."""
    if before == after:
        return []
    old, new = _entries(before), _entries(after)
    found = [f"+ {e}" for e in sorted(new - old)] + [f"- {e}" for e in sorted(old - new)]
    if not found:  # same entries, different exit status or order
        found = ["git status changed"]
    if len(found) > MAX_CHANGES:
        found = [*found[:MAX_CHANGES], f"... and {len(found) - MAX_CHANGES} more"]
    return found


def _entries(status: bytes) -> set[str]:
    return {e.decode("utf-8", "replace") for e in status.split(b"\0") if e}


def verdicts(plan: Plan, outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each criterion as ``{"criterion", "step", "ok"}`` (and ``why`` when ``ok`` is not
    true): ``ok`` from the output of the step that verifies it, ``None`` when none ran."""
    by_step = {o["step"]: o for o in outputs}
    found = []
    for criterion in plan.criteria:
        output = by_step.get(criterion.step or "")
        if output is None:
            why = criterion.why or f"the {criterion.step} step did not run"
            found.append({"criterion": criterion.text, "step": None, "ok": None, "why": why})
            continue
        ok, why = _holds(criterion.step or "", output)
        verdict = {"criterion": criterion.text, "step": criterion.step, "ok": ok}
        found.append(verdict | ({"why": why} if why else {}))
    return found


def _holds(step: str, output: dict[str, Any]) -> tuple[bool, str]:
    """Whether ``step``'s output meets a criterion of its kind, and why not."""
    if not output.get("ok"):
        return False, str(output.get("error") or f"exit status {output.get('exit_code')}")
    if step == "git_status":
        lines = [ln for ln in str(output.get("stdout", "")).splitlines() if ln.strip()]
        changed = [ln for ln in lines if not ln.startswith("##")]
        return not changed, f"{len(changed)} changed or untracked paths" if changed else ""
    if step == "search_docs":
        return bool(output.get("results")), "" if output.get("results") else "nothing found"
    if step == "store_counts":
        counted = bool(output.get("records"))  # the jobs count this one: not a finding
        return counted, "" if counted else "the store holds no records"
    return True, ""
