"""``POST /chat/stream``: a chat answer as Server-Sent Events that a client can resume.

Events, in order: ``stream`` (its id), ``token`` per piece of text, ``tool`` per tool
use, ``intervention`` per card delivered in the conversation's room meanwhile (its
``room``, else ``interventions_room``: ``heron.server.features.interventions.Raised``),
``citations``, then ``final`` (the whole answer, with its ``html`` and, when a
fallback replaced the model's text, that text as ``generated``) or ``error``. Each carries the id
``<stream>:<n>``. The agent runs in a task of its own and every event is kept, so a
client that drops the connection reconnects with ``Last-Event-ID: <stream>:<n>`` (to
``POST /chat/stream`` or ``GET /chat/stream/<stream>``) and gets the events after ``n``,
then the rest as they come. A stream resumes only for the key, and in the context, that
started it; to anyone else its id is unknown (404). A finished stream is kept
``server_stream_ttl`` seconds. An answer no client has followed for
``server_stream_grace`` seconds (the web page's Stop, a client that gave up) stops at its
next event and ends with ``error``, and one whose key is revoked stops at its next event
too. The answer's task has a tab of its own (``heron.server.features.keys``): it holds the
message and the answer's bound before the agent starts and is charged whatever the
answer spent, followed to its end or not. With PostgreSQL (replicas), every event is
copied to the database too (``heron.server.http.relay``), so a client resumes on any replica,
under the same owner rule. Framing, keep-alives and the disconnect are
``heron.server.http.events``::

    id: 3f2a...:1
    event: token
    data: {"text": "Pods"}
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from sse_starlette import ServerSentEvent
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from heron.core.chat import ChatRequest, Message
from heron.errors import HeronError, InputError
from heron.keys import OverLimit
from heron.llm.metering import TAB
from heron.llm.payload import estimate_tokens
from heron.server.features.interventions import Card, Raised, with_cards
from heron.server.features.keys import CALLER, Caller, Tab, key_of, over_limit, spend_answer
from heron.server.features.methods import ChatParams
from heron.server.hooks import NO_METHODS, endpoint
from heron.server.http.contexts import runtime_of
from heron.server.http.events import event_stream, in_thread, message
from heron.server.http.numbers import whole
from heron.server.http.relay import FLUSH, POLL, Relay, open_relay
from heron.server.http.replies import heron_error, invalid, not_found, read_body
from heron.server.runtime import Runtime
from heron.server.web.markdown import with_html

log = logging.getLogger("heron.server")


def event_data(event: Any) -> tuple[str, dict[str, Any]]:
    """An ``Agent.stream`` event as ``(name, data)``."""
    from heron.agent.answer import Citations, ClientToolCalls, Final, Token, ToolUsed

    if isinstance(event, Token):
        return "token", {"text": event.text}
    if isinstance(event, ToolUsed):
        return "tool", event.tool.to_dict()
    if isinstance(event, Citations):
        return "citations", {"citations": [c.to_dict() for c in event.citations]}
    if isinstance(event, Final):
        return "final", event.answer.to_dict()
    if isinstance(event, Card):  # raised in the conversation's room during the answer
        return "intervention", event.card
    if isinstance(event, ClientToolCalls):  # only when a caller offered its own tools
        calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in event.calls]
        return "tool_calls", {"tool_calls": calls}
    raise TypeError(f"Unknown agent event {type(event).__name__}.")


def finished(rt: Runtime, data: dict[str, Any], texts: list[str]) -> dict[str, Any]:
    """The ``final`` event's data: the answer with its ``html`` (``heron.server.web.markdown``)
    and, when a fallback replaced what the model wrote, that text as ``generated``, also
    kept with the session's turn, so a reader can still see what was replaced."""
    data = with_html(data)
    # The agent streams a fallback as one last token that ends with the answer replacing
    # the model's text (``Agent.stream``): the tokens before it are what the model wrote.
    if data.get("fallback") and texts and texts[-1].endswith(data["answer"]):
        generated = "".join(texts[:-1]).strip()
        if generated:
            data["generated"] = generated
            rt.agent.sessions.amend(data["session_id"], data["answer"], {"generated": generated})
    return data


