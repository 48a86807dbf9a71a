"""Triage: does a message need the libraries, a tool, or neither?

Decided from retrieval signals before any model call, never by the model alone: a model
that answers "What is Hero OS?" from memory never calls the search tool, so its answer
is never grounded. The rules, first match wins:

1. ``docs``, confident: the caller chose a library, or the message names a library, a
   collection or a configured keyword (whole words, any case). A name that is also an
   ordinary word (``ordinary``: "it", "hr", "security", "notes") is a name only when
   written as one, in capitals ("IT", "HR") or capitalised inside a sentence ("ask
   Security"): "reset it" and "security stuff for new people?" name nothing.
2. ``tools``, confident: the best routed tool reaches ``tool_threshold`` (cosine),
   shares a word with the message, and fits it better than the best library passage
   ("Summarize the skills index" is answered by the page on the skills index, not by a
   skill search). The first model call is forced to call it. A tool tagged ``docs``
   (``search_docs``) never counts: its search has already run, as step 3.
3. ``docs``: the best library passage reaches ``docs_threshold`` (cosine).
4. ``knowledge``: none of these; the model answers alone (tools are still offered).

``docs`` puts the passages in the prompt with their citations. Under rule 3, an
extractive answer still quotes the closest passages when the ``Evidence`` says they are
related (the answer then says they may not answer).
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from heron.libraries.search import Result, named
from heron.store.analysis import stopwords
from heron.tools.router import RoutedTool

Kind = Literal["knowledge", "docs", "tools"]
#: The tag of tools that search the libraries: their work is done by the retrieval step.
DOCS_TAG = "docs"


@dataclass(frozen=True)
class Triage:
    kind: Kind
    confident: bool
    reason: str
    docs_score: float | None = None
    tool: str | None = None  # the best routed tool's original name
    tool_score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "confident": self.confident,
            "reason": self.reason,
            "docs_score": self.docs_score,
            "tool": self.tool,
            "tool_score": self.tool_score,
        }


Verdict = Literal["fits", "related", "unrelated"]


@dataclass(frozen=True)
class Evidence:
    """Why a turn is answered from the libraries, or refused, in numbers an answer
    carries (``Answer.evidence``):

    - ``cosine``: the best passage's, and ``docs`` the threshold it is judged by (the
      model that read the question: ``heron.embed.calibration``);
    - ``peak``: how far the best page's cosine stands above the median of the next pages
      (``heron.agent.retrieval.Found.peak``): one page standing out of its candidates is
      what the question is about, even when the question is worded far from the page
      (another language, a vague request);
    - ``support``: ``cosine - docs + peak``, the evidence the verdict weighs beside the
      cosine, and ``support_from`` the calibrated threshold;
    - ``sentence``: the best sentence's cosine, when it was weighed;
    - ``verdict``: ``fits`` (the cosine reaches ``docs``), ``related`` (it does not, but
      the cosine reaches ``weak``, the support reaches ``support_from`` with the best
      passage's cosine or its best sentence's, or a sentence reaches ``docs``: the closest
      passages are quoted with a word saying so) or
      ``unrelated`` (refused), and ``why`` in words.
    """

    verdict: Verdict
    why: str
    cosine: float | None = None
    docs: float | None = None
    peak: float | None = None
    support: float | None = None
    support_from: float | None = None
    sentence: float | None = None

    @classmethod
    def of(
        cls,
        cosine: float | None,
        peak: float | None,
        *,
        docs: float,
        weak: float,
        support_from: float,
    ) -> Evidence:
        """The verdict on a turn's best ``cosine`` and ``peak`` (no sentence weighed)."""
        support = None if cosine is None else round(cosine - docs + (peak or 0.0), 4)
        numbers = {
            "cosine": None if cosine is None else round(cosine, 4),
            "docs": round(docs, 4),
            "peak": peak,
            "support": support,
            "support_from": support_from,
        }
        if cosine is None:
            return cls("unrelated", "nothing was found", **numbers)  # type: ignore[arg-type]
        if cosine >= docs:
            return cls("fits", f"best match {cosine:.2f} >= {docs:.2f}", **numbers)  # type: ignore[arg-type]
        said = f"best match {cosine:.2f} < {docs:.2f}"
        if cosine >= weak:
            return cls("related", f"{said}, >= {weak:.2f}", **numbers)  # type: ignore[arg-type]
        if support is not None and support >= support_from:
            why = f"{said}; it stands {peak or 0.0:.2f} above the next pages: support {support:.2f}"
            return cls("related", f"{why} >= {support_from:.2f}", **numbers)  # type: ignore[arg-type]
        why = f"{said}; support {support:.2f} < {support_from:.2f}"
        return cls("unrelated", why, **numbers)  # type: ignore[arg-type]

    def with_sentence(self, sentence: float) -> Evidence:
        """The verdict once the best sentence's cosine is known: a sentence that fits as
        closely as a fitting passage must is evidence enough (its passage's vector is
        diluted by the rest of it)."""
        if self.verdict != "unrelated" or self.docs is None:
            return replace(self, sentence=round(sentence, 4))
        if sentence >= self.docs:
            why = f"{self.why}; a sentence of them {sentence:.2f} >= {self.docs:.2f}"
            return replace(self, verdict="related", why=why, sentence=round(sentence, 4))
        # The support read with the sentence's cosine: the page stands out, and one of
        # its sentences fits better than the page's vector does.
        support = round(sentence - self.docs + (self.peak or 0.0), 4)
        if self.support_from is not None and support >= self.support_from:
            why = f"{self.why}; with its best sentence {sentence:.2f}, support {support:.2f}"
            return replace(self, verdict="related", why=why, sentence=round(sentence, 4))
        why = f"{self.why}; best sentence {sentence:.2f} < {self.docs:.2f}"
        return replace(self, why=why, sentence=round(sentence, 4))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def best_dense(results: Sequence[Result]) -> float | None:
    """The best passage's cosine: the reranker's scores only order one query's results,
    the cosine means the same for every query."""
    scores = [r.components["dense"] for r in results if r.components.get("dense") is not None]
    return max(scores) if scores else None  # type: ignore[type-var]


