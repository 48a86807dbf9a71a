"""Files added to a library and removed from it: what the page's drag and drop, the
``/upload`` route, ``library.add_files`` and ``heron library add-files`` all call.

>>> add_files("handbook", [NewFile("vpn.md", b"# VPN\\n...")], store, settings)  # doctest: +SKIP
UploadReport(library='handbook', files=[Added(name='vpn.md', path='vpn.md', ...)], ...)
>>> remove_file("handbook", "vpn.md", store, settings)                        # doctest: +SKIP

**Where files go.** Into the library's own folder (under ``folder``, a path below it,
made if missing), so the folder stays the one source of the library: ``heron index``
reads them as any other page, and a backup of the folder holds them. A **git library is
refused**: each sync resets its checkout to the remote (``reset --hard``, ``clean``), so
a file written there would be gone at the next ``heron index`` and would never be in the
repository its readers share; commit the files there, or add them to a folder library.
Heron's own docs (``heron``) are refused too. Over the API (``caller="api"``) the
library's folder must be under ``HERON_LIBRARY_ROOTS``, as for ``library.add``: a key
may write and delete files only where the operator let the API name folders, and not in
a library another context's list shares.

**Bounds.** At most ``HERON_LIBRARY_UPLOAD_MAX_FILES`` files and
``HERON_LIBRARY_UPLOAD_MAX_BYTES`` bytes at once (past either the whole request is
refused, nothing written), each file at most ``HERON_LIBRARY_UPLOAD_MAX_FILE_BYTES``
and the indexer's limit for its kind (``file_limit``: a text page's
``HERON_LIBRARY_MAX_PAGE_BYTES``, a PDF's or Office file's
``HERON_LIBRARY_MAX_DOCUMENT_BYTES``; a larger one would never be indexed).

**Type by content, not by name** (``content_error``). A file's name must end in one of
``heron.libraries.scan.SUFFIXES`` (as it is when the upload runs: the pages the indexer
reads), and its bytes must be that kind: ``%PDF-`` in the first KiB of a ``.pdf``; a zip
holding ``[Content_Types].xml`` and ``word/`` (``.docx``), ``ppt/`` (``.pptx``) or
``xl/`` (``.xlsx``) parts; UTF-8 text with no NUL byte for Markdown, ``.txt``, ``.csv``
and ``.html``. A suffix in ``SUFFIXES`` whose content this module cannot tell is
refused, never taken on its name. An upper-case suffix (``Report.PDF``) is stored in
lower case, the spelling the scan reads.

**Read before written**: each file goes through its format's reader
(``heron.libraries.readers``) as the indexer will read it, so one the reader refuses (an
encrypted PDF, a damaged zip, a reader whose extra is not installed) is refused by name
with the reader's reason, never written to sit unindexed in the folder.

**Written race-free** (``heron.core.files``): each folder opened from its parent without
following a symlink, the file written whole beside its name and then linked there (a new
file: nothing there is ever replaced, ``replace=False``) or renamed over it (a regular
file, ``replace=True``); a symlink, folder or special file in the way is refused and
stays. **Each file on its own**: a refused one is reported with its name and why, and
the others are written and indexed; nothing already in the library is touched but a
file replaced on purpose.

**Indexed incrementally**: one ``index_library(only=...)`` over the pages written
(``stages`` watches it), none of the library's other pages read again; the run waits
for an indexer already running on the library. ``remove_file`` deletes one page's file
and its records the same way.
"""

from __future__ import annotations

import contextlib
import io
import os
import unicodedata
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from heron.core.files import (
    PathRefused,
    create_file,
    folder,
    open_folder,
    remove_regular,
    replace_file,
)
from heron.errors import InputError, NotFound
from heron.libraries.config import (
    Caller,
    Library,
    add_library,
    check_name,
    elsewhere,
    get_library,
)
from heron.libraries.index import LibraryIndexReport, Stages, index_library, page_id
from heron.libraries.readers import Unreadable, format_of, read
from heron.libraries.scan import SUFFIXES, matches, size_limit
from heron.settings import LibrarySettings, Settings
from heron.store import Store

