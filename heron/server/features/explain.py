"""JSON-RPC methods that show what Heron holds and how it decides, for any client (the web
page is one): a library's pages and one cited passage, a re-index whose progress can be
watched, skill usage hit-rates and provider-safe tool names.

``library.reindex`` starts indexing in a thread and answers at once with a task id;
``library.progress`` says how far it got (``done`` of ``total`` changed pages), then the
report. At most ``KEEP_TASKS`` finished tasks are remembered.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from heron.core.names import NameCodec
from heron.errors import InputError, NotFound
from heron.libraries import index_library, read_libraries
from heron.libraries.config import get_library
from heron.libraries.index import page_of
from heron.libraries.search import source_location
from heron.libraries.state import last_sync
from heron.server.doors.rpc import Methods, Params
from heron.server.features.methods import LibraryName
from heron.server.hooks import no_lifespan, no_routes
from heron.server.http.numbers import RecordId
from heron.server.runtime import Runtime

#: Finished re-index tasks kept for ``library.progress``.
KEEP_TASKS = 32


class PagesParams(LibraryName):
    limit: int = Field(default=500, ge=1, le=10_000, description="Pages to list at most.")


class PassageParams(Params):
    library: str = Field(min_length=1)
    page: str = Field(min_length=1, description="The page id a citation names.")
    first: RecordId = Field(default=1, description="First line cited.")
    last: RecordId = Field(default=1_000_000, description="Last line cited.")


class TaskParams(Params):
    task: str = Field(min_length=1, description="The id library.reindex answered.")


class ProfileParams(Params):
    profile: str = Field(default="openai", description="Provider naming rules: openai, ...")


@dataclass
class IndexTask:
    """One re-index running in a thread; ``to_dict`` is what ``library.progress`` answers."""

    id: str
    name: str
    state: str = "running"  # running, done, failed
    done: int = 0
    total: int | None = None
    #: The stage under way (``sync``, ``pages``, ``chunks``: ``index_library``'s) and
    #: its units done of its total: chunks move as they embed, pages only per group.
    stage: str | None = None
    stage_done: int = 0
    stage_total: int | None = None
    report: dict[str, Any] | None = None
    error: str | None = None
    started: float = field(default_factory=time.time)
    finished: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.id,
            "name": self.name,
            "state": self.state,
            "done": self.done,
            "total": self.total,
            "stage": {"name": self.stage, "done": self.stage_done, "total": self.stage_total},
            "report": self.report,
            "error": self.error,
            "started": self.started,
            "finished": self.finished,
        }


class IndexTasks:
    """The re-index tasks of one server (``index_tasks``)."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.tasks: dict[str, IndexTask] = {}
        self.lock = threading.Lock()

    def start(self, name: str) -> dict[str, Any]:
        """Start re-indexing ``name``; the task as it starts (``running``), taken before
        its thread runs: a small library can be done before the reply is written, and
        ``library.progress`` is what tells its end."""
        if not any(lib.name == name for lib in read_libraries(self.rt.settings)):
            raise NotFound(f"No library named {name!r}; library.list names them.")
        task = IndexTask(uuid.uuid4().hex[:16], name)
        with self.lock:
            finished = sorted(
                (t for t in self.tasks.values() if t.finished is not None), key=lambda t: t.started
            )
            for old in finished[: max(0, len(finished) - KEEP_TASKS)]:
                del self.tasks[old.id]
            self.tasks[task.id] = task
        started = task.to_dict()
        threading.Thread(target=self._run, args=(task,), daemon=True).start()
        return started

    def _run(self, task: IndexTask) -> None:
        def progress(n: int) -> None:
            task.done += n

        def on_total(n: int) -> None:
            task.total = n

        def stage(name: str, total: int | None) -> Callable[[int], None]:
            task.stage, task.stage_done, task.stage_total = name, 0, total

            def advance(n: int) -> None:
                task.stage_done += n

            return advance

        try:
            report = index_library(
                task.name,
                self.rt.store,
                settings=self.rt.settings,
                progress=progress,
                on_total=on_total,
                stages=stage,
            )
            task.report = report.to_dict()
            task.error = report.error
            task.state = "failed" if report.error else "done"
        except Exception as exc:  # reported to whoever polls; the server goes on
            task.error, task.state = str(exc), "failed"
        task.finished = time.time()

    def get(self, task_id: str) -> IndexTask:
        task = self.tasks.get(task_id)
        if task is None:
            raise NotFound(f"No re-index task {task_id!r}: start one with library.reindex.")
        return task


def index_tasks(rt: Runtime) -> IndexTasks:
    """The server's one ``IndexTasks``, kept in its runtime."""
    return rt.shared("explain:tasks", lambda: IndexTasks(rt))


