"""Languages: a manual in Portuguese and Spanish, with and without per-language analysis (issue 46).

**Source.** The Debian Reference (debian-reference 2.100, GPL-2+, Osamu Aoki and its
translators) as Debian ships it in Brazilian Portuguese (``debian-reference-pt-br``),
Spanish (``debian-reference-es``) and English (``debian-reference-en``), fetched with
``apt-get download`` (``bench.packages``).
Each package has the whole manual as plain text; its numbered sections (``9.8.10.
Recuperar ficheiros apagados mas ainda abertos``) become one Markdown page each,
``chNN/<number>.md`` under ``ROOT / <language> / "library"``: the sections of
``MIN_BODY`` characters or more in Portuguese (422 of 435), the same numbers in Spanish
and English (the translations number the same sections). The translations are real and
partial, as translations are: about a quarter of the Portuguese sections are still
English (chapter 4 on authentication, most of chapter 7), so each translated library is
a library of two languages.

**Questions** (``bench/data/debian_reference_questions.jsonl``): 44 written by hand from
reading the Portuguese sections, before any search was run over them, never tuned on,
each in Portuguese (``pt``), Spanish (``es``) and English (``en``), with its gold
``section``; and the 29 Debian Reference questions of ``python -m bench documents``
(``bench/data/documents.jsonl``, English, written by another session) in Portuguese and
Spanish (``bench/data/documents_pt_es.jsonl``, translated by hand), their gold the
section whose English text holds the row's
``evidence`` (a question whose evidence is in no page, or in two, is left out). A hit is
the gold section among the first 1 or 5 results.

**Runs**, in one home (``ROOT / "home"``, the shipped defaults: ``embedder="auto"``, the
multilingual profile where the e5 extra is installed; one embedding cache, so the second
index of the same Portuguese text embeds nothing):

- ``pt``: the Portuguese pages, each analysed in the language it is read in (``language=
  auto``, the default);
- ``pt as English``: the same pages with ``language=en``, every page analysed as English:
  how every library was analysed before per-language analysis;
- ``es`` and ``es as English``: the same for the Spanish pages and questions;
- ``en``: the English pages and the English questions, for reference.

Reported per run: Hit@1 and Hit@5 of full search (the default) and of the lexical side
alone (where the analysis is all there is), the pages read as each language, and the
index seconds.

**How a query is analysed** (``query_analysis``): the choice ``heron.store.analysis``
made, measured apart from the engines. Over the ``pt`` library's chunks (each analysed
in its page's language, as stored), BM25 (``heron.store.analysis.bm25``) ranks them for
each question with its terms made three ways: the union of its analysis in every
language the library holds (what Heron does), its analysis in its own language alone,
and, for reference, everything (chunks and question) analysed as English; page Hit@5,
Portuguese and English questions.
"""

from __future__ import annotations

import gzip
import re
import shutil
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.common import WORK, read_jsonl, table
from bench.packages import debian
from heron.embed import load_embedder
from heron.errors import NotFound
from heron.language import language
from heron.libraries import add_library, index_library, search_many
from heron.libraries.config import AUTO, get_library
from heron.settings import Settings
from heron.store import SQLiteStore
from heron.store.analysis import analysis_language, analyze, bm25, query_terms, record_language
from tests.conftest import sqlite_store

VERSION = "2.100"
ROOT = WORK / "languages"
QUESTIONS = Path(__file__).parent / "data" / "debian_reference_questions.jsonl"
DOCUMENTS = Path(__file__).parent / "data" / "documents.jsonl"
TRANSLATED = Path(__file__).parent / "data" / "documents_pt_es.jsonl"
#: A section becomes a page when its Portuguese text has at least this many characters
#: (a heading over sub-sections alone is no page; the shortest gold section has 124).
MIN_BODY = 100
#: Each translation's package and the line its first chapter starts with.
TRANSLATIONS = {
    "pt": ("debian-reference-pt-br", "pt-br", "Capítulo 1. "),
    "es": ("debian-reference-es", "es", "Capítulo 1. "),
    "en": ("debian-reference-en", "en", "Chapter 1. "),
}
#: Run name -> (library folder's language, the library's ``language=``, questions' language).
RUNS = {
    "pt": ("pt", AUTO, "pt"),
    "pt as English": ("pt", "en", "pt"),
    "es": ("es", AUTO, "es"),
    "es as English": ("es", "en", "es"),
    "en": ("en", AUTO, "en"),
}
_HEADING = re.compile(r"^(\d+(?:\.\d+)+)\. (.+)$")
MODES = ("full", "lexical")


