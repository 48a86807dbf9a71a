"""Sync-deploy as a check: follow a git remote, and undo a release that breaks.

Each run of a ``deploy`` check, on the checkout at ``path``:

1. refuse a repository whose config makes git run programs (``check_git_config``), and a
   tree with local changes to tracked files (a person is working there: nothing is
   overwritten); untracked files are no such change and never block a deploy (a merge
   that would overwrite one fails, and that release is rolled back);
2. fetch ``remote``/``branch``; the same commit as ``HEAD``: pass, nothing to do;
3. fast-forward only (a remote that rewrote history is refused, not followed);
4. release: run ``build``, restart ``units`` (``systemctl restart``) or run ``restart``,
   then the config's checks named in ``checks`` until they pass (``check_attempts``
   tries, ``check_wait`` apart);
5. when any step fails: reset to the previous commit, delete the untracked files the
   failed release left (exactly those not there before it; ignored files are the
   builds' own and are rebuilt), release that again, remember the
   bad commit (it is not deployed again; the check stays failed, so its incident stays
   open, until the remote moves on) and fail, which alerts.

Git runs with ``heron.programs.env``'s hardened environment; every step is an action.
"""

from __future__ import annotations

import time
from typing import Any

from heron.ops.watchdog import config as cfg
from heron.ops.watchdog.outcome import Context, Outcome
from heron.ops.watchdog.programs import Ran, environment, run_program
from heron.ops.watchdog.remedies import apply, result
from heron.programs import ProgramRefused, check_git_config


class _Git:
    def __init__(self, spec: cfg.DeployCheck) -> None:
        self.spec = spec
        self.env = environment(spec.environment)

    def __call__(self, *args: str) -> Ran:
        return run_program(["git", *args], timeout=self.spec.timeout, env=self.env,
                           cwd=self.spec.path)  # fmt: skip

    def out(self, *args: str) -> str | None:
        ran = self(*args)
        return ran.stdout.strip() if ran.ok else None


def sync_deploy(spec: cfg.DeployCheck, context: Context) -> Outcome:
    """One run of a ``deploy`` check: the steps of the module doc, each refusal and
    failure an outcome that fails."""
    git = _Git(spec)
    where = f"{spec.path} ({spec.remote}/{spec.branch})"
    head = _ready(spec, git, where)
    if isinstance(head, Outcome):
        return head
    fetched = git("fetch", "--quiet", "--", spec.remote, spec.branch)
    target = git.out("rev-parse", "--verify", "FETCH_HEAD") if fetched.ok else None
    if target is None:
        return Outcome(False, f"{where}: cannot fetch: {fetched.summary()}", data={"head": head})
    data = {"head": head, "remote": target}
    if target == head:
        context.memory.pop("rolled_back", None)
        return Outcome(True, f"{where}: up to date at {head[:12]}", data=data)
    if context.memory.get("rolled_back") == target:
        return Outcome(
            False,
            f"{where}: {target[:12]} failed its checks and was rolled back to {head[:12]}; "
            "push a fix to deploy again",
            data=data,
        )
    if not git("merge-base", "--is-ancestor", head, target).ok:
        return Outcome(
            False,
            f"{where}: {target[:12]} is not a fast-forward of {head[:12]} (history was "
            "rewritten); not deploying. Reset the checkout by hand if that was meant.",
            data=data,
        )
    return _deploy(spec, context, git, where, data)


def _ready(spec: cfg.DeployCheck, git: _Git, where: str) -> str | Outcome:
    """``HEAD``'s commit, or the outcome that refuses the checkout: missing, a git
    config that runs programs, no commit, local changes to tracked files."""
    if not spec.path.is_dir():
        return Outcome(False, f"{spec.path} does not exist; clone the repository there first")
    try:
        check_git_config(spec.path, git.env)
    except ProgramRefused as exc:
        return Outcome(False, str(exc))
    head = git.out("rev-parse", "--verify", "HEAD")
    if head is None:
        return Outcome(False, f"{spec.path} is not a git checkout with a commit")
    dirty = git("status", "--porcelain", "--untracked-files=no")
    if not dirty.ok or dirty.stdout.strip():
        changes = dirty.stdout.strip().splitlines()[:3] if dirty.ok else [dirty.summary()]
        return Outcome(
            False,
            f"{where}: the checkout has local changes ({'; '.join(changes)}); not deploying. "
            "Commit or discard them (git status shows them).",
            data={"head": head},
        )
    return head