def pages(rt: Runtime, p: PagesParams) -> list[dict[str, Any]]:
    """Each indexed page of library ``p.name``: its id, title, path, collection, chunks."""
    get_library(p.name, rt.settings)  # one the context does not see is NotFound
    store = rt.store
    if not any(info.name == p.name for info in store.namespaces()):
        raise NotFound(f"Library {p.name!r} is not indexed; run library.index first.")
    chunks: dict[str, list[str]] = {}
    for record_id in store.ids(p.name):
        if not record_id.rsplit("#", 1)[-1].startswith("q"):
            chunks.setdefault(page_of(record_id), []).append(record_id)
    out = []
    for page, ids in sorted(chunks.items())[: p.limit]:
        meta = store.get(p.name, ids[0]).metadata
        out.append(
            {
                "page": page,
                "title": meta.get("title", ""),
                "path": meta.get("path", ""),
                "collection": meta.get("collection", ""),
                "chunks": len(ids),
            }
        )
    return out


def passage(rt: Runtime, p: PassageParams) -> dict[str, Any]:
    """The chunks of page ``p.page`` that overlap lines ``first``-``last``, joined: the
    passage a citation names, with a link to its source at those lines."""
    if p.last < p.first:
        raise InputError(f"last ({p.last}) is before first ({p.first}); give first <= last.")
    get_library(p.library, rt.settings)  # one the context does not see is NotFound
    store = rt.store
    try:
        ids = [i for i in store.ids(p.library) if page_of(i) == p.page]
    except NotFound:
        raise NotFound(f"Library {p.library!r} is not indexed.") from None
    records = [store.get(p.library, i) for i in ids if "#q" not in i]
    cited = [
        r
        for r in records
        if (r.metadata.get("lines") or [1, 1])[0] <= p.last
        and (r.metadata.get("lines") or [1, 1])[1] >= p.first
    ]
    if not cited:
        raise NotFound(f"No passage of {p.library}/{p.page} covers lines {p.first}-{p.last}.")
    cited.sort(key=lambda r: r.metadata["lines"][0])
    meta = cited[0].metadata
    lines = (cited[0].metadata["lines"][0], cited[-1].metadata["lines"][1])
    paged = [r.metadata["pages"] for r in cited if r.metadata.get("pages")]
    pages = (paged[0][0], paged[-1][1]) if paged else None
    sync = last_sync(store, p.library)
    return {
        "library": p.library,
        "collection": meta.get("collection", ""),
        "page": p.page,
        "title": meta.get("title", ""),
        "heading": meta.get("heading", ""),
        "path": meta.get("path", ""),
        "lines": list(lines),
        "pages": list(pages) if pages else None,
        "text": "\n\n".join(r.text for r in cited),
        "source": source_location(sync, meta.get("path", ""), lines, pages, meta.get("anchor", "")),
    }


#: Reading, but ``library.reindex`` (admin: it writes the index).
rpc = Methods(scope="read")


@rpc.method("library.pages", PagesParams, summary="A library's pages.", reach="context")
def library_pages(p: PagesParams, rt: Runtime) -> list[dict[str, Any]]:
    return pages(rt, p)


@rpc.method(
    "library.passage",
    PassageParams,
    summary="The passage a citation names, with its source link.",
    reach="context",
)
def library_passage(p: PassageParams, rt: Runtime) -> dict[str, Any]:
    return passage(rt, p)


@rpc.method(
    "library.reindex",
    LibraryName,
    summary="Start indexing a library; watch it with library.progress.",
    scope="admin",
)
def reindex(p: LibraryName, rt: Runtime) -> dict[str, Any]:
    return index_tasks(rt).start(p.name)


@rpc.method(
    "library.progress",
    TaskParams,
    summary="How far a library.reindex task got, then its report.",
)
def progress(p: TaskParams, rt: Runtime) -> dict[str, Any]:
    return index_tasks(rt).get(p.task).to_dict()


@rpc.method(
    "skills.usage",
    summary="Skill search hit-rates per query kind (usage log).",
    reach="context",
)
def skills_usage(_: Params, rt: Runtime) -> list[dict[str, Any]]:
    return [s.to_dict() for s in rt.skills.stats()]


@rpc.method(
    "tools.names", ProfileParams, summary="Each tool's provider-safe name.", reach="context"
)
def tool_names(p: ProfileParams, rt: Runtime) -> list[dict[str, Any]]:
    tools = rt.toolbox.registry.tools()
    codec = NameCodec([t.name for t in tools], p.profile)
    return [{"name": t.name, "encoded": codec.encode(t.name)} for t in tools]


routes = no_routes
lifespan = no_lifespan
