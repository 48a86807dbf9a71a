"""``heron.skills.sync``: indexing, comparing and pruning, on a real store and model."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from heron.errors import NotFound
from heron.skills.dirs import SkillDir
from heron.skills.index import SkillIndex
from heron.skills.sync import Entry, indexed_text, skill_record
from heron.store import SQLiteStore


def write(root: Path, folder: str, name: str, description: str, body: str = "Steps.") -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"---\nname: {name}\ndescription: {description}\ntags: [t]\n---\n{body}\n", "utf-8"
    )
    return path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    write(root, "pdf", "pdf-tools", "Fill and merge PDF forms.")
    write(root, "notes", "release-notes", "Turn git history into release notes.")
    write(root, "gif", "gif-maker", "Make animated GIFs.")
    return root


@pytest.fixture
def skills(store: SQLiteStore, root: Path) -> SkillIndex:
    return SkillIndex(store, [SkillDir(root, "test")])


def test_record_shape(root: Path, skills: SkillIndex) -> None:
    skill = skills.show("pdf-tools")
    record = skill_record(skill)
    assert record.id == "pdf-tools"
    assert record.text == indexed_text(skill) == "pdf-tools: Fill and merge PDF forms. Tags: t."
    assert record.metadata == {
        "title": "pdf-tools",
        "description": "Fill and merge PDF forms.",
        "path": str(root / "pdf" / "SKILL.md"),
        "tags": ["t"],
    }


def test_reindex_embeds_only_what_changed(root: Path, skills: SkillIndex) -> None:
    first = skills.index().result
    assert (first.added, first.updated, first.unchanged) == (3, 0, 0)
    again = skills.index().result
    assert (again.added, again.updated, again.unchanged, again.embedded) == (0, 0, 3, 0)
    write(root, "pdf", "pdf-tools", "Fill and merge PDF forms.", body="New steps, same skill.")
    assert skills.index().result.embedded == 0  # the hash is of the indexed text, not the file
    write(root, "gif", "gif-maker", "Make animated GIFs for chat.")
    changed = skills.index().result
    assert (changed.added, changed.updated, changed.unchanged) == (0, 1, 2)


def test_status_compares_without_changing(root: Path, skills: SkillIndex) -> None:
    before = skills.status().index
    assert (before.records, before.current, before.missing) == (
        0,
        0,
        ["gif-maker", "release-notes", "pdf-tools"],
    )
    skills.index()
    write(root, "gif", "gif-maker", "Make animated GIFs for chat.")
    state = skills.status().index
    assert (state.records, state.current, state.outdated, state.missing) == (
        3,
        2,
        ["gif-maker"],
        [],
    )
    assert skills.status().index.outdated == ["gif-maker"]  # status wrote nothing


def test_orphans_are_pruned_and_files_that_exist_are_kept(
    root: Path, store: SQLiteStore, tmp_path: Path
) -> None:
    extra = tmp_path / "extra"
    write(extra, "lint", "linter", "Lint Python code.")
    SkillIndex(store, [SkillDir(root, "a"), SkillDir(extra, "b")]).index()
    skills = SkillIndex(store, [SkillDir(root, "a")])  # extra is no longer searched: stale
    shutil.rmtree(root / "gif")
    gone = Entry("gif-maker", str(root / "gif" / "SKILL.md"))
    state = skills.status().index
    assert state.orphans == [gone]
    assert state.stale == [Entry("linter", str(extra / "lint" / "SKILL.md"))]
    assert skills.index().result.orphans == [gone]  # indexing reports orphans, deletes none

    dry = skills.prune()
    assert (dry.orphans, dry.deleted, dry.applied) == ([gone], 0, False)
    assert store.count("skills") == 4
    done = skills.prune(apply=True)
    assert (done.deleted, done.kept) == (1, 3)
    assert store.ids("skills") == ["linter", "pdf-tools", "release-notes"]
    assert skills.prune().orphans == []


def test_a_skill_renamed_in_its_file_replaces_its_old_record(
    root: Path, skills: SkillIndex
) -> None:
    skills.index()
    write(root, "pdf", "pdf-forms", "Fill and merge PDF forms.")
    result = skills.index().result
    assert result.renamed == ["pdf-tools"] and result.added == 1
    assert skills.store.ids("skills") == ["gif-maker", "pdf-forms", "release-notes"]


def test_searching_a_store_without_skills_says_what_to_run(skills: SkillIndex) -> None:
    with pytest.raises(NotFound, match="run: heron skills index"):
        skills.search("anything")
