"""``SkillIndex``: the skill index as agents and the CLI use it.

>>> skills = open_skills(Settings())                     # doctest: +SKIP
>>> skills.index().result.added                          # doctest: +SKIP
864
>>> context = skills.context_for("create a new skill")   # doctest: +SKIP
>>> prompt = context.text + prompt                       # doctest: +SKIP
>>> skills.record_use(context.query_id, "skill-creator") # doctest: +SKIP
1
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heron.embed import Embedder
from heron.errors import InputError, NotFound
from heron.resource import Resource
from heron.settings import Settings
from heron.skills.dirs import SkillDir, skill_dirs
from heron.skills.parser import Skill
from heron.skills.scan import ScanReport, scan
from heron.skills.search import SkillHit, format_context, relevant, search_skills
from heron.skills.sync import (
    NAMESPACE,
    IndexResult,
    IndexState,
    PruneResult,
    index_skills,
    index_state,
    prune,
)
from heron.skills.usage import QUERY_KINDS, KindStats, UsageLog
from heron.store import Store, open_store
from heron.store.base import Progress

DEFAULT_TOP_K = 5


@dataclass(frozen=True)
class SkillIndexReport:
    """What ``SkillIndex.index`` did: the scan of the skill folders and the index update."""

    scan: ScanReport
    result: IndexResult

    def to_dict(self) -> dict[str, Any]:
        result = self.result
        return {
            "scan": self.scan.to_dict(),
            "added": result.added,
            "updated": result.updated,
            "unchanged": result.unchanged,
            "embedded": result.embedded,
            "renamed": result.renamed,
            "orphans": [e.to_dict() for e in result.orphans],
        }


@dataclass(frozen=True)
class SkillIndexStatus:
    scan: ScanReport
    index: IndexState

    def to_dict(self) -> dict[str, Any]:
        return {**self.scan.to_dict(), "index": self.index.to_dict()}


@dataclass(frozen=True)
class SkillContext:
    """``text`` goes into the prompt; report the skill used with ``query_id``."""

    text: str
    skills: list[SkillHit]
    query_id: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "query_id": self.query_id,
            "text": self.text,
            "skills": [h.to_dict() for h in self.skills],
        }


class SkillIndex(Resource):
    """Skills from ``dirs``, indexed in ``namespace`` of ``store``, queries logged to
    ``usage_path`` (no log when ``None``).

    ``close()`` closes the usage log the index opened, and ``resources``: what was
    opened for this index alone (``open_skills`` puts the store it opened there). The
    ``store`` it is handed stays open (the ownership rule, ``heron.store.base``)."""

    def __init__(
        self,
        store: Store,
        dirs: Sequence[SkillDir],
        *,
        usage_path: Path | None = None,
        min_rel: float = 0.5,
        namespace: str = NAMESPACE,
        follow_symlinks: bool = False,
        resources: contextlib.ExitStack | None = None,
    ) -> None:
        self.store = store
        self._resources = resources or contextlib.ExitStack()
        self.follow_symlinks = follow_symlinks
        self.dirs = list(dirs)
        self.usage_path = usage_path
        self.min_rel = min_rel
        self.namespace = namespace
        self._usage: UsageLog | None = None

    # -- the files and the index ---------------------------------------------------------

    def scan(self) -> ScanReport:
        return scan(self.dirs, follow_symlinks=self.follow_symlinks)

    def index(
        self, progress: Progress | None = None, on_total: Progress | None = None
    ) -> SkillIndexReport:
        """Scan, then bring the index up to date; only changed skills are embedded.
        ``on_total(n)``: once the scan is done, with the skills to index (``progress``'s
        total)."""
        report = self.scan()
        if on_total:
            on_total(len(report.skills))
        result = index_skills(
            self.store, report.skills, namespace=self.namespace, progress=progress
        )
        return SkillIndexReport(report, result)

    def status(self) -> SkillIndexStatus:
        """What a scan finds and how the index compares; changes nothing."""
        report = self.scan()
        return SkillIndexStatus(
            report, index_state(self.store, report.skills, namespace=self.namespace)
        )

    def prune(self, *, apply: bool = False) -> PruneResult:
        """Orphans (records whose file is gone); deleted only when ``apply`` is true."""
        return prune(self.store, apply=apply, namespace=self.namespace)

    def show(self, name: str) -> Skill:
        """The skill called ``name`` (any case) as a scan reads it now."""
        report = self.scan()
        wanted = name.casefold()
        for skill in report.skills:
            if skill.name.casefold() == wanted:
                return skill
        names = [s.name for s in report.skills]
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
        hint = f"Did you mean: {', '.join(close)}?" if close else "List them: heron skills status"
        raise NotFound(f"No skill named {name!r} in the skill directories. {hint}")

    # -- queries -------------------------------------------------------------------------

    def search_many(
        self, queries: Sequence[str], top_k: int = DEFAULT_TOP_K
    ) -> list[list[SkillHit]]:
        """The ``top_k`` best skills for each query (see ``heron.skills.search``)."""
        for query in queries:
            if not query.strip():
                raise InputError("A skill query is empty; say what the task is.")
        try:
            return search_skills(self.store, self.namespace, queries, top_k)
        except NotFound as exc:
            raise NotFound(f"No skills indexed yet; run: heron skills index ({exc})") from exc

    def search(self, query: str, top_k: int = DEFAULT_TOP_K) -> list[SkillHit]:
        return self.search_many([query], top_k)[0]

    def context_for(
        self, query: str, *, top_k: int = DEFAULT_TOP_K, min_rel: float | None = None
    ) -> SkillContext:
        """The skills worth injecting for ``query``, formatted for a prompt, and logged.

        Keeps the results scoring at least ``min_rel`` (default: the index's, from
        ``HERON_SKILLS_MIN_REL``) times the top score.
        """
        hits = relevant(self.search(query, top_k), self.min_rel if min_rel is None else min_rel)
        query_id = None
        if self.usage_path is not None:
            query_id = self._log().record_query(query, [h.name for h in hits])
        return SkillContext(format_context(hits), hits, query_id)

    # -- the usage log -------------------------------------------------------------------

    def _log(self) -> UsageLog:
        if self.usage_path is None:
            raise InputError("This SkillIndex keeps no usage log; give it a usage_path.")
        if self._usage is None:
            self._usage = UsageLog(self.usage_path)
        return self._usage

    def record_use(self, query_id: int, name: str) -> int | None:
        """Report that skill ``name`` was used for query ``query_id`` (from
        ``context_for``); returns its rank among the skills returned, ``None`` if absent."""
        return self._log().record_use(query_id, name)

    def record_miss(self, query_id: int) -> None:
        """Report that query ``query_id``'s skills were offered and none was used."""
        self._log().record_miss(query_id)

    def stats(self) -> list[KindStats]:
        """Hit rates per kind of query (vague, concrete); zeros before the first query."""
        if self._usage is None and self.usage_path is not None and not self.usage_path.exists():
            return [KindStats(kind, 0, 0, 0, 0) for kind in QUERY_KINDS]
        return self._log().stats()

    def close(self) -> None:
        if self._usage is not None:
            self._usage.close()
        self._resources.close()


