"""``Retriever``: what a turn is answered from, out of the libraries.

The agent's ground phase (``heron.agent.agent``) asks it four things:

- ``scope``: the indexed libraries a message is searched in (``heron.libraries.scopes``);
- ``ground``: what a turn is searched with and what that found (``Found``): the message
  itself, a capable model's standalone rewrite of a follow-up (cached per conversation
  and turn), or the message with the conversation's context (``heron.agent.followup``);
- ``names``: what a message can name to be sent to the libraries (triage reads them);
- ``passage``: the text of a result's chunk as the prompt quotes it.

The broker is looked up per call (``broker()``): a models reload replaces the agent's.

>>> found = retriever.ground("Where do I request a new one?", vector, history)  # doctest: +SKIP
>>> found.grounding.how                                                          # doctest: +SKIP
'model'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from heron.agent.answer import Grounding
from heron.agent.extractive import passage_body
from heron.agent.followup import (
    CONTEXT_TURNS,
    REWRITE_TURNS,
    contextual,
    earlier_questions,
    last_reply,
    refers_back,
    rewrite_request,
    standalone,
)
from heron.agent.sentences import sentences
from heron.agent.triage import best_dense
from heron.core.chat import Message
from heron.embed import embed_queries, splits_of
from heron.errors import NotFound
from heron.libraries import Reranker, Result, read_libraries, scopes, search_many, sections
from heron.libraries.state import last_index, library_state
from heron.llm import Broker
from heron.llm.errors import ProviderError
from heron.settings import Settings
from heron.store import Store

#: Passages an extractive answer may quote from (and cites): no prompt limits them, and
#: the gold page is among the first five for 92% of the Kubernetes questions.
EXTRACTIVE_PASSAGES = 5
#: Other sections of the best page an extractive answer reads besides the one it is
#: found at (``sections``): on the real-use questions, Kubernetes gold page quoted 74.2%
#: -> 77.3% (one section: 76.3%; three: 79.4%, with fewer of the notes' sentences from
#: their gold page; docs/benchmarks.md, "Real use").
EXTRACTIVE_SECTIONS = 2
#: Pages weighed for the evidence of a turn (``Found.peak``): the best page's cosine is
#: compared with the median of the next ones. Retrieval scores them anyway; only the
#: first ``EXTRACTIVE_PASSAGES`` (or ``agent_passages``) are kept as results.
EVIDENCE_PAGES = 20
#: Words from which a question found word for word in a page is a question that page
#: lists (``Retriever._unlisted``): shorter ones ("What is X") are phrases too.
LISTED_WORDS = 4
_WORD = re.compile(r"\w+")
#: Follow-ups a capable model rewrote, remembered (a turn retried or streamed twice
#: costs one call).
REWRITE_CACHE = 256


@dataclass(frozen=True)
class Found:
    """What a turn's retrieval found: the ``grounding`` (what was searched where), the
    ``results``, the ``vector`` of the query searched, and the ``peak``: how far the best
    page's cosine stands above the median of the next ``EVIDENCE_PAGES`` (``None`` with
    fewer than two pages): a page that stands out of its candidates is what the question
    is about, whatever the cosine's scale. ``reading``: when the query was searched in
    English too, the mean of its vector and its English reading's, which an extractive
    answer weighs sentences by; the evidence stays on ``vector``'s scale."""

    grounding: Grounding
    results: list[Result]
    vector: np.ndarray
    peak: float | None = None
    reading: np.ndarray | None = None


def peak(results: Sequence[Result]) -> float | None:
    """How far the best cosine of ``results`` stands above the median of the others'
    (``Found.peak``); ``None`` when fewer than two carry one.

    >>> from types import SimpleNamespace as R
    >>> peak([R(components={"dense": d}) for d in (0.6, 0.3, 0.2, 0.1)])
    0.4
    """
    cosines = sorted(
        (float(c) for r in results if (c := r.components.get("dense")) is not None),
        reverse=True,
    )
    if len(cosines) < 2:
        return None
    return round(cosines[0] - float(np.median(cosines[1:])), 6)