def _deploy(
    spec: cfg.DeployCheck, context: Context, git: _Git, where: str, data: dict[str, str]
) -> Outcome:
    """Fast-forward from ``data["head"]`` to ``data["remote"]`` and release it; when that
    fails, roll back to the previous commit and remember the bad one."""
    head, target = data["head"], data["remote"]
    actions: list[dict[str, Any]] = []
    before = _untracked(git)
    if before is None:
        return Outcome(False, f"{where}: cannot list untracked files", data=data)
    merged = git("merge", "--ff-only", "--quiet", target)
    actions.append({"action": "deploy", "from": head, "to": target, **result(merged)})
    failure = _release(spec, context, actions) if merged.ok else merged.summary()
    if failure is None:
        return Outcome(True, f"{where}: deployed {target[:12]}", data=data, actions=actions)
    reset = git("reset", "--hard", "--quiet", head)
    if reset.ok:
        actions.append(_clean(spec, git, before))
    again = _release(spec, context, actions) if reset.ok else reset.summary()
    actions.append(
        {"action": "rollback", "from": target, "to": head, **result(reset),
         "healthy": again is None, "healthy_detail": again or "checks pass"}
    )  # fmt: skip
    context.memory["rolled_back"] = target
    after = "the previous release passes its checks" if again is None else f"but: {again}"
    return Outcome(
        False,
        f"{where}: deploying {target[:12]} failed ({failure}); rolled back to {head[:12]}, {after}",
        data={**data, "rolled_back": target},
        actions=actions,
    )


def _untracked(git: _Git) -> set[str] | None:
    """The untracked files git does not ignore, relative to the checkout."""
    ran = git("ls-files", "--others", "--exclude-standard", "-z")
    return set(filter(None, ran.stdout.split("\0"))) if ran.ok else None


def _clean(spec: cfg.DeployCheck, git: _Git, before: set[str]) -> dict[str, Any]:
    """Delete what the failed release left untracked (and the folders that leaves empty),
    so the next good commit finds the checkout as it was; files there before are kept."""
    now = _untracked(git)
    if now is None:
        return {"action": "clean", "ok": False, "removed": [], "detail": "cannot list files"}
    removed, failed = [], []
    root = spec.path.resolve()
    for name in sorted(now - before):
        path = spec.path / name
        try:
            path.unlink()
            removed.append(name)
        except OSError as exc:
            failed.append(f"{name}: {exc.strerror or exc}")
            continue
        parent = path.parent
        while parent.resolve() != root and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent
    detail = f"removed {len(removed)} untracked files the failed release left"
    if failed:
        detail += f"; could not remove: {'; '.join(failed[:5])}"
    return {"action": "clean", "ok": not failed, "removed": removed[:50], "detail": detail}


def _release(spec: cfg.DeployCheck, context: Context, actions: list[dict[str, Any]]) -> str | None:
    """Build, restart and check the checkout as it is; why it failed, or None."""
    env = environment(spec.environment)
    if spec.build:
        ran = run_program(spec.build, timeout=spec.timeout, env=env, cwd=spec.path)
        actions.append({"action": "build", "argv": spec.build, **result(ran)})
        if not ran.ok:
            return f"build failed: {ran.summary()}"
    for unit in spec.units:
        record = apply(cfg.SystemdRemedy(kind="systemd", unit=unit))
        actions.append({**record, "action": "restart"})
        if not record["ok"]:
            return f"restart of {unit} failed: {record['detail']}"
    if spec.restart:
        ran = run_program(spec.restart, timeout=spec.timeout, env=env, cwd=spec.path)
        actions.append({"action": "restart", "argv": spec.restart, **result(ran)})
        if not ran.ok:
            return f"restart failed: {ran.summary()}"
    return _verify(spec, context, actions)


def _verify(spec: cfg.DeployCheck, context: Context, actions: list[dict[str, Any]]) -> str | None:
    failed: list[str] = []
    for attempt in range(1, spec.check_attempts + 1):
        outcomes = context.run_named(spec.checks)
        failed = [f"{name}: {outcome.detail}" for name, outcome in outcomes if not outcome.ok]
        if not failed:
            break
        if attempt < spec.check_attempts:
            time.sleep(spec.check_wait)
    actions.append({"action": "verify", "checks": spec.checks, "ok": not failed,
                    "detail": "; ".join(failed) or "all pass"})  # fmt: skip
    return f"checks failed: {'; '.join(failed)}" if failed else None
