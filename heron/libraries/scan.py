"""Finding a library's pages: its documents, their collections, and the files to skip.

A page is a file of a format ``heron.libraries.readers`` reads (``SUFFIXES``: Markdown,
PDF, Word, HTML, PowerPoint, Excel, CSV, plain text; the suffix in any case). Its id is
its path without the suffix, relative to the library root, with ``/`` separators:
``concepts/storage/volumes``; where two files would give one id (``a.md`` and
``a.pdf``), the first suffix in ``SUFFIXES`` wins and the other is skipped, said why.
Its collection is, in this order: the nearest folder above it that holds a
``.collection`` marker file (the name the marker gives, ``name = "guide"`` or
``name: guide``, else the folder's path); the folder under the library's collections
folder (``collections`` by default, the docs-repo layout: ``collections/guide/a/b.md``
is in ``guide``); its top-level folder; ``""`` for pages at the root. A marked folder
under the collections folder is named without it (``collections/guide/.collection``
gives ``guide``). Hidden files and folders
(``.git``, ``.ai``) are not pages. A library's ``include`` and ``exclude`` globs
(``heron.libraries.config``) are matched against the path from the root:
``matches("docs/a/b.md", "docs/**")`` is true, ``matches("docs/a/b.md", "docs/*.md")``
is not.

Nothing here follows a symlinked folder, so a symlink loop cannot trap the walk; a
symlinked file is read only when it resolves inside the library. Only regular files are
pages: a FIFO, socket or device is skipped, said why. Every file is read through
``heron.core.files`` (from the library's root, one folder at a time, no symlink
followed, checked as a regular file on the open descriptor, at most its size limit), so
a file swapped for a symlink, a FIFO or something larger after the scan is refused when
read, never followed, waited on or read whole. ``read_page`` reads one through its
format's reader; a file that reader refuses (an encrypted PDF, a damaged zip, a binary
file named ``.txt``) is skipped, said why, and nothing else is.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from heron.core.files import PathRefused, folder, kind_name, read_regular
from heron.libraries.parse import Page, document_page, parse_page
from heron.libraries.readers import READERS, Unreadable, format_of, read

MARKER = ".collection"
#: The docs-repo layout's folder of collections (a library's ``collections=`` option).
COLLECTIONS = "collections"
#: The suffixes of pages (lowercase), in the order that decides which of two same-named
#: files is the page: the readers' table's (``heron.libraries.readers.FORMATS``).
SUFFIXES = tuple(READERS)


@dataclass(frozen=True)
class PageFile:
    id: str
    collection: str
    path: Path  # as found under the root (a symlink stays a symlink)
    root: Path  # the library's root, resolved
    target: tuple[str, ...]  # the file read, as names from ``root`` (a link's, resolved)


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str


_MARKER_NAME = re.compile(r"""^\s*name\s*[:=]\s*["']?([^"'\s]+)["']?\s*$""", re.M)
#: A marker holding more than this is not read for a name (it is not a marker file).
_MARKER_BYTES = 4096


def marker_name(root: Path, parts: Sequence[str]) -> tuple[str | None, str | None]:
    """``(name, refused)``: the collection name the ``.collection`` file at ``parts``
    (from the resolved ``root``) gives, if it gives one; ``refused`` says why it was not
    read (a FIFO, a symlink ...)."""
    path = "/".join(parts)
    try:
        with folder(root, parts[:-1], path=path) as fd:
            data, _ = read_regular(fd, parts[-1], path, _MARKER_BYTES)
    except PathRefused as exc:
        what = kind_name(exc.kind)
        return None, f"{what}, not a marker file; the folder's collection is named by its path"
    except OSError:
        return None, None
    found = _MARKER_NAME.search(data[:_MARKER_BYTES].decode("utf-8", "replace"))
    return (found.group(1) if found else None), None


def _collection(
    rel_parts: tuple[str, ...], root: Path, markers: dict[Path, str | None], prefix: tuple[str, ...]
) -> str:
    folders = rel_parts[:-1]
    for depth in range(len(folders), 0, -1):
        marked = root.joinpath(*folders[:depth])
        if marked in markers:
            named = markers[marked]
            if named:
                return named
            inside = folders[len(prefix) : depth] if folders[: len(prefix)] == prefix else ()
            return "/".join(inside or folders[:depth])
    if len(folders) > len(prefix) and folders[: len(prefix)] == prefix:
        return folders[len(prefix)]
    return folders[0] if folders else ""


@lru_cache(maxsize=256)
def _glob(pattern: str) -> re.Pattern[str]:
    """A glob as a regular expression: ``**/`` any folders, ``*`` and ``?`` within one."""
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out)


def matches(path: str, pattern: str) -> bool:
    return _glob(pattern.strip("/")).fullmatch(path) is not None


def _wanted(path: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    if include and not any(matches(path, g) for g in include):
        return False
    return not any(matches(path, g) for g in exclude)


def _suffix(name: str) -> str | None:
    lower = name.lower()
    return next((s for s in SUFFIXES if lower.endswith(s) and len(lower) > len(s)), None)


def size_limit(name: str, max_bytes: int, max_document_bytes: int | None) -> tuple[int, str]:
    """The most bytes the file ``name`` may have to be read, and the setting that says so:
    ``max_document_bytes`` (``HERON_LIBRARY_MAX_DOCUMENT_BYTES``) for a PDF, Word,
    PowerPoint or Excel file, whose size is mostly images and packaging; ``max_bytes``
    (``HERON_LIBRARY_MAX_PAGE_BYTES``) for a text page, or for every file when
    ``max_document_bytes`` is ``None``."""
    fmt = format_of(name)
    if fmt is not None and fmt.packaged and max_document_bytes is not None:
        return max_document_bytes, "HERON_LIBRARY_MAX_DOCUMENT_BYTES"
    return max_bytes, "HERON_LIBRARY_MAX_PAGE_BYTES"


def scan(
    root: Path,
    max_bytes: int,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    collections: str = COLLECTIONS,
    max_document_bytes: int | None = None,
) -> tuple[list[PageFile], list[Skipped]]:
    """Pages under ``root`` sorted by id, and the files skipped with the reason why.
    A file outside ``include`` or inside ``exclude`` is not a page, and not reported.
    ``collections``: the folder whose sub-folders are collections (module docstring).
    A file over its limit (``size_limit``) is skipped, said why."""
    root = Path(root)
    real_root = root.resolve()
    pages: list[PageFile] = []
    skipped: list[Skipped] = []
    markers: dict[Path, str | None] = {}
    prefix = tuple(p for p in collections.split("/") if p)
    candidates: list[tuple[int, Path, str]] = []  # (rank of the suffix, path, page id)
    for where, dirs, files in os.walk(root):  # followlinks=False: loops cannot recur
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if MARKER in files:
            parts = (*Path(where).relative_to(root).parts, MARKER)
            markers[Path(where)], refused = marker_name(real_root, parts)
            if refused:
                skipped.append(Skipped("/".join(parts), refused))
        for name in files:
            suffix = _suffix(name)
            rel = Path(where, name).relative_to(root).as_posix()
            if suffix and name[0] != "." and _wanted(rel, include, exclude):
                candidates.append((SUFFIXES.index(suffix), Path(where, name), rel[: -len(suffix)]))
    owner: dict[str, str] = {}  # page id -> the file that is the page
    for _, path, page_id in sorted(candidates, key=lambda c: c[0]):
        rel = path.relative_to(root)
        if page_id in owner:
            skipped.append(Skipped(rel.as_posix(), f"the page {page_id} is {owner[page_id]}"))
            continue
        try:
            real = path.resolve(strict=True)
            info = real.stat()  # stat opens nothing: a FIFO cannot block it
        except (OSError, RuntimeError) as exc:  # dangling or looping symlink
            skipped.append(Skipped(rel.as_posix(), f"unreadable link or file: {exc}"))
            continue
        if not real.is_relative_to(real_root):
            skipped.append(Skipped(rel.as_posix(), f"links outside the library, to {real}"))
            continue
        if not stat.S_ISREG(info.st_mode):
            what = kind_name(stat.S_IFMT(info.st_mode))
            skipped.append(
                Skipped(rel.as_posix(), f"{what}, not a regular file; only regular files are pages")
            )
            continue
        limit, setting = size_limit(path.name, max_bytes, max_document_bytes)
        if info.st_size > limit:
            skipped.append(Skipped(rel.as_posix(), _too_big(info.st_size, limit, setting)))
            continue
        owner[page_id] = rel.as_posix()
        collection = _collection(rel.parts, root, markers, prefix)
        target = real.relative_to(real_root).parts
        pages.append(PageFile(page_id, collection, path, real_root, target))
    pages.sort(key=lambda p: p.id)
    return pages, skipped


def _too_big(size: int, limit: int, setting: str) -> str:
    return (
        f"{size / 1e6:.1f} MB is over the {limit / 1e6:.1f} MB limit (raise {setting} to index it)"
    )


def read_bytes(
    page: PageFile, max_bytes: int, max_document_bytes: int | None = None
) -> tuple[bytes | None, str | None]:
    """``(data, refused)``: ``None`` data, and why, for a file over its limit
    (``size_limit``) or one that is no longer a regular file inside the library (swapped
    since the scan). ``OSError`` when it cannot be read."""
    path = "/".join(page.target)
    limit, setting = size_limit(page.path.name, max_bytes, max_document_bytes)
    try:
        with folder(page.root, page.target[:-1], path=path) as fd:
            data, size = read_regular(fd, page.target[-1], path, limit)
    except PathRefused as exc:
        return None, (
            f"{exc}; not read: pages are regular files inside the library, reached without "
            "a symlink"
        )
    if len(data) > limit:
        return None, _too_big(max(size, len(data)), limit, setting)
    return data, None


def read_page(
    page: PageFile,
    max_bytes: int,
    max_document_bytes: int | None = None,
    ocr: str | None = None,
) -> tuple[Page | None, str | None]:
    """``(page, refused)``: the file read through its format's reader, or ``None`` and
    why not (``read_bytes``'s reasons, or the reader's: encrypted, damaged, binary ...).
    What the reader warned of (bad UTF-8 ...) is in the page's ``warnings``. ``ocr``:
    tesseract's languages for a PDF's scanned pages (``heron.libraries.readers.read``).
    ``OSError`` when the file cannot be read."""
    data, refused = read_bytes(page, max_bytes, max_document_bytes)
    fmt = format_of(page.path.name)
    if data is None or fmt is None:
        return None, refused or "no reader for this file's suffix"
    try:
        doc = read(data, fmt, ocr)
    except Unreadable as exc:
        return None, f"cannot be read as {fmt.name}: {exc}"
    if fmt.markdown:
        parsed = parse_page("\n".join(doc.lines), page.id)
        parsed.warnings[:0] = doc.warnings
        return parsed, None
    return document_page(doc, page.id), None
