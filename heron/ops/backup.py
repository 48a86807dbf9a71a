"""``backup()`` and ``restore()`` of a whole ``HERON_HOME``.

Every SQLite file (``heron.db``, ``embeddings.db``, ``jobs.db`` ...) is copied with
SQLite's online backup API: the copy is one consistent snapshot even while a server
writes, and it holds what the write-ahead log held, so no ``-wal``/``-shm`` file is
copied. Every other file is copied as it is. Not copied: the vector index caches
(``heron.db.vectors/``, rebuilt from the records on first search, and a cache saved after
the snapshot would claim records the copy lacks) and sockets.

A backup is a folder with ``heron-backup.json``: the Heron version, the time, the home it
came from, and each file with its size and SHA-256 (databases marked). ``restore()``
trusts nothing else in the folder: it restores only the files the manifest lists, each a
plain relative path inside the backup (no ``..``, no link), refuses a backup past
``HERON_RESTORE_MAX_BYTES`` or the free space of the home's disk, copies each file
beside the home while hashing it (a file that is not the size and SHA-256 its entry
says stops the restore), checks every database of the copy (``PRAGMA
integrity_check``), and only then swaps the copy in with one rename; a non-empty home is
only replaced with ``force``, and then moved aside, not deleted.

On PostgreSQL the store and the jobs live in the database: back it up with ``pg_dump``
(``POSTGRES_NOTE``); a backup here then holds the home's local files.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from heron import __version__
from heron.db import SQLiteFile
from heron.errors import InputError, StoreError
from heron.ops.jsonfile import read_json
from heron.private import private_dir, private_file
from heron.settings import Settings

MANIFEST = "heron-backup.json"
SQLITE_MAGIC = b"SQLite format 3\x00"
#: Left out of a backup: caches rebuilt on use, and SQLite's side files.
SKIPPED_SUFFIXES = (".vectors", "-wal", "-shm", "-journal")
POSTGRES_NOTE = (
    "The store and the jobs are in PostgreSQL: back them up with pg_dump, e.g. "
    'pg_dump --format=custom --file=heron.pgdump "$HERON_DATABASE_URL", and restore with '
    'pg_restore --clean --dbname="$HERON_DATABASE_URL" heron.pgdump. This backup holds '
    "the local files of HERON_HOME."
)


@dataclass
class BackupReport:
    source: Path
    dest: Path
    databases: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    bytes: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    moved_aside: Path | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": str(self.source),
            "dest": str(self.dest),
            "databases": self.databases,
            "files": self.files,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 3),
            "notes": self.notes,
            "moved_aside": str(self.moved_aside) if self.moved_aside else None,
        }


def is_sqlite(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC


def _files(root: Path) -> list[Path]:
    """Regular files under ``root`` to copy, relative, sorted; links and caches left out."""
    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.endswith(SKIPPED_SUFFIXES))
        for name in sorted(names):
            path = Path(folder, name)
            skipped = name == MANIFEST or name.endswith(SKIPPED_SUFFIXES)
            if not skipped and path.is_file() and not path.is_symlink():
                found.append(path.relative_to(root))
    return found


#: Bytes read at a time while a file is copied and hashed.
CHUNK = 1024 * 1024


def _copy_file(src: Path, dest: Path, limit: int | None = None) -> tuple[int, str]:
    """``src``'s bytes and times into the new file ``dest``, made 0600 before a byte is in
    it (``shutil.copy2`` would give it the umask's mode while it writes, then ``src``'s);
    returns its size and SHA-256. ``limit``: stop past that many bytes (the size returned
    then exceeds it). ``src`` is opened without following a link."""
    digest, size = hashlib.sha256(), 0
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    source = os.open(src, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    with os.fdopen(fd, "wb") as out, os.fdopen(source, "rb") as data:
        while chunk := data.read(CHUNK):
            digest.update(chunk)
            out.write(chunk)
            size += len(chunk)
            if limit is not None and size > limit:
                break
    stat = src.stat()
    os.utime(dest, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    return size, digest.hexdigest()


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as data:
        while chunk := data.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _copy_database(src: Path, dest: Path) -> None:
    """One consistent snapshot of ``src`` into ``dest`` (``SQLiteFile.copy_to``)."""
    file = SQLiteFile(src, f"the database {src.name}", "restore it from another backup")
    file.copy_to(dest)


def _empty(path: Path) -> bool:
    return not path.exists() or (path.is_dir() and not any(path.iterdir()))


def backup(dest: Path, settings: Settings) -> BackupReport:
    """Copy the home into the new or empty folder ``dest`` (see the module docstring)."""
    home, dest = settings.home.resolve(), Path(dest).resolve()
    if not home.is_dir():
        raise InputError(f"HERON_HOME {home} does not exist: there is nothing to back up.")
    if not _empty(dest):
        raise InputError(f"{dest} is not empty. Back up into a new folder, e.g. {dest}-2.")
    if dest == home or home in dest.parents:
        raise InputError(f"{dest} is inside HERON_HOME {home}; back up to another folder.")
    started = time.perf_counter()
    report = BackupReport(home, dest)
    # The home holds keys and conversations: so does its copy, an empty folder made
    # beforehand included (its mode was the umask's, not a choice to share it).
    private_dir(dest).chmod(0o700)
    entries = []
    for relative in _files(home):
        src, target = home / relative, dest / relative
        private_dir(target.parent)
        database = is_sqlite(src)
        if database:
            _copy_database(src, target)
            size, digest = target.stat().st_size, sha256_of(target)
            report.databases.append(relative.as_posix())
        else:
            size, digest = _copy_file(src, target)
            report.files.append(relative.as_posix())
        report.bytes += size
        entries.append(
            {"path": relative.as_posix(), "bytes": size, "sha256": digest, "database": database}
        )
    if settings.postgres_url:
        report.notes.append(POSTGRES_NOTE)
    manifest = {
        "heron": __version__,
        "created": time.time(),
        "home": str(home),
        "postgres": bool(settings.postgres_url),
        "files": entries,
    }
    private_file(dest / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    report.seconds = time.perf_counter() - started
    return report


def read_manifest(src: Path) -> dict[str, Any]:
    return read_json(
        src / MANIFEST,
        missing=InputError(
            f"{src} is not a Heron backup (no {MANIFEST}); give the folder heron backup made."
        ),
        bad=lambda why: InputError(
            f"{src / MANIFEST} cannot be read ({why}); is the backup whole?"
        ),
    )


def check_database(path: Path) -> None:
    """``PRAGMA integrity_check`` of a backed-up file; ``StoreError`` when damaged."""
    file = SQLiteFile(path, f"the backed-up database {path.name}", "use another backup")
    with file.read_only() as db:
        rows = db.execute("PRAGMA integrity_check(1)").fetchall()
    if not rows or rows[0][0] != "ok":
        problem = rows[0][0] if rows else "no answer"
        raise StoreError(
            f"The backup's {path.name} fails its integrity check ({problem}); nothing was "
            "restored. Use another backup."
        )


@dataclass(frozen=True)
class Entry:
    """One file of a backup's manifest, checked: where it is, its size and SHA-256."""

    path: PurePosixPath
    bytes: int
    sha256: str
    database: bool


