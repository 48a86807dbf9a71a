"""Interventions over HTTP: the ``interventions.*`` JSON-RPC methods, a room's live cards
(``GET /interventions/stream?room=R``, SSE), ``POST /interventions/{id}/outcome``,
``GET /interventions/audio/{file}``, the watcher that turns job changes into cards, the
slower scan of the libraries' health and the skill searches that find nothing, and the
hooks the agent's tool calls and searches go through (``observe_tool_use``).

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
import re
import stat
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from heron.embed import calibration_of, embed_queries
from heron.errors import HeronError
from heron.interventions import Activity, Intervention, Interventions, job_changed
from heron.interventions.detectors import (
    LibraryStatus,
    Observation,
    SearchRecord,
    library_health,
    search_misses,
)
from heron.interventions.model import Condition, Severity
from heron.interventions.service import audio_folder
from heron.interventions.voice import AUDIO_NAME
from heron.server.jobs import KEEPALIVE, jobs_of
from heron.server.sse import bad_request, http_status
from heron.server.strictjson import read_json

if TYPE_CHECKING:
    from heron.server.rpc import Registry
    from heron.server.runtime import Runtime

log = logging.getLogger("heron.server")

#: Seconds between looks at the database for cards another server sent, and at the jobs.
POLL = 1.0
#: Skill queries the scan reads, newest: enough for a request's last few searches.
SCAN_QUERIES = 1000
#: A Markdown heading, or a Python class or function: what a written file is about.
_HEADING = re.compile(
    r"^(?:\s{0,3}#{1,6}\s+(.+?)\s*#*|(?:async\s+)?(?:class|def)\s+(\w+).*)$", re.M
)


class RaiseParams(BaseModel):
    model_config = {"extra": "forbid"}
    kind: str = Field(description="The condition's kind: collision, watchdog_incident, ...")
    key: str = Field(description="Its identity in the room, e.g. collision:README.md.")
    room: str = Field(description="Who shares it: a team, a workspace.")
    severity: Severity = "warning"
    facts: dict[str, Any] = Field(default_factory=dict, description="The kind's facts.")
    actor: str = Field(default="", description="Who raises it; default: api.")


class ResolveParams(BaseModel):
    model_config = {"extra": "forbid"}
    key: str
    room: str


class OutcomeBody(BaseModel):
    model_config = {"extra": "forbid"}
    outcome: Literal["accept", "dismiss"]
    by: str = Field(default="api", description="Who decided.")


class OutcomeParams(OutcomeBody):
    id: int


class ListParams(BaseModel):
    model_config = {"extra": "forbid"}
    room: str | None = None
    limit: int = Field(default=100, ge=1, le=10_000)
    active_only: bool = False


def register(registry: Registry, runtime: Runtime) -> None:
    """Add the ``interventions.*`` JSON-RPC methods to ``registry``."""

    def raise_(p: RaiseParams) -> dict[str, Any]:
        service = runtime.interventions
        done = service.raise_(p.kind, p.key, p.room, p.severity, p.facts, actor=p.actor or "api")
        return done.to_dict()

    def list_(p: ListParams) -> list[dict[str, Any]]:
        found = runtime.interventions.list(p.room, limit=p.limit, active_only=p.active_only)
        return [i.to_dict() for i in found]

    registry.add(
        "interventions.raise", raise_, RaiseParams, summary="Raise a condition; returns it."
    )
    registry.add(
        "interventions.resolve",
        lambda p: runtime.interventions.resolve(p.room, p.key).to_dict(),
        ResolveParams,
        summary="End an active condition; its key re-arms.",
    )
    registry.add(
        "interventions.outcome",
        lambda p: runtime.interventions.outcome(p.id, p.outcome, p.by).to_dict(),
        OutcomeParams,
        summary="Record accept or dismiss, once.",
    )
    registry.add("interventions.list", list_, ListParams, summary="Interventions, newest first.")
    registry.add(
        "interventions.stats",
        lambda p: [s.to_dict() for s in runtime.interventions.stats()],
        summary="Per kind: raised, delivered, suppressed, accepted, dismissed.",
    )


def _card(item: Intervention) -> str:
    """A card's event, with where it stands now (``resolved_at``, ``outcome``,
    ``outcome_by``): a card replayed after its condition ended, or after someone decided,
    is shown so, without the actions that no longer apply."""
    data = item.card() | {
        "resolved_at": item.resolved_at,
        "outcome": item.outcome,
        "outcome_by": item.outcome_by,
    }
    return f"id: {item.id}\nevent: intervention\ndata: {json.dumps(data)}\n\n"


def _change(event: str, item: Intervention) -> str:
    """A ``resolved`` or ``outcome`` event: no id, so a resume is not moved by it."""
    fields = ("resolved_at",) if event == "resolved" else ("outcome", "outcome_by", "outcome_at")
    data = {"id": item.id, "key": item.key, "room": item.room}
    data |= {name: getattr(item, name) for name in fields}
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


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
            return bad_request("Name the room: GET /interventions/stream?room=team.")
        given = request.headers.get("last-event-id") or request.query_params.get("after", "0")
        if not given.strip().isdigit():
            return bad_request(f"Last-Event-ID must be a card's id, got {given!r}.")
        try:
            service = await run_in_threadpool(lambda: runtime.interventions)
        except HeronError as exc:
            return bad_request(str(exc), status=http_status(exc))
        return StreamingResponse(
            _frames(service, room, int(given)),
            media_type="text/event-stream",
            headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
        )

    async def outcome(request: Request) -> Response:
        try:
            body = OutcomeBody.model_validate(await read_json(request))
        except (ValidationError, ValueError):
            return bad_request('Send JSON like {"outcome": "accept", "by": "alice"}.')
        service = runtime.interventions
        try:
            done = await run_in_threadpool(
                service.outcome, request.path_params["id"], body.outcome, body.by
            )
        except HeronError as exc:
            return bad_request(str(exc), status=http_status(exc))
        return Response(json.dumps(done.to_dict()), media_type="application/json")

    async def audio(request: Request) -> Response:
        name = request.path_params["file"]
        found = None
        if AUDIO_NAME.match(name):
            found = await run_in_threadpool(open_audio, audio_folder(runtime.settings), name)
        if found is None:
            return bad_request(f"No audio file {name!r}.", status=404)
        return Response(found, media_type="audio/wav", headers={"cache-control": "no-store"})

    return [
        Route("/interventions/stream", stream, methods=["GET"]),
        Route("/interventions/{id:int}/outcome", outcome, methods=["POST"]),
        Route("/interventions/audio/{file}", audio, methods=["GET"]),
    ]


async def _frames(service: Interventions, room: str, after: int) -> AsyncIterator[str]:
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
    last, idle = after, 0.0
    try:
        while True:
            for card in await asyncio.to_thread(service.cards, room, last):
                last = card.id
                yield _card(card)
            try:
                event, item = await asyncio.wait_for(woken.get(), POLL)
            except TimeoutError:
                idle += POLL
                if idle >= KEEPALIVE:  # keeps proxies from closing a quiet stream
                    idle = 0.0
                    yield ": keep-alive\n\n"
                continue
            idle = 0.0
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
            jobs = await asyncio.to_thread(jobs_of(runtime).list, (), 200)
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


class Scan:
    """One pass (``scan()``) over what changes slowly: each configured library's syncs
    (``library_health``) and the skills usage log (``search_misses``), in the room
    ``interventions_room``. Only changes reach the service: a condition not already
    active nor raised by an earlier pass, a resolution of an active one; so a failing
    library costs one card, not one stored row a minute."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.raised: set[str] = set()  # keys this scan raised, delivered or suppressed

    def __call__(self) -> list[Intervention]:
        room = self.runtime.settings.interventions_room
        seen = [
            # A library's state keeps its last failed sync, not a count: one is a card.
            *library_health(room, self.libraries(), now=time.time(), max_failures=1),
            *search_misses(room, self.searches()),
        ]
        return self.apply(room, seen)

    def libraries(self) -> list[LibraryStatus]:
        from heron.libraries import read_libraries
        from heron.libraries.state import library_state

        found = []
        for library in read_libraries(self.runtime.settings):
            state = library_state(self.runtime.store, library.name)
            error = state.sync_error
            failures, message = (1, error[1]) if error else (0, "")
            found.append(LibraryStatus(library.name, state.synced_at, failures, message))
        return found

    def searches(self) -> list[SearchRecord]:
        """The skill queries of the usage log, oldest first (none before the first). The
        log keeps the skills each query returned, not their scores: a miss is a query
        that returned none. The tools usage log holds only requests a tool served."""
        from heron.skills import UsageLog

        path = self.runtime.settings.home / "skills.db"
        if not path.exists():
            return []
        log = UsageLog(path)
        try:
            queries = log.recent(SCAN_QUERIES)
        finally:
            log.close()
        return [SearchRecord("skills", query, len(returned)) for query, returned in queries]

    def apply(self, room: str, seen: list[Observation]) -> list[Intervention]:
        service = self.runtime.interventions
        active = {i.key for i in service.list(room, limit=10_000, active_only=True)}
        changed: list[Observation] = []
        for item in seen:
            if isinstance(item, Condition):
                if item.key not in active and item.key not in self.raised:
                    changed.append(item)
                self.raised.add(item.key)
            else:
                self.raised.discard(item.key)
                if item.key in active:
                    changed.append(item)
        return service.apply(changed)


