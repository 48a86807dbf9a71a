"""``JobStore``: where jobs and their events live. SQLite here (``sqlite.py``); a
PostgreSQL backend implements the same Protocol.

The contract every backend keeps:

- **State and event together.** ``create``, ``claim`` and ``transition`` change a job and
  append its event in one transaction; nobody ever sees one without the other.
- **The machine is enforced in the store** (``heron.jobs.model.check_transition``) against
  the state read inside that transaction, so two processes racing (``abort`` from the CLI
  while a worker completes) cannot both win: the loser gets ``IllegalTransition``.
- **claim is atomic.** It moves the oldest ``queued`` job to ``running`` and returns it,
  or returns ``None``; a job is claimed by one worker even with several servers on one
  database. On PostgreSQL this is::

      UPDATE jobs SET state = 'running', worker = %s, started_at = now(), ...
      WHERE id = (SELECT id FROM jobs WHERE state = 'queued'
                  ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING *;

  SQLite gets the same effect from ``BEGIN IMMEDIATE`` (one writer at a time).
- **Events** are numbered 1, 2, 3 ... per job (``seq``, the SSE id) and their payloads are
  redacted and cut to ``event_max_bytes`` (``heron.jobs.events.prepare``) before they are
  written: no secret reaches the store.
- Unknown ids raise ``JobNotFound``; driver errors become ``StoreError``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from heron.jobs.model import Job, JobEvent, Risk, State


class JobStore(Protocol):
    event_max_bytes: int

    def create(
        self,
        prompt: str,
        success_criteria: str,
        risk_level: Risk,
        requires_confirmation: bool,
        *,
        created_by: str = "",
    ) -> Job:
        """A new ``queued`` job, with its ``created`` event."""
        ...

    def get(self, job_id: str) -> Job: ...

    def list(self, states: Iterable[State] = (), limit: int = 100) -> list[Job]:
        """Newest first; only the given states when any are given."""
        ...

    def claim(self, worker: str) -> Job | None:
        """The oldest queued job, now ``running`` under ``worker`` (``claimed`` event)."""
        ...

    def transition(
        self,
        job_id: str,
        state: State,
        kind: str,
        payload: dict[str, Any] | None = None,
        *,
        result: dict[str, Any] | None = None,
        confirmed_by: str | None = None,
        expect: State | None = None,
    ) -> tuple[Job, JobEvent]:
        """Move the job to ``state`` and append event ``kind``; ``result`` and
        ``confirmed_by`` are stored with it when given. With ``expect``, the job must be
        in that state now (``confirm`` must not requeue a running job, though recovery
        may). Leaving ``running`` clears the worker; entering a terminal state sets
        ``finished_at``."""
        ...

    def append(self, job_id: str, kind: str, payload: dict[str, Any] | None = None) -> JobEvent:
        """An event that changes no state (a step started, its output)."""
        ...

    def heartbeat(self, job_id: str, worker: str) -> Job:
        """Record that ``worker`` still runs the job; returns the job as stored, so the
        worker sees an abort written by another process."""
        ...

    def events(self, job_id: str, after: int = 0, limit: int = 1000) -> list[JobEvent]:
        """Events with ``seq > after``, oldest first."""
        ...

    def close(self) -> None: ...
