"""Fixtures for libraries: a fresh data directory, a store with a counting cache, pages."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from heron.embed import CachedEmbedder, MiniLMEmbedder
from heron.settings import Settings
from heron.store import SQLiteStore
from tests.conftest import sqlite_store

PAGES = {
    "concepts/pods.md": (
        "---\ntitle: Pods\ndescription: The smallest deployable unit.\ntags: [workloads]\n---\n"
        "A Pod runs one or more containers that share storage and network.\n\n"
        "## Pod lifecycle\n\nPods are created, scheduled to a node, run, and terminate.\n\n"
        "## Init containers {#init}\n\nInit containers run to completion before app containers.\n"
    ),
    "concepts/secrets.md": (
        "---\ntitle: Secrets\n---\n<!-- overview -->\n"
        "A Secret holds a small amount of sensitive data such as a password or a token.\n\n"
        "{{< note >}}Secrets are stored unencrypted in etcd by default.{{< /note >}}\n\n"
        "## Rotating a Secret\n\nUpdate the Secret object and restart the Pods that read it.\n"
    ),
    "tasks/rollback.md": (
        '+++\ntitle = "Roll back a Deployment"\n+++\n'
        "Use kubectl rollout undo to return a Deployment to its previous revision.\n"
    ),
}


@pytest.fixture
def settings(home: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Settings on a fresh HERON_HOME, without Heron's own docs library."""
    monkeypatch.setenv("HERON_LIBRARY_DEFAULT_DOCS", "false")
    return Settings()


@pytest.fixture
def cached(tmp_path: Path, embedder: MiniLMEmbedder) -> CachedEmbedder:
    """The real model behind a fresh cache whose ``misses`` counts texts embedded."""
    return CachedEmbedder(embedder, tmp_path / "embeddings.db")


@pytest.fixture
def store(settings: Settings, cached: CachedEmbedder) -> Iterator[SQLiteStore]:
    with sqlite_store(settings.db_path, cached) as store:
        yield store


def write_pages(root: Path, pages: dict[str, str | bytes]) -> Path:
    for name, content in pages.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


@pytest.fixture
def make_library(tmp_path: Path) -> Callable[..., Path]:
    """``make_library({"a.md": "..."})`` -> a folder holding those pages (PAGES by default)."""

    def make(pages: dict[str, str | bytes] | None = None, name: str = "lib") -> Path:
        return write_pages(tmp_path / name, dict(PAGES) if pages is None else pages)

    return make