def _entries(src: Path, manifest: dict[str, Any], limit: int) -> list[Entry]:
    """The manifest's files, each checked for shape before any is read: ``InputError``
    naming the first that is no plain relative path, has no size or hash, is listed twice,
    or makes the backup larger than ``limit`` bytes."""
    files = manifest.get("files")
    if not isinstance(files, list):
        raise InputError(f"{src / MANIFEST} lists no files; is the backup whole?")
    entries: list[Entry] = []
    seen: set[PurePosixPath] = set()
    total = 0
    for n, item in enumerate(files, 1):
        where = f"{src / MANIFEST}, file {n}"
        if not isinstance(item, dict):
            raise InputError(f"{where} is not an object; the manifest is damaged.")
        name, size, digest = item.get("path"), item.get("bytes"), item.get("sha256")
        path = PurePosixPath(name) if isinstance(name, str) else None
        if (
            path is None
            or not name
            or "\\" in name
            or "\x00" in name
            or path.is_absolute()
            or any(part in ("", ".", "..") for part in name.split("/"))
            or name == MANIFEST
        ):
            raise InputError(
                f"{where}: {name!r} is not a plain relative path inside the backup; "
                "nothing was restored. Use a backup heron backup made."
            )
        if path in seen:
            raise InputError(f"{where}: {name} is listed twice; nothing was restored.")
        if type(size) is not int or size < 0:
            raise InputError(f"{where}: {name} has no size in bytes; nothing was restored.")
        if not (isinstance(digest, str) and len(digest) == 64 and _is_hex(digest)):
            raise InputError(
                f"{where}: {name} has no SHA-256, so it cannot be verified (a backup made "
                "before Heron kept hashes?); nothing was restored. Make a new backup."
            )
        total += size
        if total > limit:
            raise InputError(
                f"The backup holds more than {limit:,} bytes (HERON_RESTORE_MAX_BYTES); "
                "nothing was restored. Raise the setting if the backup is yours and that "
                "large."
            )
        seen.add(path)
        entries.append(Entry(path, size, digest.lower(), bool(item.get("database"))))
    return entries


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdefABCDEF" for c in text)


