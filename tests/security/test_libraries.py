"""Library sources are not options, transports or the machine's private folders: each
attack names a source that would run ``touch pwned``, read outside what the API may
read, or index Heron's own data, through the real server, the CLI or a sync."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from heron.libraries.config import Library, config_path
from heron.libraries.sync import SyncError, _clone, checkout_dir, sync
from heron.settings import Settings
from tests.run_heron import run_heron
from tests.security.served import Served, git, serve

#: Sources no caller may add; ``{m}`` is the marker a successful attack would create.
NEVER = [
    "ext::sh -c touch% {m}",
    "fd::17",
    "--upload-pack=touch {m}",
    "-oProxyCommand=touch {m}@host:x",
    "ssh://-oProxyCommand=touch%20{m}/x",
    "ftp://example.com/docs.git",
    "/",
]


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("libraries")
    for name in ("docs", "other/docs"):
        (tmp / name).mkdir(parents=True)
        (tmp / name / "page.md").write_text("# Page\n\nText.\n")
    (tmp / "docs" / "out").symlink_to(tmp / "other")
    return tmp


@pytest.fixture(scope="module")
def default_server(tmp: Path) -> Iterator[Served]:
    """The server as installed: no library roots, no file:// URLs."""
    with serve(tmp / "default", {}) as server:
        yield server


@pytest.fixture(scope="module")
def roots_server(tmp: Path) -> Iterator[Served]:
    """A server whose operator allowed folders under ``tmp/root`` and file:// URLs."""
    root = tmp / "root"
    (root / "docs").mkdir(parents=True)
    env = {"HERON_LIBRARY_ROOTS": json.dumps([str(root)]), "HERON_LIBRARY_ALLOW_FILE_URLS": "true"}
    with serve(root, env) as server:  # its HERON_HOME, root/home, lies under the root
        yield server


def add(server: Served, source: str) -> dict:
    reply = server.rpc("library.add", {"name": "lib", "source": source})
    if "result" in reply:
        server.rpc("library.remove", {"name": "lib"})
    return reply


def refused(reply: dict, *words: str) -> str:
    assert reply.get("error", {}).get("code") == -32001, reply
    message = reply["error"]["message"]
    for word in words:
        assert word in message, message
    return message


@pytest.mark.parametrize("source", NEVER)
def test_the_api_never_adds_these(
    default_server: Served, roots_server: Served, tmp: Path, source: str
) -> None:
    marker = tmp / "pwned"
    for server in (default_server, roots_server):
        refused(add(server, source.format(m=marker)))
    assert not marker.exists()


def test_the_api_adds_no_local_folder_by_default(default_server: Served, tmp: Path) -> None:
    refused(add(default_server, str(tmp / "docs")), "HERON_LIBRARY_ROOTS", "now: none set")
    refused(add(default_server, (tmp / "docs").as_uri()), "HERON_LIBRARY_ALLOW_FILE_URLS")
    assert "result" in add(default_server, "https://example.com/docs.git")
    assert "result" in add(default_server, "git@github.com:org/docs.git")


def test_the_api_adds_folders_only_under_the_roots(roots_server: Served, tmp: Path) -> None:
    root = tmp / "root"
    assert add(roots_server, str(root / "docs"))["result"]["source"] == str(root / "docs")
    refused(add(roots_server, str(tmp / "docs")), "HERON_LIBRARY_ROOTS", str(root))
    refused(add(roots_server, str(root / "docs" / ".." / ".." / "docs")), "not under")
    (root / "docs" / "away").symlink_to(tmp / "other", target_is_directory=True)
    refused(add(roots_server, str(root / "docs" / "away")), "not under")
    # The roots hold the data directory; neither it nor a folder holding it is a library.
    refused(add(roots_server, str(root)), "data directory")
    refused(add(roots_server, str(root / "home")), "data directory")
    assert "result" in add(roots_server, (tmp / "docs").as_uri())


def test_the_cli_adds_any_folder_but_not_these(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERON_LIBRARY_DEFAULT_DOCS", "false")
    marker = tmp_path / "pwned"
    docs = tmp_path / "docs"
    docs.mkdir()
    for n, source in enumerate([NEVER[0], NEVER[2], NEVER[4], "/", str(home), str(tmp_path)]):
        done = run_heron("library", "add", f"bad{n}", "--", source.format(m=marker), ok=False)
        assert done.returncode == 1 and done.stderr.startswith("error: "), done.stderr
        assert "Traceback" not in done.stderr
    run_heron("library", "add", "mine", str(docs))
    run_heron("library", "add", "local-git", (tmp_path / "repo.git").as_uri())
    listed = json.loads(run_heron("library", "list", "--json").stdout)
    assert [lib["name"] for lib in listed] == ["mine", "local-git"]
    assert not marker.exists()


@pytest.fixture
def settings(home: Path) -> Settings:
    return Settings()


@pytest.mark.parametrize("source", ["ext::sh -c touch% {m}", "-u touch {m} ://x"])
def test_a_hand_edited_source_is_refused_at_sync(
    settings: Settings, tmp_path: Path, source: str
) -> None:
    marker = tmp_path / "pwned"
    path = config_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"evil {source.format(m=marker)}\n")
    library = Library("evil", source.format(m=marker))
    with pytest.raises(SyncError, match="evil"):
        sync(library, settings, timeout=30)
    assert not marker.exists()


def test_git_is_given_sources_after_double_dash_and_only_network_transports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below the checks: a source git would read as an option is a path to it, and a
    transport that runs a program is not allowed, even where the user's own git config
    allows it (Heron's git reads no user config)."""
    marker = tmp_path / "pwned"
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / ".gitconfig").write_text('[protocol "ext"]\n\tallow = always\n')
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    for url in (f"--upload-pack=touch {marker}", f"ext::sh -c touch% {marker}"):
        with pytest.raises(SyncError):
            _clone(url, None, tmp_path / "checkout", 30)
    assert not marker.exists()


def test_a_checkout_with_a_planted_filter_is_not_updated(
    settings: Settings, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    bare, work = tmp_path / "docs.git", tmp_path / "work"
    git(tmp_path, "init", "--bare", "-q", "-b", "main", str(bare))
    git(tmp_path, "init", "-q", "-b", "main", str(work))
    (work / ".gitattributes").write_text("* filter=evil\n")
    (work / "page.md").write_text("# Page\n")
    git(work, "add", ".")
    git(work, "commit", "-qm", "first")
    git(work, "push", "-q", str(bare), "main")
    library = Library("docs", bare.as_uri())
    sync(library, settings, timeout=30)
    checkout = checkout_dir(library, settings)
    git(checkout, "config", "filter.evil.smudge", f"sh -c 'touch {marker}; cat'")
    (work / "page.md").write_text("# Page\n\nChanged.\n")
    git(work, "commit", "-qam", "second")
    git(work, "push", "-q", str(bare), "main")
    with pytest.raises(SyncError, match=r"sets filter\.evil\.smudge"):
        sync(library, settings, timeout=30)
    assert not marker.exists()
