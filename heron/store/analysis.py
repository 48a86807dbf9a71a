"""Text analysis for lexical search, done in Python so every backend ranks alike.

SQLite's FTS5 and PostgreSQL's tsvector stem differently; analysing here (lowercase,
words of two or more characters, stopwords out, Snowball stemming via PyStemmer, the same
pipeline bm25s uses) and handing the engines pre-stemmed tokens gives both backends the
same terms.

**Each text in its own language.** A record is analysed in the language its metadata
names (``"language"``: the library indexer detects each page's, ``page_language``), with
that language's Snowball stemmer and stopwords (Lucene's English ones too); English when
none is named, or for a language without a Snowball stopword list here (``LANGUAGES``).
Stemmed as English, Portuguese kept its inflections apart ("configuração" and
"configurar" were two terms; Portuguese's stemmer makes both "configur") and its
stopwords in the index. A query is analysed in the language of each page it may match:
a namespace knows the languages of its records, and the query's terms are the union of
its analysis in each (``query_terms``), so each page is matched by the terms its own
stemmer would make of the question (measured against analysing queries in their own
language alone: ``python -m bench languages``, docs/benchmarks.md). A namespace whose
records are all English (every index of Heron's own, a library of English pages) analyses
its queries as English alone, exactly as before.

A query in another language (``heron.language``) also loses its own language's
stopwords: asked in Portuguese of English pages, "Quantos dias de férias eu tenho por
ano?" matched "de", "eu" and "por" in English pages (a code, a name) and ranked a deploy
page first; what it shares with English pages is names and numbers ("VPN", "SEV1").

>>> analyze("The Pods are running"), analyze("As configurações do servidor", "pt")
(['pod', 'run'], ['configur', 'servidor'])
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import cache, lru_cache
from importlib.resources import files
from typing import Any

import numpy as np
import Stemmer

from heron.language import language, text_language

# Lucene's EnglishAnalyzer stop set, also bm25s's STOPWORDS_EN.
STOPWORDS = frozenset(
    (
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    )
)
_WORD = re.compile(r"(?u)\b\w\w+\b")


#: Languages whose Snowball stopword list ships in ``heron/store/snowball/``. The lists
#: are Snowball's own (snowballstem.org, BSD-3), the stemmer's companions, copied as data:
#: NLTK's need a download at run time, bm25s's pull scipy, and the broader PyPI lists
#: (stop-words, stopwordsiso) drop words questions hinge on ("horas", "trabalho", "dois").
SNOWBALL_LISTS = frozenset({"pt", "es", "fr", "it", "de", "nl", "da", "no", "sv"})


@cache
def _snowball(code: str) -> frozenset[str]:
    text = files("heron.store").joinpath("snowball", f"{code}.txt").read_text("utf-8")
    return frozenset(text.split())


@cache
def stopwords(code: str) -> frozenset[str]:
    """The words a query in language ``code`` loses: English's (``STOPWORDS``) and, for
    another language, its own and Portuguese's and Spanish's (a short request in one is
    often labelled as the other, or as Galician or Catalan)."""
    if code == "en":
        return STOPWORDS
    words = set(STOPWORDS) | _snowball("pt") | _snowball("es")
    if code in SNOWBALL_LISTS:
        words |= _snowball(code)
    return frozenset(words)


#: Snowball's stemmer of each language a text is analysed in: English and those whose
#: stopword list ships here. PyStemmer has more stemmers; a language without a list is
#: analysed as English, as every text was before.
STEMMERS = {
    "en": "english",
    "pt": "portuguese",
    "es": "spanish",
    "fr": "french",
    "it": "italian",
    "de": "german",
    "nl": "dutch",
    "da": "danish",
    "no": "norwegian",
    "sv": "swedish",
}
#: The languages a text is analysed in (``analysis_language``).
LANGUAGES = frozenset(STEMMERS)
#: Tags that name a language ``LANGUAGES`` has under another code: Norwegian Bokmål and
#: Nynorsk share Snowball's Norwegian.
_ALIASES = {"nb": "no", "nn": "no"}


def analysis_language(code: str | None) -> str:
    """The language a text tagged ``code`` (an ISO 639-1 code or a tag: ``"pt-BR"``,
    ``"pt_PT"``) is analysed in: its own where ``LANGUAGES`` has it, else English.

    >>> analysis_language("pt-BR"), analysis_language("ja"), analysis_language(None)
    ('pt', 'en', 'en')
    """
    base = (code or "en").lower().replace("_", "-").split("-", 1)[0]
    base = _ALIASES.get(base, base)
    return base if base in LANGUAGES else "en"


def record_language(metadata: Mapping[str, Any]) -> str:
    """The language a record (or a hit) is analysed in: its metadata's ``"language"``
    (``analysis_language``), English where it names none."""
    return analysis_language(str(metadata.get("language") or "en"))


def page_language(text: str) -> str:
    """The language a page (or any long text) is analysed in: ``heron.language``'s
    reading of it, mapped by ``analysis_language``; English without py3langid.

    >>> page_language("Os pacotes são instalados com o apt, que resolve as dependências.")
    'pt'
    """
    return analysis_language(text_language(text))


@cache
def _stemmer(code: str) -> Stemmer.Stemmer:
    return Stemmer.Stemmer(STEMMERS[code])


@cache
def _index_stopwords(code: str) -> frozenset[str]:
    """What a text in ``code`` loses: its Snowball list and Lucene's English stopwords (a
    page in another language quotes English: commands, untranslated paragraphs)."""
    return STOPWORDS if code == "en" else STOPWORDS | _snowball(code)


def analyze(text: str, code: str = "en") -> list[str]:
    """Terms of ``text`` in order, stopwords removed, stemmed: as language ``code`` (one
    of ``LANGUAGES``; ``analysis_language`` maps any tag to one)."""
    dropped = _index_stopwords(code)
    return _stemmer(code).stemWords([w for w in _WORD.findall(text.lower()) if w not in dropped])


@lru_cache(maxsize=4096)
def _query_terms(text: str, codes: tuple[str, ...]) -> tuple[str, ...]:
    asked = stopwords(language(text))
    words = _WORD.findall(text.lower())
    terms: list[str] = []
    for code in codes:
        dropped = asked | _index_stopwords(code)
        terms += _stemmer(code).stemWords([w for w in words if w not in dropped])
    return tuple(dict.fromkeys(terms))


def query_terms(text: str, codes: Sequence[str] = ("en",)) -> list[str]:
    """The query's analysed terms, each once, in order: what a lexical search looks up
    in pages of the languages ``codes`` (``LANGUAGES``), the union of its analysis as each
    (module doc). A query in another language than English also loses that language's
    stopwords (``stopwords``).

    >>> query_terms("running pods run"), query_terms("Quantos dias de férias eu tenho?")
    (['run', 'pod'], ['quanto', 'dia', 'féria'])
    >>> query_terms("Como configurar os pacotes?", ("en", "pt"))
    ['configurar', 'pacot', 'configur']
    """
    return list(_query_terms(text, tuple(codes)))


def readable(known: int, terms: int) -> float:
    """How much of a query the lexical side can read: of its ``terms`` analysed terms,
    ``known`` are in the index's vocabulary; ``min(1, known / unknown)``, 1.0 when every
    term (or none) is known. A query in another language than the index keeps a few words
    it knows by accident, and a z-score turns one stray match into a large one; weighed by
    this, the lexical side fades and the ranking leans on the embedding. An English query
    almost always knows as many terms as it misses, and ranks as at full weight
    (``heron.tools.router``, ``heron.libraries.search.pool``).

    >>> readable(3, 4), readable(1, 5), readable(0, 0)
    (1.0, 0.25, 1.0)
    """
    unknown = terms - known
    return 1.0 if known >= unknown else known / unknown


#: BM25's term saturation and length normalisation (the usual values, as FTS5's).
BM25_K1 = 1.2
BM25_B = 0.75


def bm25(
    query: Sequence[str],
    documents: Sequence[Sequence[str]],
    weights: Mapping[str, float] | None = None,
) -> np.ndarray:
    """BM25 of each of ``documents`` (analysed terms) for the ``query`` terms, with the
    IDF of ``documents`` themselves; ``float32``, one score each. For scoring a small set
    on its own scale (a passage's sentences, several libraries' candidates), where the
    engines' BM25 would bring each index's statistics. Robertson & Zaragoza, "The
    Probabilistic Relevance Framework: BM25 and Beyond" (2009), with Lucene's IDF
    ``ln(1 + (N - df + 0.5) / (df + 0.5))``. ``weights``: a query term's weight (1 when
    not given), as a term repeated in a BM25 query with query-term frequency.

    >>> [round(float(x), 3) for x in bm25(["pod"], [["pod", "run"], ["servic"]])]
    [0.61, 0.0]
    >>> [round(float(x), 3) for x in bm25(["pod"], [["pod", "run"], ["servic"]], {"pod": 0.5})]
    [0.305, 0.0]
    """
    weights = weights or {}
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
        idf = weights.get(term, 1.0) * math.log(1 + (n - df + 0.5) / (df + 0.5))
        for i, c in enumerate(counts):
            tf = c.get(term, 0)
            if tf:
                norm = BM25_K1 * (1 - BM25_B + BM25_B * len(documents[i]) / average)
                scores[i] += idf * tf * (BM25_K1 + 1) / (tf + norm)
    return scores