def _source(src: Path, entry: Entry) -> Path:
    """The backed-up file of ``entry``: a regular file inside ``src``, reached through no
    link; ``InputError`` otherwise."""
    path = src.joinpath(*entry.path.parts)
    # ``src`` is resolved and the path clean: it resolves elsewhere only through a link.
    if path.resolve() != path:
        raise InputError(f"The backup's {entry.path} leads through a link; nothing was restored.")
    if not path.is_file():
        raise InputError(f"The backup lacks {entry.path}, which its manifest lists, as a file.")
    if path.stat().st_size != entry.bytes:
        raise InputError(
            f"The backup's {entry.path} is {path.stat().st_size:,} bytes, its manifest says "
            f"{entry.bytes:,}; nothing was restored. Use another backup."
        )
    return path


def restore(src: Path, settings: Settings, *, force: bool = False) -> BackupReport:
    """Put the backup ``src`` in place of the home (see the module docstring). Stop
    ``heron serve`` first: a running server keeps the old files open. A non-empty home
    needs ``force`` and is moved aside to ``HOME.before-restore-<time>``."""
    src, home = Path(src).resolve(), settings.home.resolve()
    manifest = read_manifest(src)
    if not _empty(home) and not force:
        raise InputError(
            f"HERON_HOME {home} is not empty. Stop heron serve, then re-run with --force to "
            "move it aside and restore, or set HERON_HOME to an empty folder."
        )
    started = time.perf_counter()
    report = BackupReport(src, home)
    entries = _entries(src, manifest, settings.ops.restore_max_bytes)
    sources = [_source(src, entry) for entry in entries]
    total = sum(entry.bytes for entry in entries)
    disk = home if home.exists() else home.parent
    free = shutil.disk_usage(disk).free if disk.exists() else total
    if total > free:
        raise InputError(
            f"The backup is {total:,} bytes and {disk} has {free:,} free; nothing was "
            "restored. Free some space first."
        )
    staged = home.with_name(f".{home.name}.restoring")
    shutil.rmtree(staged, ignore_errors=True)  # a restore that died half-way
    private_dir(staged).chmod(0o700)
    try:
        for entry, path in zip(entries, sources, strict=True):
            target = staged.joinpath(*entry.path.parts)
            private_dir(target.parent)  # private from the first byte, as the home should be
            size, digest = _copy_file(path, target, limit=entry.bytes)
            if size != entry.bytes or not hmac.compare_digest(digest, entry.sha256):
                raise InputError(
                    f"The backup's {entry.path} does not match its manifest's SHA-256 (or "
                    "size): it changed or is damaged; nothing was restored. Use another "
                    "backup."
                )
            if entry.database:
                check_database(target)  # the copy that will be used, checked before the swap
                report.databases.append(str(entry.path))
            else:
                report.files.append(str(entry.path))
            report.bytes += size
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise
    if home.exists():
        if any(home.iterdir()):
            report.moved_aside = home.with_name(f"{home.name}.before-restore-{int(time.time())}")
            home.rename(report.moved_aside)
        else:
            home.rmdir()
    staged.rename(home)
    if manifest.get("postgres"):
        report.notes.append(POSTGRES_NOTE)
    report.seconds = time.perf_counter() - started
    return report
