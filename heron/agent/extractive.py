"""Extractive answers: the passages' own sentences that answer the question, each cited.

No model writes them, so they cannot loop or invent; the same passages and question give
the same answer. ``compose(question, vector, passages, embedder)``:

1. **Sentences**: each passage's prose sentences in reading order
   (``heron.agent.sentences``: headings, tables and code left out).
2. **Lexical**: BM25 of each sentence for the question's analysed terms
   (``heron.store.analysis``, the terms the libraries' lexical index uses), IDF over these
   sentences. BM25 as in Robertson & Zaragoza, "The Probabilistic Relevance Framework:
   BM25 and Beyond" (2009), with Lucene's IDF ``ln(1 + (N - df + 0.5) / (df + 0.5))``,
   ``k1 = 1.2``, ``b = 0.75``.
3. **Candidates**: the ``CANDIDATES`` sentences with the best BM25 (ties: the better
   passage, then the earlier sentence); when fewer share a term with the question, the
   first sentences of the best passages fill in. Only these are embedded: embedding
   every sentence of five passages costs more than the whole search.
4. **Dense**: the candidates (their first ``EMBED_WORDS`` words) embedded in one batch by
   the store's embedder (its cache answers sentences seen before), cosine with the
   question's vector.
5. **Fusion**: ``heron.store.fusion.fuse`` (z-scores, ``alpha`` 0.5), the libraries' own
   hybrid rule, minus ``RANK_PENALTY`` per passage rank (retrieval has already ranked the
   passages, and the best one usually holds the answer), minus ``LINK_PENALTY`` times
   the share of the sentence that is link text and ``NAVIGATION_PENALTY`` for a passage
   under a "What's next" or "See also" heading: those point elsewhere, they do not
   answer.
6. **Selection**, best first: a sentence shorter than ``MIN_WORDS`` words, a question,
   one that quotes the question itself (a page listing example questions), one nearly the
   same as one already chosen (cosine >= ``DUPLICATE``), one below the candidates' mean
   after the first, or one that would make the answer repeat itself
   (``heron.agent.guard``) is left out; at most ``Limits.sentences`` sentences and
   ``Limits.words`` words (and ``Limits.chars`` characters, from a ``max_tokens``).
7. **Order**: passages in the order of their best chosen sentence; within a passage, its
   reading order. Each sentence is followed by its marker ``[n]``, ``n`` the passage's
   number among the citations (``passages[n - 1]``).

>>> compose("How often do I water tomatoes?", vector, ["Water tomatoes twice a week."],
...         embedder).text                                            # doctest: +SKIP
'Water tomatoes twice a week. [1]'
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from heron.agent.answer import ToolUse
from heron.agent.guard import repeated_ngram
from heron.agent.sentences import Sentence, sentences
from heron.embed import Embedder
from heron.store.analysis import analyze, query_terms
from heron.store.fusion import fuse

#: How to add a library, in every "found nothing" answer.
ADD_LIBRARY = "heron library add NAME PATH && heron index NAME"
#: Sentences embedded per answer (the best by BM25), and words embedded of each: about
#: 250 tokens for MiniLM, which takes about 40 ms on 2 cores.
CANDIDATES = 8
EMBED_WORDS = 32
#: Fused score taken off per rank of the sentence's passage (z-score units).
RANK_PENALTY = 0.15
LINK_PENALTY = 1.0
NAVIGATION_PENALTY = 1.0
#: Headings of sections that point to other pages (compared lowercased, last level).
NAVIGATION = frozenset(
    {"what's next", "next steps", "see also", "further reading", "learn more", "related"}
)
#: Cosine from which two sentences say the same thing: only the better one is kept.
DUPLICATE = 0.9
#: Fewer words is a fragment ("Pods that run a single container."), not an answer.
MIN_WORDS = 4
#: Characters a marker takes beside its sentence: `` [n]`` and the space after it.
MARKER_CHARS = 5
_WORD = re.compile(r"\w+")
BM25_K1 = 1.2
BM25_B = 0.75


@dataclass(frozen=True)
class Limits:
    """How long an extractive answer may be: ``sentences`` and ``words`` at most, and
    ``chars`` (from a request's ``max_tokens``) when set."""

    sentences: int = 5
    words: int = 120
    chars: int | None = None


@dataclass(frozen=True)
class Quote:
    """One sentence of the answer: its text and its passage's citation number (1-based)."""

    text: str
    number: int
    score: float


@dataclass(frozen=True)
class Extract:
    """The answer text (quotes with their markers) and the quotes in that order."""

    text: str
    quotes: tuple[Quote, ...]


@dataclass(frozen=True)
class _Unit:
    passage: int  # 0-based rank of the passage
    sentence: Sentence
    terms: tuple[str, ...]


def bm25(query: Sequence[str], documents: Sequence[Sequence[str]]) -> np.ndarray:
    """BM25 of each of ``documents`` (analysed terms) for the ``query`` terms, IDF over
    ``documents`` (see the module doc); ``float32``, one score each.

    >>> bm25(["pod"], [["pod", "run"], ["servic"]]).round(3).tolist()
    [0.693, 0.0]
    """
    scores = np.zeros(len(documents), dtype=np.float32)
    if not documents or not query:
        return scores
    n = len(documents)
    average = sum(len(d) for d in documents) / n or 1.0
    counts = [Counter(d) for d in documents]
    for term in dict.fromkeys(query):
        df = sum(1 for c in counts if term in c)
        if not df:
            continue
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for i, c in enumerate(counts):
            tf = c.get(term, 0)
            if tf:
                norm = BM25_K1 * (1 - BM25_B + BM25_B * len(documents[i]) / average)
                scores[i] += idf * tf * (BM25_K1 + 1) / (tf + norm)
    return scores


def _words(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def _units(question: str, passages: Sequence[str]) -> list[_Unit]:
    """The sentences that may answer: long enough, not a question (a list of the
    questions a page answers is not their answer), and not a quote of the question."""
    asked = _words(question)
    return [
        _Unit(rank, s, tuple(analyze(s.text)))
        for rank, text in enumerate(passages)
        for s in sentences(text)
        if len(s.text.split()) >= MIN_WORDS
        and not s.text.rstrip("\"')").endswith("?")
        and not (asked and asked in _words(s.text))
    ]


def _candidates(units: list[_Unit], lexical: np.ndarray) -> list[int]:
    """Indices of the sentences to embed: best BM25 first, then passage order."""
    order = sorted(
        range(len(units)),
        key=lambda i: (-float(lexical[i]), units[i].passage, units[i].sentence.position),
    )
    return order[:CANDIDATES]


def _head(text: str) -> str:
    """What is embedded of a sentence: its first ``EMBED_WORDS`` words. Embedding time
    grows with tokens, and a long sentence says what it is about early."""
    words = text.split()
    return text if len(words) <= EMBED_WORDS else " ".join(words[:EMBED_WORDS])


def _cut(text: str, words: int, chars: int | None) -> str:
    """``text`` cut to ``words`` words and ``chars`` characters, at a word, with ``…``."""
    kept = text.split()[:words]
    while chars is not None and kept and len(" ".join(kept)) + 2 > chars:
        kept.pop()
    return " ".join(kept) + " …" if kept else ""


def _fits(chosen: list[tuple[int, str]], text: str, limits: Limits) -> bool:
    words = sum(len(t.split()) for _, t in chosen) + len(text.split())
    chars = sum(len(t) + MARKER_CHARS for _, t in chosen) + len(text) + MARKER_CHARS
    return words <= limits.words and (limits.chars is None or chars <= limits.chars)


def render(quotes: Sequence[Quote]) -> str:
    """Quotes as answer text: one paragraph per passage, each sentence and its ``[n]``."""
    paragraphs: list[list[str]] = []
    last = None
    for quote in quotes:
        if quote.number != last:
            paragraphs.append([])
            last = quote.number
        paragraphs[-1].append(f"{quote.text} [{quote.number}]")
    return "\n\n".join(" ".join(p) for p in paragraphs)


def _penalty(unit: _Unit, headings: Sequence[str]) -> float:
    heading = headings[unit.passage] if unit.passage < len(headings) else ""
    navigation = heading.rsplit(" > ", 1)[-1].strip().lower() in NAVIGATION
    return (
        RANK_PENALTY * unit.passage
        + LINK_PENALTY * unit.sentence.linked
        + (NAVIGATION_PENALTY if navigation else 0.0)
    )


def compose(
    question: str,
    vector: np.ndarray,
    passages: Sequence[str],
    embedder: Embedder,
    limits: Limits | None = None,
    *,
    headings: Sequence[str] = (),
) -> Extract:
    """The extractive answer to ``question`` from ``passages`` (Markdown bodies in
    citation order; ``vector``: the question's, from ``embedder``; ``headings``: each
    passage's heading path, ``A > B``, when known). Empty text when no passage holds a
    sentence to quote. See the module doc for the rules."""
    limits = limits or Limits()
    units = _units(question, passages)
    if not units or limits.sentences < 1:
        return Extract("", ())
    lexical = bm25(query_terms(question), [u.terms for u in units])
    keys = np.array(_candidates(units, lexical), dtype=np.int64)
    vectors = embedder.embed([_head(units[i].sentence.text) for i in keys])
    cosines = vectors @ np.asarray(vector, dtype=np.float32)
    dense = np.argsort(-cosines, kind="stable")
    by_lexical = np.argsort(-lexical[keys], kind="stable")
    fused = fuse(
        keys[dense], cosines[dense], keys[by_lexical], lexical[keys][by_lexical], top_k=len(keys)
    )
    row = {int(k): i for i, k in enumerate(keys.tolist())}
    scored = sorted(
        ((f.score - _penalty(units[f.key], headings), f.key) for f in fused),
        key=lambda pair: (-pair[0], pair[1]),
    )
    score_of = {key: score for score, key in scored}
    chosen: list[tuple[int, str]] = []  # (unit index, text)
    picked: list[np.ndarray] = []
    for score, key in scored:
        if len(chosen) >= limits.sentences or (chosen and score < 0):
            break
        text = units[key].sentence.text
        vec = vectors[row[key]]
        if any(float(vec @ other) >= DUPLICATE for other in picked):
            continue
        if not chosen and not _fits([], text, limits):
            # The best sentence, cut to fit with its marker.
            room = limits.chars - MARKER_CHARS if limits.chars is not None else None
            text = _cut(text, limits.words, room)
        elif not _fits(chosen, text, limits):
            continue
        # Quotes of prose never cycle through characters; their words may repeat.
        if repeated_ngram(render(_quotes(units, [*chosen, (key, text)], score_of))):
            continue
        chosen.append((key, text))
        picked.append(vec)
    quotes = _quotes(units, chosen, score_of)
    return Extract(render(quotes), tuple(quotes))


def _quotes(
    units: list[_Unit], chosen: list[tuple[int, str]], score: dict[int, float]
) -> list[Quote]:
    """``chosen`` in answer order (module doc, step 7)."""
    best: dict[int, float] = {}
    for key, _ in chosen:
        rank = units[key].passage
        best[rank] = max(best.get(rank, -math.inf), score[key])
    ordered = sorted(
        chosen,
        key=lambda c: (
            -best[units[c[0]].passage],
            units[c[0]].passage,
            units[c[0]].sentence.position,
        ),
    )
    return [Quote(text, units[key].passage + 1, round(score[key], 4)) for key, text in ordered]


def passage_body(text: str) -> str:
    """A passage's Markdown without the ``Title > Heading`` line its chunk starts with
    (a matched question: its answer)."""
    if "\nQ: " in text and "\nA: " in text:
        return text.rsplit("\nA: ", 1)[1]
    return text.split("\n", 1)[1] if "\n" in text else text


def tool_summary(uses: Sequence[ToolUse]) -> str:
    """What the tools returned, one line each, cut: the answer to a tool question."""
    done = [u for u in uses if u.ok] or list(uses)[-1:]
    lines = []
    for use in done:
        if not use.ok:
            lines.append(f"{use.name} failed: {use.error}")
            continue
        result = use.result
        if isinstance(result, list) and all(isinstance(x, str) for x in result):
            shown = ", ".join(result[:20]) + (
                f" and {len(result) - 20} more" if len(result) > 20 else ""
            )
        else:
            shown = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
        shown = shown if len(shown) <= 400 else shown[:400].rsplit(" ", 1)[0] + " …"
        lines.append(f"{use.name} returned: {shown or '(nothing)'}")
    return "\n".join(lines)


def nothing_found(
    scope: Sequence[str], indexed: Sequence[str], best: float | None, *, generated: bool
) -> str:
    """What grounding found, said plainly, with how to add a library: ``scope`` the
    libraries searched, ``indexed`` those indexed, ``best`` the best passage's cosine;
    ``generated``: said under a model's answer rather than as the answer."""
    own = "this answer is the model's own, from no library" if generated else "nothing to quote"
    if not indexed:
        return (
            f"Grounding found nothing: no library is indexed yet, so {own}. "
            f"Add your documentation with: {ADD_LIBRARY}"
        )
    if not scope:
        return (
            f"Grounding found nothing: the only library indexed is Heron's own documentation "
            f"({', '.join(indexed)}), searched when a question names Heron, so {own}. "
            f"Add your documentation with: {ADD_LIBRARY}"
        )
    score = f" (best match {best:.2f})" if best is not None else ""
    tail = "" if generated else ", or ask for the model's own answer (--answer generative)"
    return (
        f"Grounding found nothing for this question in {', '.join(scope)}{score}: no passage "
        f"fits it, so {own}. Add a library that covers it with: {ADD_LIBRARY}{tail}."
    )