async def _scan(runtime: Runtime) -> None:
    scan = Scan(runtime)
    while True:
        try:
            await asyncio.to_thread(scan)
        except HeronError as exc:
            log.warning("library and search interventions: %s", exc)
        await asyncio.sleep(runtime.settings.interventions_scan_interval)


def headings(content: str, limit: int = 12) -> list[str]:
    """The headings of a file's first 20,000 characters, for its topic.

    >>> headings("# Voice\\n\\nclass LiveKitAgent:\\n    def join(self): ...")
    ['Voice', 'LiveKitAgent']
    """
    found = (m.group(1) or m.group(2) for m in _HEADING.finditer(content[:20_000]))
    return [h for h in found if h][:limit]


def activity_of(runtime: Runtime) -> Activity:
    """Who works on what in this server (``heron.interventions.Activity``), kept on the
    runtime; topics are embedded with the store's embedder."""
    activity = runtime.extras.get("activity")
    if activity is None:
        embedder = runtime.store.embedder
        activity = runtime.extras["activity"] = Activity(
            embedder.embed,
            embed_query=lambda texts: embed_queries(embedder, texts),
            threshold=calibration_of(embedder).overlap,
            room=runtime.settings.interventions_room,
        )
    return activity


def observe_tool_use(
    runtime: Runtime, actor: str, name: str, arguments: dict[str, Any], ok: bool
) -> list[Intervention]:
    """What one of the agent's tool calls means for the room: a ``write_file`` that
    succeeded is ``observe_write`` (a collision when another actor holds the file), a
    ``search_docs`` is ``observe_search`` (a research overlap). The hook the agent's
    tool executor calls, with the caller's actor (the API's ``user``)."""
    if not ok or not actor:
        return []
    if name == "write_file" and isinstance(arguments.get("path"), str):
        content = arguments.get("content")
        tops = headings(content) if isinstance(content, str) else []
        seen = activity_of(runtime).observe_write(actor, arguments["path"], tops)
    elif name == "search_docs" and isinstance(arguments.get("query"), str):
        return observe_search(runtime, actor, arguments["query"])
    else:
        return []
    return runtime.interventions.apply(seen)


def observe_search(runtime: Runtime, actor: str, query: str) -> list[Intervention]:
    """A search of the libraries by ``actor`` (the agent's grounding search, or its
    ``search_docs`` tool): a research overlap when it is close to the topic of a file
    another actor edits. The hook the agent's ``on_search`` calls."""
    if not actor or not query.strip():
        return []
    return runtime.interventions.apply(activity_of(runtime).observe_search(actor, query))