def sections(language: str) -> dict[str, tuple[str, str]]:
    """``{number: (title, body)}`` of the manual's numbered sections in ``language``,
    from its first chapter on (the tables of contents before it are left out)."""
    package, code, first = TRANSLATIONS[language]
    root = debian(package, VERSION)
    path = root / "usr" / "share" / "debian-reference" / f"debian-reference.{code}.txt.gz"
    lines = gzip.decompress(path.read_bytes()).decode("utf-8").replace("\xa0", " ").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    found: dict[str, tuple[str, str]] = {}
    number, title, body = "", "", []
    for line in [*lines[start:], "0.0. end"]:
        if heading := _HEADING.match(line):
            if number:
                found[number] = (title, "\n".join(body).strip("\n"))
            number, title, body = heading.group(1), heading.group(2), []
        elif number:
            body.append(line)
    return found


def page_id(number: str) -> str:
    """The page of section ``number``: ``"9.8.10"`` -> ``"ch09/9.8.10"``."""
    return f"ch{int(number.split('.')[0]):02d}/{number}"


def markdown(number: str, title: str, body: str) -> str:
    """A section as a Markdown page: its number and title as the heading, its text
    unindented (the text's four columns), a line that would read as a heading escaped."""
    lines = [line.removeprefix("    ") for line in body.splitlines()]
    text = "\n".join("\\" + line if line.startswith("#") else line for line in lines)
    return f"# {number}. {title}\n\n{text}\n"


def library(language: str, numbers: Sequence[str]) -> Path:
    """The sections ``numbers`` in ``language`` as pages, written once."""
    target = ROOT / language / "library"
    if target.is_dir():
        return target
    partial = target.with_name("library.partial")
    shutil.rmtree(partial, ignore_errors=True)
    found = sections(language)
    for number in numbers:
        path = partial / f"{page_id(number)}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(markdown(number, *found[number]), encoding="utf-8")
    partial.rename(target)
    return target


def pages() -> list[str]:
    """The section numbers that are pages: those with ``MIN_BODY`` characters in Portuguese."""
    return [n for n, (_, body) in sections("pt").items() if len(body.strip()) >= MIN_BODY]


def documents_gold(numbers: Sequence[str]) -> list[dict[str, str]]:
    """The documents bench's Debian Reference questions in English, Portuguese and
    Spanish, each with the section whose English text holds its ``evidence`` (whitespace
    aside)."""
    english = {n: re.sub(r"\s+", " ", body) for n, (_, body) in sections("en").items()}
    translated = {row["en"]: row for row in read_jsonl(TRANSLATED) if "en" in row}
    rows = []
    for row in read_jsonl(DOCUMENTS):
        if row.get("manual") != "debian-reference":
            continue
        evidence = re.sub(r"\s+", " ", row["evidence"])
        found = [n for n in numbers if evidence in english[n]]
        if len(found) != 1:  # in a section too short to be a page, or said twice
            continue
        other = translated.get(row["question"])
        if other is None:
            raise SystemExit(f"{row['question']!r} is not translated in {TRANSLATED.name}")
        rows.append({**other, "section": found[0]})
    return rows


def question_sets(numbers: Sequence[str]) -> dict[str, list[dict[str, str]]]:
    own = [row for row in read_jsonl(QUESTIONS) if "section" in row]
    return {"written here": own, "documents' questions": documents_gold(numbers)}


def indexed(run: str, store: SQLiteStore, settings: Settings, numbers: Sequence[str]) -> dict:
    """The run's library, added once and indexed (timed; a later run re-reads states)."""
    folder, language, _ = RUNS[run]
    name = "dr-" + run.replace(" ", "-").lower()
    root = library(folder, numbers)
    try:
        get_library(name, settings)
    except NotFound:  # the first run adds it
        add_library(name, str(root), settings, language=language)
    start = time.perf_counter()
    report = index_library(name, store, settings=settings)
    seconds = time.perf_counter() - start
    read = Counter(
        store.get(name, f"{page_id(n)}#0").metadata.get("language", "en") for n in numbers
    )
    return {"name": name, "seconds": seconds, "written": report.added + report.changed, **read}


