"""Heron's own detectors: plain values in, ``Condition``s and ``Resolution``s out.

Each is deterministic and imports no other capability: the composition layer (the
server's runtime, the CLI) reads jobs, libraries, usage logs and tool calls and passes
what it read here as plain values, then hands the result to ``Interventions.apply``.

- ``job_changed``: a job parks at ``waiting_for_confirmation`` (a card with confirm and
  deny buttons; resolved once it leaves that state) or fails (a card).
- ``watchdog_incident``: an incident of the watchdog (a message, voice when critical).
- ``library_health``: a library whose sync failed ``max_failures`` times in a row, or
  whose last good sync is older than ``max_age``.
- ``search_misses``: a skill or tool request that keeps finding nothing good.
- ``Activity``: who writes or holds which workspace file, and who searches what:
  **collision** (two actors on one file: a conflict card) and **research overlap** (one
  actor searching on the topic of a file another edits: a collaboration card, never a
  conflict).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from heron.embed.calibration import MINILM
from heron.interventions.model import Condition, Resolution

Observation = Condition | Resolution

#: Cosine similarity between a search and a file's path and headings from which the two
#: are taken for one topic, on the bundled all-MiniLM-L6-v2's scale: measured on
#: ``tests/interventions/overlap_pairs.jsonl`` (docs/interventions.md, "Research
#: overlap"). The server passes its embedder's own (``heron.embed.calibration``).
OVERLAP_THRESHOLD = MINILM.overlap


# -- jobs -------------------------------------------------------------------------------


def job_changed(
    room: str, job_id: str, state: str, prompt: str, *, error: str = ""
) -> list[Observation]:
    """What a job entering ``state`` means for the room.

    >>> [c.kind for c in job_changed("team", "9f3c", "waiting_for_confirmation", "deploy")]
    ['job_waiting']
    >>> job_changed("team", "9f3c", "queued", "deploy")
    [Resolution(room='team', key='job_waiting:9f3c')]
    """
    waiting = f"job_waiting:{job_id}"
    if state == "waiting_for_confirmation":
        facts = {"job_id": job_id, "prompt": prompt[:200]}
        return [Condition("job_waiting", waiting, room, "warning", facts, "jobs")]
    seen: list[Observation] = [Resolution(room, waiting)]
    if state == "failed":
        facts = {"job_id": job_id, "prompt": prompt[:200], "error": error[:300] or "no reason"}
        seen.append(Condition("job_failed", f"job_failed:{job_id}", room, "warning", facts, "jobs"))
    return seen


# -- the watchdog -----------------------------------------------------------------------


def watchdog_incident(
    room: str, check: str, detail: str, *, critical: bool = False, resolved: bool = False
) -> Observation:
    """An incident of the watchdog's ``check`` (what ``interventions.raise`` with kind
    ``watchdog_incident`` carries), or its end."""
    key = f"watchdog:{check}"
    if resolved:
        return Resolution(room, key)
    severity = "critical" if critical else "warning"
    return Condition(
        "watchdog_incident", key, room, severity, {"check": check, "detail": detail}, "watchdog"
    )


# -- libraries --------------------------------------------------------------------------


@dataclass(frozen=True)
class LibraryHealth:
    """What the caller knows of one library's syncs."""

    name: str
    last_synced_at: float | None  # the last good sync, Unix seconds
    failures: int = 0  # failed syncs since the last good one
    last_error: str = ""


