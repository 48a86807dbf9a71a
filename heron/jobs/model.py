"""A job, its events, and the state machine every store enforces.

::

    queued ──claim──> running ──> completed | failed | aborted
      │  ^               │  │
      │  └─confirm── waiting_for_confirmation ──deny/abort──> aborted
      │  └─recover───────┘ (a crashed worker's read-only job)
      └──abort──> aborted

``running -> queued`` is only taken by crash recovery; ``waiting_for_confirmation ->
queued`` by ``confirm`` (a worker then claims it again and acts).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from heron.core.contexts import DEFAULT
from heron.jobs.errors import IllegalTransition, JobInputError

State = Literal["queued", "running", "waiting_for_confirmation", "completed", "aborted", "failed"]
Risk = Literal["read_only", "write", "deploy_allowed"]

STATES: tuple[State, ...] = (
    "queued",
    "running",
    "waiting_for_confirmation",
    "completed",
    "aborted",
    "failed",
)
RISK_LEVELS: tuple[Risk, ...] = ("read_only", "write", "deploy_allowed")
TERMINAL: frozenset[State] = frozenset({"completed", "aborted", "failed"})

TRANSITIONS: dict[State, frozenset[State]] = {
    "queued": frozenset({"running", "aborted"}),
    "running": frozenset({"waiting_for_confirmation", "completed", "failed", "aborted", "queued"}),
    "waiting_for_confirmation": frozenset({"queued", "aborted"}),
    "completed": frozenset(),
    "aborted": frozenset(),
    "failed": frozenset(),
}


def check_transition(job_id: str, old: str, new: str, expect: str | None = None) -> None:
    """Raise ``IllegalTransition`` unless ``old -> new`` is an edge of the machine (and
    ``old`` is ``expect``, when given)."""
    if expect is not None and old != expect:
        raise IllegalTransition(
            f"Job {job_id} is {old}, not {expect}; it cannot become {new} from there. "
            f"See its events: heron jobs show {job_id}"
        )
    allowed = TRANSITIONS.get(old, frozenset())  # type: ignore[call-overload]
    if new not in allowed:
        nexts = ", ".join(sorted(allowed)) or "nothing: it has finished"
        raise IllegalTransition(
            f"Job {job_id} is {old}; it cannot become {new}. From {old} it can become: {nexts}."
        )


def check_holder(job: Job, held_by: str | None, stale_before: float | None) -> None:
    """Raise ``IllegalTransition`` unless the running ``job`` is held by ``held_by`` (when
    given) and, with ``stale_before``, its heartbeat is older than that: a worker whose job
    was taken over changes nothing, and a takeover leaves a worker that beat meanwhile."""
    if held_by is None:
        return
    if job.worker != held_by:
        raise IllegalTransition(
            f"Job {job.id} is no longer held by worker {held_by} (now: {job.worker or 'none'}, "
            f"{job.state}); it was taken over. See its events: heron jobs show {job.id}"
        )
    if stale_before is not None and (job.heartbeat_at or 0.0) >= stale_before:
        raise IllegalTransition(
            f"Job {job.id}'s worker {held_by} sent a heartbeat meanwhile; it keeps the job."
        )


def check_states(states: Iterable[str]) -> list[State]:
    """``states`` as a list, once each is a state of the machine (``JobInputError``)."""
    wanted = list(states)
    unknown = [s for s in wanted if s not in STATES]
    if unknown:
        raise JobInputError(f"Unknown job state {unknown[0]!r}. Choose from: {', '.join(STATES)}.")
    return wanted  # type: ignore[return-value]


def iso(ts: float | None) -> str | None:
    return (
        None if ts is None else datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds")
    )


@dataclass(frozen=True)
class Job:
    """One delegated task. Times are Unix seconds; ``to_dict`` gives ISO-8601 UTC."""

    id: str
    prompt: str
    success_criteria: str
    risk_level: Risk
    requires_confirmation: bool
    state: State
    created_at: float
    updated_at: float
    started_at: float | None = None
    finished_at: float | None = None
    result: dict[str, Any] | None = None
    worker: str | None = None
    heartbeat_at: float | None = None
    attempts: int = 0
    confirmed_by: str | None = None
    confirmed_at: float | None = None
    #: Who asked for it (a user, ``agent``, ``api``); the conversation (the agent's
    #: session) it was delegated from, and the room that shares it (``""``: neither).
    created_by: str = ""
    session_id: str = ""
    room: str = ""
    #: The context it was created in (``heron.core.contexts``): only that context sees
    #: it, and it runs in that context's workspace.
    context: str = DEFAULT

    @property
    def done(self) -> bool:
        return self.state in TERMINAL

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "prompt": self.prompt,
            "success_criteria": self.success_criteria,
            "risk_level": self.risk_level,
            "requires_confirmation": self.requires_confirmation,
            "state": self.state,
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
            "started_at": iso(self.started_at),
            "finished_at": iso(self.finished_at),
            "result": self.result,
            "worker": self.worker,
            "attempts": self.attempts,
            "confirmed_by": self.confirmed_by,
            "confirmed_at": iso(self.confirmed_at),
            "created_by": self.created_by,
            "session_id": self.session_id,
            "room": self.room,
            "context": self.context,
        }


@dataclass(frozen=True)
class JobEvent:
    """``seq`` counts from 1 per job and is the SSE event id."""

    job_id: str
    seq: int
    time: float
    kind: str
    payload: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "seq": self.seq,
            "time": iso(self.time),
            "kind": self.kind,
            "payload": self.payload,
        }
