"""The echo guard: a model that gives its prompt back is withheld before any of it is
shown, and the extractive answer is given instead (issue 44); an answer that quotes the
passages is not touched."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from heron.agent import Agent, Final, Token, Turn
from heron.agent.guard import EchoGuard, Scaffold
from heron.agent.prompt import RULES, WITH_PASSAGES, header, written
from heron.core.tools import Tool
from heron.llm import Sampling
from heron.llm.errors import ProviderError
from tests import llm_servers
from tests.llm_servers import ChatServer

#: What SmolLM2-135M wrote when it gave its prompt back (issue 44, and the real-use notes
#: of docs/benchmarks.md with HERON_AGENT_MAX_TOKENS left at 512), and what of it comes
#: before the echo: all a client may be shown.
ECHOES = [
    (
        "[1] (acme, it/vpn) lines 9-13\nVPN > Troubleshooting\nIf the VPN does not connect, "
        "restart the client.\n\nAnswer from the passages above and cite the ones you use, "
        "like [1]. If they do not hold\nthe answer, say so.",
        "",
    ),
    (
        "The VPN gateway is a self-service portal.\n\n[1] (acme, it/laptop) lines 2-3\n"
        "VPN > Connecting\nInstall the GlobalProtect client from the self-service portal.",
        "The VPN gateway is a self-service portal.\n\n",
    ),
    ("1. (acme, it/vpn) lines 1-3\nLaptops > Lost laptop\nReport a lost laptop.", "1. "),
    ("1. [2] (notes, it/passwords-and-mfa) lines 24-31", "1. "),
    (
        "You can swap an on-call shift by using the [1] and [2] passages.\n\n"
        "[1] (notes, engineering/on-call) lines 50-58",
        "You can swap an on-call shift by using the [1] and [2] passages.\n\n",
    ),
    # The closing instruction alone, reworded ("cite them"): its runs of five words stay.
    (
        "Answer from the passages above and cite them, like [1]. If they do not hold the "
        "answer, say so.",
        "",
    ),
    (RULES, ""),
]
#: Answers that are no echo: quotes of a passage, citations by marker and by label,
#: parentheses, lists.
ANSWERS = [
    "If the VPN does not connect, restart the GlobalProtect client and check your "
    "internet connection. [1]",
    "Restart the client (see the troubleshooting page, which also covers the gateway). [1]",
    "Install the client [1] (acme, it/vpn), then sign in.",
    "1. Open the client.\n2. Sign in with your company email.\n3. Approve the push.",
    "The answer to the question is not in the passages; ask the IT help desk.",
    "Call the help desk when the VPN still fails: they need the error code. [2]",
]
PASSAGE = (
    "VPN > Troubleshooting\nIf the VPN does not connect, restart the GlobalProtect client "
    "and check your internet connection."
)


def pieces(text: str) -> list[str]:
    """``text`` in the pieces a model streams: a word and the space after it."""
    return re.findall(r"\S+\s*", text)


def streamed(scaffold: Scaffold, text: str) -> tuple[str, EchoGuard, int]:
    """What the guard shows of ``text`` fed piece by piece, the guard, and the most
    characters it held back at once."""
    guard, shown, most = EchoGuard(scaffold), "", 0
    for piece in pieces(text):
        shown += guard.feed(piece)
        most = max(most, len(guard.text) - len(shown))
    return shown + guard.end(), guard, most


SCAFFOLD = Scaffold.of(written(), ["How do I fix the VPN?", PASSAGE])


@pytest.mark.parametrize(("echo", "before"), ECHOES)
def test_every_echo_the_bundled_model_wrote_is_caught_and_none_of_it_is_shown(
    echo: str, before: str
) -> None:
    assert SCAFFOLD.echo(echo) is not None
    shown, guard, _ = streamed(SCAFFOLD, echo)
    assert guard.reason is not None and shown == before


@pytest.mark.parametrize("answer", ANSWERS)
def test_an_answer_is_shown_whole_a_few_words_behind_the_model(answer: str) -> None:
    assert SCAFFOLD.echo(answer) is None
    shown, guard, most = streamed(SCAFFOLD, answer)
    assert guard.reason is None and shown == answer
    assert most <= 60, most  # an open "(" is held to its ")", a run's start to its end


def test_quoting_a_passage_that_holds_heron_s_own_words_is_no_echo() -> None:
    # Heron's docs (or a page about prompts) may say what Heron's prompt says.
    page = f"Heron's prompt ends: {WITH_PASSAGES} [1] (heron, agent) lines 1-12 is a header."
    scaffold = Scaffold.of(written(), ["What does the prompt end with?", page])
    assert (
        scaffold.echo("It ends: Answer from the passages above and cite the ones you use") is None
    )
    assert scaffold.echo("[1] (heron, agent) lines 1-12") is None
    assert scaffold.echo("[2] (heron, tools) lines 4-9") is not None  # not in the page


def test_the_header_the_prompt_writes_is_the_one_the_guard_knows() -> None:
    from heron.agent.answer import Citation

    citation = Citation("acme", "it", "it/vpn", "Troubleshooting", "/docs/it/vpn.md", (9, 13))
    assert header(1, citation) == "[1] (acme, it/vpn) lines 9-13"
    assert Scaffold().echo(f"See {header(3, citation)} for more") is not None


# -- the agent: the model behind the OpenAI replay server --------------------------------

ANSWER_FOR = llm_servers._answer


def verbatim(body: dict[str, Any], openai: bool) -> tuple[str, list]:
    """The replay giving back every message it was sent, as SmolLM2-135M does."""
    text, calls = ANSWER_FOR(body, openai)
    if calls or body.get("response_format"):
        return text, calls
    return "\n\n".join(str(m.get("content") or "") for m in body["messages"]), []


QUESTION = "How often should I water my tomato plants?"
QUOTE = "Water tomato plants deeply twice a week, at the base, early in the morning. [1]"


def test_a_model_that_gives_its_prompt_back_is_withheld_and_quoted_instead(
    make_agent: Callable[..., Agent], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(llm_servers, "_answer", verbatim)
    agent = make_agent()
    answer = agent.ask(Turn(QUESTION))
    assert answer.answer.startswith("Water tomato plants deeply twice a week")
    assert (answer.mode, answer.fallback) == ("extractive", "echoed_prompt")
    assert (answer.finish_reason, answer.finish_detail) == ("stop", "echoed_prompt")
    assert any("echoing Heron's prompt" in n for n in answer.notes), answer.notes
    assert RULES not in str(answer.to_dict()) and "lines 1-" not in str(answer.to_dict())

    events = list(agent.stream(Turn(QUESTION)))
    tokens = [e.text for e in events if isinstance(e, Token)]
    final = events[-1]
    assert isinstance(final, Final) and final.answer.fallback == "echoed_prompt"
    # Nothing of the echo was shown: the first token says why the quotes follow.
    assert tokens[0].startswith("\n\n[Heron withheld the model's answer")
    assert tokens[0].endswith(final.answer.answer) and len(tokens) == 1


def test_an_answer_that_quotes_a_passage_is_kept_as_written(
    make_agent: Callable[..., Agent], chat: ChatServer
) -> None:
    chat.replies = [QUOTE, QUOTE]
    agent = make_agent()
    answer = agent.ask(Turn(QUESTION))
    assert (answer.answer, answer.fallback, answer.finish_detail) == (QUOTE, None, None)
    events = list(agent.stream(Turn(QUESTION)))
    assert "".join(e.text for e in events if isinstance(e, Token)) == QUOTE


def test_an_echo_after_a_good_start_shows_the_start_alone(
    make_agent: Callable[..., Agent], chat: ChatServer
) -> None:
    start = "Water them twice a week. [1]\n\n"
    chat.replies = [f"{start}[1] (garden, garden/watering) lines 1-4\nWater tomato plants"]
    events = list(make_agent().stream(Turn(QUESTION)))
    tokens = "".join(e.text for e in events if isinstance(e, Token))
    assert tokens.startswith(f"{start}\n\n[Heron withheld")
    assert "(garden, garden/watering) lines" not in tokens


def test_where_nothing_can_stand_in_for_the_echo_it_is_an_error(
    make_agent: Callable[..., Agent], monkeypatch: pytest.MonkeyPatch
) -> None:
    def echoed_call(body: dict[str, Any], openai: bool) -> tuple[str, list]:
        text, calls = verbatim(body, openai)
        prompt = body["messages"][-1]["content"]
        return text, [(cid, name, {"city": prompt}) for cid, name, _ in calls]

    monkeypatch.setattr(llm_servers, "_answer", echoed_call)
    agent = make_agent()
    weather = Tool("get_weather", "The weather in a city.", {"type": "object", "properties": {
        "city": {"type": "string"}}, "required": ["city"]})  # fmt: skip
    turn = Turn(QUESTION, client_tools=[weather], tool_choice="required")
    with pytest.raises(ProviderError, match="arguments of its call of get_weather"):
        agent.ask(turn)
    form = {"type": "json_object"}
    monkeypatch.setattr(llm_servers, "_answer", lambda b, o: (f'{{"a": "{RULES}"}}', []))
    with pytest.raises(ProviderError, match="structured answer"):
        agent.ask(Turn(QUESTION, sampling=Sampling(response_format=form)))