class Retriever:
    """The libraries' side of a turn, on the agent's store; see the module docstring.

    ``broker``: the agent's broker, looked up per call."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        broker: Callable[[], Broker],
        *,
        reranker: Reranker | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.broker = broker
        self.reranker = reranker
        self._collections: dict[str, tuple[dict[str, Any], list[str]]] = {}
        self._rewrites: dict[tuple, str | None] = {}  # follow-ups a model made standalone
        self._vocabulary: frozenset[str] | None = None

    def scope(self, message: str, library: str | None = None) -> list[str]:
        """The indexed libraries ``message`` is searched in: ``library`` alone when
        given, else ``heron.libraries.scope_of`` (the user's libraries; Heron's own docs
        when the message names Heron or they are all there is); none when no library is
        indexed (a ``library`` named but missing is an error)."""
        try:
            return scopes([message], self.store, self.settings, library)[0]
        except NotFound:
            if library is not None:
                raise
            return []

    def retrieve(
        self, message: str, library: str | None = None, vector: np.ndarray | None = None
    ) -> list[Result]:
        """The library passages for ``message`` (searched with ``vector`` when given)
        from its ``scope``; none when no library is indexed."""
        top_k = max(self.settings.agent.passages, EXTRACTIVE_PASSAGES, EVIDENCE_PAGES)
        try:
            return search_many(
                [message],
                self.store,
                settings=self.settings,
                library=library,
                top_k=top_k,
                reranker=self.reranker,
                vectors=None if vector is None else np.reshape(vector, (1, -1)),
            )[0]
        except NotFound:  # no library indexed (a library named but missing is an error)
            if library is not None:
                raise
            return []

    def ground(
        self,
        message: str,
        vector: np.ndarray,
        history: Sequence[Message],
        *,
        docs_threshold: float,
        library: str | None = None,
        model: str | None = None,
    ) -> Found:
        """What a turn is searched with (``heron.agent.followup``) and what it found.
        Without earlier questions, the message as it is. A capable model rewrites a
        follow-up first; else the message alone, and the conversation's context when
        that grounds poorly (its best cosine under ``docs_threshold``, the agent's for
        this message) or the message points back."""
        earlier = earlier_questions(history)
        if earlier and self.broker().capabilities(model).answers == "generative":
            rewritten = self._rewrite(message, history, model)
            if rewritten is not None:
                query_vector = embed_queries(self.store.embedder, [rewritten])[0]
                return self._found(rewritten, query_vector, library, "model")
        found = self._found(message, vector, library, "message")
        if not earlier or not found.grounding.libraries:
            return found
        poor = (best_dense(found.results) or 0.0) < docs_threshold
        if not (poor or refers_back(message)):
            return found
        recent = earlier[-CONTEXT_TURNS:]
        reply = last_reply(history)
        rows = embed_queries(self.store.embedder, [*recent, reply] if reply else recent)
        text, blended = contextual(
            message,
            vector,
            recent,
            rows[: len(recent)],
            rows[len(recent)] if reply else None,
            splits_of(self.store.embedder),
        )
        return self._found(text, blended, library, "context")

    def _found(self, query: str, vector: np.ndarray, library: str | None, how: str) -> Found:
        libraries = tuple(self.scope(query, library))
        results = self.retrieve(query, library, vector) if libraries else []
        english = results[0].english_query if results else None
        # Searched in English too (heron.libraries.search.across): the answer's sentences
        # are weighed by both readings (under the multilingual profile, English's model
        # reads the translation and e5 the question).
        reading = (
            None
            if english is None
            else (vector + embed_queries(self.store.embedder, [english])[0]) / 2
        )
        kept = self._unlisted(
            query, results[: max(self.settings.agent.passages, EXTRACTIVE_PASSAGES)]
        )
        grounding = Grounding(query, libraries, how, english)  # type: ignore[arg-type]
        return Found(grounding, kept, vector, peak(results), reading)

    def _unlisted(self, query: str, results: list[Result]) -> list[Result]:
        """``results`` with the pages that hold the question itself, word for word, after
        the others: a page that lists questions (a demo's, an FAQ index, docs that use it
        as their example) mentions the question and answers something else ("How does
        Heron pick tools?" is the agent page's running example; the tools and overview
        pages answer it). A question in a heading (an FAQ's) does not count: the heading
        is not the passage's body."""
        asked = " ".join(_WORD.findall(query.lower()))
        if len(asked.split()) < LISTED_WORDS:
            return results
        listed = [
            asked in " ".join(_WORD.findall(passage_body(self.passage(r)).lower())) for r in results
        ]
        if all(listed) or not any(listed):
            return results
        return [r for r, x in zip(results, listed, strict=True) if not x] + [
            r for r, x in zip(results, listed, strict=True) if x
        ]

    def _rewrite(self, message: str, history: Sequence[Message], model: str | None) -> str | None:
        """A capable model's standalone form of ``message``, once per conversation and
        turn (cached); ``None`` when the call fails or its reply is no question."""
        key = (model, message, tuple((m.role, m.content) for m in history[-REWRITE_TURNS:]))
        if key in self._rewrites:
            return self._rewrites[key]
        try:
            request = rewrite_request(message, history)
            reply = self.broker().complete(request, model=model).text
        except ProviderError:
            return None  # the deterministic form stands in; nothing is cached
        rewritten = standalone(reply, message, earlier_questions(history))
        self._rewrites[key] = rewritten
        while len(self._rewrites) > REWRITE_CACHE:
            self._rewrites.pop(next(iter(self._rewrites)))
        return rewritten

    def names(self) -> list[str]:
        """What a message can name to be sent to the libraries: each indexed library,
        its collections, and the configured keywords."""
        names: list[str] = []
        for library in read_libraries(self.settings):
            # The page list changes only when the library is indexed again.
            stamp = last_index(self.store, library.name)
            if not stamp:
                continue
            cached = self._collections.get(library.name)
            if cached is None or cached[0] != stamp:
                cached = (stamp, library_state(self.store, library.name).collections)
                self._collections[library.name] = cached
            names += [library.name, *cached[1]]
        return [*names, *self.settings.agent.keywords]

    def vocabulary(self) -> Container[str]:
        """The whole words of the embedder's tokenizer (empty when it has none): a name
        among them is an ordinary word too (``heron.agent.triage.ordinary``)."""
        if self._vocabulary is None:
            tokenizer = getattr(self.store.embedder, "tokenizer", None)
            vocab = getattr(tokenizer, "get_vocab", None)
            # WordPiece marks the pieces inside a word with "##": only whole words count.
            words = vocab() if vocab else {}
            self._vocabulary = frozenset(w for w in words if w.isalpha())
        return self._vocabulary

    def indexed(self) -> list[str]:
        """The configured libraries that are indexed."""
        indexed = {info.name for info in self.store.namespaces()}
        return [lib.name for lib in read_libraries(self.settings) if lib.name in indexed]

    def sections(self, found: Found) -> list[Result]:
        """The best page's other sections that match what was searched (none when
        nothing was found, or the best result is a matched question)."""
        if not found.results or found.results[0].via_question:
            return []
        try:
            return sections(
                found.results[0],
                found.grounding.query,
                self.store,
                found.vector,
                count=EXTRACTIVE_SECTIONS,
            )
        except NotFound:  # the library was removed since the search
            return []

    def passage(self, result: Result, *, quoted: bool = False) -> str:
        """The text of a result's chunk (a matched question: the question and answer).
        ``quoted``: for an extractive answer, without the page's summary that opens its
        first chunk ("Severity levels, who leads an incident and what happens
        afterwards."): it says what the page is about, and answers nothing."""
        if result.via_question:
            return f"{result.title}\nQ: {result.via_question}\nA: {result.snippet}"
        try:
            record = self.store.get(result.library, result.chunk)
        except NotFound:  # re-indexed since the search
            return result.snippet
        summary = record.metadata.get("summary")
        if quoted and summary:
            title, _, body = record.text.partition("\n")
            if body.startswith(summary):
                record = replace(record, text=f"{title}\n{body[len(summary) :].lstrip()}")
        if sentences(passage_body(record.text)):
            return record.text
        # A section's first chunk may be all code or table (a command block under its
        # heading); the prose that explains it is in the next chunk of the same section.
        page, _, number = result.chunk.rpartition("#")
        try:
            following = self.store.get(result.library, f"{page}#{int(number) + 1}")
        except (NotFound, ValueError):
            return record.text
        if following.metadata.get("heading") != record.metadata.get("heading"):
            return record.text
        return f"{record.text}\n\n{passage_body(following.text)}"
