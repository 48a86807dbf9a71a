"""Keeping the ``skills`` namespace of the store in step with the files on disk.

One record per skill: id = name, text = ``indexed_text`` (name, description, tags),
metadata = name (as ``title``, the store's weighted lexical field), description, path,
tags. The store skips a record whose text and metadata are unchanged, so re-indexing
embeds only skills whose indexed text or metadata changed: editing a skill's body changes
nothing, and a parser fix re-indexes just the skills it reads differently. (A moved file
changes only metadata; its vector comes back from the embedding cache.)

Nothing is deleted by indexing, except the old record of a skill renamed in its own file.
A record whose file is gone is an *orphan*: ``prune`` deletes orphans, and keeps every
record whose file still exists, including *stale* ones (the file is there but no longer
yields that skill: it fails to parse now, or its directory is no longer searched).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from heron.errors import NotFound
from heron.skills.parser import Skill
from heron.store import Record, Store
from heron.store.base import Progress

NAMESPACE = "skills"


def indexed_text(skill: Skill) -> str:
    """What is embedded and searched by words: ``"name: description Tags: a, b."``."""
    text = f"{skill.name}: {skill.description}"
    return f"{text} Tags: {', '.join(skill.tags)}." if skill.tags else text


def skill_record(skill: Skill) -> Record:
    metadata = {
        "title": skill.name,
        "description": skill.description,
        "path": str(skill.path),
        "tags": list(skill.tags),
    }
    return Record(skill.name, indexed_text(skill), metadata)


@dataclass(frozen=True)
class Entry:
    """A record of the index, as status and prune see it."""

    name: str
    path: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "path": self.path}


@dataclass(frozen=True)
class IndexResult:
    """``embedded`` = added + updated: the records whose text went to the embedder."""

    added: int
    updated: int
    unchanged: int
    renamed: list[str] = field(default_factory=list)
    orphans: list[Entry] = field(default_factory=list)

    @property
    def embedded(self) -> int:
        return self.added + self.updated


@dataclass(frozen=True)
class IndexState:
    """How the index compares with a scan. ``current + outdated + missing`` = skills found."""

    records: int
    current: int
    outdated: list[str]
    missing: list[str]
    orphans: list[Entry]
    stale: list[Entry]

    def to_dict(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "current": self.current,
            "outdated": self.outdated,
            "not_indexed": self.missing,
            "orphans": [e.to_dict() for e in self.orphans],
            "stale": [e.to_dict() for e in self.stale],
        }


def stored_records(store: Store, namespace: str = NAMESPACE) -> dict[str, Record]:
    """Every record of the namespace by id; empty when it does not exist yet."""
    try:
        ids = store.ids(namespace)
    except NotFound:
        return {}
    return {rid: store.get(namespace, rid) for rid in ids}


def _entry(record: Record) -> Entry:
    return Entry(record.id, str(record.metadata.get("path", "")))


def _is_orphan(record: Record) -> bool:
    return not os.path.isfile(str(record.metadata.get("path", "")))


def index_skills(
    store: Store,
    skills: Sequence[Skill],
    *,
    namespace: str = NAMESPACE,
    progress: Progress | None = None,
) -> IndexResult:
    """Upsert one record per skill; drop the old record of a skill renamed in its file."""
    before = stored_records(store, namespace)
    result = store.upsert(namespace, (skill_record(s) for s in skills), progress=progress)
    names = {s.name for s in skills}
    paths = {str(s.path) for s in skills}
    renamed = sorted(
        rid
        for rid, record in before.items()
        if rid not in names and record.metadata.get("path") in paths
    )
    store.delete(namespace, renamed)
    orphans = [_entry(r) for rid, r in sorted(before.items()) if rid not in names and _is_orphan(r)]
    return IndexResult(result.added, result.updated, result.unchanged, renamed, orphans)


def index_state(store: Store, skills: Sequence[Skill], *, namespace: str = NAMESPACE) -> IndexState:
    """Compare the index with ``skills`` (from a scan) without changing anything."""
    stored = stored_records(store, namespace)
    current, outdated, missing = 0, [], []
    for skill in skills:
        record = stored.get(skill.name)
        if record is None:
            missing.append(skill.name)
            continue
        fresh = skill_record(skill)
        if (record.text, record.metadata) == (fresh.text, fresh.metadata):
            current += 1
        else:
            outdated.append(skill.name)
    names = {s.name for s in skills}
    orphans, stale = [], []
    for rid, record in sorted(stored.items()):
        if rid not in names:
            (orphans if _is_orphan(record) else stale).append(_entry(record))
    return IndexState(len(stored), current, outdated, missing, orphans, stale)


@dataclass(frozen=True)
class PruneResult:
    orphans: list[Entry]
    deleted: int
    kept: int
    applied: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "applied": self.applied,
            "orphans": [e.to_dict() for e in self.orphans],
            "deleted": self.deleted,
            "kept": self.kept,
        }


def prune(store: Store, *, apply: bool = False, namespace: str = NAMESPACE) -> PruneResult:
    """Find the records whose file is gone; delete them only when ``apply`` is true."""
    stored = stored_records(store, namespace)
    orphans = [_entry(r) for _, r in sorted(stored.items()) if _is_orphan(r)]
    deleted = store.delete(namespace, [e.name for e in orphans]) if apply and orphans else 0
    return PruneResult(orphans, deleted, len(stored) - len(orphans), apply)