#: Bytes of a name (one path component) Heron writes: filesystems take 255.
MAX_NAME_BYTES = 200
#: Where a PDF's ``%PDF-`` header may be (readers accept junk before it, as Acrobat does).
PDF_WINDOW = 1024
#: The Office Open XML suffixes and the part folder each one's package holds.
OFFICE_PARTS = {".docx": "word/", ".pptx": "ppt/", ".xlsx": "xl/"}
#: Suffixes read as UTF-8 text.
TEXT = frozenset({".md", ".mdx", ".markdown", ".txt", ".csv", ".html", ".htm", ".xhtml"})


class UploadRefused(InputError):
    """The whole request is refused (too many files, too many bytes, a library files
    cannot be added to): nothing was written."""


@dataclass(frozen=True)
class NewFile:
    """A file to add: its name as the client gave it (only its last component is kept)
    and its bytes."""

    name: str
    data: bytes


@dataclass(frozen=True)
class Outcome:
    """What became of one file: written at ``path`` (from the library's root) as the page
    ``page``, or refused with ``error`` (its name, and why, and what to do)."""

    name: str
    bytes: int
    path: str | None = None
    page: str | None = None
    replaced: bool = False
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"ok": self.ok}


@dataclass
class UploadReport:
    """Every file's ``Outcome`` in the order given, and the index run over those written
    (``None`` when none was)."""

    library: str
    files: list[Outcome] = field(default_factory=list)
    index: LibraryIndexReport | None = None

    @property
    def added(self) -> list[Outcome]:
        return [f for f in self.files if f.ok]

    @property
    def refused(self) -> list[Outcome]:
        return [f for f in self.files if not f.ok]

    def to_dict(self) -> dict[str, Any]:
        return {
            "library": self.library,
            "files": [f.to_dict() for f in self.files],
            "added": len(self.added),
            "refused": len(self.refused),
            "index": None if self.index is None else self.index.to_dict(),
        }


def _kind_of(data: bytes) -> str:
    """What ``data`` looks like, for an error's words."""
    if data[:PDF_WINDOW].find(b"%PDF-") >= 0:
        return "a PDF"
    if data.startswith(b"PK\x03\x04"):
        return "a zip archive (an Office file?)"
    if data.startswith(b"\xd0\xcf\x11\xe0"):
        return "an old Office file (.doc, .ppt, .xls: save it as .docx, .pptx or .xlsx)"
    if b"\x00" in data[:8000]:
        return "binary data"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return "text that is not UTF-8"
    return "text"


def content_error(suffix: str, data: bytes) -> str | None:
    """Why ``data`` is not the kind of file ``suffix`` names, or ``None`` when it is.

    >>> content_error(".pdf", b"%PDF-1.7 ...")
    >>> content_error(".md", b"%PDF-1.7\\x00...")
    'it is a PDF, not UTF-8 text'
    """
    if suffix == ".pdf":
        return None if data[:PDF_WINDOW].find(b"%PDF-") >= 0 else f"it is {_kind_of(data)}"
    if suffix in OFFICE_PARTS:
        return _office_error(suffix, data)
    if suffix in TEXT:
        if b"\x00" not in data:
            try:
                data.decode("utf-8")
                return None
            except UnicodeDecodeError:
                pass
        return f"it is {_kind_of(data)}, not UTF-8 text"
    return f"Heron cannot tell a {suffix} file by its content yet, so it takes none by name"


def _office_error(suffix: str, data: bytes) -> str | None:
    """A ``.docx``/``.pptx``/``.xlsx`` is a zip whose central directory (read, never
    inflated: a zip bomb costs nothing here) names ``[Content_Types].xml`` and parts in
    the suffix's folder."""
    if not data.startswith(b"PK\x03\x04"):
        return f"it is {_kind_of(data)}, not a {suffix} (a zip package)"
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            names = package.namelist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        return f"it is a damaged zip ({exc}); save it again from its program"
    if "[Content_Types].xml" not in names:
        return f"it is a zip archive, not a {suffix} (no [Content_Types].xml)"
    wanted = OFFICE_PARTS[suffix]
    if not any(n.startswith(wanted) for n in names):
        found = sorted(
            {n.split("/", 1)[0] + "/" for n in names if "/" in n} & set(OFFICE_PARTS.values())
        )
        other = next((s for s, part in OFFICE_PARTS.items() if part in found), None)
        what = f"a {other} file" if other else "an Office package of another kind"
        return f"it is {what}, not a {suffix} (no {wanted} parts); rename it or save it as {suffix}"
    return None


