"""BM25 over tool texts, in memory: every tool gets an exact score in microseconds (the
fusion needs both sides for all of them), and the index saves to one string so an
unchanged catalogue is not analysed again at start-up.

Okapi BM25 with Lucene's idf, ``log(1 + (N - df + 0.5) / (df + 0.5))`` (Robertson &
Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond", 2009), over the
store's analysis (``heron.store.analysis``) so words match as in ``heron store search``.

>>> [round(float(s), 3) for s in BM25.build(["list contacts", "send mail"]).scores("mail")]
[0.0, 0.693]
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Sequence

import numpy as np

from heron.store.analysis import analyze, query_terms

K1 = 1.2
B = 0.75


class BM25:
    """Postings by term: ``rows[offsets[t]:offsets[t + 1]]`` are the texts holding term
    ``t`` and ``weights`` the same slice's BM25 term weights."""

    def __init__(
        self,
        size: int,
        terms: list[str],
        offsets: np.ndarray,
        rows: np.ndarray,
        weights: np.ndarray,
    ) -> None:
        self.size = size
        self.terms = terms
        self._index = {term: i for i, term in enumerate(terms)}
        self.offsets, self.rows, self.weights = offsets, rows, weights

    @classmethod
    def build(cls, texts: Sequence[str], k1: float = K1, b: float = B) -> BM25:
        # 1. Term counts per text, as parallel (row, term id, tf) arrays.
        vocab: dict[str, int] = {}
        rows, cols, tfs, lengths = [], [], [], []
        for i, text in enumerate(texts):
            counts = Counter(analyze(text))
            lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                rows.append(i)
                cols.append(vocab.setdefault(term, len(vocab)))
                tfs.append(tf)
        row = np.array(rows, dtype=np.int64)
        col = np.array(cols, dtype=np.int64)
        tf = np.array(tfs, dtype=np.float64)
        # 2. Weights: idf(term) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avg)).
        size = len(texts)
        length = np.array(lengths, dtype=np.float64)
        avg = float(length.mean()) if size and length.mean() > 0 else 1.0
        df = np.bincount(col, minlength=len(vocab)).astype(np.float64)
        idf = np.log(1 + (size - df + 0.5) / (df + 0.5))
        weight = idf[col] * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length[row] / avg))
        # 3. Group by term.
        order = np.argsort(col, kind="stable")
        offsets = np.zeros(len(vocab) + 1, dtype=np.int64)
        np.cumsum(df.astype(np.int64), out=offsets[1:])
        return cls(size, list(vocab), offsets, row[order], weight[order].astype(np.float32))

    def scores(self, query: str) -> np.ndarray:
        """One BM25 score per text, 0.0 where no query term occurs; the query's terms as
        a lexical search reads them (``query_terms``: another language's stopwords too)."""
        out = np.zeros(self.size, dtype=np.float32)
        for term in query_terms(query):
            t = self._index.get(term)
            if t is not None:
                start, end = self.offsets[t], self.offsets[t + 1]
                out[self.rows[start:end]] += self.weights[start:end]
        return out

    def known(self, terms: Sequence[str]) -> int:
        """How many of the analysed ``terms`` occur in some indexed text."""
        return sum(term in self._index for term in terms)

    def dumps(self) -> str:
        def enc(a: np.ndarray) -> str:
            return base64.b64encode(a.tobytes()).decode("ascii")

        return json.dumps(
            {
                "size": self.size,
                "terms": self.terms,
                "offsets": enc(self.offsets),
                "rows": enc(self.rows.astype(np.int32)),
                "weights": enc(self.weights),
            }
        )

    @classmethod
    def loads(cls, text: str) -> BM25:
        data = json.loads(text)

        def dec(key: str, dtype: type) -> np.ndarray:
            return np.frombuffer(base64.b64decode(data[key]), dtype=dtype)

        return cls(
            data["size"],
            data["terms"],
            dec("offsets", np.int64),
            dec("rows", np.int32).astype(np.int64),
            dec("weights", np.float32),
        )
