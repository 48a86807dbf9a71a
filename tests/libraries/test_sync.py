"""Git libraries against real repositories: bare repos in temporary folders, file:// URLs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from heron.libraries import add_library, index_library, search
from heron.libraries.config import get_library
from heron.libraries.library import forget_library, library_status
from heron.libraries.sync import checkout_dir
from heron.settings import Settings
from heron.store import SQLiteStore
from tests.libraries.conftest import PAGES, write_pages


def git(*args: str, cwd: Path) -> str:
    env_args = [
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.com",
        "-c",
        "init.defaultBranch=main",
    ]
    done = subprocess.run(
        ["git", *env_args, *args], cwd=cwd, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


@pytest.fixture
def remote(tmp_path: Path) -> tuple[Path, Path]:
    """``(bare repository, working copy)`` with PAGES committed and pushed."""
    bare = tmp_path / "docs.git"
    git("init", "--bare", "-q", str(bare), cwd=tmp_path)
    work = tmp_path / "work"
    git("init", "-q", str(work), cwd=tmp_path)
    write_pages(work, dict(PAGES))
    git("add", ".", cwd=work)
    git("commit", "-qm", "first", cwd=work)
    git("remote", "add", "origin", bare.as_uri(), cwd=work)
    git("push", "-q", "origin", "HEAD:main", cwd=work)
    git("--git-dir", str(bare), "symbolic-ref", "HEAD", "refs/heads/main", cwd=tmp_path)
    return bare, work


def test_clone_then_update(
    settings: Settings, store: SQLiteStore, remote: tuple[Path, Path]
) -> None:
    bare, work = remote
    add_library("docs", bare.as_uri(), settings)
    first = index_library("docs", store, settings=settings)
    assert first.pages == 3 and first.revision == git("rev-parse", "HEAD", cwd=work)
    hit = search("undo a deployment", store, settings=settings)[0]
    assert hit.source.startswith(f"{bare.as_uri()}@{first.revision}:tasks/rollback.md:")
    write_pages(work, {"tasks/scale.md": "# Scale\n\nUse kubectl scale to change replicas.\n"})
    git("add", ".", cwd=work)
    git("commit", "-qm", "second", cwd=work)
    git("push", "-q", "origin", "HEAD:main", cwd=work)
    second = index_library("docs", store, settings=settings)
    assert (second.added, second.unchanged) == (1, 3)


def test_force_push_between_syncs(
    settings: Settings, store: SQLiteStore, remote: tuple[Path, Path]
) -> None:
    bare, work = remote
    add_library("docs", bare.as_uri(), settings)
    index_library("docs", store, settings=settings)
    # Rewrite history: a new root commit without the rollback page, force-pushed.
    git("checkout", "-q", "--orphan", "rewritten", cwd=work)
    git("rm", "-q", "--cached", "tasks/rollback.md", cwd=work)
    (work / "tasks" / "rollback.md").unlink()
    git("commit", "-qm", "rewritten", cwd=work)
    git("push", "-qf", "origin", "rewritten:main", cwd=work)
    report = index_library("docs", store, settings=settings)
    assert report.error is None and report.removed == 1
    assert report.revision == git("rev-parse", "HEAD", cwd=work)
    assert {i.rsplit("#", 1)[0] for i in store.ids("docs")} == {"concepts/pods", "concepts/secrets"}


def test_failing_remote_keeps_the_previous_index(
    settings: Settings, store: SQLiteStore, remote: tuple[Path, Path], tmp_path: Path
) -> None:
    bare, _ = remote
    add_library("docs", bare.as_uri(), settings)
    index_library("docs", store, settings=settings)
    bare.rename(tmp_path / "moved.git")  # the remote is gone
    report = index_library("docs", store, settings=settings)
    assert report.error and "cannot fetch" in report.error and "previous index" in report.error
    assert search("password token", store, settings=settings)[0].page == "concepts/secrets"
    status = library_status(get_library("docs", settings), store)
    assert status.pages == 3 and status.last_error == report.error


def test_url_that_does_not_exist(settings: Settings, store: SQLiteStore, tmp_path: Path) -> None:
    add_library("ghost", (tmp_path / "nowhere.git").as_uri(), settings)
    report = index_library("ghost", store, settings=settings)
    assert report.error and "git clone failed" in report.error
    assert not checkout_dir(get_library("ghost", settings), settings).exists()
    assert "ghost" not in [ns.name for ns in store.namespaces()]
    forget_library("ghost", store, settings)
    assert store.kv_items("ghost") == {}


def test_a_branch_option_clones_and_follows_that_branch(
    settings: Settings, store: SQLiteStore, remote: tuple[Path, Path]
) -> None:
    bare, work = remote
    git("checkout", "-q", "-b", "next", cwd=work)
    write_pages(work, {"tasks/next.md": "# Next\n\nOnly on the next branch.\n"})
    git("add", ".", cwd=work)
    git("commit", "-qm", "next", cwd=work)
    git("push", "-q", "origin", "next", cwd=work)
    config = settings.home / "libraries.txt"
    config.write_text(f"docs {bare.as_uri()} branch=next exclude=concepts/**\n")
    first = index_library("docs", store, settings=settings)
    assert first.error is None and first.revision == git("rev-parse", "HEAD", cwd=work)
    assert first.pages == 2  # tasks/rollback and tasks/next; concepts/ excluded
    write_pages(work, {"tasks/later.md": "# Later\n\nPushed to next afterwards.\n"})
    git("add", ".", cwd=work)
    git("commit", "-qm", "later", cwd=work)
    git("push", "-q", "origin", "next", cwd=work)
    assert index_library("docs", store, settings=settings).added == 1
    config.write_text(f"docs {bare.as_uri()}\n")  # back to the default branch, main
    back = index_library("docs", store, settings=settings)
    assert (back.pages, back.removed) == (3, 2)
