"""``heron.wiring``: the capabilities wired into one another, on one store."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from heron.embed import Embedder
from heron.errors import HeronError, StoreError
from heron.jobs import JobRunner, open_jobs
from heron.libraries import add_library, index_library
from heron.settings import Settings
from heron.store import Record, SQLiteStore
from heron.store.sql import SQLStore
from heron.wiring import job_runner, open_tools


def stores_made(monkeypatch: pytest.MonkeyPatch) -> list[SQLStore]:
    made: list[SQLStore] = []
    real = SQLStore.__init__

    def init(store: SQLStore, embedder: Embedder) -> None:
        made.append(store)
        real(store, embedder)

    monkeypatch.setattr(SQLStore, "__init__", init)
    return made


@pytest.fixture
def library(home: Path, tmp_path: Path) -> Settings:
    """The library ``mine`` with one page, configured (not indexed); its settings."""
    docs = tmp_path / "lib" / "guide"
    docs.mkdir(parents=True)
    (docs / "secrets.md").write_text(
        "---\ntitle: Secrets\n---\n# Secrets\n\nKeep passwords in a Secret.\n"
    )
    settings = Settings()
    add_library("mine", str(tmp_path / "lib"), settings)
    return settings


# -- ownership: the toolbox closes what open_tools opened, never the store it was handed ----


def test_a_toolbox_leaves_the_store_it_was_handed_open(
    home: Path, store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = stores_made(monkeypatch)
    box = open_tools(Settings(), store=store, connect=False)
    with pytest.raises(HeronError):  # no skills indexed: the skill tool still opens its index
        box.registry.call("search_skills", {"query": "write a skill"})
    box.close()
    assert made == []  # the skill tools searched the toolbox's store, not a second one
    store.upsert("notes", [Record("a", "still open")])
    assert store.count("notes") == 1


def test_a_toolbox_closes_the_store_and_skill_index_it_opened(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = stores_made(monkeypatch)
    box = open_tools(Settings(), connect=False)
    with pytest.raises(HeronError):
        box.registry.call("search_skills", {"query": "write a skill"})
    box.close()
    assert made == [box.store]  # one store: the skill index was opened on it
    with pytest.raises(StoreError, match="closed"):
        box.store.count("notes")


# -- search_docs: the libraries' search, wired into the tools --------------------------------


def test_search_docs_searches_the_libraries_on_the_toolbox_store(
    library: Settings, store: SQLiteStore
) -> None:
    index_library("mine", store, settings=library)
    box = open_tools(library, store=store, connect=False, learn=False)
    try:
        tool = box.registry.get("search_docs")
        assert "library" in tool.parameters["properties"] and "docs" in tool.tags
        results = box.registry.call(
            "search_docs", {"query": "where do passwords go", "library": "mine"}
        )
        assert results[0]["citation"] == "(mine, guide/secrets)"
    finally:
        box.close()


def test_a_docs_search_handed_in_answers_search_docs(home: Path, store: SQLiteStore) -> None:
    box = open_tools(Settings(), store=store, docs_search=lambda a: [a], connect=False)
    try:
        assert box.registry.call("search_docs", {"query": "x"}) == [{"query": "x"}]
    finally:
        box.close()


# -- job_runner: the jobs' docs step searches the libraries -----------------------------------


def test_a_job_runner_searches_the_libraries_for_the_docs_step(
    library: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: SQLiteStore
) -> None:
    index_library("mine", store, settings=library)
    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.setenv("HERON_TOOLS_ROOT", str(repo))
    jobs = open_jobs(Settings())
    try:
        wired = jobs.create("where do the docs keep passwords?")
        asyncio.run(job_runner(jobs, store=lambda: store).run_until_idle())
        bare = jobs.create("where do the docs keep passwords?")
        asyncio.run(JobRunner(jobs, store=lambda: store).run_until_idle())
        steps = {
            job_id: {
                e.payload["step"]: e.payload
                for e in jobs.events(job_id)
                if e.kind in ("step_finished", "step_failed")
            }
            for job_id in (wired.id, bare.id)
        }
    finally:
        jobs.close()
    assert steps[wired.id]["search_docs"]["results"][0]["citation"] == "(mine, guide/secrets)"
    assert "no docs search" in steps[bare.id]["search_docs"]["error"]