def _suffix(name: str) -> str | None:
    """The suffix of ``SUFFIXES`` the name ends in, any case: ``Report.PDF`` -> ``.pdf``."""
    lower = name.lower()
    return next((s for s in SUFFIXES if lower.endswith(s) and len(lower) > len(s)), None)


def _parts(path: str, what: str) -> list[str]:
    """``path`` (``/``-separated, from the library's root) as names, each one a name the
    library's pages may be under: not empty, ``.`` or ``..``, not hidden (``.ai``,
    ``.git``: the scan skips them), no control character, at most ``MAX_NAME_BYTES``."""
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    for part in parts:
        if part in (".", "..") or part.startswith("."):
            raise InputError(
                f"{what} {path!r}: {part!r} is hidden or a step up, where no page of a "
                "library is; give a path inside the library, e.g. guides/onboarding."
            )
        if any(unicodedata.category(c).startswith("C") for c in part):
            raise InputError(f"{what} {path!r} holds a control character; rename it.")
        if len(part.encode()) > MAX_NAME_BYTES:
            raise InputError(f"{what} {path!r}: a name is over {MAX_NAME_BYTES} bytes; shorten it.")
    return parts


def writable_root(library: Library, settings: Settings, caller: Caller) -> Path:
    """The folder files are added to and removed from, or ``UploadRefused`` naming why
    not and what to do (the module docstring's rules)."""
    name = library.name
    if library.builtin:
        raise UploadRefused(
            f"{name!r} is Heron's own docs; add files to a library of yours (heron library "
            "add NAME FOLDER)."
        )
    if library.is_git:
        raise UploadRefused(
            f"Library {name!r} is the git repository {library.source}: each sync resets its "
            "checkout to the remote, so a file added here would be lost at the next index "
            "and never be in the repository. Commit the files there, or add them to a folder "
            "library: heron library add NAME FOLDER"
        )
    root = Path(library.source)
    if not root.is_dir():
        raise UploadRefused(
            f"The folder of library {name!r}, {root}, does not exist; restore it, then add "
            "the files again."
        )
    if caller == "api":
        real = root.resolve()
        roots = [Path(r).expanduser().resolve() for r in settings.library.roots]
        if not any(real == r or real.is_relative_to(r) for r in roots):
            now = ", ".join(str(r) for r in roots) or "none set"
            raise UploadRefused(
                f"Files are added over the API only to libraries whose folder is under "
                f"HERON_LIBRARY_ROOTS (now: {now}); {root} of {name!r} is not. Set "
                "HERON_LIBRARY_ROOTS for the server, or add them on the machine: heron "
                f"library add-files {name} FILE..."
            )
        if elsewhere(name, settings):
            raise UploadRefused(
                f"Library {name!r} is shared with another context's library list, so files "
                "added here would be that context's too; add them on the machine: heron "
                f"library add-files {name} FILE..."
            )
    return root


def new_library(name: str, settings: Settings) -> Library:
    """A folder library made to add files to, as a team starts a knowledge base from the
    page: the folder ``name`` made empty in the first of ``HERON_LIBRARY_ROOTS`` (the
    folders the API may name), then added as ``library.add`` over the API adds one.
    ``UploadRefused`` without a root to make it in; ``InputError`` for a folder of that
    name already there (someone's: add it as it is with ``library.add``) or a name taken;
    the folder made is removed again when the library cannot be added."""
    check_name(name)
    if not settings.library.roots:
        raise UploadRefused(
            "A new library's folder is made under HERON_LIBRARY_ROOTS, and none is set; set "
            "it for the server (HERON_LIBRARY_ROOTS='[\"/srv/docs\"]'), or add an existing "
            "folder with: heron library add NAME FOLDER"
        )
    root = Path(settings.library.roots[0]).expanduser().resolve()
    try:
        fd = open_folder(root, [])
    except FileNotFoundError:
        raise UploadRefused(
            f"{root}, the first of HERON_LIBRARY_ROOTS, does not exist; make it, then try again."
        ) from None
    try:
        try:
            os.mkdir(name, 0o755, dir_fd=fd)
        except FileExistsError:
            raise InputError(
                f"{root / name} exists already; add it as it is (library.add with that "
                "folder), or choose another name."
            ) from None
        try:
            return add_library(name, str(root / name), settings, caller="api")
        except BaseException:
            with contextlib.suppress(OSError):
                os.rmdir(name, dir_fd=fd)  # empty: nothing but what was just made
            raise
    finally:
        os.close(fd)


