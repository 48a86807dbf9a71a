"""``JobStore``: where jobs and their events live, and what every backend promises.

This Protocol is the specification; ``heron.jobs.sql.SQLJobStore`` is its one
implementation in SQL, over either of ``heron.db``'s databases (SQLite, PostgreSQL). The
tests of ``tests/jobs/test_contract.py`` hold every backend to it.

Promises every method keeps (each method's docstring adds its own):

- **One call, one transaction.** ``create``, ``claim``, ``transition`` and ``append``
  change a job and append its event atomically: a reader, another process or a worker
  that crashes half-way never leaves one without the other. A call that raises has
  written nothing.
- **The state machine is enforced in the store** (``heron.jobs.model.check_transition``)
  against the state read inside that transaction, with the job's row locked (or the whole
  file, on SQLite): of two processes racing (``abort`` from the CLI while a worker
  completes) exactly one wins and the other gets ``IllegalTransition``.
- **Events** are numbered 1, 2, 3 ... per job without gaps or repeats, whoever writes
  them (``seq``, the SSE event id). Their payloads, and a job's ``result``, are redacted
  and cut to ``event_max_bytes`` of JSON (``heron.jobs.events.prepare``) *before* they are
  written: no secret in a payload reaches the store. The store does not redact prompts;
  ``Jobs.create`` does.
- **Threads and processes.** One store may be shared by the threads of a process; any
  number of stores (processes, servers) may open one database at once.
- **Errors.** An unknown id raises ``JobNotFound``; a forbidden change
  ``IllegalTransition``; an unknown state in ``list`` ``JobInputError``. Everything the
  database or its driver reports becomes a ``heron.errors.StoreError`` naming the database
  and what to do (on SQLite its subclasses ``DatabaseCorrupt``, ``DatabaseReadOnly``,
  ``DatabaseBusy``, from ``heron.db.sqlite``). Writes are not retried: an event whose
  commit went unanswered may have landed, and a second try would repeat it.
- **Times** are Unix seconds (``time.time()`` of the writing process), so servers sharing
  one database keep their clocks in step (NTP): the queue is ordered by ``created_at``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any, Protocol

from heron.core.contexts import DEFAULT
from heron.jobs.model import Job, JobEvent, Risk, State


class JobStore(Protocol):
    #: The most bytes (as JSON) of one event payload or job result; longer ones are cut.
    event_max_bytes: int

    def create(
        self,
        prompt: str,
        success_criteria: str,
        risk_level: Risk,
        requires_confirmation: bool,
        *,
        created_by: str = "",
        session_id: str = "",
        room: str = "",
        context: str = DEFAULT,
    ) -> Job:
        """A new job of ``context``, ``queued``, with its event 1 ``created`` (payload:
        ``risk_level``, ``requires_confirmation``, and ``by``, ``session_id``, ``room``
        and a context other than ``default`` when given).

        The id is 16 random hex digits; ``attempts`` is 0. The arguments are stored as
        given (``Jobs.create`` checks and redacts them first); a ``risk_level`` outside
        ``RISK_LEVELS`` is refused by the database with ``StoreError``.
        """
        ...

    def get(self, job_id: str) -> Job:
        """The job as last committed. ``JobNotFound`` if there is none."""
        ...

    def list(
        self,
        states: Iterable[State] = (),
        limit: int = 100,
        *,
        session_id: str | None = None,
        room: str | None = None,
        context: str | None = None,
    ) -> list[Job]:
        """At most ``limit`` jobs, newest first (``created_at`` descending, then ``id``);
        only those in ``states`` when any are given (``JobInputError`` names an unknown
        one), of the conversation ``session_id``, of the ``room`` and of the ``context``
        when given (none: every context's)."""
        ...

    def claim(self, worker: str, contexts: Collection[str] | None = None) -> Job | None:
        """The oldest ``queued`` job (``created_at``, then ``id``), now ``running`` under
        ``worker`` with ``started_at`` and ``heartbeat_at`` set and ``attempts`` one more,
        and its ``claimed`` event (payload: ``worker``, ``attempt``); ``None`` when nothing
        is queued. ``contexts``: only a job of one of these contexts (a runner claims only
        the work it can do: a context without a workspace runs no job); ``None``: any.

        Atomic: however many threads, processes or servers claim at once, each job goes to
        one of them. On PostgreSQL claimers skip each other's locked rows
        (``FOR UPDATE SKIP LOCKED``) instead of waiting; on SQLite they take turns
        (``BEGIN IMMEDIATE``).
        """
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
        held_by: str | None = None,
        stale_before: float | None = None,
    ) -> tuple[Job, JobEvent]:
        """Move the job to ``state`` and append event ``kind``; returns both as stored.

        The event's payload is ``{"from": old, "to": state}`` updated with ``payload``.
        ``result`` (redacted and cut like a payload) and ``confirmed_by`` (with
        ``confirmed_at``) are stored when given. Leaving ``running`` clears ``worker`` and
        ``heartbeat_at``; entering a terminal state sets ``finished_at``.

        Raises ``JobNotFound``, or ``IllegalTransition`` (nothing written) when the
        machine has no edge from the job's state to ``state``, or when ``expect`` is given
        and the job is not in that state now (``confirm`` must not requeue a running job,
        though recovery may). ``held_by``: only while that worker holds the job (a
        runner's own changes: one whose job was taken over meanwhile writes nothing);
        with ``stale_before`` too, only while the job's heartbeat is older than that (a
        takeover, judged inside the transaction: a worker that beat since it was seen
        keeps its job). Either unmet is ``IllegalTransition``.
        """
        ...

    def append(self, job_id: str, kind: str, payload: dict[str, Any] | None = None) -> JobEvent:
        """An event that changes no state of the job (a step started, its output): the
        next ``seq``, its payload redacted and cut. ``JobNotFound`` if there is no job."""
        ...

    def heartbeat(self, job_id: str, worker: str) -> Job:
        """Set ``heartbeat_at`` to now if ``worker`` still holds the job (else change
        nothing); returns the job as stored, so a worker sees an abort written by another
        process. Appends no event. ``JobNotFound`` if there is no job."""
        ...

    def events(self, job_id: str, after: int = 0, limit: int = 1000) -> list[JobEvent]:
        """At most ``limit`` events with ``seq > after``, oldest first (by ``seq``): a
        follower passes the last ``seq`` it has seen. ``JobNotFound`` if there is no
        job."""
        ...

    def close(self) -> None:
        """Release the connection (SQLite) or the pool (PostgreSQL).

        Idempotent: a second call does nothing. Afterwards every other method raises
        ``StoreError``; other stores on the same database are unaffected."""
        ...
