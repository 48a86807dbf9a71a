"""Jobs over HTTP: the ``jobs.*`` JSON-RPC methods, ``GET /jobs/{id}/events/stream`` and
``GET /jobs/stream?session=S`` (or ``?room=R``) (SSE), and the workers that run jobs while
the server runs.

The stream replays a job's events from the start, or from after the ``Last-Event-ID``
header (or ``?after=N``), then follows new ones until the job has finished::

    id: 4
    event: step_finished
    data: {"job_id": "9f3c...", "seq": 4, "kind": "step_finished", "payload": {...}}

The stream of a conversation (the agent's session: the chat page follows its own) or of
a room gives each of its jobs, then each job again whenever it changes, as ``job``
events carrying the job and the events it gained (all of them the first time). A client
that reconnects gets every job again, whole: it replaces what it shows, and misses
nothing::

    event: job
    data: {"job": {"id": "9f3c...", "state": "running", ...}, "events": [{"seq": 3, ...}]}

**Contexts** (``heron.core.contexts``): the methods and both streams act in the
request's context (``reach="context"``, ``runtime_of``): a job is created there and runs
in its workspace, and another context's job id is a 404 (``-32004``). The one set of
workers runs every context's jobs, each in its own context (``JobRunner.within``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from pydantic import Field
from sse_starlette import ServerSentEvent
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from heron.errors import HeronError, InputError
from heron.jobs import JobNotFound, Risk, State
from heron.server.doors.rpc import McpTool, Methods, Params
from heron.server.http.contexts import runtime_of
from heron.server.http.events import event_stream, message
from heron.server.http.numbers import Position, whole
from heron.server.http.replies import heron_error, invalid, not_found
from heron.server.runtime import Runtime
from heron.tenancy import namespaces_seen
from heron.wiring.jobs import job_runner

#: Seconds between looks at the database for job events another process wrote.
SCOPE_POLL = 1.0


class CreateParams(Params):
    prompt: str = Field(description="What to check, e.g. 'is main broken?'.")
    session_id: str = Field(default="", description="The conversation it belongs to.")
    room: str = Field(default="", description="Who shares it; default: interventions_room.")
    by: str = Field(default="api", max_length=200, description="Who asks for it.")
    success_criteria: str = Field(default="", description="What a good outcome looks like.")
    risk_level: Risk = "read_only"
    requires_confirmation: bool | None = Field(
        default=None, description="Wait for jobs.confirm before acting; default: deploy_allowed."
    )


class IdParams(Params):
    id: str


class ActParams(IdParams):
    by: str = Field(default="api", description="Who decides, recorded in the job's events.")


class EventsParams(IdParams):
    after: Position = Field(default=0, description="Only events with a higher seq.")
    limit: int = Field(default=1000, ge=1, le=10_000)


class ListParams(Params):
    state: list[State] = Field(default_factory=list, description="Only these states.")
    limit: int = Field(default=100, ge=1, le=10_000)
    session_id: str | None = Field(
        default=None, max_length=200, description="Only the jobs delegated in this conversation."
    )
    room: str | None = Field(default=None, max_length=200, description="Only this room's jobs.")


#: The ``jobs.*`` methods, each on the jobs of the caller's context (``rt.jobs``), with a
#: key's jobs scope.
rpc = Methods(reach="context", scope="jobs")


@rpc.method(
    "jobs.list",
    ListParams,
    summary="Jobs, newest first.",
    tool=McpTool("jobs_list", "List jobs", "read", idempotent=True),
)
def list_(p: ListParams, rt: Runtime) -> list[dict[str, Any]]:
    found = rt.jobs.list(p.state, p.limit, session_id=p.session_id, room=p.room)
    return [job.to_dict() for job in found]


@rpc.method(
    "jobs.get",
    IdParams,
    summary="One job.",
    tool=McpTool("jobs_get", "Show a job", "read", idempotent=True),
)
def get(p: IdParams, rt: Runtime) -> dict[str, Any]:
    return rt.jobs.get(p.id).to_dict()


@rpc.method(
    "jobs.events",
    EventsParams,
    summary="A job's events, oldest first.",
    tool=McpTool("jobs_events", "A job's events", "read", idempotent=True),
)
def events(p: EventsParams, rt: Runtime) -> list[dict[str, Any]]:
    return [e.to_dict() for e in rt.jobs.events(p.id, p.after, p.limit)]


@rpc.method(
    "jobs.create",
    CreateParams,
    summary="Queue a job in this context; returns it.",
    tool=McpTool("jobs_create", "Queue a job", "write", idempotent=False),
)
def create(p: CreateParams, rt: Runtime) -> dict[str, Any]:
    job = rt.jobs.create(
        p.prompt,
        p.success_criteria,
        p.risk_level,
        p.requires_confirmation,
        by=p.by,
        session_id=p.session_id,
        room=p.room,
    )
    return job.to_dict()


@rpc.method(
    "jobs.confirm",
    ActParams,
    summary="Let a job waiting for confirmation act.",
    tool=McpTool("jobs_confirm", "Confirm a waiting job", "execute", idempotent=True),
)
def confirm(p: ActParams, rt: Runtime) -> dict[str, Any]:
    return rt.jobs.confirm(p.id, p.by).to_dict()


@rpc.method(
    "jobs.deny",
    ActParams,
    summary="End a job waiting for confirmation without acting.",
    tool=McpTool("jobs_deny", "Deny a waiting job", "write", idempotent=True),
)
def deny(p: ActParams, rt: Runtime) -> dict[str, Any]:
    return rt.jobs.deny(p.id, p.by).to_dict()


@rpc.method(
    "jobs.abort",
    ActParams,
    summary="Stop a job now, killing its running command.",
    tool=McpTool("jobs_abort", "Abort a job", "write", idempotent=True),
)
def abort(p: ActParams, rt: Runtime) -> dict[str, Any]:
    return rt.jobs.abort(p.id, p.by).to_dict()


def routes(runtime: Runtime) -> list[BaseRoute]:
    """``GET /jobs/{id}/events/stream`` and ``GET /jobs/stream``, in the request's
    context."""

    async def stream(request: Request) -> Response:
        try:
            jobs = await asyncio.to_thread(lambda: runtime_of(runtime, request).jobs)
        except HeronError as exc:
            return heron_error(exc)
        job_id = request.path_params["id"]
        header = request.headers.get("last-event-id")
        try:
            after = (
                whole(header, "Last-Event-ID")
                if header
                else whole(request.query_params.get("after", "0"), "after")
            )
        except InputError as exc:
            return invalid(str(exc), "after")
        try:
            await asyncio.to_thread(jobs.get, job_id)
        except JobNotFound as exc:
            return not_found(str(exc))

        async def frames() -> AsyncIterator[ServerSentEvent]:
            async for event in jobs.follow(job_id, after):
                yield message(event.to_dict(), event=event.kind, id=event.seq)

        return event_stream(frames(), runtime.settings)

    async def scoped(request: Request) -> Response:
        try:
            jobs = await asyncio.to_thread(lambda: runtime_of(runtime, request).jobs)
        except HeronError as exc:
            return heron_error(exc)
        query = request.query_params
        session_id, room = query.get("session"), query.get("room")
        for name, value in (("session", session_id), ("room", room)):
            if value is not None and (not value.strip() or len(value) > 200):
                return invalid(f"?{name}= must name one, in at most 200 characters.")

        async def frames() -> AsyncIterator[ServerSentEvent]:
            async for job, events in jobs.follow_scope(
                session_id=session_id, room=room, poll=SCOPE_POLL
            ):
                data = {"job": job.to_dict(), "events": [e.to_dict() for e in events]}
                yield message(data, event="job")

        return event_stream(frames(), runtime.settings)

    return [
        Route("/jobs/stream", scoped, methods=["GET"]),
        Route("/jobs/{id}/events/stream", stream, methods=["GET"]),
    ]


@asynccontextmanager
async def lifespan(runtime: Runtime) -> AsyncIterator[None]:
    """Run the job workers (``jobs_concurrency`` at once) while the server runs, for
    every context's jobs; on the way in they recover jobs a crashed server left
    ``running``."""
    stop = asyncio.Event()
    runner = job_runner(
        runtime.jobs, store=lambda: runtime.store, runner_for=job_runner, seen=namespaces_seen
    )
    task = asyncio.create_task(runner.serve(stop))
    try:
        yield
    finally:
        stop.set()
        await task  # the job store stays open: the runtime closes it (Runtime.close)
