"""Real use: three libraries in one home, follow-up questions, extractive answers (issue 26).

**Home.** ``ROOT / "home"`` holds three libraries, as a user has them: ``kubernetes`` (the
885 pages of ``../shared/data/docs/kubernetes/library``, read in place), the built-in
``heron`` (Heron's own ``docs/``) and ``notes`` (``bench/data/realuse/notes``: 15 pages
of ordinary company notes in ``it/``, ``hr/`` and ``engineering/``, written for this
bench, with deliberate overlap with Heron's docs (backups and restore, tokens) and with
Kubernetes (deploys, Secrets)). The first run indexes Kubernetes (about 4 to 11 minutes
on 2 cores); every later run re-indexes incrementally, which costs seconds when nothing
changed. Delete ``ROOT`` to start again.

**Questions.** ``bench/data/realuse/questions.jsonl``: questions over the notes, each
with its gold page (``collection/page``, Heron's page id) and its ``kind`` (``precise``,
or ``vague``: a user who does not know the page's words). The Kubernetes questions are
the shared set's ``test`` split, precise form and its vague rewrites. A hit is the gold
``(library, page)`` among the first 1 or 5 results.

**Conversations.** ``bench/data/realuse/conversations.jsonl``: two turns whose second
only makes sense after the first, the gold page of the second and its library.

**Answer keys.** Each notes question and each conversation's second turn has ``expect``:
short verbatim pieces of the gold page's sentences that answer it (the fact asked for,
never the page's title, summary or the first turn's answer). An answer "holds the fact"
when its text holds one of them at word edges, both lowercased, ``*`` and backticks
removed and whitespace collapsed (``holds``). Citing the right page is not enough: an
answer that quotes the page's summary, or repeats what turn 1 said, cites it and answers
nothing.

Sections: (a) search over every library (``library=None``) against the named library;
(b) follow-ups through ``Agent.ask`` with the client's ``history`` and with the
session, extractive (the deterministic path, no model); (c) extractive answers to the
notes and Kubernetes questions, scored by the sentences they quote; (d) the tables of
``bench.realuse_v1`` (``/v1`` with client tools). Progress goes to stderr.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import realuse_v1
from bench.common import SHARED, WORK, read_jsonl, table
from heron.agent import Turn
from heron.core.chat import Message
from heron.embed import load_embedder
from heron.libraries import (
    add_library,
    index_library,
    read_libraries,
    remove_library,
    search_many,
)
from heron.libraries.index import IndexBusy
from heron.settings import Settings
from heron.store import SQLiteStore
from heron.wiring import open_agent
from tests.conftest import sqlite_store

ROOT = WORK / "realuse"
DATA = Path(__file__).resolve().parent / "data" / "realuse"
NOTES = DATA / "notes"
QUESTIONS = DATA / "questions.jsonl"
CONVERSATIONS = DATA / "conversations.jsonl"
K8S = SHARED / "data" / "docs" / "kubernetes"
#: The user's libraries, added to the home; ``heron`` (built in) is always there.
LIBRARIES = {"kubernetes": K8S / "library", "notes": NOTES}
INDEXED = ("heron", "kubernetes", "notes")
TOP_K = 10
#: One or more citation markers: ``[1]``, ``[1][2]``, ``[1, 2]``, after a space (or at
#: the start) and before a space, a line end or the end; a span of answer text ends at
#: each such group.
MARKERS = re.compile(r"(?:(?<=\s)|^)((?:\[\d+(?:\s*,\s*\d+)*\]\s*)+)(?=\s|$)")


def _plain(text: str) -> str:
    return " ".join(text.lower().replace("*", "").replace("`", "").split())


def holds(answer: str, expect: Sequence[str]) -> bool:
    """Whether ``answer`` holds one of the ``expect`` keys (module doc, "Answer keys").

    >>> holds("It **rotates every 60 days**. [1]", ["every 60 days"])
    True
    """
    text = _plain(answer)
    # At word edges: "5 minutes" is not said by "15 minutes".
    return any(re.search(rf"(?<!\w){re.escape(_plain(key))}(?!\w)", text) for key in expect)


def log(text: str) -> None:
    print(f"[realuse] {text}", file=sys.stderr, flush=True)


def settings() -> Settings:
    return Settings(home=ROOT / "home")


# -- the home ------------------------------------------------------------------------


def build() -> tuple[Settings, SQLiteStore, list[tuple]]:
    """The home with its three libraries, indexed (incrementally after the first run)."""
    conf = settings()
    conf.home.mkdir(parents=True, exist_ok=True)
    known = {lib.name: lib for lib in read_libraries(conf)}
    for name, source in LIBRARIES.items():
        lib = known.get(name)
        if lib is not None and Path(lib.source).resolve() != source.resolve():
            remove_library(name, conf)  # moved: the index follows the new source
            lib = None
        if lib is None:
            add_library(name, str(source.resolve()), conf)
    store = sqlite_store(conf.db_path, load_embedder(conf))
    rows = []
    for name in INDEXED:
        log(f"indexing {name} ...")
        report = _index(name, store, conf)
        if report.error:
            raise RuntimeError(f"indexing {name} failed: {report.error}")
        changed = report.added + report.changed + report.removed
        rows.append((name, report.pages, report.records, changed, report.embedded, report.seconds))
        log(f"  {name}: {report.pages} pages, {changed} changed, {report.seconds:.1f} s")
    return conf, store, rows


def _index(name: str, store: SQLiteStore, conf: Settings) -> Any:
    """``index_library``, waiting (up to 10 minutes) while another process indexes the
    same library of this home (another run of this bench)."""
    for attempt in range(120):
        try:
            return index_library(name, store, settings=conf, **_progress(name))
        except IndexBusy:
            if attempt == 0:
                log(f"  {name} is being indexed by another process; waiting")
            time.sleep(5)
    return index_library(name, store, settings=conf, **_progress(name))


def _progress(name: str) -> dict[str, Callable[[int], None]]:
    """``index_library``'s callbacks: a stderr line per 100 changed pages written (the
    first index of Kubernetes takes minutes)."""
    done, total = [0], [0]

    def on_total(n: int) -> None:
        total[0] = n
        if n:
            log(f"  {name}: {n} pages to index")

    def progress(n: int) -> None:
        before, done[0] = done[0], done[0] + n
        if done[0] // 100 > before // 100 or done[0] == total[0]:
            log(f"  {name}: {done[0]}/{total[0]} pages written")

    return {"on_total": on_total, "progress": progress}


# -- question sets -------------------------------------------------------------------


Gold = tuple[str, str]  # (library, page)


def question_sets() -> dict[str, tuple[str, list[str], list[Gold]]]:
    """name -> (library, texts, gold)."""
    notes = read_jsonl(QUESTIONS)
    k8s = [q for q in read_jsonl(K8S / "questions.jsonl") if q["split"] == "test"]

    def page(p: str) -> str:
        return p.removesuffix(".md")

    sets = {
        "notes, all": ("notes", [q["question"] for q in notes], [page(q["page"]) for q in notes]),
        "notes, precise": (
            "notes",
            [q["question"] for q in notes if q["kind"] == "precise"],
            [page(q["page"]) for q in notes if q["kind"] == "precise"],
        ),
        "notes, vague": (
            "notes",
            [q["question"] for q in notes if q["kind"] == "vague"],
            [page(q["page"]) for q in notes if q["kind"] == "vague"],
        ),
        "kubernetes test, precise": (
            "kubernetes",
            [q["question"] for q in k8s],
            [page(q["page"]) for q in k8s],
        ),
        "kubernetes test, vague": (
            "kubernetes",
            [v for q in k8s for v in q["vague"]],
            [page(q["page"]) for q in k8s for _ in q["vague"]],
        ),
    }
    return {
        name: (lib, texts, [(lib, g) for g in gold]) for name, (lib, texts, gold) in sets.items()
    }


# -- a. search -----------------------------------------------------------------------


def _hit(results: Sequence[Any], gold: Gold, k: int) -> bool:
    return any((r.library, r.page) == gold for r in results[:k])


def _repeated(results: Sequence[Any], k: int = 5) -> bool:
    """The same content (equal, non-empty ``content_hash``) twice among the first ``k``."""
    hashes = [r.content_hash for r in results[:k] if r.content_hash]
    return len(hashes) != len(set(hashes))


def _ratio(every: float, named: float) -> str:
    return f"{every / named:.3f}" if named else "n/a"


def search_section(conf: Settings, store: SQLiteStore) -> str:
    started = time.perf_counter()
    rows, dup_every, dup_named, lists = [], 0, 0, 0
    for name, (lib, texts, gold) in question_sets().items():
        if name == "notes, all":
            continue  # computed from the two kinds below, searched once
        log(f"search: {name} ({len(texts)} questions), every library and {lib!r}")
        every = search_many(texts, store, settings=conf, top_k=TOP_K)
        named = search_many(texts, store, settings=conf, library=lib, top_k=TOP_K)
        rows.append((name, lib, texts, gold, every, named))
    notes = [r for r in rows if r[0].startswith("notes, ")]
    merged = (
        "notes, all",
        "notes",
        [t for r in notes for t in r[2]],
        [g for r in notes for g in r[3]],
        [x for r in notes for x in r[4]],
        [x for r in notes for x in r[5]],
    )
    out_rows = []
    for name, lib, texts, gold, every, named in [merged, *rows]:
        at = {}
        for scope, results in (("every", every), ("named", named)):
            for k in (1, 5):
                at[scope, k] = float(
                    np.mean([_hit(rs, g, k) for rs, g in zip(results, gold, strict=True)])
                )
        foreign = sum(1 for rs in every if rs and rs[0].library != lib)
        de = sum(_repeated(rs) for rs in every)
        dn = sum(_repeated(rs) for rs in named)
        if name != "notes, all":
            dup_every, dup_named, lists = dup_every + de, dup_named + dn, lists + len(texts)
        out_rows.append(
            (
                name,
                len(texts),
                at["every", 1],
                at["named", 1],
                _ratio(at["every", 1], at["named", 1]),
                at["every", 5],
                at["named", 5],
                _ratio(at["every", 5], at["named", 5]),
                foreign,
                f"{de} / {dn}",
            )
        )
    out_rows.append(
        (f"all result lists: same content_hash twice in the top 5 ({lists} lists)",
         "", "", "", "", "", "", "", "", f"{dup_every} / {dup_named}")
    )  # fmt: skip
    seconds = time.perf_counter() - started
    return table(
        "Real use (a): search over every library (library=None) vs the named library, "
        f"page Hit@1 / Hit@5 and every/named; {seconds:.0f} s",
        [
            "questions",
            "n",
            "every Hit@1",
            "named Hit@1",
            "every/named @1",
            "every Hit@5",
            "named Hit@5",
            "every/named @5",
            "every: top-1 from another library",
            "top 5 with a repeated content_hash (every / named)",
        ],
        out_rows,
    )


# -- answers: markers and citations --------------------------------------------------


def quoted_spans(answer: Any) -> list[tuple[str, list[Gold | None]]]:
    """The answer's sentences: each span of text ending with one or more ``[n]`` markers,
    and for each marker the ``(library, page)`` of ``answer.citations[n - 1]`` (``None``
    when ``n`` is not a citation's number)."""
    citations = list(answer.citations)
    text = answer.answer or ""
    spans, start = [], 0
    for match in MARKERS.finditer(text):
        sentence = " ".join(text[start : match.start()].split())
        start = match.end()
        numbers = [int(n) for n in re.findall(r"\d+", match.group(1))]
        sources: list[Gold | None] = [
            (citations[n - 1].library, citations[n - 1].page) if 1 <= n <= len(citations) else None
            for n in numbers
        ]
        spans.append((sentence, sources))
    return spans


def quoted_pages(answer: Any) -> list[Gold]:
    """The pages of the citations the answer's markers point to, in order of first use."""
    pages = [s for _, sources in quoted_spans(answer) for s in sources if s is not None]
    return list(dict.fromkeys(pages))


def cited_pages(answer: Any) -> list[Gold]:
    return list(dict.fromkeys((c.library, c.page) for c in answer.citations))


def _short(text: str, words: int = 40) -> str:
    """The first ``words`` words on one line, ``|`` escaped for a Markdown table."""
    cut = (text or "").split()
    flat = " ".join(cut) if len(cut) <= words else " ".join(cut[:words]) + " …"
    return flat.replace("|", "\\|")


def _searched(answer: Any) -> str:
    """The query actually searched, where the answer says (``grounding``), else ''."""
    grounding = getattr(answer, "grounding", None)
    return getattr(grounding, "query", "") or ""


# -- b. follow-ups -------------------------------------------------------------------


def followup_section(agent: Any) -> str:
    started = time.perf_counter()
    conversations = read_jsonl(CONVERSATIONS)
    modes = ("history", "session", "turn 2 alone")
    hits: dict[str, list[bool]] = {m: [] for m in modes}
    quoted: dict[str, list[bool]] = {m: [] for m in modes}
    facts: dict[str, list[bool]] = {m: [] for m in modes}
    repeats: dict[str, list[float]] = {m: [] for m in modes}
    by_library: dict[str, dict[str, list[bool]]] = {}
    failures = []
    for i, conv in enumerate(conversations, 1):
        first, second = conv["turns"]
        gold = (conv["library"], conv["page"].removesuffix(".md"))
        log(f"follow-ups {i}/{len(conversations)}: {second!r}")
        one = agent.ask(Turn(first, answer="extractive"))
        history = [Message("user", first), Message("assistant", one.answer)]
        answers = {
            "history": agent.ask(Turn(second, answer="extractive", history=history)),
            "session": agent.ask(Turn(second, answer="extractive", session_id=one.session_id)),
            "turn 2 alone": agent.ask(Turn(second, answer="extractive")),
        }
        missed: dict[tuple, list[str]] = {}  # what a failed turn 2 showed -> its modes
        said = {_plain(text) for text, _ in quoted_spans(one)}
        for mode, two in answers.items():
            hit = gold in cited_pages(two)
            hits[mode].append(hit)
            quoted[mode].append(gold in quoted_pages(two))
            facts[mode].append(holds(two.answer, conv["expect"]))
            spans = [_plain(text) for text, _ in quoted_spans(two)]
            if spans:
                repeats[mode].append(sum(t in said for t in spans) / len(spans))
            by_library.setdefault(conv["library"], {m: [] for m in modes})[mode].append(hit)
            if not hit and mode != "turn 2 alone":
                shown = (
                    ", ".join(f"({lib}, {p})" for lib, p in cited_pages(two)[:3]) or "none",
                    _short(_searched(two), 30),
                    _short(two.answer),
                )
                missed.setdefault(shown, []).append(mode)
        for (cited, searched, text), failed in missed.items():
            failures.append(
                (" + ".join(failed), f"{first} / {second}", f"({gold[0]}, {gold[1]})",
                 cited, searched, text)
            )  # fmt: skip
    seconds = time.perf_counter() - started
    n = len(conversations)
    rows = [
        (
            mode,
            n,
            f"{100 * np.mean(hits[mode]):.1f}%",
            f"{100 * np.mean(quoted[mode]):.1f}%",
            f"{100 * np.mean(facts[mode]):.1f}%",
            f"{100 * np.mean(repeats[mode]):.1f}%" if repeats[mode] else "n/a",
            *(
                f"{sum(by_library[lib][mode])}/{len(by_library[lib][mode])}"
                for lib in sorted(by_library)
            ),
        )
        for mode in modes
    ]
    out = table(
        "Real use (b): follow-ups, turn 2 answered extractive after turn 1 (bundled model, "
        "no model call); a hit: the gold page among turn 2's citations; 'holds the fact': "
        "turn 2's text holds one of its answer keys; 'sentences turn 1 said': turn 2's "
        "quoted sentences that turn 1's answer quoted too; "
        f"'turn 2 alone' is the same question with no conversation; {seconds:.0f} s",
        [
            "turn 2 asked with",
            "conversations",
            "gold cited",
            "gold quoted ([n] marker)",
            "holds the fact",
            "sentences turn 1 said (mean share)",
            *(f"{lib}: cited" for lib in sorted(by_library)),
        ],
        rows,
    )
    if failures:
        out += table(
            "Real use (b): follow-ups whose turn 2 does not cite the gold page",
            [
                "mode",
                "turns",
                "gold",
                "cited (first 3)",
                "query searched",
                "answer (first 40 words)",
            ],
            failures,
        )
    return out


# -- c. extractive answers -----------------------------------------------------------


def extractive_section(agent: Any) -> tuple[str, list[tuple]]:
    """Extractive answers to the notes questions and the Kubernetes test questions, asked
    over every library and over the named one."""
    started = time.perf_counter()
    sets = question_sets()
    wanted = ("notes, precise", "notes, vague", "kubernetes test, precise")
    rows, worst = [], []
    totals: dict[str, dict[str, list]] = {}
    keys = {q["question"]: q["expect"] for q in read_jsonl(QUESTIONS)}
    for name in wanted:
        lib, texts, gold = sets[name]
        for scope in ("every", "named"):
            log(f"extractive: {name} ({len(texts)}), {scope} library")
            stats = {"quoted": [], "cited": [], "sentences": 0, "gold_sentences": 0,
                     "unresolved": 0, "n_cited": [], "n_quoted": [], "empty": 0,
                     "facts": []}  # fmt: skip
            for text, g in zip(texts, gold, strict=True):
                answer = agent.ask(
                    Turn(text, answer="extractive", library=lib if scope == "named" else None)
                )
                spans = quoted_spans(answer)
                pages = quoted_pages(answer)
                stats["quoted"].append(g in pages)
                stats["cited"].append(g in cited_pages(answer))
                if text in keys:
                    stats["facts"].append(holds(answer.answer, keys[text]))
                stats["n_cited"].append(len(answer.citations))
                stats["n_quoted"].append(len(pages))
                stats["empty"] += not spans
                from_gold = sum(g in sources for _, sources in spans)
                stats["sentences"] += len(spans)
                stats["gold_sentences"] += from_gold
                stats["unresolved"] += sum(s is None for _, sources in spans for s in sources)
                if scope == "every" and spans and from_gold < len(spans):
                    worst.append((name, text, f"({g[0]}, {g[1]})", from_gold, len(spans), answer))
            key = f"{name.split(',')[0]}, {scope}"
            for field in ("quoted", "cited", "n_cited", "n_quoted", "facts"):
                totals.setdefault(key, {}).setdefault(field, []).extend(stats[field])
            for field in ("sentences", "gold_sentences", "unresolved", "empty"):
                totals[key][field] = totals[key].get(field, 0) + stats[field]
            rows.append(_extractive_row(name, scope, stats))
    for key in ("notes, every", "notes, named"):
        scope = key.split(", ")[1]
        rows.append(_extractive_row("notes, all", scope, totals[key]))
    seconds = time.perf_counter() - started
    out = table(
        "Real use (c): extractive answers (answer='extractive'). A sentence is a span of "
        "the answer's text ending with one or more [n] markers; its source is citation "
        "n's page (answer.citations[n-1]; a span with several markers counts for the gold "
        "page when any of them is it). 'gold quoted': the gold page is the source of at "
        "least one sentence; 'gold cited': it is among answer.citations; 'holds the "
        "fact': the answer's text holds one of the question's answer keys (notes only); "
        f"{seconds:.0f} s",
        [
            "questions",
            "scope",
            "n",
            "gold quoted",
            "gold cited",
            "holds the fact",
            "sentences from the gold page",
            "sentences",
            "citations listed (mean)",
            "citations quoted (mean)",
            "answers with no [n] sentence",
            "markers with no citation",
        ],
        rows,
    )
    return out, worst


def _extractive_row(name: str, scope: str, stats: dict[str, Any]) -> tuple:
    sentences = stats["sentences"]
    return (
        name,
        scope,
        len(stats["quoted"]),
        f"{100 * np.mean(stats['quoted']):.1f}%",
        f"{100 * np.mean(stats['cited']):.1f}%",
        f"{100 * np.mean(stats['facts']):.1f}%" if stats["facts"] else "n/a",
        f"{100 * stats['gold_sentences'] / sentences:.1f}%" if sentences else "n/a",
        sentences,
        float(np.mean(stats["n_cited"])),
        float(np.mean(stats["n_quoted"])),
        stats["empty"],
        stats["unresolved"],
    )


def worst_answers(worst: list[tuple], limit: int = 12) -> str:
    """The every-library answers with the smallest share of sentences from the gold page."""
    worst = sorted(worst, key=lambda w: (w[3] / w[4], -w[4]))[:limit]
    rows = []
    for name, question, gold, from_gold, count, answer in worst:
        rows.append((name, question, gold, f"{from_gold}/{count}", _short(answer.answer, 60)))
    return table(
        "Real use (c): extractive answers over every library with the fewest sentences "
        "from the gold page",
        ["questions", "question", "gold", "gold sentences", "answer (first 60 words)"],
        rows,
    )


# -- d. realuse_v1 -------------------------------------------------------------------


def v1_section() -> str:
    """``bench.realuse_v1``'s tables (``/v1`` with client tools: no Heron side effects)."""
    log("d. bench.realuse_v1.run() ...")
    started = time.perf_counter()
    text = realuse_v1.run()
    return text + f"\n(bench.realuse_v1: {time.perf_counter() - started:.0f} s)\n"


# -- run -----------------------------------------------------------------------------


def _timed_section(name: str, fn: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    value = fn()
    log(f"{name}: {time.perf_counter() - started:.0f} s")
    return value


def run() -> str:
    started = time.perf_counter()
    conf, store, index_rows = build()
    index_seconds = time.perf_counter() - started
    out = table(
        f"Real use: the home's libraries, indexed this run (incremental); {index_seconds:.0f} s",
        ["library", "pages", "records", "pages changed", "texts embedded", "seconds"],
        index_rows,
    )
    out += _timed_section("a. search", lambda: search_section(conf, store))
    store.close()
    agent = open_agent(conf)
    try:
        out += _timed_section("b. follow-ups", lambda: followup_section(agent))
        text, worst = _timed_section("c. extractive", lambda: extractive_section(agent))
        out += text
        if worst:
            out += worst_answers(worst)
    finally:
        agent.close()
    out += _timed_section("d. realuse_v1", v1_section)
    log(f"done in {time.perf_counter() - started:.0f} s")
    return out


if __name__ == "__main__":
    run()
