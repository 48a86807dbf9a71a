"""``GET /source?library=L&page=P&first=A&last=B``: the file of an indexed page of a
local (or cloned) library, its lines numbered (``#L<n>`` anchors), lines A-B marked. It
is where a passage's source link opens when the source is a path, which a browser cannot
open itself. Only a page the index holds is shown, read from the library's synced folder
through ``heron.core.workspace.Workspace`` (one component at a time, no symlink followed,
regular files only, at most ``MAX_READ`` bytes). A document (PDF, Word, HTML ...) shows
the Markdown Heron read from it, whose lines its citations count, with a link to the
original at the cited page.

``GET /source/file?library=L&page=P``: that document's original file
(``heron.libraries.library.read_original``), so ``#page=N`` opens a PDF at its page. A
PDF is shown by the browser; an HTML page in a sandbox (its own origin, no script, so a
page from anyone's folder cannot act as Heron's); Word, PowerPoint and Excel files are
downloaded.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from urllib.parse import quote, urlencode

from starlette.requests import Request

from heron.core.errors import ToolInputError
from heron.core.workspace import Workspace
from heron.errors import HeronError
from heron.libraries.index import page_of
from heron.libraries.library import Original, read_original, read_page
from heron.libraries.readers import format_of
from heron.libraries.state import last_sync
from heron.programs.policy import load_policy
from heron.settings import Settings
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
    #: A document's: the link to its original file, and the page the cited lines are on.
    original: str = ""
    at_page: int = 0


def _line(value: str | None) -> int:
    return int(value) if value and value.isdigit() else 0


def lookup(store: Store, request: Request, libraries: Collection[str], settings: Settings) -> Found:
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
    fmt = format_of(found.path)
    if fmt is not None and fmt.place != "lines":
        return _document(store, settings, found, ids)
    root = last_sync(store, found.library).get("root")
    try:
        read = Workspace(root, policy=load_policy()).read_file(found.path)
    except (ToolInputError, TypeError):  # no folder synced, or the file has gone
        found.problem = "source.gone"
        return found
    found.lines = read["content"].splitlines() or [""]
    found.truncated = read["truncated"]
    return found


def _document(store: Store, settings: Settings, found: Found, ids: list[str]) -> Found:
    """A document's page: the Markdown read from it, and where its original opens."""
    try:
        text = read_page(found.library, found.page, store, settings)
    except HeronError:
        found.problem = "source.gone"
        return found
    found.lines = text.text.split("\n") or [""]
    found.original = "/source/file?" + urlencode({"library": found.library, "page": found.page})
    if found.first:
        cited = [
            r.metadata["pages"][0]
            for r in (store.get(found.library, i) for i in ids)
            if r.metadata.get("pages")
            and r.metadata["lines"][0] <= found.first <= r.metadata["lines"][1]
        ]
        found.at_page = cited[0] if cited else 0
        if found.at_page:
            found.original += f"#page={found.at_page}"
    return found


#: How an original is answered, by format: its media type, and whether the browser shows
#: it (inline) or saves it.
_SERVED = {
    "PDF": ("application/pdf", True),
    "HTML": ("text/html; charset=utf-8", True),
    "Word": ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", False),
    "PowerPoint": (
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        False,
    ),
    "Excel": ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", False),
}
#: An HTML original runs nothing and reaches nothing: a unique origin, no script.
SANDBOX = "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def original(
    store: Store, request: Request, libraries: Collection[str], settings: Settings
) -> tuple[Original, str, dict[str, str]] | None:
    """``(original, media type, headers)`` of the request's page, if it is an indexed
    page of one of ``libraries`` (those of the request's context) and its file is there."""
    query = request.query_params
    library, page = query.get("library", ""), query.get("page", "")
    if library not in libraries:
        return None
    try:
        found = read_original(library, page, store, settings)
    except HeronError:
        return None
    media, inline = _SERVED.get(found.format.name, ("text/plain; charset=utf-8", True))
    name = quote(found.path.rsplit("/", 1)[-1])
    headers = {
        "content-disposition": f"{'inline' if inline else 'attachment'}; filename*=UTF-8''{name}",
        "x-content-type-options": "nosniff",
        "referrer-policy": "same-origin",
        "cache-control": "no-store",
    }
    if found.format.name == "HTML":
        headers["content-security-policy"] = SANDBOX
    return found, media, headers
