"""heron.libraries.upload: files added to a library's folder and indexed alone, removed
with their records; bounds, types told by content, symlinks and contexts refused."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from heron.errors import InputError, NotFound
from heron.libraries import add_library, index_library, search
from heron.libraries.state import library_state
from heron.libraries.upload import (
    NewFile,
    UploadRefused,
    add_files,
    content_error,
    new_library,
    remove_file,
)
from heron.settings import Settings
from heron.store import SQLiteStore
from tests.libraries import documents

VPN = b"# VPN\n\nThe VPN password rotates every 90 days; ask the help desk for a new one.\n"
LUNCH = b"# Lunch\n\nThe canteen opens at noon on weekdays and serves soup on Fridays.\n"


def pages_of(store: SQLiteStore, name: str = "lib") -> set[str]:
    return {i.rsplit("#", 1)[0] for i in store.ids(name)}


@pytest.fixture
def lib(settings: Settings, store: SQLiteStore, make_library: Callable[..., Path]) -> Path:
    root = make_library()
    add_library("lib", str(root), settings)
    assert index_library("lib", store, settings=settings).error is None
    return root


def office(*parts: str) -> bytes:
    """A zip with ``[Content_Types].xml`` and the given part names (an OOXML package's
    shape)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as package:
        package.writestr("[Content_Types].xml", "<Types/>")
        for part in parts:
            package.writestr(part, "<x/>")
    return buffer.getvalue()


def test_files_land_in_the_folder_and_only_they_are_read(
    settings: Settings, store: SQLiteStore, lib: Path
) -> None:
    # An edit on disk since the last index: an upload reads only its own files, so this
    # page is left for the next heron index.
    (lib / "tasks" / "rollback.md").write_text("# Rollback\n\nChanged on disk.\n")
    stages: list[str] = []

    def stage(name: str, total: int | None) -> Callable[[int], None]:
        stages.append(name)
        return lambda n: None

    report = add_files(
        "lib",
        [NewFile("vpn.md", VPN), NewFile("C:\\Users\\me\\Lunch.MD", LUNCH)],
        store,
        settings,
        under="office/faq",
        stages=stage,
    )
    assert [f.path for f in report.files] == ["office/faq/vpn.md", "office/faq/Lunch.md"]
    assert (lib / "office/faq/vpn.md").read_bytes() == VPN
    assert report.index is not None
    assert (report.index.added, report.index.unchanged, report.index.changed) == (2, 0, 0)
    assert report.index.pages == 5  # the library's, not the run's
    assert "pages" in stages and "chunks" in stages
    assert pages_of(store) >= {"office/faq/vpn", "office/faq/Lunch", "tasks/rollback"}
    assert "Changed on disk" not in store.get("lib", "tasks/rollback#0").text
    found = search(
        "how often does the VPN password rotate", store, settings=settings, library="lib"
    )
    assert found[0].page == "office/faq/vpn"
    # The next full run finds only the page edited on disk changed.
    again = index_library("lib", store, settings=settings)
    assert (again.changed, again.added, again.unchanged) == (1, 0, 4)


