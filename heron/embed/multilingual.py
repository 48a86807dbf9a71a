"""One index for questions in any language: MiniLM reads English, e5 every other.

all-MiniLM-L6-v2 is the best bundled model on every English set but one, and reads
Portuguese and Spanish at about 0.55x to 0.7x of its English figure; multilingual-e5-small
keeps them at 0.86x to 0.94x but trails MiniLM in English (docs/benchmarks.md, "Embedding
profiles"). ``MultilingualEmbedder`` stores both: a passage's vector is its two unit
vectors side by side, each scaled by ``1/sqrt(2)`` (so the row has unit length), and a
query is embedded by the one model its language calls for, in that model's half only,
scaled by ``sqrt(2)``. The inner product of a query with a passage is then exactly that
model's cosine:

    [q, 0] . [a, b] / sqrt(2) * sqrt(2) = q . a

An English question ranks and scores exactly as under MiniLM alone (its thresholds
too), any other as under e5 alone; ``calibration_for(query)`` gives the thresholds of the
model that read it. Indexing costs both models (about 2x MiniLM alone); searching costs
one. A query's language is ``heron.language.is_english``'s (py3langid, with its rules for
short and technical queries); English is the fallback.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np

from heron.embed.base import Embedder, clean_texts, embed_queries
from heron.embed.calibration import Calibration, calibration_of, shifted
from heron.errors import ModelError
from heron.language import is_english
from heron.resource import Resource

_SCALE = np.float32(np.sqrt(2.0))
COST = 3.5
#: How much lower e5 scores a question's best passage when the two are in different
#: languages: the median best cosine of the 40 Kubernetes dev questions over the English
#: library is 0.910 asked in English, 0.877 in Portuguese and 0.874 in Spanish (``python
#: -m bench.multilingual default``'s index). e5's thresholds were measured on questions
#: in the library's language; unshifted, half the translated questions fell under its
#: docs threshold (0.88) and a Portuguese question that found its page was answered
#: "nothing fits". Off-topic Portuguese and Spanish questions there score 0.77 to 0.84.
ACROSS_LANGUAGES = 0.034


class MultilingualEmbedder(Resource):
    """Passages embedded by both models; each query by the one its language calls for.

    ``english`` is an embedder (MiniLM, usually behind its cache); ``other`` makes the
    second (e5), named ``other_id``, of the same ``dim``. The second model is made on its
    first use: a search in English never loads it (e5 takes about 2 s to load, MiniLM
    0.3 s), indexing and any other language do. The vectors have ``2 * dim`` components.
    Closing this closes both parts when ``close_parts`` is set (``load_embedder`` hands
    them over).
    """

    def __init__(
        self,
        english: Embedder,
        other: Callable[[], Embedder],
        other_id: str,
        *,
        close_parts: bool = False,
    ) -> None:
        self.english = english
        self.close_parts = close_parts
        self.model_id = f"{english.model_id}+{other_id}"
        self.dim = 2 * english.dim
        #: Where MiniLM's part ends and e5's begins (``heron.embed.query_space``).
        self.splits = (english.dim,)
        #: A passage's CPU against MiniLM alone: e5 runs one text at a time, about 2.4x
        #: MiniLM's CPU a text (``python -m bench security``: 96 texts of 250 characters
        #: 1.82 s under MiniLM, 48 of them 3.08 s under both). ``/v1/embeddings`` weighs
        #: a request's tokens by it.
        self.cost = COST
        self.calibration = calibration_of(english)
        # Chunks are cut to the English model's input (a MiniLM chunk fits e5's 512
        # tokens), so every chunk, and every English figure, is as under MiniLM alone.
        self.tokenizer = getattr(getattr(english, "inner", english), "tokenizer", None)
        self._make_other = other
        self.other_id = other_id
        self._other: Embedder | None = None
        self._lock = threading.Lock()
        self._closed = False

    @property
    def other(self) -> Embedder:
        """The second model, made on first use."""
        with self._lock:
            self._check_open()
            if self._other is None:
                made = self._make_other()
                if (made.model_id, made.dim) != (self.other_id, self.english.dim):
                    made.close()
                    raise ModelError(
                        f"The multilingual profile expected {self.other_id} of "
                        f"{self.english.dim} dimensions, beside {self.english.model_id}; got "
                        f"{made.model_id} of {made.dim}."
                    )
                self._other = made
            return self._other

    def prepare(self) -> None:
        """Load the second model now: passages need both, and an index says it is loading
        (about 2 s) rather than show a chunk bar that does not move. An embedder with
        parts it loads on first use has this method; ``heron.libraries.index`` calls it."""
        self.other  # noqa: B018  # the property makes it

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self._check_open()
        texts = clean_texts(texts)
        half = np.float32(1.0) / _SCALE
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        out[:, : self.english.dim] = self.english.embed(texts) * half
        out[:, self.english.dim :] = self.other.embed(texts) * half
        return out

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self._check_open()
        texts = clean_texts(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        english = [is_english(t) for t in texts]
        for side, columns in (
            (True, slice(None, self.english.dim)),
            (False, slice(self.english.dim, None)),
        ):
            rows = [i for i, yes in enumerate(english) if yes is side]
            if rows:  # e5 (``self.other``) is loaded only when a row needs it
                part = self.english if side else self.other
                out[rows, columns] = embed_queries(part, [texts[i] for i in rows]) * _SCALE
        return out

    def calibration_for(self, query: str) -> Calibration:
        """The thresholds of the model that embeds ``query`` (``embed_queries``); for a
        query e5 reads, lowered by ``ACROSS_LANGUAGES``: its best passage is usually in
        another language than the query, which costs the cosine."""
        if is_english(query):
            return calibration_of(self.english)
        return shifted(calibration_of(self.other), -ACROSS_LANGUAGES)

    def _check_open(self) -> None:
        if self._closed:
            raise ModelError(
                "The multilingual embedder was closed; load the embedder again "
                "(heron.embed.load_embedder(settings)) to embed."
            )

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            other, self._other = self._other, None
        if self.close_parts:
            try:
                self.english.close()
            finally:
                if other is not None:
                    other.close()
