"""``Jobs``: what the CLI, the server and the agent's ``delegate_job`` tool call.

>>> jobs = open_jobs(Settings())                                    # doctest: +SKIP
>>> job = jobs.create("is main broken?", success_criteria="tests pass")  # doctest: +SKIP
>>> asyncio.run(job_runner(jobs).run_until_idle())       # heron.agent  # doctest: +SKIP
>>> jobs.get(job.id).result["summary"]                              # doctest: +SKIP
'On branch main: 1 file changed (app.py), 1 insertion, 1 deletion. Tests: 12 passed in 3.20s.'
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import threading
from collections.abc import AsyncIterator, Callable, Collection, Iterable
from pathlib import Path
from typing import Any

from heron.core.contexts import DEFAULT
from heron.core.workspace import Workspace
from heron.db import database_path, open_database
from heron.errors import ConfigError
from heron.jobs.base import JobStore
from heron.jobs.errors import JobInputError, JobNotFound
from heron.jobs.model import RISK_LEVELS, Job, JobEvent, State
from heron.jobs.sql import JOBS, SQLJobStore
from heron.programs import load_policy
from heron.redact import redact
from heron.resource import Resource
from heron.settings import Settings

MAX_PROMPT = 20_000
#: The longest session id or room name a job records.
MAX_SCOPE = 200
#: The jobs of a conversation or room a stream follows: its latest.
SCOPE_JOBS = 50

log = logging.getLogger("heron.jobs")


def jobs_db_path(settings: Settings) -> Path:
    """``jobs.db`` beside the store's database (see ``heron.jobs.sql`` for why)."""
    return database_path(settings, JOBS)


def open_jobs(settings: Settings) -> Jobs:
    """The jobs the settings point at: on PostgreSQL when ``HERON_DATABASE_URL`` names one
    (servers on several machines then share one queue), else in ``$HERON_HOME/jobs.db``."""
    database = open_database(settings, JOBS)
    return Jobs(SQLJobStore(database, event_max_bytes=settings.jobs.event_max_bytes), settings)


def workspace_contexts(settings: Settings) -> list[str]:
    """The contexts whose jobs can run here: those with a workspace (the default
    context's ``tools_root``, another's ``workspace`` in heron.toml), as ``settings`` (any
    context's) say now. A runner claims only their jobs, so a server started without a
    workspace leaves a job made elsewhere to a worker that has one."""
    server = settings.in_context(DEFAULT)
    found = [DEFAULT] if server.tools.root is not None else []
    return found + sorted(name for name, spec in server.contexts.items() if spec.workspace)


def open_workspace(settings: Settings) -> Workspace:
    """The workspace jobs check: ``tools_root`` with the ``tools_commands`` allowlist."""
    if settings.tools.root is None:
        raise ConfigError(
            "Jobs run in the workspace, and none is set: set HERON_TOOLS_ROOT to the "
            "repository to check, and allow git with HERON_TOOLS_COMMANDS='[\"git\"]'."
        )
    return Workspace(
        settings.tools.root,
        commands=settings.tools.commands,
        timeout=settings.jobs.command_timeout,
        policy=load_policy(settings.tools.policy),
    )


#: ``listener(job, event)``: told of each event this process writes (``Jobs.watch``).
Watcher = Callable[[Job, JobEvent], None]


