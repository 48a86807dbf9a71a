"""The repetition guard: real loops are caught as they stream, prose and lists are not."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from heron.agent import Agent, Final, Token, Turn
from heron.agent.guard import RepetitionGuard, repeats
from heron.libraries import index_library
from heron.llm import Sampling
from heron.settings import Settings
from heron.wiring import open_agent
from tests import llm_servers
from tests.agent.conftest import MODELS
from tests.ci import missing
from tests.conftest import SHARED
from tests.llm_servers import ChatServer

#: What SmolLM2-135M streamed for "What is Heron?" (issue 17), as its tokens came.
HERON_TOOLS = ["Heron", ".", "Tools", "."] * 64


def feed(pieces: list[str]) -> tuple[RepetitionGuard, int]:
    """The guard after the pieces, and how many pieces it took to fire (or all)."""
    guard = RepetitionGuard()
    for n, piece in enumerate(pieces, 1):
        if guard.feed(piece):
            return guard, n
    return guard, len(pieces)


def test_the_heron_tools_loop_is_caught_within_a_few_tokens() -> None:
    guard, n = feed(HERON_TOOLS)
    assert guard.reason and n <= 16, (n, guard.text)  # of 256 pieces


def test_a_loop_without_spaces_or_word_boundaries_is_caught() -> None:
    guard, n = feed(["HeronTools"] * 40)
    assert guard.reason and "repeating the characters" in guard.reason and n <= 5


def test_a_word_four_gram_seen_three_times_is_caught() -> None:
    loop = "The Pod runs the container and then the Pod runs the container and then " * 5
    guard, _ = feed(re.findall(r"\S+\s*", loop))
    assert guard.reason and "the pod runs the" in guard.reason
    assert repeats(loop) is not None


PROSE = [
    # A real answer, with the repetition real prose has ("a Pod", "the containers").
    "A Pod is the smallest deployable unit in Kubernetes. A Pod holds one or more "
    "containers that share storage and a network identity. The containers in a Pod are "
    "scheduled together on the same node, and the Pod's containers can reach each other "
    "on localhost. Most Pods are created by a Deployment, not directly.",
    # A list whose items start alike.
    "To debug a Pod:\n\n- Check the Pod's events with `kubectl describe pod NAME`.\n"
    "- Check the Pod's logs with `kubectl logs NAME`.\n"
    "- Check the node's conditions with `kubectl describe node NODE`.\n"
    "- Open a shell in the container with `kubectl exec -it NAME -- sh`.",
    # A Markdown table: its rule is a cycle with no letters in it.
    "| field | type |\n|-------|------|\n| name | string |\n| port | integer |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    # A manifest in a code fence repeats its keys, as manifests do.
    "Three containers:\n\n```yaml\ncontainers:\n- name: a\n  image: nginx:1.25\n"
    "  imagePullPolicy: IfNotPresent\n- name: b\n  image: nginx:1.25\n"
    "  imagePullPolicy: IfNotPresent\n- name: c\n  image: nginx:1.25\n"
    "  imagePullPolicy: IfNotPresent\n```\n",
]


@pytest.mark.parametrize("text", PROSE)
def test_prose_lists_tables_and_code_pass(text: str) -> None:
    guard, _ = feed(re.findall(r"\S+\s*|\s+", text))
    assert guard.reason is None and repeats(text) is None, guard.reason


def test_real_documentation_passes() -> None:
    page = (
        SHARED
        / "data"
        / "docs"
        / "kubernetes"
        / "library"
        / "concepts"
        / "overview"
        / ("components.md")
    )
    if not page.exists():
        missing(f"the shared data set is not at {page}", "set HERON_SHARED")
    for paragraph in page.read_text(encoding="utf-8").split("\n\n"):
        if len(paragraph.split()) > 20 and "|" not in paragraph:
            assert repeats(paragraph) is None, paragraph


# -- in the agent: a looping model is stopped and its answer replaced by quotes ------------


@pytest.fixture
def looping(monkeypatch: pytest.MonkeyPatch) -> None:
    """The replay server's model answers every text request with a loop."""
    answer_for = llm_servers._answer

    def loop(body: dict[str, Any], openai: bool) -> tuple[str, list]:
        text, calls = answer_for(body, openai)
        return ("Heron. Tools. " * 200, []) if text else (text, calls)

    monkeypatch.setattr(llm_servers, "_answer", loop)


def test_a_looping_answer_falls_back_to_the_extractive_one(
    make_agent: Callable[..., Agent], looping: None
) -> None:
    answer = make_agent().ask(Turn("How often should I water my tomato plants?"))
    assert answer.fallback == "degenerate" and answer.mode == "extractive"
    assert (
        answer.answer.startswith("Water tomato plants deeply twice a week")
        and "[1]" in answer.answer
    )
    assert "Heron. Tools." not in answer.answer and repeats(answer.answer) is None
    assert any("repeating" in note for note in answer.notes)
    assert answer.to_dict()["fallback"] == "degenerate"
    # The text is whole: OpenAI's "stop"; Heron's own reason rides beside it.
    assert (answer.finish_reason, answer.finish_detail) == ("stop", "degenerate")


def test_a_looping_stream_is_cut_short_and_says_so(
    make_agent: Callable[..., Agent], looping: None
) -> None:
    events = list(make_agent().stream(Turn("How often should I water my tomato plants?")))
    tokens = [e.text for e in events if isinstance(e, Token)]
    final = events[-1].answer  # type: ignore[union-attr]
    assert isinstance(events[-1], Final) and final.fallback == "degenerate"
    assert len(tokens) < 20  # of the 400 pieces the model sent
    assert "[Heron stopped the model: it kept repeating itself.]" in tokens[-1]
    assert tokens[-1].endswith(final.answer)


def test_a_weak_models_answer_cut_at_herons_budget_falls_back(
    chat: ChatServer, garden: Path, workspace: Path, tmp_path: Path
) -> None:
    models = tmp_path / "weak.yml"  # the replay model, declared too weak to write answers
    models.write_text(MODELS.format(url=chat.url) + "    answers: extractive\n")
    # The replay server counts max_tokens in words: 3 cuts any real answer mid-way.
    settings = Settings(
        llm={"models_file": models}, tools={"root": workspace}, agent={"max_tokens": 3}
    )
    agent = open_agent(settings)
    try:
        index_library("garden", agent.store, settings=settings)
        question = "How often should I water my tomato plants?"
        cut = agent.ask(Turn(question, answer="generative"))
        assert cut.fallback == "degenerate" and cut.mode == "extractive"
        assert any("budget" in note for note in cut.notes)
        asked = agent.ask(Turn(question, answer="generative", sampling=Sampling(max_tokens=3)))
        assert asked.fallback is None and asked.finish_reason == "length"
        assert len(asked.answer.split()) <= 3
    finally:
        agent.close()


def test_a_capable_models_long_answer_is_kept(make_agent: Callable[..., Agent]) -> None:
    cut = make_agent(agent={"max_tokens": 3}).ask(
        Turn("How often should I water my tomato plants?")
    )
    assert cut.mode == "generative" and cut.fallback is None and cut.finish_reason == "length"
