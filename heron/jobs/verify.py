"""What a job checks besides its steps: that each success criterion was verified, and
that a read-only job left the workspace as it found it.

- ``verdicts``: each criterion of the plan (``heron.jobs.steps``) with the step that
  verified it and whether it holds, ``ok: None`` when no step could tell.
- ``quiet_environment``: what every command of a job runs with, so that checking does
  not write: no bytecode (``PYTHONDONTWRITEBYTECODE``, and ``PYTHONPYCACHEPREFIX`` for a
  program that forces it), no pytest cache (``-p no:cacheprovider``), mypy's, ruff's and
  npm's caches and ``XDG_CACHE_HOME`` in the job's own temporary folder (removed after
  the job), and no opportunistic index refresh by ``git status`` (``GIT_OPTIONAL_LOCKS``).
- ``snapshot`` and ``changes``: before and after a read-only job, ``git status
  --porcelain --ignored=matching --untracked-files=all``, and the ``lstat`` of every path
  it lists (ignored, untracked, modified: git sees them appear and go, not change; an
  ignored folder is walked) and of the git directory (hooks, config, refs; not its
  object store, whose content names itself, nor the index, whose staged content git
  status shows); the runner reports what differs (event ``workspace_changed``,
  ``result.workspace``, ``result.ok`` false). A file's ``ctime`` is in its fingerprint:
  no write leaves it as it was, ``touch -d`` included.
"""

from __future__ import annotations

import os
import stat
import subprocess
from dataclasses import dataclass, field
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
#: Paths fingerprinted at most (26,000, a checkout with its .venv, take 0.5 s on 2 cores);
#: past them the rest is not watched, the same paths each time (the walk is sorted).
MAX_FILES = 200_000


@dataclass(frozen=True)
class Snapshot:
    """What a read-only job is held to: ``status``, what ``git status`` said (with its
    exit status), or why it could not run (a string); ``files``, each listed or git path
    and its fingerprint; ``listed``, the paths git status listed."""

    status: bytes | str
    files: dict[str, str] = field(default_factory=dict)
    listed: tuple[str, ...] = ()


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


def snapshot(
    workspace: Workspace, quiet: dict[str, str], before: Snapshot | None = None
) -> Snapshot:
    """The workspace as a read-only job must leave it: two equal snapshots mean nothing
    appeared, went or changed, ignored files and the git directory included. A string
    ``status`` says why git could not run (not on the workspace's allowlist, not
    installed, too slow, its config refused): before the job, the job still runs, its
    workspace reported unchecked; after it (``before`` given), the paths git listed
    before are fingerprinted again."""
    root = workspace.root
    again = list(before.listed) if before is not None else []
    try:
        command = workspace.command(list(STATUS))
        done = subprocess.run(
            command.argv,
            cwd=root,
            env=command.env | quiet,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=STATUS_TIMEOUT,
            check=False,
        )
    except HeronError as exc:
        return Snapshot(str(exc), _fingerprints(root, again))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Snapshot(f"git status could not run: {exc}", _fingerprints(root, again))
    listed = _listed(done.stdout) if done.returncode == 0 else again
    status = f"exit {done.returncode}\0".encode() + done.stdout
    return Snapshot(status, _fingerprints(root, listed), tuple(listed))


def changes(before: Snapshot, after: Snapshot) -> list[str]:
    """What differs between two snapshots: ``+ XY path`` for a status entry that
    appeared, ``- XY path`` for one that went (``XY``: git's status letters, ``!!``
    ignored, ``??`` untracked); ``+ path``, ``- path`` and ``~ path`` for a listed file
    or one of the git directory that appeared, went or changed, unless its status entry
    says so already."""
    found: list[str] = []
    if isinstance(after.status, str):
        found.append(f"git status could not run after the job: {after.status}")
    elif isinstance(before.status, bytes) and before.status != after.status:
        old, new = _entries(before.status), _entries(after.status)
        found += [f"+ {e}" for e in sorted(new - old)] + [f"- {e}" for e in sorted(old - new)]
        if not found:  # same entries, different exit status or order
            found = ["git status changed"]
    said = {entry[5:] for entry in found if entry[:2] in ("+ ", "- ")}
    old_files, new_files = before.files, after.files
    for path in sorted(old_files.keys() | new_files.keys()):
        if path in said:
            continue
        if path not in old_files:
            found.append(f"+ {path}")
        elif path not in new_files:
            found.append(f"- {path}")
        elif old_files[path] != new_files[path]:
            found.append(f"~ {path}")
    if len(found) > MAX_CHANGES:
        found = [*found[:MAX_CHANGES], f"... and {len(found) - MAX_CHANGES} more"]
    return found


