"""Progress of long commands: a rich bar on a terminal, else a line every few seconds on
stderr; ``heron index`` (pages, then chunks), ``skills index`` and ``store load``."""

from __future__ import annotations

import io
import json
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console
from rich.progress import Progress

from heron.cli.progress import BarTracker, LineTracker, bar_columns
from heron.embed import MiniLMEmbedder
from heron.errors import NotFound
from heron.libraries import add_library, index_library
from heron.settings import Settings
from heron.store.sql import FIRST_STEP
from tests.conftest import sqlite_store
from tests.libraries.conftest import PAGES, write_pages
from tests.run_heron import run_heron

SKILL = "---\nname: tidy\ndescription: Tidy a workspace before a release.\n---\n1. Clean.\n"


def test_lines_give_done_total_rate_and_time_left() -> None:
    out = io.StringIO()
    lines = LineTracker("indexing docs", out, every=0.0, first=0.0)
    lines.start("pages", 4)
    lines(1)
    lines(3)
    lines.start("chunks", 10)  # the pages stage has said its last line already
    lines(5)
    lines.finish()
    lines.finish()  # once only
    text = out.getvalue().splitlines()
    assert text[0].startswith("indexing docs: pages 1/4 (25%), ") and text[0].endswith(" s left")
    assert text[1].startswith("indexing docs: pages 4/4 (100%), ")
    assert text[2].startswith("indexing docs: chunks 5/10 (50%), ")
    assert len(text) == 3
    assert re.search(r", [\d,.]+/s", text[0])


def test_lines_are_rate_limited() -> None:
    out = io.StringIO()
    lines = LineTracker("loading", out, every=3600, first=3600)
    lines.start("items", 1000)
    for _ in range(1000):
        lines(1)
    lines.finish()
    assert out.getvalue().count("\n") == 1  # only the stage's last line
    assert "items 1,000/1,000 (100%)" in out.getvalue()


def test_a_stage_that_runs_says_so_within_a_second_though_nothing_moved() -> None:
    out = io.StringIO()
    lines = LineTracker("indexing docs", out, every=3600, first=0.3)
    lines.start("starting", None)
    lines.start("chunks", 40)  # "starting" did nothing and said nothing: no line
    lines.tick()
    assert out.getvalue() == ""  # not yet due
    time.sleep(0.35)
    lines.tick()
    assert re.fullmatch(r"indexing docs: chunks 0/40 \(0%\), [\d.]+ s\n", out.getvalue())
    lines.tick()
    lines(8)  # the next line is due in an hour; the last one comes as the stage ends
    lines.finish()
    text = out.getvalue().splitlines()
    assert len(text) == 2 and text[1].startswith("indexing docs: chunks 8/40 (20%), ")


def test_ticking_writes_the_due_line_from_a_thread() -> None:
    out = io.StringIO()
    lines = LineTracker("loading models", out, every=3600, first=0.05)
    lines.start("starting", None)
    with lines.ticking(interval=0.01):
        time.sleep(0.3)  # one long step: nothing is done, the thread still says it runs
        assert re.fullmatch(r"loading models: starting, [\d.]+ s\n", out.getvalue())
    assert out.getvalue().count("\n") == 1


def test_the_bar_shows_the_stage_count_and_rate() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=120)
    with Progress(*bar_columns(), console=console) as bar:
        tracker = BarTracker(bar, "indexing docs")
        advance = tracker.stage("chunks", 30)
        for _ in range(3):
            time.sleep(0.05)
            advance(10)
    text = buffer.getvalue()
    assert "indexing docs: chunks" in text and "30/30" in text
    assert re.search(r"[\d.]+/s", text)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from tests.server.conftest import heron_env

    for name, value in heron_env(tmp_path).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("HERON_CONFIG", raising=False)
    return tmp_path


def test_commands_print_progress_lines_without_a_terminal(env: Path) -> None:
    docs = write_pages(env / "docs", PAGES)
    run_heron("library", "add", "tiny", str(docs))
    err = run_heron("index", "tiny").stderr  # stderr is a pipe here, not a terminal
    assert "indexing tiny: pages 3/3 (100%)" in err
    chunks = re.search(r"indexing tiny: chunks (\d+)/(\d+) \(100%\)", err)
    assert chunks and chunks.group(1) == chunks.group(2) != "0"

    skill = env / "skills" / "tidy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(SKILL)
    assert "indexing skills: skills 1/1 (100%)" in run_heron("skills", "index").stderr

    records = env / "records.jsonl"
    rows = [{"id": str(i), "text": f"note {i}"} for i in range(3)]
    records.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert (
        "loading notes: items 3/3 (100%)"
        in run_heron("store", "load", "notes", str(records)).stderr
    )


def test_the_chunks_stage_moves_while_chunks_embed(
    home: Path, tmp_path: Path, embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One group of pages (fewer than GROUP_PAGES, GROUP_RECORDS) is one store write, yet
    its chunks are told as they embed, step by step, before anything is written."""
    monkeypatch.setenv("HERON_LIBRARY_DEFAULT_DOCS", "false")
    settings = Settings()
    sections = "\n\n".join(
        f"## {topic.title()}\n\n" + f"How the {topic} works for new staff. " * 12
        for topic in ("laptops", "vpn", "badges", "payroll", "holidays", "expenses")
    )
    pages = {f"handbook/team{i}.md": f"# Team {i}\n\n{sections}\n" for i in range(4)}
    add_library("handbook", str(write_pages(tmp_path / "handbook", pages)), settings)
    store = sqlite_store(settings.db_path, embedder)
    seen: dict[str, list[tuple[int, int]]] = {}

    def stored() -> int:
        try:
            return store.count("handbook")
        except NotFound:
            return 0

    def stages(name: str, total: int | None) -> Callable[[int], None]:
        seen[name] = []
        return lambda n: seen[name].append((n, stored()))

    try:
        report = index_library("handbook", store, settings=settings, stages=stages)
    finally:
        store.close()
    assert list(seen) == ["sync", "pages", "chunks"]  # MiniLM loads nothing late
    chunks = seen["chunks"]
    assert report.records == sum(n for n, _ in chunks) > FIRST_STEP
    assert len(chunks) > 1 and chunks[0] == (FIRST_STEP, 0)  # told before the write
    assert all(n > 0 for n, _ in chunks)