def _check_bounds(files: Sequence[NewFile], library: LibrarySettings) -> None:
    if not files:
        raise UploadRefused("No files given; name at least one file to add.")
    most = library.upload_max_files
    if len(files) > most:
        raise UploadRefused(
            f"{len(files)} files at once is over the limit of {most} "
            "(HERON_LIBRARY_UPLOAD_MAX_FILES); add them in smaller groups. Nothing was written."
        )
    total, limit = sum(len(f.data) for f in files), library.upload_max_bytes
    if total > limit:
        raise UploadRefused(
            f"{total:,} bytes at once is over the limit of {limit:,} "
            "(HERON_LIBRARY_UPLOAD_MAX_BYTES); add them in smaller groups. Nothing was written."
        )


def file_limit(library: LibrarySettings, name: str) -> tuple[int, str]:
    """The largest file ``name`` that may be added, and the setting that says so: the
    upload's limit, or the indexer's for its kind where that is lower (a text page's
    ``HERON_LIBRARY_MAX_PAGE_BYTES``, a PDF's or an Office file's
    ``HERON_LIBRARY_MAX_DOCUMENT_BYTES``: ``heron.libraries.scan.size_limit``)."""
    upload = library.upload_max_file_bytes
    indexed, setting = size_limit(name, library.max_page_bytes, library.max_document_bytes)
    if indexed < upload:
        return indexed, setting
    return upload, "HERON_LIBRARY_UPLOAD_MAX_FILE_BYTES"


def _checked(
    given: NewFile, under: list[str], library: Library, settings: Settings
) -> tuple[str, str] | str:
    """``(name, path)`` of a file that may be written, or why it may not."""
    name = given.name.replace("\\", "/").rsplit("/", 1)[-1].strip()
    if not name:
        return f"{given.name!r}: no file name; give each file its name."
    try:
        _parts(name, "The file")
    except InputError as exc:
        return f"{name}: {exc}"
    suffix = _suffix(name)
    if suffix is None:
        kinds = ", ".join(SUFFIXES)
        return f"{name}: Heron indexes {kinds} files; this one's name ends otherwise."
    name = name[: -len(suffix)] + suffix  # Report.PDF is read as a .pdf: stored as one
    limit, setting = file_limit(settings.library, name)
    if len(given.data) > limit:
        return (
            f"{name}: {len(given.data):,} bytes is over the {limit:,}-byte limit ({setting}); "
            "split it, or raise the limit."
        )
    wrong = content_error(suffix, given.data)
    if wrong is not None:
        return f"{name}: {wrong}. Its content decides its type, not its name."
    fmt = format_of(name)  # one for every suffix of SUFFIXES
    if fmt is not None:
        try:  # read as the indexer will: an encrypted PDF or a damaged zip is refused now
            read(given.data, fmt)
        except Unreadable as exc:
            return f"{name}: {exc}"
    path = "/".join([*under, name])
    if library.include and not any(matches(path, g) for g in library.include):
        return (
            f"{name}: {path} is outside the library's include= globs "
            f"({', '.join(library.include)}), so it would not be indexed; add it under a "
            "folder they cover."
        )
    if any(matches(path, g) for g in library.exclude):
        return f"{name}: {path} matches the library's exclude= globs, so it would not be indexed."
    return name, path


def _write(root: Path, under: list[str], name: str, path: str, data: bytes, replace: bool) -> bool:
    """Write one file; whether it replaced one. ``PathRefused``, ``FileExistsError``."""
    with folder(root, under, create=True, path=path) as fd:
        if not replace:
            create_file(fd, name, data, path)
            return False
        try:
            os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            existed = False
        else:
            existed = True
        replace_file(fd, name, data, path)
        return existed