def error_event_data(exc: BaseException) -> dict[str, Any]:
    """The data of a stream's ``error`` event: a Heron error's message and type; for a
    bug, a plain message (the log has the rest). A JSON-RPC error's ``data`` has its own
    shape (``rpc_error_data``, the JSON-RPC door's)."""
    if isinstance(exc, HeronError):
        return {"message": str(exc), "type": type(exc).__name__}
    return {"message": "The answer failed; see the server log.", "type": "InternalError"}


#: Who may follow a stream: the name of the key that started it (``None`` without one)
#: and its context.
Owner = tuple[str | None, str]


@dataclass
class Stream:
    id: str
    owner: Owner = (None, "default")
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    finished_at: float | None = None
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    #: Clients reading the stream now, and since when none has (``None``: one is, or
    #: none has come yet: the first response is on its way).
    followers: int = 0
    alone_since: float | None = None

    async def add(self, name: str, data: dict[str, Any], *, last: bool = False) -> None:
        async with self.changed:
            self.events.append((name, data))
            if last:
                self.finished_at = time.monotonic()
            self.changed.notify_all()

    def abandoned(self, grace: float) -> bool:
        """Whether no client has followed the stream for more than ``grace`` seconds."""
        return self.alone_since is not None and time.monotonic() - self.alone_since > grace

    async def follow(self, after: int) -> AsyncIterator[ServerSentEvent]:
        """The events numbered above ``after`` (from 1), live until the end."""
        self.followers += 1
        self.alone_since = None
        n = after
        try:
            while True:
                async with self.changed:
                    await self.changed.wait_for(
                        lambda n=n: len(self.events) > n or self.finished_at is not None
                    )
                    fresh, done = self.events[n:], self.finished_at is not None
                for name, data in fresh:
                    n += 1
                    yield message(data, event=name, id=f"{self.id}:{n}")
                if done and n >= len(self.events):
                    return
        finally:  # the end, or a client that left (the response cancels this generator)
            self.followers -= 1
            if not self.followers:
                self.alone_since = time.monotonic()


