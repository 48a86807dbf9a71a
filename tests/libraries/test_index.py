from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from heron.libraries import add_library, index_library, remove_library, search
from heron.libraries import index as index_module
from heron.libraries.config import get_library
from heron.libraries.index import IndexBusy, LibraryRemoved, _exclusive, outdated_note
from heron.libraries.library import library_status
from heron.libraries.state import page_states
from heron.libraries.sync import checkout_dir
from heron.settings import Settings
from heron.store import SQLiteStore


def pages_of(store: SQLiteStore, name: str = "lib") -> set[str]:
    return {i.rsplit("#", 1)[0] for i in store.ids(name)}


def test_index_then_nothing_changed_embeds_nothing(
    settings: Settings, store: SQLiteStore, make_library: Callable[..., Path]
) -> None:
    add_library("lib", str(make_library()), settings)
    first = index_library("lib", store, settings=settings)
    assert (first.pages, first.added, first.error) == (3, 3, None)
    assert first.embedded == first.records > 3
    assert pages_of(store) == {"concepts/pods", "concepts/secrets", "tasks/rollback"}
    again = index_library("lib", store, settings=settings)
    assert (again.unchanged, again.changed, again.embedded) == (3, 0, 0)


def test_a_new_collection_reaches_unchanged_pages_without_a_drop(
    settings: Settings, store: SQLiteStore, make_library: Callable[..., Path]
) -> None:
    root = make_library()
    add_library("lib", str(root), settings)
    index_library("lib", store, settings=settings)
    (root / "concepts" / ".collection").write_text("name: core\n")
    report = index_library("lib", store, settings=settings)
    assert (report.changed, report.unchanged, report.embedded) == (2, 1, 0)  # vectors cached
    assert store.get("lib", "concepts/pods#0").metadata["collection"] == "core"
    found = search("password", store, settings=settings, library="lib", collection="core")
    assert found and found[0].page == "concepts/secrets"
    assert not search("password", store, settings=settings, library="lib", collection="concepts")


def test_an_edit_re_embeds_only_the_changed_chunks(
    settings: Settings, store: SQLiteStore, make_library: Callable[..., Path]
) -> None:
    root = make_library()
    add_library("lib", str(root), settings)
    index_library("lib", store, settings=settings)
    pods = root / "concepts" / "pods.md"
    pods.write_text(pods.read_text().replace("terminate.", "terminate or get evicted."))
    report = index_library("lib", store, settings=settings)
    assert (report.changed, report.unchanged, report.embedded) == (1, 2, 1)
    assert "evicted" in store.get("lib", "concepts/pods#1").text


def test_deleted_and_renamed_pages_disappear_from_results(
    settings: Settings, store: SQLiteStore, make_library: Callable[..., Path]
) -> None:
    root = make_library()
    add_library("lib", str(root), settings)
    index_library("lib", store, settings=settings)
    (root / "tasks" / "rollback.md").unlink()
    (root / "concepts" / "secrets.md").rename(root / "concepts" / "credentials.md")
    report = index_library("lib", store, settings=settings)
    assert (report.removed, report.added) == (2, 1)
    assert pages_of(store) == {"concepts/pods", "concepts/credentials"}
    found = [r.page for r in search("undo a deployment rollout", store, settings=settings)]
    assert "tasks/rollback" not in found
    assert search("password token", store, settings=settings)[0].page == "concepts/credentials"
    assert set(page_states(store, "lib")) == {"concepts/pods", "concepts/credentials"}