def check_upload(
    name: str,
    files: Sequence[NewFile],
    settings: Settings,
    *,
    under: str = "",
    caller: Caller = "local",
) -> tuple[Library, Path, list[str]]:
    """What ``add_files`` checks before it writes anything: the library (``NotFound``
    outside the settings' context), its folder (``UploadRefused``), ``under`` and the
    request's bounds; the library, its folder and ``under`` as names. A door that answers
    as it goes (the ``/upload`` route's events) calls it first, to answer an error with
    its status."""
    library = get_library(name, settings)
    root = writable_root(library, settings, caller)
    folders = _parts(under, "The folder")
    _check_bounds(files, settings.library)
    return library, root, folders


def add_files(
    name: str,
    files: Sequence[NewFile],
    store: Store,
    settings: Settings,
    *,
    under: str = "",
    replace: bool = False,
    caller: Caller = "local",
    stages: Stages | None = None,
    written: Callable[[Outcome], None] | None = None,
) -> UploadReport:
    """Add ``files`` to library ``name`` (of the settings' context: another's is
    ``NotFound``) in its folder ``under``, then index them. ``replace``: a file of the
    same name is replaced (else refused, and kept). ``written(outcome)`` is told of each
    file as it is written or refused, ``stages`` of the index run (``index_library``).
    ``UploadRefused`` when the request as a whole is refused (module docstring); one file
    refused is in the report, the rest added."""
    library, root, folders = check_upload(name, files, settings, under=under, caller=caller)
    report = UploadReport(library.name)
    taken: set[str] = set()
    for given in files:
        checked = _checked(given, folders, library, settings)
        if isinstance(checked, tuple) and checked[1] in taken:
            checked = f"{checked[0]}: given twice in one request; give each file once."
        if isinstance(checked, str):
            outcome = Outcome(given.name, len(given.data), error=checked)
        else:
            file_name, path = checked
            try:
                replaced = _write(root, folders, file_name, path, given.data, replace)
            except PathRefused as exc:
                outcome = Outcome(
                    given.name,
                    len(given.data),
                    error=f"{file_name}: {exc}; not written: files are added inside the "
                    "library's folder, never through a symlink or over something not a file.",
                )
            except FileExistsError:
                outcome = Outcome(
                    given.name,
                    len(given.data),
                    error=f"{file_name}: {path} exists in library {library.name!r}; it is kept. "
                    "Add it again with replace (--replace) to replace it.",
                )
            else:
                taken.add(path)
                outcome = Outcome(given.name, len(given.data), path, page_id(path), replaced)
        report.files.append(outcome)
        if written is not None:
            written(outcome)
    if report.added:
        report.index = index_library(
            library.name,
            store,
            settings=settings,
            stages=stages,
            only=[f.page for f in report.added if f.page],
            wait=True,
        )
    return report


def remove_file(
    name: str, path: str, store: Store, settings: Settings, *, caller: Caller = "local"
) -> dict[str, Any]:
    """Delete the page file ``path`` (from the root of library ``name``'s folder) and its
    records: ``{"library", "path", "page", "index"}``. A symlink or anything not a file
    there is refused and kept; a missing one is ``NotFound``."""
    library = get_library(name, settings)
    root = writable_root(library, settings, caller)
    parts = _parts(path, "The file")
    # Pages only (the suffixes the scan reads, in any case): never a marker or another file.
    if not parts or _suffix(parts[-1]) is None:
        raise InputError(
            f"{path!r} is no page of library {library.name!r}: give a file's path from the "
            f"library's root, ending in one of {', '.join(SUFFIXES)} (library.pages lists them)."
        )
    shown = "/".join(parts)
    try:
        with folder(root, parts[:-1], path=shown) as fd:
            remove_regular(fd, parts[-1], shown)
    except FileNotFoundError:
        raise NotFound(
            f"No file {shown} in library {library.name!r}; library.pages (or heron library "
            "status) lists its pages and their paths."
        ) from None
    except PathRefused as exc:
        raise InputError(
            f"{exc}; not removed: only a regular file of the library's folder, reached "
            "without a symlink, is removed."
        ) from None
    report = index_library(library.name, store, settings=settings, only=[page_id(shown)], wait=True)
    return {
        "library": library.name,
        "path": shown,
        "page": page_id(shown),
        "index": report.to_dict(),
    }