class StreamHub:
    """The live and recently finished streams, by id; with a ``relay`` (PostgreSQL),
    every replica's too."""

    def __init__(self, ttl: float, grace: float, relay: Relay | None = None) -> None:
        self.ttl = ttl
        self.grace = grace
        self.relay = relay
        self.streams: dict[str, Stream] = {}
        self.tasks: set[asyncio.Task[None]] = set()

    def _expire(self) -> None:
        now = time.monotonic()
        for sid, stream in list(self.streams.items()):
            if stream.finished_at is not None and now - stream.finished_at > self.ttl:
                del self.streams[sid]

    def start(
        self,
        rt: Runtime,
        events: Iterator[Any],
        owner: Owner,
        tab: Tab | None = None,
        sent: Sequence[str | None] = (),
    ) -> Stream:
        """Follow ``events`` (an ``Agent.stream``) in a task of its own, so the answer
        goes on and stays resumable when its client drops, for ``grace`` seconds with no
        client at all; ``owner`` alone may resume it. ``tab``: what the answer is
        charged to, closed when it ends; ``sent``: the client's text, counted as the
        prompt of an answer no model wrote."""
        self._expire()
        stream = Stream(uuid.uuid4().hex, owner)
        self.streams[stream.id] = stream
        task = asyncio.create_task(self._produce(rt, events, stream, tab, sent))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return stream

    async def _produce(
        self,
        rt: Runtime,
        events: Iterator[Any],
        stream: Stream,
        tab: Tab | None,
        sent: Sequence[str | None],
    ) -> None:
        TAB.set(tab)  # this task's own context: the model calls below are charged to it
        copy = None
        try:
            if self.relay is not None:
                try:
                    await run_in_threadpool(self.relay.start, stream.id, stream.owner)
                    copy = asyncio.create_task(self._copy(self.relay, stream))
                except HeronError as exc:  # the answer goes on here; other replicas miss it
                    log.warning("chat stream %s not copied to the database: %s", stream.id, exc)
            await self._answer(rt, events, stream, sent)
        finally:
            if tab is not None:
                tab.close()
            if copy is not None:
                await copy

    async def _copy(self, relay: Relay, stream: Stream) -> None:
        """Write the stream's events to the relay as they come, a batch at most every
        ``FLUSH`` seconds, until its last one is written."""
        written = 0
        try:
            while True:
                async with stream.changed:
                    await stream.changed.wait_for(
                        lambda n=written: len(stream.events) > n or stream.finished_at is not None
                    )
                await asyncio.sleep(FLUSH)  # what else comes meanwhile goes in one batch
                fresh, done = stream.events[written:], stream.finished_at is not None
                if fresh or done:
                    await run_in_threadpool(relay.write, stream.id, written + 1, fresh, done)
                written += len(fresh)
                if done and written >= len(stream.events):
                    return
        except HeronError as exc:  # the answer goes on here; only other replicas miss it
            log.warning("chat stream %s not copied to the database: %s", stream.id, exc)

    async def _answer(
        self, rt: Runtime, events: Iterator[Any], stream: Stream, sent: Sequence[str | None]
    ) -> None:
        await stream.add("stream", {"stream_id": stream.id})
        start = time.perf_counter()
        texts: list[str] = []
        caller = CALLER.get()  # the request's, copied into this task
        try:
            # aclosing: leaving the loop early closes the agent's stream (in_thread).
            async with aclosing(in_thread(events)) as agent_events:
                async for event in agent_events:
                    name, data = event_data(event)
                    if name == "token":
                        texts.append(data["text"])
                    if name == "final":
                        rt.metrics.observe_answer(event.answer, time.perf_counter() - start)
                        # Counted as /v1 counts it (an answer no model wrote: its text),
                        # charged beyond what its model calls were (the task's tab).
                        await run_in_threadpool(spend_answer, rt, event.answer, sent)
                        data = await run_in_threadpool(finished, rt, data, texts)
                    await stream.add(name, data, last=name == "final")
                    if stream.finished_at is None and (revoked := _revoked(caller)):
                        log.info("chat stream %s stopped: its key was revoked", stream.id)
                        gone = f"The API key {revoked!r} was revoked; the answer stopped."
                        await stream.add("error", {"message": gone, "type": "Revoked"}, last=True)
                        break
                    if stream.finished_at is None and stream.abandoned(self.grace):
                        log.info("chat stream %s stopped: no client follows it", stream.id)
                        stopped = {"message": "No client followed the answer.", "type": "Stopped"}
                        await stream.add("error", stopped, last=True)
                        break
        except Exception as exc:
            if not isinstance(exc, HeronError):
                log.exception("chat stream %s failed", stream.id)
            await stream.add("error", error_event_data(exc), last=True)
        if stream.finished_at is None:  # a stream that ended without its final event
            await stream.add("error", {"message": "The answer ended early."}, last=True)

    async def resume(self, last_event_id: str, owner: Owner) -> AsyncIterator[ServerSentEvent]:
        """The events after the one ``last_event_id`` names, for ``owner``, live until
        the end: from this replica's memory, else (a relay) from the database, whichever
        replica answers; a stream another key or context started is as unknown as one
        never started (``KeyError``): its id must not open it, nor say that it exists."""
        sid, _, number = last_event_id.partition(":")
        n = whole(number, "Last-Event-ID's event number")
        stream = self.streams.get(sid)
        if stream is not None and stream.owner == owner:
            return stream.follow(n)
        if stream is None and self.relay is not None:
            found = await run_in_threadpool(self.relay.read, sid, owner, n)
            if found is not None:
                return self._relayed(self.relay, sid, owner, n, *found)
        raise KeyError(last_event_id)

    async def _relayed(
        self,
        relay: Relay,
        sid: str,
        owner: Owner,
        n: int,
        events: list[tuple[str, dict[str, Any]]],
        finished: bool,
    ) -> AsyncIterator[ServerSentEvent]:
        """Another replica's stream, read from the database every ``POLL`` seconds."""
        heard = time.monotonic()
        while True:
            for name, data in events:
                n += 1
                yield message(data, event=name, id=f"{sid}:{n}")
            if finished:
                return
            if events:
                heard = time.monotonic()
            elif time.monotonic() - heard > self.grace:
                gone = {"message": "The replica answering stopped; ask again.", "type": "Stopped"}
                yield message(gone, event="error", id=f"{sid}:{n + 1}")
                return
            await asyncio.sleep(POLL)
            found = await run_in_threadpool(relay.read, sid, owner, n)
            if found is None:
                return
            events, finished = found

    async def close(self) -> None:
        """Let running answers finish (graceful shutdown), then forget every stream."""
        if self.tasks:
            await asyncio.gather(*self.tasks, return_exceptions=True)
        self.streams.clear()
        if self.relay is not None:
            self.relay.close()


