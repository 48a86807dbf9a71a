"""What a conversation remembers besides its turns: the results of the jobs it delegated.

A job the agent hands on (``delegate_job``) ends after the turn that started it; its
verdict then joins that conversation's history as the tool result of that call, placed
after the turn that delegated it, so a later turn ("what did the check find?") is
answered from what the job found. ``Recall`` is handed to the agent by the wiring
(``heron.wiring.job_results``): the agent knows no job store.

A generated answer reads those results in its prompt. An extractive one (no model) weighs
each result in the history as a passage of its own (``answering``): its cosine with the
question, plus the embedder's ``spread`` when the question asks about a job or what it
found ("what did the check find?", "o que o job encontrou?", "¿qué encontró la tarea?",
or words of the job's own prompt), half of it for a short question that points back
("did it pass?"); the best result answers when it reaches the ``weak`` cosine and
outscores every library passage, stated in the asker's language and cited as the job
(``Citation.of_job``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from heron.agent.answer import Citation
from heron.agent.followup import refers_back
from heron.agent.words import say
from heron.core.chat import Message
from heron.embed import Embedder, calibration_of, query_space, splits_of
from heron.store.analysis import query_terms

#: Words that ask about a delegated job or what it found, in the languages Heron speaks
#: (English, Portuguese, Spanish), as written: a question with one refers to the job.
#: What the job was about (tests, a build) is its prompt's terms, not listed here: "how
#: do I run the tests?" asks the libraries unless a job of the conversation ran them.
ABOUT_JOBS = frozenset(
    """job jobs check checks checked task tasks result results verdict outcome finding
    findings find found background
    tarefa tarefas verificação verificações checagem resultado resultados veredito
    encontrou encontraram achou acharam descobriu
    trabajo trabajos tarea tareas comprobación comprobaciones verificación resultado
    resultados veredicto encontró encontraron halló descubrió""".split()  # noqa: SIM905
)
#: The bonus, in the embedder's ``spread``, of a question that refers to the job (one of
#: ``ABOUT_JOBS``, or a term of its prompt) and of a short one that points back ("it").
NAMED, POINTED = 1.0, 0.5
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Recalled:
    """Messages that joined a conversation at ``at`` (Unix seconds): they follow the
    first turn saved at or after it (the turn that started what they report)."""

    at: float
    messages: tuple[Message, ...]


#: ``recall(session_id)``: what joined that conversation, oldest first.
Recall = Callable[[str], list[Recalled]]


def interleave(
    exchanges: Sequence[tuple[float, Sequence[Message]]], recalled: Sequence[Recalled]
) -> list[Message]:
    """The turns' messages (each exchange: the time it was saved, its messages) with each
    ``Recalled`` after the first exchange saved at or after its time (the turn it
    happened in), oldest first; those later than every exchange (the turn being
    answered started them, or none is replayed) at the end.

    >>> user, reply, note = Message("user", "q"), Message("assistant", "a"), Message("tool", "r")
    >>> [m.role for m in interleave([(5.0, [user, reply])], [Recalled(4.0, (note,))])]
    ['user', 'assistant', 'tool']
    """
    pending = sorted(recalled, key=lambda r: r.at)
    messages: list[Message] = []
    for saved, turn in exchanges:
        messages += turn
        while pending and pending[0].at <= saved:
            messages += pending.pop(0).messages
    for rest in pending:
        messages += rest.messages
    return messages


@dataclass(frozen=True)
class JobResult:
    """A delegated job's result as its conversation holds it: the ``delegate_job`` tool
    result ``heron.wiring.jobs.job_messages`` writes (``id``, ``state``, ``prompt``; a
    completed job's ``ok``, ``summary`` and ``criteria``, a failed one's ``error``)."""

    id: str
    state: str
    prompt: str
    ok: bool | None = None
    summary: str = ""
    #: Each criterion, whether it held (``None``: not checked), and why.
    criteria: tuple[tuple[str, bool | None, str], ...] = ()
    error: str = ""

    @classmethod
    def of(cls, message: Message) -> JobResult | None:
        """The result ``message`` carries, or ``None`` for any other message (another
        tool's, or one whose content is no job's verdict)."""
        if message.role != "tool" or message.name != "delegate_job":
            return None
        try:
            verdict = json.loads(message.content)
        except ValueError:
            return None
        if not isinstance(verdict, dict) or not all(
            isinstance(verdict.get(k), str) for k in ("id", "state", "prompt")
        ):
            return None
        ok = verdict.get("ok")
        return cls(
            verdict["id"],
            verdict["state"],
            verdict["prompt"],
            ok if isinstance(ok, bool) else None,
            str(verdict.get("summary") or ""),
            tuple(_criterion(c) for c in verdict.get("criteria") or [] if isinstance(c, dict)),
            str(verdict.get("error") or ""),
        )

    @property
    def citation(self) -> Citation:
        return Citation.of_job(self.id, self.prompt)

    def passage(self) -> str:
        """What the result is weighed by: the task, the summary, each criterion, why it
        failed."""
        criteria = " ".join(f"{name}: {why}" for name, _, why in self.criteria)
        parts = (f"Job result: {self.prompt}.", self.summary, criteria, self.error)
        return " ".join(p for p in parts if p)

    def statement(self, lang: str, marker: str) -> str:
        """The result said in ``lang``: the verdict with ``marker`` (its citation), the
        summary, then each criterion as a list item."""
        if self.state == "completed":
            key = {True: "job_passed", False: "job_not_passed", None: "job_unverified"}[self.ok]
        else:
            key = "job_failed" if self.state == "failed" else "job_aborted"
        lines = [f"{say(key, lang, prompt=self.prompt, error=self.error)} {marker}"]
        if self.summary:
            lines.append(self.summary)
        held = {
            True: "criterion_passed",
            False: "criterion_not_passed",
            None: "criterion_unchecked",
        }
        items = [
            f"- {name}: {say(held[ok], lang)}" + (f" ({why})" if why else "")
            for name, ok, why in self.criteria
        ]
        return "\n\n".join(lines + (["\n".join(items)] if items else []))


def _criterion(row: dict[str, Any]) -> tuple[str, bool | None, str]:
    ok = row.get("ok")
    return (
        str(row.get("criterion") or ""),
        ok if isinstance(ok, bool) else None,
        str(row.get("why") or ""),
    )


def results_in(history: Sequence[Message]) -> list[JobResult]:
    """The job results ``history`` holds, oldest first, each job once (its latest)."""
    found = {r.id: r for m in history if (r := JobResult.of(m)) is not None}
    return list(found.values())


def refers_to(message: str, job: JobResult) -> float:
    """How plainly ``message`` refers to ``job``: ``NAMED`` when it has a word of
    ``ABOUT_JOBS`` or a term of the job's prompt, ``POINTED`` when it is a short question
    that points back, else 0.

    >>> job = JobResult("1", "completed", "check whether main builds")
    >>> refers_to("What did the check find?", job), refers_to("Did main build?", job)
    (1.0, 1.0)
    >>> refers_to("Did it pass?", job), refers_to("How do I prune roses?", job)
    (0.5, 0.0)
    """
    words = {w.lower() for w in _WORD.findall(message)}
    if words & ABOUT_JOBS or set(query_terms(message)) & set(query_terms(job.prompt)):
        return NAMED
    return POINTED if refers_back(message) else 0.0


def answering(
    message: str,
    vector: np.ndarray,
    history: Sequence[Message],
    embedder: Embedder,
    library: float | None,
) -> JobResult | None:
    """The job result in ``history`` that answers ``message`` (``vector``: the message's
    own, from ``embedder``) better than the libraries, whose best passage's cosine is
    ``library`` (``None``: none found); ``None`` when no result does (module doc). Of
    results that score alike, the newest."""
    results = results_in(history)
    if not results:
        return None
    calibration = calibration_of(embedder, message)
    vectors = embedder.embed([r.passage() for r in results])
    query, rows = query_space(vector, vectors, splits_of(embedder))
    scores = rows @ query + calibration.spread * np.array([refers_to(message, r) for r in results])
    best = len(results) - 1 - int(np.argmax(scores[::-1]))  # ties: the newest
    floor = max(calibration.weak, library if library is not None else -1.0)
    return results[best] if scores[best] >= floor else None
