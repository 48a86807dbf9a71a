"""``Jobs``: what the CLI, the server and the agent's ``delegate_job`` tool call.

>>> jobs = open_jobs()                                              # doctest: +SKIP
>>> job = jobs.create("is main broken?", success_criteria="tests pass")  # doctest: +SKIP
>>> asyncio.run(job_runner(jobs).run_until_idle())       # heron.agent  # doctest: +SKIP
>>> jobs.get(job.id).result["summary"]                              # doctest: +SKIP
'On branch main: 1 file changed (app.py), 1 insertion, 1 deletion. Tests: 12 passed in 3.20s.'
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path

from heron.core.workspace import Workspace
from heron.db import database_path, open_database
from heron.errors import ConfigError
from heron.jobs.base import JobStore
from heron.jobs.errors import JobInputError
from heron.jobs.model import RISK_LEVELS, Job, JobEvent, State
from heron.jobs.sql import JOBS, SQLJobStore
from heron.programs import default_policy
from heron.redact import redact
from heron.resource import Resource
from heron.settings import Settings

MAX_PROMPT = 20_000


def jobs_db_path(settings: Settings) -> Path:
    """``jobs.db`` beside the store's database (see ``heron.jobs.sql`` for why)."""
    return database_path(settings, JOBS.name)


def open_jobs(settings: Settings | None = None) -> Jobs:
    """The jobs the settings point at: on PostgreSQL when ``HERON_DATABASE_URL`` names one
    (servers on several machines then share one queue), else in ``$HERON_HOME/jobs.db``."""
    settings = settings or Settings()
    database = open_database(settings, JOBS)
    return Jobs(SQLJobStore(database, event_max_bytes=settings.jobs_event_max_bytes), settings)


def open_workspace(settings: Settings) -> Workspace:
    """The workspace jobs check: ``tools_root`` with the ``tools_commands`` allowlist."""
    if settings.tools_root is None:
        raise ConfigError(
            "Jobs run in the workspace, and none is set: set HERON_TOOLS_ROOT to the "
            "repository to check, and allow git with HERON_TOOLS_COMMANDS='[\"git\"]'."
        )
    return Workspace(
        settings.tools_root,
        commands=settings.tools_commands,
        timeout=settings.jobs_command_timeout,
        policy=default_policy(settings),
    )


class Jobs(Resource):
    def __init__(self, store: JobStore, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        self._listeners: list[Callable[[], None]] = []
        self._listeners_lock = threading.Lock()

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
    ) -> Job:
        """Queue a job. ``requires_confirmation`` defaults to true for ``deploy_allowed``
        and false otherwise; a job that requires it waits for ``confirm`` before acting."""
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
        open_workspace(self.settings)  # fail now, not later in a worker
        if requires_confirmation is None:
            requires_confirmation = risk_level == "deploy_allowed"
        # A token pasted into a prompt must not outlive the request in the job table.
        job = self.store.create(
            redact(prompt.strip()),
            redact(success_criteria or ""),
            risk_level,  # type: ignore[arg-type]
            bool(requires_confirmation),
            created_by=by,
        )
        self._wake()
        return job

    def get(self, job_id: str) -> Job:
        return self.store.get(job_id)

    def list(self, states: Iterable[State] = (), limit: int = 100) -> list[Job]:
        return self.store.list(states, limit)

    def events(self, job_id: str, after: int = 0, limit: int = 1000) -> list[JobEvent]:
        return self.store.events(job_id, after, limit)

    def confirm(self, job_id: str, by: str) -> Job:
        """Let a job waiting for confirmation act: it goes back to the queue, confirmed."""
        job, _ = self.store.transition(
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
        job, _ = self.store.transition(
            job_id, "aborted", "denied", {"by": _who(by)}, expect="waiting_for_confirmation"
        )
        return job

    def abort(self, job_id: str, by: str) -> Job:
        """Stop a job now; a worker running it kills its command within ``poll`` seconds."""
        job, _ = self.store.transition(job_id, "aborted", "aborted", {"by": _who(by)})
        return job

    async def follow(
        self, job_id: str, after: int = 0, poll: float = 0.2
    ) -> AsyncIterator[JobEvent]:
        """Events after ``after``, then new ones as they are written, until the job has
        finished and every event was given (a waiting job is followed until it ends)."""
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

    def _wake(self) -> None:
        with self._listeners_lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener()

    def close(self) -> None:
        self.store.close()


def _who(by: str) -> str:
    return by.strip() or "unknown"