def _revoked(caller: Caller | None) -> str | None:
    """The name of the caller's key if it was revoked since."""
    if caller is not None and caller.ring.is_revoked(caller.key.name):
        return caller.key.name
    return None


def owner_of(request: Request) -> Owner:
    """Who started, or asks to resume, a stream: the request's key and context."""
    key = key_of(request)
    context = getattr(request.state, "context", None) or "default"
    return (None if key is None else key.name, context)


def door_tokens(rt: Runtime, params: ChatParams) -> int:
    """What an answer holds of its key before the agent starts: the message's estimate
    and the answer's bound (``agent_max_tokens``); each model call holds what else it
    sends when it is sent."""
    prompt = estimate_tokens(ChatRequest((Message("user", params.message),)))
    return prompt + rt.settings.agent.max_tokens


def _sse(rt: Runtime, events: AsyncIterator[ServerSentEvent]) -> Response:
    return event_stream(events, rt.settings, answer=True)


def _gone(last_event_id: str) -> Response:
    return not_found(
        f"No stream to resume at Last-Event-ID {last_event_id!r}: it finished too long ago "
        "or never existed. Start a new one with POST /chat/stream."
    )


def hub_of(rt: Runtime) -> StreamHub:
    """The server's live and recently finished streams (``server_stream_ttl``,
    ``server_stream_grace``)."""
    settings = rt.settings
    return rt.shared(
        "streams",
        lambda: StreamHub(
            settings.server.stream_ttl, settings.server.stream_grace, open_relay(settings)
        ),
    )


async def chat_stream(rt: Runtime, request: Request) -> Response:
    rt = runtime_of(rt, request)  # the agent of the request's context, its sessions
    hub = hub_of(rt)
    owner = owner_of(request)
    resume_from = request.headers.get("last-event-id")
    if resume_from:
        try:
            return _sse(rt, await hub.resume(resume_from, owner))
        except KeyError:
            return _gone(resume_from)
        except InputError as exc:
            return invalid(str(exc), "Last-Event-ID")
    params = await read_body(request, ChatParams)
    if isinstance(params, Response):
        return params
    caller = CALLER.get()
    # The answer outlives this request (a client may drop and resume): its own tab.
    tab = None if caller is None else caller.tab()
    try:
        if tab is not None:
            tab.need(door_tokens(rt, params))
        events = await run_in_threadpool(open_stream, rt, params)
    except OverLimit as exc:
        return over_limit(request.url.path, exc)
    except HeronError as exc:
        if tab is not None:
            tab.close()
        return heron_error(exc)
    return _sse(rt, hub.start(rt, events, owner, tab, [params.message]).follow(0))


def open_stream(rt: Runtime, params: ChatParams) -> Iterator[Any]:
    """Start the agent's stream; bad input (an unknown model, a library that is not
    there) raises here, before any event, so it can be answered with a status code."""
    # Listening from before the agent starts: its grounding search may raise a card.
    raised = Raised(rt.interventions, params.room or rt.settings.interventions.room)
    try:
        events = rt.agent.stream(params.turn("agent", rt.settings))
    except BaseException:
        raised.close()
        raise
    return with_cards(events, raised)


async def chat_resume(rt: Runtime, request: Request) -> Response:
    hub = hub_of(rt)
    sid = request.path_params["stream_id"]
    last = request.headers.get("last-event-id") or f"{sid}:0"
    if not last.startswith(f"{sid}:"):
        return _gone(last)
    try:
        return _sse(rt, await hub.resume(last, owner_of(request)))
    except KeyError:
        return _gone(last)
    except InputError as exc:
        return invalid(str(exc), "Last-Event-ID")


rpc = NO_METHODS


def routes(rt: Runtime) -> list[BaseRoute]:
    """``POST /chat/stream`` and ``GET /chat/stream/{stream_id}``."""

    return [
        Route("/chat/stream", endpoint(chat_stream, rt), methods=["POST"]),
        Route("/chat/stream/{stream_id}", endpoint(chat_resume, rt), methods=["GET"]),
    ]


@asynccontextmanager
async def lifespan(rt: Runtime) -> AsyncIterator[None]:
    """On the way out, let running answers finish (graceful shutdown), then forget them."""
    yield
    await hub_of(rt).close()
