"""Every reader on a small document of its format (made by that format's own writer,
``tests/libraries/documents.py``), then a folder of them indexed as a library: headings,
tables and pages kept, a hit cited to its page, a scan named, a file that cannot be read
refused by name while the rest is indexed."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from heron.libraries import add_library, index_library, library, search
from heron.libraries.library import read_original, statuses
from heron.libraries.parse import document_page
from heron.libraries.readers import Document, Unreadable, format_of, ocr, read
from heron.libraries.readers.base import TABLE_PART_CHARS
from heron.libraries.scan import read_page, scan
from heron.libraries.search import source_location
from heron.settings import Settings
from heron.store import SQLiteStore
from tests.ci import missing
from tests.libraries import documents
from tests.libraries.conftest import write_pages


def read_as(name: str, data: bytes | str) -> Document:
    fmt = format_of(name)
    assert fmt is not None, name
    return read(data.encode() if isinstance(data, str) else data, fmt)


#: Enough words on page 1 that its section is a chunk of its own (256 tokens a chunk).
INTRO = [
    f"Paragraph {n} of the introduction explains how licences are counted per seat."
    for n in range(24)
]
MANUAL = documents.pdf(
    [
        ["Install the tool first.", "# a hash, not a heading", *INTRO],
        ["Intro text that ends chapter one.", "2.1 Setup", "Run setup with sudo and reboot."],
        None,  # a scanned page: an image, no text
        [],  # a blank page: no image, no text, not a scan
    ],
    outline=[("Guide", 1, 0), ("Setup", 2, 1)],
    title="Tool manual",
)


def test_pdf_pages_bookmarks_and_scans() -> None:
    doc = read_as("Manual.PDF", MANUAL)
    assert doc.title == "Tool manual"
    placed = [(line, page) for line, page in zip(doc.lines, doc.pages, strict=True) if line]
    assert placed == [
        ("# Guide", 1),  # not printed on the page: at its top
        ("Install the tool first.", 1),
        ("\\# a hash, not a heading", 1),
        *((line, 1) for line in INTRO),
        ("Intro text that ends chapter one.", 2),  # above the section: in the one before
        ("## Setup", 2),  # on the line that prints it
        ("Run setup with sudo and reboot.", 2),
    ]
    assert doc.scanned == [3]
    page = document_page(doc, "manual")
    setup = page.lines.index("## Setup") + 1
    assert page.page_range(setup, setup + 1) == (2, 2)


def test_pdf_without_bookmarks_reads_as_a_reader_sees_it() -> None:
    """Running header and page numbers out, headings from type size (a wrapped one made
    one), a blank line where a paragraph ends (a gap) and none inside one."""
    guide = documents.pdf(
        [
            ["Field guide", ("Wading", 20), ("birds", 20), ("Herons", 16),
             "Herons wade in shallow water to catch fish and frogs", "with their long bills.",
             "", "Egrets are white herons.", "Page 1 of 3"],
            ["Field guide", ("Shore birds", 20), "Plovers run along the beach.", "Page 2 of 3"],
            ["Field guide", "Sandpipers probe the mud.", "Page 3 of 3"],
        ]
    )  # fmt: skip
    doc = read_as("guide.pdf", guide)
    assert list(zip(doc.lines, doc.pages, strict=True)) == [
        ("# Wading birds", 1), ("", 1), ("## Herons", 1), ("", 1),
        ("Herons wade in shallow water to catch fish and frogs", 1),
        ("with their long bills.", 1), ("", 1),
        ("Egrets are white herons.", 1), ("", 1),
        ("# Shore birds", 2), ("", 2), ("Plovers run along the beach.", 2), ("", 2),
        ("Sandpipers probe the mud.", 3), ("", 3),
    ]  # fmt: skip


def test_pdf_text_set_large_and_a_line_on_two_pages_stay_text() -> None:
    """Four lines in a large type are a callout, not a heading (nor is its tail); a line
    at the top of both pages of a two-page PDF may be the text's own: kept."""
    quote = [("Big quote one", 20), ("Big quote two", 20), ("Big quote three", 20),
             ("Big quote four", 20)]  # fmt: skip
    notes = documents.pdf(
        [
            ["Notes", "Ordinary body text of the first page.", *quote,
             "More body text here on page one, a longer line."],
            ["Notes", "Second page body text, also a longer line."],
        ]
    )  # fmt: skip
    assert [line for line in read_as("notes.pdf", notes).lines if line] == [
        "Notes", "Ordinary body text of the first page.", *(text for text, _ in quote),
        "More body text here on page one, a longer line.",
        "Notes", "Second page body text, also a longer line.",
    ]  # fmt: skip


