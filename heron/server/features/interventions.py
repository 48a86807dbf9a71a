"""Interventions over HTTP: the ``interventions.*`` JSON-RPC methods, a room's live cards
(``GET /interventions/stream?room=R``, SSE), ``POST /interventions/{id}/outcome``,
``GET /interventions/audio/{file}``, the watcher that turns job changes into cards (and
resolves a job's card once the job store says it no longer waits, however it moved on),
and the slower scan of the libraries' health and the skill searches that find nothing
(``heron.wiring.Scan``; the agent's observers are ``heron.wiring.Observers``),
which also applies the retention rule.

A card's buttons run through ``interventions.act``: the server takes the action from the
stored card (never from the caller), runs it as the person who clicked (``by``), records
that as the card's accept, and settles the card from the action's source of truth.

The stream replays the room's cards after the ``Last-Event-ID`` header (or ``?after=N``),
then sends new ones as they go out: at once for those raised in this process, within
``POLL`` seconds for those another server sharing the database raised. A card carries
where it stands when sent (``resolved_at``, ``outcome``, ``outcome_by``). Only cards carry
an ``id:``; ``resolved`` and ``outcome`` events say what changed and are not replayed.
They reach every open stream: at once from this process, and within ``POLL`` seconds
from any other (each stream looks again at the open cards it sent)::

    id: 42
    event: intervention
    data: {"id": 42, "kind": "collision", "room": "team", "text": "Conflict: ...", ...}

    event: resolved
    data: {"id": 42, "key": "collision:README.md", "room": "team", "resolved_at": 1.7e9}

**Contexts** (``heron.core.contexts``): the methods, the stream and the outcome route act
in the request's context (``reach="context"``, ``runtime_of``): its rooms are its own (a
room ``team`` of one context is not the ``team`` of another), and another context's
intervention id is a 404 (``-32004``). A card's action runs in the card's context; a
job's card is raised in the job's. A card's audio is served only in the card's context.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from queue import SimpleQueue
from typing import Any, Literal

from pydantic import Field
from sse_starlette import ServerSentEvent
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from heron.errors import HeronError, InputError, NotFound
from heron.interventions import Intervention, Interventions, Resolution, job_changed
from heron.interventions.model import MAX_NAME, Severity
from heron.interventions.service import AUDIO_URL, PAGE, audio_folder
from heron.interventions.voice import AUDIO_NAME, CHUNK
from heron.jobs import Job
from heron.keys import ADMIN, Forbidden
from heron.redact import redact
from heron.server.doors.rpc import McpTool, Methods, Params, registry_of
from heron.server.features.keys import current_key
from heron.server.http.contexts import runtime_of
from heron.server.http.events import event_stream, message
from heron.server.http.numbers import RecordId, whole
from heron.server.http.replies import heron_error, invalid, not_found, read_body
from heron.server.runtime import Runtime
from heron.wiring.interventions import ActivityReport, Scan

log = logging.getLogger("heron.server")

#: Seconds between looks at the database for cards another server sent, and at the jobs.
POLL = 1.0
#: The most open cards one stream keeps looking at for changes (the newest).
WATCHED = 1000
#: The longest path, text and heading an activity report keeps.
MAX_PATH = 500
MAX_TEXT = 2000
MAX_HEADING = 200
#: The kinds whose card stands for a job waiting, by the fact naming the job.
JOB_CARDS = {"job_waiting": "job_id"}


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
    by: str = Field(default="api", max_length=MAX_NAME, description="Who decided.")


class ActParams(Params):
    id: int = Field(ge=1, le=2**63 - 1, description="The card's id.")
    action: int = Field(ge=0, le=100, description="Which of its actions, from 0.")
    by: str = Field(min_length=1, max_length=MAX_NAME, description="Who clicked it.")


class PingParams(Params):
    room: str = Field(min_length=1, max_length=MAX_NAME)
    teammate: str = Field(min_length=1, max_length=MAX_NAME, description="Whom to ping.")
    about: str = Field(min_length=1, max_length=MAX_NAME, description="The file or topic.")
    by: str = Field(min_length=1, max_length=MAX_NAME, description="Who pings.")


class MemberParams(Params):
    room: str = Field(min_length=1, max_length=MAX_NAME)
    person: str = Field(min_length=1, max_length=MAX_NAME, description="Who: their name.")


class JoinParams(MemberParams):
    channel: str | None = Field(
        default=None,
        max_length=2000,
        description="Where a ping to them goes: page (the room's cards), or an apprise URL "
        "(json://host/hook, ntfy://topic, slack://...): the administrator's to set. "
        "Default: the one they have in the room, else page.",
    )


class RosterParams(Params):
    room: str = Field(min_length=1, max_length=MAX_NAME)


class ActivityParams(MemberParams):
    kind: Literal["edit", "release", "read", "search"] = Field(
        description="edit or release a file (path), read or search something (text)."
    )
    path: str = Field(default="", max_length=MAX_PATH, description="The file, for edit/release.")
    text: str = Field(default="", max_length=MAX_TEXT, description="What is read or searched.")
    headings: list[str] = Field(
        default_factory=list, max_length=20, description="The file's headings, for an edit."
    )


class ResetParams(Params):
    kind: str = Field(min_length=1, max_length=MAX_NAME)
    room: str = Field(min_length=1, max_length=MAX_NAME)
    by: str = Field(default="api", min_length=1, max_length=MAX_NAME, description="Who resets.")


class StatsParams(Params):
    room: str | None = Field(default=None, description="Only this room's learning.")


class OutcomeParams(OutcomeBody):
    id: RecordId


class ListParams(Params):
    room: str | None = None
    limit: int = Field(default=100, ge=1, le=10_000)
    active_only: bool = False


#: The ``interventions.*`` and ``people.*`` methods, each on the interventions of the
#: caller's context (``rt.interventions``).
rpc = Methods(reach="context")


@rpc.method("interventions.raise", RaiseParams, summary="Raise a condition; returns it.")
def raise_(p: RaiseParams, rt: Runtime) -> dict[str, Any]:
    service = rt.interventions
    done = service.raise_(p.kind, p.key, p.room, p.severity, p.facts, actor=p.actor or "api")
    return done.to_dict()


@rpc.method(
    "interventions.resolve", ResolveParams, summary="End an active condition; its key re-arms."
)
def resolve(p: ResolveParams, rt: Runtime) -> dict[str, Any]:
    return rt.interventions.resolve(p.room, p.key).to_dict()


@rpc.method(
    "interventions.list",
    ListParams,
    summary="Interventions, newest first.",
    scope="read",
    tool=McpTool("interventions_list", "List interventions", "read", idempotent=True),
)
def list_(p: ListParams, rt: Runtime) -> list[dict[str, Any]]:
    found = rt.interventions.list(p.room, limit=p.limit, active_only=p.active_only)
    return [i.to_dict() for i in found]


@rpc.method(
    "interventions.outcome",
    OutcomeParams,
    summary="Record accept or dismiss, once.",
    scope="chat",  # the card's reader decides; raise and resolve need admin
    tool=McpTool(
        "interventions_outcome", "Accept or dismiss an intervention", "write", idempotent=True
    ),
)
def outcome(p: OutcomeParams, rt: Runtime) -> dict[str, Any]:
    return rt.interventions.outcome(p.id, p.outcome, p.by).to_dict()


@rpc.method(
    "interventions.stats",
    StatsParams,
    summary="Per kind: raised, delivered, suppressed, accepted, dismissed; what was learned.",
    scope="read",
)
def stats(p: StatsParams, rt: Runtime) -> dict[str, Any]:
    service = rt.interventions
    return {
        "kinds": [s.to_dict() for s in service.stats()],
        "learned": [item.to_dict() for item in service.learned(p.room)],
        "changes": [change.to_dict() for change in service.changes(p.room, limit=100)],
    }


@rpc.method(
    "interventions.reset",
    ResetParams,
    summary="Undo what was learned of a kind in a room: back to its policy.",
)
def reset(p: ResetParams, rt: Runtime) -> dict[str, Any]:
    return rt.interventions.reset(p.room, p.kind, p.by).to_dict()


@rpc.method(
    "interventions.ping_teammate",
    PingParams,
    summary="Ask a teammate to sync up (a research-overlap card's action).",
)
def ping(p: PingParams, rt: Runtime) -> dict[str, Any]:
    return rt.interventions.ping(p.room, p.by, p.teammate, p.about).to_dict()


@rpc.method("people.join", JoinParams, summary="Put a person in a room's roster.", scope="chat")
def join(p: JoinParams, rt: Runtime) -> dict[str, Any]:
    _as(p.person, channel=p.channel or PAGE)
    return rt.interventions.join(p.room, p.person, p.channel).to_dict()


@rpc.method(
    "people.leave", MemberParams, summary="Take a person out of a room's roster.", scope="chat"
)
def leave(p: MemberParams, rt: Runtime) -> dict[str, Any]:
    _as(p.person)
    return {
        "room": p.room,
        "person": p.person,
        "left": rt.interventions.leave(p.room, p.person),
    }


@rpc.method("people.list", RosterParams, summary="A room's roster.", scope="read")
def roster(p: RosterParams, rt: Runtime) -> list[dict[str, Any]]:
    return [m.to_dict() for m in rt.interventions.roster(p.room)]


@rpc.method(
    "people.activity",
    ActivityParams,
    summary="What a person edits or reads outside Heron: feeds the collision and "
    "research-overlap cards of the room.",
    scope="chat",
)
def activity(p: ActivityParams, rt: Runtime) -> list[dict[str, Any]]:
    _as(p.person)
    if p.kind in ("edit", "release") and not p.path.strip():
        raise InputError(f"An {p.kind} names the file: give path.")
    if p.kind in ("read", "search") and not p.text.strip():
        raise InputError(f"A {p.kind} says what: give text (a title, the words searched).")
    report = ActivityReport(
        p.kind,
        path=redact(p.path.strip()),
        text=redact(p.text.strip()),
        headings=tuple(redact(h)[:MAX_HEADING] for h in p.headings),
    )
    raised = rt.observers.report(p.room, p.person, report)
    return [i.to_dict() for i in raised]


@rpc.method(
    "interventions.act",
    ActParams,
    summary="Run one of a card's actions as the person who clicked it.",
)
async def act(p: ActParams, rt: Runtime) -> dict[str, Any]:
    service = await run_in_threadpool(lambda: rt.interventions)
    item = await run_in_threadpool(service.get, p.id)
    if not item.delivered or item.resolved_at is not None:
        raise InputError(
            f"Intervention {p.id} is over (its condition ended): its actions no longer "
            "apply. See: heron interventions list --active"
        )
    if p.action >= len(item.actions):
        raise InputError(f"Intervention {p.id} has {len(item.actions)} action(s).")
    action = item.actions[p.action]
    registry = registry_of(rt)
    target = registry.methods.get(action.method)
    if target is None or action.method == "interventions.act":
        raise InputError(f"The action {action.label!r} calls no method this server has.")
    # The card's own params, from its template and its facts; the caller adds only
    # who clicked (and, for a method that takes one, the card's room).
    params = dict(action.params)
    context = {"by": p.by, "room": item.room}
    params |= {k: v for k, v in context.items() if k in target.params.model_fields}
    try:  # in the card's context, which is the caller's
        result = await registry.call(action.method, params, rt)
    finally:
        await run_in_threadpool(_settle, rt, [item])
    if item.outcome is None:
        with suppress(InputError):  # decided meanwhile: the first outcome stands
            await run_in_threadpool(service.outcome, item.id, "accept", p.by)
    done = await run_in_threadpool(service.get, item.id)
    return {"intervention": done.to_dict(), "result": result}


@dataclass(frozen=True)
class Card:
    """A card raised in a conversation's room while its turn was answered: the
    ``intervention`` event of ``/chat/stream`` (its ``audio_url`` with it)."""

    card: dict[str, Any]


class Raised:
    """The cards delivered in ``room`` (of ``service``'s context) from now until
    ``close()``, kept as they come from whichever thread raised them."""

    def __init__(self, service: Interventions, room: str) -> None:
        self._found: SimpleQueue[Intervention] = SimpleQueue()

        def listener(event: str, item: Intervention) -> None:
            if event == "intervention" and item.room == room and item.context == service.context:
                self._found.put(item)

        self.close = service.subscribe(listener)

    def drain(self) -> list[dict[str, Any]]:
        """The cards raised since the last drain, as their events' data."""
        cards = []
        while not self._found.empty():
            cards.append(self._found.get().card())
        return cards

    def __enter__(self) -> Raised:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def with_cards(events: Iterator[Any], raised: Raised) -> Iterator[Any]:
    """``events`` (an agent's stream) with a ``Card`` before each event for each card
    ``raised`` meanwhile (a research overlap the turn's search found, a job of the
    conversation waiting), and after the last; ``raised`` is closed at the end. Opened
    before the stream starts: its first event (the grounding search) is made at once."""
    with raised:
        for event in events:
            for card in raised.drain():
                yield Card(card)
            yield event
        for card in raised.drain():
            yield Card(card)


def _as(person: str, *, channel: str = PAGE) -> None:
    """A key without ``admin`` acts for its own person alone (its name), and gives no
    channel but the page: a URL is one the server will send to, the administrator's to
    set. ``Forbidden`` otherwise; no key (the administrator) may act for anyone."""
    key = current_key()
    if key is None or key.allows(ADMIN):
        return
    if person.strip() != key.name or channel.strip() not in ("", PAGE):
        raise Forbidden(key.name, ADMIN)


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


def open_audio(folder: Path, name: str) -> tuple[Iterator[bytes], int] | None:
    """The file ``name`` of ``folder`` as chunks and its size, or ``None``: opened relative
    to the folder with ``O_NOFOLLOW`` and checked as a regular file on the open
    descriptor, so a link or a file swapped in between a check and the open cannot be
    served; read a chunk at a time as it is sent, never whole."""
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
    handle = os.fdopen(fd, "rb")
    info = os.fstat(handle.fileno())
    if not stat.S_ISREG(info.st_mode):
        handle.close()
        return None

    def chunks() -> Iterator[bytes]:
        with handle:
            while chunk := handle.read(CHUNK):
                yield chunk

    return chunks(), info.st_size


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
            service = await run_in_threadpool(lambda: runtime_of(runtime, request).interventions)
        except HeronError as exc:
            return heron_error(exc)
        return event_stream(_frames(service, room, after), runtime.settings)

    async def outcome(request: Request) -> Response:
        body = await read_body(request, OutcomeBody)
        if isinstance(body, Response):
            return body
        try:
            service = await run_in_threadpool(lambda: runtime_of(runtime, request).interventions)
            card = whole(request.path_params["id"], "the intervention id", low=1)
            done = await run_in_threadpool(service.outcome, card, body.outcome, body.by)
        except HeronError as exc:
            return heron_error(exc)
        return Response(json.dumps(done.to_dict()), media_type="application/json")

    def spoken(request: Request, name: str) -> tuple[Iterator[bytes], int] | None:
        """The audio file ``name`` if the card that spoke it is one of the request's
        context: the file is named by the card's id, which is counted, so any caller could
        guess another context's. Rooms are no boundary within a context (any caller of it
        lists every room's cards), so the context is the check."""
        if not AUDIO_NAME.match(name):
            return None
        try:
            card = whole(name.removesuffix(".wav"), "the card's id", low=1)
            found = runtime_of(runtime, request).interventions.get(card)
        except HeronError:  # another context's card, or none: no file either way
            return None
        if found.audio_url != AUDIO_URL + name:
            return None
        return open_audio(audio_folder(runtime.settings), name)

    async def audio(request: Request) -> Response:
        name = request.path_params["file"]
        found = await run_in_threadpool(spoken, request, name)
        if found is None:
            return not_found(f"No audio file {name!r}.")
        chunks, size = found
        headers = {"cache-control": "no-store", "content-length": str(size)}
        return StreamingResponse(chunks, media_type="audio/wav", headers=headers)

    return [
        Route("/interventions/stream", stream, methods=["GET"]),
        Route("/interventions/{id}/outcome", outcome, methods=["POST"]),
        Route("/interventions/audio/{file}", audio, methods=["GET"]),
    ]


async def _frames(service: Interventions, room: str, after: int) -> AsyncIterator[ServerSentEvent]:
    """Cards after ``after``, then live ones, and the changes of the open ones; see the
    module docstring."""
    loop = asyncio.get_running_loop()
    woken: asyncio.Queue[tuple[str, Intervention]] = asyncio.Queue()

    def listener(event: str, item: Intervention) -> None:
        if item.room == room and item.context == service.context:
            loop.call_soon_threadsafe(woken.put_nowait, (event, item))

    # Subscribed before the replay, so a card sent during it is not missed. A live card
    # wakes the stream, which then reads the room's cards after the last one it gave:
    # cards go out in id order, whichever server sent them, and none is skipped.
    unsubscribe = service.subscribe(listener)
    last = after
    # The cards this stream sent that have not ended, with the outcome it last told: on
    # each quiet ``POLL`` it reads them again, so an end or a decision made by another
    # server (or anything this process did not hear) reaches this stream too.
    watched: dict[int, str | None] = {}
    try:
        while True:
            for card in await asyncio.to_thread(service.cards, room, last):
                last = card.id
                if card.resolved_at is None:
                    watched[card.id] = card.outcome
                yield _card(card)
            while len(watched) > WATCHED:
                del watched[next(iter(watched))]
            try:
                event, item = await asyncio.wait_for(woken.get(), POLL)
            except TimeoutError:
                for change in _changes(
                    watched, await asyncio.to_thread(service.get_many, [*watched])
                ):
                    yield change
                continue
            if event != "intervention" and item.id in watched:
                for change in _changes(watched, [item], event):
                    yield change
    finally:
        unsubscribe()


def _changes(
    watched: dict[int, str | None], found: list[Intervention], only: str | None = None
) -> list[ServerSentEvent]:
    """The ``outcome`` and ``resolved`` events of ``found`` not yet told; ``watched``
    updated (an ended or removed card is no longer watched)."""
    told = []
    present = {item.id for item in found}
    for item in found:
        if item.outcome is not None and watched.get(item.id) != item.outcome and only != "resolved":
            watched[item.id] = item.outcome
            told.append(_change("outcome", item))
        if item.resolved_at is not None and only != "outcome":
            watched.pop(item.id, None)
            told.append(_change("resolved", item))
    if only is None:
        for gone in [i for i in watched if i not in present]:
            del watched[gone]
    return told


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
    """Every context's jobs (the job store, not one context's view), each job's card
    raised in its own context's room."""
    known: dict[str, str] = {}
    first = True
    while True:
        try:
            jobs = await asyncio.to_thread(runtime.jobs.store.list, (), 200)
            for job in jobs:
                if known.get(job.id) == job.state:
                    continue
                # On the first look only the waiting ones count: a failure from before
                # the server started was told (or not) by the server that saw it.
                if not first or job.state == "waiting_for_confirmation":
                    await asyncio.to_thread(_tell_job, runtime, job)
            known = {job.id: job.state for job in jobs}
            first = False
            # Whatever the diff saw or missed (a server restart, a job confirmed while
            # none ran, one beyond the last 200), each open job card is held against
            # the job store.
            await asyncio.to_thread(_settle, runtime)
        except HeronError as exc:
            log.warning("job interventions: %s", exc)
        await asyncio.sleep(POLL)


def _tell_job(runtime: Runtime, job: Job) -> None:
    """Raise or resolve ``job``'s card in its room (of its context); a job of a context heron.toml
    no longer defines has none to go to."""
    try:
        scoped = runtime.within(job.context)
    except HeronError as exc:
        log.warning("job %s: no card: %s", job.id, exc)
        return
    error = runtime.jobs.failure(job)  # a failed job keeps why in its event, not a result
    # In the room of the conversation that delegated it (or of its jobs.create), where the
    # people who asked are: the page's chat shows the room's cards in the conversation.
    room = job.room or scoped.settings.interventions.room
    scoped.interventions.apply(job_changed(room, job.id, job.state, job.prompt, error=error))


def _settle(runtime: Runtime, cards: list[Intervention] | None = None) -> None:
    """Resolve each open job card (``cards``, or all the active ones of every context)
    whose job no longer waits for confirmation, or is gone, as the job store says; each
    in its card's context."""
    if cards is None:
        cards = runtime.interventions.store.list(None, limit=WATCHED, active_only=True)
    ended: dict[str, list[Resolution]] = {}
    for card in cards:
        fact = JOB_CARDS.get(card.kind)
        if fact is None or card.resolved_at is not None:
            continue
        try:
            waiting = runtime.jobs.store.get(str(card.facts.get(fact))).state == (
                "waiting_for_confirmation"
            )
        except NotFound:
            waiting = False
        if not waiting:
            ended.setdefault(card.context, []).append(Resolution(card.room, card.key))
    for context, resolutions in ended.items():
        try:
            runtime.within(context).interventions.apply(resolutions)
        except HeronError as exc:  # a context heron.toml no longer defines
            log.warning("job cards of context %r: %s", context, exc)


async def _scan(runtime: Runtime) -> None:
    scan = Scan(runtime.settings, runtime.store, lambda: runtime.interventions)
    while True:
        try:
            await asyncio.to_thread(scan)
            await asyncio.to_thread(lambda: runtime.interventions.prune())
        except HeronError as exc:
            log.warning("library and search interventions: %s", exc)
        await asyncio.sleep(runtime.settings.interventions.scan_interval)
