"""Text analysis for lexical search, done in Python so every backend ranks alike.

SQLite's FTS5 and PostgreSQL's tsvector stem differently; analysing here (lowercase,
words of two or more characters, Lucene's English stopwords, Snowball stemming via
PyStemmer, the same pipeline bm25s uses) and handing the engines pre-stemmed tokens
gives both backends the same terms.

>>> analyze("The Pods are running")
['pod', 'run']
"""

from __future__ import annotations

import re
from functools import lru_cache

import Stemmer

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


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


def analyze(text: str) -> list[str]:
    """Terms of ``text`` in order, stopwords removed, stemmed."""
    words = [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]
    return _stemmer().stemWords(words)


def query_terms(text: str) -> list[str]:
    """The query's analysed terms, each once, in order: what a lexical search looks up.

    >>> query_terms("running pods run")
    ['run', 'pod']
    """
    return list(dict.fromkeys(analyze(text)))