#: Names this short are words or initials ("it", "hr", "qa") before they are names.
SHORT_NAME = 3
_SENTENCE_END = re.compile(r"[.!?:;]\s*$")


def ordinary(name: str, vocabulary: Container[str] = ()) -> bool:
    """Whether ``name`` is also an ordinary word: short, a stopword (English,
    Portuguese, Spanish) or a whole word of ``vocabulary`` (the embedder's tokenizer's,
    when it has one).

    >>> ordinary("it"), ordinary("security", {"security"}), ordinary("kubernetes")
    (True, True, False)
    """
    word = name.lower()
    return len(word) <= SHORT_NAME or word in stopwords("pt") or word in vocabulary


def written_as_name(message: str, name: str) -> bool:
    """Whether ``message`` writes ``name`` as a name somewhere: in capitals ("IT"), or
    capitalised where a sentence does not start ("Ask Security first").

    >>> written_as_name("Reset it, then ask IT.", "it"), written_as_name("It fails.", "it")
    (True, False)
    """
    for match in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", message, re.IGNORECASE):
        word = match.group()
        if len(word) > 1 and word.isupper():
            return True
        before = message[: match.start()]
        if word[:1].isupper() and before.strip() and not _SENTENCE_END.search(before):
            return True
    return False


def triage(
    message: str,
    results: Sequence[Result],
    tools: Sequence[RoutedTool],
    *,
    names: Iterable[str] = (),
    library: str | None = None,
    docs_threshold: float,
    tool_threshold: float,
    vocabulary: Container[str] = (),
) -> Triage:
    """Apply the rules of the module doc. ``names``: libraries, collections, keywords;
    ``vocabulary``: the words a name is ``ordinary`` among."""
    docs_score = best_dense(results)
    top = tools[0] if tools else None
    tool = top.tool.name if top else None
    tool_score = top.dense_score if top else None
    scores = {"docs_score": docs_score, "tool": tool, "tool_score": tool_score}
    if library is not None:
        return Triage("docs", True, f"library {library!r} chosen", **scores)
    word = named(
        message,
        [n for n in names if not ordinary(n, vocabulary) or written_as_name(message, n)],
    )
    if word is not None:
        return Triage("docs", True, f"names {word!r}", **scores)
    docs_tool = top is not None and DOCS_TAG in top.tool.tags
    if (
        top is not None
        and not docs_tool
        and top.dense_score >= tool_threshold
        and top.lexical_score > 0
        and (docs_score is None or top.dense_score > docs_score)
    ):
        why = f"tool {tool} cosine {top.dense_score:.2f} >= {tool_threshold}"
        return Triage("tools", True, why, **scores)
    if docs_score is not None and docs_score >= docs_threshold:
        why = f"library cosine {docs_score:.2f} >= {docs_threshold}"
        return Triage("docs", False, why, **scores)
    return Triage("knowledge", False, "no library passage or tool fits", **scores)
