"""``heron.agent.recall``: a delegated job's result, as its conversation holds it, weighed
against the question like a passage with the real embedders (the default profile: MiniLM
for English, e5 for Portuguese and Spanish; and MiniLM alone, the suite's), and said in
the asker's language."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from heron.agent.recall import JobResult, Recalled, answering, interleave, results_in
from heron.core.chat import Message, ToolCall
from heron.embed import Embedder, embed_queries, load_embedder
from heron.settings import Settings

PASSED = {
    "id": "a1",
    "state": "completed",
    "prompt": "check whether main builds",
    "ok": True,
    "summary": "On branch main: no uncommitted changes. Tests: passed, exit code 0.",
    "criteria": [{"criterion": "tests pass", "ok": True, "why": "exit code 0"}],
}
FAILED = {"id": "b2", "state": "failed", "prompt": "lint the docs", "error": "ruff not found"}


def delegated(verdict: dict) -> list[Message]:
    call = ToolCall(f"job_{verdict['id']}", "delegate_job", {"prompt": verdict["prompt"]})
    return [
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", json.dumps(verdict), tool_call_id=call.id, name="delegate_job"),
    ]


HISTORY = [
    Message("user", "Hand this to a job: check whether main builds"),
    Message("assistant", "I started job a1."),
    *delegated(PASSED),
    Message("tool", json.dumps({"id": "x", "state": "done", "prompt": "p"}), name="list_files"),
]


@pytest.fixture(scope="module", params=["multilingual", "minilm"])
def embedder(request: pytest.FixtureRequest) -> Iterator[Embedder]:
    made = load_embedder(Settings(embed={"embedder": request.param}))
    yield made
    made.close()


def ask(embedder: Embedder, message: str, library: float | None = None) -> JobResult | None:
    vector = embed_queries(embedder, [message])[0]
    return answering(message, vector, HISTORY, embedder, library)


@pytest.mark.parametrize(
    "message",
    [
        "What did the check find?",
        "Did it pass?",
        "Did main build?",
        "O que o job encontrou?",
        "¿Qué encontró la tarea?",
    ],
)
def test_a_question_about_the_job_is_answered_by_its_result(
    embedder: Embedder, message: str
) -> None:
    found = ask(embedder, message)
    assert found is not None and found.id == "a1"


@pytest.mark.parametrize(
    "message", ["How often should I water tomato plants?", "What is a Pod?", "Olá, tudo bem?"]
)
def test_a_question_about_something_else_is_not(embedder: Embedder, message: str) -> None:
    assert ask(embedder, message) is None


def test_the_libraries_win_when_a_passage_fits_better(embedder: Embedder) -> None:
    assert ask(embedder, "What did the check find?", library=0.95) is None


def test_only_job_results_are_read_and_each_job_once() -> None:
    later = {**PASSED, "summary": "Tests: failed.", "ok": False}
    history = HISTORY + delegated(FAILED) + delegated(later)
    assert [(r.id, r.ok) for r in results_in(history)] == [("a1", False), ("b2", None)]
    broken = Message("tool", "not json", tool_call_id="job_c", name="delegate_job")
    assert results_in([broken]) == []


def test_a_result_is_said_in_the_askers_language() -> None:
    passed, failed = results_in(HISTORY + delegated(FAILED))
    assert passed.statement("en", "[1]").split("\n\n") == [
        'The job "check whether main builds" finished, and its checks passed. [1]',
        PASSED["summary"],
        "- tests pass: passed (exit code 0)",
    ]
    assert passed.statement("pt", "[1]").startswith(
        'O job "check whether main builds" terminou, e suas verificações passaram. [1]'
    )
    assert failed.statement("es", "[2]") == 'El trabajo "lint the docs" falló: ruff not found [2]'
    assert passed.citation.job == "a1" and passed.citation.url_or_path == "/jobs?job=a1"


def test_recalled_messages_follow_the_turn_that_started_them() -> None:
    user, reply, note = Message("user", "q"), Message("assistant", "a"), Message("tool", "r")
    later = Message("user", "q2")
    joined = interleave([(5.0, [user, reply]), (9.0, [later])], [Recalled(4.0, (note,))])
    assert joined == [user, reply, note, later]
