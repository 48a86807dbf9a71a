"""Interventions over HTTP: the ``interventions.*`` JSON-RPC methods, a room's live cards
(``GET /interventions/stream?room=R``, SSE), ``POST /interventions/{id}/outcome``,
``GET /interventions/audio/{file}``, the watcher that turns job changes into cards, and
the slower scan of the libraries' health and the skill searches that find nothing
(``heron.agent.wiring.Scan``; the agent's observers are ``heron.agent.wiring.Observers``).

The stream replays the room's cards after the ``Last-Event-ID`` header (or ``?after=N``),
then sends new ones as they go out: at once for those raised in this process, within
``POLL`` seconds for those another server sharing the database raised. A card carries
where it stands when sent (``resolved_at``, ``outcome``, ``outcome_by``). Only cards carry
an ``id:``; ``resolved`` and ``outcome`` events say what changed and are not replayed::

    id: 42
    event: intervention
    data: {"id": 42, "kind": "collision", "room": "team", "text": "Conflict: ...", ...}

    event: resolved
    data: {"id": 42, "key": "collision:README.md", "room": "team", "resolved_at": 1.7e9}
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any, Literal

from pydantic import Field
from sse_starlette import ServerSentEvent
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from heron.agent.wiring import Scan
from heron.errors import HeronError
from heron.interventions import Intervention, Interventions, job_changed
from heron.interventions.model import Severity
from heron.interventions.service import audio_folder
from heron.interventions.voice import AUDIO_NAME
from heron.server.events import event_stream, message
from heron.server.numbers import RecordId, whole
from heron.server.replies import heron_error, invalid, not_found, read_body
from heron.server.rpc import Params, Registry
from heron.server.runtime import Runtime

log = logging.getLogger("heron.server")

#: Seconds between looks at the database for cards another server sent, and at the jobs.
POLL = 1.0


class RaiseParams(Params):
    kind: str = Field(description="The condition's kind: collision, watchdog_incident, ...")
    key: str = Field(description="Its identity in the room, e.g. collision:README.md.")
    room: str = Field(description="Who shares it: a team, a workspace.")
    severity: Severity = "warning"
    facts: dict[str, Any] = Field(default_factory=dict, description="The kind's facts.")
    actor: str = Field(default="", description="Who raises it; default: api.")


class ResolveParams(Params):
    key: str
    room: str


class OutcomeBody(Params):
    outcome: Literal["accept", "dismiss"]
    by: str = Field(default="api", description="Who decided.")


class OutcomeParams(OutcomeBody):
    id: RecordId


class ListParams(Params):
    room: str | None = None
    limit: int = Field(default=100, ge=1, le=10_000)
    active_only: bool = False


def register(registry: Registry, runtime: Runtime) -> None:
    """Add the ``interventions.*`` JSON-RPC methods to ``registry``."""
    method = registry.method

    @method("interventions.raise", RaiseParams, summary="Raise a condition; returns it.")
    def raise_(p: RaiseParams) -> dict[str, Any]:
        service = runtime.interventions
        done = service.raise_(p.kind, p.key, p.room, p.severity, p.facts, actor=p.actor or "api")
        return done.to_dict()

    @method(
        "interventions.resolve", ResolveParams, summary="End an active condition; its key re-arms."
    )
    def resolve(p: ResolveParams) -> dict[str, Any]:
        return runtime.interventions.resolve(p.room, p.key).to_dict()

    @method("interventions.outcome", OutcomeParams, summary="Record accept or dismiss, once.")
    def outcome(p: OutcomeParams) -> dict[str, Any]:
        return runtime.interventions.outcome(p.id, p.outcome, p.by).to_dict()

    @method("interventions.list", ListParams, summary="Interventions, newest first.")
    def list_(p: ListParams) -> list[dict[str, Any]]:
        found = runtime.interventions.list(p.room, limit=p.limit, active_only=p.active_only)
        return [i.to_dict() for i in found]

    @method(
        "interventions.stats",
        summary="Per kind: raised, delivered, suppressed, accepted, dismissed.",
    )
    def stats(_: Params) -> list[dict[str, Any]]:
        return [s.to_dict() for s in runtime.interventions.stats()]


def _card(item: Intervention) -> ServerSentEvent:
    """A card's event, with where it stands now (``resolved_at``, ``outcome``,
    ``outcome_by``): a card replayed after its condition ended, or after someone decided,
    is shown so, without the actions that no longer apply."""
    data = item.card() | {
        "resolved_at": item.resolved_at,
        "outcome": item.outcome,
        "outcome_by": item.outcome_by,
    }
    return message(data, event="intervention", id=item.id)


def _change(event: str, item: Intervention) -> ServerSentEvent:
    """A ``resolved`` or ``outcome`` event: no id, so a resume is not moved by it."""
    fields = ("resolved_at",) if event == "resolved" else ("outcome", "outcome_by", "outcome_at")
    data = {"id": item.id, "key": item.key, "room": item.room}
    data |= {name: getattr(item, name) for name in fields}
    return message(data, event=event)


def open_audio(folder: Path, name: str) -> bytes | None:
    """The file ``name`` of ``folder``, or ``None``: opened relative to the folder with
    ``O_NOFOLLOW`` and checked as a regular file on the open descriptor, so a link or a
    file swapped in between a check and the open cannot be served."""
    try:
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return None
    finally:
        os.close(dir_fd)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read()


def routes(runtime: Runtime) -> list[BaseRoute]:
    """The stream, the outcome and the audio routes."""

    async def stream(request: Request) -> Response:
        room = request.query_params.get("room", "").strip()
        if not room:
            return invalid("Name the room: GET /interventions/stream?room=team.", "room")
        header = request.headers.get("last-event-id")
        try:
            after = (
                whole(header, "Last-Event-ID")
                if header
                else whole(request.query_params.get("after", "0"), "after")
            )
            service = await run_in_threadpool(lambda: runtime.interventions)
        except HeronError as exc:
            return heron_error(exc)
        return event_stream(_frames(service, room, after), runtime.settings)

    async def outcome(request: Request) -> Response:
        body = await read_body(request, OutcomeBody)
        if isinstance(body, Response):
            return body
        service = runtime.interventions
        try:
            card = whole(request.path_params["id"], "the intervention id", low=1)
            done = await run_in_threadpool(service.outcome, card, body.outcome, body.by)
        except HeronError as exc:
            return heron_error(exc)
        return Response(json.dumps(done.to_dict()), media_type="application/json")

    async def audio(request: Request) -> Response:
        name = request.path_params["file"]
        found = None
        if AUDIO_NAME.match(name):
            found = await run_in_threadpool(open_audio, audio_folder(runtime.settings), name)
        if found is None:
            return not_found(f"No audio file {name!r}.")
        return Response(found, media_type="audio/wav", headers={"cache-control": "no-store"})

    return [
        Route("/interventions/stream", stream, methods=["GET"]),
        Route("/interventions/{id}/outcome", outcome, methods=["POST"]),
        Route("/interventions/audio/{file}", audio, methods=["GET"]),
    ]


async def _frames(service: Interventions, room: str, after: int) -> AsyncIterator[ServerSentEvent]:
    """Cards after ``after``, then live ones; see the module docstring."""
    loop = asyncio.get_running_loop()
    woken: asyncio.Queue[tuple[str, Intervention]] = asyncio.Queue()

    def listener(event: str, item: Intervention) -> None:
        if item.room == room:
            loop.call_soon_threadsafe(woken.put_nowait, (event, item))

    # Subscribed before the replay, so a card sent during it is not missed. A live card
    # wakes the stream, which then reads the room's cards after the last one it gave:
    # cards go out in id order, whichever server sent them, and none is skipped.
    unsubscribe = service.subscribe(listener)
    last = after
    try:
        while True:
            for card in await asyncio.to_thread(service.cards, room, last):
                last = card.id
                yield _card(card)
            try:
                event, item = await asyncio.wait_for(woken.get(), POLL)
            except TimeoutError:
                continue
            if event != "intervention":
                yield _change(event, item)
    finally:
        unsubscribe()


@asynccontextmanager
async def lifespan(runtime: Runtime) -> AsyncIterator[None]:
    """Watch the jobs while the server runs: one that waits for confirmation gets a card
    with confirm and deny buttons (resolved once it moves on), one that fails a card.
    Every ``interventions_scan_interval`` seconds, ``Scan`` the libraries and the skill
    searches."""
    tasks = [asyncio.create_task(_watch_jobs(runtime)), asyncio.create_task(_scan(runtime))]
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with suppress(asyncio.CancelledError):
                await task


async def _watch_jobs(runtime: Runtime) -> None:
    room = runtime.settings.interventions_room
    known: dict[str, str] = {}
    first = True
    while True:
        try:
            jobs = await asyncio.to_thread(runtime.jobs.list, (), 200)
            for job in jobs:
                if known.get(job.id) == job.state:
                    continue
                # On the first look only the waiting ones count: a failure from before
                # the server started was told (or not) by the server that saw it.
                if not first or job.state == "waiting_for_confirmation":
                    result = job.result or {}
                    error = str(result.get("error") or result.get("summary") or "")
                    seen = job_changed(room, job.id, job.state, job.prompt, error=error)
                    await asyncio.to_thread(runtime.interventions.apply, seen)
            known = {job.id: job.state for job in jobs}
            first = False
        except HeronError as exc:
            log.warning("job interventions: %s", exc)
        await asyncio.sleep(POLL)


async def _scan(runtime: Runtime) -> None:
    scan = Scan(runtime.settings, runtime.store, lambda: runtime.interventions)
    while True:
        try:
            await asyncio.to_thread(scan)
        except HeronError as exc:
            log.warning("library and search interventions: %s", exc)
        await asyncio.sleep(runtime.settings.interventions_scan_interval)