def _entries(status: bytes) -> set[str]:
    return {e.decode("utf-8", "replace") for e in status.split(b"\0") if e}


def _listed(status: bytes) -> list[str]:
    """The paths ``git status --porcelain -z`` lists: ``XY path``, a rename or copy
    followed by its source as a field of its own (which is listed too)."""
    fields = status.split(b"\0")
    paths, i = [], 0
    while i < len(fields):
        entry = fields[i].decode("utf-8", "replace")
        i += 1
        if len(entry) < 4:
            continue
        paths.append(entry[3:])
        if entry[0] in "RC" and i < len(fields):  # the source of a staged rename or copy
            paths.append(fields[i].decode("utf-8", "replace"))
            i += 1
    return paths


def _git_dirs(root: Path) -> list[Path]:
    """The repository's git directory, and the common one a worktree's ``.git`` file
    leads to (its hooks and config are there)."""
    dot = root / ".git"
    if dot.is_dir() and not dot.is_symlink():
        return [dot]
    try:
        line = dot.read_text("utf-8", "replace").strip()
    except OSError:
        return []
    if not line.startswith("gitdir:"):
        return []
    found = [(root / line.removeprefix("gitdir:").strip()).resolve()]
    try:
        common = (found[0] / "commondir").read_text("utf-8", "replace").strip()
        found.append((found[0] / common).resolve())
    except OSError:
        pass
    return [d for d in found if d.is_dir()]


def _fingerprints(root: Path, listed: list[str]) -> dict[str, str]:
    """Each of ``listed`` (walked when a folder) and each path of the git directories
    (named from the root: ``.git/hooks/pre-commit``), with its fingerprint (``_print``);
    at most ``MAX_FILES`` of them."""
    found: dict[str, str] = {}
    for path in listed:
        _walk(root / path.rstrip("/"), path.rstrip("/"), found, git_dir=False)
    for git_dir in _git_dirs(root):
        _walk(git_dir, os.path.relpath(git_dir, root), found, git_dir=True)
    return found


def _walk(top: Path, name: str, found: dict[str, str], *, git_dir: bool) -> None:
    """``found[name] = fingerprint`` for ``top`` and, for a folder (never through a
    link), for everything under it. In a git directory (any folder holding ``HEAD``),
    ``objects`` and ``index`` are left out: an object's name is its content, and what is
    staged shows in git status, while an ordinary read may refresh the index's stat cache."""
    pending = [(top, name)]
    while pending and len(found) < MAX_FILES:
        path, shown = pending.pop()
        try:
            info = os.lstat(path)
        except OSError:
            continue
        found[shown] = _print(info, path)
        if not stat.S_ISDIR(info.st_mode):
            continue
        try:
            children = sorted(os.listdir(path))  # the same order each time: see MAX_FILES
        except OSError:
            continue
        skipped = _NOT_WATCHED if git_dir and "HEAD" in children else ()
        pending += [(path / c, f"{shown}/{c}") for c in children if c not in skipped]


#: What a git directory holds that a read-only job is not held to (see ``_walk``).
_NOT_WATCHED = ("objects", "index")


def _print(info: os.stat_result, path: Path) -> str:
    """A path's fingerprint: its type and mode; a file's size, mtime and ctime (every
    write moves the ctime, which no program can set back); a link's target. A folder's
    times are left out: what appears or goes in it is reported by its own path."""
    if stat.S_ISDIR(info.st_mode):
        return f"d {info.st_mode:o}"
    if stat.S_ISLNK(info.st_mode):
        try:
            return f"l {os.readlink(path)} {info.st_ctime_ns}"
        except OSError:
            return f"l ? {info.st_ctime_ns}"
    return f"{info.st_mode:o} {info.st_size} {info.st_mtime_ns} {info.st_ctime_ns}"


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