def _age(seconds: float) -> str:
    """``_age(90000)`` is ``'1 day'``; ``_age(7200)`` ``'2 hours'``."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n > 1 else ''}"
    return f"{int(seconds)} seconds"


def library_health(
    room: str,
    libraries: Iterable[LibraryHealth],
    *,
    now: float,
    max_failures: int = 3,
    max_age: float = 7 * 86400,
) -> list[Observation]:
    """A condition per library failing or stale, a resolution per healthy one."""
    seen: list[Observation] = []
    for lib in libraries:
        failing, stale = f"library_sync_failed:{lib.name}", f"library_stale:{lib.name}"
        if lib.failures >= max_failures:
            facts = {"library": lib.name, "failures": lib.failures, "error": lib.last_error or "?"}
            seen.append(
                Condition("library_sync_failed", failing, room, "warning", facts, "libraries")
            )
        else:
            seen.append(Resolution(room, failing))
        age = None if lib.last_synced_at is None else now - lib.last_synced_at
        if age is not None and age > max_age:
            facts = {"library": lib.name, "age": _age(age)}
            seen.append(Condition("library_stale", stale, room, "info", facts, "libraries"))
        else:
            seen.append(Resolution(room, stale))
    return seen


# -- searches that find nothing ---------------------------------------------------------


@dataclass(frozen=True)
class SearchRecord:
    """One logged skill or tool request (``heron.skills`` / ``heron.tools`` usage logs)."""

    source: str  # "skills" or "tools"
    request: str
    results: int  # how many came back
    best_score: float | None = None  # the top result's score, when known


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().casefold())


def search_misses(
    room: str,
    records: Iterable[SearchRecord],
    *,
    repeats: int = 3,
    min_score: float = 0.3,
) -> list[Observation]:
    """A condition per request (case and spacing aside) whose last ``repeats`` searches
    found nothing good: no result, or none scoring ``min_score``. Records in time order."""
    misses: dict[tuple[str, str], int] = {}
    shown: dict[tuple[str, str], str] = {}
    for r in records:
        key = (r.source, _normal(r.request))
        good = r.results > 0 and (r.best_score is None or r.best_score >= min_score)
        misses[key] = 0 if good else misses.get(key, 0) + 1
        shown[key] = r.request.strip()
    seen: list[Observation] = []
    for (source, request), count in sorted(misses.items()):
        key = f"search_misses:{source}:{request}"
        if count >= repeats:
            facts = {"source": source, "request": shown[(source, request)][:200], "misses": count}
            seen.append(Condition("search_misses", key, room, "info", facts, source))
        elif count == 0:
            seen.append(Resolution(room, key))
    return seen


# -- who works on what ------------------------------------------------------------------


Embed = Callable[[Sequence[str]], np.ndarray]


def file_topic(path: str, headings: Sequence[str] = ()) -> str:
    """The text a file's topic is embedded from: its path's words, then its headings.

    >>> file_topic("heron/voice/livekit_agent.py", ["Agents"])
    'heron voice livekit agent py. Agents'
    """
    words = re.sub(r"[/_.\-]+", " ", path).strip()
    return ". ".join([words, *[h.strip() for h in headings if h.strip()]][:12])


@dataclass
class _Edit:
    actor: str
    path: str
    topic: np.ndarray
    at: float


#: Holds and searches an ``Activity`` keeps at most, the newest.
MAX_SEEN = 1000


class Activity:
    """Who writes or holds which file and who searches what, per room; thread-safe.

    ``observe_write(actor, path, headings)`` records that ``actor`` wrote ``path`` (or
    holds uncommitted changes to it); a second actor doing so is a **collision**.
    ``observe_search(actor, query)`` records a search of the libraries; one whose text is
    close (cosine >= ``threshold``) to the topic of a file another actor edits is a
    **research overlap**. ``observe_release(actor, path)`` (committed, pushed, reverted)
    ends the actor's hold, and the collision once fewer than two hold the file. Holds and
    searches older than ``window`` seconds are forgotten.
    """

    def __init__(
        self,
        embed: Embed,
        *,
        embed_query: Embed | None = None,
        room: str = "default",
        threshold: float | Callable[[str], float] = OVERLAP_THRESHOLD,
        window: float = 3600.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.embed = embed
        # A search is a query, a file's topic a passage: models with roles embed them apart.
        self.embed_query = embed_query or embed
        self.room = room
        # Or, for a profile that reads each language with its own model, the cosine for
        # a search's text (``calibration_of(embedder, text).overlap``).
        self.threshold = threshold
        self.window = window
        self._clock = clock
        self._edits: dict[tuple[str, str], _Edit] = {}  # (path, actor) -> edit
        # (actor, query, vector, at, threshold)
        self._searches: list[tuple[str, str, np.ndarray, float, float]] = []
        self._lock = threading.Lock()

    def _forget(self, now: float) -> None:
        old = now - self.window
        # Bounded by age and by count: a flood of reports (the activity API) keeps the
        # newest ``MAX_SEEN`` holds and searches.
        kept = sorted(
            ((k, e) for k, e in self._edits.items() if e.at >= old), key=lambda i: i[1].at
        )
        self._edits = dict(kept[-MAX_SEEN:])
        self._searches = [s for s in self._searches if s[3] >= old][-MAX_SEEN:]

    def observe_write(
        self, actor: str, path: str, headings: Sequence[str] = (), *, state: str = "uncommitted"
    ) -> list[Observation]:
        topic = self.embed([file_topic(path, headings)])[0]
        now = self._clock()
        with self._lock:
            self._forget(now)
            self._edits[(path, actor)] = _Edit(actor, path, topic, now)
            holders = sorted({e.actor for (p, _), e in self._edits.items() if p == path})
            # One who holds the file too is in a collision, not a research overlap.
            searches = [s for s in self._searches if s[0] not in holders]
        seen: list[Observation] = []
        if len(holders) >= 2:
            facts = {"actors": holders, "file": path, "state": state}
            seen.append(
                Condition("collision", f"collision:{path}", self.room, "warning", facts, actor)
            )
        for researcher, query, vector, _, threshold in searches:
            if float(vector @ topic) >= threshold:
                seen.append(self._overlap(researcher, query, actor, path))
        return seen

    def observe_search(
        self, actor: str, query: str, *, source: str = "the libraries"
    ) -> list[Observation]:
        vector = self.embed_query([query])[0]
        threshold = self.threshold(query) if callable(self.threshold) else self.threshold
        now = self._clock()
        with self._lock:
            self._forget(now)
            self._searches.append((actor, query, vector, now, threshold))
            own = {p for (p, a) in self._edits if a == actor}
            edits = [e for e in self._edits.values() if e.actor != actor and e.path not in own]
        return [
            self._overlap(actor, query, e.actor, e.path, source)
            for e in edits
            if float(vector @ e.topic) >= threshold
        ]

    def observe_release(self, actor: str, path: str) -> list[Observation]:
        with self._lock:
            self._edits.pop((path, actor), None)
            holders = {e.actor for (p, _), e in self._edits.items() if p == path}
        return [Resolution(self.room, f"collision:{path}")] if len(holders) < 2 else []

    def _overlap(
        self, researcher: str, query: str, editor: str, path: str, source: str = "the libraries"
    ) -> Condition:
        facts = {
            "researcher": researcher,
            "topic": query[:200],
            "source": source,
            "editor": editor,
            "file": path,
        }
        key = f"research_overlap:{researcher}:{editor}:{path}"
        return Condition("research_overlap", key, self.room, "info", facts, researcher)
