"""``GET /source?library=L&page=P&first=A&last=B``: the file of an indexed page of a
local (or cloned) library, its lines numbered (``#L<n>`` anchors), lines A-B marked. It
is where a passage's source link opens when the source is a path, which a browser cannot
open itself. Only a page the index holds is shown, read from the library's synced folder
through ``heron.core.workspace.Workspace`` (one component at a time, no symlink followed,
regular files only, at most ``MAX_READ`` bytes).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from starlette.requests import Request

from heron.core.errors import ToolInputError
from heron.core.workspace import Workspace
from heron.errors import HeronError
from heron.libraries.index import page_of
from heron.libraries.state import last_sync
from heron.programs.policy import load_policy
from heron.store import Store


@dataclass
class Found:
    """What the template shows; ``lines`` empty and ``problem`` (a catalogue key) set
    when there is nothing to show."""

    library: str
    page: str
    first: int = 0
    last: int = 0
    title: str = ""
    path: str = ""
    lines: list[str] = field(default_factory=list)
    truncated: bool = False
    problem: str = ""


def _line(value: str | None) -> int:
    return int(value) if value and value.isdigit() else 0


def lookup(store: Store, request: Request, libraries: Collection[str]) -> Found:
    """The cited page of the request's ``library`` and ``page``, if it is one of
    ``libraries`` (those of the request's context): another's is no page at all."""
    query = request.query_params
    found = Found(query.get("library", ""), query.get("page", ""))
    found.first, found.last = _line(query.get("first")), _line(query.get("last"))
    try:
        ids = [i for i in store.ids(found.library) if page_of(i) == found.page and "#q" not in i]
    except HeronError:
        ids = []
    ids = ids if found.library in libraries else []
    if not ids:
        found.problem = "source.none"
        return found
    meta = store.get(found.library, ids[0]).metadata
    found.title, found.path = meta.get("title", ""), meta.get("path", "")
    root = last_sync(store, found.library).get("root")
    try:
        read = Workspace(root, policy=load_policy()).read_file(found.path)
    except (ToolInputError, TypeError):  # no folder synced, or the file has gone
        found.problem = "source.gone"
        return found
    found.lines = read["content"].splitlines() or [""]
    found.truncated = read["truncated"]
    return found
