"""Documents set: three public manuals as PDF, HTML and Word, beside the same text as Markdown.

**Source.** Debian bookworm's documentation packages (``PACKAGES``, pinned), fetched once
with ``apt-get download`` into ``.bench/packages/debian`` and unpacked there with
``dpkg-deb -x``; nothing is installed. Written by their authors, not here:

- the Debian Reference (debian-reference-en 2.100, GPL): a 261-page PDF and its 15 HTML
  chapters (DocBook);
- the Auto Multiple Choice manual (auto-multiple-choice-doc-pdf and -doc 1.6.0, GPL): a
  101-page PDF and its 20 English HTML pages (DocBook);
- the CamlIDL manual (camlidl-doc 1.04, QPL/LGPL): a 26-page PDF (pdfTeX) and its 8 HTML
  pages (HeVeA).

Four libraries hold them, each in its own home with a cold embedding cache: ``pdf`` (the 3
PDFs, 388 pages), ``html`` (the 43 HTML pages as shipped), ``docx`` (each HTML page made a
Word file by Debian's pandoc 2.17, an independent converter) and ``md`` (each HTML page
made GitHub Markdown by the same pandoc): the Markdown twin of the HTML and Word
libraries, the same text.

**Questions** (``bench/data/documents.jsonl``, 45: 29 Debian Reference, 10 AMC, 6 CamlIDL)
were written by hand from reading the HTML pages, before any search ran over them, never
tuned on. Each names its manual and an ``evidence`` phrase, a few words of the answer as
the manual prints them; the gold HTML page (for the html, docx and md libraries) and the
gold PDF page are where that phrase is (letters and digits compared, so line breaks and
hyphens do not matter), found at run time; a question whose phrase is in no page or PDF
page stops the run.

**Measured.** Per format: files and (PDF) pages, chunks, reading alone (the reader, pages
per second), the first index from a cold cache (pages per second, embedding included),
then Hit@1 / Hit@5 of the full search: a hit in html, docx and md is the gold page among
the first k results; in pdf it is a result of the gold manual whose cited pages hold the
gold page (a stricter test: a page among 388, where the others name a file among 43), and
the ratio of each to md's figure.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pypdfium2 as pdfium
from bs4 import BeautifulSoup

from bench.common import WORK, read_jsonl, table
from heron.embed import load_embedder
from heron.libraries import add_library, index_library, search_many
from heron.libraries.index import INDEX_VERSION
from heron.libraries.readers import format_of, read
from heron.settings import Settings
from tests.conftest import sqlite_store

PACKAGES = {
    "debian-reference-en": "2.100",
    "auto-multiple-choice-doc-pdf": "1.6.0-1",
    "auto-multiple-choice-doc": "1.6.0-1",
    "camlidl-doc": "1.04-5",
    "pandoc": "2.17.1.1-2~deb12u1",
    "pandoc-data": "2.17.1.1-2~deb12u1",  # its templates and reference.docx
    "liblua5.3-0": "5.3.6-2",  # pandoc's one library Debian's base system lacks
}
DEBIAN = WORK / "packages" / "debian"
ROOT = WORK / "documents"
QUESTIONS = Path(__file__).parent / "data" / "documents.jsonl"
SHARE = DEBIAN / "root" / "usr" / "share"
#: manual -> (its PDF, its HTML pages' folder, the glob of its pages there)
MANUALS = {
    "debian-reference": (
        SHARE / "debian-reference" / "debian-reference.en.pdf",
        SHARE / "debian-reference",
        "*.en.html",
    ),
    "auto-multiple-choice": (
        SHARE / "doc" / "auto-multiple-choice" / "auto-multiple-choice.en.pdf",
        SHARE / "doc" / "auto-multiple-choice" / "html" / "auto-multiple-choice.en",
        "*.html",
    ),
    "camlidl": (
        SHARE / "doc" / "camlidl" / "camlidl-1.04.doc.pdf",
        SHARE / "doc" / "camlidl" / "html",
        "*.html",
    ),
}
FORMATS = ("pdf", "html", "docx", "md")


def fetch() -> None:
    """The packages, downloaded and unpacked once."""
    done = DEBIAN / "unpacked.json"
    if done.exists() and json.loads(done.read_text()) == PACKAGES:
        return
    shutil.rmtree(DEBIAN, ignore_errors=True)
    (DEBIAN / "root").mkdir(parents=True)
    wanted = [f"{name}={version}" for name, version in PACKAGES.items()]
    try:
        subprocess.run(["apt-get", "download", *wanted], cwd=DEBIAN, check=True,
                       stdout=subprocess.DEVNULL)  # fmt: skip
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit(
            f"Could not fetch the manuals ({exc}): this set needs apt-get and Debian's "
            "bookworm archive reachable."
        ) from exc
    for deb in sorted(DEBIAN.glob("*.deb")):
        subprocess.run(["dpkg-deb", "-x", str(deb), str(DEBIAN / "root")], check=True)
    done.write_text(json.dumps(PACKAGES))


def pandoc(source: Path, target: Path, to: str) -> None:
    lib = DEBIAN / "root" / "usr" / "lib" / "x86_64-linux-gnu"
    subprocess.run(
        [str(DEBIAN / "root" / "usr" / "bin" / "pandoc"), "-f", "html", "-t", to,
         str(source), "-o", str(target)],
        check=True,
        # Where Debian's pandoc looks for its data (Cabal's pandoc_datadir), unpacked here.
        env={**os.environ, "LD_LIBRARY_PATH": str(lib), "pandoc_datadir": str(SHARE / "pandoc")},
    )  # fmt: skip


def html_pages() -> dict[str, Path]:
    """Page id (``manual/name``) -> its HTML file."""
    found = {}
    for manual, (_, folder, pattern) in MANUALS.items():
        for path in sorted(folder.glob(pattern)):
            found[f"{manual}/{path.name.removesuffix('.html').removesuffix('.en')}"] = path
    return found


def libraries() -> dict[str, Path]:
    """Each format's folder, made once (pandoc's conversions take about a minute)."""
    fetch()
    folders = {fmt: ROOT / "library" / fmt for fmt in FORMATS}
    if (ROOT / "library" / "made").exists():
        return folders
    shutil.rmtree(ROOT / "library", ignore_errors=True)
    for folder in folders.values():
        folder.mkdir(parents=True)
    for manual, (pdf, _, _) in MANUALS.items():
        shutil.copyfile(pdf, folders["pdf"] / f"{manual}.pdf")
    for page, path in html_pages().items():
        for fmt in ("html", "docx", "md"):
            (folders[fmt] / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, folders["html"] / f"{page}.html")
        pandoc(path, folders["docx"] / f"{page}.docx", "docx")
        pandoc(path, folders["md"] / f"{page}.md", "gfm")
    (ROOT / "library" / "made").write_text("")
    return folders


def letters(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def gold() -> list[dict]:
    """The questions with their gold HTML page and gold PDF pages, found by evidence."""
    texts = {
        page: letters(BeautifulSoup(path.read_bytes(), "html.parser").get_text(" "))
        for page, path in html_pages().items()
    }
    pdf_pages: dict[str, list[str]] = {}
    for manual, (pdf, _, _) in MANUALS.items():
        doc = pdfium.PdfDocument(pdf)
        pdf_pages[manual] = [
            letters(doc[i].get_textpage().get_text_range()) for i in range(len(doc))
        ]
        doc.close()
    questions = read_jsonl(QUESTIONS)
    for q in questions:
        phrase = letters(q["evidence"])
        pages = [p for p, t in texts.items() if p.startswith(q["manual"] + "/") and phrase in t]
        found = [n + 1 for n, t in enumerate(pdf_pages[q["manual"]]) if phrase in t]
        if not found:  # the phrase runs over a page break
            joined = pdf_pages[q["manual"]]
            found = [n + 1 for n in range(len(joined) - 1) if phrase in joined[n] + joined[n + 1]]
        if not pages or not found:
            raise SystemExit(f"evidence of {q['question']!r} not found: html {pages}, pdf {found}")
        q["pages"], q["pdf_pages"] = set(pages), set(found)
    return questions


def reading(folder: Path) -> tuple[int, float]:
    """Pages (a PDF's pages, else files) and seconds to read them all with the readers."""
    count, started = 0, time.perf_counter()
    for path in sorted(folder.rglob("*")):
        fmt = format_of(path.name)
        if fmt is None or not path.is_file():
            continue
        doc = read(path.read_bytes(), fmt)
        count += max(doc.pages) if doc.pages else 1
    return count, time.perf_counter() - started


def digest(folder: Path) -> str:
    """The folder's files and the index version: a change to the readers or the chunker
    (which bumps ``INDEX_VERSION``) is indexed and timed again from a cold cache."""
    sha = hashlib.sha256(INDEX_VERSION.encode())
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            sha.update(path.relative_to(folder).as_posix().encode() + path.read_bytes())
    return sha.hexdigest()


def indexed(fmt: str, folder: Path) -> tuple[object, Settings, dict]:
    """The format's index in its own home; the first, from a cold cache, timed."""
    settings = Settings(
        home=ROOT / "homes" / fmt, embed={"embedder": "minilm"}, library={"default_docs": False}
    )
    timing = settings.home / "timing.json"
    figures = json.loads(timing.read_text()) if timing.exists() else {}
    if figures.get("digest") != digest(folder):
        shutil.rmtree(settings.home, ignore_errors=True)
        settings.home.mkdir(parents=True)
        add_library(fmt, str(folder), settings)
        store = sqlite_store(settings.db_path, load_embedder(settings))
        started = time.perf_counter()
        report = index_library(fmt, store, settings=settings)
        figures = {
            "seconds": time.perf_counter() - started,
            "files": report.pages,
            "chunks": report.records,
            "skipped": len(report.skipped),
            "digest": digest(folder),
        }
        timing.write_text(json.dumps(figures))
        return store, settings, figures
    store = sqlite_store(settings.db_path, load_embedder(settings))
    index_library(fmt, store, settings=settings)  # nothing changed: reads states only
    return store, settings, figures


def hit(fmt: str, result, q: dict, slack: int = 0) -> bool:
    """Whether ``result`` answers ``q``: its gold page; in pdf, a result of the gold manual
    whose cited pages hold the gold page (or are ``slack`` pages from it)."""
    if fmt != "pdf":
        return result.page in q["pages"]
    first, last = result.pages or (0, 0)
    near = any(first - slack <= p <= last + slack for p in q["pdf_pages"])
    return result.page == q["manual"] and near


def run() -> str:
    folders = libraries()
    questions = gold()
    texts = [q["question"] for q in questions]
    rows = []
    for fmt in FORMATS:
        pages, read_seconds = reading(folders[fmt])
        store, settings, figures = indexed(fmt, folders[fmt])
        found = search_many(texts, store, library=fmt, top_k=5, mode="full", settings=settings)
        store.close()
        # In pdf also the page before or after: the passage is there, a page turn away.
        for label, slack in [(fmt, 0), *([("pdf, page ±1", 1)] if fmt == "pdf" else [])]:
            at = [
                float(np.mean([any(hit(fmt, r, q, slack) for r in f[:k])
                               for f, q in zip(found, questions, strict=True)]))
                for k in (1, 5)
            ]  # fmt: skip
            rows.append([label, figures["files"], pages, figures["chunks"],
                         pages / read_seconds, pages / figures["seconds"], *at])  # fmt: skip
    md1, md5 = rows[-1][6], rows[-1][7]  # md comes last
    for row in rows:
        row += [row[6] / md1 if md1 else 0.0, row[7] / md5 if md5 else 0.0]
    return table(
        f"Documents: 3 public manuals (Debian Reference, AMC, CamlIDL) as PDF, HTML, Word "
        f"and Markdown, {len(questions)} questions; Hit@k in pdf = the gold page cited",
        ["format", "files", "pages", "chunks", "read pages/s", "index pages/s", "Hit@1",
         "Hit@5", "Hit@1 / md", "Hit@5 / md"],
        rows,
    )  # fmt: skip


if __name__ == "__main__":
    run()