def test_a_bad_file_is_named_and_the_others_are_added(
    settings: Settings, store: SQLiteStore, lib: Path
) -> None:
    files = [
        NewFile("vpn.md", VPN),
        NewFile("report.md", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\x00"),  # a PDF named .md
        NewFile("notes.exe", b"MZ\x90\x00"),
        NewFile(".hidden.md", LUNCH),
        NewFile("vpn.md", VPN),  # twice in one request
    ]
    report = add_files("lib", files, store, settings)
    assert [f.ok for f in report.files] == [True, False, False, False, False]
    errors = [f.error or "" for f in report.refused]
    assert errors[0].startswith("report.md: it is a PDF, not UTF-8 text")
    assert "content decides its type" in errors[0]
    assert errors[1].startswith("notes.exe: Heron indexes .md")
    assert "hidden" in errors[2]
    assert "given twice" in errors[3]
    assert not (lib / "report.md").exists() and not (lib / "notes.exe").exists()
    assert pages_of(store) == {"concepts/pods", "concepts/secrets", "tasks/rollback", "vpn"}


def test_an_existing_file_is_kept_unless_replaced(
    settings: Settings, store: SQLiteStore, lib: Path
) -> None:
    kept = (lib / "tasks/rollback.md").read_bytes()
    report = add_files("lib", [NewFile("rollback.md", VPN)], store, settings, under="tasks")
    assert "exists in library 'lib'; it is kept" in (report.files[0].error or "")
    assert (lib / "tasks/rollback.md").read_bytes() == kept and report.index is None
    report = add_files(
        "lib", [NewFile("rollback.md", VPN)], store, settings, under="tasks", replace=True
    )
    assert report.files[0].replaced and (lib / "tasks/rollback.md").read_bytes() == VPN
    assert report.index is not None and report.index.changed == 1
    assert "VPN" in store.get("lib", "tasks/rollback#0").text


def test_bounds_refuse_the_request_or_the_file(
    settings: Settings, store: SQLiteStore, lib: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERON_LIBRARY_UPLOAD_MAX_FILES", "2")
    monkeypatch.setenv("HERON_LIBRARY_UPLOAD_MAX_BYTES", "1000")
    monkeypatch.setenv("HERON_LIBRARY_UPLOAD_MAX_FILE_BYTES", "300")
    bounded = Settings()
    many = [NewFile(f"p{n}.md", VPN) for n in range(3)]
    with pytest.raises(UploadRefused, match="3 files at once is over the limit of 2"):
        add_files("lib", many, store, bounded)
    with pytest.raises(UploadRefused, match="HERON_LIBRARY_UPLOAD_MAX_BYTES"):
        add_files("lib", [NewFile("a.md", b"# A\n" * 200), NewFile("b.md", b"# B\n" * 200)],
                  store, bounded)  # fmt: skip
    report = add_files("lib", [NewFile("big.md", b"# Big\n" * 100), NewFile("vpn.md", VPN)],
                       store, bounded)  # fmt: skip
    assert "600 bytes is over the 300-byte limit (HERON_LIBRARY_UPLOAD_MAX_FILE_BYTES)" in (
        report.files[0].error or ""
    )
    assert report.files[1].ok
    assert sorted(p.name for p in lib.iterdir()) == ["concepts", "tasks", "vpn.md"]
    with pytest.raises(UploadRefused, match="No files given"):
        add_files("lib", [], store, bounded)


def test_symlinks_in_the_library_are_never_written_through(
    settings: Settings, store: SQLiteStore, lib: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "target.md").write_text("# Theirs\n")
    (lib / "linked").symlink_to(outside)  # a folder
    (lib / "pods.md").symlink_to(outside / "target.md")  # a file
    report = add_files("lib", [NewFile("new.md", VPN)], store, settings, under="linked/sub")
    assert "goes through the symlink 'linked'" in (report.files[0].error or "")
    replaced = add_files("lib", [NewFile("pods.md", VPN)], store, settings, replace=True)
    assert "is a symlink" in (replaced.files[0].error or "")
    created = add_files("lib", [NewFile("pods.md", VPN)], store, settings)
    assert "exists" in (created.files[0].error or "")
    assert sorted(p.name for p in outside.iterdir()) == ["target.md"]
    assert (outside / "target.md").read_text() == "# Theirs\n"
    with pytest.raises(InputError, match="is a symlink; not removed"):
        remove_file("lib", "pods.md", store, settings)
    assert (outside / "target.md").exists()
    with pytest.raises(InputError, match="hidden or a step up"):
        add_files("lib", [NewFile("a.md", VPN)], store, settings, under="../outside")


def test_removing_a_file_drops_its_records_and_nothing_else(
    settings: Settings, store: SQLiteStore, lib: Path
) -> None:
    add_files("lib", [NewFile("vpn.md", VPN), NewFile("lunch.md", LUNCH)], store, settings)
    (lib / "Old.MD").write_bytes(LUNCH)
    index_library("lib", store, settings=settings)
    assert remove_file("lib", "Old.MD", store, settings)["page"] == "Old"
    gone = remove_file("lib", "vpn.md", store, settings)
    assert gone["page"] == "vpn" and gone["index"]["removed"] == 1
    assert not (lib / "vpn.md").exists()
    assert pages_of(store) == {"concepts/pods", "concepts/secrets", "tasks/rollback", "lunch"}
    assert "vpn" not in library_state(store, "lib").pages
    with pytest.raises(NotFound, match=r"No file vpn\.md in library 'lib'"):
        remove_file("lib", "vpn.md", store, settings)
    (lib / "notes.yaml").write_text("a: b\n")
    with pytest.raises(InputError, match="is no page of library 'lib'"):
        remove_file("lib", "notes.yaml", store, settings)
    with pytest.raises(InputError, match="hidden or a step up"):
        remove_file("lib", "concepts/.collection", store, settings)
    assert (lib / "notes.yaml").exists()


def test_git_and_builtin_libraries_and_api_folders_are_refused(
    settings: Settings, store: SQLiteStore, lib: Path, tmp_path: Path
) -> None:
    add_library("remote", "https://github.com/kubernetes/website.git", settings)
    with pytest.raises(UploadRefused, match=r"git repository .* lost at the next index"):
        add_files("remote", [NewFile("a.md", VPN)], store, settings)
    with pytest.raises(UploadRefused, match="under HERON_LIBRARY_ROOTS"):
        add_files("lib", [NewFile("a.md", VPN)], store, settings, caller="api")
    with pytest.raises(UploadRefused, match="under HERON_LIBRARY_ROOTS"):
        remove_file("lib", "tasks/rollback.md", store, settings, caller="api")
    rooted = settings.model_copy(
        update={"library": settings.library.model_copy(update={"roots": [tmp_path]})}
    )
    assert add_files("lib", [NewFile("a.md", VPN)], store, rooted, caller="api").files[0].ok


def test_a_context_adds_to_its_own_library_only(
    store: SQLiteStore, make_library: Callable[..., Path], tmp_path: Path, home: Path
) -> None:
    specs = {n: {"libraries_file": str(tmp_path / f"{n}.txt")} for n in ("alpha", "beta")}
    settings = Settings(contexts=specs, library={"default_docs": False, "roots": [tmp_path]})
    alpha, beta = settings.in_context("alpha"), settings.in_context("beta")
    add_library("alpha-docs", str(make_library(name="alpha")), alpha)
    for who in (beta, settings):  # another context, and the default one
        with pytest.raises(NotFound, match="No library 'alpha-docs'"):
            add_files("alpha-docs", [NewFile("a.md", VPN)], store, who, caller="api")
        with pytest.raises(NotFound, match="No library 'alpha-docs'"):
            remove_file("alpha-docs", "tasks/rollback.md", store, who, caller="api")
    assert not (tmp_path / "alpha" / "a.md").exists()
    report = add_files("alpha-docs", [NewFile("a.md", VPN)], store, alpha, caller="api")
    assert report.files[0].ok and (tmp_path / "alpha" / "a.md").exists()
    assert "a" in pages_of(store, "alpha-docs")


def test_content_decides_the_type() -> None:
    assert content_error(".pdf", b"%PDF-1.4\n...") is None
    assert content_error(".pdf", b"# not a pdf") == "it is text"
    assert content_error(".docx", office("word/document.xml")) is None
    assert content_error(".pptx", office("ppt/presentation.xml")) is None
    assert content_error(".xlsx", office("xl/workbook.xml")) is None
    assert "it is a .xlsx file, not a .docx" in (content_error(".docx", office("xl/a.xml")) or "")
    plain = io.BytesIO()
    with zipfile.ZipFile(plain, "w") as archive:
        archive.writestr("a.txt", "x")
    assert "no [Content_Types].xml" in (content_error(".docx", plain.getvalue()) or "")
    assert "damaged zip" in (content_error(".xlsx", b"PK\x03\x04" + b"\x00" * 40) or "")
    assert content_error(".csv", "name,city\nJoão,Lisboa\n".encode()) is None
    assert "not UTF-8 text" in (content_error(".txt", "João".encode("latin-1")) or "")
    assert "zip archive" in (content_error(".html", office("word/d.xml")) or "")
    old = content_error(".docx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 64) or ""
    assert "an old Office file (.doc, .ppt, .xls: save it as .docx" in old


def test_documents_are_read_before_they_are_written(
    settings: Settings, store: SQLiteStore, lib: Path
) -> None:
    given = [
        NewFile("vpn.pdf", documents.pdf([["The VPN password rotates every 90 days."]])),
        NewFile("locked.pdf", documents.pdf([["Secret plans."]], password="x")),
        NewFile("broken.docx", office("word/document.xml")),  # a package with no document
        NewFile("fake.pdf", VPN),
    ]
    report = add_files("lib", given, store, settings)
    assert [f.ok for f in report.files] == [True, False, False, False]
    locked, broken, fake = (f.error or "" for f in report.refused)
    assert locked.startswith("locked.pdf: ") and "encrypted" in locked.lower()
    assert broken.startswith("broken.docx: ")
    assert fake.startswith("fake.pdf: it is text")
    assert sorted(p.name for p in lib.glob("*.*")) == ["vpn.pdf"]
    found = search(
        "how often does the VPN password rotate", store, settings=settings, library="lib"
    )
    assert found[0].page == "vpn" and found[0].pages == (1, 1)


def test_a_new_library_is_an_empty_folder_under_the_first_root(
    settings: Settings, store: SQLiteStore, tmp_path: Path
) -> None:
    with pytest.raises(UploadRefused, match="none is set"):
        new_library("team", settings)
    rooted = settings.model_copy(
        update={"library": settings.library.model_copy(update={"roots": [tmp_path / "roots"]})}
    )
    with pytest.raises(UploadRefused, match="does not exist"):
        new_library("team", rooted)
    (tmp_path / "roots").mkdir()
    made = new_library("team", rooted)
    assert made.source == str(tmp_path / "roots" / "team") and not any(Path(made.source).iterdir())
    assert add_files("team", [NewFile("vpn.md", VPN)], store, rooted, caller="api").files[0].ok
    (tmp_path / "roots" / "taken").mkdir()  # someone's folder: never taken over
    with pytest.raises(InputError, match="exists already"):
        new_library("taken", rooted)
    with pytest.raises(InputError, match="Invalid library name"):
        new_library("../up", rooted)
    add_library("listed", str(tmp_path / "roots" / "taken"), rooted)
    with pytest.raises(InputError, match="Library 'listed' exists"):
        new_library("listed", rooted)
    assert not (tmp_path / "roots" / "listed").exists()  # the folder it made is gone again


def test_a_pdf_is_bounded_by_the_document_limit_a_page_by_the_page_limit(
    store: SQLiteStore, lib: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.libraries.test_readers import MANUAL

    monkeypatch.setenv("HERON_LIBRARY_MAX_PAGE_BYTES", str(len(MANUAL) - 1))
    bounded = Settings()
    page = NewFile("notes.md", b"# Notes\n" + b"word " * len(MANUAL))
    report = add_files("lib", [NewFile("manual.pdf", MANUAL), page], store, bounded)
    assert report.files[0].ok  # over the page limit, well within a document's
    assert "(HERON_LIBRARY_MAX_PAGE_BYTES)" in (report.files[1].error or "")
    assert (lib / "manual.pdf").read_bytes() == MANUAL and not (lib / "notes.md").exists()
