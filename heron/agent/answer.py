"""What an agent gives back: the ``Answer`` and the events of its stream."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote

from heron.agent.triage import Evidence, Triage
from heron.core.chat import ToolCall, Usage

#: How an answer's text was made: quoted from the passages, or written by the model.
AnswerMode = Literal["extractive", "generative"]
ANSWER_MODES: tuple[AnswerMode, ...] = ("extractive", "generative")
#: Why an answer ended, in OpenAI's words (Chat Completions' ``finish_reason``).
FINISH_REASONS = ("stop", "length", "tool_calls", "content_filter")
#: Other reasons providers give, as OpenAI's (Anthropic's ``refusal``: a safety stop).
_AS_OPENAI = {"function_call": "tool_calls", "refusal": "content_filter"}

#: The line suffix ``heron.libraries.search.source_location`` puts on a source.
_LINES = re.compile(r"(#L\d+-L\d+|:\d+-\d+)$")


def finish(reason: str | None, detail: str | None = None) -> tuple[str, str | None]:
    """``(finish_reason, finish_detail)``: ``reason`` as one of OpenAI's
    ``FINISH_REASONS``, and Heron's own reason beside it: ``detail`` when given (a loop
    guard, a fallback), else the provider's reason when OpenAI has no word for it.

    >>> finish("length"), finish("degenerate"), finish("stop", "degenerate")
    (('length', None), ('stop', 'degenerate'), ('stop', 'degenerate'))
    """
    reason = reason or "stop"
    if reason in FINISH_REASONS:
        return reason, detail
    return _AS_OPENAI.get(reason, "stop"), detail or reason


@dataclass(frozen=True)
class Citation:
    """One library passage an answer rests on, or the result of a job its conversation
    delegated (``of_job``)."""

    library: str
    collection: str
    page: str
    heading: str
    url_or_path: str
    line_range: tuple[int, int]
    #: The document's pages (a PDF's, a deck's slides) the passage is on; ``None`` for a
    #: format without pages. ``url_or_path`` then opens the file there (``#page=N``).
    pages: tuple[int, int] | None = None
    #: The id of the job whose result this cites (``of_job``): no library passage, the
    #: verdict of a job the conversation delegated; ``None`` for a passage.
    job: str | None = None

    @classmethod
    def from_result(cls, result: Mapping[str, Any]) -> Citation:
        """From a ``heron.libraries.search.Result.to_dict()`` (also what ``search_docs``
        returns)."""
        first, last = result["lines"]
        pages = result.get("pages")
        return cls(
            library=result["library"],
            collection=result["collection"],
            page=result["page"],
            heading=result["heading"],
            url_or_path=_LINES.sub("", result["source"]),
            line_range=(int(first), int(last)),
            pages=(int(pages[0]), int(pages[1])) if pages else None,
        )

    @classmethod
    def of_job(cls, job_id: str, prompt: str) -> Citation:
        """The result of job ``job_id`` (asked to do ``prompt``), opened on the page's
        jobs pane (``/jobs?job=ID``)."""
        return cls(
            library="",
            collection="",
            page="",
            heading=prompt,
            url_or_path=f"/jobs?job={quote(job_id)}",
            line_range=(0, 0),
            job=job_id,
        )

    @property
    def label(self) -> str:
        """``(library, page)``, the form the prompt asks the model to cite."""
        return f"({self.library}, {self.page})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "library": self.library,
            "collection": self.collection,
            "page": self.page,
            "heading": self.heading,
            "url_or_path": self.url_or_path,
            "line_range": list(self.line_range),
            "pages": list(self.pages) if self.pages else None,
            "job": self.job,
        }


@dataclass(frozen=True)
class Grounding:
    """What retrieval did for a turn: the ``query`` actually searched, the
    ``libraries`` it was searched in, and ``how`` the query was made: ``"message"`` (the
    message as sent), ``"context"`` (the message with the earlier questions' terms and a
    blended vector: a follow-up that grounds poorly alone) or ``"model"`` (the model
    rewrote the follow-up into a standalone question). ``english``: the query's English
    reading, searched beside it, when it was asked across languages
    (``heron.translate``)."""

    query: str = ""
    libraries: tuple[str, ...] = ()
    how: Literal["message", "context", "model"] = "message"
    english: str | None = None

    def to_dict(self) -> dict[str, Any]:
        found = {"query": self.query, "libraries": list(self.libraries), "how": self.how}
        return found | ({"english": self.english} if self.english else {})


@dataclass(frozen=True)
class Related:
    """A passage retrieval found and the answer did not quote: "also relevant"."""

    citation: Citation
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {**self.citation.to_dict(), "score": self.score}


@dataclass(frozen=True)
class ToolUse:
    """One tool call and its outcome. ``result`` is what the tool returned (JSON-able),
    ``error`` what went wrong instead; the model saw one of them as the tool result.
    ``refused``: the tool refused the arguments (``InputError``), the call itself was bad."""

    id: str
    name: str
    arguments: dict[str, Any]
    ok: bool
    result: Any = None
    error: str | None = None
    seconds: float = 0.0
    forced: bool = False
    refused: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "arguments": self.arguments,
            "ok": self.ok,
            "result": self.result,
            "error": self.error,
            "seconds": self.seconds,
            "forced": self.forced,
            "refused": self.refused,
        }


@dataclass
class Answer:
    """One turn's answer. ``model``: the alias that answered (for an extractive answer,
    the alias configured, which wrote at most its lead). ``mode``: how ``answer`` was
    made; ``fallback``: ``"degenerate"`` when the model's text looped and the extractive
    answer replaced it. ``finish_reason``: ``stop``, ``length`` (``max_tokens`` reached)
    or ``tool_calls``: the model called the client's tools, which are in ``tool_calls``,
    not run (the client runs them and continues the turn with their results), or
    ``content_filter``: always one of ``FINISH_REASONS``. Heron's own reason, when
    there is one, is ``finish_detail`` (``finish``).
    ``citations`` are numbered as the answer's ``[n]`` markers (``citations[n - 1]``);
    ``grounding`` says what was searched where."""

    answer: str
    citations: list[Citation]
    tools: list[ToolUse]
    skills: list[str]
    usage: Usage
    timings: dict[str, float]
    session_id: str
    model: str
    triage: Triage
    steps: int = 1
    notes: list[str] = field(default_factory=list)
    mode: AnswerMode = "generative"
    fallback: str | None = None
    finish_reason: str = "stop"
    finish_detail: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    grounding: Grounding = field(default_factory=Grounding)
    #: Passages found and not quoted (an extractive answer cites only what it quotes).
    related: list[Related] = field(default_factory=list)
    #: Why the libraries answered or not: the verdict and its numbers (``Evidence``).
    evidence: Evidence | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "citations": [c.to_dict() for c in self.citations],
            "related": [r.to_dict() for r in self.related],
            "grounding": self.grounding.to_dict(),
            "tools": [t.to_dict() for t in self.tools],
            "skills": self.skills,
            "usage": {
                "prompt_tokens": self.usage.prompt_tokens,
                "completion_tokens": self.usage.completion_tokens,
            },
            "timings": self.timings,
            "session_id": self.session_id,
            "model": self.model,
            "triage": self.triage.to_dict(),
            "evidence": self.evidence.to_dict() if self.evidence else None,
            "steps": self.steps,
            "notes": self.notes,
            "mode": self.mode,
            "fallback": self.fallback,
            "finish_reason": self.finish_reason,
            "finish_detail": self.finish_detail,
            "tool_calls": [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.tool_calls
            ],
        }


@dataclass(frozen=True)
class Token:
    """A piece of the answer text, as the model writes it."""

    text: str


@dataclass(frozen=True)
class ToolUsed:
    tool: ToolUse


@dataclass(frozen=True)
class Citations:
    citations: list[Citation]


@dataclass(frozen=True)
class ClientToolCalls:
    """The model called tools the client offered (``Agent.stream(client_tools=...)``):
    the turn ends here, the calls unrun, for the client to run."""

    calls: tuple[ToolCall, ...]


@dataclass(frozen=True)
class Final:
    answer: Answer


#: ``Agent.stream`` yields tokens and tool uses as they happen, then ``ClientToolCalls``
#: when the model called the client's tools, then ``Citations``, then ``Final``.
AgentEvent = Token | ToolUsed | ClientToolCalls | Citations | Final