class Jobs(Resource):
    """The jobs of one context (``settings.context``): ``create`` puts a job there, and
    ``list``, ``get``, ``events``, ``confirm``, ``deny`` and ``abort`` see only that
    context's jobs (another context's id is ``JobNotFound``, as one that does not
    exist). ``within`` gives another context's view of the same store. What runs every
    context's jobs (the runner's ``claim``, ``transition``, ``append``, recovery) reads
    ``store`` or the job it holds, whatever its context."""

    def __init__(self, store: JobStore, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        self._listeners: list[Callable[[], None]] = []
        self._watchers: list[Watcher] = []
        self._listeners_lock = threading.Lock()
        self._owner = True  # a view (``within``) leaves the store open when it closes

    @property
    def context(self) -> str:
        return self.settings.context

    def within(self, settings: Settings) -> Jobs:
        """These jobs as the context of ``settings`` sees them: the same store, watchers
        and listeners (a job created in a view wakes every runner), that context's
        settings (its workspace). Closing a view leaves the store open."""
        if settings.context == self.context:
            return self
        view = copy.copy(self)  # shares the store and the listener lists
        view.settings = settings
        view._owner = False
        return view

    def watch(self, watcher: Watcher) -> Callable[[], None]:
        """Call ``watcher(job, event)`` after each event written through this ``Jobs`` (its
        ``create``, ``confirm``, ``deny``, ``abort``, and every step and state change of a
        ``JobRunner`` on it), with the job as it stood once the event was committed: the
        hook for "a job changed" (a stream wakes, a card resolves). Events another process
        wrote are not seen here: a watcher that must see them also polls the store.
        A watcher runs on the writer's thread and must return quickly; what it raises is
        logged and ignored. Returns the unwatch function."""
        with self._listeners_lock:
            self._watchers.append(watcher)

        def unwatch() -> None:
            with self._listeners_lock:
                self._watchers.remove(watcher)

        return unwatch

    def transition(
        self,
        job_id: str,
        state: State,
        kind: str,
        payload: dict[str, Any] | None = None,
        **given: Any,
    ) -> tuple[Job, JobEvent]:
        """``store.transition``, then the watchers are told."""
        job, event = self.store.transition(job_id, state, kind, payload, **given)
        self._tell(job, event)
        return job, event

    def append(self, job_id: str, kind: str, payload: dict[str, Any] | None = None) -> JobEvent:
        """``store.append``, then the watchers are told."""
        event = self.store.append(job_id, kind, payload)
        if self._watchers:
            self._tell(self.store.get(job_id), event)
        return event

    def claim(self, worker: str, contexts: Collection[str] | None = None) -> Job | None:
        """``store.claim`` (a job of ``contexts`` only, when given), then the watchers are
        told of its ``claimed`` event."""
        job = self.store.claim(worker, contexts)
        if job is not None and self._watchers:
            events = self.store.events(job.id, after=0, limit=100_000)
            claimed = [e for e in events if e.kind == "claimed"]
            if claimed:
                self._tell(job, claimed[-1])
        return job

    def _tell(self, job: Job, event: JobEvent) -> None:
        with self._listeners_lock:
            watchers = list(self._watchers)
        for watcher in watchers:
            try:
                watcher(job, event)
            except Exception:  # a watcher's bug must not fail the job that was written
                log.exception("job watcher %r failed on %s #%d", watcher, job.id, event.seq)

    def subscribe(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` after each ``create`` in this process (a runner wakes up
        instead of waiting for its next poll); returns the unsubscribe function."""
        with self._listeners_lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._listeners_lock:
                self._listeners.remove(listener)

        return unsubscribe

    def create(
        self,
        prompt: str,
        success_criteria: str = "",
        risk_level: str = "read_only",
        requires_confirmation: bool | None = None,
        *,
        by: str = "",
        session_id: str = "",
        room: str = "",
    ) -> Job:
        """Queue a job. ``requires_confirmation`` defaults to true for ``deploy_allowed``
        and false otherwise; a job that requires it waits for ``confirm`` before acting.
        ``by``: who asks; ``session_id``: the conversation it was delegated from;
        ``room``: who shares it (default: ``interventions_room``, the room of what Heron
        raises itself)."""
        if not isinstance(prompt, str) or not prompt.strip():
            raise JobInputError(
                "A job needs a prompt saying what to check, e.g. 'is main broken?'."
            )
        if len(prompt) > MAX_PROMPT:
            raise JobInputError(
                f"The prompt has {len(prompt)} characters; at most {MAX_PROMPT}. Shorten it."
            )
        if risk_level not in RISK_LEVELS:
            raise JobInputError(
                f"Unknown risk level {risk_level!r}. Choose from: {', '.join(RISK_LEVELS)}."
            )
        session_id, room = _scope("session", session_id), _scope("room", room)
        open_workspace(self.settings)  # fail now, not later in a worker
        if requires_confirmation is None:
            requires_confirmation = risk_level == "deploy_allowed"
        # A token pasted into a prompt must not outlive the request in the job table.
        job = self.store.create(
            redact(prompt.strip()),
            redact(success_criteria or ""),
            risk_level,  # type: ignore[arg-type]
            bool(requires_confirmation),
            created_by=by.strip(),
            session_id=session_id,
            room=room or self.settings.interventions.room,
            context=self.context,
        )
        if self._watchers:
            self._tell(job, self.store.events(job.id, limit=1)[0])
        self._wake()
        return job

    def get(self, job_id: str) -> Job:
        """The job, if it is this context's: ``JobNotFound`` for another context's id,
        worded as for one that does not exist, so no context learns of another's."""
        job = self.store.get(job_id)
        if job.context != self.context:
            raise JobNotFound(f"No job {job_id!r}. List the jobs with: heron jobs list")
        return job

    def list(
        self,
        states: Iterable[State] = (),
        limit: int = 100,
        *,
        session_id: str | None = None,
        room: str | None = None,
    ) -> list[Job]:
        return self.store.list(
            states, limit, session_id=session_id, room=room, context=self.context
        )

    def events(self, job_id: str, after: int = 0, limit: int = 1000) -> list[JobEvent]:
        self.get(job_id)
        return self.store.events(job_id, after, limit)

    def failure(self, job: Job) -> str:
        """Why ``job`` (of any context: the caller holds it) failed, from its last
        ``failed`` event: the runner's ``error`` or recovery's ``reason``; a failed job
        has no ``result``. ``""`` for a job that did not fail."""
        if job.state != "failed":
            return ""
        events = self.store.events(job.id, 0, 100_000)
        failed = [e.payload for e in events if e.kind == "failed"]
        return str(failed[-1].get("error") or failed[-1].get("reason") or "") if failed else ""

    def confirm(self, job_id: str, by: str) -> Job:
        """Let a job waiting for confirmation act: it goes back to the queue, confirmed."""
        self.get(job_id)
        job, _ = self.transition(
            job_id,
            "queued",
            "confirmed",
            {"by": _who(by)},
            confirmed_by=_who(by),
            expect="waiting_for_confirmation",
        )
        self._wake()
        return job

    def deny(self, job_id: str, by: str) -> Job:
        """End a job waiting for confirmation without acting (``aborted``)."""
        self.get(job_id)
        job, _ = self.transition(
            job_id, "aborted", "denied", {"by": _who(by)}, expect="waiting_for_confirmation"
        )
        return job

    def abort(self, job_id: str, by: str) -> Job:
        """Stop a job now; a worker running it kills its command within ``poll`` seconds."""
        self.get(job_id)
        job, _ = self.transition(job_id, "aborted", "aborted", {"by": _who(by)})
        return job

    async def follow(
        self, job_id: str, after: int = 0, poll: float = 0.2
    ) -> AsyncIterator[JobEvent]:
        """Events after ``after``, then new ones as they are written, until the job has
        finished and every event was given (a waiting job is followed until it ends);
        ``JobNotFound`` for another context's job."""
        await asyncio.to_thread(self.get, job_id)
        while True:
            done = (await asyncio.to_thread(self.store.get, job_id)).done
            events = await asyncio.to_thread(self.store.events, job_id, after)
            for event in events:
                after = event.seq
                yield event
            if done and not events:
                return
            if not events:
                await asyncio.sleep(poll)

    async def follow_scope(
        self,
        *,
        session_id: str | None = None,
        room: str | None = None,
        limit: int = SCOPE_JOBS,
        poll: float = 1.0,
    ) -> AsyncIterator[tuple[Job, list[JobEvent]]]:
        """The jobs of a conversation (``session_id``) or a room, live, for as long as the
        caller reads: first each of its latest ``limit`` jobs (oldest first) with all its
        events, then each job again with the events it gained (a new job with all of
        its own), as they are written. Events written through this ``Jobs`` wake it at
        once (``watch``); those of other processes (a ``heron jobs run`` worker, another
        server on the same database) within ``poll`` seconds."""
        loop = asyncio.get_running_loop()
        woken = asyncio.Event()

        def wake(job: Job, _: JobEvent) -> None:
            if job.context != self.context:
                return
            if session_id is not None and job.session_id != session_id:
                return
            if room is not None and job.room != room:
                return
            loop.call_soon_threadsafe(woken.set)

        seen: dict[str, int] = {}  # job id -> last seq given
        finished: set[str] = set()  # jobs done whose every event was given
        unwatch = self.watch(wake)
        try:
            while True:
                woken.clear()
                jobs = await asyncio.to_thread(
                    self.list, (), limit, session_id=session_id, room=room
                )
                for job in reversed(jobs):
                    if job.id in finished:
                        continue
                    events = await asyncio.to_thread(self.events, job.id, seen.get(job.id, 0))
                    if events or job.id not in seen:
                        seen[job.id] = events[-1].seq if events else seen.get(job.id, 0)
                        # The job as it stands after these events (a state change is an event).
                        current = await asyncio.to_thread(self.get, job.id) if events else job
                        yield current, events
                        job = current
                    if job.done:
                        finished.add(job.id)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(woken.wait(), poll)
        finally:
            unwatch()

    def _wake(self) -> None:
        with self._listeners_lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener()

    def close(self) -> None:
        if self._owner:
            self.store.close()


def _who(by: str) -> str:
    return by.strip() or "unknown"


def _scope(what: str, value: str) -> str:
    """A session id or a room name, stripped; ``JobInputError`` when it cannot be one."""
    value = (value or "").strip()
    if len(value) > MAX_SCOPE or any(ch.isspace() or not ch.isprintable() for ch in value):
        raise JobInputError(
            f"A job's {what} is at most {MAX_SCOPE} printable characters without spaces, "
            f"not {value[:40]!r}."
        )
    return value