def skills_namespace(settings: Settings) -> str:
    """The store namespace of the settings' context's skills: ``skills``, or
    ``skills.CONTEXT`` for a context with skill directories of its own, indexed apart (one
    namespace synced from two sets of folders would lose each to the other)."""
    spec = settings.context_spec
    if spec is not None and spec.skills_dirs is not None:
        return f"{NAMESPACE}.{settings.context}"
    return NAMESPACE


def open_skills(
    settings: Settings,
    embedder: Embedder | None = None,
    *,
    store: Store | None = None,
) -> SkillIndex:
    """The skill index the settings describe: directories by precedence (a context's
    ``skills_dirs`` alone, in a namespace of its own), the configured store, and the
    usage log at ``$HERON_HOME/skills.db``. ``store``: an open store to share (a
    server's or an agent's), left open by ``close()``; without one, the configured store
    is opened (with ``embedder`` when given) and ``close()`` closes it."""
    resources = contextlib.ExitStack()
    if store is None:
        store = resources.enter_context(contextlib.closing(open_store(settings, embedder)))
    spec = settings.context_spec
    namespace = skills_namespace(settings)
    if spec is not None and spec.skills_dirs is not None:
        source = f"context {settings.context}"
        dirs = [SkillDir(Path(p).expanduser().absolute(), source) for p in spec.skills_dirs]
    else:
        dirs = skill_dirs(settings.skills.extra_dirs, settings.home)
    return SkillIndex(
        store,
        dirs,
        usage_path=settings.home / "skills.db",
        min_rel=settings.skills.min_rel,
        namespace=namespace,
        follow_symlinks=settings.skills.follow_symlinks,
        resources=resources,
    )