def test_pdf_encrypted_or_damaged_is_refused_saying_why() -> None:
    with pytest.raises(Unreadable, match="encrypted: the PDF needs a password"):
        read_as("locked.pdf", documents.pdf([["secret plans"]], password="pw"))
    with pytest.raises(Unreadable, match="not a readable PDF"):
        read_as("cut.pdf", MANUAL[: len(MANUAL) // 3])


def test_word_headings_lists_and_tables() -> None:
    doc = read_as("onboarding.docx", documents.word())
    lines = [line for line in doc.lines if line]
    assert doc.title == "Onboarding guide" and doc.pages == []
    assert "# Laptop setup" in lines and "## Who to ask" in lines
    assert "- Install the VPN client" in lines
    at = lines.index("| Topic | Contact |")
    assert lines[at : at + 4] == [
        "| Topic | Contact |",
        "| --- | --- |",
        "| Payroll | Dana |",
        "| Badges | Ike |",
    ]
    assert "\\# not a heading, a hash in the text" in lines


def test_office_files_that_are_not_packages_are_refused() -> None:
    ole2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 512  # an encrypted .docx is OLE2
    with pytest.raises(Unreadable, match="encrypted or an old binary Word file"):
        read_as("locked.docx", ole2)
    with pytest.raises(Unreadable, match="not a Excel file: not a zip package"):
        read_as("fake.xlsx", "Host,Role\nweb,frontend\n")
    broken = bytearray(documents.slides())
    broken[len(broken) // 2 : len(broken) // 2 + 64] = b"\xff" * 64  # a damaged member
    with pytest.raises(Unreadable, match="PowerPoint"):
        read_as("deck.pptx", bytes(broken))


def test_slides_are_pages_with_titles_text_tables_and_notes() -> None:
    doc = read_as("review.pptx", documents.slides())
    by_slide: dict[int, list[str]] = {}
    for line, page in zip(doc.lines, doc.pages, strict=True):
        if line:
            by_slide.setdefault(page, []).append(line)
    assert by_slide[1] == [
        "## Revenue",
        "Revenue grew in every region",
        "- Europe led with new contracts",
        "Notes: Mention the Lisbon office.",
    ]
    assert by_slide[2][0] == "## Headcount"
    assert by_slide[2][1:] == [
        "| Team | People |",
        "| --- | --- |",
        "| Support | 12 |",
        "| Sales | 30 |",
    ]


def test_a_sheet_keeps_its_header_over_every_part_of_its_rows() -> None:
    doc = read_as("servers.xlsx", documents.workbook(rows=120))
    assert doc.lines[0] == "## Servers"
    assert "## Empty" not in doc.lines  # an empty sheet says nothing
    headers = [i for i, line in enumerate(doc.lines) if line == "| Host | Role | Region |"]
    assert len(headers) > 3  # the rows came in parts, each under the header
    rows = [line for line in doc.lines if line.startswith("| web-")]
    assert len(rows) == 120 and "| web-7 | frontend | eu-west |" in rows
    for start, end in zip(headers, [*headers[1:], len(doc.lines)], strict=True):
        part = [line for line in doc.lines[start:end] if line]
        assert part[1] == "| --- | --- | --- |"
        assert sum(len(line) for line in part[2:]) <= TABLE_PART_CHARS + 40


def test_csv_rows_stay_with_their_header() -> None:
    doc = read_as("people.csv", "name;team;phone\nDana;payroll;1234\nIke;security;|99\n")
    assert doc.lines[:4] == [
        "| name | team | phone |",
        "| --- | --- | --- |",
        "| Dana | payroll | 1234 |",
        "| Ike | security | \\|99 |",
    ]


def test_html_keeps_the_page_drops_the_site_chrome() -> None:
    doc = read_as("ops/backups.html", documents.HTML)
    text = "\n".join(doc.lines)
    assert doc.title == "Backups - Ops manual"
    for chrome in (
        "Ops manual home",
        "Every page of the site",
        "Prev Next",
        "Copyright",
        "tracking",
    ):
        assert chrome not in text
    assert doc.lines[0] == "# Backups {#backups}"
    assert "## Restoring a snapshot {#restore}" in doc.lines  # its section's id
    assert "## Retention table {#_retention}" in doc.lines  # DocBook's <a id> in the heading
    assert "# stop the service first" in doc.lines  # inside a code fence, not a heading
    assert "| hot | 7 |" in doc.lines


def test_plain_text_stays_text() -> None:
    doc = read_as("notes.txt", "Release notes\n=============\n    indented stays\n# not a heading")
    assert doc.lines == [
        "Release notes",
        "\\=============",
        "    indented stays",
        "\\# not a heading",
    ]
    with pytest.raises(Unreadable, match="binary file"):
        read_as("image.txt", b"\x89PNG\x00\x00")


@pytest.fixture
def documents_library(
    settings: Settings, store: SQLiteStore, make_library: Callable[..., Path]
) -> tuple[Path, dict]:
    root = make_library(
        {
            "manual.pdf": MANUAL,
            "onboarding.docx": documents.word(),
            "ops/backups.html": documents.HTML,
            "review.pptx": documents.slides(),
            "servers.xlsx": documents.workbook(),
            "people.csv": "name,team\nDana,payroll\n",
            "notes.txt": "The office closes at 18:00 on Fridays.\n",
            "guide.md": "# Guide\n\nThe wiki moved to the intranet.\n",
            "scan.pdf": documents.pdf([["Cover page"], None, None]),
            "locked.pdf": documents.pdf([["secret plans"]], password="pw"),
            "broken.docx": b"PK\x03\x04 this zip was cut short",
            "fake.pptx": b"<html>a web page saved under the wrong name</html>",
        }
    )
    add_library("docs", str(root), settings)
    report = index_library("docs", store, settings=settings)
    return root, report.to_dict()


def test_a_folder_of_documents_is_indexed_and_what_cannot_be_read_is_named(
    documents_library: tuple[Path, dict], store: SQLiteStore, settings: Settings
) -> None:
    _, report = documents_library
    assert report["error"] is None
    skipped = {s["path"]: s["reason"] for s in report["skipped"]}
    assert set(skipped) == {"locked.pdf", "broken.docx", "fake.pptx"}
    assert skipped["locked.pdf"].startswith("cannot be read as PDF: encrypted")
    assert "not a zip package" in skipped["broken.docx"]
    assert "not a PowerPoint file" in skipped["fake.pptx"]
    assert report["added"] == 9  # every other file, the scan's cover included
    assert report["scanned"] == [
        {"path": "manual.pdf", "page": "manual", "pages": [3]},
        {"path": "scan.pdf", "page": "scan", "pages": [2, 3]},
    ]
    (status,) = statuses(store, settings, "docs")
    assert status.scanned == report["scanned"] and len(status.skipped) == 3


def test_a_pdf_hit_cites_its_page_and_opens_there(
    documents_library: tuple[Path, dict], store: SQLiteStore, settings: Settings
) -> None:
    root, _ = documents_library
    (hit,) = search("run setup with sudo", store, settings=settings, library="docs", top_k=1)
    assert (hit.page, hit.pages, hit.heading) == ("manual", (2, 2), "Guide > Setup")
    assert hit.source == f"{root.resolve()}/manual.pdf#page=2"
    assert hit.to_dict()["pages"] == [2, 2]
    (slide,) = search("Lisbon office", store, settings=settings, library="docs", top_k=1)
    assert (slide.page, slide.pages) == ("review", (1, 1))
    (html,) = search(
        "restic restore snapshot id", store, settings=settings, library="docs", top_k=1
    )
    assert (html.page, html.pages) == ("ops/backups", None)
    assert html.source.endswith("ops/backups.html#backups")  # one chunk: the page is small
    (word,) = search(
        "enroll the laptop in device management", store, settings=settings, library="docs", top_k=1
    )
    assert word.page == "onboarding" and word.source.endswith("onboarding.docx")
    (md,) = search("wiki moved to the intranet", store, settings=settings, library="docs", top_k=1)
    assert md.source.endswith("guide.md:1-3") and md.pages is None


def test_a_document_reads_back_as_its_markdown_and_its_original(
    documents_library: tuple[Path, dict], store: SQLiteStore, settings: Settings
) -> None:
    text = library.read_page("docs", "manual", store, settings)
    assert "## Setup" in text.text and text.path == "manual.pdf"
    original = read_original("docs", "manual", store, settings)
    assert original.data == MANUAL and original.format.name == "PDF"


def test_source_locations_by_format() -> None:
    local = {"root": "/srv/docs"}
    web = {"url": "https://github.com/acme/docs.git", "revision": "abc"}
    assert source_location(local, "a.pdf", (3, 9), (4, 5)) == "/srv/docs/a.pdf#page=4"
    assert source_location(web, "a.pdf", (3, 9), (4, 5)) == (
        "https://github.com/acme/docs/blob/abc/a.pdf#page=4"
    )
    assert source_location(local, "b.html", (3, 9), None, "restore") == "/srv/docs/b.html#restore"
    assert source_location(local, "c.docx", (3, 9), None, "setup") == "/srv/docs/c.docx"
    assert source_location(local, "d.md", (3, 9)) == "/srv/docs/d.md:3-9"


def test_a_missing_extra_is_a_refusal_naming_the_install(monkeypatch: pytest.MonkeyPatch) -> None:

    monkeypatch.setitem(sys.modules, "pypdfium2", None)  # as where 'docs' is not installed
    monkeypatch.delitem(sys.modules, "heron.libraries.readers.pdf", raising=False)
    with pytest.raises(Unreadable, match=r"pip install 'heron\[docs\]'"):
        read_as("manual.pdf", MANUAL)


def test_a_manual_answers_at_each_of_its_pages(
    documents_library: tuple[Path, dict], store: SQLiteStore, settings: Settings
) -> None:
    found = search(
        "licences counted per seat, then run setup", store, settings=settings, library="docs"
    )
    manual = [r.pages for r in found if r.page == "manual"]
    assert sorted(manual) == [(1, 1), (2, 2)]  # one result per page, each citing its own


def test_a_document_has_its_own_size_limit(tmp_path: Path) -> None:
    text = "# Notes\n\n" + "word " * len(MANUAL)  # a text page larger than the PDF
    root = write_pages(tmp_path / "lib", {"manual.pdf": MANUAL, "notes.md": text})
    pages, skipped = scan(root, len(MANUAL) - 1, max_document_bytes=len(MANUAL))
    assert [p.id for p in pages] == ["manual"]  # over the page limit, within its own
    assert [s.path for s in skipped] == ["notes.md"]
    assert "HERON_LIBRARY_MAX_PAGE_BYTES" in skipped[0].reason
    pages, skipped = scan(root, len(text), max_document_bytes=len(MANUAL) - 1)
    assert [p.id for p in pages] == ["notes"]
    assert "HERON_LIBRARY_MAX_DOCUMENT_BYTES" in skipped[0].reason
    (manual,) = scan(root, 10**9)[0][:1]
    assert read_page(manual, 10**9, max_document_bytes=100)[1] is not None  # grown since


def test_scanned_pages_are_read_by_tesseract_when_ocr_is_on(
    documents_library: tuple[Path, dict],
    store: SQLiteStore,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if shutil.which(ocr.TESSERACT) is None:
        missing("tesseract is not installed", "run scripts/setup (apt-get install tesseract-ocr)")
    scanned = documents.pdf([["Cover page"], documents.scan_of("The vault opens at nine"), None])
    doc = read_as("audit.pdf", scanned)
    assert doc.scanned == [2, 3]  # OCR off: reported, not read
    fmt = format_of("audit.pdf")
    assert fmt is not None
    doc = read(scanned, fmt, ocr="eng")
    assert ("The vault opens at nine", 2) in zip(doc.lines, doc.pages, strict=True)
    assert doc.scanned == [3]  # a grey square: nothing to read
    assert "pages 2 read by OCR (tesseract)" in doc.warnings
    root, _ = documents_library
    (root / "audit.pdf").write_bytes(scanned)
    on = settings.model_copy(update={"library": settings.library.model_copy(update={"ocr": True})})
    report = index_library("docs", store, settings=on)
    assert {"path": "audit.pdf", "page": "audit", "pages": [3]} in report.scanned
    (hit,) = search("when does the vault open", store, settings=on, library="docs", top_k=1)
    assert hit.page == "audit" and hit.pages == (1, 2)  # one small chunk: cover and page 2
    monkeypatch.setattr(ocr, "TESSERACT", "no-such-tesseract")  # as where it is missing
    doc = read(scanned, fmt, ocr="eng")
    assert doc.scanned == [2, 3] and "apt-get install tesseract-ocr" in doc.warnings[0]


def test_a_run_over_some_files_keeps_the_others_scanned_pages(
    documents_library: tuple[Path, dict], store: SQLiteStore, settings: Settings
) -> None:
    root, first = documents_library
    (root / "faq.md").write_text("# FAQ\n\nThe canteen opens at noon.\n")
    index_library("docs", store, settings=settings, only=["faq"])  # as an upload does
    (status,) = statuses(store, settings, "docs")
    assert status.scanned == first["scanned"]