def test_bad_input_never_loses_the_existing_index(
    settings: Settings,
    store: SQLiteStore,
    make_library: Callable[..., Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = make_library()
    add_library("lib", str(root), settings)
    index_library("lib", store, settings=settings)
    before = set(store.ids("lib"))
    (root / "bin.md").write_bytes(b"\x00\x01\x02binary")
    (root / "latin.md").write_bytes("# Caf\xe9\n\nCr\xe8me br\xfbl\xe9e recipe.".encode("latin-1"))
    (root / "broken.md").write_text("---\ntitle: [oops\n---\n# Broken\n\nStill indexed.\n")
    (root / "only.md").write_text("---\ntitle: Just a title\n---\n")
    (root / "loop").symlink_to(root)
    (root / "a.md").symlink_to(root / "b.md")
    (root / "b.md").symlink_to(root / "a.md")
    with open(root / "huge.md", "wb") as huge:  # 50 MB of Markdown
        line = b"## Section\n\n" + b"lorem ipsum dolor sit amet " * 40 + b"\n\n"
        huge.write(line * (50_000_000 // len(line) + 1))
    start = time.perf_counter()
    report = index_library("lib", store, settings=settings)
    assert time.perf_counter() - start < 30
    assert report.error is None
    skipped = {s["path"]: s["reason"] for s in report.skipped}
    assert set(skipped) == {"bin.md", "huge.md", "a.md", "b.md"}  # named as the scan names them
    assert any("latin: not valid UTF-8" in w for w in report.warnings)
    assert any("broken: broken front matter" in w for w in report.warnings)
    assert before <= set(store.ids("lib"))
    assert {"latin", "broken", "only"} <= pages_of(store)
    assert search("Just a title", store, settings=settings)[0].page == "only"


def test_library_removed_while_indexing(
    settings: Settings, store: SQLiteStore, make_library: Callable[..., Path]
) -> None:
    add_library("keep", str(make_library(name="keep")), settings)
    index_library("keep", store, settings=settings)
    pages = {f"p{i}.md": f"# Page {i}\n\n" + f"text about topic {i}. " * 40 for i in range(12)}
    add_library("lib", str(make_library(pages, name="lib")), settings)

    def remove_midway(n: int) -> None:  # the user runs `heron library remove` meanwhile
        remove_library("lib", settings)

    with pytest.raises(LibraryRemoved, match="removed while indexing"):
        index_library("lib", store, settings=settings, progress=remove_midway)
    assert "lib" not in [ns.name for ns in store.namespaces()]
    assert len(pages_of(store, "keep")) == 3


def test_one_indexer_per_library(settings: Settings, store: SQLiteStore, tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    add_library("lib", str(tmp_path / "docs"), settings)  # not tmp_path: it holds HERON_HOME
    lock = checkout_dir(get_library("lib", settings), settings).with_name(".lib.lock")
    with _exclusive(lock, "lib"), pytest.raises(IndexBusy, match="another process"):
        index_library("lib", store, settings=settings)


def test_kill_9_during_indexing_then_a_clean_finish(
    settings: Settings, store: SQLiteStore, make_library: Callable[..., Path]
) -> None:
    pages = {
        f"c{i % 3}/p{i}.md": f"# Page {i}\n\n## Part A\n\nAlpha {i}.\n\n## Part B\n\nBeta {i}.\n"
        for i in range(300)
    }
    add_library("lib", str(make_library(pages)), settings)
    env = {**os.environ, "HERON_EMBED_CACHE": "false", "HERON_EMBED_THREADS": "1"}
    child = subprocess.Popen(
        [sys.executable, "-m", "heron", "index", "lib"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    written = 0
    while time.monotonic() < deadline and child.poll() is None:
        written = len(page_states(store, "lib"))
        if written:  # some pages are done, others not yet
            break
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert 0 < written < 300, child.stderr.read() if child.stderr else ""
    report = index_library("lib", store, settings=settings)
    assert report.error is None and report.pages == 300
    ids = store.ids("lib")
    assert len(ids) == len(set(ids)) == 600  # two chunks a page, none twice, none missing
    assert pages_of(store) == {p.removesuffix(".md") for p in pages}
    again = index_library("lib", store, settings=settings)
    assert (again.unchanged, again.embedded) == (300, 0)


PAGES_IN_THREE_LANGUAGES = {
    "correio.md": "# Servidor de correio\n\nA configuração do servidor de correio fica em "
    "/etc/postfix. Depois de alterar os ficheiros, reinicie o serviço para que as mudanças "
    "sejam aplicadas.\n",
    "copias.md": "# Copias de seguridad\n\nLas copias de seguridad se guardan cada noche en "
    "el disco externo. Para restaurar un archivo, use la herramienta de recuperación.\n",
    "mail.md": "# Mail server\n\nThe mail server's configuration lives in /etc/postfix. After "
    "changing the files, restart the service so that the changes are applied.\n",
}


def test_each_page_is_analysed_in_the_language_it_is_written_in(
    settings: Settings, store: SQLiteStore, tmp_path: Path
) -> None:
    root = tmp_path / "pages"
    root.mkdir()
    for name, text in PAGES_IN_THREE_LANGUAGES.items():
        (root / name).write_text(text, encoding="utf-8")
    add_library("lib", str(root), settings)
    index_library("lib", store, settings=settings)
    languages = {p: store.get("lib", f"{p}#0").metadata["language"] for p in pages_of(store)}
    assert languages == {"correio": "pt", "copias": "es", "mail": "en"}
    # "configurar" and "configuração" are one Portuguese term, "guardadas" and "guardan" one
    # Spanish term: each question finds its page by the lexical side alone.
    asked = {
        "Como configurar o servidor de correio?": "correio",
        "¿Dónde quedan guardadas las copias?": "copias",
    }
    for question, page in asked.items():
        found = search(question, store, settings=settings, library="lib", mode="lexical")
        assert found[0].page == page, question
    # language=en: every page analysed as English, as every page was before: "configurar"
    # is neither "configuração" nor "configuration" there (both "configur" in lib: the
    # query is analysed as each page's language).
    add_library("flat", str(root), settings, language="en")
    assert index_library("flat", store, settings=settings).added == 3
    assert {store.get("flat", f"{p}#0").metadata["language"] for p in languages} == {"en"}
    lexical = {"settings": settings, "mode": "lexical"}
    found = search("configurar", store, library="lib", **lexical)
    assert [r.page for r in found] == ["correio", "mail"]
    assert search("configurar", store, library="flat", **lexical) == []


def test_an_index_of_an_earlier_version_says_so_until_it_is_re_indexed(
    settings: Settings,
    store: SQLiteStore,
    make_library: Callable[..., Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    add_library("lib", str(make_library()), settings)
    with monkeypatch.context() as earlier:
        earlier.setattr(index_module, "INDEX_VERSION", "3")
        assert index_library("lib", store, settings=settings).version == "3"
    note = outdated_note(store, "lib")
    assert note is not None and "index version 3;" in note and "heron index lib" in note
    assert library_status(get_library("lib", settings), store).outdated == note
    assert search("password", store, settings=settings)[0].note == note
    report = index_library("lib", store, settings=settings)
    assert (report.changed, report.version) == (3, index_module.INDEX_VERSION)
    assert any(w.startswith("every page is re-indexed once") for w in report.warnings)
    assert outdated_note(store, "lib") is None
    assert search("password", store, settings=settings)[0].note is None
