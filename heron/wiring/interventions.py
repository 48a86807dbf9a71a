"""What the other capabilities show ``heron.interventions``: ``Observers`` turns the
agent's observers (``on_tool_use``, ``on_search``) and people's reported activity into
cards (who writes and searches what); ``Scan`` reads the libraries' sync health and the
skills' usage log as conditions."""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from heron.agent.answer import ToolUse
from heron.embed import Embedder, calibration_of, embed_queries
from heron.interventions import Activity, Condition, Intervention, Interventions
from heron.interventions.detectors import (
    LibraryHealth,
    Observation,
    SearchRecord,
    library_health,
    search_misses,
)
from heron.libraries import read_libraries
from heron.libraries.state import library_state
from heron.settings import Settings
from heron.skills import UsageLog
from heron.store import Store

#: Skill queries the scan reads, newest: enough for a request's last few searches.
SCAN_QUERIES = 1000
#: A Markdown heading, or a Python class or function: what a written file is about.
_HEADING = re.compile(
    r"^(?:\s{0,3}#{1,6}\s+(.+?)\s*#*|(?:async\s+)?(?:class|def)\s+(\w+).*)$", re.M
)


def headings(content: str, limit: int = 12) -> list[str]:
    """The headings of a file's first 20,000 characters, for its topic.

    >>> headings("# Voice\\n\\nclass LiveKitAgent:\\n    def join(self): ...")
    ['Voice', 'LiveKitAgent']
    """
    found = (m.group(1) or m.group(2) for m in _HEADING.finditer(content[:20_000]))
    return [h for h in found if h][:limit]


#: Rooms whose activity the observers keep at once, the most recently reported.
ROOMS = 200


@dataclass(frozen=True)
class ActivityReport:
    """One thing a person did: ``kind`` ``edit``, ``release`` (with ``path`` and, for an
    edit, its ``headings``) or ``read``, ``search`` (with ``text``). Bounded and redacted
    by whoever takes it from a client (``heron.server.features.interventions``)."""

    kind: Literal["edit", "release", "read", "search"]
    path: str = ""
    text: str = ""
    headings: tuple[str, ...] = ()


class Observers:
    """The agent's observers (``open_agent(on_tool_use=..., on_search=...)``) for each
    conversation's room's interventions (``interventions_room`` when a turn names none,
    ``of(room)`` for the others): who works on what (``heron.interventions.Activity``, topics
    embedded with ``embedder``), and the cards that follows. ``interventions`` is called
    on the first observation that raises something (the service opens on first use)."""

    def __init__(
        self, settings: Settings, embedder: Embedder, interventions: Callable[[], Interventions]
    ) -> None:
        self.interventions = interventions
        self.embedder = embedder
        self._rooms: dict[str, Activity] = {}
        self.activity = self.of(settings.interventions.room)

    def of(self, room: str) -> Activity:
        """The activity of ``room`` (the agent's is ``interventions_room``'s), made on
        first use; at most ``ROOMS`` rooms are kept, the least recently reported go."""
        found = self._rooms.pop(room, None)
        if found is None:
            embedder = self.embedder
            found = Activity(
                embedder.embed,
                embed_query=lambda texts: embed_queries(embedder, texts),
                threshold=lambda text: calibration_of(embedder, text).overlap,
                room=room,
            )
        self._rooms[room] = found
        while len(self._rooms) > ROOMS:
            del self._rooms[next(iter(self._rooms))]
        return found

    def report(self, room: str, person: str, report: ActivityReport) -> list[Intervention]:
        """What a person reports doing outside Heron (an editor plugin, a browser
        extension; ``people.activity``): ``edit`` a file (its headings, when known),
        ``release`` it (committed, pushed, closed), ``read`` or ``search`` something (its
        title or words). Collisions and research overlaps follow as for the agent's own
        tools, in ``room``."""
        activity = self.of(room)
        if report.kind == "edit":
            seen = activity.observe_write(person, report.path, list(report.headings))
        elif report.kind == "release":
            seen = activity.observe_release(person, report.path)
        else:  # read or search: what the person is looking into
            seen = activity.observe_search(person, report.text)
        return self.interventions().apply(seen)

    def tool_use(self, actor: str, use: ToolUse, room: str = "") -> list[Intervention]:
        """What one of the agent's tool calls means for the conversation's ``room``
        (``""``: ``interventions_room``): a ``write_file`` that succeeded is
        ``observe_write`` (a collision when another actor holds the file), a
        ``search_docs`` is ``search`` (a research overlap); with the caller's actor (the
        API's ``user``)."""
        arguments = use.arguments
        if not use.ok or not actor:
            return []
        if use.name == "write_file" and isinstance(arguments.get("path"), str):
            content = arguments.get("content")
            tops = headings(content) if isinstance(content, str) else []
            seen = self._room(room).observe_write(actor, arguments["path"], tops)
        elif use.name == "search_docs" and isinstance(arguments.get("query"), str):
            return self.search(actor, arguments["query"], room)
        else:
            return []
        return self.interventions().apply(seen)

    def search(self, actor: str, query: str, room: str = "") -> list[Intervention]:
        """A search of the libraries by ``actor`` (the agent's grounding search, or its
        ``search_docs`` tool): a research overlap when it is close to the topic of a file
        another actor edits, in the conversation's ``room``."""
        if not actor or not query.strip():
            return []
        return self.interventions().apply(self._room(room).observe_search(actor, query))

    def _room(self, room: str) -> Activity:
        return self.of(room) if room else self.activity


class Scan:
    """One pass (``scan()``) over what changes slowly: each configured library's syncs
    (``library_health``) and the skills usage log (``search_misses``), in the room
    ``interventions_room``. Only changes reach the service: a condition not already
    active nor raised by an earlier pass, a resolution of an active one; so a failing
    library costs one card, not one stored row a minute."""

    def __init__(
        self, settings: Settings, store: Store, interventions: Callable[[], Interventions]
    ) -> None:
        self.settings = settings
        self.store = store
        self.interventions = interventions
        self.raised: set[str] = set()  # keys this scan raised, delivered or suppressed

    def __call__(self) -> list[Intervention]:
        room = self.settings.interventions.room
        seen = [
            # A library's state keeps its last failed sync, not a count: one is a card.
            *library_health(room, self.libraries(), now=time.time(), max_failures=1),
            *search_misses(room, self.searches()),
        ]
        return self.apply(room, seen)

    def libraries(self) -> list[LibraryHealth]:
        found = []
        for library in read_libraries(self.settings):
            state = library_state(self.store, library.name)
            error = state.sync_error
            failures, message = (1, error[1]) if error else (0, "")
            found.append(LibraryHealth(library.name, state.synced_at, failures, message))
        return found

    def searches(self) -> list[SearchRecord]:
        """The skill queries of the usage log, oldest first (none before the first). The
        log keeps the skills each query returned, not their scores: a miss is a query
        that returned none. The tools usage log holds only requests a tool served."""
        path = self.settings.home / "skills.db"
        if not path.exists():
            return []
        with contextlib.closing(UsageLog(path)) as log:
            queries = log.recent(SCAN_QUERIES)
        return [SearchRecord("skills", query, len(returned)) for query, returned in queries]

    def apply(self, room: str, seen: list[Observation]) -> list[Intervention]:
        service = self.interventions()
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