def hit_rates(
    run: str, name: str, store: SQLiteStore, settings: Settings, rows: list[dict[str, str]]
) -> dict[str, tuple[float, float]]:
    asked = RUNS[run][2]
    questions = [row[asked] for row in rows]
    gold = [page_id(row["section"]) for row in rows]
    rates = {}
    for mode in MODES:
        found = search_many(questions, store, settings=settings, library=name, top_k=5, mode=mode)
        ranked = [[r.page for r in results] for results in found]
        rates[mode] = (
            float(np.mean([r[:1] == [g] for r, g in zip(ranked, gold, strict=True)])),
            float(np.mean([g in r[:5] for r, g in zip(ranked, gold, strict=True)])),
        )
    return rates


def query_analysis(
    store: SQLiteStore, name: str, sets: dict[str, list[dict[str, str]]]
) -> list[tuple]:
    """Page Hit@5 of BM25 over the library's chunks, the questions' terms made each way
    (module doc)."""
    records = [store.get(name, i) for i in store.ids(name)]
    pages = [r.metadata["page"] for r in records]
    codes = [record_language(r.metadata) for r in records]
    texts = [f"{r.metadata.get('title', '')} {r.text}" for r in records]
    own = [analyze(t, c) for t, c in zip(texts, codes, strict=True)]
    english = [analyze(t) for t in texts]
    held = sorted(set(codes))
    ways = {
        "union of the library's languages (Heron)": (own, lambda q: query_terms(q, held)),
        "the question's own language alone": (
            own,
            lambda q: query_terms(q, (analysis_language(language(q)),)),
        ),
        "everything as English (before)": (english, query_terms),
    }
    rows = []
    for kind, questions in sets.items():
        for asked in ("pt", "en"):
            row = [kind, asked, len(questions)]
            for documents, terms in ways.values():
                found = 0
                for q in questions:
                    scores = bm25(terms(q[asked]), documents)
                    ranked = list(
                        dict.fromkeys(pages[i] for i in np.argsort(-scores, kind="stable"))
                    )
                    found += page_id(q["section"]) in ranked[:5]
                row.append(found / len(questions))
            rows.append(tuple(row))
    return rows


def run() -> str:
    settings = Settings(home=ROOT / "home", embed={"embedder": "auto"}, database_url=None)
    settings.home.mkdir(parents=True, exist_ok=True)
    numbers = pages()
    sets = question_sets(numbers)
    store = sqlite_store(settings.db_path, load_embedder(settings))
    built = {run: indexed(run, store, settings, numbers) for run in RUNS}
    index_rows = [
        (run, len(numbers), *(b.get(code, 0) for code in TRANSLATIONS), b["written"], b["seconds"])
        for run, b in built.items()
    ]
    out = table(
        f"Languages: the Debian Reference, {len(numbers)} sections as pages "
        f"(embedding profile {settings.embed.profile})",
        ["run", "pages", *(f"read as {code}" for code in TRANSLATIONS), "written", "index s"],
        index_rows,
    )
    analysis_rows = query_analysis(store, built["pt"]["name"], sets)
    rows = []
    for kind, questions in sets.items():
        for run, b in built.items():
            rates = hit_rates(run, b["name"], store, settings, questions)
            rows.append((kind, run, len(questions), *rates["full"], *rates["lexical"]))
    store.close()
    out += "\n" + table(
        "Hit@k, each question asked in the run's language (pt as English: the same "
        "Portuguese pages analysed as English, as before per-language analysis)",
        ["questions", "run", "n", "full @1", "full @5", "lexical @1", "lexical @5"],
        rows,
    )
    out += "\n" + table(
        "How a query is analysed: BM25 over the pt library's chunks, page Hit@5, the "
        "question's terms made each way",
        ["questions", "asked in", "n", "union (Heron)", "own language alone", "all English"],
        analysis_rows,
    )
    return out


if __name__ == "__main__":
    print(run())
