"""``heron backup`` / ``heron restore`` of a real home, one database written meanwhile by
another process."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from heron.errors import InputError, StoreError
from heron.libraries import search_many
from heron.ops.backup import MANIFEST, backup, restore
from heron.settings import Settings
from heron.store import open_store
from tests.run_heron import run_heron
from tests.server import conftest as served

#: A writer that keeps ``total`` equal to the number of rows, one transaction a row.
WRITER = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("CREATE TABLE IF NOT EXISTS rows (n INTEGER, pad TEXT)")
db.execute("CREATE TABLE IF NOT EXISTS total (n INTEGER)")
db.execute("INSERT INTO total SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM total)")
print("ready", flush=True)
while True:
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT INTO rows VALUES ((SELECT n FROM total), ?)", ("x" * 2000,))
    db.execute("UPDATE total SET n = n + 1")
    db.execute("COMMIT")
"""

#: The served tests' home fixture (a tiny indexed library ``tiny``, one skill), here too.
heron_home = served.heron_home


@pytest.fixture
def env(heron_home: Path) -> Path:
    """The served tests' home (a tiny indexed library ``tiny``), its variables set."""
    return heron_home / "home"


def finds_pods(settings: Settings) -> bool:
    store = open_store(settings)
    try:
        found = search_many(["pods"], store, library="tiny", mode="hybrid", settings=settings)
        return bool(found[0])
    finally:
        store.close()


def test_round_trip_through_a_new_home(env: Path, tmp_path: Path) -> None:
    report = backup(tmp_path / "b", Settings())
    assert (tmp_path / "b").stat().st_mode & 0o777 == 0o700  # it holds what the home holds
    assert {"heron.db", "embeddings.db"} <= set(report.databases)
    assert "libraries.txt" in report.files
    names = {p.name for p in (tmp_path / "b").rglob("*")}
    assert not {n for n in names if n.endswith(("-wal", "-shm"))}
    manifest = json.loads((tmp_path / "b" / MANIFEST).read_text())
    assert {"heron.db": True, "libraries.txt": False}.items() <= {
        f["path"]: f["database"] for f in manifest["files"]
    }.items()
    fresh = Settings(home=tmp_path / "restored")
    restored = restore(tmp_path / "b", fresh)
    assert restored.moved_aside is None and "heron.db" in restored.databases
    assert fresh.home.stat().st_mode & 0o777 == 0o700
    assert finds_pods(fresh)


def test_a_database_written_meanwhile_is_copied_consistent(env: Path, tmp_path: Path) -> None:
    path = env / "busy.db"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
        time.sleep(0.3)  # thousands of commits, some still in the write-ahead log
        backup(tmp_path / "b", Settings())
    finally:
        writer.kill()
        writer.wait()
        path.unlink()
        for side in ("-wal", "-shm"):
            Path(f"{path}{side}").unlink(missing_ok=True)
    with sqlite3.connect(tmp_path / "b" / "busy.db") as db:
        rows = db.execute("SELECT count(*) FROM rows").fetchone()[0]
        total = db.execute("SELECT n FROM total").fetchone()[0]
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert rows == total > 0


def test_restore_refuses_a_home_in_use_unless_forced(env: Path, tmp_path: Path) -> None:
    backup(tmp_path / "b", Settings())
    target = tmp_path / "target"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    settings = Settings(home=target)
    with pytest.raises(InputError, match=r"not empty.*--force"):
        restore(tmp_path / "b", settings)
    assert (target / "notes.txt").read_text() == "mine"
    report = restore(tmp_path / "b", settings, force=True)
    assert report.moved_aside is not None and (report.moved_aside / "notes.txt").exists()
    assert (target / "heron.db").exists() and not (target / "notes.txt").exists()


def test_a_damaged_backup_is_refused_before_the_home_is_touched(env: Path, tmp_path: Path) -> None:
    backup(tmp_path / "b", Settings())
    damaged = tmp_path / "b" / "heron.db"
    data = bytearray(damaged.read_bytes())
    data[4096:8192] = b"\xff" * 4096  # a b-tree page overwritten
    damaged.write_bytes(bytes(data))
    # Damaged before it was hashed (a disk that failed under the backup): its hash holds.
    digest = hashlib.sha256(bytes(data)).hexdigest()
    edit_manifest(
        tmp_path / "b",
        lambda files: [f.update(sha256=digest) for f in files if f["path"] == "heron.db"],
    )
    target = Settings(home=tmp_path / "target")
    with pytest.raises(StoreError, match=r"integrity check|corrupt"):
        restore(tmp_path / "b", target)
    assert not (tmp_path / "target").exists()


