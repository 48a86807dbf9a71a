"""``Interventions``: what the CLI, the server and Heron's detectors call.

>>> interventions = open_interventions(settings)                  # doctest: +SKIP
>>> sent = interventions.raise_("collision", "collision:README.md", "team",
...     facts={"actors": ["alice", "bob"], "file": "README.md", "state": "unpushed"})
>>> sent.status, sent.text                                        # doctest: +SKIP
('delivered', 'Conflict: alice + bob both on README.md (unpushed).')
>>> interventions.raise_("collision", "collision:README.md", "team", facts=...).status
'suppressed_guard'                                                # doctest: +SKIP

A raise is decided in the store (``heron.interventions.base``), then delivered by the
policy's channels, as the learning loop has moved them (``heron.interventions.learn``):
voice first for a critical one (so its card carries the audio), the card to live
subscribers, then a message to the alert channels in a background thread (apprise
retries with backoff; a raise does not wait for a dead webhook). Every channel's outcome
is recorded as a ``Delivery``; a failing one never stops the card.

What is kept is bounded: only the facts a kind declares, each capped
(``heron.interventions.model``); suppressed raises counted, not stored; the spoken text
cut (``templates.MAX_SPOKEN``) and its audio capped while written (``voice``), deleted
when its card resolves; history, counts, changes and audio pruned by age and count
(``prune``, at most every ``PRUNE_EVERY`` seconds after a raise, and by the server's
scan).
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import replace
from pathlib import Path
from typing import Any

from heron.db import database_path, open_database
from heron.errors import InputError, NotFound
from heron.interventions.base import InterventionStore
from heron.interventions.learn import Learning
from heron.interventions.model import (
    MAX_NAME,
    OUTCOMES,
    Condition,
    Delivery,
    Intervention,
    KindStats,
    Learned,
    Member,
    PolicyChange,
    Pruned,
    Resolution,
    Severity,
)
from heron.interventions.policy import Policy, load_policy
from heron.interventions.sql import INTERVENTIONS, SQLInterventionStore
from heron.interventions.templates import Templates, load_templates
from heron.interventions.voice import (
    AUDIO_NAME,
    EspeakVoice,
    SpeechVoice,
    Voice,
    VoiceError,
    audio_name,
    prune_audio,
)
from heron.notify import Channels
from heron.redact import redact_value
from heron.resource import Resource
from heron.settings import Settings

log = logging.getLogger("heron.interventions")

#: Where the server serves the audio files (``heron.server.features.interventions``).
AUDIO_URL = "/interventions/audio/"
#: The channel of a person whose pings are the room's cards alone (the page shows them).
PAGE = "page"

#: ``listener(event, intervention)``: ``"intervention"`` (a card went out), ``"resolved"``,
#: ``"outcome"``.
Listener = Callable[[str, Intervention], None]

#: Seconds between two retention passes started by raises (the server's scan runs one too).
PRUNE_EVERY = 60.0


def interventions_db_path(settings: Settings) -> Path:
    return database_path(settings, INTERVENTIONS)


def audio_folder(settings: Settings) -> Path:
    return settings.home / "interventions" / "audio"


def default_voice(settings: Settings) -> Voice:
    if settings.interventions.tts_url:
        return SpeechVoice(audio_folder(settings), settings.interventions.tts_url)
    return EspeakVoice(audio_folder(settings), settings.interventions.tts_program)


def open_interventions(settings: Settings, **options: Any) -> Interventions:
    """The interventions the settings point at: on PostgreSQL when ``HERON_DATABASE_URL``
    names one (servers then share one history and one guard), else in
    ``$HERON_HOME/interventions.db``. ``options`` go to ``Interventions``."""
    store = SQLInterventionStore(open_database(settings, INTERVENTIONS))
    try:
        return Interventions(store, settings, **options)
    except BaseException:
        store.close()
        raise


class Interventions(Resource):
    """Raise, resolve and record the interventions of one context (``settings.context``);
    thread-safe. Its rooms are that context's: what it raises goes there, and ``list``,
    ``get``, ``cards``, ``outcome``, ``stats`` ... see only that context's (another
    context's id is ``NotFound``, as one that does not exist). ``within`` gives another
    context's view of the same store; ``store`` reads every context's."""

    def __init__(
        self,
        store: InterventionStore,
        settings: Settings,
        *,
        templates: Templates | None = None,
        policy: Policy | None = None,
        channels: Channels | None = None,
        voice: Voice | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.cooldown = settings.interventions.cooldown
        self.templates = templates or load_templates(settings.home)
        self.policy = policy or load_policy(settings.home)
        self.channels = (
            Channels.parse(u.get_secret_value() for u in settings.interventions.alert_urls)
            if channels is None
            else channels
        )
        self.voice = voice or default_voice(settings)
        self.learning = Learning(
            settings.interventions.learn_outcomes,
            settings.interventions.learn_dismiss_rate,
            settings.interventions.learn_accept_rate,
            settings.interventions.learn_cooldown_factor,
        )
        self._pruned_at = 0.0
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()
        self._senders = ThreadPoolExecutor(max_workers=2, thread_name_prefix="heron-alerts")
        self._pending: set[Future[None]] = set()
        self._owner = True  # a view (``within``) leaves the store and senders to it

    @property
    def context(self) -> str:
        return self.settings.context

    def within(self, settings: Settings) -> Interventions:
        """These interventions as the context of ``settings`` sees them: the same store,
        templates, policy, channels, senders and live subscribers, that context's rooms.
        Closing a view closes nothing."""
        if settings.context == self.context:
            return self
        view = copy.copy(self)  # shares the store, the listeners and the senders
        view.settings = settings
        view._owner = False
        return view

    # -- live subscribers ---------------------------------------------------------------

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event, intervention)`` for what happens in this process;
        returns the unsubscribe function. Listeners run in the raising thread: they must
        be quick (hand the value to a queue)."""
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                self._listeners.remove(listener)

        return unsubscribe

    def _emit(self, event: str, intervention: Intervention) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(event, intervention)
            except Exception:  # one broken subscriber must not stop the others
                log.exception("intervention listener failed")

    # -- conditions in ------------------------------------------------------------------

    def raise_(
        self,
        kind: str,
        key: str,
        room: str,
        severity: Severity = "warning",
        facts: dict[str, Any] | None = None,
        *,
        actor: str = "",
    ) -> Intervention:
        """Raise a condition from outside Heron (the API, the CLI); returns its
        intervention, sent or suppressed (id 0: counted, not stored).

        ``InputError`` (nothing stored) for an unknown kind, a kind one of Heron's own
        detectors owns (``owner`` in the templates: ``job_waiting``, whose Confirm comes
        from the job store, ...), a severity that is not ``info``, ``warning`` or
        ``critical``, or facts lacking one the kind declares."""
        c = Condition(kind, key, room, severity, facts or {}, actor).checked()
        owner = self.templates.template(c.kind).owner
        if owner is not None:
            raise InputError(
                f"{c.kind} interventions are raised by Heron's {owner} detector from its own "
                "records, never through the API or the CLI; raise a notice instead."
            )
        return self._raise(c)

    def _raise(self, condition: Condition, to: Channels | None = None) -> Intervention:
        c = condition.checked()
        # Only the declared facts are kept, and a token in one stays out of the store;
        # whoever saw it, it is raised in this context's room.
        facts = redact_value(self.templates.declared(c.kind, c.facts))
        c = replace(c, facts=facts, context=self.context)
        rule = self.policy.rule(c.kind)
        intervention = self.store.raise_(
            c,
            lambda seen: self.templates.render(c.kind, c.facts, seen_before=seen),
            cooldown=self.cooldown if rule.cooldown else 0.0,
            learning=self.learning if rule.learn else None,
        )
        self._maybe_prune()
        if not intervention.delivered:
            return intervention
        channels = rule.channels(c.severity, intervention.step)
        if "voice" in channels:
            intervention = self._speak(intervention)
        self._emit("intervention", intervention)
        self.store.deliver(intervention.id, Delivery("card", f"room:{c.room}", True))
        targets = self.channels if to is None else to
        if "message" in channels and targets:
            self._send_later(intervention, targets)
        return self.store.get(intervention.id)

    def ping(self, room: str, sender: str, teammate: str, about: str) -> Intervention:
        """A research-overlap card's ``ping_teammate`` action: ``sender`` asks
        ``teammate`` to sync up on ``about``, as a ``ping`` card in ``room`` and a message
        to the teammate's own channel from the room's roster (``join``) and no one else's
        (not the alert channels): none for ``page`` (the card is it). Once per pair and
        subject while it is active. ``NotFound`` for a teammate not in the roster."""
        found = {m.person: m for m in self.roster(room)}
        member = found.get(teammate.strip())
        if member is None:
            names = ", ".join(found) or "nobody yet"
            raise NotFound(
                f"{teammate!r} is not in room {room!r}'s roster ({names}): add them with "
                "people.join (room, person, channel) before pinging them."
            )
        to = Channels([]) if member.channel == PAGE else Channels.parse([member.channel])
        facts = {"sender": sender, "teammate": member.person, "about": about}
        key = f"ping:{sender}:{member.person}:{about}"
        return self._raise(Condition("ping", key, room, "info", facts, sender), to)

    # -- people -------------------------------------------------------------------------

    def join(self, room: str, person: str, channel: str | None = None) -> Member:
        """Put ``person`` in ``room``'s roster with the channel a ping to them goes to:
        ``page`` (the room's cards) or one apprise URL (``json://host/hook``,
        ``ntfy://topic``...; ``ConfigError`` for one apprise does not know); ``None``:
        the one they have in the room (a sign-in keeps it), else ``page``."""
        room, person = room.strip(), person.strip()
        if channel is None:
            had = [m for m in self.roster(room) if m.person == person]
            if had:
                return had[0]
            channel = PAGE
        channel = channel.strip() or PAGE
        for what, value in (("room", room), ("person", person)):
            if not value or len(value) > MAX_NAME:
                raise InputError(f"A {what} is 1 to {MAX_NAME} characters, not {value[:40]!r}.")
        shown = PAGE if channel == PAGE else Channels.parse([channel]).channels[0].name
        member = Member(room, person, channel, shown, time.time())
        return self.store.join(member, context=self.context)

    def leave(self, room: str, person: str) -> bool:
        return self.store.leave(room.strip(), person.strip(), context=self.context)

    def roster(self, room: str) -> list[Member]:
        return self.store.roster(room.strip(), context=self.context)

    def resolve(self, room: str, key: str) -> Intervention:
        """End the active condition ``key`` in ``room``; ``NotFound`` names an unknown room
        or a key with nothing active."""
        resolved = self.store.resolve(room.strip(), key.strip(), context=self.context)
        self._forget_audio([resolved.audio_url])  # spoken for a condition that is over
        self._emit("resolved", resolved)
        return resolved

    def apply(self, observations: Iterable[Condition | Resolution]) -> list[Intervention]:
        """Raise or resolve what a detector saw. Resolving what is not active (a job that
        never waited) is no error here: a detector reports ends it did not see begin."""
        done = []
        for seen in observations:
            if isinstance(seen, Resolution):
                try:
                    done.append(self.resolve(seen.room, seen.key))
                except NotFound:
                    continue
            else:
                done.append(self._raise(seen))
        return done

    # -- outcomes and history -----------------------------------------------------------

    def outcome(self, intervention_id: int, outcome: str, by: str) -> Intervention:
        """Record ``accept`` or ``dismiss`` by ``by``, once (``InputError`` the second
        time; ``NotFound`` for an unknown id)."""
        if outcome not in OUTCOMES:
            raise InputError(f"Unknown outcome {outcome!r}. Choose from: {', '.join(OUTCOMES)}.")
        found = self.get(intervention_id)
        learning = self.learning if self.policy.rule(found.kind).learn else None
        who = by.strip() or "unknown"
        done = self.store.outcome(intervention_id, outcome, who, learning=learning)  # type: ignore[arg-type]
        self._emit("outcome", done)
        return done

    def reset(self, room: str, kind: str, by: str) -> Learned:
        """Undo what was learned of ``kind`` in ``room``: back to its policy, recorded."""
        who = by.strip() or "unknown"
        return self.store.reset(room.strip(), kind.strip(), who, context=self.context)

    def learned(self, room: str | None = None) -> list[Learned]:
        return self.store.learned(room, context=self.context)

    def changes(self, room: str | None = None, limit: int = 100) -> list[PolicyChange]:
        return self.store.changes(room, limit, context=self.context)

    def get_many(self, ids: list[int]) -> list[Intervention]:
        return [i for i in self.store.get_many(ids) if i.context == self.context]

    # -- retention ----------------------------------------------------------------------

    def prune(self) -> Pruned:
        """One retention pass: history older than ``interventions_keep_days``, beyond
        ``interventions_keep_per_room`` of a room or ``interventions_keep_total`` of all
        (a storm naming a new room each time), then audio by the same age and
        ``interventions_audio_keep`` files."""
        self._pruned_at = time.monotonic()
        keep = self.settings.interventions.keep_days * 86400
        pruned, audio = self.store.prune(
            before=time.time() - keep,
            keep_per_room=self.settings.interventions.keep_per_room,
            keep_total=self.settings.interventions.keep_total,
        )
        removed = self._forget_audio(audio)
        removed += prune_audio(
            self.voice.folder, self.settings.interventions.audio_keep, max_age=keep
        )
        return replace(pruned, audio=removed)

    def _maybe_prune(self) -> None:
        if time.monotonic() - self._pruned_at >= PRUNE_EVERY:
            self.prune()

    def _forget_audio(self, urls: Iterable[str | None]) -> int:
        removed = 0
        for url in urls:
            name = (url or "").removeprefix(AUDIO_URL)
            if url and AUDIO_NAME.match(name):
                try:
                    (self.voice.folder / name).unlink()
                    removed += 1
                except FileNotFoundError:
                    continue
        return removed

    def get(self, intervention_id: int) -> Intervention:
        """The intervention, if it is this context's: ``NotFound`` for another context's
        id, worded as for one that does not exist."""
        found = self.store.get(intervention_id)
        if found.context != self.context:
            raise NotFound(
                f"No intervention {intervention_id}. List them with: heron interventions list"
            )
        return found

    def list(
        self, room: str | None = None, *, limit: int = 100, active_only: bool = False
    ) -> list[Intervention]:
        return self.store.list(room, limit=limit, active_only=active_only, context=self.context)

    def cards(self, room: str, after: int = 0, limit: int = 1000) -> list[Intervention]:
        return self.store.cards(room, after, limit, context=self.context)

    def stats(self) -> list[KindStats]:
        return self.store.stats(context=self.context)

    # -- channels -----------------------------------------------------------------------

    def _speak(self, intervention: Intervention) -> Intervention:
        name = audio_name(intervention.id)
        try:
            path = self.voice.render(intervention.spoken, name)
        except VoiceError as exc:
            log.warning("intervention %s: no voice: %s", intervention.id, exc)
            self.store.deliver(intervention.id, Delivery("voice", name, False, error=str(exc)))
            return intervention
        url = AUDIO_URL + path.name
        self.store.deliver(intervention.id, Delivery("voice", path.name, True), audio_url=url)
        return replace(intervention, audio_url=url)

    def _send_later(self, intervention: Intervention, channels: Channels) -> None:
        future = self._senders.submit(self._message, intervention, channels)
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(self._done)

    def _done(self, future: Future[None]) -> None:
        with self._lock:
            self._pending.discard(future)
        if future.exception() is not None:
            log.error("sending an intervention failed", exc_info=future.exception())

    def _message(self, intervention: Intervention, channels: Channels) -> None:
        title = f"Heron: {intervention.kind} in {intervention.room}"
        for sent in channels.send(title, intervention.text, severity=intervention.severity):
            self.store.deliver(
                intervention.id,
                Delivery("message", sent.channel, sent.ok, sent.attempts, sent.error),
            )

    def wait(self, timeout: float | None = None) -> None:
        """Wait until the messages sent so far have been delivered or failed."""
        with self._lock:
            pending = list(self._pending)
        wait(pending, timeout)

    def close(self) -> None:
        """Finish sending messages, then close the store (a view closes nothing)."""
        if not self._owner:
            return
        self._senders.shutdown(wait=True)
        self.store.close()
