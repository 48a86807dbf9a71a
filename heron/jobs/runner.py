"""``JobRunner``: workers that claim queued jobs and run their steps.

Used inside ``heron serve`` (``serve()``, a concurrency limit), by the ``heron jobs run``
worker command, and by tests (``run_until_idle()``)::

    runner = job_runner(open_jobs(settings))    # heron.agent: the docs search and the model
    asyncio.run(runner.run_until_idle())

What the steps use from other capabilities is handed in: ``search`` (the libraries'
search, for ``search_docs``) and ``broker`` (opens the chat broker that writes the
summary). ``heron.wiring.job_runner`` wires both; a ``JobRunner`` built without them fails
a ``search_docs`` step saying so and keeps the summary built from the steps' outputs.

**Abort** is written to the store by whoever asks (another process included). While a
command runs, its worker reads the job every ``poll`` seconds (0.1 by default); once the
job is no longer ``running`` it kills the command's whole process group (each command
starts its own session) and stops. In-process calls (the docs search) cannot be
interrupted; the job is marked ``aborted`` at once and the worker stops after the call.

**Contexts** (``heron.core.contexts``): one runner claims every context's jobs, and
runs each one in its own context: a job of another context than the runner's is run by
a runner on that context's view of the jobs (``Jobs.within``: its workspace, its
settings), made once per context by ``runner_for`` (``heron.wiring.job_runner`` wires
its docs search to that context's libraries), with this runner's worker name.

**Recovery** (``recover()``, run when a runner starts and, while ``serve`` runs, every
quarter of ``jobs_visibility_timeout``): a ``running`` job is orphaned when its worker was
a process on this machine that no longer exists, or its worker's heartbeat is older than
``jobs_visibility_timeout`` s. A runner beats for every job it holds every ``HEARTBEAT``
s, whatever the job is doing, so a silent worker is a dead (or cut-off) one, on whichever
host: any runner on the database takes its jobs over, replicas of one PostgreSQL
included. An orphan whose steps are all read-only (no test command) is put back in the
queue (another runner resumes it: its steps run again, which read-only steps allow), at
most ``MAX_ATTEMPTS`` runs in all; any other orphan is marked ``failed``, because its
command may have left half-done work that a person should look at. Both get an event
saying why. The takeover is decided inside the job's transaction (``held_by`` the worker
seen, ``stale_before``): of runners recovering at once one wins, and a worker that beat
meanwhile keeps its job. A worker whose job was taken over notices at its next check
(the job is no longer held by it), stops its command and writes nothing more.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import secrets
import signal
import socket
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Container
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heron.core.errors import ToolCallError, ToolInputError
from heron.core.workspace import MAX_OUTPUT, Workspace
from heron.errors import ConfigError, HeronError
from heron.jobs.errors import IllegalTransition
from heron.jobs.model import Job
from heron.jobs.service import Jobs, open_workspace, workspace_contexts
from heron.jobs.steps import Plan, Step, plan
from heron.jobs.summary import ChatBroker, facts, written
from heron.jobs.verify import Snapshot, changes, quiet_environment, snapshot, verdicts
from heron.programs.processes import alive
from heron.redact import redact_then_cut

if TYPE_CHECKING:
    from heron.settings import Settings
    from heron.store import Store

#: ``search(query, store) -> results as dicts``: the libraries' search (``search_docs``).
Search = Callable[[str, "Store"], list[dict[str, Any]]]
#: ``runner_for(jobs, worker=, poll=, store=, seen=)``: the runner of a context's jobs (a view,
#: ``Jobs.within``); ``heron.wiring.job_runner`` fits.
RunnerFor = Callable[..., "JobRunner"]

log = logging.getLogger("heron.jobs")

HEARTBEAT = 2.0
MAX_ATTEMPTS = 3
IDLE_POLL = 0.25
#: The jobs a ``store_counts`` step counts by state, newest first.
COUNTED_JOBS = 10_000


class Stopped(Exception):
    """The job left ``running`` (aborted elsewhere) while a step ran."""


@dataclass
class _Outcome:
    ok: bool
    detail: dict[str, Any]


class JobRunner:
    def __init__(
        self,
        jobs: Jobs,
        *,
        concurrency: int | None = None,
        poll: float = 0.1,
        worker: str | None = None,
        store: Callable[[], Store] | None = None,
        search: Search | None = None,
        broker: Callable[[], ChatBroker] | None = None,
        runner_for: RunnerFor | None = None,
        seen: Callable[[Settings], Container[str]] | None = None,
    ) -> None:
        """``store`` gives a shared search store (the server's) to the docs and index
        steps; without it each such step opens the configured one and closes it.
        ``seen(settings)``: the store namespaces a job of that context may count
        (``heron.tenancy.namespaces_seen``, which the server and the CLI hand in: another
        context's library names are its own); without it, every namespace.
        ``search`` answers the ``search_docs`` step; ``broker()`` opens the broker whose
        capable model writes the summary (closed after it). Both come from the caller
        (``heron.wiring.job_runner``). ``runner_for`` makes the runner of another
        context's jobs (module docstring); without it, a bare ``JobRunner`` (no docs
        search, no model summary), so this runner's search never answers a job of
        another context from libraries that context does not see."""
        self.jobs = jobs
        self._runner_for = runner_for or JobRunner
        self._contexts: dict[str, JobRunner] = {}
        self._shared_store = store
        self._search = search
        self._broker = broker
        self._seen = seen
        self.settings = jobs.settings
        self.concurrency = concurrency or self.settings.jobs.concurrency
        self.poll = poll
        self.worker = worker or f"{self.settings.replica}:{os.getpid()}:{secrets.token_hex(3)}"

    # -- the loop -------------------------------------------------------------------------

    async def run_until_idle(self) -> int:
        """Run queued jobs until none is left; returns how many were run."""
        return await self._loop(stop=None)

    async def serve(self, stop: asyncio.Event, *, recover: bool = True) -> None:
        """Recover orphans (unless told not to), then run jobs as they come until ``stop``
        is set."""
        if recover:
            await asyncio.to_thread(self.recover)
        await self._loop(stop=stop)

    async def _loop(self, stop: asyncio.Event | None) -> int:
        wake = asyncio.Event()
        loop = asyncio.get_running_loop()
        unsubscribe = self.jobs.subscribe(lambda: loop.call_soon_threadsafe(wake.set))
        running: dict[asyncio.Task[Job], str] = {}
        count = 0
        beat = recheck = time.monotonic()
        recovering: asyncio.Task[list[Job]] | None = None
        try:
            while stop is None or not stop.is_set():
                if running and time.monotonic() - beat >= HEARTBEAT:
                    beat = time.monotonic()
                    await asyncio.to_thread(self._beat, list(running.values()))
                # Serving, orphans are looked for again and again: a replica that died
                # (on any host) leaves its jobs to the runners still alive.
                every = self.settings.jobs.visibility_timeout / 4
                if stop is not None and recovering is None and time.monotonic() - recheck >= every:
                    recheck = time.monotonic()
                    recovering = asyncio.create_task(asyncio.to_thread(self.recover))
                if recovering is not None and recovering.done():
                    if not recovering.cancelled() and recovering.exception() is not None:
                        log.error("job recovery failed: %s", recovering.exception())
                    recovering = None
                job = None
                if len(running) < self.concurrency:
                    # Only the jobs it can run: one of a context without a workspace here
                    # waits for a worker that has it (heron.toml is read anew: a reload).
                    can = workspace_contexts(self.settings)
                    job = await asyncio.to_thread(self.jobs.claim, self.worker, can)
                if job is not None:
                    count += 1
                    task = asyncio.create_task(self.run_job(job))
                    running[task] = job.id
                    task.add_done_callback(lambda done: running.pop(done, None))
                    continue
                if stop is None and not running:
                    return count
                wake.clear()
                waits: list[asyncio.Future[Any]] = [asyncio.ensure_future(wake.wait())]
                waits += list(running)
                if stop is not None:
                    waits.append(asyncio.ensure_future(stop.wait()))
                await asyncio.wait(waits, timeout=IDLE_POLL, return_when=asyncio.FIRST_COMPLETED)
                for waiter in waits:
                    if waiter not in running:
                        waiter.cancel()
            return count
        finally:
            unsubscribe()
            # Leaving (server shutdown): running jobs get cancelled, which kills their
            # commands; their state stays ``running`` and the next start, or another
            # replica once their heartbeat is stale, recovers them.
            tasks = list(running)
            for task in tasks:
                task.cancel()
            if recovering is not None:
                tasks.append(recovering)
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)

    def _beat(self, held: list[str]) -> None:
        """The heartbeat of every job this runner holds, whatever its step is doing."""
        for job_id in held:
            try:
                self.jobs.store.heartbeat(job_id, self.worker)
            except HeronError as exc:  # the database away for a moment: the next beat
                log.warning("heartbeat of job %s not written: %s", job_id, exc)

    # -- one job --------------------------------------------------------------------------

    def plan(self, job: Job) -> Plan:
        """The job's steps and which verifies each criterion (``heron.jobs.steps``)."""
        settings = self.settings
        return plan(
            job.prompt,
            job.success_criteria,
            test_command=settings.jobs.test_command,
            typecheck_command=settings.jobs.typecheck_command,
            remote=settings.jobs.remote,
        )

    def within(self, context: str) -> JobRunner:
        """The runner of ``context``'s jobs: this one for its own context, else one on
        that context's view of the jobs, with this worker's name (its heartbeats hold
        the jobs this one claimed). ``NotFound`` for a context heron.toml no longer
        defines."""
        if context == self.jobs.context:
            return self
        if context not in self._contexts:
            scoped = self.jobs.within(self.settings.in_context(context))
            self._contexts[context] = self._runner_for(
                scoped,
                worker=self.worker,
                poll=self.poll,
                store=self._shared_store,
                seen=self._seen,
            )
        return self._contexts[context]

    async def run_job(self, job: Job) -> Job:
        """Run a claimed job to its end (or its gate), in its context; returns the job
        as stored."""
        try:
            runner = self.within(job.context)
        except HeronError as exc:  # its context was removed from heron.toml
            return await self._fail(job, {"error": f"Job {job.id}'s context: {exc}"})
        if runner is not self:
            return await runner.run_job(job)
        planned = self.plan(job)
        try:
            if job.requires_confirmation and job.confirmed_by is None:
                return await self._park(job, planned.steps)
            return await self._carry_out(job, planned)
        except (Stopped, IllegalTransition):
            return await asyncio.to_thread(self.jobs.get, job.id)
        except (ConfigError, ToolInputError) as exc:
            return await self._fail(job, {"error": str(exc)})
        except Exception as exc:
            # A store or runner fault: the job must not stay "running" behind a live worker.
            log.exception("job %s failed", job.id)
            error = f"Internal error ({type(exc).__name__}); see the worker's log."
            return await self._fail(job, {"error": error})

    async def _park(self, job: Job, steps: list[Step]) -> Job:
        """``job`` waiting for a person's confirmation, its steps shown to them."""
        parked, _ = await asyncio.to_thread(
            functools.partial(
                self.jobs.transition,
                job.id,
                "waiting_for_confirmation",
                "waiting",
                {
                    "steps": [s.to_dict() for s in steps],
                    "next": f"heron jobs confirm {job.id}  (or: heron jobs deny {job.id})",
                },
                held_by=self.worker,
            )
        )
        return parked

    async def _carry_out(self, job: Job, planned: Plan) -> Job:
        """Run ``planned``'s steps in the workspace (a read-only job's held to leaving it
        as it was), then complete the job with its verdicts and summary."""
        workspace = open_workspace(self.settings)
        with tempfile.TemporaryDirectory(prefix="heron-job-") as caches:
            quiet = quiet_environment(Path(caches))
            before = None
            if job.risk_level == "read_only":
                before = await asyncio.to_thread(snapshot, workspace, quiet)
            results, outputs = [], []
            for step in planned.steps:
                await self._check(job)
                outcome = await self._step(job, step, workspace, quiet)
                results.append({"step": step.name, "ok": outcome.ok} | _brief(outcome.detail))
                outputs.append(
                    {"step": step.name, "ok": outcome.ok, "argv": list(step.argv or ())}
                    | outcome.detail
                )
            changed, seen = await _workspace_after(before, workspace, quiet)
        await self._check(job)
        if changed:
            await asyncio.to_thread(
                self.jobs.append, job.id, "workspace_changed", {"changes": changed}
            )
        criteria = verdicts(planned, outputs)
        summary = await asyncio.to_thread(self._summarize, job, outputs)
        await self._check(job)  # a model's summary takes seconds: an abort meanwhile wins
        result = _result(job, criteria, results, summary, changed, seen)
        done, _ = await asyncio.to_thread(
            functools.partial(
                self.jobs.transition,
                job.id,
                "completed",
                "completed",
                {"ok": result["ok"]},
                result=result,
                held_by=self.worker,
            )
        )
        return done

    async def _fail(self, job: Job, payload: dict[str, Any]) -> Job:
        store = self.jobs.store
        try:
            failed, _ = await asyncio.to_thread(
                functools.partial(
                    self.jobs.transition, job.id, "failed", "failed", payload, held_by=self.worker
                )
            )
            return failed
        except IllegalTransition:  # aborted or taken over meanwhile: that stands
            return await asyncio.to_thread(store.get, job.id)

    async def _check(self, job: Job) -> None:
        current = await asyncio.to_thread(self.jobs.store.heartbeat, job.id, self.worker)
        if not self._holds(current):
            raise Stopped(job.id)

    def _holds(self, current: Job) -> bool:
        """Whether this runner still runs ``current``: not aborted, not taken over."""
        return current.state == "running" and current.worker == self.worker

    async def _step(
        self, job: Job, step: Step, workspace: Workspace, quiet: dict[str, str]
    ) -> _Outcome:
        started = time.monotonic()
        try:
            if step.argv is None:
                await asyncio.to_thread(self.jobs.append, job.id, "step_started", step.to_dict())
                detail = await asyncio.to_thread(self._call, step, job)
                outcome = _Outcome(True, detail)
            else:
                outcome = await self._command(job, step, workspace, quiet)
        except Stopped:
            raise
        except Exception as exc:  # a step's failure is the job's finding, not a crash
            outcome = _Outcome(False, {"error": str(exc) or type(exc).__name__})
        outcome.detail["seconds"] = round(time.monotonic() - started, 3)
        kind = "step_finished" if "error" not in outcome.detail else "step_failed"
        await asyncio.to_thread(
            self.jobs.append, job.id, kind, {"step": step.name, "ok": outcome.ok} | outcome.detail
        )
        return outcome

    async def _command(
        self, job: Job, step: Step, workspace: Workspace, quiet: dict[str, str]
    ) -> _Outcome:
        """Run ``step``'s command in the workspace, watched by ``_watch``; its exit code
        and the tails of its output."""
        assert step.argv is not None
        # The same checks and environment as run_command (heron.programs): allowlist,
        # argument policy, minimal environment, hardened git, the repository's config.
        command = await asyncio.to_thread(
            workspace.command, list(step.argv), configured=step.configured
        )
        argv = step.argv
        try:
            proc = await asyncio.create_subprocess_exec(
                *command.argv,
                cwd=workspace.root,
                env=command.env | quiet,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,  # its own process group: abort kills its children too
            )
        except OSError as exc:
            raise ToolCallError(
                f"Cannot run {argv[0]!r}: {exc.strerror}. Is it installed and on PATH?"
            ) from exc
        await asyncio.to_thread(
            self.jobs.append, job.id, "step_started", step.to_dict() | {"pid": proc.pid}
        )
        output = asyncio.create_task(proc.communicate())
        try:
            finished = await self._watch(job, step, proc.pid, output, workspace.timeout)
        except asyncio.CancelledError:
            _kill(proc.pid)
            raise
        if not finished:
            return _Outcome(
                False,
                {
                    "error": f"{argv[0]!r} did not finish within {workspace.timeout:g} s "
                    "and was killed; raise HERON_JOBS_COMMAND_TIMEOUT if it needs longer."
                },
            )
        stdout, stderr = output.result()
        return _Outcome(
            proc.returncode == 0,
            {
                "exit_code": proc.returncode,
                "stdout": redact_then_cut(stdout, MAX_OUTPUT, keep="tail"),
                "stderr": redact_then_cut(stderr, MAX_OUTPUT, keep="tail"),
            },
        )

    async def _watch(
        self, job: Job, step: Step, pid: int, output: asyncio.Task[Any], timeout: float
    ) -> bool:
        """Wait for the command ``pid`` to end, beating for ``job`` every ``HEARTBEAT``
        s: False once it ran past ``timeout`` s and was killed; killed too, with
        ``Stopped``, when the job was aborted or taken over."""
        deadline = time.monotonic() + timeout
        beat = time.monotonic()
        while not output.done():
            await asyncio.wait({output}, timeout=self.poll)
            if output.done():
                break
            if time.monotonic() > deadline:
                _kill(pid)
                await output
                return False
            current = await asyncio.to_thread(self.jobs.store.get, job.id)
            if not self._holds(current):
                _kill(pid)
                await output
                if current.state != "running":  # else re-claimed: its holder writes alone
                    await asyncio.to_thread(
                        self.jobs.append,
                        job.id,
                        "step_killed",
                        {"step": step.name, "pid": pid, "because": current.state},
                    )
                raise Stopped(job.id)
            if time.monotonic() - beat > HEARTBEAT:
                beat = time.monotonic()
                await asyncio.to_thread(self.jobs.store.heartbeat, job.id, self.worker)
        return True

    def _call(self, step: Step, job: Job) -> dict[str, Any]:
        from heron.store import open_store

        store = self._shared_store() if self._shared_store else open_store(self.settings)
        try:
            if step.name == "search_docs":
                if self._search is None:
                    raise ConfigError(
                        "This job runner has no docs search; build it with "
                        "heron.wiring.job_runner (as heron jobs run and heron serve do)."
                    )
                return {"results": self._search(job.prompt, store)}
            # The job's context's namespaces alone: another's library names are its own.
            seen = self._seen(self.settings) if self._seen is not None else None
            namespaces = [
                {"name": ns.name, "records": ns.count, "model": ns.model_id, "dim": ns.dim}
                for ns in store.namespaces()
                if seen is None or ns.name in seen
            ]
            jobs = Counter(j.state for j in self.jobs.list(limit=COUNTED_JOBS))
            return {
                "namespaces": namespaces,
                "records": sum(ns["records"] for ns in namespaces),
                "jobs": dict(sorted(jobs.items())),
            }
        finally:
            if self._shared_store is None:
                store.close()

    def _summarize(self, job: Job, outputs: list[dict[str, Any]]) -> dict[str, Any]:
        """``summary`` (what the checks found), ``facts`` (the same, built from the outputs
        alone) and ``summary_by`` (``steps``, or the alias of the model that wrote it); a
        capable default model writes the summary, and when it cannot, ``summary_note``
        says why the facts stand instead (heron.jobs.summary)."""
        found = facts(outputs)
        result: dict[str, Any] = {"summary": found, "facts": found, "summary_by": "steps"}
        note = "The model's summary was not used ({}); this one is built from the step outputs."
        if self._broker is None:
            return result  # no model to write one: the facts are the summary
        try:
            broker = self._broker()
        except HeronError as exc:  # a broken models.yml must not cost the job its result
            return result | {"summary_note": note.format(exc)}
        try:
            if broker.capabilities().answers != "generative":
                return result  # the bundled model's summaries would be worse than the facts
            text, alias = written(
                broker,
                job.prompt,
                job.success_criteria,
                outputs,
                found,
                timeout=self.settings.llm.timeout,
            )
        except HeronError as exc:
            return result | {"summary_note": note.format(exc)}
        finally:
            broker.close()
        return result | {"summary": text, "summary_by": alias}

    # -- recovery -------------------------------------------------------------------------

    def recover(self) -> list[Job]:
        """Requeue or fail the ``running`` jobs whose worker is gone (rule above)."""
        store = self.jobs.store
        timeout = self.settings.jobs.visibility_timeout
        recovered = []
        for job in store.list(["running"], limit=100_000):
            if job.worker == self.worker:
                continue  # its own: alive, since this runs
            seen = time.time()
            orphaned = _orphaned(job, timeout)
            if orphaned is None:
                continue
            why, silent = orphaned
            stale = seen - timeout if silent else None
            try:
                read_only = self.within(job.context).plan(job).read_only
            except HeronError:  # its context is gone from heron.toml: its own settings are
                read_only = False
            self._kill_leftover(job)
            try:
                if read_only and job.attempts < MAX_ATTEMPTS:
                    job, _ = self.jobs.transition(
                        job.id,
                        "queued",
                        "requeued",
                        {"reason": why, "attempts": job.attempts, "by": self.worker},
                        expect="running",
                        held_by=job.worker,
                        stale_before=stale,
                    )
                else:
                    reason = f"{why}; not retried: " + (
                        "it runs a command that may write"
                        if not read_only
                        else f"{job.attempts} attempts already"
                    )
                    job, _ = self.jobs.transition(
                        job.id,
                        "failed",
                        "failed",
                        {"reason": reason, "by": self.worker},
                        expect="running",
                        held_by=job.worker,
                        stale_before=stale,
                    )
            except IllegalTransition:
                continue  # another runner recovered it first, or its worker is alive
            recovered.append(job)
        return recovered

    def _kill_leftover(self, job: Job) -> None:
        """Kill the command a dead worker on this machine left running: it runs in its
        own session, so it outlived the worker. Its pid is its process group's id."""
        if _host(job) != socket.gethostname():
            return
        events = self.jobs.store.events(job.id, limit=100_000)
        started = [e for e in events if e.kind == "step_started" and "pid" in e.payload]
        if not started or any(
            e.seq > started[-1].seq for e in events if e.kind.startswith("step_")
        ):
            return
        pid = int(started[-1].payload["pid"])
        if alive(pid) or _group_alive(pid):
            _kill(pid)
            self.jobs.append(
                job.id,
                "step_killed",
                {
                    "step": started[-1].payload.get("step"),
                    "pid": pid,
                    "because": "its worker is gone",
                },
            )


def _host(job: Job) -> str:
    return (job.worker or "").partition(":")[0]


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _orphaned(job: Job, timeout: float) -> tuple[str, bool] | None:
    """Why ``job``'s worker is gone, and whether that is its stale heartbeat (which the
    takeover checks again in its transaction); ``None``: it is not gone. A worker named
    after this host (``HERON_REPLICA`` left at the host name) is looked up by its process
    id; any other by its heartbeat alone."""
    host, _, rest = (job.worker or "").partition(":")
    pid = rest.partition(":")[0]
    if host == socket.gethostname() and pid.isdigit() and not alive(int(pid)):
        return f"its worker (process {pid} on {host}) is gone", False
    if job.heartbeat_at is None or time.time() - job.heartbeat_at > timeout:
        return f"its worker {job.worker} sent no heartbeat for over {timeout:g} s", True
    return None


def _kill(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def _brief(detail: dict[str, Any]) -> dict[str, Any]:
    return {k: detail[k] for k in ("exit_code", "error") if k in detail}


async def _workspace_after(
    before: Snapshot | None, workspace: Workspace, quiet: dict[str, str]
) -> tuple[list[str], list[str] | str | None]:
    """What a job changed in the workspace since ``before``, and the result's
    ``workspace`` entry: the changes, ``unchanged``, or why git could not tell; None
    for a job that may write (nothing snapshot)."""
    if before is None:
        return [], None
    if isinstance(before.status, str):
        return [], f"unchecked: {before.status}"
    # git refusing to run after the job (config that names a program now) is one of
    # the changes, not a reason to stop checking.
    after = await asyncio.to_thread(snapshot, workspace, quiet, before)
    changed = changes(before, after)
    return changed, changed or "unchanged"


def _result(
    job: Job,
    criteria: list[dict[str, Any]],
    results: list[dict[str, Any]],
    summary: dict[str, Any],
    changed: list[str],
    seen: list[str] | str | None,
) -> dict[str, Any]:
    """A completed job's result: ``ok`` (None when a criterion went unchecked), its
    criteria, steps and summary, and what it did to the workspace (``seen``)."""
    unverified = [c["criterion"] for c in criteria if c["ok"] is None]
    ok: bool | None = all(r["ok"] for r in results) and not changed
    if ok and any(c["ok"] is False for c in criteria):
        ok = False
    if ok and unverified:
        ok = None  # a criterion nothing checked is not met: not known either way
    result = {
        "ok": ok,
        "success_criteria": job.success_criteria,
        "criteria": criteria,
        "unverified": unverified,
        "steps": results,
        **summary,
    }
    if seen is not None:
        result["workspace"] = seen
    return result