def test_bad_destinations_and_sources(env: Path, tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(InputError, match="not empty"):
        backup(tmp_path / "full", Settings())
    with pytest.raises(InputError, match="inside HERON_HOME"):
        backup(env / "backups", Settings())
    with pytest.raises(InputError, match="not a Heron backup"):
        restore(tmp_path / "full", Settings(home=tmp_path / "new"))


def test_postgresql_is_pointed_to_pg_dump(env: Path, tmp_path: Path) -> None:
    settings = Settings(database_url="postgresql://heron@127.0.0.1:1/heron")
    report = backup(tmp_path / "b", settings)
    assert any("pg_dump" in note for note in report.notes)


def test_cli_backup_and_restore(env: Path, tmp_path: Path, monkeypatch) -> None:
    done = run_heron("backup", str(tmp_path / "b"), "--json")
    assert "heron.db" in json.loads(done.stdout)["databases"]
    monkeypatch.setenv("HERON_HOME", str(tmp_path / "restored"))
    text = run_heron("restore", str(tmp_path / "b")).stdout
    assert "integrity checked" in text
    again = run_heron("restore", str(tmp_path / "b"), ok=False)
    assert again.returncode == 1 and "--force" in again.stderr


def not_private(root: Path) -> dict[str, str]:
    """Every folder (``root`` too) not 0700 and every file not 0600 under ``root``."""
    wrong = {}
    for path in [root, *root.rglob("*")]:
        mode = path.stat().st_mode & 0o777
        if mode != (0o700 if path.is_dir() else 0o600):
            wrong[str(path.relative_to(root))] = oct(mode)
    return wrong


def test_a_backup_and_its_restore_are_private(env: Path, tmp_path: Path) -> None:
    (env / "notes").mkdir(mode=0o755)
    (env / "notes" / "todo.txt").write_text("mine")
    (env / "notes").chmod(0o755)
    (env / "notes" / "todo.txt").chmod(0o644)
    dest = tmp_path / "b"
    dest.mkdir()
    dest.chmod(0o755)  # an empty folder made beforehand, as the umask would have it
    backup(dest, Settings())
    assert {"heron.db", MANIFEST, "notes/todo.txt"} <= {
        str(p.relative_to(dest)) for p in dest.rglob("*")
    }
    assert not_private(dest) == {}
    fresh = Settings(home=tmp_path / "restored")
    restore(dest, fresh)
    assert (fresh.home / "heron.db").is_file() and (fresh.home / "notes" / "todo.txt").is_file()
    assert not_private(fresh.home) == {}
    assert finds_pods(fresh)
    assert not_private(fresh.home) == {}  # the files SQLite adds on use, too


def edit_manifest(folder: Path, change: Callable[[list[dict[str, Any]]], None]) -> None:
    manifest = json.loads((folder / MANIFEST).read_text())
    change(manifest["files"])
    (folder / MANIFEST).write_text(json.dumps(manifest))


def test_restore_takes_only_listed_files_that_match_their_hashes(env: Path, tmp_path: Path) -> None:
    src = tmp_path / "b"
    backup(src, Settings())
    manifest = json.loads((src / MANIFEST).read_text())
    assert all(len(f["sha256"]) == 64 for f in manifest["files"])
    (src / "unlisted.sh").write_text("echo planted\n")  # not in the manifest
    (src / "heron.db.vectors").mkdir()
    (src / "heron.db.vectors" / "index").write_text("stale")
    fresh = Settings(home=tmp_path / "restored")
    restore(src, fresh)
    assert not (fresh.home / "unlisted.sh").exists()
    assert not (fresh.home / "heron.db.vectors").exists()
    listed = {f["path"] for f in manifest["files"]}
    assert {str(p.relative_to(fresh.home)) for p in fresh.home.rglob("*") if p.is_file()} == listed
    # A listed file changed after the backup, its size kept: its hash tells.
    libraries = src / "libraries.txt"
    text = libraries.read_bytes()
    libraries.write_bytes(bytes([text[0] ^ 1]) + text[1:])
    target = Settings(home=tmp_path / "other")
    with pytest.raises(InputError, match="SHA-256"):
        restore(src, target)
    assert not target.home.exists() and not (tmp_path / ".other.restoring").exists()
    libraries.write_bytes(text + b"more")  # and its size, before a byte is copied
    with pytest.raises(InputError, match="manifest says"):
        restore(src, target)
    assert not target.home.exists()


@pytest.mark.parametrize(
    "path",
    ["../outside.txt", "/etc/hostname", "a/../../x", "./libraries.txt", "a//b", "", 7,
     "a\\..\\x", MANIFEST],
)  # fmt: skip
def test_a_manifest_cannot_lead_outside(env: Path, tmp_path: Path, path: object) -> None:
    src = tmp_path / "b"
    backup(src, Settings())
    (tmp_path / "outside.txt").write_text("not the backup's")
    edit_manifest(src, lambda files: files.append({**files[0], "path": path}))
    target = Settings(home=tmp_path / "restored")
    with pytest.raises(InputError, match="plain relative path"):
        restore(src, target)
    assert not target.home.exists()


def test_links_sizes_and_missing_hashes_are_refused(env: Path, tmp_path: Path) -> None:
    src = tmp_path / "b"
    backup(src, Settings())
    target = Settings(home=tmp_path / "restored")
    secret = tmp_path / "secret.txt"
    secret.write_text("another user's file")
    (src / "link.txt").symlink_to(secret)
    entry = {"path": "link.txt", "bytes": secret.stat().st_size, "database": False,
             "sha256": hashlib.sha256(secret.read_bytes()).hexdigest()}  # fmt: skip
    edit_manifest(src, lambda files: files.append(entry))
    with pytest.raises(InputError, match="link"):
        restore(src, target)
    edit_manifest(src, lambda files: files.pop())
    with pytest.raises(InputError, match="HERON_RESTORE_MAX_BYTES"):
        restore(src, Settings(home=tmp_path / "restored", ops={"restore_max_bytes": 1000}))
    edit_manifest(src, lambda files: files[0].update(bytes=10**30))
    with pytest.raises(InputError, match="HERON_RESTORE_MAX_BYTES"):
        restore(src, target)
    edit_manifest(src, lambda files: [f.pop("sha256") for f in files[:1]])
    with pytest.raises(InputError, match="no SHA-256"):
        restore(src, target)
    assert not target.home.exists()
