"""Finding a library's pages: ``.md`` files, their collections, and the files to skip.

A page's id is its path without ``.md``, relative to the library root, with ``/``
separators: ``concepts/storage/volumes``. Its collection is the nearest folder above it
that holds a ``.collection`` marker file, else its top-level folder, else ``""`` for
pages at the root. Hidden files and folders (``.git``, ``.ai``) are not pages.

Nothing here follows a symlinked folder, so a symlink loop cannot trap the walk; a
symlinked file is read only when it resolves inside the library.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

MARKER = ".collection"
#: Bytes inspected to tell binary from text, as git does.
_SNIFF = 8000


@dataclass(frozen=True)
class PageFile:
    id: str
    collection: str
    path: Path  # as found under the root (a symlink stays a symlink)


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str


def _collection(rel_parts: tuple[str, ...], root: Path, markers: set[Path]) -> str:
    folders = rel_parts[:-1]
    for depth in range(len(folders), 0, -1):
        if root.joinpath(*folders[:depth]) in markers:
            return "/".join(folders[:depth])
    return folders[0] if folders else ""


def scan(root: Path, max_bytes: int) -> tuple[list[PageFile], list[Skipped]]:
    """Pages under ``root`` sorted by id, and the files skipped with the reason why."""
    root = Path(root)
    real_root = root.resolve()
    pages: list[PageFile] = []
    skipped: list[Skipped] = []
    markers: set[Path] = set()
    candidates: list[Path] = []
    for folder, dirs, files in os.walk(root):  # followlinks=False: loops cannot recur
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if MARKER in files:
            markers.add(Path(folder))
        candidates += [Path(folder, f) for f in files if f.endswith(".md") and f[0] != "."]
    for path in candidates:
        rel = path.relative_to(root)
        try:
            real = path.resolve(strict=True)
            size = real.stat().st_size
        except (OSError, RuntimeError) as exc:  # dangling or looping symlink
            skipped.append(Skipped(rel.as_posix(), f"unreadable link or file: {exc}"))
            continue
        if not real.is_relative_to(real_root):
            skipped.append(Skipped(rel.as_posix(), f"links outside the library, to {real}"))
            continue
        if not real.is_file():
            continue
        if size > max_bytes:
            skipped.append(
                Skipped(
                    rel.as_posix(),
                    f"{size / 1e6:.1f} MB is over the {max_bytes / 1e6:.1f} MB page limit "
                    "(raise HERON_LIBRARY_MAX_PAGE_BYTES to index it)",
                )
            )
            continue
        page_id = rel.with_suffix("").as_posix()
        pages.append(PageFile(page_id, _collection(rel.parts, root, markers), path))
    pages.sort(key=lambda p: p.id)
    return pages, skipped


def read_text(page: PageFile) -> tuple[str | None, str | None]:
    """``(text, warning)``: ``None`` text for a binary file; bad UTF-8 is replaced."""
    data = page.path.read_bytes()
    if b"\x00" in data[:_SNIFF]:
        return None, "binary file (NUL bytes), skipped"
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        warning = (
            f"not valid UTF-8 (byte {data[exc.start]:#04x} at offset {exc.start}); indexed "
            "with replacement characters. Re-encode it, e.g. iconv -f latin1 -t utf-8"
        )
        return data.decode("utf-8", "replace").removeprefix("\ufeff"), warning
